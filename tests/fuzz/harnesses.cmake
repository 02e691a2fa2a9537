# The fuzz harnesses: for each, the header it exercises and its seed inputs (globs under the
# source tree). Shared by the libFuzzer build (tests/fuzz/CMakeLists.txt) and the replay tests
# (tests/fuzz_replay.cmake). A harness whose header is not in the tree is skipped.
set(KVPLAN_FUZZ_HARNESSES hf_config gpu_spec policy trace config_diff)
set(KVPLAN_FUZZ_HEADER_hf_config include/kvplan/hf_config.hpp)
set(KVPLAN_FUZZ_SEEDS_hf_config configs/models/*.json)
set(KVPLAN_FUZZ_HEADER_gpu_spec include/kvplan/gpu_spec.hpp)
set(KVPLAN_FUZZ_SEEDS_gpu_spec configs/gpus/*.json tests/data/gpu_specs/*.json)
set(KVPLAN_FUZZ_HEADER_policy include/kvplan/policy/read.hpp)
# Further headers whose string literals join the dictionary: the kinds and figures a policy names.
set(KVPLAN_FUZZ_DICTIONARY_policy include/kvplan/policy/requirements.hpp)
set(KVPLAN_FUZZ_SEEDS_policy examples/ci/*.json tests/data/cli/policy*.json tests/fuzz/seeds/policy/*.json)
set(KVPLAN_FUZZ_HEADER_trace include/kvplan/trace/reading.hpp)
set(KVPLAN_FUZZ_SEEDS_trace tests/data/traces/*.csv tests/data/traces/*.jsonl)
# Two config.json revisions, as check --baseline and diff compare them.
set(KVPLAN_FUZZ_HEADER_config_diff include/kvplan/json.hpp)
set(KVPLAN_FUZZ_DICTIONARY_config_diff include/kvplan/hf_config/import_impl.hpp)
set(KVPLAN_FUZZ_SEEDS_config_diff configs/models/*.json tests/fuzz/seeds/config_diff/*)

# kvplan_fuzz_harnesses(<out-var>): the harnesses whose header and source exist.
function(kvplan_fuzz_harnesses out)
  set(found "")
  foreach(h IN LISTS KVPLAN_FUZZ_HARNESSES)
    if(EXISTS "${PROJECT_SOURCE_DIR}/${KVPLAN_FUZZ_HEADER_${h}}"
       AND EXISTS "${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_${h}.cpp")
      list(APPEND found ${h})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# kvplan_fuzz_seeds(<harness> <out-var>): the seed files of a harness.
function(kvplan_fuzz_seeds h out)
  set(globs "")
  foreach(g IN LISTS KVPLAN_FUZZ_SEEDS_${h})
    list(APPEND globs "${PROJECT_SOURCE_DIR}/${g}")
  endforeach()
  file(GLOB files CONFIGURE_DEPENDS ${globs})
  set(${out} ${files} PARENT_SCOPE)
endfunction()
