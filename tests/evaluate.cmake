# One answer per replica: evaluate() on bundled models and GPUs (needs nlohmann_json to load them).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_plan_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/plan/test_evaluate.cpp
            ${CMAKE_CURRENT_LIST_DIR}/plan/test_curves.cpp
    LIBS kvplan::json)
endif()
