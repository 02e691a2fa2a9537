#pragma once

// The KV dtype an engine gives a checkpoint when its KV dtype is left to "auto" (every engine's
// default): the model's 16-bit dtype, unless the engine follows the KV cache the checkpoint's
// quantization names (CheckpointFormat::kv_cache, read by hf_config/checkpoint.hpp).
//
// vLLM (main): EngineArgs.create_engine_config resolves --kv-cache-dtype auto with
//   resolve_kv_cache_dtype_string (vllm/utils/torch_utils.py), which maps a ModelOpt section's
//   kv_cache_scheme or kv_cache_quant_algo through MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP (FP8 to
//   fp8_e4m3, NVFP4 to nvfp4). It came with PR #30785 (opened 2025-12-16, after the v0.13 branch;
//   counted here from v0.14, the first line tagged after it); nvfp4 joined the map with vLLM's
//   NVFP4 KV cache (v0.20, engine/kv_dtype_names.hpp). A compressed-tensors kv_cache_scheme turns
//   the cache fp8 in the Attention layer itself (Attention.__init__,
//   vllm/model_executor/layers/attention/attention.py), in every line kvplan knows. Through v0.21
//   it did so whatever --kv-cache-dtype said ("llm-compressor models need to set cache_dtype to
//   fp8": an explicit bfloat16 became fp8 too); PR #42782 ("Respect explicit --kv-cache-dtype over
//   checkpoint kv_cache_scheme", merged 2026-05-15, the day v0.21.0 was tagged; counted from v0.22,
//   the first line tagged after it) turns only "auto" fp8 (vllm_given_kv_dtype).
// SGLang (main): ModelRunner.configure_kv_cache_dtype
//   (python/sglang/srt/model_executor/model_runner.py) makes "auto" fp8_e4m3 when the quant
//   config's kv_cache_quant_algo is "FP8"; ModelOpt's configs set it from kv_cache_quant_algo, or
//   from a config.json's kv_cache_scheme {num_bits 8, type float}
//   (python/sglang/srt/layers/quantization/modelopt_quant.py, from_config). NVFP4 names and
//   compressed-tensors' scheme leave the model's dtype.
// TensorRT-LLM (main): validate_and_set_kv_cache_quant
//   (tensorrt_llm/_torch/pyexecutor/model_loader.py) keeps the checkpoint's kv_cache_quant_algo
//   (FP8 or NVFP4, from hf_quant_config.json) when KvCacheConfig.dtype is "auto". A config.json
//   kv_cache_scheme is not counted (not seen read there).
// The ideal profile stores what it is told: bf16 unless --kv-dtype says otherwise.

#include "../dtype.hpp"
#include "../model.hpp"
#include "../weight_format.hpp"
#include "kind.hpp"
#include "release.hpp"

