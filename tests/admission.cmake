# Admission on a block pool: vLLM's accounting step by step, against a literal reference and a
# request trace.
kvplan_add_tests(kvplan_core_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/admission/test_admission.cpp
  LIBS kvplan::kvplan)

# static_assert-only: admission figures hold at compile time.
add_library(kvplan_static_admission_tests OBJECT ${CMAKE_CURRENT_LIST_DIR}/static/static_admission.cpp)
target_link_libraries(kvplan_static_admission_tests PRIVATE kvplan::kvplan)
kvplan_warnings(kvplan_static_admission_tests)

# The admission snippet of docs/library.md is code of the compiled example.
add_test(NAME "docs: the admission snippet is the example's code"
  COMMAND ${CMAKE_COMMAND}
    -DDOC=${PROJECT_SOURCE_DIR}/docs/library.md
    -DSOURCE=${PROJECT_SOURCE_DIR}/examples/admission_controller.cpp
    "-DMARKER=#include <kvplan/admission.hpp>"
    -P ${CMAKE_CURRENT_SOURCE_DIR}/support/check_snippet.cmake)
