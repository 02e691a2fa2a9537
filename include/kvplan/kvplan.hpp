#pragma once

// The kvplan core: exact, constexpr KV-cache arithmetic and capacity planning. Standard library
// only; no allocation, no I/O. JSON import (kvplan/hf_config.hpp) and fmt support
// (kvplan/format.hpp) are opt-in headers.

#include "version.hpp"
#include "error.hpp"
#include "units.hpp"
#include "dtype.hpp"
#include "model.hpp"
#include "layout.hpp"
#include "kv_bytes.hpp"
#include "paging.hpp"
#include "capacity.hpp"
#include "weights.hpp"
#include "gpu.hpp"
#include "budget.hpp"
#include "engine.hpp"
#include "roofline.hpp"
#include "transfer.hpp"
#include "presets.hpp"
