# Every input a fuzzer once failed on (tests/fuzz/regressions/<name>/) and every seed, run through
# the same harness with the ordinary compiler: a fuzz finding stays fixed.
include(${CMAKE_CURRENT_SOURCE_DIR}/fuzz/harnesses.cmake)
if(TARGET kvplan_json)
  kvplan_fuzz_harnesses(_harnesses)
  foreach(h IN LISTS _harnesses)
    add_executable(kvplan_fuzz_replay_${h} fuzz/fuzz_${h}.cpp fuzz/replay_main.cpp)
    target_link_libraries(kvplan_fuzz_replay_${h} PRIVATE kvplan::json)
    kvplan_warnings(kvplan_fuzz_replay_${h})
    kvplan_fuzz_seeds(${h} _seeds)
    add_test(NAME "fuzz replay: ${h}"
      COMMAND kvplan_fuzz_replay_${h} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/regressions/${h} ${_seeds})
  endforeach()
endif()
