#pragma once

// How weights are stored: the format of a tensor's values and the scales beside them, and the
// format a checkpoint's config says its weights are in. Light like the core: a model carries its
// checkpoint's format, and weights.hpp turns formats into bytes.

#include <cstdint>

#include "detail/enum_table.hpp"
#include "dtype.hpp"
#include "fixed_array.hpp"
#include "optional.hpp"

namespace kvplan {

/// How weights are stored. Enumerators are spelled as in JSON and on the command line.
enum class WeightFormat : std::uint8_t {
    fp32,
    bf16,
    fp16,
    fp8,    ///< 8-bit floats: one fp32 scale per matrix, per output channel or per square block
    int8,   ///< 8-bit integers, one fp32 scale per output channel (W8A8 INT8)
    mxfp8,  ///< 8-bit e4m3 values, one e8m0 scale per 32 (OCP MX; MiniMax-M3's dense layers)
    int4,  ///< 4-bit integers in groups along the input (AWQ, GPTQ, W4A16), an fp16 scale per group
    mxfp4,  ///< 4-bit e2m1 values, one e8m0 scale per 32 (OCP MX; gpt-oss's experts)
    nvfp4,  ///< 4-bit e2m1 values, one fp8 scale per 16 and one fp32 scale per matrix
};

/// Every format with its spellings: the first is its name; "float32", "bfloat16", "float16" (a
/// config's torch_dtype) and "awq", "gptq" (int4 methods) are read too.
inline constexpr FixedArray<detail::EnumName<WeightFormat>, 14> weight_format_names{{
    {WeightFormat::fp32, "fp32"},
    {WeightFormat::bf16, "bf16"},
    {WeightFormat::fp16, "fp16"},
    {WeightFormat::fp8, "fp8"},
    {WeightFormat::int8, "int8"},
    {WeightFormat::mxfp8, "mxfp8"},
    {WeightFormat::int4, "int4"},
    {WeightFormat::mxfp4, "mxfp4"},
    {WeightFormat::nvfp4, "nvfp4"},
    {WeightFormat::fp32, "float32"},
    {WeightFormat::bf16, "bfloat16"},
    {WeightFormat::fp16, "float16"},
    {WeightFormat::int4, "awq"},
    {WeightFormat::int4, "gptq"},
}};

/// Every format, in order.
inline constexpr FixedArray<WeightFormat, 9> all_weight_formats{
    WeightFormat::fp32, WeightFormat::bf16,  WeightFormat::fp16,
    WeightFormat::fp8,  WeightFormat::int8,  WeightFormat::mxfp8,
    WeightFormat::int4, WeightFormat::mxfp4, WeightFormat::nvfp4};

/// The JSON and command-line spelling.
[[nodiscard]] constexpr const char* name(WeightFormat f) noexcept {
    return detail::enum_name(weight_format_names, f);
}

/// Parses a spelling (see weight_format_names). Takes a C string or anything with data() and
/// size().
[[nodiscard]] constexpr Optional<WeightFormat> parse_weight_format(detail::TextRef s) noexcept {
    return detail::enum_parse(weight_format_names, s);
}

/// Bits per value of a format.
[[nodiscard]] constexpr std::uint32_t value_bits(WeightFormat f) noexcept {
    switch (f) {
        case WeightFormat::fp32:
            return 32;
        case WeightFormat::bf16:
        case WeightFormat::fp16:
            return 16;
        case WeightFormat::fp8:
        case WeightFormat::int8:
        case WeightFormat::mxfp8:
            return 8;
        case WeightFormat::int4:
        case WeightFormat::mxfp4:
        case WeightFormat::nvfp4:
            return 4;
    }
    return 16;
}

/// How a quantized checkpoint lays out its scales, where checkpoints of one format differ.
struct QuantLayout {
    /// int4, mxfp4, nvfp4: inputs per scale; 0: the format's usual group (128, 32, 16).
    std::uint32_t group_size = 0;
    /// fp8: one fp32 scale per fp8_block x fp8_block weights (DeepSeek-V3's weight_block_size
    /// [128, 128]); 0: one per matrix, or per output channel with fp8_per_channel.
    std::uint32_t fp8_block = 0;
    bool fp8_per_channel = false;  ///< fp8: one fp32 scale per output channel
    /// fp8 blocks: each block's scale is one e8m0 byte, not an fp32 (DeepSeek-V4's checkpoints
    /// with fp4 experts store them as float8_e8m0fnu: vLLM's DeepseekV4FP8Config.is_scale_e8m0).
    bool fp8_scale_e8m0 = false;
    bool int4_zero_points = true;  ///< int4: a 4-bit zero point per group (AWQ; asymmetric GPTQ)

