#pragma once

// Kimi Linear (model_type kimi_linear, Kimi-Linear-48B-A3B; vLLM's
// vllm/model_executor/models/kimi_linear.py). linear_attn_config lists, 1-based, the
// full_attn_layers, which are MLA (kv_lora_rank, qk_rope_head_dim, no q_lora_rank when it is
// null), and the kda_layers, which are Kimi Delta Attention: a recurrent layer whose state per
// sequence is vLLM's kda_state_shape (vllm/model_executor/layers/mamba/mamba_utils.py): a
// short-convolution window of conv_kernel - 1 values for each of q, k and v (num_heads x head_dim
// each) and a num_heads x head_dim x head_dim recurrent state. The MLP is DeepSeek-V3's: the
// first first_k_dense_replace layers dense, then num_experts routed experts (top
// num_experts_per_token) and num_shared_experts beside them.
//
// Kimi-K3 (model_type kimi_k3 wrapping a kimi_linear text_config; SGLang's
// python/sglang/srt/models/kimi_k3.py and kimi_k3_vl.py) keeps that cache and adds weights the
// text_config flags: linear_attn_config.use_full_rank_gate (KDA's output gate g_proj from the
// hidden size to heads x head_dim, instead of g_a and g_b through head_dim), mla_use_output_gate
// (an MLA g_proj from the hidden size to heads x v_head_dim), routed_expert_hidden_size (latent
// MoE: the routed experts work in that width between routed_expert_down_proj and
// routed_expert_up_proj, with routed_expert_norm when latent_moe_use_norm), and
// attn_res_block_size (attention residuals: per layer two more RMSNorms and two hidden x 1
// projections, self_attention_res_* and mlp_res_*, and output_attn_res_norm and _proj once). Its
// MoonViT3d tower and PatchMergerMLPV2 projector are counted by kimi_k3_vision (vision.hpp).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../json.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "fields.hpp"
#include "options.hpp"
#include "recurrent.hpp"

namespace kvplan {

namespace detail::hf {

/// A KDA layer of `heads` heads of `dim` over `hidden`, with a `kernel`-tap short convolution:
/// its state, and its mixer's parameters (KimiDeltaAttention: q, k and v projections and their
/// depthwise convolutions, the decay gate f_a (to dim) and f_b, beta's b_proj (one per head), the
/// output gate g_a and g_b, or with `full_rank_gate` one g_proj from the hidden size (Kimi-K3's
/// KimiK3DeltaAttention), A_log per head, dt_bias per channel, the gated RMSNorm o_norm of dim,
/// o_proj).
[[nodiscard]] inline RecurrentShape kda_layer(std::uint64_t hidden, std::uint64_t heads,
                                              std::uint64_t dim, std::uint64_t kernel,
                                              bool full_rank_gate = false) {
    const std::uint64_t p = times(heads, dim);
    const std::uint64_t gate =
        full_rank_gate ? times(hidden, p) : sum({times(hidden, dim), times(dim, p)});
    return {.conv_values = times(kernel - 1, times(3, p)),
            .ssm_values = times(heads, times(dim, dim)),
            .mixer_params =
                sum({times(3, times(hidden, p)), times(3, times(p, kernel)), times(hidden, dim),
                     times(dim, p), times(hidden, heads), gate, heads, p, dim, times(p, hidden)})};
}

/// The layers, MLA shape and MoE of a Kimi Linear config into `c` (n layers); returns the KDA
/// mixers' parameters and the Kimi-K3 weights no field of `c` describes (the MLA output gates,
/// the latent norms, the output-side attention residual).
[[nodiscard]] inline std::uint64_t read_kimi_linear(const JsonReader& r, std::uint32_t n,
                                                    ModelConfig& c, const HfImportOptions& o) {
    const std::uint64_t kv_lora = r.positive_integer("kv_lora_rank", u32_max);
    const std::uint64_t rope = r.positive_integer("qk_rope_head_dim", u32_max);
    const std::uint64_t nope = r.positive_integer("qk_nope_head_dim", u32_max);
    c.mla = {.q_lora_rank = u32(r.optional_positive_integer("q_lora_rank", u32_max).value_or(0)),
             .qk_nope_head_dim = u32(nope),
             .v_head_dim = u32(r.positive_integer("v_head_dim", u32_max))};
    c.head_dim = u32(nope + rope);

    const JsonReader lin = r.object("linear_attn_config");
    const std::uint64_t heads = lin.positive_integer("num_heads", u32_max);
    const std::uint64_t dim = lin.positive_integer("head_dim", u32_max);
    const std::uint64_t kernel = lin.positive_integer("short_conv_kernel_size", 64);
    if (kernel < 2) lin.fail("short_conv_kernel_size", "at least 2", std::to_string(kernel));
    // full_attn_layers and kda_layers are 1-based and together name every layer once.
    std::vector<int> kind(n, -1);  // 0 full, 1 KDA
    const auto mark = [&](const char* key, int k) {
        const std::vector<std::uint64_t> list =
            lin.optional_count_array(key).value_or(std::vector<std::uint64_t>{});
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (list[i] < 1 || list[i] > n || kind[list[i] - 1] != -1)
                lin.fail(JsonReader::element(key, i),
                         "a layer from 1 to " + std::to_string(n) + " named once",
                         std::to_string(list[i]));
            kind[list[i] - 1] = k;
        }
    };
    mark("full_attn_layers", 0);
    mark("kda_layers", 1);
    const auto missing = std::find(kind.begin(), kind.end(), -1);
    if (missing != kind.end())
        lin.fail("kda_layers", "with full_attn_layers, every layer (1-based) once",
                 "layer " + std::to_string(missing - kind.begin() + 1) + " in neither");
    const bool full_rank_gate = lin.optional_boolean("use_full_rank_gate").value_or(false);
    const RecurrentShape kda = kda_layer(c.hidden_size, heads, dim, kernel, full_rank_gate);
    // vLLM's kda_state_dtype keeps the recurrent state in float32 unless told otherwise.
    HfImportOptions kda_options = o;
    if (kda_options.ssm_state_element_bytes == 0) kda_options.ssm_state_element_bytes = 4;
    const CacheSpec state = constant_state(Bytes::exactly(state_bytes(kda, kda_options)));
    for (std::uint32_t i = 0; i < n; ++i)
        c.layers.append(kind[i] == 0 ? mla_latent(u32(kv_lora), u32(rope)) : state);

