// The config.json import, compiled once per build for every program here that reads a config
// (kvplan_hf_import: the CLI, the test suites, the benchmarks): each program needs it in one
// translation unit (<kvplan/hf_config.hpp>), and at -O2 it costs as much as a suite of its own.
#define KVPLAN_HF_CONFIG_IMPLEMENTATION
#include <kvplan/hf_config.hpp>
