# The checkpoint's weight format and the model's context limit, read from config.json (needs
# nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_hf_config_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_checkpoint.cpp
            ${CMAKE_CURRENT_LIST_DIR}/budget/test_encoder_cache.cpp
    LIBS kvplan::json)
endif()
# Quantized checkpoints sized from their own quantization files (tests/data/quantized).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_hf_config_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_quantized.cpp
            ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_checkpoint_kv.cpp
            ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_served_kv.cpp
    LIBS kvplan::json)
endif()
# The same through the built binary: cli/test_cli_quantized.cpp, in kvplan_cli_tests (cli.cmake).