    MoeShape& m = c.moe;
    m.experts = u32(r.optional_count("num_experts", u32_max).value_or(0));
    if (m.experts != 0) {
        m.experts_per_token = u32(r.positive_integer("num_experts_per_token", m.experts));
        m.expert_intermediate_size = r.positive_integer("moe_intermediate_size", ~0ULL);
        m.shared_experts = u32(r.optional_count("num_shared_experts", u32_max).value_or(0));
        m.first_dense_layers = u32(r.optional_count("first_k_dense_replace", n).value_or(0));
        m.layer_freq = u32(r.optional_positive_integer("moe_layer_freq", u32_max).value_or(1));
        // KimiMoE routes as DeepSeek-V3 does, with an e_score_correction_bias.
        m.router_bias = true;
        // Kimi-K3's latent MoE (KimiK3MoE): the shared experts stay at the hidden size.
        m.latent_size =
            r.optional_positive_integer("routed_expert_hidden_size", u32_max).value_or(0);
    }
    c.intermediate_size = r.positive_integer("intermediate_size", ~0ULL);
    const std::uint64_t kda_layers =
        static_cast<std::uint64_t>(std::count(kind.begin(), kind.end(), 1));
    std::uint64_t extra = times(kda_layers, kda.mixer_params);
    // Kimi-K3's KimiK3MLAAttention: g_proj, hidden x heads x v_head_dim, on each MLA layer.
    if (r.optional_boolean("mla_use_output_gate").value_or(false))
        extra = sum({extra, times(n - kda_layers,
                                  times(c.hidden_size, times(c.num_heads, c.mla.v_head_dim)))});
    // routed_expert_norm, one RMSNorm of the latent width per MoE layer.
    if (m.latent_size != 0 && r.optional_boolean("latent_moe_use_norm").value_or(false)) {
        std::uint64_t moe_layers = 0;
        for (std::uint32_t i = 0; i < n; ++i) moe_layers += m.is_moe_layer(i) ? 1 : 0;
        extra = sum({extra, times(moe_layers, m.latent_size)});
    }
    // Attention residuals (KimiK3DecoderLayer): per layer two RMSNorms and two hidden x 1
    // projections, each hidden_size long, so four more vectors beside the two usual norms; the
    // model's output_attn_res_norm and output_attn_res_proj once.
    if (r.optional_positive_integer("attn_res_block_size", u32_max)) {
        c.norms_per_layer = 6;
        extra = sum({extra, times(2, c.hidden_size)});
    }
    return extra;
}

}  // namespace detail::hf

}  // namespace kvplan
