// The config.json import, compiled once for every test program that reads a config: each
// program needs it in one translation unit (<kvplan/hf_config.hpp>), and at -O2 it costs as much
// as a suite of its own.
#define KVPLAN_HF_CONFIG_IMPLEMENTATION
#include <kvplan/hf_config.hpp>
