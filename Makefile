# The two commands: `make run` and `make test`. Both install missing Debian packages first.
BUILD     ?= build
JOBS      ?= $(shell nproc)
SCENARIO  ?= scenarios/default.json
OUT       ?= results/default.h5

DEBIAN_PACKAGES = build-essential cmake pkg-config \
  libboost-graph-dev libboost-program-options-dev libtbb-dev libhdf5-dev \
  nlohmann-json3-dev catch2 libibverbs-dev librdmacm-dev libopenmpi-dev openmpi-bin \
  python3-h5py python3-matplotlib python3-numpy python3-ipykernel python3-nbformat python3-jsonschema \
  jupyter-nbconvert

SUDO = $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all setup configure build run test bench bench-queue bench-nccl validate sweep-examples format clean

all: build

setup:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi

configure: setup
	@[ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/fabtwin run $(SCENARIO) --out $(OUT)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

validate: build
	$(BUILD)/fabtwin validate

bench: build
	$(BUILD)/fabtwin bench

bench-queue: build
	$(BUILD)/fabtwin bench --queue

# 64 GPUs (8 x 8), ring all-reduce of 1 GiB at packet level: wall time and events/s.
bench-nccl: build
	$(BUILD)/fabtwin run scenarios/bench/nccl_ring_8x8_1gib.json --threads 1 \
	  --set output.collective_timeline=false

# The three example studies of docs/sweep-studies.md in full (about a minute on 2 cores), into
# results/sweeps/<study>/ (and what each prints, <study>.log), where notebooks/sweep_studies.ipynb
# reads them. --restart recomputes every point; SWEEP_FLAGS= (empty) resumes an interrupted run.
SWEEP_STUDIES = incast_ecn dcqcn_recovery allreduce_ecn
SWEEP_FLAGS  ?= --restart
sweep-examples: build
	@mkdir -p results/sweeps; for s in $(SWEEP_STUDIES); do \
	  echo "fabtwin sweep scenarios/sweeps/$$s.sweep.json"; \
	  $(BUILD)/fabtwin sweep scenarios/sweeps/$$s.sweep.json --jobs $(JOBS) --threads 1 \
	    --out results/sweeps/$$s $(SWEEP_FLAGS) > results/sweeps/$$s.log || exit 1; \
	  cat results/sweeps/$$s.log; \
	done

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD)
