// The one file of this program that compiles the config.json import (kvplan/hf_config.hpp). It
// stays out of the unity build: the define must come before any other file includes the header.
#define KVPLAN_HF_CONFIG_IMPLEMENTATION
#include <kvplan/hf_config.hpp>