    friend constexpr bool operator==(const QuantLayout&, const QuantLayout&) = default;
};

/// Where a checkpoint's quantization names the KV cache its attention scales were calibrated for
/// (engines read each place differently: engine/checkpoint_kv.hpp).
enum class CheckpointKvSource : std::uint8_t {
    none,
    modelopt_algo,       ///< ModelOpt's kv_cache_quant_algo ("FP8", "NVFP4")
    modelopt_scheme,     ///< kv_cache_scheme in a ModelOpt quantization_config of config.json
    compressed_tensors,  ///< compressed-tensors' kv_cache_scheme
};

/// The formats a checkpoint stores, as its config.json says (quantization_config, else
/// torch_dtype). Unknown: the config says neither, and bf16 is assumed.
struct CheckpointFormat {
    bool known = false;
    WeightFormat linear = WeightFormat::bf16;     ///< the blocks' linear layers
    WeightFormat experts = WeightFormat::bf16;    ///< routed experts
    WeightFormat attention = WeightFormat::bf16;  ///< attention projections (may stay 16-bit)
    /// Where a checkpoint's quantization names modules one by one (ModelOpt's exclude_modules and
    /// quantized_layers, compressed-tensors' ignore and targets), the parts it treats apart; empty:
    /// as `linear` (`attention` for the output projection).
    Optional<WeightFormat> attention_output{};  ///< attention's output projection (o_proj)
    Optional<WeightFormat> shared_experts{};
    Optional<WeightFormat> dense_mlp{};
    Optional<WeightFormat> mixers{};   ///< extra_params' linear layers; LatentMoE's projections
    Optional<WeightFormat> lm_head{};  ///< a quantized LM head (else `rest`)
    /// The formats a quantization leaves the modules it excludes in, where not `rest`: the source
    /// checkpoint's. DeepSeek-V4's checkpoints keep every linear layer of the blocks in fp8 and
    /// the routed experts in MXFP4 (vLLM's vllm/models/deepseek_v4/quant_config.py,
    /// DeepseekV4FP8Config), and NVIDIA's NVFP4 re-quantization of their experts leaves the rest
    /// so (hf_quant_config.json's exclude_modules).
    Optional<WeightFormat> kept_linear{};
    Optional<WeightFormat> kept_experts{};
    /// The multi-token-prediction layers the checkpoint stores beside the model are left out of
    /// its quantization (ModelOpt's exclude_modules "model.layers.61*"): stored as the excluded
    /// modules are (`kept_linear` and `kept_experts`, else `rest`).
    bool mtp_unquantized = false;
    /// The multi-token-prediction layers use the model's embedding and LM head and the checkpoint
    /// stores no copies of their own (Qwen3.5's mtp_use_dedicated_embeddings false), where
    /// DeepSeek-V3's store both.
    bool mtp_shares_embeddings = false;
    /// Embeddings, the LM head, norms, biases and routers (fp32 in an all-fp32 model).
    WeightFormat rest = WeightFormat::bf16;
    /// transformers' model_type begins with "gemma": SGLang loads such a float32 checkpoint in
    /// bf16 where it takes fp16 for any other (engine/load_dtype.hpp).
    bool gemma = false;
    QuantLayout layout{};
    /// The KV cache the checkpoint's quantization names (fp8_e4m3 or nvfp4), and where: a default
    /// some engines follow when their KV dtype is left to "auto", never the cache itself.
    Optional<KvDtype> kv_cache{};
    CheckpointKvSource kv_source = CheckpointKvSource::none;
    const char* source = "";  ///< where it was read: "quantization_config.quant_method fp8"...
};

}  // namespace kvplan
