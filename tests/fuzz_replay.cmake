# Every input a fuzzer once failed on (tests/fuzz/regressions/<name>/) and every seed, run through
# the same harness: a fuzz finding stays fixed. In an ordinary build the harness is linked with
# replay_main.cpp and the normal compiler; in a build that has the libFuzzer binaries
# (KVPLAN_BUILD_FUZZERS, clang) the test runs those instead, which, given files, run each once.
# KVPLAN_FUZZ_REPLAY=OFF leaves the replay programs out of a build without the fuzzers: CI's -O2
# build does, as its sanitizer build replays the same inputs through the instrumented harnesses.
option(KVPLAN_FUZZ_REPLAY "Replay the fuzz seeds and regressions in ctest" ON)
include(${CMAKE_CURRENT_SOURCE_DIR}/fuzz/harnesses.cmake)
if(TARGET kvplan_json AND (KVPLAN_FUZZ_REPLAY OR KVPLAN_BUILD_FUZZERS))
  kvplan_fuzz_harnesses(_harnesses)
  foreach(h IN LISTS _harnesses)
    kvplan_fuzz_seeds(${h} _seeds)
    file(GLOB _regressions CONFIGURE_DEPENDS
         ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/regressions/${h}/*)
    list(FILTER _regressions EXCLUDE REGEX "/README\\.md$")
    if(KVPLAN_BUILD_FUZZERS)
      # The target is defined in tests/fuzz/CMakeLists.txt; ctest resolves its name.
      add_test(NAME "fuzz replay: ${h}" COMMAND kvplan_fuzz_${h} ${_regressions} ${_seeds})
    else()
      add_executable(kvplan_fuzz_replay_${h} fuzz/fuzz_${h}.cpp fuzz/replay_main.cpp)
      target_link_libraries(kvplan_fuzz_replay_${h} PRIVATE kvplan::json kvplan_hf_import)
      kvplan_warnings(kvplan_fuzz_replay_${h})
      add_test(NAME "fuzz replay: ${h}" COMMAND kvplan_fuzz_replay_${h} ${_regressions} ${_seeds})
    endif()
  endforeach()
endif()
