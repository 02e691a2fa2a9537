# A replica search for a design review: what would make a miss fit, cost and throughput under
# latency targets, the Pareto front, the price file (needs nlohmann_json to load the bundled
# models, GPUs and prices).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_review_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/plan/test_review.cpp
    LIBS kvplan::json)
endif()
# The same through the built binary.
if(TARGET kvplan_cli)
  kvplan_add_tests(kvplan_cli_review_tests
    SOURCES cli/cli_runner.cpp cli/test_cli_review.cpp
    LIBS kvplan::kvplan nlohmann_json::nlohmann_json)
  target_compile_definitions(kvplan_cli_review_tests PRIVATE
    KVPLAN_EXE="$<TARGET_FILE:kvplan_cli>" KVPLAN_TEST_BINARY_DIR="${CMAKE_CURRENT_BINARY_DIR}"
    KVPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_dependencies(kvplan_cli_review_tests kvplan_cli)
endif()
