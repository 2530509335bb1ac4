# linkemu: make setup, make build, make run PROFILE=..., make test
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
BUILD   := build
P4_MAIN := p4src/v1model/linkemu.p4
P4_SRCS := $(shell find p4src -name '*.p4')
PROFILE ?= profiles/ethernet.yaml
FIXED   ?= 1
MOBILE  ?= 1
DEBIAN_PACKAGES := python3-venv mininet iperf3 tcpdump ethtool iproute2 iputils-ping nftables \
                   clang llvm libbpf-dev bpftool munge slurmctld slurmd slurm-client valgrind
P4_TOOLS := tools/install-p4-tools.sh

.PHONY: all setup p4-tools check-tools bf-p4c tofino-controls image build constants schemas run experiment ptf test unit bench bench-tcp bench-instructions soak clean

all: build

setup:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y -q --no-install-recommends $(DEBIAN_PACKAGES) || \
	  { apt-get update -q && apt-get install -y -q --no-install-recommends $(DEBIAN_PACKAGES); }; \
	else echo "not root or no apt-get: install $(DEBIAN_PACKAGES) yourself"; fi
	# The venv sees Debian's Mininet, which installs for /usr/bin/python3.
	[ -x $(PYTHON) ] || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PYTHON) -m pip install -q -r requirements.txt -e 'control_plane[analysis]'
	@# p4c and BMv2 unless installed; CI takes packages only (a source build: 50
	@# minutes) and stops here without them. Elsewhere setup goes on: the tests
	@# that need them skip, each with its reason.
	@$(P4_TOOLS) $(if $(filter true,$(CI)),--no-source,|| true)

# p4c and BMv2's simple_switch_grpc with PI and Thrift: p4lang's packages, or
# pinned sources built from SOURCE (docs/install.md 'P4 tools').
p4-tools:
	@$(P4_TOOLS)

check-tools:
	@$(P4_TOOLS) --check

# bf-p4c, p4c's Tofino back end, in /opt/bf-p4c (about 2.5 hours; reruns
# resume): it checks that the link model compiles for Tofino.
bf-p4c:
	@tools/install-bf-p4c.sh

# The project's image (Dockerfile), for nodes that should not install the P4
# tools: ENGINE=podman builds it with podman. SOURCE=DIR, the install
# script's folder of clones, and PIP_CERT=FILE, a CA bundle for pip behind a
# proxy that signs TLS itself, are bound into the build, which podman can and
# docker cannot; JOBS=n compiles with fewer jobs.
ENGINE ?= docker
BUILD_CA := /etc/linkemu-build-ca.crt
image:
	$(ENGINE) build --network host -t linkemu \
	  $(if $(SOURCE),-v $(abspath $(SOURCE)):$(abspath $(SOURCE)):ro --build-arg SOURCE=$(abspath $(SOURCE))) \
	  $(if $(PIP_CERT),-v $(abspath $(PIP_CERT)):$(BUILD_CA):ro --build-arg PIP_CERT=$(BUILD_CA)) \
	  $(if $(JOBS),--build-arg JOBS=$(JOBS)) .

# Which architecture-neutral controls bf-p4c takes for Tofino as they are
# (docs/targets.md).
tofino-controls:
	$(PYTHON) tools/tofino/check_controls.py

# The benchmark's baselines: plain port-to-port forwarding, a bare
# recirculation hold loop, that loop in a program of linkemu's shape, the
# bare sleep lanes, in any order and in link order, the least link model, and
# linkemu's plain arrival in that model's form.
BASELINES := $(BUILD)/forward.json $(BUILD)/hold.json $(BUILD)/shape.json \
             $(BUILD)/lanes.json $(BUILD)/lanes_in_order.json $(BUILD)/minimal_link.json \
             $(BUILD)/plain_arrival.json

