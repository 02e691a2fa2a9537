// static_assert only: if this file compiles, the planning headers give these figures at compile
// time.
#include <kvplan/change.hpp>
#include <kvplan/engine.hpp>
#include <kvplan/plan/deployment.hpp>
#include <kvplan/presets.hpp>
#include <kvplan/roofline.hpp>
#include <kvplan/transfer.hpp>

namespace {
using namespace kvplan;
using namespace kvplan::presets;

constexpr Layout one_gpu{llama_3_8b, {}};

// Llama-3-8B: a vLLM page is 16 x 8 x 256 x 2 B = 64 KiB per layer, 2 MiB per block of 32
// layers: 10 GiB hold 5,120 blocks = 81,920 tokens.
constexpr VllmKvCache vllm =
    vllm_kv_cache(llama_3_8b, KvDtype::bf16, one_gpu, 10 * GiB, {.max_model_len = 8192});
static_assert(vllm.num_blocks == 5120);
static_assert(vllm.kv_cache_tokens == 81'920);
// 5,120 blocks / 512 blocks per 8,192-token request = 10x.
static_assert(vllm.max_concurrency == 10.0);

// SGLang: 1 GiB / 131,072 B per token = 8,192 tokens. TensorRT-LLM: the same tokens in 256
// blocks of 32.
static_assert(sglang_kv_pool(llama_3_8b, KvDtype::bf16, one_gpu, 1 * GiB).max_total_num_tokens ==
              8192);
static_assert(trtllm_kv_cache(llama_3_8b, KvDtype::bf16, one_gpu, 1 * GiB).pools[0].blocks == 256);

// Expected distinct experts: 8 x (1 - (3/4)^2) = 3.5.
static_assert(expected_experts_touched(8, 2, 2) == 3.5);

// An 80 GiB GPU with 3.35 TB/s and 989.4 dense bf16 TFLOP/s.
constexpr GpuSpec gpu{.memory_total = 80 * GiB,
                      .memory_bandwidth = 3.35 * TB_per_s,
                      .dense_flops = {0.0 * TFLOP_per_s, 989.4 * TFLOP_per_s}};
constexpr Replica replica{.model = llama_3_8b, .gpu = gpu};
// 16.06 GB of weights and 8 x 512 MiB of KV fit in 0.92 x 80 GiB.
static_assert(replica_budget(replica, {.context = 4096, .concurrency = 8}).fits);
// One sequence decodes bound by memory: 15.0 GB read per token against 16 GFLOP.
static_assert(decode_bound(replica, 1, 128).bound == Bound::memory);

// The demand's context: the one stated; else the split's 2,000 + 500; else Llama-3-8B's
// max_position_embeddings, 8,192.
static_assert(demand_context(llama_3_8b.config(), 4096, 2000, 500) == 4096);
static_assert(demand_context(llama_3_8b.config(), std::nullopt, 2000, 500) == 2500);
static_assert(demand_context(llama_3_8b.config(), std::nullopt, std::nullopt, std::nullopt) ==
              8192);

// GPUs of a replica by the engine's rules: vLLM's dp 2 engines of tp 4 x pp 2 are 16 GPUs;
// SGLang's dp 2 attention groups live within its 4 x 2.
static_assert(replica_gpus(Engine::vllm, 4, 2, 2) == 16);
static_assert(replica_gpus(Engine::sglang, 4, 2, 2) == 8);
static_assert(replica_gpus(Engine::trtllm, 4, 1, 4) == 4);

// vLLM's --enable-expert-parallel spreads the experts over dp x tp: dp 2 x tp 8 = 16 GPUs, the
// largest degrees (65,536 each) past 32 bits without wrapping.
static_assert(vllm_expert_parallel_size(2, 8) == 16);
static_assert(vllm_expert_parallel_size(65536, 65536) == 4'294'967'296ULL);

// 16 GPUs make 16 / 8 = 2 replicas of 8; 12 GPUs are no whole number of them.
static_assert(replica_count(16, 8) == 2);
static_assert(replica_count(12, 8) == 0);
static_assert(replica_count(8, 0) == 0);

// A request of 2,000 prompt and 500 output tokens is 2,500 tokens long.
static_assert(TokenSplit{.prompt = 2000, .output = 500}.tokens() == 2500);

// From 40 to 30 is (30 - 40) / 40 x 100 = -25 %; from 8 to 10, +25 %; from 0 there is no ratio.
static_assert(*change_percent(40.0, 30.0) == -25.0);
static_assert(*change_percent(8.0, 10.0) == 25.0);
static_assert(!change_percent(0.0, 5.0).has_value());

}  // namespace
