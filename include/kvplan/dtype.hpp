#pragma once

// Element types of a KV cache and the scales that quantized ones carry. Sub-byte formats still come
// out as exact byte counts: a vector of n elements takes ceil(n * bits / 8) bytes plus its scales.

#include <cstdint>

#include "detail/checked.hpp"
#include "detail/message.hpp"
#include "fixed_array.hpp"
#include "optional.hpp"
#include "units.hpp"

namespace kvplan {

/// A KV-cache element type. Enumerators are spelled as in JSON and on the command line.
enum class KvDtype : std::uint8_t {
    fp32,
    fp16,
    bf16,
    fp8_e4m3,
    fp8_e5m2,
    int8,
    int4,
    nvfp4,  ///< 4-bit e2m1 values with one fp8 (e4m3) scale per 16 values
    mxfp4,  ///< 4-bit e2m1 values with one e8m0 scale per 32 values (OCP microscaling)
    /// DeepSeek's packed fp8 MLA latent (vLLM's --kv-cache-dtype fp8_ds_mla, which vLLM picks for
    /// fp8 on DeepSeek-V3.2): the kv_lora_rank part in e4m3 with one fp32 scale per 128 values,
    /// the RoPE part kept in bf16. 512 + 4 x 4 + 64 x 2 = 656 B per token for V3.2's latent
    /// (MLAAttentionSpec.real_page_size_bytes, vllm/v1/kv_cache_interface.py; the layout is
    /// FlashMLA's, vllm/v1/attention/backends/mla/flashmla_sparse.py). Other vectors: e4m3 with
    /// the same scales.
    fp8_ds_mla,
    /// e4m3 values with one fp32 scale per token per head, for K and for V, computed as the
    /// token is written (vLLM's --kv-cache-dtype fp8_per_token_head, vLLM PR #38378): the
    /// scales are carved from the KV allocation, 2 x heads x 4 B per token per layer
    /// (AttentionSpec.page_size_bytes, vllm/v1/kv_cache_interface.py).
    fp8_per_token_head,
    /// NVFP4's layout (e2m1, an e4m3 scale per 16) whose scale is chosen per group between
    /// max/6 and max/4 by the smaller reconstruction error (vLLM's --kv-cache-dtype
    /// nvfp4_4over6, vLLM PR #45187): the same bytes as nvfp4, another store kernel.
    nvfp4_4over6,
};

/// A KvDtype with its spelling and storage bits per element, scales excluded.
struct KvDtypeInfo {
    KvDtype dtype;
    const char* name;
    unsigned bits;
};

/// Every KvDtype, in enumerator order: the one table name(), bits() and parse_kv_dtype() read.
inline constexpr KvDtypeInfo kv_dtype_table[] = {
    {KvDtype::fp32, "fp32", 32},
    {KvDtype::fp16, "fp16", 16},
    {KvDtype::bf16, "bf16", 16},
    {KvDtype::fp8_e4m3, "fp8_e4m3", 8},
    {KvDtype::fp8_e5m2, "fp8_e5m2", 8},
    {KvDtype::int8, "int8", 8},
    {KvDtype::int4, "int4", 4},
    {KvDtype::nvfp4, "nvfp4", 4},
    {KvDtype::mxfp4, "mxfp4", 4},
    {KvDtype::fp8_ds_mla, "fp8_ds_mla", 8},
    {KvDtype::fp8_per_token_head, "fp8_per_token_head", 8},
    {KvDtype::nvfp4_4over6, "nvfp4_4over6", 4},
};

inline constexpr FixedArray all_kv_dtypes{KvDtype::fp32,
                                          KvDtype::fp16,
                                          KvDtype::bf16,
                                          KvDtype::fp8_e4m3,
                                          KvDtype::fp8_e5m2,
                                          KvDtype::int8,
                                          KvDtype::int4,
                                          KvDtype::nvfp4,
                                          KvDtype::mxfp4,
                                          KvDtype::fp8_ds_mla,
                                          KvDtype::fp8_per_token_head,
                                          KvDtype::nvfp4_4over6};

/// Storage bits of one element, scales excluded.
[[nodiscard]] constexpr unsigned bits(KvDtype d) noexcept {
    for (const KvDtypeInfo& i : kv_dtype_table)
        if (i.dtype == d) return i.bits;
    return 0;
}

/// The JSON and command-line spelling.
[[nodiscard]] constexpr const char* name(KvDtype d) noexcept {
    for (const KvDtypeInfo& i : kv_dtype_table)
        if (i.dtype == d) return i.name;
    return "?";
}

/// Parses a spelling; "fp8" means fp8_e4m3 (as vLLM's --kv-cache-dtype fp8 does), "float16",
/// "bfloat16", "float32" and "fp4" (nvfp4) are accepted too, and vLLM's names for the types
/// kvplan spells otherwise: int8_per_token_head (int8), int4_per_token_head (int4); SGLang's
/// fp4_e2m1 is nvfp4's layout (sglang_kv_dtype_name, engine/kv_dtype_names.hpp).
/// Takes a C string or anything with data() and size() (std::string, std::string_view).
[[nodiscard]] constexpr Optional<KvDtype> parse_kv_dtype(detail::TextRef s) noexcept {
    for (KvDtype d : all_kv_dtypes)
        if (s == detail::TextRef(name(d))) return d;
    if (s == "fp8" || s == "e4m3") return KvDtype::fp8_e4m3;
    if (s == "e5m2") return KvDtype::fp8_e5m2;
    if (s == "float16" || s == "half") return KvDtype::fp16;
    if (s == "bfloat16") return KvDtype::bf16;
    if (s == "float32" || s == "float") return KvDtype::fp32;
    if (s == "fp4" || s == "fp4_e2m1") return KvDtype::nvfp4;
    if (s == "int8_per_token_head") return KvDtype::int8;
    if (s == "int4_per_token_head") return KvDtype::int4;
    return {};
}

/// Where a quantized cache keeps its scales.
enum class ScaleGranularity : std::uint8_t {
    per_tensor,      ///< one scale for a whole layer: no bytes per token
    per_token_head,  ///< one scale per head per token, for K and for V
    per_group,       ///< one scale per `group_size` consecutive values
};

/// A scale layout: granularity, the width of one scale, and the group for per_group.
struct KvScaling {
    ScaleGranularity granularity = ScaleGranularity::per_tensor;
    std::uint16_t scale_bits = 0;
    std::uint16_t group_size = 0;
};

[[nodiscard]] constexpr KvScaling default_scaling(KvDtype d) noexcept;

/// An element type together with its scales: what one cached value really costs. A bare KvDtype
/// converts to its usual scale layout (default_scaling).
struct KvFormat {
    KvDtype dtype = KvDtype::bf16;
    KvScaling scaling{};

