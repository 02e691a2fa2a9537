# Capacity planning: the replica budget, engine profiles, the roofline and KV transfers.
kvplan_add_tests(kvplan_planning_tests
  SOURCES test_budget.cpp test_engine.cpp test_roofline.cpp test_transfer.cpp
  LIBS kvplan::kvplan)
