# The kvplan command line: every subcommand, every format, every exit code, bad input files. The
# test binary runs the built CLI (its path passed as KVPLAN_EXE) and parses what it prints.
if(TARGET kvplan_cli)
  kvplan_add_tests(kvplan_cli_tests
    SOURCES cli/cli_runner.cpp cli/test_cli_parse.cpp cli/test_cli_commands.cpp cli/test_cli_inputs.cpp
            cli/test_cli_check.cpp cli/test_cli_gate_input.cpp
            ${PROJECT_SOURCE_DIR}/tools/kvplan/parse.cpp
    LIBS kvplan::kvplan nlohmann_json::nlohmann_json)
  target_include_directories(kvplan_cli_tests PRIVATE ${PROJECT_SOURCE_DIR}/tools/kvplan)
  target_compile_definitions(kvplan_cli_tests PRIVATE KVPLAN_EXE="$<TARGET_FILE:kvplan_cli>"
    KVPLAN_TEST_BINARY_DIR="${CMAKE_CURRENT_BINARY_DIR}"
    KVPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_dependencies(kvplan_cli_tests kvplan_cli)
  # Where strace is found, a test lists every file `kvplan check` opens.
  find_program(KVPLAN_STRACE_EXE strace)
  if(KVPLAN_STRACE_EXE)
    target_compile_definitions(kvplan_cli_tests PRIVATE KVPLAN_STRACE="${KVPLAN_STRACE_EXE}")
  endif()
endif()
if(TARGET kvplan::format)
  kvplan_add_tests(kvplan_format_tests SOURCES test_format.cpp LIBS kvplan::format)
endif()
# One answer per replica through the binary, and beside the library in one call
# (examples/fit_json.cpp).
if(TARGET kvplan_cli AND TARGET example_fit_json)
  kvplan_add_tests(kvplan_cli_answer_tests
    SOURCES cli/cli_runner.cpp cli/test_cli_answers.cpp
    LIBS kvplan::kvplan nlohmann_json::nlohmann_json)
  target_compile_definitions(kvplan_cli_answer_tests PRIVATE KVPLAN_EXE="$<TARGET_FILE:kvplan_cli>"
    KVPLAN_TEST_BINARY_DIR="${CMAKE_CURRENT_BINARY_DIR}"
    KVPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    KVPLAN_FIT_EXAMPLE="$<TARGET_FILE:example_fit_json>")
  add_dependencies(kvplan_cli_answer_tests kvplan_cli example_fit_json)
endif()