    constexpr KvFormat() noexcept = default;
    constexpr KvFormat(KvDtype d) noexcept : dtype(d), scaling(default_scaling(d)) {}  // NOLINT
    constexpr KvFormat(KvDtype d, KvScaling sc) noexcept : dtype(d), scaling(sc) {}
    friend constexpr bool operator==(const KvFormat& a, const KvFormat& b) noexcept {
        return a.dtype == b.dtype && a.scaling.granularity == b.scaling.granularity &&
               a.scaling.scale_bits == b.scaling.scale_bits &&
               a.scaling.group_size == b.scaling.group_size;
    }
};

/// The usual scale layout of each type: none for 16/32-bit; per-tensor for fp8 (vLLM's k_scale and
/// v_scale); one fp32 scale per token per head for int8, int4 and fp8_per_token_head (vLLM's
/// *_per_token_head types: 2 x heads x 4 B per token, vllm/v1/kv_cache_interface.py); one e4m3
/// scale per 16 values for NVFP4 and one e8m0 scale per 32 for MXFP4 (their specs); one fp32 scale
/// per 128 values for fp8_ds_mla.
[[nodiscard]] constexpr KvScaling default_scaling(KvDtype d) noexcept {
    switch (d) {
        case KvDtype::int8:
        case KvDtype::int4:
        case KvDtype::fp8_per_token_head:
            return {ScaleGranularity::per_token_head, 32, 0};
        case KvDtype::nvfp4:
        case KvDtype::nvfp4_4over6:
            return {ScaleGranularity::per_group, 8, 16};
        case KvDtype::mxfp4:
            return {ScaleGranularity::per_group, 8, 32};
        case KvDtype::fp8_ds_mla:
            return {ScaleGranularity::per_group, 32, 128};
        default:
            return {};
    }
}

/// Bytes to store one cached vector of `elements` values (one head's K or V for one token, or one
/// MLA latent), scales included, rounded up to whole bytes.
[[nodiscard]] constexpr Bytes vector_bytes(KvFormat f, std::uint64_t elements) {
    std::uint64_t bits_total = detail::mul(elements, bits(f.dtype), "a cache vector");
    switch (f.scaling.granularity) {
        case ScaleGranularity::per_tensor:
            break;
        case ScaleGranularity::per_token_head:
            bits_total = detail::add(bits_total, f.scaling.scale_bits, "a cache vector");
            break;
        case ScaleGranularity::per_group:
            KVPLAN_EXPECTS(f.scaling.group_size != 0);
            bits_total = detail::add(bits_total,
                                     detail::mul(detail::ceil_div(elements, f.scaling.group_size),
                                                 f.scaling.scale_bits, "a cache vector"),
                                     "a cache vector");
            break;
    }
    return Bytes::exactly(detail::ceil_div(bits_total, 8));
}

}  // namespace kvplan
