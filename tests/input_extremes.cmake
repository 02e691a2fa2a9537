# Input files at the edges of what parses (needs nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_plan_tests
    SOURCES test_input_extremes.cpp
    LIBS kvplan::json)
endif()
