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
// layers by output. CPU-cached adapters (vLLM's --max-cpu-loras, SGLang's --max-loaded-loras) are
// host memory and cost no HBM: kvplan checks them as the engines do and prints them in the command.
// SGLang allocates its pool only for the modules adapters target (--lora-target-modules,
// python/sglang/srt/lora/utils.py get_normalized_target_modules: q, k and v share qkv_proj's
// stack, gate and up gate_up_proj's); vLLM wraps every layer it supports, whatever they target.
// That includes the router of a MoE block (its `gate`, a ReplicatedLinear or its subclass
// GateLinear): vllm/lora/model_manager.py _create_lora_modules wraps every module whose name ends
// as a LinearBase's does (vllm/lora/utils.py get_supported_lora_modules), skipping only the
// `mixer.gate` of non-gated MoE models (Nemotron-H, whose Mamba layers kvplan refuses anyway),
// and vllm/lora/layers/gate_linear.py GateLinearWithLoRA (ReplicatedLinearWithLoRA) wraps
// GateLinear whatever --fully-sharded-loras says: per slot A rank x hidden and B experts x rank,
// whole on every GPU (base_linear.py create_lora_weights, ReplicatedLinear). SGLang's pool has no
// router stack (its target modules name none), so only vLLM's rules charge it.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "../detail/checked.hpp"
#include "../error.hpp"
#include "../kv_bytes.hpp"  // detail::shard_end
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "../weights.hpp"
#include "../weights/tensors.hpp"  // detail::shared_expert_width

