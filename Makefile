# trainsim: `make run` (set-up, build, run the default prediction) and `make test`
# (set-up, build, every test). Works on a fresh Debian machine as root.
BUILD_DIR ?= build
ASAN_DIR  ?= build-asan
FUZZ_DIR  ?= build-fuzz
# Seconds each fuzz target runs in `make fuzz` (one process, so CPU-seconds); fuzz-short: 60.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS := fuzz_configs fuzz_results fuzz_nccl_tests fuzz_validation_csv fuzz_user_inputs fuzz_plans
JOBS      ?= 2
CMAKE_ARGS ?=
PACKAGES  := cmake g++ make pkg-config nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev \
             libopenmpi-dev openmpi-bin libbenchmark-dev python3 python3-pip python3-venv clang libclang-rt-dev \
             chromium chromium-driver python3-selenium libcpp-httplib-dev ccache

# cudnn-frontend C++ headers (attention bench) from the PyPI wheel; any Python tag works, the
# headers are the same. Without network or pip the attention bench is built disabled.
CUDNN_FE_VERSION ?= 1.32.0
CUDNN_FE_DIR     := $(BUILD_DIR)/_deps/cudnn_frontend
# Python environment of `make measured-systems` (pinned in tools/measured/requirements.txt).
VENV      ?= $(BUILD_DIR)/venv
# Python environment of `make python-test`: the trainsim package (`pip install .`) and pytest.
PY_VENV   ?= $(BUILD_DIR)/pyvenv
PY_BUILD_REQUIRES := 'scikit-build-core>=1.1' 'nanobind>=2.0' pytest
# kernels_bench and comm_bench for nodes whose driver predates CUDA 13 (docs/kernels-bench.md):
# a CUDA 12.4 toolkit from PyPI's wheels in CUDA12_DIR (cached there), built in CUDA12_BUILD.
# The wheels have no nvcc: kernels_bench's device kernels are then compiled at run time by NVRTC;
# CUDA12_NVCC=/path/to/cuda-12.x/bin/nvcc compiles them at build time (that toolkit's runtime
# and cuBLAS are then linked; cuDNN and NCCL stay the wheels').
CUDA12_DIR   ?= .cuda12
CUDA12_BUILD ?= build-cuda12
CUDA12_NVCC  ?=
# Builds compile through ccache when it is installed; the CMake build and `pip install .`
# (build-python/, same flags) then share their objects.
CCACHE    := $(shell command -v ccache 2>/dev/null)
export CCACHE_BASEDIR ?= $(CURDIR)

.PHONY: all setup configure build run test asan bench clean calibrate measured-venv measured-systems fuzz fuzz-short \
        python python-test cuda12-benches

all: build

# Install the Debian packages that are missing (only as root; otherwise list them).
setup:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing packages (run as root or install them):$$missing"; exit 1; fi; \
	fi

$(BUILD_DIR)/CMakeCache.txt:
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) $(CMAKE_ARGS)

$(CUDNN_FE_DIR)/include/cudnn_frontend.h:
	@mkdir -p $(CUDNN_FE_DIR)
	@if python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
	     --platform manylinux_2_28_$$(uname -m) -d $(CUDNN_FE_DIR) nvidia-cudnn-frontend==$(CUDNN_FE_VERSION); then \
	  python3 -c "import glob, zipfile; z = zipfile.ZipFile(glob.glob('$(CUDNN_FE_DIR)/*.whl')[0]); \
	    [z.extract(n, '$(CUDNN_FE_DIR)') for n in z.namelist() if n.startswith('include/')]"; \
	else echo "cudnn-frontend: download failed; the attention bench will be built disabled"; fi

configure: setup $(CUDNN_FE_DIR)/include/cudnn_frontend.h $(BUILD_DIR)/CMakeCache.txt

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	./$(BUILD_DIR)/bin/trainsim perf

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)
	$(MAKE) python-test

# The Python package: a venv with the build requirements from PyPI, then `pip install .` (its
# CMake build persists in build-python/; no build isolation, so that a rebuild reuses it). The
# compiler and flags are the CMake build's: ccache gives its objects back.
$(PY_VENV)/.installed:
	python3 -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install -q $(PY_BUILD_REQUIRES)
	touch $@

python: setup $(PY_VENV)/.installed
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY_VENV)/bin/pip install --no-build-isolation .

# The Python tests compare with the CLI of the CMake build; pytest's exit code (1: failures,
# 5: no test collected, ...) fails the target.
python-test: build python
	TRAINSIM_CLI=$(CURDIR)/$(BUILD_DIR)/bin/trainsim $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/python

# The benches against CUDA 12 (see CUDA12_DIR above); MPI is the system's, as in $(BUILD_DIR).
$(CUDA12_DIR)/toolkit/version.txt: tools/cuda12/toolkit.sh
	tools/cuda12/toolkit.sh $(CUDA12_DIR)

