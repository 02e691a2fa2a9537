#pragma once

// Tensor and pipeline parallelism, per rank and never averaged. TP shards KV heads across ranks (a
// rank holds kv_heads / tp of them, or one replicated head when tp exceeds kv_heads, as vLLM does);
// PP gives each stage a contiguous run of layers, and the most-loaded stage sets a replica's capacity.

#include <cstdint>

#include "detail/message.hpp"
#include "error.hpp"
#include "fixed_array.hpp"
#include "model.hpp"

namespace kvplan {

inline constexpr std::size_t max_pipeline_stages = 64;

/// A parallel layout as a user states it. stage_layers all zero means the default split.
struct ParallelConfig {
    std::uint32_t tp = 1;
    std::uint32_t pp = 1;
    FixedArray<std::uint16_t, max_pipeline_stages> stage_layers{};  ///< layers per stage, if uneven by choice
};

/// What one rank holds: a contiguous run of layers [first_layer, end_layer) at a TP degree.
/// The default is the whole model on one GPU.
struct Shard {
    std::uint32_t tp = 1;
    std::uint32_t first_layer = 0;
    std::uint32_t end_layer = max_layers;  ///< clipped to the model's layer count
};

/// KV heads one TP rank holds: kv_heads / tp, or one (replicated) when tp >= kv_heads.
[[nodiscard]] constexpr std::uint32_t kv_heads_per_rank(std::uint32_t kv_heads,
                                                        std::uint32_t tp) noexcept {
    return tp >= kv_heads ? 1 : kv_heads / tp;
}

/// The layers per stage that vLLM uses without VLLM_PP_LAYER_PARTITION: an even split, with the
/// remainder given one each to the stages before the last (vllm/distributed/utils.py,
/// get_pp_indices), since the last stage also holds the LM head.
[[nodiscard]] constexpr std::uint32_t default_stage_layers(std::uint32_t num_layers, std::uint32_t pp,
                                                           std::uint32_t stage) noexcept {
    const std::uint32_t base = num_layers / pp;
    const std::uint32_t rem = num_layers % pp;
    // partitions[-i] += 1 for i in 2..rem+1: the rem stages ending just before the last one.
    const bool extra = stage + 1 < pp && stage + 1 + rem >= pp;
    return base + (extra ? 1 : 0);
}

/// A parallel layout checked against a model. Throws InvalidLayout naming the field.
class Layout {
   public:
    constexpr Layout(const Model& m, const ParallelConfig& p) : p_(p) {
        const auto where = [&] { return detail::model_where(m.config()); };
        if (p.tp == 0) detail::throw_field_error<InvalidLayout>(where(), "tp", ">= 1", "0");
        if (p.pp == 0) detail::throw_field_error<InvalidLayout>(where(), "pp", ">= 1", "0");
        // ranks() is 32-bit: tp x pp must not wrap it (a model with 2^31 heads could ask).
        if (std::uint64_t{p.tp} * p.pp > 0xFFFF'FFFFULL)
            detail::throw_field_error<InvalidLayout>(
                where(), "tp", "tp x pp at most 4294967295 GPUs",
                detail::text(std::uint64_t{p.tp} * p.pp));
        if (p.pp > max_pipeline_stages || p.pp > m.num_layers())
            detail::throw_field_error<InvalidLayout>(
                where(), "pp", "at most one stage per layer (and at most 64 stages)",
                detail::text(p.pp, " stages for ", m.num_layers(), " layers"));
        if (m.config().num_heads % p.tp != 0)
            detail::throw_field_error<InvalidLayout>(
                where(), "tp",
                detail::text("a divisor of the ", m.config().num_heads, " query heads"),
                detail::text(p.tp));
        const LayerStack& L = m.layers();
        for (std::uint32_t i = 0; i < L.num_specs; ++i) {
            const CacheSpec& s = L.specs[i];
            if (s.kind != CacheKind::full_attention && s.kind != CacheKind::sliding_window &&
                s.kind != CacheKind::chunked_local)
                continue;
            const bool ok = p.tp <= s.kv_heads ? s.kv_heads % p.tp == 0 : p.tp % s.kv_heads == 0;
            if (!ok)
                detail::throw_field_error<InvalidLayout>(
                    where(), "tp",
                    detail::text("a divisor or a multiple of the ", s.kv_heads, " KV heads"),
                    detail::text(p.tp));
        }
        bool explicit_split = false;
        for (std::uint32_t s = 0; s < max_pipeline_stages; ++s)
            explicit_split = explicit_split || p.stage_layers[s] != 0;
        std::uint32_t at = 0;
        for (std::uint32_t s = 0; s < p.pp; ++s) {
            const std::uint32_t n =
                explicit_split ? p.stage_layers[s] : default_stage_layers(m.num_layers(), p.pp, s);
            if (n == 0)
                detail::throw_field_error<InvalidLayout>(
                    where(), detail::text("stage_layers[", s, "]"), ">= 1 layer", "0");
            bounds_[s] = at;
            at += n;
        }
        if (explicit_split) {
            std::uint32_t extra = 0;
            for (std::uint32_t s = p.pp; s < max_pipeline_stages; ++s) extra += p.stage_layers[s];
            if (at != m.num_layers() || extra != 0)
                detail::throw_field_error<InvalidLayout>(
                    where(), "stage_layers",
                    detail::text("layers per stage summing to ", m.num_layers()),
                    detail::text(at + extra));
        }
        bounds_[p.pp] = at;
    }

    [[nodiscard]] constexpr std::uint32_t tp() const noexcept { return p_.tp; }
    [[nodiscard]] constexpr std::uint32_t pp() const noexcept { return p_.pp; }
    /// GPUs in the replica: tp x pp.
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept { return p_.tp * p_.pp; }
    [[nodiscard]] constexpr const ParallelConfig& config() const noexcept { return p_; }

    /// What each rank of pipeline stage `s` holds.
    [[nodiscard]] constexpr Shard stage(std::uint32_t s) const {
        KVPLAN_EXPECTS(s < p_.pp);
        return {p_.tp, bounds_[s], bounds_[s + 1]};
    }

   private:
    ParallelConfig p_;
    FixedArray<std::uint32_t, max_pipeline_stages + 1> bounds_{};
};

}  // namespace kvplan
