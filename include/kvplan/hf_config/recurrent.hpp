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

/// The field names of a Mamba-2 layer's shape, which each family spells its own way.
struct Mamba2Fields {
    std::string_view heads, head_dim, state, groups, conv, expand, conv_bias, proj_bias;
    /// The config class requires heads x head_dim == expand x hidden (Granite, Mamba2Config);
    /// NemotronHConfig does not: its mixer is heads x head_dim wide whatever expand says.
    bool expand_checked = true;
};

/// Granite-4.0-H (GraniteMoeHybridConfig).
inline constexpr Mamba2Fields granite_mamba2{"mamba_n_heads",   "mamba_d_head",   "mamba_d_state",
                                             "mamba_n_groups",  "mamba_d_conv",   "mamba_expand",
                                             "mamba_conv_bias", "mamba_proj_bias"};
/// Nemotron-H (NemotronHConfig): in_proj and out_proj take use_bias.
inline constexpr Mamba2Fields nemotron_mamba2{"mamba_num_heads", "mamba_head_dim", "ssm_state_size",
                                              "n_groups",        "conv_kernel",    "expand",
                                              "use_conv_bias",   "use_bias",       false};
/// Mamba-2 and Codestral Mamba (Mamba2Config).
inline constexpr Mamba2Fields plain_mamba2{"num_heads",   "head_dim", "state_size",    "n_groups",
                                           "conv_kernel", "expand",   "use_conv_bias", "use_bias"};

/// A Mamba-2 layer: `heads` (nh) heads of `head_dim` (p), `groups` (g) groups of B and C of
/// `state` (N), a conv of `conv` (K) taps over d_inner = expand x hidden = nh x p channels plus B
/// and C (the fields as `f` spells them).
[[nodiscard]] inline RecurrentShape mamba2_layer(const JsonReader& r, std::uint64_t hidden,
                                                 const Mamba2Fields& f = granite_mamba2) {
    const std::uint64_t nh = r.positive_integer(f.heads, u32_max);
    const std::uint64_t n_state = r.positive_integer(f.state, u32_max);
    const std::uint64_t g = r.positive_integer(f.groups, u32_max);
    const std::uint64_t k = r.positive_integer(f.conv, u32_max);
    const std::uint64_t expand = f.expand_checked ? r.positive_integer(f.expand, u32_max) : 0;
    const std::uint64_t expanded = times(expand, hidden);
    // GraniteMoeHybridConfig: mamba_d_head "auto" is mamba_expand x hidden / mamba_n_heads.
    const std::uint64_t p =
        is_auto(r, f.head_dim) ? expanded / nh : r.positive_integer(f.head_dim, u32_max);
    const std::uint64_t d_inner = times(nh, p);
    // The config classes check that the two spellings of d_inner agree.
    if (f.expand_checked && expanded != d_inner)
        r.fail(f.head_dim,
               std::string(f.heads) + " x " + std::string(f.head_dim) + " equal to " +
                   std::string(f.expand) + " x hidden_size (" + std::to_string(expanded) + ")",
               std::to_string(p) + " (" + std::to_string(nh) + " x " + std::to_string(p) + " = " +
                   std::to_string(d_inner) + ")");
    if (nh % g != 0)
        r.fail(f.groups, "a divisor of the " + std::to_string(nh) + " mamba heads",
               std::to_string(g));
    const bool conv_bias = r.optional_boolean(f.conv_bias).value_or(true);
    const bool proj_bias = r.optional_boolean(f.proj_bias).value_or(false);
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

/// The field names of a Mamba-1 layer's shape, and whether it norms dt, B and C with weights.
struct Mamba1Fields {
    std::string_view state, conv, expand, dt_rank, conv_bias, proj_bias;
    bool dt_bc_norms;
    /// A field that states d_inner itself and wins over expand x hidden when present
    /// (MambaConfig's intermediate_size: Falcon-Mamba-7B says expand 16 but intermediate_size
    /// 8192, which is what transformers and vLLM build); empty: none.
    std::string_view intermediate{};
};

/// Jamba (JambaConfig): its mixer norms dt, B and C with learned weights.
inline constexpr Mamba1Fields jamba_mamba1{"mamba_d_state",
                                           "mamba_d_conv",
                                           "mamba_expand",
                                           "mamba_dt_rank",
                                           "mamba_conv_bias",
                                           "mamba_proj_bias",
                                           true};
/// Mamba and Falcon-Mamba (MambaConfig, FalconMambaConfig): Falcon-Mamba's RMS norms on dt, B
/// and C carry no weights, Mamba has none.
inline constexpr Mamba1Fields plain_mamba1{
    "state_size",    "conv_kernel", "expand", "time_step_rank",
    "use_conv_bias", "use_bias",    false,    "intermediate_size"};

/// A Mamba-1 layer: d_inner = expand x hidden channels, a state of N, a conv of K taps, a dt rank
/// of R (the fields as `f` spells them).
[[nodiscard]] inline RecurrentShape mamba1_layer(const JsonReader& r, std::uint64_t hidden,
                                                 const Mamba1Fields& f = jamba_mamba1) {
    const std::uint64_t n_state = r.positive_integer(f.state, u32_max);
    const std::uint64_t k = r.positive_integer(f.conv, u32_max);
    const std::uint64_t expand = r.positive_integer(f.expand, u32_max);
    // JambaConfig and MambaConfig: a dt rank of "auto" (the default) is ceil(hidden / 16).
    const std::uint64_t rank = r.contains(f.dt_rank) && !is_auto(r, f.dt_rank)
                                   ? r.positive_integer(f.dt_rank, u32_max)
                                   : hidden / 16 + (hidden % 16 != 0 ? 1 : 0);
    const bool conv_bias = r.optional_boolean(f.conv_bias).value_or(true);
    const bool proj_bias = r.optional_boolean(f.proj_bias).value_or(false);
    const std::uint64_t d_inner = !f.intermediate.empty() && r.has(f.intermediate)
                                      ? r.positive_integer(f.intermediate, u32_max)
                                      : times(expand, hidden);
    // vLLM's MambaStateShapeCalculator.mamba1_state_shape: conv d_inner x (K - 1), SSM
    // d_inner x N.
    const std::uint64_t conv_state = times(k - 1, d_inner);
    const std::uint64_t ssm_state = times(d_inner, n_state);
    // MambaMixer (vLLM mamba_mixer.py; transformers' JambaMambaMixer and MambaMixer): in_proj to
    // x and gate, a depthwise conv1d, x_proj to dt, B and C, dt_proj (with bias), A_log
    // (d_inner x N), D, out_proj, and (Jamba only) RMSNorms with weights on dt, B and C.
    const std::uint64_t bc = times(2, n_state);
    const std::uint64_t mixer =
        sum({times(hidden, times(2, d_inner)), proj_bias ? times(2, d_inner) : 0, times(d_inner, k),
             conv_bias ? d_inner : 0, times(d_inner, sum({rank, bc})), times(rank, d_inner),
             d_inner, times(d_inner, n_state), d_inner, times(d_inner, hidden),
             proj_bias ? hidden : 0, f.dt_bc_norms ? rank : 0, f.dt_bc_norms ? bc : 0});
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
