# Capacity planning: the replica budget, engine profiles, the roofline and KV transfers.
kvplan_add_tests(kvplan_planning_tests
  SOURCES budget/test_budget.cpp engine/test_engine.cpp roofline/test_roofline.cpp
          roofline/test_attention_io.cpp engine/test_vllm_backend.cpp test_transfer.cpp
          test_quantity_text.cpp
  LIBS kvplan::json)  # the bundled configs of the models its engine tests read

# static_assert-only: the planning figures hold at compile time.
add_library(kvplan_static_planning_tests OBJECT static/static_planning.cpp)
target_link_libraries(kvplan_static_planning_tests PRIVATE kvplan::kvplan)
kvplan_warnings(kvplan_static_planning_tests)
