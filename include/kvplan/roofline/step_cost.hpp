#pragma once

// Roofline lower bounds for decode and prefill on a replica. A step cannot be faster than reading
// the bytes it must read at the GPU's peak memory bandwidth, nor than doing its FLOPs at the peak
// dense tensor throughput; on every rank the larger of the two bounds the step, and the slowest
// rank bounds the replica.
//
//   bytes read on a rank  = its weights, except the input embedding table (a lookup reads only the
//                           batch's rows, left out here so the bound stays a bound); for a MoE
//                           layer only the experts the batch touches, E x (1 - (1 - k/E)^B) in
//                           expectation for B tokens routed uniformly, not all E and not only k;
//                         + the KV cache of every sequence at its own length (windows cap sliding
//                           layers; constant state counts once).
//   FLOPs on a rank       = 2 x (parameters of the rank's matrix products one token uses) x B
//                           (for MoE, k experts per token), + attention: for each layer and
//                           sequence, 2 x heads x (k_dim + v_dim) x the tokens it attends to
//                           (MLA decodes in its absorbed form: 2 x heads x (2 x kv_lora_rank +
//                           qk_rope_head_dim) x tokens).
//
// The bound uses peak figures only. An achievable-efficiency factor gives an estimate beside it;
// the bound never uses one. Tensor-parallel all-reduce time is reported as its own figure and not
// added: it is not a lower bound on anything additive (it overlaps other work in some engines,
// and at small batches its latency, not its bandwidth, dominates, which a bandwidth figure does

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../budget/replica.hpp"
#include "../detail/checked.hpp"
#include "../detail/enum_table.hpp"
#include "../detail/scale.hpp"
#include "../engine/release.hpp"
#include "../gpu.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "../weights.hpp"

