# linkemu from nothing: Debian 12, p4c and BMv2 from the project's install
# script, then `make setup`. Mininet needs the container privileged:
#   docker build -t linkemu .
#   docker run --rm -it --privileged linkemu make test
FROM debian:12
RUN apt-get update && apt-get install -y --no-install-recommends make
WORKDIR /linkemu
# --build-arg JOBS=n compiles with fewer jobs than cores where memory is short
# (a p4c compile job can take a few GB).
ARG JOBS
# The P4 tools in a layer of their own, so that a change to linkemu does not
# rebuild them.
COPY tools/install-p4-tools.sh tools/
RUN tools/install-p4-tools.sh
COPY . .
RUN make setup
CMD ["bash"]
