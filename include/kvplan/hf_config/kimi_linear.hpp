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
/// output gate g_a and g_b, A_log per head, dt_bias per channel, the gated RMSNorm o_norm of dim,
/// o_proj).
[[nodiscard]] inline RecurrentShape kda_layer(std::uint64_t hidden, std::uint64_t heads,
                                              std::uint64_t dim, std::uint64_t kernel) {
    const std::uint64_t p = times(heads, dim);
    return {
        .conv_values = times(kernel - 1, times(3, p)),
        .ssm_values = times(heads, times(dim, dim)),
        .mixer_params = sum({times(3, times(hidden, p)), times(3, times(p, kernel)),
                             times(hidden, dim), times(dim, p), times(hidden, heads),
                             times(hidden, dim), times(dim, p), heads, p, dim, times(p, hidden)})};
}

/// The layers, MLA shape and MoE of a Kimi Linear config into `c` (n layers); returns the KDA
/// mixers' parameters.
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
    const RecurrentShape kda = kda_layer(c.hidden_size, heads, dim, kernel);
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
    }
    c.intermediate_size = r.positive_integer("intermediate_size", ~0ULL);
    const std::uint64_t kda_layers =
        static_cast<std::uint64_t>(std::count(kind.begin(), kind.end(), 1));
    return times(kda_layers, kda.mixer_params);
}

}  // namespace detail::hf

}  // namespace kvplan
