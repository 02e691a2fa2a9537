#pragma once

// Engine profiles: how vLLM, SGLang and TensorRT-LLM turn GPU memory into a KV cache, beside an
// "ideal" profile. One header per engine under engine/, and the report that puts them in the same
// terms. Each rule cites the engine source file it follows.

#include "engine/allreduce_fusion.hpp"
#include "engine/checkpoint_kv.hpp"
#include "engine/host_cache.hpp"
#include "engine/ideal.hpp"
#include "engine/kind.hpp"
#include "engine/kv_dtype_names.hpp"
#include "engine/load_dtype.hpp"
#include "engine/nccl.hpp"
#include "engine/parallel.hpp"
#include "engine/release.hpp"
#include "engine/report.hpp"
#include "engine/served_kv.hpp"
#include "engine/sglang.hpp"
#include "engine/trtllm.hpp"
#include "engine/vllm.hpp"
#include "engine/vllm_backend.hpp"
