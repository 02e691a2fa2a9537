# The subcommands' library calls: `kvplan size` and `kvplan compare` (plan/size.hpp,
# plan/compare.hpp), `kvplan calibrate` (calibrate/replica.hpp) and the one refusal text
# (plan/refusal.hpp), figures derived by hand (needs nlohmann_json to load bundled configs and
# benchmark results).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_plan_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/plan/test_size.cpp
            ${CMAKE_CURRENT_LIST_DIR}/calibrate/test_calibrate_replica.cpp
            ${CMAKE_CURRENT_LIST_DIR}/plan/test_refusal.cpp
    LIBS kvplan::json)
endif()
