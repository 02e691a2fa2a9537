# Hugging Face config.json import and the bundled model configs (needs nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_hf_config_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hf_config.cpp
    LIBS kvplan::json)
endif()
