# The kvplan command line: every subcommand, every format, every exit code, bad input files. The
# test binary runs the built CLI (its path passed as KVPLAN_EXE) and parses what it prints.
if(TARGET kvplan_cli)
  kvplan_add_tests(kvplan_cli_tests
    SOURCES cli/cli_runner.cpp cli/test_cli_parse.cpp cli/test_cli_commands.cpp cli/test_cli_inputs.cpp
            cli/test_cli_check.cpp cli/test_cli_engine_flags.cpp cli/test_cli_gate_input.cpp
            cli/test_cli_typed_flags.cpp
            # The review search, quantized checkpoints, and trace, fleet, calibrate and --plot,
            # each through the binary (beside their library suites: review.cmake,
            # checkpoint.cmake, cli_planning_io.cmake). One suite for every file that runs the
            # binary: they share one translation unit, so json's parser and kvplan's headers are
            # compiled once, not once per suite (docs/performance.md).
            cli/test_cli_review.cpp cli/test_cli_quantized.cpp cli/test_cli_planning_io.cpp
            ${PROJECT_SOURCE_DIR}/tools/kvplan/parse.cpp
    LIBS kvplan::kvplan nlohmann_json::nlohmann_json
    # Checking every vLLM command line runs the CLI about 300 times, a quarter of them under the
    # sanitizers (test_cli_engine_flags.cpp): about 20 s there.
    COST 20)
  target_include_directories(kvplan_cli_tests PRIVATE ${PROJECT_SOURCE_DIR}/tools/kvplan)
  target_compile_definitions(kvplan_cli_tests PRIVATE KVPLAN_EXE="$<TARGET_FILE:kvplan_cli>"
    KVPLAN_TEST_BINARY_DIR="${CMAKE_CURRENT_BINARY_DIR}"
    KVPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_dependencies(kvplan_cli_tests kvplan_cli)
  # Where strace is found, a test lists every file `kvplan check` opens.
  find_program(KVPLAN_STRACE_EXE strace)
  if(KVPLAN_STRACE_EXE)
    target_compile_definitions(kvplan_cli_tests PRIVATE KVPLAN_STRACE="${KVPLAN_STRACE_EXE}")
  elseif(KVPLAN_TESTS_REQUIRE_TOOLS)
    message(FATAL_ERROR "kvplan: no strace, which a test of kvplan check needs "
                        "(KVPLAN_TESTS_REQUIRE_TOOLS): install strace")
  endif()
endif()
# kvplan check as a gate on files a pull request controls, its output side: policy limits,
# fields escaped per format, empty flag values, lost output. Links the CLI's core for its escapers
# and its list of flags (describe()).
if(TARGET kvplan_cli)
  kvplan_add_tests(kvplan_cli_gate_tests
    SOURCES cli/cli_runner.cpp cli/test_cli_gate_output.cpp
    LIBS kvplan_cli_core nlohmann_json::nlohmann_json)
  target_compile_definitions(kvplan_cli_gate_tests PRIVATE KVPLAN_EXE="$<TARGET_FILE:kvplan_cli>"
    KVPLAN_TEST_BINARY_DIR="${CMAKE_CURRENT_BINARY_DIR}"
    KVPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_dependencies(kvplan_cli_gate_tests kvplan_cli)
  # The example workflow's check step, run in a scratch git repository.
  find_program(KVPLAN_GIT_EXE git)
  find_program(KVPLAN_BASH_EXE bash)
  if(KVPLAN_GIT_EXE AND KVPLAN_BASH_EXE)
    add_test(NAME "ci: the example workflow checks every changed config under the base policy"
      COMMAND ${KVPLAN_BASH_EXE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/ci_workflow.sh
              $<TARGET_FILE:kvplan_cli> ${PROJECT_SOURCE_DIR}
              ${CMAKE_CURRENT_BINARY_DIR}/ci_workflow)
  elseif(KVPLAN_TESTS_REQUIRE_TOOLS)
    message(FATAL_ERROR "kvplan: no git or bash, which the example workflow's test needs "
                        "(KVPLAN_TESTS_REQUIRE_TOOLS): install git and bash")
  endif()
endif()
if(TARGET kvplan::format)
  kvplan_add_tests(kvplan_format_tests SOURCES test_format.cpp LIBS kvplan::format)
endif()
# One answer per replica through the binary, and beside the library in one call
# (examples/fit_json.cpp), where the examples are built (not under the sanitizers).
if(TARGET kvplan_cli AND TARGET example_fit_json)
  target_sources(kvplan_cli_tests PRIVATE cli/test_cli_answers.cpp)
  target_compile_definitions(kvplan_cli_tests PRIVATE
    KVPLAN_FIT_EXAMPLE="$<TARGET_FILE:example_fit_json>")
  add_dependencies(kvplan_cli_tests example_fit_json)
endif()
