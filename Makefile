# The two commands: `make run` and `make test`. Both install missing Debian packages first.
BUILD     ?= build
JOBS      ?= $(shell nproc)
SCENARIO  ?= scenarios/default.json
OUT       ?= results/default.h5

# The scenario fuzzer (docs/hardening.md): `make fuzz` runs it for FUZZ_SECONDS, keeping what it
# finds in FUZZ_CORPUS (outside the repository); `make test` runs FUZZ_SMOKE_RUNS inputs of it.
# The log importers' fuzzer likewise: `make fuzz-logs`, LOG_FUZZ_CORPUS, LOG_FUZZ_SMOKE_RUNS; and
# the sweep files' fuzzer: `make fuzz-sweeps`, SWEEP_FUZZ_CORPUS, SWEEP_FUZZ_SMOKE_RUNS.
FUZZ_BUILD            ?= build-fuzz
FUZZ_SECONDS          ?= 300
FUZZ_SMOKE_RUNS       ?= 200000
FUZZ_SMOKE_SECONDS    ?= 120
FUZZ_CORPUS           ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/fabtwin/fuzz-corpus
LOG_FUZZ_SMOKE_RUNS   ?= 100000
LOG_FUZZ_CORPUS       ?= $(FUZZ_CORPUS)-logs
SWEEP_FUZZ_SMOKE_RUNS ?= 100000
SWEEP_FUZZ_CORPUS     ?= $(FUZZ_CORPUS)-sweeps
ASAN_BUILD            ?= build-asan
TSAN_BUILD            ?= build-tsan

DEBIAN_PACKAGES = build-essential cmake pkg-config \
  libboost-graph-dev libboost-program-options-dev libtbb-dev libhdf5-dev \
  nlohmann-json3-dev catch2 libibverbs-dev librdmacm-dev libopenmpi-dev openmpi-bin \
  python3-h5py python3-matplotlib python3-numpy python3-ipykernel python3-nbformat python3-jsonschema \
  jupyter-nbconvert clang libclang-rt-14-dev \
  libssl-dev \
  libmetis-dev \
  libnlopt-cxx-dev libeigen3-dev

SUDO = $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all setup configure build run test bench bench-setup bench-queue bench-nccl validate sweep-examples \
  calibrate-examples \
  format clean fuzz-build fuzz fuzz-logs fuzz-sweeps fuzz-smoke asan tsan

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

test: build fuzz-build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory fuzz-smoke

# libFuzzer's limits: an input may take FUZZ_TIMEOUT seconds, FUZZ_RSS_MB of memory in all and
# FUZZ_MALLOC_MB in one allocation; beyond them it is a finding (a hang, an OOM).
FUZZ_TIMEOUT   ?= 10
FUZZ_RSS_MB    ?= 2048
FUZZ_MALLOC_MB ?= 1024
FUZZ_LIMITS = -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=$(FUZZ_RSS_MB) \
  -malloc_limit_mb=$(FUZZ_MALLOC_MB) -print_final_stats=1
FUZZ_FLAGS = $(FUZZ_LIMITS) -dict=$(FUZZ_BUILD)/tests/fuzz/scenario.dict
FUZZER = $(FUZZ_BUILD)/tests/fuzz/scenario_fuzz
LOG_FUZZER = $(FUZZ_BUILD)/tests/fuzz/log_fuzz
SWEEP_FUZZER = $(FUZZ_BUILD)/tests/fuzz/sweep_fuzz

fuzz-build: setup
	@[ -f $(FUZZ_BUILD)/CMakeCache.txt ] || cmake -S . -B $(FUZZ_BUILD) -DFABTWIN_FUZZ=ON \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

# Every seed and every kept reproducer once, then FUZZ_SMOKE_RUNS inputs mutated from the seeds
# with a fixed random seed (a fresh corpus each time), so `make test` tries the same inputs on
# every machine; FUZZ_SMOKE_SECONDS caps the time on a slow one. A finding fails the step and
# leaves its input in $(FUZZ_BUILD). The arguments: the fuzzer with its flags, how many inputs,
# the fresh corpus's folder, the seeds' folder, the reproducers' folder.
define fuzz_smoke
$(1) -runs=0 $(4) $(5)
rm -rf $(FUZZ_BUILD)/$(3) && mkdir -p $(FUZZ_BUILD)/$(3)
$(1) -seed=1 -runs=$(2) -max_total_time=$(FUZZ_SMOKE_SECONDS) -artifact_prefix=$(FUZZ_BUILD)/ \
  $(FUZZ_BUILD)/$(3) $(4)
endef
fuzz-smoke: fuzz-build
	$(call fuzz_smoke,$(FUZZER) $(FUZZ_FLAGS),$(FUZZ_SMOKE_RUNS),smoke-corpus,$(FUZZ_BUILD)/tests/fuzz/seeds,tests/fuzz/regressions)
	$(call fuzz_smoke,$(LOG_FUZZER) $(FUZZ_LIMITS),$(LOG_FUZZ_SMOKE_RUNS),log-smoke-corpus,$(FUZZ_BUILD)/tests/fuzz/log-seeds,tests/fuzz/log-regressions)
	$(call fuzz_smoke,$(SWEEP_FUZZER) $(FUZZ_FLAGS),$(SWEEP_FUZZ_SMOKE_RUNS),sweep-smoke-corpus,$(FUZZ_BUILD)/tests/fuzz/sweep-seeds,tests/fuzz/sweep-regressions)

