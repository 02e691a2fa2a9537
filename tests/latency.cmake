# The latency estimate beside the roofline bound, its calibration, and the published measurements
# it is checked against (tests/data/latency_measurements.json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_latency_tests
    SOURCES roofline/test_estimate.cpp calibrate/test_latency_calibrate.cpp
            roofline/test_latency_table.cpp calibrate/test_bench_result.cpp
    LIBS kvplan::json
    # Refitting the defaults takes 15 s under the sanitizers (below).
    COST 15)
  # At -O1 under the sanitizers, as AddressSanitizer's documentation advises for speed: refitting
  # the defaults takes 30 s CPU there against 173 s at -O0 (clang 14, load average 10 to 20), for
  # 20 s more to compile the suite (31.5 s against 11.6 s). Without the precompiled header, which
  # clang accepts only at the -O level it was built with.
  if(KVPLAN_SANITIZE)
    target_compile_options(kvplan_latency_tests PRIVATE -O1)
    set_target_properties(kvplan_latency_tests PROPERTIES DISABLE_PRECOMPILE_HEADERS ON)
  endif()
  # bench/fit_latency.cpp: fits the defaults on the table, prints them and the errors, and
  # rewrites the tables of docs/accuracy.md (--write-docs).
  # No test runs it (the suite above reruns its procedure, support/latency_fit.hpp): the sanitizer
  # build compiles it, so that CI compiles it once, with clang and warnings as errors; other
  # builds on request (--target kvplan_fit_latency), which keeps 22.6 s CPU at -O2 (g++ 12, load
  # average 10 to 15) out of CI's -O2 build, against 15.7 s in the sanitizer build's.
  if(KVPLAN_SANITIZE)
    set(_kvplan_fit_latency_all "")
  else()
    set(_kvplan_fit_latency_all EXCLUDE_FROM_ALL)
  endif()
  add_executable(kvplan_fit_latency ${_kvplan_fit_latency_all}
                 ${PROJECT_SOURCE_DIR}/bench/fit_latency.cpp)
  target_link_libraries(kvplan_fit_latency PRIVATE kvplan::json kvplan_hf_import)
  target_include_directories(kvplan_fit_latency PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support)
  target_compile_definitions(kvplan_fit_latency PRIVATE
    KVPLAN_CONFIG_DIR="${KVPLAN_CONFIG_DIR}"
    KVPLAN_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data")
  kvplan_warnings(kvplan_fit_latency)
  # bench/burst_replay.cpp: the table's bursts stepped through each engine's scheduler at the
  # estimate's step costs, beside the closed form and the measurement. Built on request, as above.
  add_executable(kvplan_burst_replay ${_kvplan_fit_latency_all}
                 ${PROJECT_SOURCE_DIR}/bench/burst_replay.cpp)
  target_link_libraries(kvplan_burst_replay PRIVATE kvplan::json kvplan_hf_import)
  target_include_directories(kvplan_burst_replay PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support)
  target_compile_definitions(kvplan_burst_replay PRIVATE
    KVPLAN_CONFIG_DIR="${KVPLAN_CONFIG_DIR}"
    KVPLAN_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data")
  kvplan_warnings(kvplan_burst_replay)
endif()
