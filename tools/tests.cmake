# calib_crosscheck tests, appended to trainsim_tests by tests/CMakeLists.txt.
list(APPEND TRAINSIM_TEST_SOURCES ${PROJECT_SOURCE_DIR}/tests/tools/crosscheck_test.cpp)
list(APPEND TRAINSIM_TEST_LIBS crosscheck_host)

# The recorded (synthetic) example of tests/data/crosscheck: one kernel outside ±5 %.
set(_xc ${PROJECT_SOURCE_DIR}/tests/data/crosscheck)
add_test(NAME crosscheck_kernels_example
         COMMAND calib_crosscheck ${_xc}/ours_kernels.json ${_xc}/published_kernels.json)
set_tests_properties(crosscheck_kernels_example PROPERTIES
  PASS_REGULAR_EXPRESSION "acceptance \\(±5 %\\): FAIL, 6 of 7 within")
add_test(NAME crosscheck_comm_example
         COMMAND calib_crosscheck ${_xc}/ours_comm.json ${_xc}/published_comm.json --min-bytes 1048576 --check)
set_tests_properties(crosscheck_comm_example PROPERTIES
  PASS_REGULAR_EXPRESSION "acceptance \\(±5 %\\): PASS, 14 of 14 within")
add_test(NAME crosscheck_mixed_formats
         COMMAND calib_crosscheck ${_xc}/ours_kernels.json ${_xc}/published_comm.json)
set_tests_properties(crosscheck_mixed_formats PROPERTIES
  PASS_REGULAR_EXPRESSION "published_comm.json: is a comm file but [^\n]*ours_kernels.json is a kernels file")