cuda12-benches: setup $(CUDNN_FE_DIR)/include/cudnn_frontend.h $(CUDA12_DIR)/toolkit/version.txt
	cmake -S . -B $(CUDA12_BUILD) -DCMAKE_BUILD_TYPE=Release $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) \
	  -DTRAINSIM_BUILD_TESTS=OFF -DTRAINSIM_WITH_CUDA=ON -DTRAINSIM_WITH_CUDNN=ON -DTRAINSIM_WITH_NCCL=ON \
	  -DCUDAToolkit_ROOT=$(CURDIR)/$(CUDA12_DIR)/toolkit -DCUDNN_FRONTEND_HOME=$(CURDIR)/$(CUDNN_FE_DIR) \
	  -DCUDNN_HOME=$(CURDIR)/$(CUDA12_DIR)/toolkit -DNCCL_HOME=$(CURDIR)/$(CUDA12_DIR)/toolkit \
	  $(if $(CUDA12_NVCC),-DCMAKE_CUDA_COMPILER=$(CUDA12_NVCC),-UCMAKE_CUDA_COMPILER) $(CMAKE_ARGS)
	cmake --build $(CUDA12_BUILD) -j $(JOBS) --target kernels_bench comm_bench
	@if [ -z "$(CUDA12_NVCC)" ]; then cmake --build $(CUDA12_BUILD) -j $(JOBS) --target mem_kernels_nvrtc_check && \
	  ./$(CUDA12_BUILD)/bin/mem_kernels_nvrtc_check; fi
	./$(CUDA12_BUILD)/bin/kernels_bench --shapes tests/data/kernels/shapes_small.json --dry-run > /dev/null
	./$(CUDA12_BUILD)/bin/comm_bench --help > /dev/null

# Estimate speed on the 128 golden cases (Google Benchmark; figures in docs/cost-model.md).
bench: build
	./$(BUILD_DIR)/bin/estimate_bench --benchmark_min_time=0.05
	./$(BUILD_DIR)/bin/estimate_bench --rotate 20
	./$(BUILD_DIR)/bin/search_bench

# Regenerates configs/system/*-measured.json from NVIDIA's published kernel and NCCL tables
# (PyPI aiconfigurator-core, installed into $(VENV); needs the network the first time).
$(VENV)/.installed: tools/measured/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tools/measured/requirements.txt
	touch $@

measured-venv: setup $(VENV)/.installed

measured-systems: build measured-venv
	$(VENV)/bin/python tools/measured/import_measurements.py build

# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU parts only).
asan: setup
	cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DTRAINSIM_SANITIZE=ON \
	  -DTRAINSIM_WITH_CUDA=OFF -DTRAINSIM_WITH_MPI=OFF
	cmake --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=0 ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

# The whole node calibration (needs GPUs): see docs/calibration.md. Pass options in ARGS,
# e.g. make calibrate ARGS="--budget-min 20 --out-dir calib".
calibrate: build
	kernels_bench/calibrate_node.sh --bin-dir $(BUILD_DIR)/bin $(ARGS)

# libFuzzer targets (clang, ASan+UBSan), each run for FUZZ_SECONDS from the seed corpus in the
# repository (fuzz_plans has none: each byte is a choice, and its inputs may be full length from
# the start, a plan taking up to ~200 choices); a crash, sanitizer report, timeout (10 s per
# input) or 2 GB of memory fails the run and leaves the input in $(FUZZ_DIR)/artifacts/. New coverage-increasing inputs accumulate in
# $(FUZZ_DIR)/corpus/<target>/ across runs.
fuzz: setup
	CXX=clang++ cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINSIM_FUZZ=ON \
	  -DTRAINSIM_BUILD_TESTS=OFF -DTRAINSIM_WITH_CUDA=OFF -DTRAINSIM_WITH_MPI=OFF
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target $(FUZZ_TARGETS)
	@mkdir -p $(FUZZ_DIR)/artifacts
	@set -e; for t in $(FUZZ_TARGETS); do \
	  len="-max_len=65536"; \
	  case $$t in \
	    fuzz_configs) seeds="configs tests/data/golden/systems tests/data/kernels/base_system.json";; \
	    fuzz_results) seeds="tests/data/kernels";; \
	    fuzz_nccl_tests) seeds="tests/data/comm";; \
	    fuzz_validation_csv) seeds="tests/data/validation";; \
	    fuzz_user_inputs) seeds="tests/data/hf tests/data/megatron docs/examples";; \
	    fuzz_plans) seeds=""; len="-max_len=512 -len_control=0";; \
	  esac; \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/seeds/$$t; \
	  for s in $$seeds; do find $$s -type f -exec cp --backup=numbered {} $(FUZZ_DIR)/seeds/$$t/ \; ; done; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  rc=0; ASAN_OPTIONS=detect_leaks=1 ./$(FUZZ_DIR)/bin/$$t $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/seeds/$$t \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 $$len \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/artifacts/$$t- > $(FUZZ_DIR)/$$t.log 2>&1 || rc=$$?; \
	  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
	    $(FUZZ_DIR)/$$t.log || true; \
	  if [ $$rc -ne 0 ]; then tail -n 60 $(FUZZ_DIR)/$$t.log; echo "fuzz: $$t FAILED (see $(FUZZ_DIR)/$$t.log)"; exit $$rc; fi; \
	done

# The short run CI does after the tests.
fuzz-short:
	$(MAKE) fuzz FUZZ_SECONDS=60

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR) build-python $(CUDA12_BUILD)
