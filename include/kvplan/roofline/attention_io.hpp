#pragma once

// Prefill with and without fused attention. The prefill bound (roofline/prefill.hpp) counts the
// weights read and the KV written: a fused, FlashAttention-style kernel keeps the attention scores
// in on-chip memory, so nothing else of attention need cross HBM. An unfused kernel does what the
// textbook formula says (Dao et al. 2022, "FlashAttention", Algorithm 0): per head and layer it
// writes the N x N scores S = Q K^T to HBM, reads them for the softmax, writes the probabilities
// P, and reads them again for P V:
//
//     score traffic = 4 x N^2 x heads on the rank x attention layers x activation element
//
// per prompt of N tokens. The square is whole: a causal or windowed mask is applied to a
// materialised S, it does not shrink it. The TTFT bound of each is max(bytes / peak bandwidth,
// FLOPs / peak FLOP/s) on the slowest stage; the FLOPs are the same.

#include <algorithm>
#include <array>
#include <cstdint>

#include "../budget/replica.hpp"
#include "../detail/checked.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "prefill.hpp"
#include "step_cost.hpp"

namespace kvplan {

/// A prefill's HBM traffic and TTFT bound with a fused attention kernel and with an unfused one.
struct PrefillAttention {
    std::uint64_t prompt_tokens = 0;
    std::uint64_t prompts = 0;
    PrefillBound fused{};  ///< prefill_bound: the scores never leave the chip
    /// Per stage, a rank's N x N traffic over its prompts: 4 x N^2 x heads x layers x element.
    std::array<Bytes, max_pipeline_stages> score_bytes{};
    std::uint32_t unfused_limiting_stage = 0;
    Bytes fused_bytes{};    ///< the fused limiting stage's bytes: weights read + KV written
    Bytes unfused_bytes{};  ///< the unfused limiting stage's bytes: the same + score_bytes
    Seconds unfused_memory_time{};
    Seconds unfused_compute_time{};
    Seconds unfused_ttft{};  ///< the slowest stage, unfused
    Bound unfused_bound = Bound::memory;
    /// The fused TTFT bound (fused.ttft).
    [[nodiscard]] constexpr Seconds fused_ttft() const noexcept { return fused.ttft; }
    /// unfused_bytes / fused_bytes: how many times the fused prefill's bytes the unfused one moves
    /// (0 when the fused one moves none).
    [[nodiscard]] constexpr double unfused_bytes_ratio() const noexcept {
        return fused_bytes.is_zero() ? 0.0 : unfused_bytes.in(B) / fused_bytes.in(B);
    }
};

namespace detail {

/// Attention layers of shard `s` (full, sliding, chunked or MLA: each scores its queries).
[[nodiscard]] constexpr std::uint64_t attention_layers(const Model& m, const Shard& s) {
    std::uint64_t n = 0;
    for (std::uint32_t i = s.first_layer; i < shard_end(m, s); ++i) {
        switch (m.layer(i).kind) {
            case CacheKind::full_attention:
            case CacheKind::sliding_window:
            case CacheKind::chunked_local:
            case CacheKind::mla_latent:
                ++n;
                break;
            case CacheKind::constant_state:
            case CacheKind::shared:
            case CacheKind::mlp_only:
                break;
        }
    }
    return n;
}

}  // namespace detail

/// `prompts` prompts of `prompt_tokens` each prefilled on `r` with and without fused attention.
/// Throws as prefill_bound, and OverflowError when the score traffic passes 2^64 bytes.
[[nodiscard]] constexpr PrefillAttention prefill_attention(const Replica& r,
                                                           std::uint64_t prompt_tokens,
                                                           std::uint64_t prompts = 1,
                                                           const RooflineOptions& o = {}) {
    PrefillAttention a;
    a.prompt_tokens = prompt_tokens;
    a.prompts = prompts;
    a.fused = prefill_bound(r, prompt_tokens, prompts, o);
    a.fused_bytes = a.fused.stages[a.fused.limiting_stage].bytes();
    const Layout l = r.layout();
    const std::uint64_t square = detail::mul(prompt_tokens, prompt_tokens, "a score matrix");
    for (std::uint32_t s = 0; s < a.fused.num_stages; ++s) {
        const Shard sh = l.stage(s);
        const std::uint64_t heads = r.model.config().num_heads / sh.tp;
        const std::uint64_t per_prompt =
            detail::mul(detail::mul(4, square, "a score matrix"),
                        detail::mul(heads, detail::attention_layers(r.model, sh), "heads x layers"),
                        "the score traffic");
        a.score_bytes[s] = o.activation_element *
                           detail::mul(per_prompt, a.fused.dp_rank_prompts, "the score traffic");
        const StageStep& st = a.fused.stages[s];
        const Bytes bytes = st.bytes() + a.score_bytes[s];
        const Seconds memory = bytes / r.gpu.memory_bandwidth;
        const Seconds time = std::max(memory, st.compute_time);
        if (s == 0 || time > a.unfused_ttft) {
            a.unfused_limiting_stage = s;
            a.unfused_bytes = bytes;
            a.unfused_memory_time = memory;
            a.unfused_compute_time = st.compute_time;
            a.unfused_ttft = time;
            a.unfused_bound = st.compute_time > memory ? Bound::compute : Bound::memory;
        }
    }
    return a;
}

}  // namespace kvplan
