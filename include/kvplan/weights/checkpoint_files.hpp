#pragma once

// What a checkpoint's files hold: the model's weights in its own formats and, where the checkpoint
// stores them, its multi-token-prediction layers, which serving loads only as a speculative draft.

#include <cstdint>

#include "../detail/checked.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "bytes.hpp"
#include "format.hpp"

namespace kvplan {

/// Bytes of the multi-token-prediction layers a checkpoint stores beside the model
/// (ModelConfig::mtp_layers), in DeepSeek-V3's layout (its README_WEIGHTS.md; vLLM's
/// deepseek_mtp.py loads the same tensors): each is a decoder layer like the model's last (or of
/// the spec the config gives it, ModelConfig::mtp_spec: DeepSeek-V4's window-only layer), in the
/// checkpoint's formats, plus bf16 enorm, hnorm and shared_head.norm (hidden each), eh_proj
/// (hidden x 2 hidden) and its own copies of the embedding and the output head (vocab x hidden
/// each). Qwen3.5's (vLLM's qwen3_5_mtp.py: a full-attention decoder layer, fc, norm,
/// pre_fc_norm_hidden and pre_fc_norm_embedding) has the same shapes but shares the model's
/// embedding and head (CheckpointFormat::mtp_shares_embeddings); MiMo-V2-Flash's (vLLM's
/// mimo_v2_mtp.py) too, with a sliding-window attention (mtp_spec), a dense MLP
/// (MoeShape::dense_from) and its attention sinks (ModelConfig::mtp_layer_extra_params). Where the
/// quantization leaves these layers out (CheckpointFormat::mtp_unquantized), the whole layer is
/// stored as the modules it excludes are: the source checkpoint's formats (DeepSeek-V4-NVFP4's MTP
/// layer keeps fp8 linear layers and MXFP4 experts), else the checkpoint's unquantized format.
[[nodiscard]] constexpr Bytes mtp_layer_bytes(const Model& m) {
    const ModelConfig& c = m.config();
    if (c.mtp_layers == 0) return {};
    ModelConfig with = c;
    with.layers.append(c.mtp_spec.value_or(m.layer(m.num_layers() - 1)), c.mtp_layers);
    with.mtp_layers = 0;
    const Model drafted{with};
    WeightOptions mine = checkpoint_weights(m);
    if (c.checkpoint.mtp_unquantized) {
        const CheckpointFormat& k = c.checkpoint;
        mine = WeightOptions{.format = k.kept_linear.value_or(k.rest), .layout = k.layout};
        if (k.kept_experts && *k.kept_experts != mine.format) mine.expert_format = *k.kept_experts;
        // extra_params outside any mixer (DeepSeek-V4's hyper-connections) stay as the model's.
        if (k.mixers && *k.mixers != mine.format) mine.mixer_format = *k.mixers;
    }
    const Bytes layers = weight_bytes(drafted, mine).total() - weight_bytes(m, mine).total();
    const std::uint64_t h = c.hidden_size;
    const std::uint64_t tables =
        c.checkpoint.mtp_shares_embeddings
            ? 0
            : detail::mul(2 * c.vocab_size, h, "an MTP layer's embedding and head");
    // DeepSeek-V4 stores e_proj and h_proj (hidden x hidden each) as its linear layers, fp8 in
    // 128 x 128 blocks with an e8m0 scale (DeepSeek-V4-Flash's index: mtp.0.e_proj.weight
    // F8_E4M3 [4,096, 4,096], mtp.0.e_proj.scale F8_E8M0 [32, 32]); DeepSeek-V3's eh_proj is
    // counted 16-bit.
    const bool v4 = c.hc_mult != 0;
    const std::uint64_t own = detail::add(
        v4 ? 0 : detail::mul(2 * h, h, "eh_proj"),
        detail::add(3 * h + c.mtp_layer_extra_params, tables, "an MTP layer"), "an MTP layer");
    const Bytes eh =
        v4 ? detail::encoded_bytes(encoding(mine.format, mine.layout), h, h, 2) : Bytes{};
    // DeepSeek-V4's MTP layer collapses its streams with an hc_head of its own, in fp32.
    Bytes hc_head{};
    const auto add_fp32 = [&](const detail::WeightTensor& t) {
        hc_head += Bytes::exactly(detail::mul(t.rows, t.cols, "an MTP hc_head") * 4);
    };
    if (c.hc_mult != 0) detail::emit_hyper_connection(add_fp32, c.hc_mult, h, c.hc_mult, 1);
    return layers +
           (Bytes::exactly(detail::mul(own, 2, "an MTP layer")) + eh + hc_head) * c.mtp_layers;
}

/// Bytes of a checkpoint's weight files: the model's weights in its checkpoint formats and its
/// multi-token-prediction layers (what a download of the checkpoint weighs, safetensors headers
/// aside).
[[nodiscard]] constexpr Bytes checkpoint_file_bytes(const Model& m) {
    return weight_bytes(m, checkpoint_weights(m)).total() + mtp_layer_bytes(m);
}

}  // namespace kvplan
