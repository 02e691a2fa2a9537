# Hugging Face config.json import and the bundled model configs (needs nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_hf_config_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hf_config.cpp
    LIBS kvplan::json)
endif()
# The families of 2025-2026: Llama-4, Kimi-K2, DeepSeek-V3.2, GLM-4.5, vision-language models,
# Gemma-3n, Nemotron-H, Mamba; plain decoders and refusals (needs nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_hf_families_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hf_families.cpp
    LIBS kvplan::json)
endif()