namespace kvplan {

/// Achievable fractions of peak bandwidth and of peak FLOP/s, for an estimate beside the bound.
struct Efficiency {
    double bandwidth = 1.0;  ///< in (0, 1]
    double compute = 1.0;    ///< in (0, 1]
};

/// What bounds a step.
enum class Bound : std::uint8_t { memory, compute };

/// Each bound's spelling.
inline constexpr FixedArray<detail::EnumName<Bound>, 2> bound_names{{
    {Bound::memory, "memory"},
    {Bound::compute, "compute"},
}};

/// "memory" or "compute".
[[nodiscard]] constexpr std::string_view name(Bound b) noexcept {
    return detail::enum_name(bound_names, b);
}

/// Options of the roofline.
struct RooflineOptions {
    /// The tensor-core type the matmuls run in; unset, the one the engine runs the replica's
    /// weights in on its GPU (matmul_compute).
    std::optional<ComputeDtype> compute{};
    Bytes activation_element =
        Bytes::exactly(2);  ///< bytes of one activation value (all-reduce messages)
    std::optional<Efficiency> efficiency{};  ///< an estimate beside the bound
    /// The vLLM release line whose kernels run (the estimate's expert tiles follow it); unset:
    /// vLLM's main branch.
    std::optional<EngineVersion> vllm_release{};
    /// TensorRT-LLM runs a TensorRT engine built by trtllm-build through its C++ executor (the
    /// runtime of NIM's and NeMo's TensorRT-LLM profiles), not its PyTorch backend (trtllm-serve's
    /// and the LLM API's default, which captures its decode steps in CUDA graphs: TorchLlmArgs'
    /// cuda_graph_config in tensorrt_llm/llmapi/llm_args.py). The executor captures none unless
    /// asked (ExtendedRuntimePerfKnobConfig's cudaGraphMode, false, in
    /// cpp/include/tensorrt_llm/executor/executor.h): the host enqueues every layer's kernels
    /// each step.
    bool trtllm_tensorrt_engine = false;
};

/// The tensor-core type vLLM runs the matmuls of weights in `w` in, on `gpu`: the weights' own
/// type where the GPU has tensor cores for it and the engine's kernel multiplies in it, else bf16
/// (fp16 and tf32 for fp16 and fp32 weights). The blocks' linear format decides (`w.format`):
/// - fp8: W8A8, activations quantized per token, on GPUs with an fp8 peak (compute capability 8.9
///   and up); without one vLLM runs FP8 Marlin, weight-only (Fp8LinearMethod, `use_marlin`, in
///   vllm/model_executor/layers/quantization/fp8.py).
/// - int8: W8A8 INT8 (the format's meaning here), on GPUs with an int8 peak.
/// - nvfp4: W4A4 on GPUs with an fp4 peak (Blackwell, ModelOptNvFp4LinearMethod in
///   vllm/model_executor/layers/quantization/modelopt.py); else Marlin, weight-only.
/// - int4 (AWQ, GPTQ) and mxfp4: weight-only kernels (Marlin; gpt-oss's MXFP4 experts with bf16
///   activations by default), bf16 compute.
[[nodiscard]] constexpr ComputeDtype matmul_compute(const WeightOptions& w,
                                                    const GpuSpec& gpu) noexcept {
    const auto own = [&](ComputeDtype d) {
        return gpu.dense(d).has_value() ? d : ComputeDtype::bf16;
    };
    switch (w.format) {
        case WeightFormat::fp8:
        case WeightFormat::mxfp8:  // block-scaled fp8 runs on the fp8 tensor cores
            return own(ComputeDtype::fp8);
        case WeightFormat::int8:
            return own(ComputeDtype::int8);
        case WeightFormat::nvfp4:
            return own(ComputeDtype::fp4);
        case WeightFormat::fp16:
            return own(ComputeDtype::fp16);
        case WeightFormat::fp32:
            return own(ComputeDtype::tf32);
        case WeightFormat::bf16:
        case WeightFormat::int4:
        case WeightFormat::mxfp4:
            return ComputeDtype::bf16;
    }
    return ComputeDtype::bf16;
}

/// `o` with its compute type resolved for `r` (matmul_compute when unset).
[[nodiscard]] constexpr RooflineOptions with_compute(RooflineOptions o, const Replica& r) noexcept {
    if (!o.compute) o.compute = matmul_compute(r.weights, r.gpu);
    return o;
}

namespace detail {
/// The compute type of options already resolved by with_compute (bf16 if not, as before).
[[nodiscard]] constexpr ComputeDtype compute_of(const RooflineOptions& o) noexcept {
    return o.compute.value_or(ComputeDtype::bf16);
}
}  // namespace detail

/// Expected distinct experts a batch of `tokens` routes to in one MoE layer of `experts` experts,
/// `k` per token, uniformly: E x (1 - (1 - k/E)^B).
[[nodiscard]] constexpr double expected_experts_touched(std::uint32_t experts, std::uint32_t k,
                                                        std::uint64_t tokens) noexcept {
    if (experts == 0) return 0.0;
    const double miss = 1.0 - static_cast<double>(k) / static_cast<double>(experts);
    // (1 - k/E)^B by squaring.
    double p = 1.0, base = miss;
    for (std::uint64_t b = tokens; b != 0; b >>= 1) {
        if (b & 1U) p *= base;
        base *= base;
    }
    return static_cast<double>(experts) * (1.0 - p);
}

namespace detail {

/// Matrix-product parameters a rank of stage `stage` multiplies per token: the linear layers of
/// its layers (k of the routed experts per MoE layer) and, on the last stage, the LM head.
struct RankMatmulParams {
    /// Everything but the routed experts, per token of the rank's own sequences. A part split over
    /// more GPUs than the attention group (SGLang's dense MLP and LM head under dp attention) runs
    /// on the tokens of every attention group it spans, so it counts that many times.
    double dense = 0.0;
    /// The routed experts, per token of the whole batch that routes to the rank's experts: k
    /// experts of its expert_tp slice, times the share of the physical experts it holds.
    double routed = 0.0;
    /// Of `dense`, the LM head's (the last stage's rank only). An engine multiplies it for the
    /// positions it samples from, one a request of the step, not for every prompt token
    /// (detail::unsampled_head_flops).
    double head = 0.0;
};

/// The matmul parameters of a rank of every stage of `l`: alike layers are walked once.
[[nodiscard]] constexpr std::array<RankMatmulParams, max_pipeline_stages>
rank_matmul_params_per_stage(const Model& m, const Layout& l) {
    const ModelConfig& c = m.config();
    const Placement& pl = l.placement();
    const RankParts parts = rank_parts(pl);
    const bool all_experts = pl.experts_per_gpu == pl.physical_experts;
    const double expert_share = all_experts ? 1.0
                                            : static_cast<double>(pl.experts_per_gpu) /
                                                  static_cast<double>(pl.physical_experts);
    // Every sum is of integers below 2^53: exact in any order.
    const auto adder = [&](RankMatmulParams& p, double scale) {
        return [&p, scale, &parts, &pl, &c, all_experts, expert_share](const WeightTensor& t) {
            const bool matmul = t.linear || t.group == ParamGroup::lm_head;
            if (!matmul || t.cols == 1) return;  // vectors: norms and biases
            const std::uint32_t degree = degree_of(parts, t.group);
            const RankSlice sl = rank_slice(t, degree);
            const double per_copy = static_cast<double>(sl.rows) * static_cast<double>(sl.cols);
            if (t.group == ParamGroup::routed_experts) {
                const double per_token = per_copy * c.moe.experts_per_token;
                p.routed += (all_experts ? per_token : per_token * expert_share) * scale;
            } else {
                const double gathered =
                    degree > pl.attention_tp ? static_cast<double>(degree / pl.attention_tp) : 1.0;
                p.dense += per_copy * static_cast<double>(t.copies) * gathered * scale;
            }
        };
    };
    std::array<std::uint32_t, max_layer_classes> example{};
    std::array<bool, max_layer_classes> seen{};
    for (std::uint32_t i = 0; i < m.num_layers(); ++i) {
        const std::uint32_t k = layer_class(m, i);
        if (!seen[k]) example[k] = i;
        seen[k] = true;
    }
    std::array<RankMatmulParams, max_layer_classes> per_class{};
    for (std::uint32_t k = 0; k < max_layer_classes; ++k)
        if (seen[k]) for_each_class_tensor(m, example[k], adder(per_class[k], 1.0));
    const bool extras = c.extra_params != 0;
    std::array<RankMatmulParams, max_pipeline_stages> out{};
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const Shard s = l.stage(st);
        RankMatmulParams& p = out[st];
        std::array<std::uint32_t, max_layer_classes> count{};
        for (std::uint32_t i = s.first_layer; i < shard_end(m, s); ++i) {
            ++count[layer_class(m, i)];
            if (extras) for_each_extra_tensor(m, i, adder(p, 1.0));
        }
        for (std::uint32_t k = 0; k < max_layer_classes; ++k) {
            if (count[k] == 0) continue;
            p.dense += per_class[k].dense * count[k];
            p.routed += per_class[k].routed * count[k];
        }
        // On the last stage the LM head multiplies; a tied model's table serves as its LM head.
        if (st + 1 == l.pp()) {
            RankMatmulParams head{};
            for_each_edge_tensor(m, false, true, true, [&](const WeightTensor& t) {
                adder(p, 1.0)(t);
                if (t.group == ParamGroup::lm_head) adder(head, 1.0)(t);
            });
            p.head = head.dense;
        }
    }
    return out;
}

[[nodiscard]] constexpr RankMatmulParams rank_matmul_params(const Model& m, const Layout& l,
                                                            std::uint32_t stage) {
    return rank_matmul_params_per_stage(m, l)[stage];
}

/// The sequences of a batch of `batch` that the busiest attention data-parallel rank of `l` holds:
/// ceil(batch / dp).
[[nodiscard]] constexpr std::uint64_t own_sequences(const Layout& l, std::uint64_t batch) noexcept {
    return l.dp() <= 1 ? batch : ceil_div(batch, l.dp());
}

/// Matmul FLOPs of a rank whose own sequences bring `own` tokens while `all` tokens of the batch
/// route to its experts.
[[nodiscard]] constexpr Flops matmul_flops(const RankMatmulParams& p, std::uint64_t own,
                                           std::uint64_t all) {
    if (own == all) return Flops::in_base(2.0 * (p.dense + p.routed) * static_cast<double>(all));
    return Flops::in_base(
        2.0 * (p.dense * static_cast<double>(own) + p.routed * static_cast<double>(all)));
}

/// Attention FLOPs of one token attending to a sequence of `tokens` on a shard: each layer's
/// heads on the rank x 2 x (score and value dimensions) x the tokens the layer keeps.
[[nodiscard]] constexpr double attention_flops_per_token(const Model& m, const Shard& s,
                                                         std::uint64_t tokens) {
    const double heads = static_cast<double>(m.config().num_heads / s.tp);
    // Per layer shape, times the shard's layers of that shape (a sweep calls this per point).
    const FixedArray<std::uint64_t, max_cache_specs> count = layers_per_spec(m, s);
    double f = 0.0;
    for (std::uint32_t k = 0; k < m.layers().num_specs; ++k) {
        if (count[k] == 0) continue;
        const CacheSpec& spec = m.layers().specs[k];
        // Under decode context parallelism a rank attends over its share of the tokens.
        const double kept =
            static_cast<double>(tokens_on_rank(spec.kind, tokens_kept(spec, tokens), s));
        const double layers = static_cast<double>(count[k]);
        switch (spec.kind) {
            case CacheKind::full_attention:
            case CacheKind::sliding_window:
            case CacheKind::chunked_local:
                f += 2.0 * heads * (spec.k_head_dim + spec.v_head_dim) * kept * layers;
                break;
            case CacheKind::mla_latent:
                f +=
                    2.0 * heads * (2.0 * spec.kv_lora_rank + spec.qk_rope_head_dim) * kept * layers;
                break;
            case CacheKind::constant_state:
            case CacheKind::shared:
            case CacheKind::mlp_only:
                break;
        }
    }
    return f;
}

/// Attention FLOPs of prefilling a prompt of `tokens` causally: token i attends to min(i, window)
/// tokens, so a layer does the per-token cost summed over i = 1..tokens.
[[nodiscard]] constexpr double prefill_attention_flops(const Model& m, const Shard& s,
                                                       std::uint64_t tokens) {
    const double heads = static_cast<double>(m.config().num_heads / s.tp);
    const auto causal_sum = [](std::uint64_t n, std::uint64_t cap) {
        const double nn = static_cast<double>(n);
        if (n <= cap) return nn * (nn + 1.0) / 2.0;
        const double w = static_cast<double>(cap);
        return w * (w + 1.0) / 2.0 + (nn - w) * w;
    };
    double f = 0.0;
    for (std::uint32_t i = s.first_layer; i < shard_end(m, s); ++i) {
        const CacheSpec& spec = m.layer(i);
        const std::uint64_t cap = spec.kind == CacheKind::sliding_window
                                      ? spec.window
                                      : std::numeric_limits<std::uint64_t>::max();
        switch (spec.kind) {
            case CacheKind::full_attention:
            case CacheKind::sliding_window:
                f += 2.0 * heads * (spec.k_head_dim + spec.v_head_dim) * causal_sum(tokens, cap);
                break;
            case CacheKind::chunked_local: {
                // Token i attends to the tokens of its chunk up to itself: each full chunk of C
                // sums 1..C, the last partial chunk of r sums 1..r.
                const std::uint64_t full = tokens / spec.window, r = tokens % spec.window;
                const double per = causal_sum(spec.window, spec.window);
                f += 2.0 * heads * (spec.k_head_dim + spec.v_head_dim) *
                     (static_cast<double>(full) * per + causal_sum(r, r));
                break;
            }
            case CacheKind::mla_latent: {
                // Prefill runs MLA unabsorbed: per head a (nope + rope) score and a v_head_dim
                // value.
                const double qk = m.config().mla.qk_nope_head_dim + spec.qk_rope_head_dim;
                f += 2.0 * heads * (qk + m.config().mla.v_head_dim) * causal_sum(tokens, cap);
                break;
            }
            case CacheKind::constant_state:
            case CacheKind::shared:
            case CacheKind::mlp_only:
                break;
        }
    }
    return f;
}

/// Weight bytes a step reads on a rank of `stage` when `tokens` tokens pass: the rank's weights
/// less the input embedding table (unless it is also the LM head), with routed experts scaled to
/// the expected share the tokens touch. Under expert parallelism the tokens are the whole batch
/// routed to the rank's experts, and each of its physical experts is touched with probability
/// 1 - (1 - k/P)^B (P: routed experts plus redundant copies).
struct WeightRead {
    Bytes resident{};                    ///< weight_bytes_per_rank
    Bytes dense{};                       ///< read in full
    Bytes experts{};                     ///< routed experts held on the rank
    std::uint32_t experts_held = 0;      ///< routed experts per MoE layer on the rank
    std::uint32_t physical_experts = 0;  ///< routed experts + redundant copies, per MoE layer
    double experts_touched = 0.0;        ///< expected distinct experts per MoE layer on the rank
    Bytes read{};                        ///< dense + experts x touched / held
};

/// The parts of weight_read that do not depend on the tokens, from the rank's weights `wb`.
[[nodiscard]] constexpr WeightRead weight_base(const Replica& r, const Layout& l,
                                               const WeightBytes& wb) {
    const ModelConfig& c = r.model.config();
    WeightRead w;
    w.resident = wb.total();
    w.experts = wb.routed_experts;
    w.experts_held = l.placement().experts_per_gpu;
    w.physical_experts = l.placement().physical_experts;
    // A tied table on a single stage is the LM head too, so it is read in full.
    const bool table_is_head = c.tie_embeddings && l.pp() == 1;
    w.dense = w.resident - w.experts - (table_is_head ? Bytes{} : wb.embedding);
    return w;
}

/// `base` (from weight_base) completed for `tokens` tokens: the experts they touch and the read.
[[nodiscard]] constexpr WeightRead weight_read_at(WeightRead base, const ModelConfig& c,
                                                  std::uint64_t tokens) {
    const std::uint32_t all = base.physical_experts;
    const double touched = expected_experts_touched(all, c.moe.experts_per_token, tokens);
    const double share = all == 0 ? 0.0 : touched / all;
    base.experts_touched = base.experts_held == all ? touched : share * base.experts_held;
    base.read = base.dense + scale_down(base.experts, share);
    return base;
}

/// The parts of weight_read that do not depend on the tokens: resident, dense and experts.
[[nodiscard]] constexpr WeightRead weight_base(const Replica& r, const Layout& l,
                                               std::uint32_t stage) {
    return weight_base(r, l, weight_bytes_per_rank(r.model, l, stage, r.weights));
}

[[nodiscard]] constexpr WeightRead weight_read(const Replica& r, const Layout& l,
                                               std::uint32_t stage, std::uint64_t tokens) {
    return weight_read_at(weight_base(r, l, stage), r.model.config(), tokens);
}

/// Peak dense FLOP/s of `gpu` for `d`; zero when the GPU has none for it.
[[nodiscard]] constexpr FlopsPerSecond peak_flops(const GpuSpec& gpu, ComputeDtype d) noexcept {
    return gpu.dense(d).value_or(FlopsPerSecond{});
}

[[nodiscard]] constexpr Seconds time_at(double amount_base, double rate_base) noexcept {
    return Seconds::in_base(rate_base > 0.0 ? amount_base / rate_base
                                            : std::numeric_limits<double>::infinity());
}

}  // namespace detail

