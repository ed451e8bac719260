# kernels_bench host tests, appended to trainsim_tests by tests/CMakeLists.txt.
list(APPEND TRAINSIM_TEST_SOURCES
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/shape_key_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/shapes_file_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/plan_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/stats_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/runner_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/merge_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/timing_loop_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/device_errors_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/gemm_config_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/launch_shapes_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/reference_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/self_check_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/sdpa_graph_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/memory_probe_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/kernels_bench/grid_test.cpp
)
list(APPEND TRAINSIM_TEST_LIBS kernels_bench_host)

# CLI smoke tests: the dry run needs no GPU.
add_test(NAME KernelsBenchDryRun
         COMMAND kernels_bench --shapes ${PROJECT_SOURCE_DIR}/tests/data/kernels/shapes_small.json --dry-run)
set_tests_properties(KernelsBenchDryRun PROPERTIES PASS_REGULAR_EXPRESSION "estimated run time: ")
add_test(NAME KernelsBenchBadShapes
         COMMAND kernels_bench --shapes ${PROJECT_SOURCE_DIR}/tests/data/kernels/bad_shapes.json --dry-run)
set_tests_properties(KernelsBenchBadShapes PROPERTIES
  PASS_REGULAR_EXPRESSION "/shapes/0/key: shape key 'b=1, m=4096, k=4096, n=6144, layout=TT, accumulate=False, out_dtype=bf16': layout: expected one of TN, NN, NT, got 'TT'")

add_test(NAME KernelsBenchLaunchFloorDryRun COMMAND kernels_bench --launch-floor --dry-run)
set_tests_properties(KernelsBenchLaunchFloorDryRun PROPERTIES
  PASS_REGULAR_EXPRESSION "kernels_bench plan: 2 items \\(eager_launch_floor 1, graph_launch_floor 1\\)")

# The calibration grid of every family, bf16 and fp8: sized to finish on an H100 in 30 minutes,
# with a coarse grid of every family measured within its first seven minutes.
add_test(NAME KernelsBenchGridDryRun COMMAND kernels_bench --grid all --dtype bf16,fp8 --dry-run)
set_tests_properties(KernelsBenchGridDryRun PROPERTIES
  PASS_REGULAR_EXPRESSION "kernels_bench plan: 4144 items .*\n  gemm        3146 items    15m15s\n.*  grid level 0 \\(every 4th value of each axis\\)     494 items +[0-9m]+s, done after [0-6]m[0-9]+s\n.*estimated run time: 26m04s")
add_test(NAME KernelsBenchGridBadFamily COMMAND kernels_bench --grid gemm,conv --dry-run)
set_tests_properties(KernelsBenchGridBadFamily PROPERTIES
  PASS_REGULAR_EXPRESSION "kernels_bench: usage error: --grid 'gemm,conv': unknown family 'conv'")

# The memory probe's writer needs no GPU: a synthetic result into the H100 preset.
add_test(NAME KernelsBenchApplyMemoryProbe
         COMMAND kernels_bench --apply-memory-probe ${PROJECT_SOURCE_DIR}/tests/data/kernels/memory_probe.json
                 --system h100-sxm-80g --out ${PROJECT_BINARY_DIR}/system_memory_probe.json)
set_tests_properties(KernelsBenchApplyMemoryProbe PROPERTIES PASS_REGULAR_EXPRESSION
  "wrote .*system_memory_probe.json \\(context 612 MiB, cuBLAS 8 MiB, cuBLASLt 33 MiB, NCCL 416 MiB over 8 ranks\\)")

