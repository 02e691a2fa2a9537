# The corpus of real vLLM and SGLang start-up logs (tests/data/startup_logs), each reproduced by
# one evaluate() call for its setup (needs nlohmann_json for the configs).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_plan_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_startup_logs.cpp
            ${CMAKE_CURRENT_LIST_DIR}/test_load_dtype.cpp
    LIBS kvplan::json)
endif()