/// One pipeline stage's ranks in a step (every TP rank of a stage does the same work).
struct StageStep {
    std::uint32_t stage = 0;
    Bytes weights_resident{};      ///< the rank's weights
    Bytes weights_read{};          ///< what the step reads of them
    Bytes experts_resident{};      ///< routed experts held on the rank
    double experts_touched = 0.0;  ///< expected distinct experts per MoE layer
    Bytes kv_read{};       ///< KV of every sequence on this rank (decode) or written (prefill)
    Flops matmul_flops{};  ///< 2 x matmul parameters used x tokens
    Flops attention_flops{};
    Seconds memory_time{};              ///< (weights_read + kv_read) / peak bandwidth
    Seconds compute_time{};             ///< FLOPs / peak dense FLOP/s
    std::optional<Seconds> estimate{};  ///< with the efficiency factors, if given
    [[nodiscard]] constexpr Bytes bytes() const { return weights_read + kv_read; }
    [[nodiscard]] constexpr Flops flops() const { return matmul_flops + attention_flops; }
    [[nodiscard]] constexpr Seconds time() const { return std::max(memory_time, compute_time); }
    [[nodiscard]] constexpr Bound bound() const {
        return compute_time > memory_time ? Bound::compute : Bound::memory;
    }
};

/// The tensor-parallel all-reduce of a step: two per layer (after attention and after the MLP) of
/// the batch's hidden states, a ring moving 2 (tp - 1) / tp of the message over each GPU's link.
/// The ring spans the attention group (tp / dp under SGLang's dp attention, 1 under
/// TensorRT-LLM's), and the node-to-node link when the group is larger than a node.
struct AllReduce {
    Bytes message{};             ///< tokens x hidden x activation element
    BytesPerSecond link{};       ///< one direction: scale-up (NVLink) if any, else PCIe
    Seconds per_layer{};         ///< both all-reduces of one layer
    Seconds per_step{};          ///< per_layer x the layers of the busiest stage
    bool crosses_nodes = false;  ///< the group spans nodes: `link` is the GPU's NIC
};