# On a GPU machine: a small real sweep, then merged into a system file the simulator reads.
if(TRAINSIM_ENABLE_DEVICE_TESTS AND TRAINSIM_HAVE_CUDA)
  set(KB_SMOKE_OUT ${PROJECT_BINARY_DIR}/kernels_smoke.json)
  add_test(NAME KernelsDeviceSmoke
           COMMAND kernels_bench --shapes ${PROJECT_SOURCE_DIR}/tests/data/kernels/shapes_small.json
                   --out ${KB_SMOKE_OUT} --samples 10 --warmup 2)
  add_test(NAME KernelsDeviceSystemBuild
           COMMAND trainsim_cli system build --base h100-sxm-80g --kernels ${KB_SMOKE_OUT}
                   --out ${PROJECT_BINARY_DIR}/system_smoke.json)
  # The launch floor, eager and in a CUDA graph, into the H100 preset's memory-bound classes.
  set(KB_FLOOR_OUT ${PROJECT_BINARY_DIR}/kernels_launch_floor.json)
  add_test(NAME KernelsDeviceLaunchFloor
           COMMAND kernels_bench --launch-floor --out ${KB_FLOOR_OUT} --samples 10 --warmup 2)
  add_test(NAME KernelsDeviceLaunchFloorSystemBuild
           COMMAND trainsim_cli system build --base h100-sxm-80g --kernels ${KB_FLOOR_OUT}
                   --out ${PROJECT_BINARY_DIR}/system_launch_floor.json)
  set_tests_properties(KernelsDeviceLaunchFloor PROPERTIES FIXTURES_SETUP kb_floor LABELS gpu)
  set_tests_properties(KernelsDeviceLaunchFloorSystemBuild PROPERTIES FIXTURES_REQUIRED kb_floor LABELS gpu)
  # The memory-bound grid (seconds), then a grid run's merge into the H100 preset.
  set(KB_GRID_OUT ${PROJECT_BINARY_DIR}/kernels_grid_memory.json)
  add_test(NAME KernelsDeviceGridMemory
           COMMAND kernels_bench --grid memory --out ${KB_GRID_OUT} --samples 10 --warmup 2)
  add_test(NAME KernelsDeviceGridSystemBuild
           COMMAND trainsim_cli system build --base h100-sxm-80g --kernels ${KB_GRID_OUT}
                   --out ${PROJECT_BINARY_DIR}/system_grid_memory.json)
  set_tests_properties(KernelsDeviceGridMemory PROPERTIES FIXTURES_SETUP kb_grid LABELS gpu)
  set_tests_properties(KernelsDeviceGridSystemBuild PROPERTIES FIXTURES_REQUIRED kb_grid LABELS gpu)
  add_test(NAME KernelsDeviceSelfCheck COMMAND kernels_bench --self-check)
  set_tests_properties(KernelsDeviceSelfCheck PROPERTIES PASS_REGULAR_EXPRESSION "self-check: [0-9]+ passed, 0 failed"
                       LABELS gpu)
  set_tests_properties(KernelsDeviceSmoke PROPERTIES FIXTURES_SETUP kb_smoke LABELS gpu)
  set_tests_properties(KernelsDeviceSystemBuild PROPERTIES FIXTURES_REQUIRED kb_smoke LABELS gpu)
  # The memory probe on one GPU, written into the H100 preset (the file must load).
  add_test(NAME KernelsDeviceMemoryProbe
           COMMAND kernels_bench --memory-probe --system h100-sxm-80g
                   --out ${PROJECT_BINARY_DIR}/system_memory_probe_device.json)
  set_tests_properties(KernelsDeviceMemoryProbe PROPERTIES LABELS gpu
    PASS_REGULAR_EXPRESSION "wrote .*system_memory_probe_device.json \\(context [0-9]+ MiB, cuBLAS [0-9]+ MiB, cuBLASLt [0-9]+ MiB, NCCL not measured\\)")
endif()

# Without a GPU the self-check stops with a clear message (exit 1), whatever the build; without
# a driver it is the driver check's (calibration/cuda_driver.h).
if(NOT TRAINSIM_ENABLE_DEVICE_TESTS)
  add_test(NAME KernelsSelfCheckNeedsGpu COMMAND kernels_bench --self-check)
  set_tests_properties(KernelsSelfCheckNeedsGpu PROPERTIES
    PASS_REGULAR_EXPRESSION "kernels_bench: error: (no usable GPU|this kernels_bench was built without CUDA|no NVIDIA driver is loaded: this kernels_bench measures on a GPU and needs a driver for CUDA [0-9]+\\.[0-9]+ or later)")
  add_test(NAME KernelsMemoryProbeNeedsGpu COMMAND kernels_bench --memory-probe --out ${PROJECT_BINARY_DIR}/probe_no_gpu.json)
  set_tests_properties(KernelsMemoryProbeNeedsGpu PROPERTIES
    PASS_REGULAR_EXPRESSION "kernels_bench: error: (memory probe: |this kernels_bench was built without CUDA|no NVIDIA driver is loaded: this kernels_bench measures on a GPU and needs a driver for CUDA [0-9]+\\.[0-9]+ or later)")
