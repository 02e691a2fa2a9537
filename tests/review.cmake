# A replica search for a design review: what would make a miss fit, cost and throughput under
# latency targets, the Pareto front, the price file (needs nlohmann_json to load the bundled
# models, GPUs and prices).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_plan_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/plan/test_review.cpp
    LIBS kvplan::json)
endif()
# The same through the built binary: cli/test_cli_review.cpp, in kvplan_cli_tests (cli.cmake).
