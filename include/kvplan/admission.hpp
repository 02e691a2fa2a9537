#pragma once

// Admission in serving code: a KV block pool that accounts as vLLM's engine does (one pool, the
// null block, a table per KV-cache group, sliding windows that stop growing, shared prefix
// blocks), and admit / grow / release on it at scheduler speed. Standard library only (its light
// headers), no allocation, constexpr. The pools vLLM and SGLang build for a model are in
// kvplan/admission/engine_pools.hpp (planning tier: it includes kvplan/engine.hpp).

#include "admission/admission.hpp"
#include "admission/block_pool.hpp"
