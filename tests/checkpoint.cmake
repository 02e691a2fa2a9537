# The checkpoint's weight format and the model's context limit, read from config.json (needs
# nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_checkpoint_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_checkpoint.cpp
            ${CMAKE_CURRENT_LIST_DIR}/budget/test_encoder_cache.cpp
    LIBS kvplan::json)
endif()
# Quantized checkpoints sized from their own quantization files (tests/data/quantized).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_quantized_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_quantized.cpp
    LIBS kvplan::json)
endif()
# The same through the built binary.
if(TARGET kvplan_cli)
  kvplan_add_tests(kvplan_cli_quantized_tests
    SOURCES cli/cli_runner.cpp cli/test_cli_quantized.cpp
    LIBS kvplan::kvplan nlohmann_json::nlohmann_json)
  target_compile_definitions(kvplan_cli_quantized_tests PRIVATE
    KVPLAN_EXE="$<TARGET_FILE:kvplan_cli>"
    KVPLAN_TEST_BINARY_DIR="${CMAKE_CURRENT_BINARY_DIR}"
    KVPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_dependencies(kvplan_cli_quantized_tests kvplan_cli)
endif()
