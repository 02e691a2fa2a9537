#pragma once

// The replica budget: on every GPU of a replica,
//
//     KV budget = memory_total x utilization - weights on that rank - non-KV reserve
//
// where utilization has vLLM's gpu_memory_utilization meaning (a fraction of the memory the driver
// reports as total, not of the memory free), and the reserve is modelled term by term: the CUDA
// context, the activation peak of a forward over max_num_batched_tokens (the LM head's logits at the
// vocabulary size included), CUDA graphs and communication buffers. Every term is shown, has a
// documented default, and can be replaced by a figure. Ranks are never averaged: each pipeline
// stage has its own layers, weights and reserve, and the stage that holds the fewest sequences sets
// the capacity of the whole replica.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "capacity.hpp"
#include "detail/checked.hpp"
#include "dtype.hpp"
#include "gpu.hpp"
#include "kv_bytes.hpp"
#include "layout.hpp"
#include "model.hpp"
#include "paging.hpp"
#include "units.hpp"
#include "weights.hpp"

namespace kvplan {

/// A serving replica: a model on tp x pp GPUs of one type, its weight format and its KV format.
struct Replica {
    Model model;
    GpuSpec gpu{};              ///< every GPU of the replica is of this type
    ParallelConfig parallel{};  ///< tp x pp
    WeightOptions weights{};    ///< weight format (and expert format, overrides)
    KvFormat kv{};              ///< KV cache element type and scales

