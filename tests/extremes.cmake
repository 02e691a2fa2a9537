# Extremes and properties over generated configs: exact answers or kvplan::Error at every edge.
kvplan_add_tests(kvplan_core_tests
  SOURCES test_extremes.cpp test_properties.cpp
  LIBS kvplan::kvplan)
