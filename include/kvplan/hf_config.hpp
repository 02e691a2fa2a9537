#pragma once

// Hugging Face config.json -> kvplan::Model. The pieces live in hf_config/: the families
// (model_type and architectures), the layer kinds, the MoE fields, the recurrent state, the
// checkpoint's weight format, and the import itself.

#include "hf_config/checkpoint.hpp"
#include "hf_config/families.hpp"
#include "hf_config/fields.hpp"
#include "hf_config/import.hpp"
#include "hf_config/layer_kinds.hpp"
#include "hf_config/moe.hpp"
#include "hf_config/options.hpp"
#include "hf_config/recurrent.hpp"
