# The build names its headers (cmake/kvplan_headers.cmake): every header under include/ must be
# listed there exactly once, so none is left out of a target, its install or its compile-alone check.
add_test(NAME "headers: every header is listed once in cmake/kvplan_headers.cmake"
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/support/check_headers_listed.cmake)
