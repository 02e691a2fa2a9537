# Untrusted input: the size limit of every JSON file, strict policies, confined policy paths, the
# positions of values in a JSON text, and the nearest-name suggestions of every reader (needs
# nlohmann_json). And the policies judged.
add_library(kvplan_static_nearest_tests OBJECT static/static_nearest.cpp)
target_link_libraries(kvplan_static_nearest_tests PRIVATE kvplan::kvplan)
kvplan_warnings(kvplan_static_nearest_tests)
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_input_checks_tests
    SOURCES detail/test_nearest.cpp test_json.cpp policy/test_policy.cpp test_json_position.cpp
    LIBS kvplan::json)
  # A policy judged on bundled models and GPUs (plan/check.hpp), figures derived by hand.
  kvplan_add_tests(kvplan_plan_tests
    SOURCES plan/test_check.cpp policy/test_attribution.cpp
    LIBS kvplan::json)
endif()