    /// The layout checked against the model; throws InvalidLayout.
    [[nodiscard]] constexpr Layout layout() const { return Layout(model, parallel); }
    /// GPUs in the replica: tp x pp.
    [[nodiscard]] constexpr std::uint32_t gpus() const noexcept { return parallel.tp * parallel.pp; }
};

/// What a replica must serve: sequences of the p95 context length, that many at once, paged in
/// blocks of block_size tokens (1: unpaged).
struct Workload {
    std::uint64_t context = 0;      ///< p95 tokens per sequence, prompt and output together
    std::uint64_t concurrency = 1;  ///< sequences resident at once
    std::uint32_t block_size = default_block_size;
};

// Defaults of the reserve, each with the figure it rests on.

/// vLLM's default batch limits for `vllm serve` on a GPU.
struct VllmBatchDefaults {
    std::uint64_t max_num_batched_tokens = 0;  ///< tokens in one forward (the profile run's size)
    std::uint32_t max_num_seqs = 0;            ///< sequences at once (the profile run's logits rows)
};

/// vLLM's defaults for `vllm serve` (vllm/engine/arg_utils.py, EngineArgs default batch sizes):
/// 8,192 tokens and 1,024 sequences on GPUs of 70 GiB or more that are not A100s, else 2,048 and
/// 256.
[[nodiscard]] constexpr VllmBatchDefaults vllm_batch_defaults(const GpuSpec& g) noexcept {
    const bool a100 = std::string_view(g.id).find("a100") != std::string_view::npos ||
                      std::string_view(g.name).find("A100") != std::string_view::npos;
    if (g.memory_total >= 70 * GiB && !a100) return {8192, 1024};
    return {2048, 256};
}

/// A CUDA context, created by the first CUDA call of the process: "~700+MB" depending on the CUDA
/// version and device, 723 MiB measured (discuss.pytorch.org/t/81330 and /t/73021). Lazy module
/// loading (CUDA 11.7+) makes it smaller: override when measured.
inline constexpr Bytes default_cuda_context = 700 * MiB;
/// Memory per captured batch size of CUDA graphs: SGLang reserves cuda_graph_max_bs x 2 MiB
/// (python/sglang/srt/server_args.py, mem_fraction_static heuristic); vLLM logs 0.36-0.65 GiB for
/// small and mid-size models ("Estimated CUDA graph memory", vllm PR #21489).
inline constexpr Bytes cuda_graph_bytes_per_batch = 2 * MiB;
/// The largest captured batch SGLang uses on 60-160 GiB GPUs below tp 4 (server_args.py).
inline constexpr std::uint32_t default_cuda_graph_max_batch = 256;
/// Communication buffers per GPU of a multi-GPU replica: SGLang reserves tp x pp / 8 GiB per GPU
/// (server_args.py: reserved_mem += tp_size * pp_size / 8 * 1024 MiB), i.e. 128 MiB per rank of
/// the replica. A single GPU needs none.
inline constexpr Bytes comm_buffer_bytes_per_rank = 128 * MiB;
/// vLLM's current default gpu_memory_utilization (vllm/config/cache.py, CacheConfig: 0.92; it was
/// 0.9 up to the v0.1x releases).
inline constexpr double default_gpu_memory_utilization = 0.92;

/// Knobs of the non-KV reserve. Each term is modelled unless a figure is given for it.
struct ReserveOptions {
    /// Tokens of the profiled forward; nullopt: vLLM's default for the GPU (vllm_batch_defaults).
    std::optional<std::uint64_t> max_num_batched_tokens{};
    /// Sequences of the profiled forward, one logits row each; nullopt: vLLM's max_num_seqs default.
    std::optional<std::uint32_t> profile_sequences{};
    std::uint32_t cuda_graph_max_batch = default_cuda_graph_max_batch;
    std::optional<Bytes> cuda_context{};  ///< replaces default_cuda_context
    std::optional<Bytes> activation{};    ///< replaces the modelled activation peak
    std::optional<Bytes> cuda_graphs{};   ///< replaces cuda_graph_max_batch x 2 MiB
    std::optional<Bytes> comm_buffers{};  ///< replaces ranks x 128 MiB
};

/// Where a reserve term's figure came from.
enum class TermSource : std::uint8_t { modelled, given };

/// One term of the reserve and where it came from.
struct ReserveTerm {
    Bytes bytes{};
    TermSource source = TermSource::modelled;
};

/// The activation peak of one forward over `tokens` tokens on one rank, as vLLM's profile run
/// measures it: the residual stream plus the larger of a layer's attention and MLP intermediates
/// for every token, plus, on the last stage, the logits of one sampled token per profile sequence.
struct ActivationPeak {
    std::uint64_t tokens = 0;        ///< max_num_batched_tokens
    Bytes element{};                 ///< bytes per activation value (2: bf16/fp16, 4: fp32)
    std::uint64_t residual_elements = 0;   ///< per token: hidden_states and residual
    std::uint64_t attention_elements = 0;  ///< per token: q, k, v and the attention output
    std::uint64_t mlp_elements = 0;        ///< per token: gate/up output and its activation (MoE: x k)
    Bytes per_token{};               ///< (residual + max(attention, mlp)) x element
    Bytes hidden{};                  ///< tokens x per_token
    std::uint64_t logits_rows = 0;   ///< min(tokens, profile sequences) on the last stage, else 0
    std::uint64_t vocab = 0;
    Bytes logits{};                  ///< rows x vocab x (element + 4): the LM head output and its fp32 copy
    [[nodiscard]] constexpr Bytes total() const { return hidden + logits; }
};

/// The non-KV reserve of one rank, term by term.
struct Reserve {
    ReserveTerm cuda_context{};
    ReserveTerm activation{};
    ActivationPeak activation_model{};  ///< the modelled peak (shown even when a figure replaces it)
    ReserveTerm cuda_graphs{};
    ReserveTerm comm_buffers{};
    [[nodiscard]] constexpr Bytes total() const {
        return cuda_context.bytes + activation.bytes + cuda_graphs.bytes + comm_buffers.bytes;
    }
};

namespace detail {

/// Per-token activation values of one layer's attention on a rank of TP degree `tp`.
[[nodiscard]] constexpr std::uint64_t attention_activation_elements(const Model& m, const CacheSpec& s,
                                                                    std::uint32_t tp) {
    const ModelConfig& c = m.config();
    const std::uint64_t heads = c.num_heads / tp;
    const std::uint64_t qd = m.query_head_dim();
    switch (s.kind) {
        case CacheKind::full_attention:
        case CacheKind::sliding_window:
        case CacheKind::chunked_local:
            return heads * qd +
                   std::uint64_t{kv_heads_per_rank(s.kv_heads, tp)} * (s.k_head_dim + s.v_head_dim) +
                   heads * s.v_head_dim;
        case CacheKind::mla_latent: {
            const std::uint64_t nope = c.mla.qk_nope_head_dim, v = c.mla.v_head_dim;
            return heads * (nope + s.qk_rope_head_dim) + s.kv_lora_rank + s.qk_rope_head_dim +
                   heads * (nope + v) + heads * v;
        }
        case CacheKind::shared: return heads * qd * 2;
        case CacheKind::constant_state: return 0;  // the mixer's shape is not in the config
        case CacheKind::mlp_only: return 0;        // no mixer
    }
    return 0;
}

/// Per-token activation values of one layer's MLP on a rank: the up projections' outputs and the
/// activation's output alive together; for MoE, k experts per token plus each expert's output
/// (fused_moe's intermediate caches) and the shared experts.
[[nodiscard]] constexpr std::uint64_t mlp_activation_elements(const Model& m, std::uint32_t layer,
                                                              std::uint32_t tp) {
    const ModelConfig& c = m.config();
    const std::uint64_t per_width = c.mlp == MlpKind::gated ? 3 : 2;
    if (!m.has_mlp(layer)) return 0;
    if (!c.moe.is_moe_layer(layer)) return per_width * ceil_div(c.intermediate_size, tp);
    const std::uint64_t routed =
        std::uint64_t{c.moe.experts_per_token} *
        (per_width * ceil_div(c.moe.expert_intermediate_size, tp) + c.hidden_size);
    return routed + per_width * ceil_div(shared_expert_width(c.moe), tp);
}

/// a x k rounded up, for a non-negative fraction k (a size times a utilization).
[[nodiscard]] constexpr Bytes scale_up(Bytes a, double k) {
    const double x = static_cast<double>(a.count()) * k;
    if (!(x >= 0.0) || x >= 18446744073709549568.0)
        throw OverflowError("a scaled size must be finite, non-negative and below 2^64 bytes");
    auto n = static_cast<std::uint64_t>(x);
    if (static_cast<double>(n) < x) ++n;
    return Bytes::exactly(n);
}

/// a x k rounded down, for a non-negative fraction k.
[[nodiscard]] constexpr Bytes scale_down(Bytes a, double k) {
    const double x = static_cast<double>(a.count()) * k;
    if (!(x >= 0.0) || x >= 18446744073709549568.0)
        throw OverflowError("a scaled size must be finite, non-negative and below 2^64 bytes");
    return Bytes::exactly(static_cast<std::uint64_t>(x));
}

/// a - b, or zero when b is larger.
[[nodiscard]] constexpr Bytes saturating_sub(Bytes a, Bytes b) { return a > b ? a - b : Bytes{}; }

}  // namespace detail

/// The activation peak of one forward over `tokens` tokens on a rank of stage `stage`; the logits
/// rows (min(tokens, profile_sequences)) count only on the last stage, which holds the LM head.
[[nodiscard]] constexpr ActivationPeak activation_peak(const Model& m, const Layout& l,
                                                       std::uint32_t stage, std::uint64_t tokens,
                                                       std::uint32_t profile_sequences,
                                                       const WeightOptions& w = {}) {
    const Shard s = l.stage(stage);
    const ModelConfig& c = m.config();
    ActivationPeak a;
    a.tokens = tokens;
    a.element = Bytes::exactly(w.format == WeightFormat::fp32 ? 4 : 2);
    a.residual_elements = 2 * c.hidden_size;
    for (std::uint32_t i = s.first_layer; i < detail::shard_end(m, s); ++i) {
        a.attention_elements =
            std::max(a.attention_elements, detail::attention_activation_elements(m, m.layer(i), s.tp));
        a.mlp_elements = std::max(a.mlp_elements, detail::mlp_activation_elements(m, i, s.tp));
    }
    a.per_token = a.element * (a.residual_elements + std::max(a.attention_elements, a.mlp_elements));
    a.hidden = a.per_token * tokens;
    if (stage + 1 == l.pp()) {
        a.logits_rows = std::min<std::uint64_t>(tokens, profile_sequences);
        a.vocab = c.vocab_size;
        a.logits = Bytes::exactly(a.element.count() + 4) *
                   detail::mul(a.logits_rows, a.vocab, "the logits");
    }
    return a;
}

/// The non-KV reserve of a rank of stage `stage` of `r`, modelled or as given in `o`.
[[nodiscard]] constexpr Reserve reserve_on_rank(const Replica& r, const Layout& l,
                                                std::uint32_t stage, const ReserveOptions& o = {}) {
    Reserve res;
    const VllmBatchDefaults d = vllm_batch_defaults(r.gpu);
    res.activation_model = activation_peak(r.model, l, stage,
                                           o.max_num_batched_tokens.value_or(d.max_num_batched_tokens),
                                           o.profile_sequences.value_or(d.max_num_seqs), r.weights);
    const auto term = [](const std::optional<Bytes>& given, Bytes modelled) {
        return given ? ReserveTerm{*given, TermSource::given} : ReserveTerm{modelled, TermSource::modelled};
    };
    res.cuda_context = term(o.cuda_context, default_cuda_context);
    res.activation = term(o.activation, res.activation_model.total());
    res.cuda_graphs = term(o.cuda_graphs, cuda_graph_bytes_per_batch * o.cuda_graph_max_batch);
    res.comm_buffers =
        term(o.comm_buffers, l.ranks() > 1 ? comm_buffer_bytes_per_rank * l.ranks() : Bytes{});
    return res;
}

/// How to size the budget: the utilization, the reserve, or a KV memory per GPU that replaces the
/// computed budget (the "Available KV cache memory" a running vLLM printed).
struct BudgetOptions {
    double utilization = default_gpu_memory_utilization;  ///< in (0, 1]
    ReserveOptions reserve{};
    std::optional<Bytes> kv_memory_per_gpu{};
};

/// One pipeline stage's budget (every TP rank of a stage holds the same), and what it holds.
struct StageBudget {
    std::uint32_t stage = 0;
    Shard shard{};
    Bytes memory_total{};  ///< the driver's total for the GPU
    Bytes usable{};        ///< ceil(memory_total x utilization), as vLLM's requested_memory
    Bytes weights{};       ///< weight_bytes_per_rank of this stage
    Reserve reserve{};
    Bytes kv_budget{};     ///< usable - weights - reserve (zero when they exceed it), or the given figure
    bool kv_given = false;       ///< kv_budget is kv_memory_per_gpu, not computed
    Bytes kv_per_token{};        ///< KV bytes per token of context on this rank (every growing layer)
    Bytes kv_per_sequence{};     ///< bytes one sequence of the p95 context reserves (its blocks)
    Bytes kv_needed{};           ///< kv_per_sequence x concurrency
    Bytes headroom{};            ///< kv_budget - kv_needed when it fits, else zero
    Bytes shortfall{};           ///< what is missing when it does not fit, else zero
    std::optional<std::uint64_t> kv_tokens{};  ///< whole blocks of tokens the budget holds; nullopt: nothing grows
    std::uint64_t max_concurrency = 0;        ///< sequences of the p95 context that fit
    std::optional<std::uint64_t> max_context{};  ///< at the target concurrency; nullopt: any length
    std::optional<std::uint64_t> longest_single_context{};  ///< one sequence alone; nullopt: any length
    [[nodiscard]] constexpr bool fits() const noexcept { return shortfall.is_zero(); }
};

/// A replica's budget on every stage, and the answers, set by the stage that holds the least.
struct ReplicaBudget {
    std::uint32_t tp = 1;
    std::uint32_t pp = 1;
    double utilization = 0.0;
    Workload workload{};
    std::array<StageBudget, max_pipeline_stages> stages{};
    std::uint32_t num_stages = 0;
    std::uint32_t limiting_stage = 0;  ///< the stage with the fewest sequences (then least headroom)
    bool fits = false;                 ///< every stage holds concurrency x the p95 context
    Bytes headroom{};                  ///< the least headroom over stages, when it fits
    Bytes shortfall{};                 ///< the largest shortfall over stages, when it does not
    std::optional<std::uint64_t> kv_tokens{};  ///< tokens of KV the replica holds (least over stages)
    std::uint64_t max_concurrency = 0;         ///< sequences of the p95 context at once
    std::optional<std::uint64_t> max_context{};  ///< longest context at the target concurrency
    /// The longest context one sequence can have: the estimate vLLM's "estimated maximum model
    /// length" gives when max_model_len does not fit (vllm/v1/core/kv_cache_utils.py).
    std::optional<std::uint64_t> longest_single_context{};
    /// GPUs in the replica.
    [[nodiscard]] constexpr std::uint32_t gpus() const noexcept { return tp * pp; }
    /// The stages in use.
    [[nodiscard]] constexpr std::span<const StageBudget> stage_budgets() const noexcept {
        return {stages.data(), num_stages};
    }
};

namespace detail {

/// min over optionals where nullopt means "unbounded".
[[nodiscard]] constexpr std::optional<std::uint64_t> min_bounded(std::optional<std::uint64_t> a,
                                                                 std::optional<std::uint64_t> b) {
    if (!a) return b;
    if (!b) return a;
    return std::min(*a, *b);
}

constexpr void check_budget_inputs(const Replica& r, const Workload& w, const BudgetOptions& o) {
    const auto where = [&] { return model_where(r.model.config()); };
    if (!(o.utilization > 0.0 && o.utilization <= 1.0))
        throw_field_error<InvalidInput>(where(), "utilization", "a fraction in (0, 1]",
                                        std::to_string(o.utilization));
    if (w.context == 0)
        throw_field_error<InvalidInput>(where(), "workload.context", ">= 1 token", "0");
    if (w.concurrency == 0)
        throw_field_error<InvalidInput>(where(), "workload.concurrency", ">= 1 sequence", "0");
    if (w.block_size == 0)
        throw_field_error<InvalidInput>(where(), "workload.block_size", ">= 1 token", "0");
    if (r.gpu.memory_total.is_zero() && !o.kv_memory_per_gpu)
        throw_field_error<InvalidInput>(where(), "gpu.memory_total", "> 0 bytes", "0");
}

}  // namespace detail

/// The budget of stage `stage` of `r` for workload `w`.
[[nodiscard]] constexpr StageBudget stage_budget(const Replica& r, const Layout& l,
                                                 std::uint32_t stage, const Workload& w,
                                                 const BudgetOptions& o = {}) {
    const Model& m = r.model;
    StageBudget b;
    b.stage = stage;
    b.shard = l.stage(stage);
    b.memory_total = r.gpu.memory_total;
    b.usable = detail::scale_up(r.gpu.memory_total, o.utilization);
    b.weights = weight_bytes_per_rank(m, l, stage, r.weights).total();
    b.reserve = reserve_on_rank(r, l, stage, o.reserve);
    const Bytes committed = b.weights + b.reserve.total();
    b.kv_given = o.kv_memory_per_gpu.has_value();
    b.kv_budget = b.kv_given ? *o.kv_memory_per_gpu : detail::saturating_sub(b.usable, committed);
    b.kv_per_token = kv_bytes_per_token(m, r.kv, b.shard);
    b.kv_per_sequence = reserved_per_sequence(m, r.kv, w.context, w.block_size, b.shard);
    b.kv_needed = b.kv_per_sequence * w.concurrency;
    // With a given KV figure only the KV must fit in it; otherwise weights, reserve and KV
    // together must fit in `usable` (so weights past it never fit, even with no KV needed).
    const Bytes demand = b.kv_given ? b.kv_needed : committed + b.kv_needed;
    const Bytes supply = b.kv_given ? b.kv_budget : b.usable;
    if (demand <= supply) {
        b.headroom = supply - demand;
    } else {
        b.shortfall = demand - supply;
    }
    if (!b.kv_per_token.is_zero()) {
        const Bytes block = b.kv_per_token * w.block_size;
        b.kv_tokens = detail::mul(b.kv_budget / block, w.block_size, "a token count");
    }
    b.max_concurrency = sequences_that_fit(b.kv_budget, m, r.kv, w.context, w.block_size, b.shard);
    b.max_context = max_context(b.kv_budget, m, r.kv, w.concurrency, w.block_size, b.shard);
    b.longest_single_context = max_context(b.kv_budget, m, r.kv, 1, w.block_size, b.shard);
    return b;
}

/// The budget of every stage of `r` for workload `w`, and the replica's answers. Throws
/// InvalidLayout for a layout the model cannot take and InvalidInput for a utilization outside
/// (0, 1], a zero context, concurrency or block size, or a GPU without memory.
[[nodiscard]] constexpr ReplicaBudget replica_budget(const Replica& r, const Workload& w,
                                                     const BudgetOptions& o = {}) {
    detail::check_budget_inputs(r, w, o);
    const Layout l = r.layout();
    ReplicaBudget rb;
    rb.tp = l.tp();
    rb.pp = l.pp();
    rb.utilization = o.utilization;
    rb.workload = w;
    rb.num_stages = l.pp();
    rb.fits = true;
    rb.max_concurrency = std::numeric_limits<std::uint64_t>::max();
    bool first = true;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const StageBudget& b = rb.stages[st] = stage_budget(r, l, st, w, o);
        rb.fits = rb.fits && b.fits();
        rb.shortfall = std::max(rb.shortfall, b.shortfall);
        const StageBudget& lim = rb.stages[rb.limiting_stage];
        if (b.max_concurrency < lim.max_concurrency ||
            (b.max_concurrency == lim.max_concurrency && b.headroom < lim.headroom))
            rb.limiting_stage = st;
        rb.headroom = first ? b.headroom : std::min(rb.headroom, b.headroom);
        rb.kv_tokens = first ? b.kv_tokens : detail::min_bounded(rb.kv_tokens, b.kv_tokens);
        rb.max_concurrency = std::min(rb.max_concurrency, b.max_concurrency);
        rb.max_context = first ? b.max_context : detail::min_bounded(rb.max_context, b.max_context);
        rb.longest_single_context =
            first ? b.longest_single_context
                  : detail::min_bounded(rb.longest_single_context, b.longest_single_context);
        first = false;
    }
    if (!rb.fits) rb.headroom = {};
    return rb;
}

