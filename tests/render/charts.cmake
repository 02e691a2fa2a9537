# The charts of docs/cli.md (docs/images/*.svg), each written by the CLI. Run as a script:
#
#   cmake -DKVPLAN_EXE=<kvplan> -DOUT_DIR=<dir> -P tests/render/charts.cmake   write them to OUT_DIR
#                                           and fail when one differs from docs/images (a test)
#   cmake -DKVPLAN_EXE=<kvplan> -DUPDATE=ON -P tests/render/charts.cmake       regenerate docs/images
cmake_minimum_required(VERSION 3.20)
get_filename_component(_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
set(_images "${_root}/docs/images")
if(UPDATE)
  set(OUT_DIR "${_images}")
endif()
file(MAKE_DIRECTORY "${OUT_DIR}")

# name, then the command line that writes it (--plot appended).
set(_charts roofline compare fit)
set(_roofline roofline --model llama-3.1-70b --gpu h100-sxm --tp 4 --context 1024 --batch 64
    --max-num-seqs 2048)
set(_compare compare --model llama-3-70b --gpu h100-sxm,h200-sxm,a100-sxm4-80gb --kv-dtype bf16,fp8
    --tp 4 --context 8192)
set(_fit fit --model llama-3-70b --gpu h100-sxm --tp 4 --context 32k --concurrency 40)

set(_stale "")
foreach(_name IN LISTS _charts)
  execute_process(COMMAND "${KVPLAN_EXE}" ${_${_name}} --plot "${OUT_DIR}/${_name}.svg"
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "kvplan ${_${_name}}: exit ${_rc}: ${_err}")
  endif()
  if(NOT UPDATE)
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${OUT_DIR}/${_name}.svg"
                            "${_images}/${_name}.svg" RESULT_VARIABLE _same)
    if(NOT _same EQUAL 0)
      list(APPEND _stale "docs/images/${_name}.svg")
    endif()
  endif()
endforeach()
if(_stale)
  message(FATAL_ERROR "out of date: ${_stale}; regenerate with cmake -DKVPLAN_EXE=<kvplan> "
                      "-DUPDATE=ON -P tests/render/charts.cmake")
endif()
