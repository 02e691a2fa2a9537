#pragma once

// The --kv-cache-dtype value each engine takes for a KV dtype, and the vLLM release line that
// first lists it. A name the release does not list makes `vllm serve` exit at argument parsing,
// so a deployment that names a release refuses a KV dtype newer than it, with the release that
// brought it.
//
// vLLM (vllm/config/cache.py, CacheDType; kvplan's rules follow main):
//   v0.8 .. v0.10  auto, fp8, fp8_e4m3, fp8_e5m2, fp8_inc.
//   v0.11          + bfloat16 and fp8_ds_mla, added with DeepSeek-V3.2 (September 2025; the
//                  CacheConfig docstring: "Some models (namely DeepSeekV3.2) default to fp8, set
//                  to bfloat16 to use bfloat16 instead").
//   v0.20          + int8_per_token_head and fp8_per_token_head (PR #38378, opened 2026-03-27)
//                  and nvfp4 (PR #40177, opened 2026-04-17), both merged after the v0.19 branch
//                  and counted from v0.20 as engine/release.hpp counts PR #40376.
//   v0.28          int4_per_token_head and nvfp4_4over6 (PR #45187, opened 2026-06-10): both in
//                  the seventeen names PR #53299 (2026-08-21) documents from CacheDType; v0.28 is
//                  the first line tagged after it, so an earlier line may list them too.
//   main           + float16 (not yet in the seventeen), taken as the newest line only.
//   Not here: fp8_inc (Gaudi), fp8/nvfp4_ds_mla's DeepSeek-V4 records, turboquant_*.
// Before a line lists bfloat16 or float16, a 16-bit cache is "auto": the model's dtype, 16 bits
// for every bf16 or fp16 checkpoint, so the same bytes.
//
// SGLang (python/sglang/srt/server_args.py, --kv-cache-dtype choices auto, fp8_e5m2, fp8_e4m3,
// bf16, bfloat16, fp4_e2m1): fp4_e2m1 stores e2m1 values with one 8-bit scale per 16
// (KVFP4QuantizeUtil, python/sglang/srt/layers/quantization/kvfp4_tensor.py), nvfp4's bytes.
//
// TensorRT-LLM (KvCacheConfig.dtype, tensorrt_llm/llmapi/llm_args.py: auto, fp8, nvfp4; NVFP4 KV
// since TensorRT-LLM PR #6244, its block scales added as buffers of their own by
// kv_cache_manager_v2.py): the dtype the trtllm-serve command's YAML names.

#include <optional>
#include <string_view>

#include "../dtype.hpp"
#include "release.hpp"

namespace kvplan {

/// One vLLM spelling: the KV dtype, the --kv-cache-dtype value and the first release line that
/// lists it.
struct VllmKvDtypeName {
    KvDtype dtype;
    const char* name;
    EngineVersion since;
};

/// Every KV dtype vLLM has a name for (the header comment cites each row).
inline constexpr VllmKvDtypeName vllm_kv_dtype_names[] = {
    {KvDtype::bf16, "bfloat16", {0, 11}},
    {KvDtype::fp16, "float16", vllm_newest_release},
    {KvDtype::fp8_e4m3, "fp8_e4m3", {0, 8}},
    {KvDtype::fp8_e5m2, "fp8_e5m2", {0, 8}},
    {KvDtype::fp8_ds_mla, "fp8_ds_mla", {0, 11}},
    {KvDtype::int8, "int8_per_token_head", {0, 20}},
    {KvDtype::fp8_per_token_head, "fp8_per_token_head", {0, 20}},
    {KvDtype::nvfp4, "nvfp4", {0, 20}},
    {KvDtype::int4, "int4_per_token_head", {0, 28}},
    {KvDtype::nvfp4_4over6, "nvfp4_4over6", {0, 28}},
};

/// vLLM's row for `d`, or nullopt when no vLLM release has a cache of it (fp32, mxfp4).
[[nodiscard]] constexpr std::optional<VllmKvDtypeName> vllm_kv_dtype_row(KvDtype d) noexcept {
    for (const VllmKvDtypeName& n : vllm_kv_dtype_names)
        if (n.dtype == d) return n;
    return std::nullopt;
}

/// The --kv-cache-dtype value vLLM release line `v` takes for `d`: its name, "auto" for a 16-bit
/// cache before the line names it, or nullopt when the line has none (see vllm_kv_dtype_row for
/// the first line that does).
[[nodiscard]] constexpr std::optional<std::string_view> vllm_kv_dtype_name(
    KvDtype d, EngineVersion v) noexcept {
    const auto row = vllm_kv_dtype_row(d);
    if (!row) return std::nullopt;
    if (row->since <= v) return row->name;
    if (d == KvDtype::bf16 || d == KvDtype::fp16) return "auto";
    return std::nullopt;
}

/// The --kv-cache-dtype value SGLang takes for `d`, or nullopt.
[[nodiscard]] constexpr std::optional<std::string_view> sglang_kv_dtype_name(KvDtype d) noexcept {
    switch (d) {
        case KvDtype::bf16:
            return "bf16";
        case KvDtype::fp8_e4m3:
            return "fp8_e4m3";
        case KvDtype::fp8_e5m2:
            return "fp8_e5m2";
        case KvDtype::nvfp4:
            return "fp4_e2m1";
        default:
            return std::nullopt;
    }
}

/// TensorRT-LLM's KvCacheConfig.dtype for `d`, or nullopt ("auto" is the model's 16-bit dtype).
[[nodiscard]] constexpr std::optional<std::string_view> trtllm_kv_dtype_name(KvDtype d) noexcept {
    switch (d) {
        case KvDtype::bf16:
        case KvDtype::fp16:
            return "auto";
        case KvDtype::fp8_e4m3:
            return "fp8";
        case KvDtype::nvfp4:
            return "nvfp4";
        default:
            return std::nullopt;
    }
}

/// Why vLLM release line `v` cannot be started with a KV cache of `d` although a later line can,
/// or nullopt (also when no line can: kv_dtype_check, engine/startup.hpp, refuses those).
[[nodiscard]] constexpr std::optional<VllmKvDtypeName> vllm_kv_dtype_too_new(
    KvDtype d, EngineVersion v) noexcept {
    const auto row = vllm_kv_dtype_row(d);
    if (!row || vllm_kv_dtype_name(d, v)) return std::nullopt;
    return row;
}

static_assert(vllm_kv_dtype_name(KvDtype::nvfp4, {0, 20}) == std::string_view("nvfp4"));
static_assert(!vllm_kv_dtype_name(KvDtype::nvfp4, {0, 19}));
static_assert(vllm_kv_dtype_name(KvDtype::bf16, {0, 10}) == std::string_view("auto"));
static_assert(vllm_kv_dtype_name(KvDtype::bf16, {0, 11}) == std::string_view("bfloat16"));
static_assert(!vllm_kv_dtype_name(KvDtype::mxfp4, vllm_newest_release));
static_assert(vllm_kv_dtype_too_new(KvDtype::fp8_ds_mla, {0, 10})->since == EngineVersion{0, 11});
static_assert(!vllm_kv_dtype_too_new(KvDtype::mxfp4, {0, 8}));

}  // namespace kvplan
