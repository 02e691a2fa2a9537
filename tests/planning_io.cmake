# Opt-in planning headers that read files or allocate: traces, fleet sizing, engine-log calibration,
# SVG charts.
kvplan_add_tests(kvplan_core_tests
  SOURCES trace/test_trace.cpp trace/test_trace_reading.cpp trace/test_trace_distributions.cpp
          trace/test_trace_replay.cpp test_fleet.cpp test_svg.cpp calibrate/test_calibrate.cpp
  LIBS kvplan::kvplan)

# Charts: render SVGs in headless Chromium and check the PNG is not blank. Exit 77 when Chromium is
# not installed (kvplan_skip_without_tool). libpng (Debian's libpng-dev) reads the screenshots.
find_package(PNG REQUIRED)
add_executable(svg_render_check render/svg_render_check.cpp)
target_link_libraries(svg_render_check PRIVATE kvplan::kvplan PNG::PNG)
kvplan_warnings(svg_render_check)
add_test(NAME "render: PNG self-test (libpng)" COMMAND svg_render_check --self-test)
add_test(NAME "render: a sample chart in Chromium" COMMAND svg_render_check --sample)
kvplan_skip_without_tool("render: a sample chart in Chromium")
# The layout check Chromium runs can fail: labels over lines and over each other are reported.
add_test(NAME "render: Chromium's layout check finds labels over lines and labels"
  COMMAND svg_render_check ${CMAKE_CURRENT_SOURCE_DIR}/data/overlapping_labels.svg)
set_tests_properties("render: Chromium's layout check finds labels over lines and labels" PROPERTIES
  PASS_REGULAR_EXPRESSION "overlaps \"and one over it\".*crosses a line")
kvplan_skip_without_tool("render: Chromium's layout check finds labels over lines and labels")
