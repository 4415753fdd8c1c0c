# conveyor_add_test(NAME SOURCES... [LABELS l...]): a GoogleTest program, registered with CTest.
# Tests labelled "concurrency" also run under ThreadSanitizer in CI; "gpu" tests skip without a device.
function(conveyor_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE conveyor::conveyor conveyor_test_support GTest::gtest GTest::gtest_main)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
endfunction()

# conveyor_add_benchmark(NAME SOURCES...): a Google Benchmark program (--benchmark_format=json).
function(conveyor_add_benchmark name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE conveyor::conveyor benchmark::benchmark)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
endfunction()
