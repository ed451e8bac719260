# comm_bench host tests (CPU only) and, with MPI, the two-rank dry run.
list(APPEND TRAINSIM_TEST_SOURCES
  ${PROJECT_SOURCE_DIR}/tests/comm_bench/collectives_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/comm_bench/fit_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/comm_bench/groups_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/comm_bench/nccl_tests_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/comm_bench/results_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/comm_bench/comm_merge_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/comm_bench/launch_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/comm_bench/watchdog_test.cpp
)
list(APPEND TRAINSIM_TEST_LIBS comm_bench_host)

add_test(NAME comm_bench_import_cli
  COMMAND comm_bench --from-nccl-tests ${PROJECT_SOURCE_DIR}/tests/data/comm/all_reduce_v2.19_8gpu.log
          --out ${CMAKE_CURRENT_BINARY_DIR}/comm_import_cli.json)
set_tests_properties(comm_bench_import_cli PROPERTIES PASS_REGULAR_EXPRESSION "wrote .*comm_import_cli.json \\(1 runs")
add_test(NAME comm_bench_import_missing_file
  COMMAND comm_bench --from-nccl-tests ${CMAKE_CURRENT_BINARY_DIR}/missing_all_reduce.log
          --out ${CMAKE_CURRENT_BINARY_DIR}/comm_import_missing.json)
set_tests_properties(comm_bench_import_missing_file PROPERTIES
  PASS_REGULAR_EXPRESSION "comm_bench: error: [^\n]*/missing_all_reduce.log: cannot open file")
add_test(NAME comm_bench_bad_flag COMMAND comm_bench --max-byte 8G)
set_tests_properties(comm_bench_bad_flag PROPERTIES
  PASS_REGULAR_EXPRESSION "unknown option '--max-byte'; did you mean '--max-bytes'\\?")

# Non-numbers and wrapped values are usage errors (exit 2).
add_test(NAME comm_bench_strict_numbers COMMAND comm_bench --dry-run --iters " 5")
set_tests_properties(comm_bench_strict_numbers PROPERTIES
  PASS_REGULAR_EXPRESSION "comm_bench: usage error: --iters: expected an integer")

if(TRAINSIM_HAVE_MPI)
  # Before: a usage error on one rank only (MPMD launch) left the other rank waiting in the id
  # broadcast forever. Now the ranks agree first and the failing rank alone reports it.
  add_test(NAME comm_bench_mpi_usage_error_one_rank
    COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np 1 $<TARGET_FILE:comm_bench> --dry-run
            : -np 1 $<TARGET_FILE:comm_bench> --dry-run --bogus)
  set_tests_properties(comm_bench_mpi_usage_error_one_rank PROPERTIES
    PASS_REGULAR_EXPRESSION "comm_bench: usage error: [^ ]+ rank 1 \\(local 1\\): unknown option '--bogus'"
    FAIL_REGULAR_EXPRESSION "rank 0 \\(local 0\\): unknown|dry-run OK" TIMEOUT 60)
  # Before: a rank that never joined the set-up collectives (here: given --help) hung the others.
  add_test(NAME comm_bench_mpi_setup_timeout
    COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np 1 $<TARGET_FILE:comm_bench> --dry-run
            --timeout-s 2 : -np 1 $<TARGET_FILE:comm_bench> --help)
  set_tests_properties(comm_bench_mpi_setup_timeout PROPERTIES
    PASS_REGULAR_EXPRESSION "comm_bench: error: [^ ]+ rank 0 \\(local 0\\): timeout: dry-run collectives \\(id broadcast, all-reduce, barrier\\) did not finish \\(--timeout-s\\)"
    TIMEOUT 60)
  add_test(NAME comm_bench_mpi_dry_run
    COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np 2 $<TARGET_FILE:comm_bench> --dry-run)
  set_tests_properties(comm_bench_mpi_dry_run PROPERTIES
    PASS_REGULAR_EXPRESSION "comm_bench dry-run OK: 2 ranks on 1 node\\(s\\)" TIMEOUT 60)
endif()

# On a GPU machine: every collective's result and timing sanity on all visible GPUs.
if(TRAINSIM_ENABLE_DEVICE_TESTS AND TRAINSIM_HAVE_MPI AND TRAINSIM_HAVE_NCCL)
  set(TRAINSIM_TEST_GPUS 1 CACHE STRING "GPUs the comm_bench device test runs on (one rank each)")
  add_test(NAME comm_bench_device_self_check
    COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root -np ${TRAINSIM_TEST_GPUS} $<TARGET_FILE:comm_bench>
            --self-check --groups single --ops all_reduce --max-bytes 8 --out ${CMAKE_CURRENT_BINARY_DIR}/comm_self_check.json)
  set_tests_properties(comm_bench_device_self_check PROPERTIES PASS_REGULAR_EXPRESSION "self-check: passed"
                       LABELS gpu TIMEOUT 300)
endif()
