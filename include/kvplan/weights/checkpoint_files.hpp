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

/// The tensors of one multi-token-prediction layer beside its decoder layer, its embedding and its
/// output head, on a rank of tensor parallelism `tp` (1: the layer as stored) under `w`: what a
/// speculative MTP draft holds past the decoder layers it appends (plan/speculation.hpp). As
/// vLLM builds them:
///   eh_proj   the 2 hidden -> hidden projection of the normed embedding and hidden state, 16-bit,
///             unquantized: replicated on every rank (deepseek_mtp.py and glm4_moe_mtp.py, an
///             nn.Linear; mimo_v2_mtp.py, a ReplicatedLinear without quant_config), or split by
///             output rows (ModelConfig::mtp_projection_split: qwen3_5_mtp.py's fc, a
///             ColumnParallelLinear gathering its output); DeepSeek-V4's e_proj and h_proj
///             (hidden x hidden each; deepseek_v4_mtp.py, ReplicatedLinears with the model's
///             quant_config) in the checkpoint's linear format, fp8 in 128 x 128 blocks
///             with an e8m0 scale (DeepSeek-V4-Flash's index: mtp.0.e_proj.weight F8_E4M3
///             [4,096, 4,096], mtp.0.e_proj.scale F8_E8M0 [32, 32]), and its hc_head, fp32;
///   norms     enorm, hnorm and shared_head.norm (Qwen3.5's pre_fc_norm_embedding,
///             pre_fc_norm_hidden and norm; MiMo's final_layernorm), hidden each, 16-bit;
///   extra     ModelConfig::mtp_layer_extra_params, 16-bit: MiMo-V2-Flash's attention sinks, one
///             per query head, split by heads (mimo_v2_mtp.py slices attention_sink_bias by tp).
/// The draft's embedding and output head are not among them: vLLM's MTP proposer replaces them
/// with the model's ("Detected MTP model. Sharing target model embedding weights with the draft
/// model.", vllm/v1/spec_decode/eagle.py, and the same for lm_head).
[[nodiscard]] constexpr WeightBytes mtp_head_bytes(const Model& m, const WeightOptions& w,
                                                   std::uint32_t tp = 1) {
    KVPLAN_EXPECTS(tp >= 1);
    const ModelConfig& c = m.config();
    const std::uint64_t h = c.hidden_size;
    WeightBytes b;
    const auto bf16 = [](std::uint64_t n) {
        return Bytes::exactly(detail::mul(n, 2, "MTP bytes"));
    };
    if (c.hc_mult != 0) {
        b.other += detail::encoded_bytes(encoding(w.format, w.layout), h, h, 2);
        const auto add_fp32 = [&](const detail::WeightTensor& t) {
            b.other += Bytes::exactly(detail::mul(t.rows, t.cols, "an MTP hc_head") * 4);
        };
        detail::emit_hyper_connection(add_fp32, c.hc_mult, h, c.hc_mult, 1);
    } else {
        const std::uint64_t rows = c.mtp_projection_split ? detail::ceil_div(h, tp) : h;
        b.other += bf16(detail::mul(rows, 2 * h, "eh_proj"));
    }
    b.norms += bf16(3 * h);
    b.attention += bf16(detail::ceil_div(c.mtp_layer_extra_params, tp));
    return b;
}

/// Bytes of the multi-token-prediction layers a checkpoint stores beside the model
/// (ModelConfig::mtp_layers), in DeepSeek-V3's layout (its README_WEIGHTS.md; vLLM's
/// deepseek_mtp.py loads the same tensors): each is a decoder layer like the model's last (or of
/// the spec the config gives it, ModelConfig::mtp_spec: DeepSeek-V4's window-only layer), in the
/// checkpoint's formats, plus the tensors of mtp_head_bytes and its own copies of the embedding
/// and the output head (vocab x hidden each, 16-bit). Qwen3.5's (vLLM's qwen3_5_mtp.py: a
/// full-attention decoder layer, fc, norm, pre_fc_norm_hidden and pre_fc_norm_embedding) has the
/// same shapes but shares the model's embedding and head (CheckpointFormat::mtp_shares_embeddings);
/// MiMo-V2-Flash's (vLLM's mimo_v2_mtp.py) too, with a sliding-window attention (mtp_spec), a dense
/// MLP (MoeShape::dense_from) and its attention sinks (ModelConfig::mtp_layer_extra_params). Where
/// the quantization leaves these layers out (CheckpointFormat::mtp_unquantized), the whole layer is
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
    const Bytes tables = c.checkpoint.mtp_shares_embeddings
                             ? Bytes{}
                             : Bytes::exactly(detail::mul(4 * c.vocab_size, c.hidden_size,
                                                          "an MTP layer's embedding and head"));
    return layers + (mtp_head_bytes(m, mine).total() + tables) * c.mtp_layers;
}

/// Bytes of a checkpoint's weight files: the model's weights in its checkpoint formats and its
/// multi-token-prediction layers (what a download of the checkpoint weighs, safetensors headers
/// aside).
[[nodiscard]] constexpr Bytes checkpoint_file_bytes(const Model& m) {
    return weight_bytes(m, checkpoint_weights(m)).total() + mtp_layer_bytes(m);
}

}  // namespace kvplan
