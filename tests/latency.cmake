# The latency estimate beside the roofline bound, its calibration, and the published measurements
# it is checked against (tests/data/latency_measurements.json).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_latency_tests
    SOURCES roofline/test_estimate.cpp calibrate/test_latency_calibrate.cpp
            roofline/test_latency_table.cpp calibrate/test_bench_result.cpp
    LIBS kvplan::json)
endif()
