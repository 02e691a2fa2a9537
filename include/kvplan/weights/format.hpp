#pragma once

// Weight formats as stored: the bits of a value and of its scales (WeightEncoding), and how to size
// a model's weights (WeightOptions): the checkpoint's own format, or one the caller chooses. Part
// of weights.hpp, which counts the tensors these formats apply to.

#include <cstdint>
#include <optional>

#include "../model.hpp"
#include "../units.hpp"
#include "../weight_format.hpp"

namespace kvplan {

/// The storage cost of a format: bits per value plus its scales.
struct WeightEncoding {
    std::uint16_t value_bits = 16;
    std::uint32_t group_size = 0;          ///< input features per group; 0: no per-group scales
    std::uint16_t group_bits = 0;          ///< scale (+ zero point) bits per group per output row
    std::uint16_t channel_scale_bits = 0;  ///< scale bits per output row
    std::uint16_t tensor_scale_bits = 0;   ///< scale bits per matrix
    std::uint32_t block = 0;               ///< square blocks of block x block weights; 0: none
    std::uint16_t block_bits = 0;          ///< scale bits per block
};

/// The encoding of `f` laid out as `q`. int4 follows AWQ's layout (GPTQ's is the same but for a
/// g_idx of one int32 per input row, under 0.01 bits per weight, not counted): per group of 128
/// inputs of one output row, an fp16 scale and a 4-bit zero point packed eight to an int32, so
/// 4 + (16 + 4) / 128 = 4.15625 bits per weight; symmetric checkpoints (W4A16 without zero points)
/// keep the scale only. mxfp4 is 4 + 8 / 32 = 4.25 bits per weight, mxfp8 8 + 8 / 32 = 8.25;
/// nvfp4 4 + 8 / 16 = 4.5, with one fp32 scale per matrix more. fp8 keeps one fp32 scale per
/// matrix, per output channel, or per 128 x 128 block (DeepSeek-V3: 8 + 32 / 16,384 = 8.002 bits
/// per weight; DeepSeek-V4 an e8m0 byte per block).
[[nodiscard]] constexpr WeightEncoding encoding(WeightFormat f,
                                                const QuantLayout& q = {}) noexcept {
    switch (f) {
        case WeightFormat::fp32:
            return {.value_bits = 32};
        case WeightFormat::bf16:
        case WeightFormat::fp16:
            return {.value_bits = 16};
        case WeightFormat::fp8:
            if (q.fp8_block != 0)
                return {.value_bits = 8,
                        .block = q.fp8_block,
                        .block_bits = static_cast<std::uint16_t>(q.fp8_scale_e8m0 ? 8 : 32)};
            if (q.fp8_per_channel) return {.value_bits = 8, .channel_scale_bits = 32};
            return {.value_bits = 8, .tensor_scale_bits = 32};
        case WeightFormat::int8:
            return {.value_bits = 8, .channel_scale_bits = 32};
        case WeightFormat::mxfp8:
            // The OCP MX block is 32 elements whatever group the checkpoint's other formats use
            // (MiniMax-M3-NVFP4 keeps NVFP4 groups of 16 beside it).
            return {.value_bits = 8, .group_size = 32, .group_bits = 8};
        case WeightFormat::int4:
            return {.value_bits = 4,
                    .group_size = q.group_size != 0 ? q.group_size : 128,
                    .group_bits = static_cast<std::uint16_t>(q.int4_zero_points ? 20 : 16)};
        case WeightFormat::mxfp4:
            // As mxfp8: 32 whatever the checkpoint's NVFP4 groups (DeepSeek-V4-NVFP4's MTP experts
            // stay MXFP4 beside NVFP4 experts of 16).
            return {.value_bits = 4, .group_size = 32, .group_bits = 8};
        case WeightFormat::nvfp4:
            return {.value_bits = 4,
                    .group_size = q.group_size != 0 ? q.group_size : 16,
                    .group_bits = 8,
                    .tensor_scale_bits = 32};
    }
    return {};
}

/// How to size the weights: the format of the blocks' linear layers, optionally others for the
/// routed experts and for attention, the scales' layout, and optionally a figure the user knows
/// better than the config. Embeddings, the LM head, norms, biases and routers stay 16-bit (32-bit
/// in an all-fp32 model), as quantized checkpoints keep them.
struct WeightOptions {
    WeightFormat format = WeightFormat::bf16;  ///< linear layers of the blocks
    std::optional<WeightFormat>
        expert_format{};  ///< routed experts, if not `format` (gpt-oss: mxfp4)
    std::optional<WeightFormat> attention_format{};  ///< attention, if not `format`
    /// Attention's output projection, if not attention_format (DeepSeek-V3.1-NVFP4 quantizes
    /// o_proj and keeps the other projections 16-bit).
    std::optional<WeightFormat> attention_output_format{};
    std::optional<WeightFormat> shared_expert_format{};  ///< shared experts, if not `format`
    std::optional<WeightFormat> dense_mlp_format{};      ///< dense MLPs, if not `format`
    /// extra_params' linear layers (Mamba and linear-attention mixers) and LatentMoE's latent
    /// projections, if not `format`.
    std::optional<WeightFormat> mixer_format{};
    std::optional<WeightFormat> lm_head_format{};  ///< a quantized LM head (else 16-bit)
    QuantLayout layout{};               ///< group sizes and scale layout of quantized formats
    std::uint64_t override_params = 0;  ///< nonzero: the true parameter count; bytes scale to it
    Bytes override_bytes{};  ///< nonzero: the true total bytes; per-rank bytes scale to it
};

/// The weight options of a checkpoint's own format (bf16 when the config says nothing).
[[nodiscard]] constexpr WeightOptions checkpoint_weights(const CheckpointFormat& c) {
    WeightOptions w;
    w.format = c.linear;
    if (c.experts != c.linear) w.expert_format = c.experts;
    if (c.attention != c.linear) w.attention_format = c.attention;
    const auto set = [&](std::optional<WeightFormat>& field, Optional<WeightFormat> f,
                         WeightFormat base) {
        if (f && *f != base) field = *f;
    };
    set(w.attention_output_format, c.attention_output, c.attention);
    set(w.shared_expert_format, c.shared_experts, c.linear);
    set(w.dense_mlp_format, c.dense_mlp, c.linear);
    set(w.mixer_format, c.mixers, c.linear);
    set(w.lm_head_format, c.lm_head, c.rest);
    w.layout = c.layout;
    return w;
}

/// The weight options of `m`'s checkpoint (ModelConfig::checkpoint).
[[nodiscard]] constexpr WeightOptions checkpoint_weights(const Model& m) {
    return checkpoint_weights(m.config().checkpoint);
}

}  // namespace kvplan