/// The expert-parallel all-to-all of a step, per GPU: each MoE layer sends every token's hidden
/// state to the GPUs of its k experts (dispatch) and their outputs back (combine), one message per
/// token and selected expert as DeepEP's low-latency kernels send them (deep_ep csrc/config.hpp,
/// LowLatencyLayout): dispatch 16 + H + 4 H / 128 bytes in fp8 (one fp32 scale per 128 values)
/// or 16 + 2 H in bf16, combine 2 H. Of a GPU's messages, (G - 1) / G leave it (G: the GPUs the
/// experts spread over, routing uniform); those for GPUs of its own node go over the scale-up link,
/// the rest over its NIC, both at once. Only under attention data parallelism: with attention
/// tensor-parallel every GPU holds every token, runs its own experts on those routed to them, and
/// the layer's all-reduce sums the outputs (vLLM's use_all2all_kernels is dp_size > 1 and use_ep,
/// vllm/model_executor/layers/fused_moe/config.py; TensorRT-LLM's enable_alltoall needs
/// enable_attention_dp, tensorrt_llm/_torch/modules/fused_moe/; SGLang dispatches through DeepEP
/// only beside --enable-dp-attention). Not part of the bound: a figure beside it, as the
/// all-reduce.
///
/// TensorRT-LLM's all-to-all (its first choice, NVLinkOneSided,
/// tensorrt_llm/_torch/modules/fused_moe/communication/nvlink_one_sided.py, picked by
/// communication_factory.py) sends a token once to each GPU that holds any of its k experts (its
/// workspace holds ep_size x max_num_tokens tokens a rank) and quantizes before it dispatches
/// (supports_post_quant_dispatch): an NVFP4 token is H / 2 bytes of values and H / 16 of fp8
/// scales, an fp8 one H and a 4-byte scale per 128 values, with its k expert ids and weights
/// (4 bytes each); the combine returns one bf16 partial sum per token and GPU. A token's k
/// experts, drawn uniformly from E spread evenly over G GPUs, sit on G (1 - C(E - E/G, k) /
/// C(E, k)) of them on average.
struct AllToAll {
    bool applies = false;       ///< experts over more than one GPU, attention data-parallel
    bool fp8_dispatch = false;  ///< the engine quantizes the dispatch to fp8
    /// One message per token and destination GPU, quantized as the experts are (TensorRT-LLM);
    /// else one per token and selected expert.
    bool per_gpu = false;
    std::uint64_t tokens = 0;  ///< tokens a GPU dispatches per layer
    std::uint32_t experts_per_token = 0;
    double destinations = 0.0;        ///< messages per token: k, or the GPUs its k experts sit on
    Bytes dispatch_message{};         ///< per message
    Bytes combine_message{};          ///< per message
    Bytes dispatch{};                 ///< tokens x destinations x dispatch_message: a GPU, a layer
    Bytes combine{};                  ///< tokens x destinations x combine_message
    std::uint32_t group = 1;          ///< G: GPUs the experts spread over
    std::uint32_t group_in_node = 1;  ///< of them, in one node (with the sender)
    double to_node = 0.0;             ///< share of messages to other GPUs of the node
    double off_node = 0.0;            ///< share of messages to other nodes
    BytesPerSecond scale_up{};        ///< one direction (PCIe when the GPU has no scale-up link)
    BytesPerSecond scale_out{};       ///< one direction; zero when the GPU states none
    bool network_unknown = false;     ///< crosses nodes, no scale-out figure: times are infinite
    std::uint32_t moe_layers = 0;     ///< MoE layers of the busiest stage
    Seconds per_layer{};              ///< dispatch then combine
    Seconds per_step{};               ///< per_layer x moe_layers
};

