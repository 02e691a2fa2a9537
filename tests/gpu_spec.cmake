# GPU spec files and their registry (needs nlohmann_json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_planning_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_spec.cpp
    LIBS kvplan::json)
endif()
