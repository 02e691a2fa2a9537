# Opt-in planning headers that read files or allocate: traces, fleet sizing, engine-log calibration,
# SVG charts.
kvplan_add_tests(kvplan_planning_io_tests
  SOURCES test_trace.cpp test_fleet.cpp
  LIBS kvplan::kvplan)