# FUZZ_SECONDS of fuzzing from a corpus that runs build on, with FUZZ_JOBS processes; the first
# finding stops the run (FUZZ_EXTRA="-ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1" keeps
# going and collects them all in $(FUZZ_BUILD)). The arguments: the fuzzer with its flags, the
# corpus, the seeds' and the reproducers' folders.
FUZZ_JOBS  ?= 1
FUZZ_EXTRA ?=
define fuzz_run
mkdir -p $(2)
$(1) -max_total_time=$(FUZZ_SECONDS) -fork=$(FUZZ_JOBS) $(FUZZ_EXTRA) \
  -artifact_prefix=$(FUZZ_BUILD)/ $(2) $(3)
endef
fuzz: fuzz-build
	$(call fuzz_run,$(FUZZER) $(FUZZ_FLAGS),$(FUZZ_CORPUS),$(FUZZ_BUILD)/tests/fuzz/seeds tests/fuzz/regressions)
fuzz-logs: fuzz-build
	$(call fuzz_run,$(LOG_FUZZER) $(FUZZ_LIMITS),$(LOG_FUZZ_CORPUS),$(FUZZ_BUILD)/tests/fuzz/log-seeds tests/fuzz/log-regressions)
fuzz-sweeps: fuzz-build
	$(call fuzz_run,$(SWEEP_FUZZER) $(FUZZ_FLAGS),$(SWEEP_FUZZ_CORPUS),$(FUZZ_BUILD)/tests/fuzz/sweep-seeds tests/fuzz/sweep-regressions)

# The whole test suite under AddressSanitizer and UBSan (gcc), in a build folder of its own.
# Leaks are checked everywhere but in the MPI runs: OpenMPI's plugins leak at exit (about 120 KB
# in 3,350 allocations per rank, in code dlclose has unmapped, so no suppression can name it).
asan: setup
	@[ -f $(ASAN_BUILD)/CMakeCache.txt ] || cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -E '^mpi/'
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -R '^mpi/'

# The whole test suite under ThreadSanitizer (gcc), in a build folder of its own: the window
# workers' claims and barrier, burst stealing and the packet pools of the parallel runner, and
# every test that runs on several threads or ranks. libtbb is not instrumented: tests/tsan.supp.
# docs/hardening.md says what it checks and what it found.
tsan: setup
	@[ -f $(TSAN_BUILD)/CMakeCache.txt ] || cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer"
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp" \
	  ctest --output-on-failure -j $(JOBS)

validate: build
	$(BUILD)/fabtwin validate

# The standard benchmark's figures, then its regression guard: the instruction count of the
# 400 KB variant under callgrind beside the last row of docs/performance.md's history (valgrind
# is installed for this target only; `make test` does not need it).
BENCH_PACKAGES = valgrind

bench-setup:
	@dpkg-query -W -f='$${Status}' $(BENCH_PACKAGES) 2>/dev/null | grep -q 'install ok installed' || { \
	  echo "installing Debian packages:" $(BENCH_PACKAGES); \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $(BENCH_PACKAGES); }

bench: build bench-setup
	$(BUILD)/fabtwin bench
	scripts/bench_instructions.sh $(BUILD)

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

# The calibrations of docs/validation.md ("Calibration against measured runs") against a published nccl-tests log (2 x 8 H100,
# tests/data/logs): NCCL's latency regime (fitted on 8 B to 16 KiB, validated on 32 KiB to
# 1 MiB), then, on top of it through `extends`, the bandwidth regime (fitted on 32 to 256 MiB,
# validated on 512 MiB and 1 GiB). A few minutes on 2 cores; into results/calibration/.
CALIBRATION_LOG = tests/data/logs/nccl-tests/all_reduce_2x8_h100_v2.13.log
CALIBRATE       = $(BUILD)/fabtwin calibrate --jobs $(JOBS) --measured results/calibration/a3mega.h5
calibrate-examples: build
	@mkdir -p results/calibration
	$(BUILD)/fabtwin import nccl-tests $(CALIBRATION_LOG) --out results/calibration/a3mega.h5
	$(CALIBRATE) --scenario scenarios/calibration/a3mega_2x8.json --set traffic[0].max_bytes=1MiB \
	  --fit nccl.base_latency=1us:300us --fit nccl.tree_net_step_latency=1us:100us \
	  --fit nccl.tree_nvlink_step_latency=0.3us:30us --fit-on 'size<=16KiB' \
	  --predict 'size>16KiB,size<=1MiB' --out results/calibration/a3mega_latency.json \
	  --report results/calibration/a3mega_latency.h5 | tee results/calibration/a3mega_latency.txt
	printf '{"extends": ["../../scenarios/calibration/a3mega_2x8.json", "a3mega_latency.json"]}\n' \
	  > results/calibration/a3mega_after_latency.json
	$(CALIBRATE) --scenario results/calibration/a3mega_after_latency.json \
	  --fit nccl.base_latency=1us:2ms --fit gpu.channel_rate=20Gbps:1280Gbps \
	  --fit-on 'size>=32MiB,size<=256MiB' --predict 'size>256MiB' \
	  --out results/calibration/a3mega_bandwidth.json \
	  --report results/calibration/a3mega_bandwidth.h5 | tee results/calibration/a3mega_bandwidth.txt

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
