# The deployments people run: attention data, expert and decode context parallelism evaluated and
# searched, the engines' command lines, and disaggregated prefill and decode pools (needs
# nlohmann_json to load the bundled models and GPUs).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_plan_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/plan/test_deployments.cpp
            ${CMAKE_CURRENT_LIST_DIR}/plan/test_commands.cpp
            ${CMAKE_CURRENT_LIST_DIR}/plan/test_disaggregated.cpp
            ${CMAKE_CURRENT_LIST_DIR}/plan/test_plan_fleet.cpp
    LIBS kvplan::json)
endif()

# The parallel-layouts snippet of docs/library.md is code of the compiled example.
add_test(NAME "docs: the parallel layouts snippet is the example's code"
  COMMAND ${CMAKE_COMMAND}
    -DDOC=${PROJECT_SOURCE_DIR}/docs/library.md
    -DSOURCE=${PROJECT_SOURCE_DIR}/examples/parallel_deployment.cpp
    "-DMARKER=#include <kvplan/plan.hpp>"
    -P ${CMAKE_CURRENT_SOURCE_DIR}/support/check_snippet.cmake)
