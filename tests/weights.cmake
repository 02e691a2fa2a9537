# Parameter counts and weight bytes (core, standard library only).
kvplan_add_tests(kvplan_core_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/weights/test_weights.cpp
  LIBS kvplan::kvplan)
