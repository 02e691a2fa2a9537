#pragma once

// Everything in kvplan that needs only the standard library: the core (kvplan/core.hpp) plus
// planning: weights, GPU specs, memory budgets, engine profiles, decode rooflines, transfers and
// the bundled model presets. JSON import (kvplan/hf_config.hpp) and fmt support (kvplan/format.hpp)
// are opt-in headers.

#include "budget.hpp"
#include "core.hpp"
#include "engine.hpp"
#include "gpu.hpp"
#include "plain_decoder.hpp"
#include "plan.hpp"
#include "presets.hpp"
#include "quantity_text.hpp"
#include "roofline.hpp"
#include "transfer.hpp"
#include "weights.hpp"
