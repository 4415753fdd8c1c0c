# conveyor_programs_at_O0_under_asan(): in the ASan build, the programs of the calling folder at -O0 (the
# later -O wins over the build's). There they only serve the tests that run them, their work is done in the
# library (-O1 there), and instrumenting CLI11's templates at -O1 made them the slowest files of the ASan
# build: list_devices.cpp took 33.5 s at -O0 against 59.1 s at -O1 (2026-11-26, another build running
# beside it). The TSan build keeps its levels (see the sanitizers in the top CMakeLists.txt).
function(conveyor_programs_at_O0_under_asan)
  if(CONVEYOR_SANITIZE)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-O0>)
  endif()
endfunction()

# conveyor_add_area_folders([EXCEPT NAME...]): every sub-folder of the calling folder that has a
# CMakeLists.txt, so that an area adds its own programs without a list to keep in its parent.
function(conveyor_add_area_folders)
  cmake_parse_arguments(ARG "" "" "EXCEPT" ${ARGN})
  file(GLOB areas LIST_DIRECTORIES true ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(area ${areas})
    get_filename_component(name ${area} NAME)
    if(IS_DIRECTORY ${area} AND EXISTS ${area}/CMakeLists.txt AND NOT name IN_LIST ARG_EXCEPT)
      add_subdirectory(${area})
    endif()
  endforeach()
endfunction()

# conveyor_use_test_images(TARGET): the tests' synthetic JPEG maker (tests/support/test_images.cpp) for a
# benchmark: the tests' support library when the tests are built, else that one file compiled in.
function(conveyor_use_test_images name)
  if(TARGET conveyor_test_support)
    target_link_libraries(${name} PRIVATE conveyor_test_support)
  else()
    target_sources(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support/test_images.cpp)
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    target_link_libraries(${name} PRIVATE libjpeg-turbo::turbojpeg)
  endif()
endfunction()

# conveyor_use_test_pch(TARGET): the test programs' precompiled header (tests/CMakeLists.txt), when there.
function(conveyor_use_test_pch name)
  if(TARGET conveyor_test_pch)
    target_precompile_headers(${name} REUSE_FROM conveyor_test_pch)
  endif()
endfunction()

# conveyor_add_test(NAME SOURCES... [LABELS l...] [CONCURRENCY regex...]): a GoogleTest program, one CTest
# test per GoogleTest case. Cases whose name matches a CONCURRENCY regular expression ("." for all) start
# threads of their own: they are labelled "concurrency" too, and CI runs them under ThreadSanitizer (the
# program joins conveyor_concurrency_programs, the target the TSan build builds). "gpu" tests skip without a
# device.
function(conveyor_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LABELS;CONCURRENCY" ${ARGN})
  add_executable(${name} ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE conveyor::conveyor conveyor_test_support GTest::gtest GTest::gtest_main)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  conveyor_use_test_pch(${name})
  # Built from scratch (CONVEYOR_UNITY_BUILD, CI's three builds), the program's test files in unity batches:
  # GoogleTest's and conveyor's headers are parsed once a batch instead of once a file
  # (bench/results/2026-11-29-cpu-2core-ci-test-unity/). A file whose file-local helpers share a name with
  # another file's of the program is compiled alone (SKIP_UNITY_BUILD_INCLUSION, in its folder's CMakeLists).
  if(CONVEYOR_UNITY_BUILD)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  # A case that calls GTEST_SKIP (a GPU test without a GPU) prints "[  SKIPPED ]": CTest then counts it as
  # skipped, not passed (scripts/ctest_summary.py prints the counts). Set from a script ctest reads after
  # the discovered tests, as the labels below are.
  set(skips "${CMAKE_CURRENT_BINARY_DIR}/${name}_skips.cmake")
  file(WRITE "${skips}"
       "if(DEFINED ${name}_TESTS)\n"
       "  set_tests_properties(\${${name}_TESTS} PROPERTIES SKIP_REGULAR_EXPRESSION \"\\\\[  SKIPPED \\\\]\")\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${skips}")
  # Not gtest_discover_tests' PROPERTIES: it passes name-value pairs through a list, so a second label
  # became a property name and "ctest -L concurrency" found no test. ctest reads this script after the
  # discovered tests (TEST_INCLUDE_FILES are read in order) and labels them.
  if(ARG_LABELS OR ARG_CONCURRENCY)
    set(with_concurrency ${ARG_LABELS} concurrency)
    list(JOIN ARG_CONCURRENCY "|" pattern)
    if(NOT ARG_CONCURRENCY)
      set(pattern "^$")  # no test name is empty
    else()
      set_property(GLOBAL APPEND PROPERTY CONVEYOR_CONCURRENCY_PROGRAMS ${name})
    endif()
    # A ctest script knows set_tests_properties only (not set_property(TEST)), which replaces the labels:
    # each test gets its whole list at once.
    set(script "${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake")
    file(WRITE "${script}"
         "if(DEFINED ${name}_TESTS)\n"
         "  set(_plain)\n"
         "  set(_concurrent)\n"
         "  foreach(_test IN LISTS ${name}_TESTS)\n"
         "    if(_test MATCHES \"${pattern}\")\n"
         "      list(APPEND _concurrent \"\${_test}\")\n"
         "    else()\n"
         "      list(APPEND _plain \"\${_test}\")\n"
         "    endif()\n"
         "  endforeach()\n"
         "  if(_plain)\n"
         "    set_tests_properties(\${_plain} PROPERTIES LABELS \"${ARG_LABELS}\")\n"
         "  endif()\n"
         "  if(_concurrent)\n"
         "    set_tests_properties(\${_concurrent} PROPERTIES LABELS \"${with_concurrency}\")\n"
         "  endif()\n"
         "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
  endif()
endfunction()

# conveyor_add_benchmark(NAME SOURCES...): a Google Benchmark program (--benchmark_format=json).
function(conveyor_add_benchmark name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE conveyor::conveyor benchmark::benchmark)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
endfunction()

# conveyor_record_commit(TARGET): defines CONVEYOR_GIT_COMMIT for TARGET as the commit CMake was
# configured at, for the JSON a benchmark writes (re-run cmake to refresh it); "unknown" outside git. The
# benchmark reads it through bench/record_commit.h, where CONVEYOR_COMMIT in the environment overrides it.
function(conveyor_record_commit target)
  execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT commit)
    set(commit unknown)
  endif()
  target_compile_definitions(${target} PRIVATE CONVEYOR_GIT_COMMIT="${commit}")
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})  # "bench/record_commit.h"
endfunction()

# conveyor_add_unprivileged_test(NAME PROGRAM TESTS Suite.Case... [LABELS l...]): runs those cases of the
# GoogleTest program PROGRAM as an unprivileged user (tests/support/run_unprivileged.sh drops root's
# privileges, or runs the program directly for anyone else), so that tests of permission-denied paths
# execute instead of skipping when ctest runs as root, as CI does. Labelled "permissions" too.
function(conveyor_add_unprivileged_test name program)
  cmake_parse_arguments(ARG "" "" "TESTS;LABELS" ${ARGN})
  list(JOIN ARG_TESTS ":" filter)
  add_test(NAME ${name}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/support/run_unprivileged.sh $<TARGET_FILE:${program}>
                   --gtest_filter=${filter})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS};permissions" TIMEOUT 120)
endfunction()