endif()

# `trainsim system build` on the fixtures (the merged file must read back in the simulator).
add_test(NAME KernelsSystemBuildFixture
         COMMAND trainsim_cli system build --base ${PROJECT_SOURCE_DIR}/tests/data/kernels/base_system.json
                 --kernels ${PROJECT_SOURCE_DIR}/tests/data/kernels/kernels_fixture.json
                 --out ${PROJECT_BINARY_DIR}/kernels_fixture_system.json)
# A grid run's results (synthetic: tests/data/kernels/make_grid_fixture.py) into the H100 preset:
# the GEMM, grouped-GEMM and attention models, evaluated held out point by point (a 3 × 2 × 2
# grid is all edges: its held-out nodes are extrapolated, hence the GEMM's 15 %).
add_test(NAME KernelsGridSystemBuildFixture
         COMMAND trainsim_cli system build --base h100-sxm-80g
                 --kernels ${PROJECT_SOURCE_DIR}/tests/data/kernels/kernels_grid_fixture.json
                 --out ${PROJECT_BINARY_DIR}/kernels_grid_fixture_system.json)
add_test(NAME KernelsGridSystemEvaluate
         COMMAND trainsim_cli system evaluate --system ${PROJECT_BINARY_DIR}/kernels_grid_fixture_system.json)
set_tests_properties(KernelsGridSystemBuildFixture PROPERTIES FIXTURES_SETUP kb_grid_fixture)
set_tests_properties(KernelsGridSystemEvaluate PROPERTIES FIXTURES_REQUIRED kb_grid_fixture PASS_REGULAR_EXPRESSION
  "matmul       gemm_grid       12       12   15.29   31.95    32.0\n  sdp_fwd      points           3        3    0.00    0.00     0.0\n  group_matmul grouped          3        3   71.83  163.91   163.9\n")
add_test(NAME KernelsSystemBuildNeedsBase
         COMMAND trainsim_cli system build --kernels ${PROJECT_SOURCE_DIR}/tests/data/kernels/kernels_fixture.json
                 --out ${PROJECT_BINARY_DIR}/unused.json)
set_tests_properties(KernelsSystemBuildNeedsBase PROPERTIES
  PASS_REGULAR_EXPRESSION "system build: --base is required")

# calibrate_node.sh with stub tools: step order, one comm_bench rank per GPU, budget, resume.
add_test(NAME CalibrateNodeStubbedRun
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/kernels_bench/calibrate_node_test.sh
                 ${PROJECT_SOURCE_DIR}/kernels_bench/calibrate_node.sh)
set_tests_properties(CalibrateNodeStubbedRun PROPERTIES
  PASS_REGULAR_EXPRESSION "calibrate_node.sh: steps, mpirun ranks and resume OK" TIMEOUT 60)

# calibrate_node.sh validates its arguments before touching a GPU.
add_test(NAME CalibrateNodeBudgetTooSmall
         COMMAND bash ${PROJECT_SOURCE_DIR}/kernels_bench/calibrate_node.sh --budget-min 2 --bin-dir ${PROJECT_BINARY_DIR}/bin)
set_tests_properties(CalibrateNodeBudgetTooSmall PROPERTIES
  PASS_REGULAR_EXPRESSION "calibrate_node.sh: --budget-min '2': expected whole minutes ≥ 5")
add_test(NAME CalibrateNodeUnknownArgument
         COMMAND bash ${PROJECT_SOURCE_DIR}/kernels_bench/calibrate_node.sh --budget 20)
set_tests_properties(CalibrateNodeUnknownArgument PROPERTIES
  PASS_REGULAR_EXPRESSION "calibrate_node.sh: unknown argument '--budget' \\(see --help\\)")
