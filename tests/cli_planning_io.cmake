# kvplan trace, fleet, calibrate and --plot through the built binary (cli/test_cli_planning_io.cpp,
# in kvplan_cli_tests: cli.cmake); the charts it writes are rendered in headless Chromium (exit 77
# when Chromium is not installed: kvplan_skip_without_tool).
if(TARGET kvplan_cli)

  set(_plot_dir "${CMAKE_CURRENT_BINARY_DIR}/plots")
  file(MAKE_DIRECTORY ${_plot_dir})
  # The charts of docs/cli.md, written again by the CLI and compared with docs/images (its command
  # lines live in render/charts.cmake); each is then rendered below.
  add_test(NAME "render: the charts of docs/cli.md are what the CLI writes"
    COMMAND ${CMAKE_COMMAND} -DKVPLAN_EXE=$<TARGET_FILE:kvplan_cli> -DOUT_DIR=${_plot_dir}/docs
            -P ${CMAKE_CURRENT_SOURCE_DIR}/render/charts.cmake)
  set_tests_properties("render: the charts of docs/cli.md are what the CLI writes" PROPERTIES
    FIXTURES_SETUP kvplan_readme_svgs)
  foreach(_chart roofline compare fit)
    add_test(NAME "render: the ${_chart} chart of docs/cli.md in Chromium"
      COMMAND svg_render_check ${_plot_dir}/docs/${_chart}.svg)
    set_tests_properties("render: the ${_chart} chart of docs/cli.md in Chromium" PROPERTIES
      FIXTURES_REQUIRED kvplan_readme_svgs)
    kvplan_skip_without_tool("render: the ${_chart} chart of docs/cli.md in Chromium")
  endforeach()
  add_test(NAME "render: kvplan roofline --plot writes a chart"
    COMMAND $<TARGET_FILE:kvplan_cli> roofline --model llama-3-70b --gpu h100-sxm --tp 4
            --context 8192 --batch 64 --plot ${_plot_dir}/roofline.svg)
  set_tests_properties("render: kvplan roofline --plot writes a chart" PROPERTIES
    FIXTURES_SETUP kvplan_roofline_svg)
  add_test(NAME "render: kvplan roofline --plot in Chromium"
    COMMAND svg_render_check ${_plot_dir}/roofline.svg)
  set_tests_properties("render: kvplan roofline --plot in Chromium" PROPERTIES
    FIXTURES_REQUIRED kvplan_roofline_svg)
  kvplan_skip_without_tool("render: kvplan roofline --plot in Chromium")
  add_test(NAME "render: kvplan fit --plot writes a chart"
    COMMAND $<TARGET_FILE:kvplan_cli> fit --model llama-3-70b --gpu h100-sxm --tp 4
            --context 32k --concurrency 40 --plot ${_plot_dir}/fit.svg)
  set_tests_properties("render: kvplan fit --plot writes a chart" PROPERTIES
    FIXTURES_SETUP kvplan_fit_svg)
  add_test(NAME "render: kvplan fit --plot in Chromium"
    COMMAND svg_render_check ${_plot_dir}/fit.svg)
  set_tests_properties("render: kvplan fit --plot in Chromium" PROPERTIES
    FIXTURES_REQUIRED kvplan_fit_svg)
  kvplan_skip_without_tool("render: kvplan fit --plot in Chromium")
endif()
