# Untrusted input: the size limit of every JSON file, strict policies, confined policy paths, and
# the nearest-name suggestions of every reader (needs nlohmann_json).
add_library(kvplan_static_nearest_tests OBJECT static/static_nearest.cpp)
target_link_libraries(kvplan_static_nearest_tests PRIVATE kvplan::kvplan)
kvplan_warnings(kvplan_static_nearest_tests)
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_input_checks_tests
    SOURCES test_nearest.cpp test_json.cpp test_policy.cpp
    LIBS kvplan::json)
endif()
