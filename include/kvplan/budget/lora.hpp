#pragma once

// The GPU memory multi-LoRA serving holds before any request arrives. With --enable-lora, vLLM
// wraps every targeted linear layer and allocates, per layer, a stack of max_loras adapter slots
// of rank max_lora_rank in the model's dtype, whether or not an adapter is loaded; the stacks are
// created with the model, so they count as weights in "Model loading took". Shapes follow
// vllm/lora/layers/base_linear.py (create_lora_weights), column_parallel_linear.py
// (MergedColumnParallelLinearWithLoRA: one A and one B per packed slice, A over the whole input,
// B over the rank's output), row_parallel_linear.py (A over the rank's input, B over the whole
// output) and fused_moe.py (FusedMoEWithLoRA: per local expert, w13 and w2). With
// --fully-sharded-loras, A of column-parallel layers is split by rank and B of row-parallel
// layers by output. CPU-cached adapters (--max-cpu-loras) are host memory and cost no HBM.

#include <algorithm>
#include <cstdint>

#include "../detail/checked.hpp"
#include "../error.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "../weights.hpp"
#include "../weights/tensors.hpp"  // detail::shared_expert_width

namespace kvplan {

/// vLLM's LoRA knobs that change GPU memory (vllm/config/lora.py, LoRAConfig).
struct LoraOptions {
    std::uint32_t max_loras = 0;       ///< adapter slots on the GPU; 0: LoRA off
    std::uint32_t max_lora_rank = 16;  ///< vLLM's default
    bool fully_sharded = false;        ///< --fully-sharded-loras
    friend constexpr bool operator==(const LoraOptions&, const LoraOptions&) = default;
};

namespace detail {

/// Elements of one adapter slot's A and B of a layer of `slices` packed outputs, each `out`
/// wide on the rank, reading `in` inputs on the rank: slices x (a_rows x in + out x rank).
[[nodiscard]] constexpr std::uint64_t lora_slot_elements(std::uint64_t slices, std::uint64_t a_rows,
                                                         std::uint64_t in, std::uint64_t out_total,
                                                         std::uint64_t rank) {
    return add(mul(mul(slices, a_rows, "LoRA A"), in, "LoRA A"), mul(out_total, rank, "LoRA B"),
               "a LoRA slot");
}

}  // namespace detail

/// The LoRA stacks on the fullest rank of stage `stage`: zero when `o.max_loras` is 0. Refused
/// (InvalidInput) for mixers whose LoRA layers kvplan does not model: multi-head latent
/// attention, shared-KV layers and constant-state mixers.
[[nodiscard]] constexpr Bytes lora_bytes_on_rank(const Model& m, const Layout& l,
                                                 std::uint32_t stage, const LoraOptions& o,
                                                 const WeightOptions& w = {}) {
    using detail::add;
    using detail::ceil_div;
    using detail::mul;
    if (o.max_loras == 0) return Bytes{};
    if (o.max_lora_rank == 0)
        detail::throw_field_error<InvalidInput>("LoRA", "max_lora_rank", "at least 1", "0");
    const ModelConfig& c = m.config();
    const Placement& p = l.placement();
    const Shard s = l.stage(stage);
    const std::uint64_t r = o.max_lora_rank, h = c.hidden_size;
    const auto a_rows = [&](std::uint32_t tp) -> std::uint64_t {
        return o.fully_sharded ? ceil_div(r, tp) : r;
    };
    const auto row_out = [&](std::uint64_t out, std::uint32_t tp) -> std::uint64_t {
        return o.fully_sharded ? ceil_div(out, tp) : out;
    };
    const std::uint64_t gated = c.mlp == MlpKind::gated ? 2 : 1;
    std::uint64_t per_slot = 0;  // elements of one adapter slot on the rank
    for (std::uint32_t i = s.first_layer; i < detail::shard_end(m, s); ++i) {
        const CacheSpec& spec = m.layer(i);
        switch (spec.kind) {
            case CacheKind::full_attention:
            case CacheKind::sliding_window:
            case CacheKind::chunked_local: {
                const std::uint32_t tp = p.attention_tp;
                const std::uint64_t q = std::uint64_t{c.num_heads / tp} * spec.k_head_dim;
                const std::uint64_t kv = kv_heads_per_rank(spec.kv_heads, tp);
                // qkv_proj: three slices (q, k, v), A over the hidden size
                per_slot =
                    add(per_slot,
                        detail::lora_slot_elements(3, a_rows(tp), h,
                                                   q + kv * (spec.k_head_dim + spec.v_head_dim), r),
                        "LoRA");
                // o_proj: row-parallel, A over the rank's heads, B over the hidden size
                per_slot = add(
                    per_slot,
                    detail::lora_slot_elements(
                        1, r, std::uint64_t{c.num_heads / tp} * spec.v_head_dim, row_out(h, tp), r),
                    "LoRA");
                break;
            }
            case CacheKind::mlp_only:
                break;
            case CacheKind::mla_latent:
            case CacheKind::shared:
            case CacheKind::constant_state:
                detail::throw_field_error<InvalidInput>(
                    detail::model_where(c), detail::text("layer ", i),
                    "attention with query, key and value projections (the layers whose LoRA "
                    "memory is modelled)",
                    "MLA, a shared-KV layer or a constant-state mixer");
        }
        if (!m.has_mlp(i)) continue;
        if (!c.moe.is_moe_layer(i)) {
            const std::uint64_t inter = ceil_div(c.intermediate_size, p.dense_mlp_tp);
            per_slot =
                add(per_slot,
                    detail::lora_slot_elements(gated, a_rows(p.dense_mlp_tp), h, gated * inter, r),
                    "LoRA");
            per_slot =
                add(per_slot,
                    detail::lora_slot_elements(1, r, inter, row_out(h, p.dense_mlp_tp), r), "LoRA");
            continue;
        }
        // Routed experts: per local expert, w13 (gated slices) and w2, A and B each.
        const std::uint64_t ei = ceil_div(c.moe.expert_intermediate_size, p.expert_tp);
        const std::uint64_t one_expert =
            add(mul(gated, r * h + ei * r, "LoRA experts"), r * ei + h * r, "LoRA experts");
        per_slot = add(per_slot, mul(one_expert, p.experts_per_gpu, "LoRA experts"), "LoRA");
        if (const std::uint64_t sw = detail::shared_expert_width(c.moe); sw != 0) {
            const std::uint64_t si = ceil_div(sw, p.shared_expert_tp);
            per_slot =
                add(per_slot,
                    detail::lora_slot_elements(gated, a_rows(p.shared_expert_tp), h, gated * si, r),
                    "LoRA");
            per_slot = add(per_slot,
                           detail::lora_slot_elements(1, r, si, row_out(h, p.shared_expert_tp), r),
                           "LoRA");
        }
    }
    const std::uint64_t element = w.format == WeightFormat::fp32 ? 4 : 2;  // lora_dtype "auto"
    return Bytes::exactly(mul(mul(per_slot, o.max_loras, "LoRA slots"), element, "LoRA bytes"));
}

}  // namespace kvplan