/// How far the search for the smallest replica goes.
struct ReplicaSearch {
    std::uint32_t max_gpus = 64;  ///< the most GPUs a replica may have
    std::uint32_t max_tp = 8;     ///< the largest tensor-parallel degree (one NVLink domain)
};

/// The smallest replica that fits: which GPU type (an index into the list searched), its layout,
/// and its budget.
struct ReplicaChoice {
    std::size_t gpu_index = 0;
    ParallelConfig parallel{};
    ReplicaBudget budget{};
};

/// The replica with the fewest GPUs that fits `w`, over the GPU types `gpus` (in order of
/// preference) and every tp x pp with tp a power of two up to s.max_tp (the larger tp first, as it
/// has no pipeline bubble); nullopt when none within s.max_gpus fits. Layouts the model cannot take
/// are skipped.
[[nodiscard]] constexpr std::optional<ReplicaChoice> smallest_replica(
    const Model& m, std::span<const GpuSpec> gpus, const WeightOptions& weights, KvFormat kv,
    const Workload& w, const BudgetOptions& o = {}, const ReplicaSearch& s = {}) {
    for (std::uint32_t n = 1; n <= s.max_gpus; ++n) {
        for (std::size_t g = 0; g < gpus.size(); ++g) {
            std::uint32_t tp = 1;
            while (tp * 2 <= std::min(n, s.max_tp)) tp *= 2;
            for (; tp >= 1; tp /= 2) {
                if (n % tp != 0) continue;
                const std::uint32_t pp = n / tp;
                if (pp > m.num_layers() || pp > max_pipeline_stages) continue;
                const Replica r{.model = m, .gpu = gpus[g], .parallel = {.tp = tp, .pp = pp},
                                .weights = weights, .kv = kv};
                try {
                    ReplicaBudget b = replica_budget(r, w, o);
                    if (b.fits) return ReplicaChoice{g, r.parallel, b};
                } catch (const InvalidLayout&) {
                    // tp does not divide the heads: not a layout this model can take.
                }
            }
        }
    }
    return std::nullopt;
}

}  // namespace kvplan
