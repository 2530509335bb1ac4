# linkemu from nothing: Debian 12, p4c and BMv2 from the project's install
# script, then `make setup` and `make build`. Mininet needs the container
# privileged:
#   docker build -t linkemu .        (or make image)
#   docker run --rm -it --privileged linkemu make test
FROM debian:12
RUN apt-get update && apt-get install -y --no-install-recommends make
WORKDIR /linkemu
# --build-arg JOBS=n compiles with fewer jobs than cores where memory is short
# (a p4c compile job can take a few GB).
ARG JOBS
# --build-arg SOURCE=DIR takes the sources from a folder of clones (the
# install script's SOURCE) that the build can read, for example one bound in
# with podman build -v DIR:DIR:ro.
ARG SOURCE
# The P4 tools in a layer of their own, so that a change to linkemu does not
# rebuild them.
COPY tools/install-p4-tools.sh tools/lib.sh tools/
COPY tools/bmv2/ tools/bmv2/
RUN tools/install-p4-tools.sh
# --build-arg PIP_CERT=FILE: the CA bundle pip trusts, behind a proxy that
# signs TLS with its own CA (a file the build can read: make image binds it).
ARG PIP_CERT
COPY . .
RUN make setup && make build
CMD ["bash"]
