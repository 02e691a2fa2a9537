#pragma once

// Hugging Face config.json -> kvplan::Model. The pieces live in hf_config/: the families
// (model_type and architectures), the layer kinds, the MoE fields, the recurrent state, the
// checkpoint's weight format, and the import itself.
//
// The import's functions are declared here and compiled in one translation unit of the program:
//
//     // in exactly one .cpp file
//     #define KVPLAN_HF_CONFIG_IMPLEMENTATION
//     #include <kvplan/hf_config.hpp>
//
// Every other file includes <kvplan/hf_config.hpp> without the macro and pays for the declarations
// only (README, "Speed").

#include "hf_config/checkpoint.hpp"
#include "hf_config/import.hpp"
#include "hf_config/options.hpp"

#ifdef KVPLAN_HF_CONFIG_IMPLEMENTATION
#include "hf_config/import_impl.hpp"
#endif