# The hosts' congestion controls in BPF (linkemu.testbed.bpf_cc), compiled
# against the running kernel's types (its BTF); `build` makes them where
# clang is installed.
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(wildcard bpf/*.bpf.c))

build: $(BUILD)/linkemu.json $(BASELINES) $(if $(shell command -v clang),$(BPF_OBJS))

$(BUILD)/linkemu.json: $(P4_SRCS)
	@command -v p4c >/dev/null || { $(MAKE) --no-print-directory check-tools; exit 1; }
	@mkdir -p $(BUILD)
	p4c --target bmv2 --arch v1model --std p4-16 -o $(BUILD) \
	    --p4runtime-files $(BUILD)/linkemu.p4info.txtpb $(P4_MAIN)

$(BASELINES): $(BUILD)/%.json: bench/%.p4
	@command -v p4c >/dev/null || { $(MAKE) --no-print-directory check-tools; exit 1; }
	@mkdir -p $(BUILD)
	p4c --target bmv2 --arch v1model --std p4-16 -o $(BUILD) \
	    --p4runtime-files $(BUILD)/$*.p4info.txtpb $<
$(BUILD)/hold.json $(BUILD)/shape.json: bench/hold_loop.p4
$(BUILD)/lanes_in_order.json: bench/lanes.p4
$(BUILD)/plain_arrival.json: $(filter-out $(P4_MAIN),$(P4_SRCS))

# The BPF programs' view of the kernel's types (from its BTF).
$(BUILD)/vmlinux.h:
	@mkdir -p $(BUILD)
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > $@.partial
	mv $@.partial $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BUILD)/vmlinux.h
	clang -O2 -g -target bpf -I$(BUILD) -c $< -o $@

# The program's names and constants for the control plane; commit the file
# with the P4 change (tests/test_program.py checks it against the build).
constants: $(BUILD)/linkemu.json
	$(PYTHON) util/gen_p4_constants.py

# The JSON Schemas of profiles and experiment files, and the docs' references,
# from the schemas linkemu reads them by; commit what it writes.
schemas:
	$(PYTHON) util/gen_schemas.py

run: build
	$(PYTHON) mininet/run.py --profile $(PROFILE) --fixed $(FIXED) --mobile $(MOBILE) \
	    $(if $(SCRIPT),--script $(SCRIPT)) $(if $(SEED),--seed $(SEED)) \
	    $(if $(REPLAY),--replay $(REPLAY)) $(if $(RECORD),--record $(RECORD)) \
	    $(if $(EVENT_LOG),--event-log $(EVENT_LOG))

# An experiment batch in Mininet (needs root): EXP=experiments/s-www.yaml,
# SHORT=1 for its short form, OUT=dir (default results/NAME); reruns resume.
experiment: build
	@[ -n "$(EXP)" ] || { echo "usage: make experiment EXP=experiments/FILE.yaml [SHORT=1] [OUT=dir]"; exit 2; }
	$(VENV)/bin/linkemu experiment run $(EXP) $(if $(SHORT),--short) $(if $(OUT),--out $(OUT))

ptf: build
	$(PYTHON) ptf_tests/harness.py

# Everything: unit tests, then PTF and Mininet tests (each skips with its
# reason when p4c, BMv2, root or Mininet are missing; under CI=true it fails).
test:
	@if command -v p4c >/dev/null; then $(MAKE) --no-print-directory build; fi
	$(PYTHON) -m pytest -ra control_plane/tests tests

unit:
	$(PYTHON) -m pytest -ra control_plane/tests

# Fidelity and capacity against plain BMv2 forwarding (needs root and BMv2;
# its real TCP runs need Mininet); writes results/bench-DATE/ (report.md,
# report.json, plots). QUICK=1: minutes.
bench: build
	$(PYTHON) bench/benchmark.py $(if $(QUICK),--quick) $(if $(OUT),--out $(OUT))

# Release-time error of real TCP through Mininet (needs Mininet); prints JSON.
bench-tcp: build
	$(PYTHON) bench/tcp_fidelity.py --profile profiles/gprs-optimal.yaml \
	    --profile profiles/10mbit-20ms.yaml --seconds 20

# Instructions BMv2 spends on a frame, per program and per feature, counted
# by callgrind (docs/bmv2-costs.md): steady where the benchmark's rates vary.
# OUT=FILE: the counts as JSON too.
bench-instructions: build
	$(PYTHON) bench/instructions.py $(if $(OUT),--out $(OUT))

# The soak (needs Mininet): MINUTES of S-WWW medium ARQ with TCP, UDP and the
# state driver; memory, drift and accounting into results/soak-DATE/.
soak: build
	$(PYTHON) bench/soak.py --minutes $(or $(MINUTES),30) $(if $(OUT),--out $(OUT))

clean:
	rm -rf $(BUILD)
