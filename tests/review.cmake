# A replica search for a design review: what would make a miss fit, cost and throughput under
# latency targets, the Pareto front, the price file (needs nlohmann_json to load the bundled
# models, GPUs and prices).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_review_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_review.cpp
    LIBS kvplan::json)
endif()
