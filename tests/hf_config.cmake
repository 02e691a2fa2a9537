# Hugging Face config.json import and the bundled model configs (needs nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_hf_config_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_hf_config.cpp
    LIBS kvplan::json)
endif()
# The families of 2025-2026 (and of late 2026, hf_config/test_hf_families_2026.cpp): Llama-4,
# Kimi-K2, DeepSeek-V3.2, GLM-4.5, vision-language models,
# Gemma-3n, Nemotron-H, Mamba; plain decoders and refusals (needs nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_hf_config_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_hf_families.cpp
            ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_hf_families_2026.cpp
    LIBS kvplan::json)
  # Its own translation unit: its helpers and hf_config/test_hf_families.cpp's stay apart.
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/hf_config/test_hf_families_2026.cpp
    PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endif()
