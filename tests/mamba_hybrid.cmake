# Hybrid Mamba / attention models imported from Hugging Face config.json (needs nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_hf_config_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/hf_config/test_hf_hybrid.cpp
    LIBS kvplan::json)
endif()
