#pragma once

// The fixed state per sequence of recurrent layers (Gated DeltaNet, Mamba-2, Mamba-1) and their
// mixers' parameters.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "../detail/checked.hpp"
#include "../json.hpp"
#include "fields.hpp"
#include "options.hpp"

namespace kvplan {

namespace detail::hf {

/// Whether `key` holds the string "auto" (a size the config class derives from others).
[[nodiscard]] inline bool is_auto(const JsonReader& r, std::string_view key) {
    const Json* v = r.find(key);
    return v != nullptr && v->is_string() && v->get<std::string>() == "auto";
}

/// One recurrent layer's state per sequence, its convolution and its recurrent (SSM) part in
/// values, and its mixer's parameters.
struct RecurrentShape {
    std::uint64_t conv_values = 0;
    std::uint64_t ssm_values = 0;
    std::uint64_t mixer_params = 0;
};

/// a x b for a recurrent layer's sizes: OverflowError, never a wrap.
[[nodiscard]] inline std::uint64_t times(std::uint64_t a, std::uint64_t b) {
    return detail::mul(a, b, "a recurrent layer's size");
}

/// The sum of `terms`: OverflowError, never a wrap.
[[nodiscard]] inline std::uint64_t sum(std::initializer_list<std::uint64_t> terms) {
    std::uint64_t s = 0;
    for (std::uint64_t t : terms) s = detail::add(s, t, "a recurrent layer's size");
    return s;
}

/// Qwen3-Next's Gated DeltaNet layer.
[[nodiscard]] inline RecurrentShape gated_delta_net(const JsonReader& r, std::uint64_t hidden) {
    const std::uint64_t nk = r.positive_integer("linear_num_key_heads", u32_max);
    const std::uint64_t nv = r.positive_integer("linear_num_value_heads", u32_max);
    const std::uint64_t dk = r.positive_integer("linear_key_head_dim", u32_max);
    const std::uint64_t dv = r.positive_integer("linear_value_head_dim", u32_max);
    const std::uint64_t k = r.positive_integer("linear_conv_kernel_dim", u32_max);
    const std::uint64_t qk = times(2, times(nk, dk));
    const std::uint64_t conv_dim = sum({qk, times(nv, dv)});
    // Gated DeltaNet mixer (transformers' Qwen3NextGatedDeltaNet): in_proj_qkvz, in_proj_ba, a
    // depthwise conv1d of K taps, dt_bias and A_log per value head, a gated RMSNorm of dv,
    // out_proj.
    return {.conv_values = times(k - 1, conv_dim),
            .ssm_values = times(nv, times(dk, dv)),
            .mixer_params =
                sum({times(hidden, sum({qk, times(2, times(nv, dv))})), times(hidden, times(2, nv)),
                     times(conv_dim, k), times(2, nv), dv, times(times(nv, dv), hidden)})};
}

/// A Mamba-2 layer (Granite-4.0-H): mamba_n_heads (nh) heads of mamba_d_head (p), mamba_n_groups
/// (g) groups of B and C of mamba_d_state (N), a conv of mamba_d_conv (K) taps over d_inner =
/// mamba_expand x hidden = nh x p channels plus B and C.
[[nodiscard]] inline RecurrentShape mamba2_layer(const JsonReader& r, std::uint64_t hidden) {
    const std::uint64_t nh = r.positive_integer("mamba_n_heads", u32_max);
    const std::uint64_t n_state = r.positive_integer("mamba_d_state", u32_max);
    const std::uint64_t g = r.positive_integer("mamba_n_groups", u32_max);
    const std::uint64_t k = r.positive_integer("mamba_d_conv", u32_max);
    const std::uint64_t expand = r.positive_integer("mamba_expand", u32_max);
    const std::uint64_t expanded = times(expand, hidden);
    // GraniteMoeHybridConfig: mamba_d_head "auto" is mamba_expand x hidden / mamba_n_heads.
    const std::uint64_t p =
        is_auto(r, "mamba_d_head") ? expanded / nh : r.positive_integer("mamba_d_head", u32_max);
    const std::uint64_t d_inner = times(nh, p);
    // GraniteMoeHybridConfig checks the two spellings of d_inner agree.
    if (expanded != d_inner)
        r.fail("mamba_d_head",
               "mamba_n_heads x mamba_d_head equal to mamba_expand x hidden_size (" +
                   std::to_string(expanded) + ")",
               std::to_string(p) + " (" + std::to_string(nh) + " x " + std::to_string(p) + " = " +
                   std::to_string(d_inner) + ")");
    if (nh % g != 0)
        r.fail("mamba_n_groups", "a divisor of the " + std::to_string(nh) + " mamba heads",
               std::to_string(g));
    const bool conv_bias = r.optional_boolean("mamba_conv_bias").value_or(true);
    const bool proj_bias = r.optional_boolean("mamba_proj_bias").value_or(false);
    const std::uint64_t conv_dim = sum({d_inner, times(2, times(g, n_state))});
    // vLLM's MambaStateShapeCalculator.mamba2_state_shape: conv state (K - 1) x conv_dim, SSM
    // state nh x p x N.
    const std::uint64_t conv_state = times(k - 1, conv_dim);
    const std::uint64_t ssm_state = times(d_inner, n_state);
    // MambaMixer2 (vLLM mamba_mixer2.py, transformers' GraniteMoeHybridMambaLayer): in_proj to
    // gate, x/B/C and dt; a depthwise conv1d of K taps; dt_bias, A_log and D per head; the gated
    // RMSNorm over d_inner; out_proj.
    const std::uint64_t in_width = sum({d_inner, conv_dim, nh});
    const std::uint64_t mixer = sum({times(hidden, in_width), proj_bias ? in_width : 0,
                                     times(conv_dim, k), conv_bias ? conv_dim : 0, times(3, nh),
                                     d_inner, times(d_inner, hidden), proj_bias ? hidden : 0});
    return {.conv_values = conv_state, .ssm_values = ssm_state, .mixer_params = mixer};
}

/// A Mamba-1 layer (Jamba): d_inner = mamba_expand x hidden channels, mamba_d_state (N),
/// mamba_d_conv (K) taps, mamba_dt_rank (R).
[[nodiscard]] inline RecurrentShape mamba1_layer(const JsonReader& r, std::uint64_t hidden) {
    const std::uint64_t n_state = r.positive_integer("mamba_d_state", u32_max);
    const std::uint64_t k = r.positive_integer("mamba_d_conv", u32_max);
    const std::uint64_t expand = r.positive_integer("mamba_expand", u32_max);
    // JambaConfig: mamba_dt_rank "auto" (its default) is ceil(hidden / 16).
    const std::uint64_t rank = r.contains("mamba_dt_rank") && !is_auto(r, "mamba_dt_rank")
                                   ? r.positive_integer("mamba_dt_rank", u32_max)
                                   : hidden / 16 + (hidden % 16 != 0 ? 1 : 0);
    const bool conv_bias = r.optional_boolean("mamba_conv_bias").value_or(true);
    const bool proj_bias = r.optional_boolean("mamba_proj_bias").value_or(false);
    const std::uint64_t d_inner = times(expand, hidden);
    // vLLM's MambaStateShapeCalculator.mamba1_state_shape: conv d_inner x (K - 1), SSM
    // d_inner x N.
    const std::uint64_t conv_state = times(k - 1, d_inner);
    const std::uint64_t ssm_state = times(d_inner, n_state);
    // JambaMambaMixer (transformers): in_proj to x and gate, a depthwise conv1d, x_proj to dt, B
    // and C, dt_proj (with bias), A_log (d_inner x N), D, out_proj, and Jamba's RMSNorms on dt,
    // B and C.
    const std::uint64_t bc = times(2, n_state);
    const std::uint64_t mixer =
        sum({times(hidden, times(2, d_inner)), proj_bias ? times(2, d_inner) : 0, times(d_inner, k),
             conv_bias ? d_inner : 0, times(d_inner, sum({rank, bc})), times(rank, d_inner),
             d_inner, times(d_inner, n_state), d_inner, times(d_inner, hidden),
             proj_bias ? hidden : 0, rank, bc});
    return {.conv_values = conv_state, .ssm_values = ssm_state, .mixer_params = mixer};
}

/// A recurrent layer's state in bytes: the conv state at state_element_bytes, the SSM state at
/// ssm_state_element_bytes (0: the same), as vLLM's MambaStateDtypeCalculator pairs them.
[[nodiscard]] inline std::uint64_t state_bytes(const RecurrentShape& shape,
                                               const HfImportOptions& o) {
    const std::uint64_t ssm_bytes =
        o.ssm_state_element_bytes != 0 ? o.ssm_state_element_bytes : o.state_element_bytes;
    return detail::add(detail::mul(shape.conv_values, o.state_element_bytes, "a layer's state"),
                       detail::mul(shape.ssm_values, ssm_bytes, "a layer's state"),
                       "a layer's state");
}

}  // namespace detail::hf

}  // namespace kvplan