namespace kvplan {

/// The first vLLM line whose "auto" follows a ModelOpt checkpoint's KV cache (PR #30785).
inline constexpr EngineVersion vllm_checkpoint_kv_since{0, 14};
/// The first vLLM line that maps a ModelOpt NVFP4 KV cache (its NVFP4 KV cache, PR #40177).
inline constexpr EngineVersion vllm_checkpoint_nvfp4_kv_since{0, 20};

/// The first vLLM line where a --kv-cache-dtype given wins over a compressed-tensors
/// kv_cache_scheme (PR #42782).
inline constexpr EngineVersion vllm_given_kv_wins_since{0, 22};

/// The KV dtype vLLM release line `v` stores for checkpoint `c` when --kv-cache-dtype names
/// `given`: through v0.21 a compressed-tensors kv_cache_scheme makes every attention layer's
/// cache fp8 (e4m3, vLLM's "fp8") whatever was given; from v0.22 the dtype given stands.
[[nodiscard]] constexpr KvDtype vllm_given_kv_dtype(const CheckpointFormat& c, KvDtype given,
                                                    EngineVersion v) noexcept {
    if (c.kv_source == CheckpointKvSource::compressed_tensors && c.kv_cache &&
        v < vllm_given_kv_wins_since)
        return *c.kv_cache;
    return given;
}

/// The KV dtype engine `e` (vLLM at release line `vllm_release`) stores for checkpoint `c` when
/// its KV dtype is left to "auto": the checkpoint's own where the engine follows it, else bf16.
[[nodiscard]] constexpr KvDtype engine_default_kv_dtype(
    const CheckpointFormat& c, Engine e,
    EngineVersion vllm_release = vllm_newest_release) noexcept {
    if (!c.kv_cache) return KvDtype::bf16;
    const KvDtype kv = *c.kv_cache;
    const bool modelopt = c.kv_source == CheckpointKvSource::modelopt_algo ||
                          c.kv_source == CheckpointKvSource::modelopt_scheme;
    switch (e) {
        case Engine::vllm:
            if (c.kv_source == CheckpointKvSource::compressed_tensors) return kv;
            if (!modelopt || vllm_release < vllm_checkpoint_kv_since) return KvDtype::bf16;
            if (kv == KvDtype::nvfp4 && vllm_release < vllm_checkpoint_nvfp4_kv_since)
                return KvDtype::bf16;
            return kv;
        case Engine::sglang:
            return modelopt && kv == KvDtype::fp8_e4m3 ? kv : KvDtype::bf16;
        case Engine::trtllm:
            return c.kv_source == CheckpointKvSource::modelopt_algo ? kv : KvDtype::bf16;
        case Engine::ideal:
            return KvDtype::bf16;
    }
    return KvDtype::bf16;
}

/// Where checkpoint `c` names its KV cache, in its own words, for a note; "" when it does not.
[[nodiscard]] constexpr const char* checkpoint_kv_field(const CheckpointFormat& c) noexcept {
    switch (c.kv_source) {
        case CheckpointKvSource::modelopt_algo:
            return "kv_cache_quant_algo";
        case CheckpointKvSource::modelopt_scheme:
            return "kv_cache_scheme (ModelOpt)";
        case CheckpointKvSource::compressed_tensors:
            return "kv_cache_scheme (compressed-tensors)";
        case CheckpointKvSource::none:
            break;
    }
    return "";
}

/// engine_default_kv_dtype of model `m`'s checkpoint: the dtype the engine's "auto" resolves to,
/// before any layout of its own. The layout vLLM stores it in (DeepSeek-V3.2's fp8 as fp8_ds_mla
/// on FLASHMLA_SPARSE) depends on the attention backend, so on the GPU: evaluate's engine_kv
/// applies it (plan/evaluate.hpp, vllm_stored_kv), and nothing else does.
[[nodiscard]] constexpr KvDtype engine_default_kv_dtype(
    const Model& m, Engine e, EngineVersion vllm_release = vllm_newest_release) noexcept {
    return engine_default_kv_dtype(m.config().checkpoint, e, vllm_release);
}

namespace detail {
[[nodiscard]] constexpr CheckpointFormat checkpoint_with_kv(KvDtype d, CheckpointKvSource s) {
    CheckpointFormat c;
    c.kv_cache = d;
    c.kv_source = s;
    return c;
}
}  // namespace detail

// An NVFP4 checkpoint with kv_cache_quant_algo FP8 (nvidia/Qwen3-235B-A22B-NVFP4's
// hf_quant_config.json): fp8 under vLLM from v0.14, SGLang and TensorRT-LLM.
static_assert(engine_default_kv_dtype(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                                 CheckpointKvSource::modelopt_algo),
                                      Engine::vllm) == KvDtype::fp8_e4m3);
static_assert(engine_default_kv_dtype(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                                 CheckpointKvSource::modelopt_algo),
                                      Engine::vllm, {0, 13}) == KvDtype::bf16);
static_assert(engine_default_kv_dtype(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                                 CheckpointKvSource::modelopt_algo),
                                      Engine::trtllm) == KvDtype::fp8_e4m3);
static_assert(engine_default_kv_dtype(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                                 CheckpointKvSource::modelopt_algo),
                                      Engine::ideal) == KvDtype::bf16);
// NVFP4 KV named by a ModelOpt scheme: vLLM from v0.20 only, SGLang not.
static_assert(engine_default_kv_dtype(
                  detail::checkpoint_with_kv(KvDtype::nvfp4, CheckpointKvSource::modelopt_scheme),
                  Engine::vllm, {0, 19}) == KvDtype::bf16);
static_assert(engine_default_kv_dtype(
                  detail::checkpoint_with_kv(KvDtype::nvfp4, CheckpointKvSource::modelopt_scheme),
                  Engine::sglang) == KvDtype::bf16);
// compressed-tensors' scheme: vLLM in every line, not SGLang.
static_assert(
    engine_default_kv_dtype(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                       CheckpointKvSource::compressed_tensors),
                            Engine::vllm, {0, 8}) == KvDtype::fp8_e4m3);
static_assert(
    engine_default_kv_dtype(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                       CheckpointKvSource::compressed_tensors),
                            Engine::sglang) == KvDtype::bf16);
static_assert(engine_default_kv_dtype(CheckpointFormat{}, Engine::vllm) == KvDtype::bf16);
// --kv-cache-dtype bfloat16 over compressed-tensors' scheme: fp8 through v0.21, bf16 from v0.22;
// a ModelOpt name never overrides a dtype given.
static_assert(vllm_given_kv_dtype(detail::checkpoint_with_kv(
                                      KvDtype::fp8_e4m3, CheckpointKvSource::compressed_tensors),
                                  KvDtype::bf16, {0, 21}) == KvDtype::fp8_e4m3);
static_assert(vllm_given_kv_dtype(detail::checkpoint_with_kv(
                                      KvDtype::fp8_e4m3, CheckpointKvSource::compressed_tensors),
                                  KvDtype::bf16, {0, 22}) == KvDtype::bf16);
static_assert(vllm_given_kv_dtype(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                             CheckpointKvSource::modelopt_algo),
                                  KvDtype::bf16, {0, 21}) == KvDtype::bf16);

}  // namespace kvplan
