# The checkpoint's weight format and the model's context limit, read from config.json (needs
# nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_checkpoint_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_checkpoint.cpp
    LIBS kvplan::json)
endif()
