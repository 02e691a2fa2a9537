#pragma once

// The kvplan core, for serving code: exact, constexpr KV-cache sizing of a model on a rank, paging
// and what fits in a budget. Standard library only, and only its light headers (no <string>,
// <array> or <algorithm>), so including it costs a translation unit little; no allocation, no I/O.
// The published models as constexpr values are in kvplan/presets.hpp (as light); planning
// (weights, GPUs, budgets, engines, rooflines) is in kvplan/kvplan.hpp.

#include "capacity.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "kv_bytes.hpp"
#include "layout.hpp"
#include "model.hpp"
#include "paging.hpp"
#include "units.hpp"
#include "version.hpp"