namespace detail {

constexpr void check_roofline(const Replica& r, const RooflineOptions& o) {
    const auto where = [&] { return model_where(r.model.config()); };
    // A missing GPU figure is the GPU spec's, named as its file spells it (configs/gpus/README.md).
    const auto gpu = [&] { return text("GPU spec '", r.gpu.id, "'"); };
    if (!(r.gpu.memory_bandwidth > BytesPerSecond{}))
        throw_field_error<InvalidInput>(gpu(), "memory_bandwidth.TB_per_s", "> 0", "0");
    const ComputeDtype compute = *with_compute(o, r).compute;
    if (!r.gpu.dense(compute))
        throw_field_error<InvalidInput>(gpu(), "dense_tflops." + std::string(name(compute)),
                                        "a dense peak for the compute type", "none");
    if (r.parallel.tp > 1 && !(r.gpu.scale_up_bandwidth > BytesPerSecond{}) &&
        !(r.gpu.pcie_bandwidth > BytesPerSecond{}))
        throw_field_error<InvalidInput>(gpu(), "scale_up.GB_per_s_per_direction",
                                        "a link for the tensor-parallel all-reduce",
                                        "none (and no pcie.GB_per_s_per_direction)");
    if (o.efficiency && !(o.efficiency->bandwidth > 0.0 && o.efficiency->bandwidth <= 1.0 &&
                          o.efficiency->compute > 0.0 && o.efficiency->compute <= 1.0))
        throw_field_error<InvalidInput>(where(), "efficiency", "fractions in (0, 1]", "outside");
}

/// A stage's bytes and FLOPs at peak bandwidth and throughput, and with the efficiency factors.
struct StageTimes {
    Seconds memory{};
    Seconds compute{};
    std::optional<Seconds> estimate{};
};

[[nodiscard]] constexpr StageTimes stage_times(Bytes bytes, Flops flops, const GpuSpec& gpu,
                                               const RooflineOptions& o) {
    StageTimes t{bytes / gpu.memory_bandwidth,
                 flops / gpu.dense(compute_of(o)).value_or(FlopsPerSecond{})};
    if (o.efficiency)
        t.estimate = std::max(bytes / (gpu.memory_bandwidth * o.efficiency->bandwidth),
                              flops / (*gpu.dense(compute_of(o)) * o.efficiency->compute));
    return t;
}

constexpr void finish_stage(StageStep& st, const GpuSpec& gpu, const RooflineOptions& o) {
    const StageTimes t = stage_times(st.bytes(), st.flops(), gpu, o);
    st.memory_time = t.memory;
    st.compute_time = t.compute;
    st.estimate = t.estimate;
}

/// The scale-up link of `g` (PCIe when it has none).
[[nodiscard]] constexpr BytesPerSecond scale_up_link(const GpuSpec& g) noexcept {
    return g.scale_up_bandwidth > BytesPerSecond{} ? g.scale_up_bandwidth : g.pcie_bandwidth;
}

/// The all-reduce of `tokens` tokens (a rank's own) over the attention group of `l`.
[[nodiscard]] constexpr AllReduce all_reduce(const Replica& r, const Layout& l,
                                             std::uint64_t tokens, const RooflineOptions& o) {
    AllReduce a;
    a.message = o.activation_element * mul(tokens, r.model.config().hidden_size, "a message");
    const std::uint32_t tp = l.attention_tp();
    // Past the node, or past a scale-up domain of whole nodes (72 GPUs of an NVL72 rack), the
    // group reaches the node-to-node network.
    a.crosses_nodes = tp > r.gpu.fast_domain();
    a.link = a.crosses_nodes ? r.gpu.scale_out_bandwidth : scale_up_link(r.gpu);
    if (tp <= 1) return a;
    if (!(a.link > BytesPerSecond{})) {
        // A group across nodes without a node-to-node figure cannot be timed.
        if (a.crosses_nodes) a.per_layer = a.per_step = time_at(1.0, 0.0);
        return a;
    }
    const double ring = 2.0 * (tp - 1) / tp;
    a.per_layer = (a.message / a.link) * (2.0 * ring);
    std::uint32_t most = 0;
    for (std::uint32_t st = 0; st < l.pp(); ++st)
        most = std::max(most, l.stage(st).end_layer - l.stage(st).first_layer);
    a.per_step = a.per_layer * most;
    return a;
}

/// Whether the engine of `l`'s rules dispatches in fp8: SGLang's DeepEP dispatcher does by default
/// (--deepep-dispatcher-output-dtype auto); vLLM when the experts are fp8 in 128 x 128 blocks
/// (vllm/model_executor/layers/fused_moe/all2all_utils.py); TensorRT-LLM dispatches in its experts'
/// own format (AllToAll::per_gpu), not counted here.
[[nodiscard]] constexpr bool fp8_dispatch(const Replica& r) noexcept {
    switch (r.parallel.rules) {
        case ParallelRules::sglang:
            return true;
        case ParallelRules::vllm: {
            const WeightFormat f = r.weights.expert_format.value_or(r.weights.format);
            return f == WeightFormat::fp8 && r.weights.layout.fp8_block == 128;
        }
        case ParallelRules::trtllm:
            return false;
    }
    return false;
}

/// The MoE layers of `shard` (each dispatches, combines and runs routed experts).
[[nodiscard]] constexpr std::uint32_t moe_layers_in(const Model& m, const Shard& shard) noexcept {
    std::uint32_t n = 0;
    for (std::uint32_t i = shard.first_layer; i < shard_end(m, shard); ++i)
        n += m.is_moe_layer(i) ? 1U : 0U;
    return n;
}

/// The all-to-all of `tokens` tokens dispatched by each GPU of `l`.
[[nodiscard]] constexpr AllToAll all_to_all(const Replica& r, const Layout& l,
                                            std::uint64_t tokens) {
    AllToAll a;
    const Placement& pl = l.placement();
    const ModelConfig& c = r.model.config();
    if (c.moe.experts == 0 || pl.expert_ep <= 1 || pl.attention_dp <= 1) return a;
    a.applies = true;
    a.fp8_dispatch = fp8_dispatch(r);
    a.per_gpu = r.parallel.rules == ParallelRules::trtllm;
    a.tokens = tokens;
    const std::uint32_t k = c.moe.experts_per_token;
    a.experts_per_token = k;
    const std::uint64_t h = c.hidden_size;
    a.combine_message = Bytes::exactly(2 * h);
    if (a.per_gpu) {
        const WeightFormat f = r.weights.expert_format.value_or(r.weights.format);
        const std::uint64_t values = f == WeightFormat::nvfp4 ? ceil_div(h, 2) + ceil_div(h, 16)
                                     : f == WeightFormat::fp8 || f == WeightFormat::mxfp8
                                         ? h + ceil_div(h, 128) * 4
                                         : 2 * h;
        a.dispatch_message = Bytes::exactly(values + 8ULL * k);
        // P(none of the k experts on a given GPU) = C(E - E/G, k) / C(E, k).
        const double all = pl.physical_experts, held = pl.experts_per_gpu;
        double miss = 1.0;
        for (std::uint32_t i = 0; i < k; ++i)
            miss *= std::max(0.0, all - held - i) / std::max(1.0, all - i);
        a.destinations = static_cast<double>(pl.expert_ep) * (1.0 - miss);
        a.dispatch = scale_up(a.dispatch_message * tokens, a.destinations);
        a.combine = scale_up(a.combine_message * tokens, a.destinations);
    } else {
        a.dispatch_message =
            Bytes::exactly(a.fp8_dispatch ? 16 + h + ceil_div(h, 128) * 4 : 16 + 2 * h);
        a.destinations = k;
        const std::uint64_t messages = mul(tokens, k, "a message count");
        a.dispatch = a.dispatch_message * messages;
        a.combine = a.combine_message * messages;
    }
    a.group = pl.expert_ep;
    a.group_in_node = std::min(a.group, std::max<std::uint32_t>(r.gpu.fast_domain(), 1));
    a.to_node = static_cast<double>(a.group_in_node - 1) / a.group;
    a.off_node = static_cast<double>(a.group - a.group_in_node) / a.group;
    a.scale_up = scale_up_link(r.gpu);
    a.scale_out = r.gpu.scale_out_bandwidth;
    a.network_unknown = a.off_node > 0.0 && !(a.scale_out > BytesPerSecond{});
    const auto over = [&](Bytes b) {
        const double bytes = static_cast<double>(b.count());
        const Seconds near = time_at(bytes * a.to_node, a.scale_up.in(B_per_s));
        const Seconds far =
            a.off_node > 0.0 ? time_at(bytes * a.off_node, a.scale_out.in(B_per_s)) : Seconds{};
        return std::max(near, far);
    };
    a.per_layer = over(a.dispatch) + over(a.combine);
    for (std::uint32_t st = 0; st < l.pp(); ++st)
        a.moe_layers = std::max(a.moe_layers, moe_layers_in(r.model, l.stage(st)));
    a.per_step = a.per_layer * a.moe_layers;
    return a;
}

}  // namespace detail

}  // namespace kvplan
