#pragma once

// Roofline lower bounds for decode and prefill on a replica: the cost of a step's parts
// (roofline/step_cost.hpp), the decode bound and its sweeps (roofline/decode.hpp), the prefill
// bound (roofline/prefill.hpp), and prefill with and without fused attention
// (roofline/attention_io.hpp).

#include "roofline/attention_io.hpp"
#include "roofline/decode.hpp"
#include "roofline/prefill.hpp"
#include "roofline/step_cost.hpp"