namespace kvplan {

/// The stacks an adapter slot holds, as SGLang groups target modules (a bit each).
enum LoraTarget : std::uint8_t {
    lora_qkv = 1U << 0,      ///< qkv_proj (q_proj, k_proj, v_proj)
    lora_o = 1U << 1,        ///< o_proj
    lora_gate_up = 1U << 2,  ///< gate_up_proj (gate_proj, up_proj), experts' w13 too
    lora_down = 1U << 3,     ///< down_proj, experts' w2 too
    lora_all = lora_qkv | lora_o | lora_gate_up | lora_down,
};

/// The LoRA knobs of vLLM (vllm/config/lora.py, LoRAConfig) and SGLang (server_args.py).
struct LoraOptions {
    std::uint32_t max_loras = 0;       ///< adapter slots on the GPU; 0: LoRA off
    std::uint32_t max_lora_rank = 16;  ///< vLLM's default
    bool fully_sharded = false;        ///< --fully-sharded-loras
    /// Adapters cached in host memory (vLLM's max_cpu_loras, SGLang's max_loaded_loras); 0: the
    /// engine's default, max_loras. Host memory: no GPU byte depends on it.
    std::uint32_t max_cpu_loras = 0;
    std::uint8_t targets = lora_all;  ///< LoraTarget bits; SGLang's --lora-target-modules
    friend constexpr bool operator==(const LoraOptions&, const LoraOptions&) = default;
};

/// The LoraTarget bits of a list of module names (split at commas and spaces) as SGLang reads
/// --lora-target-modules: "all", q_proj, k_proj, v_proj, qkv_proj, o_proj, gate_proj, up_proj,
/// gate_up_proj, down_proj; a prefix such as "self_attn." is dropped. Refused (InvalidInput): an
/// empty list, or a module kvplan does not size (embed_tokens, lm_head: their stacks depend on
/// the vocabulary adapters add).
[[nodiscard]] inline std::uint8_t lora_targets(std::string_view where, std::string_view list) {
    std::uint8_t bits = 0;
    std::size_t at = 0;
    while (at < list.size()) {
        const std::size_t end = std::min(list.find_first_of(", ", at), list.size());
        const std::string_view full = list.substr(at, end - at);
        at = end + 1;
        if (full.empty()) continue;
        const std::size_t dot = full.rfind('.');
        const std::string_view n = dot == std::string_view::npos ? full : full.substr(dot + 1);
        if (n == "all")
            bits |= lora_all;
        else if (n == "q_proj" || n == "k_proj" || n == "v_proj" || n == "qkv_proj")
            bits |= lora_qkv;
        else if (n == "o_proj")
            bits |= lora_o;
        else if (n == "gate_proj" || n == "up_proj" || n == "gate_up_proj")
            bits |= lora_gate_up;
        else if (n == "down_proj")
            bits |= lora_down;
        else
            detail::throw_field_error<InvalidInput>(
                where, "lora_target_modules",
                "all, q_proj, k_proj, v_proj, qkv_proj, o_proj, gate_proj, up_proj, "
                "gate_up_proj or down_proj",
                std::string(full));
    }
    if (bits == 0)
        detail::throw_field_error<InvalidInput>(where, "lora_target_modules", "at least one module",
                                                "none");
    return bits;
}

/// SGLang's names of the stacks `bits` selects, as its --lora-target-modules takes them.
[[nodiscard]] inline std::string lora_target_names(std::uint8_t bits, std::string_view sep = " ") {
    if ((bits & lora_all) == lora_all) return "all";
    std::string s;
    const auto add = [&](LoraTarget t, std::string_view n) {
        if ((bits & t) == 0) return;
        if (!s.empty()) s += sep;
        s += n;
    };
    add(lora_qkv, "qkv_proj");
    add(lora_o, "o_proj");
    add(lora_gate_up, "gate_up_proj");
    add(lora_down, "down_proj");
    return s;
}

/// Checks `o` as the engines do: vLLM's LoRAConfig refuses max_cpu_loras below max_loras, as
/// SGLang refuses max_loaded_loras below max_loras_per_batch. Throws InvalidInput.
constexpr void check_lora_options(const LoraOptions& o) {
    if (o.max_cpu_loras != 0 && o.max_cpu_loras < o.max_loras)
        detail::throw_field_error<InvalidInput>(
            "LoRA", "max_cpu_loras", detail::text("at least max_loras (", o.max_loras, ")"),
            detail::text(o.max_cpu_loras));
    if ((o.targets & lora_all) == 0 || (o.targets & ~lora_all) != 0)
        detail::throw_field_error<InvalidInput>("LoRA", "targets",
                                                "qkv_proj, o_proj, gate_up_proj or down_proj bits",
                                                detail::text(unsigned{o.targets}));
}

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
    check_lora_options(o);
    // A stack not targeted is not allocated (SGLang's pool); every one is under vLLM's default.
    const auto targeted = [&](LoraTarget t) -> std::uint64_t { return (o.targets & t) != 0; };
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
    const bool router_gate = l.config().rules == ParallelRules::vllm;
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
                        targeted(lora_qkv) *
                            detail::lora_slot_elements(
                                3, a_rows(tp), h, q + kv * (spec.k_head_dim + spec.v_head_dim), r),
                        "LoRA");
                // o_proj: row-parallel, A over the rank's heads, B over the hidden size
                per_slot = add(
                    per_slot,
                    targeted(lora_o) * detail::lora_slot_elements(
                                           1, r, std::uint64_t{c.num_heads / tp} * spec.v_head_dim,
                                           row_out(h, tp), r),
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
                    "memory is modelled; LoRA on this model is not: serve it without adapters)",
                    spec.kind == CacheKind::mla_latent ? "an MLA layer"
                    : spec.kind == CacheKind::shared
                        ? "a layer reading another layer's KV cache"
                        : "a constant-state mixer (Mamba or linear attention)");
        }
        if (!m.has_mlp(i)) continue;
        if (!c.moe.is_moe_layer(i)) {
            const std::uint64_t inter = ceil_div(c.intermediate_size, p.dense_mlp_tp);
            per_slot = add(
                per_slot,
                targeted(lora_gate_up) *
                    detail::lora_slot_elements(gated, a_rows(p.dense_mlp_tp), h, gated * inter, r),
                "LoRA");
            per_slot = add(per_slot,
                           targeted(lora_down) * detail::lora_slot_elements(
                                                     1, r, inter, row_out(h, p.dense_mlp_tp), r),
                           "LoRA");
            continue;
        }
        // vLLM's router gate: replicated, A over the whole hidden size and B over every expert.
        if (router_gate)
            per_slot = add(per_slot, detail::lora_slot_elements(1, r, h, c.moe.experts, r), "LoRA");
        // Routed experts: per local expert, w13 (gated slices) and w2, A and B each.
        const std::uint64_t ei = ceil_div(c.moe.expert_intermediate_size, p.expert_tp);
        const std::uint64_t one_expert =
            add(targeted(lora_gate_up) * mul(gated, r * h + ei * r, "LoRA experts"),
                targeted(lora_down) * (r * ei + h * r), "LoRA experts");
        per_slot = add(per_slot, mul(one_expert, p.experts_per_gpu, "LoRA experts"), "LoRA");
        if (const std::uint64_t sw = detail::shared_expert_width(c.moe); sw != 0) {
            const std::uint64_t si = ceil_div(sw, p.shared_expert_tp);
            per_slot = add(
                per_slot,
                targeted(lora_gate_up) *
                    detail::lora_slot_elements(gated, a_rows(p.shared_expert_tp), h, gated * si, r),
                "LoRA");
            per_slot = add(per_slot,
                           targeted(lora_down) * detail::lora_slot_elements(
                                                     1, r, si, row_out(h, p.shared_expert_tp), r),
                           "LoRA");
        }
    }
    const std::uint64_t element = w.format == WeightFormat::fp32 ? 4 : 2;  // lora_dtype "auto"
    return Bytes::exactly(mul(mul(per_slot, o.max_loras, "LoRA slots"), element, "LoRA bytes"));
}

}  // namespace kvplan
