#pragma once

// One answer per replica. evaluate() takes a deployment and a demand and returns every figure a
// design review reads: the model's context limit, the engine's memory term by term, the KV budget
// and what it holds (what the engine logs and what its scheduler admits, within its sequence cap),
// the longest contexts, the verdict with its reason, the weights, the decode bound at the load,
// and, when the demand splits its requests into prompt and output, the latency estimate beside the
// bound. fit, plan, compare, check, roofline, the Python module and serving code all call it, so a
// replica has one set of figures whichever asks.
//
// Demand is over every replica: gpus / replica_gpus replicas share the concurrency, each carrying
// ceil(concurrency / replicas) sequences, and the verdict counts them all. Under attention data
// parallelism a replica is dp ranks, each its own scheduler and cache (vLLM: one engine core per
// dp rank; SGLang and TensorRT-LLM: one pool per attention group), each holding
// ceil(concurrency_per_replica / dp) sequences and only their KV: the engine's figures are per dp
// rank, and a replica holds dp times them.
//
// The estimate (roofline/estimate.hpp) is of each replica's load: a closed loop of
// ceil(concurrency / replicas) clients, every request of the demand's prompt and output. It runs
// at most max_concurrency of them at once, the figure the verdict counts (what the engine's cache
// holds at the demand's context, within its sequence cap), so the estimate and the verdict agree
// on how many sequences run; the others wait, and their wait is in the TTFT. The token budget of a
// step is Serving::max_num_batched_tokens, else vLLM's default for the GPU. A run shape
// (Demand::run: lengths drawn around the means or fixed, a run of N requests started at once) times
// the run a benchmark makes rather than the steady state; its N spreads over the replicas as the
// clients do, ceil(N / replicas) a replica.
//
// A shared prompt prefix (Demand::shared_prefix_tokens, a system prompt every request starts
// with) is held once per dp rank's cache, as prefix caching holds it: its full blocks come out of
// the pool once and each sequence then needs only its own (paged_shared_prefix's rules). The
// concurrency, the verdict and the KV needed count it; the answer keeps the figures without
// sharing beside them. The longest contexts are searched without it.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

#include "../budget/replica.hpp"
#include "../capacity.hpp"
#include "../detail/enum_table.hpp"
#include "../engine/checkpoint_kv.hpp"
#include "../engine/report.hpp"
#include "../engine/startup.hpp"
#include "../engine/vllm_backend.hpp"
#include "../error.hpp"
#include "../kv_bytes.hpp"
#include "../kv_support.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../paging.hpp"
#include "../roofline/decode.hpp"
#include "../roofline/estimate.hpp"
#include "../weights.hpp"
#include "deployment.hpp"
#include "speculation.hpp"

namespace kvplan {

/// The answer in one word.
enum class Verdict : std::uint8_t {
    fits,            ///< the engine starts and every replica together holds the demand
    does_not_fit,    ///< the engine starts, but holds fewer sequences than the demand
    does_not_start,  ///< the engine refuses the configuration (see Refusal)
};

/// Why an engine does not start.
enum class Refusal : std::uint8_t {
    none,
    context_limit,     ///< the context passes the model's limit (vLLM refuses --max-model-len)
    weights,           ///< the weights and the terms charged with them exceed the engine's fraction
    outside_fraction,  ///< the terms kept outside the fraction do not fit what it leaves
    request,           ///< one request of the context does not fit the cache
    cache,             ///< the engine cannot build a cache for this model
    /// a quantized layer's width per rank is no multiple of its weight block: the engine raises
    /// while it creates the weights (ReplicaAnswer::startup says which, and what starts)
    quantization_block,
    /// the engine refuses the KV cache's dtype at start-up: a dtype it has no name for, a
    /// release older than the dtype's name, or nvfp4 with MLA under vLLM
    /// (ReplicaAnswer::kv_dtype_check says which, and what starts)
    kv_dtype,
};

/// Each verdict's spelling.
inline constexpr FixedArray<detail::EnumName<Verdict>, 3> verdict_names{{
    {Verdict::fits, "fits"},
    {Verdict::does_not_fit, "does_not_fit"},
    {Verdict::does_not_start, "does_not_start"},
}};

/// Each refusal's spelling ("none" when the engine starts).
inline constexpr FixedArray<detail::EnumName<Refusal>, 8> refusal_names{{
    {Refusal::none, "none"},
    {Refusal::context_limit, "context_limit"},
    {Refusal::weights, "weights"},
    {Refusal::outside_fraction, "outside_fraction"},
    {Refusal::request, "request"},
    {Refusal::cache, "cache"},
    {Refusal::quantization_block, "quantization_block"},
    {Refusal::kv_dtype, "kv_dtype"},
}};

/// Where the latency estimate's parameters came from, or why there is none.
enum class EstimateBasis : std::uint8_t {
    not_asked,        ///< the demand states no prompt / output split (or EvaluateOptions::estimate)
    does_not_start,   ///< the engine refuses the configuration: nothing runs
    no_gpu_figures,   ///< the GPU lacks the bound's figures (bandwidth, FLOP/s, a link at tp > 1)
    unknown_family,   ///< no parameters given and the GPU's family is not known
    family_fitted,    ///< the GPU family's defaults, fitted on published measurements
    family_borrowed,  ///< the defaults of a family without published measurements (borrowed)
    given,            ///< Serving::estimate (a calibration)
};

/// Each basis's spelling.
inline constexpr FixedArray<detail::EnumName<EstimateBasis>, 7> estimate_basis_names{{
    {EstimateBasis::not_asked, "not_asked"},
    {EstimateBasis::does_not_start, "does_not_start"},
    {EstimateBasis::no_gpu_figures, "no_gpu_figures"},
    {EstimateBasis::unknown_family, "unknown_family"},
    {EstimateBasis::family_fitted, "family_fitted"},
    {EstimateBasis::family_borrowed, "family_borrowed"},
    {EstimateBasis::given, "given"},
}};

[[nodiscard]] constexpr const char* name(EstimateBasis b) noexcept {
    return detail::enum_name(estimate_basis_names, b);
}

[[nodiscard]] constexpr const char* name(Verdict v) noexcept {
    return detail::enum_name(verdict_names, v);
}
[[nodiscard]] constexpr const char* name(Refusal r) noexcept {
    return detail::enum_name(refusal_names, r);
}

/// How evaluate() works.
struct EvaluateOptions {
    /// The longest contexts (max_context, longest_single_context): a search over the engine's
    /// cache; off, they stay unset (a replica search that does not show them skips the cost).
    bool contexts = true;
    /// The decode bound at the load each replica carries (when the GPU states its bandwidth, the
    /// FLOP/s of `roofline.compute` and, at tp > 1, a link for the all-reduce).
    bool decode = true;
    /// The latency estimate, when the demand splits its requests into prompt and output (off, it
    /// stays unset whatever the demand).
    bool estimate = true;
    RooflineOptions roofline{};
};

/// Every figure of a deployment under a demand.
struct ReplicaAnswer {
    // What was evaluated, resolved.
    Replica replica;  ///< the model (a speculative drafter's layers appended), GPU, layout, formats
    std::uint32_t drafter_layers = 0;  ///< the last layers of replica.model that are the drafter's
    Bytes drafter_weights{};           ///< a separate draft model's weights (whole)
    Bytes drafter_kv_per_token{};      ///< the drafter layers' share of kv_per_token
    WeightSource weight_source = WeightSource::checkpoint;
    KvSource kv_source = KvSource::model;  ///< where replica.kv came from (Deployment::served_kv)
    ResolvedServing serving{};
    Demand demand{};
    std::uint32_t gpus = 0;                     ///< every GPU deployed
    std::uint32_t replicas = 1;                 ///< gpus / replica GPUs
    std::uint64_t concurrency_per_replica = 0;  ///< ceil(concurrency / replicas)

    // The layout resolved: what each GPU holds, and how the replica's sequences spread.
    Placement placement{};
    std::uint32_t replica_gpus = 1;  ///< GPUs of one replica
    std::uint32_t nodes = 1;         ///< nodes one replica spans (the GPU's gpus_per_node)
    std::uint32_t dp_ranks = 1;      ///< attention data-parallel ranks of a replica
    std::uint64_t concurrency_per_dp_rank = 0;  ///< ceil(concurrency_per_replica / dp_ranks)

    // The model's context limit.
    ContextLimit limit{};
    bool over_limit = false;  ///< demand.context passes limit.tokens
    bool long_context_allowed = false;

    // The engine: its memory per stage and its cache.
    EngineReport report{};
    std::uint32_t limiting_stage = 0;  ///< the stage whose GPUs hold the fewest sequences

    // Per GPU of the limiting stage.
    Bytes kv_budget{};  ///< the engine's KV memory (or the given figure)
    bool kv_given = false;
    Bytes
        kv_per_sequence{};  ///< the blocks one sequence of the context holds (its share under dcp)
    Bytes kv_needed{};      ///< kv_per_sequence x concurrency_per_dp_rank
    Bytes headroom{};
    Bytes shortfall{};
    std::optional<std::uint64_t> kv_tokens{};  ///< the engine's KV token figure

    // Sequences of the context, per replica (dp ranks x one rank's) unless said.
    std::uint64_t admitted = 0;         ///< what the engine's caches hold at once
    std::uint64_t sequence_cap = 0;     ///< the engine's cap on sequences (0: none)
    std::uint64_t max_concurrency = 0;  ///< min(admitted, cap), rank by rank
    double max_concurrency_ratio =
        0.0;  ///< the engine's logged figure, per dp rank (vLLM's "X.XXx")
    std::uint64_t total_max_concurrency = 0;  ///< max_concurrency x replicas
    // The same for one attention data-parallel rank (equal to the above when dp_ranks is 1).
    std::uint64_t dp_rank_admitted = 0;
    std::uint64_t dp_rank_sequence_cap = 0;
    std::uint64_t dp_rank_max_concurrency = 0;
    /// The longest context each of concurrency_per_replica sequences can reach; nullopt: any.
    std::optional<std::uint64_t> max_context{};
    bool max_context_at_limit = false;  ///< the model's limit, not memory, sets it
    /// The longest context one sequence alone can reach; nullopt: any.
    std::optional<std::uint64_t> longest_single_context{};
    bool longest_at_limit = false;
    /// vLLM's "estimated maximum model length" when one request of the context does not fit.
    std::optional<std::uint64_t> estimated_max_model_len{};

    // A shared prompt prefix (Demand::shared_prefix_tokens): the figures above count its blocks
    // once per dp rank's cache; these say what that changed. Blocks and bytes are per GPU of the
    // limiting stage (each rank pages its shard of the prefix); sequences per replica.
    /// Full blocks of the prefix in one sequence's table, held once: prefix / block size (the
    /// full-attention layers' tables; a sliding layer shares only the blocks in its window).
    std::uint64_t shared_prefix_blocks = 0;
    /// The bytes each sequence after the first does not hold, every layer counted.
    Bytes shared_prefix_bytes_per_sequence{};
    /// At the sequences a dp rank runs (min(concurrency_per_dp_rank, dp_rank_max_concurrency)):
    /// the blocks and bytes they would hold again without sharing.
    std::uint64_t shared_prefix_blocks_saved = 0;
    Bytes shared_prefix_bytes_saved{};
    /// admitted, max_concurrency and total_max_concurrency with every sequence holding the prefix
    /// itself (equal to them without a shared prefix).
    std::uint64_t admitted_without_sharing = 0;
    std::uint64_t max_concurrency_without_sharing = 0;
    std::uint64_t total_max_concurrency_without_sharing = 0;

    Verdict verdict = Verdict::does_not_start;
    Refusal refusal = Refusal::none;

    /// The start-up check of the quantized widths per rank (engine/startup.hpp).
    StartupCheck startup{};
    /// The engine's start-up check of the KV dtype (engine/startup.hpp, kv_dtype_check).
    KvDtypeCheck kv_dtype_check{};

    // Weights and bytes.
    WeightBytes weights{};  ///< the whole model as stored
    /// The fullest rank as the engine holds it once loaded (MXFP4 experts padded and repacked
    /// for the GPU's kernel; engine/startup.hpp, loaded_weights): what its memory counts.
    Bytes weights_per_gpu{};
    Bytes weights_checkpoint_per_gpu{};  ///< the fullest rank as the checkpoint stores it
    LoadedWeights loaded{};              ///< the fullest rank's stored and loaded figures
    WeightBytes weights_on_gpu{};        ///< the fullest rank as stored, per group
    Bytes kv_per_token{};                ///< the whole model
    Bytes kv_per_token_per_gpu{};        ///< the fullest stage's GPUs

    /// The decode bound with each replica carrying concurrency_per_replica sequences of the
    /// context (unset when not asked or the GPU lacks the figures).
    std::optional<DecodePoint> decode{};

    /// The latency estimate at each replica's load (see the header comment), its own bound beside
    /// it (itl_bound, ttft_bound); unset when estimate_basis says why.
    std::optional<LatencyEstimate> estimate{};
    EstimateBasis estimate_basis = EstimateBasis::not_asked;
    EstimateParams estimate_params{};       ///< the parameters it used
    std::optional<GpuFamily> gpu_family{};  ///< the GPU's family, when known

    /// The sequences per replica the shared prefix adds: max_concurrency less the figure
    /// without sharing.
    [[nodiscard]] constexpr std::uint64_t shared_prefix_concurrency_added() const noexcept {
        return max_concurrency - max_concurrency_without_sharing;
    }
    /// The sequences a dp rank runs at once: min(concurrency_per_dp_rank,
    /// dp_rank_max_concurrency), what a shared prefix's saving is counted at.
    [[nodiscard]] constexpr std::uint64_t dp_rank_running() const noexcept {
        return std::min(concurrency_per_dp_rank, dp_rank_max_concurrency);
    }
    /// What one dp rank's caches hold at once with every sequence holding the prefix itself:
    /// admitted_without_sharing / dp_ranks.
    [[nodiscard]] constexpr std::uint64_t dp_rank_admitted_without_sharing() const noexcept {
        return admitted_without_sharing / dp_ranks;
    }
    /// vLLM's logged "Maximum concurrency" (max_concurrency_ratio, which reserves each sliding
    /// window's tokens in flight for every request) is below what its scheduler admits by more
    /// than its rounding: the engine starts and a dp rank admits more than the ratio + 1.
    [[nodiscard]] constexpr bool vllm_log_understates() const noexcept {
        return serving.engine == Engine::vllm && starts() &&
               dp_rank_admitted_without_sharing() >
                   static_cast<std::uint64_t>(max_concurrency_ratio) + 1;
    }
    [[nodiscard]] constexpr bool fits() const noexcept { return verdict == Verdict::fits; }
    [[nodiscard]] constexpr bool starts() const noexcept {
        return verdict != Verdict::does_not_start;
    }
    /// The limiting stage's memory, term by term.
    [[nodiscard]] constexpr const EngineMemory& memory() const noexcept {
        return report.memory[limiting_stage];
    }
};

namespace detail {

/// The stage the engine's cache names as its tightest.
[[nodiscard]] constexpr std::uint32_t engine_limiting_stage(const EngineReport& r) noexcept {
    switch (r.summary.engine) {
        case Engine::ideal:
            return r.ideal.limiting_stage;
        case Engine::vllm:
            return r.vllm.limiting_stage;
        case Engine::sglang:
            return r.sglang.limiting_stage;
        case Engine::trtllm:
            return r.trtllm.limiting_stage;
    }
    return 0;
}

/// Whether any layer grows with the context (a model of only constant state does not).
[[nodiscard]] constexpr bool grows_with_context(const Model& m) noexcept {
    for (std::uint32_t k = 0; k < m.layers().num_specs; ++k) {
        const CacheKind kind = m.layers().specs[k].kind;
        if (kind != CacheKind::constant_state && kind != CacheKind::shared) return true;
    }
    return false;
}

/// The longest context of which the engine's cache, given its KV memory per stage `kv`, admits
/// `n` sequences at once, searched up to `most`; nullopt when `most` itself is admitted and nothing
/// grows with the context (any length).
[[nodiscard]] constexpr std::optional<std::uint64_t> longest_admitted(
    const Replica& r, const Layout& l, std::span<const Bytes> kv, const ResolvedServing& s,
    std::uint64_t n, std::uint64_t most) {
    const auto admits = [&](std::uint64_t len) {
        EngineReport rep;
        rep.num_stages = l.pp();
        engine_cache(rep, s.engine, r, l, kv, len, s.budget, s.options);
        return rep.summary.starts && rep.summary.admitted >= n;
    };
    if (admits(most)) {
        if (!grows_with_context(r.model)) return std::nullopt;
        return most;
    }
    if (!admits(1)) return 0;
    std::uint64_t lo = 1, hi = most;  // admits(lo), !admits(hi)
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (admits(mid) ? lo : hi) = mid;
    }
    return lo;
}

/// Sequences of `each` bytes a dp rank's cache holds when every one of them shares a prefix of
/// `shared` bytes, held once, given `admitted`, what the engine's report `rep` holds without
/// sharing. The prefix comes out of the pool once; each sequence then needs each - shared.
///   vllm    its scheduler's own rule, 1 + (usable - peak) / steady (VllmKvCache::admitted), in
///           bytes with the prefix taken off the steady figure of every sequence after the first:
///           the first pays it in its peak;
///   others  the pool their fractional figure (max_concurrency) sizes, ratio x each bytes, less
///           the prefix, over each - shared; where the engine's state pool is not modelled
///           (mamba_state_ignored), the admitted x each bytes its figure proves.
/// Never fewer than `admitted`, and exactly it when nothing is shared.
[[nodiscard]] constexpr std::uint64_t admitted_with_prefix(const EngineReport& rep,
                                                           std::uint64_t admitted, Bytes each,
                                                           Bytes shared) {
    if (admitted == 0 || shared.is_zero() || !(shared < each)) return admitted;
    std::uint64_t n = admitted;
    if (rep.summary.engine == Engine::vllm) {
        const VllmKvCache& c = rep.vllm;
        const Bytes block = c.bytes_per_block;
        const Bytes steady = block * c.blocks_held;
        if (c.blocks_held != 0 && shared < steady && c.blocks_to_admit <= c.usable_blocks)
            n = 1 + (block * (c.usable_blocks - c.blocks_to_admit)) / (steady - shared);
    } else {
        const bool state_ignored =
            (rep.summary.engine == Engine::sglang && rep.sglang.mamba_state_ignored) ||
            (rep.summary.engine == Engine::trtllm && rep.trtllm.mamba_state_ignored);
        const double ratio = rep.summary.max_concurrency;
        Bytes pool = each * admitted;
        if (!state_ignored && std::isfinite(ratio) &&
            ratio * static_cast<double>(each.count()) <
                static_cast<double>(std::numeric_limits<std::uint64_t>::max() / 2))
            pool = std::max(pool, Bytes::exactly(static_cast<std::uint64_t>(
                                      ratio * static_cast<double>(each.count()))));
        if (shared < pool) n = (pool - shared) / (each - shared);
    }
    return std::max(n, admitted);
}

}  // namespace detail

/// The model's own step of a prepared layout, without a speculative drafter's layers: what the
/// decode bound and the latency estimate are of (acceptance is not modelled).
struct PreparedStep {
    ParallelConfig parallel{};
    Layout layout;
    StageWeights stage_weights{};
    std::array<detail::RankMatmulParams, max_pipeline_stages> matmul{};
};

/// What evaluate() computes of a deployment that depends on neither the GPU, the KV format nor the
/// demand: the layout checked and resolved, per stage the weights and the matmul parameters of a
/// rank, and the whole model's weights. A search prepares it once per layout and weight format and
/// evaluates every GPU and KV format with it; serving code that asks one deployment about many
/// demands prepares it once and pays only for what a demand changes.
struct PreparedLayout {
    Model model;                ///< the model, a speculative drafter's layers appended
    ParallelConfig parallel{};  ///< its layout, the drafter's layers on the last stage
    Layout layout;
    WeightOptions weights{};
    StageWeights stage_weights{};
    std::array<detail::RankMatmulParams, max_pipeline_stages> matmul{};
    std::uint32_t drafter_layers = 0;  ///< the last layers of `model` that are the drafter's
    Bytes drafter_weights{};           ///< a separate draft model's weights, whole
    /// The whole model as stored (a separate draft model's weights in `other`).
    WeightBytes weights_whole{};
    /// With a drafter's layers, the model's own step (its prepared layout without them).
    std::optional<PreparedStep> step{};
};

/// The prepared layout of `m` under `p` (its rules as the engine's) with weights `w`, drafting as
/// `s` says (plan/speculation.hpp). Throws InvalidLayout as Layout does, InvalidInput as
/// with_drafter does.
[[nodiscard]] constexpr PreparedLayout prepare_layout(const Model& m, const ParallelConfig& p,
                                                      const WeightOptions& w,
                                                      const Speculation& s = {}) {
    DraftedModel dm = with_drafter(m, p, s);
    const Layout layout(dm.model, dm.parallel);
    // The per-stage arrays are given to the aggregate, not assigned after: value-initialised first,
    // their 64 stages would be zero-filled on every unprepared evaluate() only to be overwritten.
    const StageWeights stage_weights = weight_bytes_per_stage(dm.model, layout, w);
    const std::array<detail::RankMatmulParams, max_pipeline_stages> matmul =
        detail::rank_matmul_params_per_stage(dm.model, layout);
    PreparedLayout pl{.model = std::move(dm.model),
                      .parallel = dm.parallel,
                      .layout = layout,
                      .weights = w,
                      .stage_weights = stage_weights,
                      .matmul = matmul,
                      .drafter_layers = dm.drafter_layers};
    if (s.method == DraftMethod::draft_model) {
        // A draft model's own weights, in its checkpoint's format, stand for what its layers
        // weigh in the model's shapes: on the last stage, at the model's tensor parallelism
        // (vLLM's draft_tensor_parallel_size defaults to the target's, vllm/config/speculative.py).
        const Model& draft = *s.draft_model;
        const WeightOptions dw = checkpoint_weights(draft);
        const WeightBytes own =
            weight_bytes_per_rank(draft, Layout(draft, ParallelConfig{.tp = p.tp}), 0, dw);
        const std::uint32_t last = pl.layout.pp() - 1;
        const Shard sh = pl.layout.stage(last);
        const std::uint32_t end = std::min(sh.end_layer, pl.model.num_layers());
        const WeightBytes computed =
            detail::computed_weight_bytes(pl.model, w, detail::rank_parts(pl.layout.placement()),
                                          end - pl.drafter_layers, end, false, false, false);
        WeightBytes& wb = pl.stage_weights.stages[last];
        for (std::size_t g = 0; g < param_group_count; ++g)
            wb[ParamGroup(g)] = wb[ParamGroup(g)] - computed[ParamGroup(g)] + own[ParamGroup(g)];
        pl.drafter_weights = weight_bytes(draft, dw).total();
    }
    if (pl.drafter_weights.is_zero()) {
        pl.weights_whole = weight_bytes(pl.model, w);
    } else {
        pl.weights_whole = weight_bytes(m, w);
        pl.weights_whole.other += pl.drafter_weights;
    }
    if (s.method == DraftMethod::mtp) {
        // Each MTP layer's tensors beside its decoder layer (eh_proj, its norms: mtp_head_bytes),
        // on the last stage with the layers, split as vLLM splits them at the model's tensor
        // parallelism.
        const WeightBytes head = mtp_head_bytes(m, w, pl.layout.placement().attention_tp);
        const WeightBytes whole = mtp_head_bytes(m, w);
        WeightBytes& wb = pl.stage_weights.stages[pl.layout.pp() - 1];
        for (std::size_t g = 0; g < param_group_count; ++g) {
            wb[ParamGroup(g)] += head[ParamGroup(g)] * pl.drafter_layers;
            pl.weights_whole[ParamGroup(g)] += whole[ParamGroup(g)] * pl.drafter_layers;
        }
    }
    if (pl.drafter_layers != 0) {
        const PreparedLayout t = prepare_layout(m, p, w);
        pl.step = PreparedStep{t.parallel, t.layout, t.stage_weights, t.matmul};
    }
    return pl;
}

/// The prepared layout of deployment `d` (its parallel layout in its engine's rules, its weights,
/// its drafter).
[[nodiscard]] constexpr PreparedLayout prepare_layout(const Deployment& d) {
    return prepare_layout(d.model, d.parallel_config(), d.served_weights(), d.serving.speculation);
}

namespace detail {

/// What prepare_engine computes of a deployment but each stage's memory: an unprepared evaluate()
/// builds these per call and writes the memory straight into its answer's report, so it neither
/// zero-fills nor copies a memory array sized to the most stages a layout may have.
struct EngineFigures {
    std::uint32_t gpus = 0;  ///< every GPU deployed, a multiple of the replica's (checked_gpus)
    ResolvedServing serving{};
    StartupCheck startup{};
    KvDtypeCheck kv_dtype_check{};
    LoadedWeights loaded_fullest{};  ///< ReplicaAnswer::loaded
    WeightBytes weights_on_gpu{};
    Bytes weights_per_gpu{};
    Bytes kv_per_token{};
    Bytes drafter_kv_per_token{};
    Bytes kv_per_token_per_gpu{};
};

}  // namespace detail

/// What evaluate() computes of a deployment on its GPU that no demand changes: the GPUs deployed,
/// the serving knobs resolved with the engine's defaults for the model, the start-up check, the
/// weights as loaded, each stage's memory (the reserve with its activation peak, the fraction, the
/// KV memory) and the per-token and per-GPU sizes. Serving code that asks one deployment about
/// many demands prepares it once (prepare_engine) and each evaluation pays only for the cache at
/// the demand's context.
struct PreparedEngine : detail::EngineFigures {
    std::array<EngineMemory, max_pipeline_stages> memory{};  ///< per stage
};

/// The figures of `d` no demand changes, with `prepared` = prepare_layout(d) (precondition: it is
/// d's). Throws what evaluate() throws of the deployment itself: InvalidLayout for a GPU count
/// that is no multiple of the replica's, InvalidInput for a knob the engine cannot take, a KV
/// dtype the GPU has no kernels for, or a GPU without memory.
[[nodiscard]] inline PreparedEngine prepare_engine(const Deployment& d,
                                                   const PreparedLayout& prepared);

/// Every figure of `d` under `demand`, with `prepared` = prepare_layout(d) and `engine` =
/// prepare_engine(d, prepared) computed beforehand (precondition: both are d's): the same figures
/// as evaluate(d, demand, o), and the same errors of the demand.
[[nodiscard]] inline ReplicaAnswer evaluate(const Deployment& d, const Demand& demand,
                                            const EvaluateOptions& o,
                                            const PreparedLayout& prepared,
                                            const PreparedEngine& engine);

/// Every figure of `d` under `demand`, with `prepared` = prepare_layout(d) computed beforehand
/// (precondition: it is d's). Throws as evaluate(d, demand, o) does.
[[nodiscard]] inline ReplicaAnswer evaluate(const Deployment& d, const Demand& demand,
                                            const EvaluateOptions& o,
                                            const PreparedLayout& prepared);

/// Every figure of `d` under `demand`. Throws InvalidLayout for a layout the model or the engine
/// cannot take (with the engine's reason) or a GPU count that is no multiple of the replica's, and
/// InvalidInput for a knob the engine cannot take
/// (resolve_serving), a zero context or concurrency, or a GPU without memory.
[[nodiscard]] inline ReplicaAnswer evaluate(const Deployment& d, const Demand& demand,
                                            const EvaluateOptions& o = {}) {
    return evaluate(d, demand, o, prepare_layout(d));
}

namespace detail {

/// The KV format `d`'s engine stores `d.kv` in for `model` under `parallel`. vLLM: the
/// checkpoint's compressed-tensors scheme over the dtype given where the release lets it
/// (vllm_given_kv_dtype, through v0.21), then its own layouts (vllm_stored_kv: DeepSeek-V3.2's
/// fp8 as fp8_ds_mla on FLASHMLA_SPARSE, plain on Blackwell's FLASHINFER_MLA_SPARSE and on ROCm).
/// The one place a layout is applied. The other engines store it as given.
[[nodiscard]] constexpr KvFormat engine_kv(const Deployment& d, const Model& model,
                                           const ParallelConfig& parallel) {
    const KvFormat served = d.kv_format();
    if (d.serving.engine != Engine::vllm) return served;
    const EngineVersion release = d.serving.engine_version.value_or(vllm_newest_release);
    const KvDtype given = vllm_given_kv_dtype(model.config().checkpoint, served.dtype, release);
    const KvFormat kv = given == served.dtype ? served : KvFormat(given);
    return vllm_stored_kv(model, kv, d.gpu, parallel.dcp, parallel.tp, release);
}

/// The replica `d` runs, its model and layout as `prepared` resolves them, its cache as the
/// engine stores it (engine_kv).
[[nodiscard]] inline Replica prepared_replica(const Deployment& d, const PreparedLayout& prepared) {
    return Replica{.model = prepared.model,
                   .gpu = d.gpu,
                   .parallel = prepared.parallel,
                   .weights = prepared.weights,
                   .kv = engine_kv(d, prepared.model, prepared.parallel)};
}

/// Every GPU `d` deploys (0: one replica's). Throws InvalidLayout unless they are a multiple of
/// the replica's.
[[nodiscard]] inline std::uint32_t checked_gpus(const Deployment& d, const Replica& r,
                                                const Layout& l) {
    const std::uint32_t per_replica = l.ranks();
    const std::uint32_t gpus = d.gpus == 0 ? per_replica : d.gpus;
    if (gpus % per_replica != 0)
        detail::throw_field_error<InvalidLayout>(
            detail::model_where(d.model.config()), "gpus",
            detail::text("a multiple of the replica's ", per_replica, " GPUs (",
                         r.parallel.rules == ParallelRules::vllm ? "dp x tp x pp" : "tp x pp", ")"),
            detail::text(gpus));
    return gpus;
}

/// prepare_engine's figures into `pe`, each stage's memory into `memory` (its first
/// prepared.layout.pp() entries; the rest are left as they are).
inline void prepare_engine_into(const Deployment& d, const PreparedLayout& prepared,
                                EngineFigures& pe, std::span<EngineMemory> memory);

/// evaluate() with `engine` = prepare_engine(d, prepared), or null: computed here, after the
/// demand's checks, so that a bad demand is reported before a bad deployment.
[[nodiscard]] inline ReplicaAnswer evaluate_with(const Deployment& d, const Demand& demand,
                                                 const EvaluateOptions& o,
                                                 const PreparedLayout& prepared,
                                                 const PreparedEngine* engine);

}  // namespace detail

[[nodiscard]] inline PreparedEngine prepare_engine(const Deployment& d,
                                                   const PreparedLayout& prepared) {
    PreparedEngine pe;
    detail::prepare_engine_into(d, prepared, pe, pe.memory);
    return pe;
}

inline void detail::prepare_engine_into(const Deployment& d, const PreparedLayout& prepared,
                                        EngineFigures& pe, std::span<EngineMemory> memory) {
    const Replica r = detail::prepared_replica(d, prepared);
    const Layout& l = prepared.layout;
    pe.gpus = detail::checked_gpus(d, r, l);
    pe.serving = resolve_serving(d.serving);
    // A KV dtype the GPU's architecture has no kernels for never starts (kv_support.hpp).
    if (const auto why = kv_dtype_refusal(r.kv.dtype, d.gpu, pe.serving.engine))
        detail::throw_field_error<InvalidInput>(
            detail::text("GPU '", d.gpu.id, "' (", arch_text(d.gpu), ")"), "kv_dtype",
            detail::text("a KV dtype it can hold (", *why, ")"), name(r.kv.dtype));
    // A dtype the engine has no name for, a vLLM release older than the dtype's name, or nvfp4
    // with MLA: valid input the engine refuses at start-up, an answer (engine/startup.hpp,
    // kv_dtype_check).
    pe.kv_dtype_check =
        kv_dtype_check(pe.serving.engine, d.model, r.kv.dtype, pe.serving.engine_version, d.gpu);
    if (pe.serving.engine == Engine::vllm) {
        detail::vllm_model_defaults(pe.serving, r);
    } else {
        detail::profile_elsewhere(pe.serving.budget.reserve, r.gpu);
    }
    if (r.gpu.memory_total.is_zero() && !pe.serving.budget.kv_memory_per_gpu)
        detail::throw_field_error<InvalidInput>(detail::text("GPU '", r.gpu.id, "'"),
                                                "memory_total", "> 0 bytes", "0");

    // Start-up, as the engine runs it: the configuration's checks (the layout's, then the
    // quantized widths per rank), the weights as loaded, then the memory.
    pe.startup = startup_check(pe.serving.engine, r.model, l, r.weights);
    // Each stage's weights as the engine holds them once loaded; only the memory and the weights
    // per GPU below read them.
    const EngineVersion release = pe.serving.engine_version;
    const SglangMoeRunnerBackend moe = pe.serving.options.sglang.moe_runner_backend;
    const StageWeights loaded = loaded_stage_weights(
        pe.serving.engine, r.gpu, r.model, l, r.weights, prepared.stage_weights, release, moe);
    const std::optional<GpuFamily> family = gpu_family(r.gpu);
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const LoadedWeights lw =
            loaded_weights(pe.serving.engine, family, r.model, l, st, r.weights,
                           prepared.stage_weights[st].total(), r.gpu.arch, release, moe);
        if (st == 0 || lw.loaded > pe.loaded_fullest.loaded) pe.loaded_fullest = lw;
    }
    for (std::uint32_t st = 0; st < l.pp(); ++st)
        memory[st] = detail::engine_memory_with(pe.serving.engine, r, l, st, loaded[st].total(),
                                                pe.serving.budget, pe.serving.options);

    // Weights and bytes, per GPU as the engine's memory counts them (a draft model's own).
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const WeightBytes& wb = prepared.stage_weights[st];
        if (st == 0 || wb.total() > pe.weights_on_gpu.total()) pe.weights_on_gpu = wb;
    }
    pe.weights_per_gpu = pe.weights_on_gpu.total();
    for (std::uint32_t st = 0; st < l.pp(); ++st)
        pe.weights_per_gpu = std::max(pe.weights_per_gpu, loaded[st].total());
    pe.kv_per_token = kv_bytes_per_token(r.model, r.kv);
    if (prepared.drafter_layers != 0)
        pe.drafter_kv_per_token = pe.kv_per_token - kv_bytes_per_token(d.model, r.kv);
    for (std::uint32_t st = 0; st < l.pp(); ++st)
        pe.kv_per_token_per_gpu =
            std::max(pe.kv_per_token_per_gpu, kv_bytes_per_token(r.model, r.kv, l.stage(st)));
}

[[nodiscard]] inline ReplicaAnswer evaluate(const Deployment& d, const Demand& demand,
                                            const EvaluateOptions& o,
                                            const PreparedLayout& prepared) {
    return detail::evaluate_with(d, demand, o, prepared, nullptr);
}

[[nodiscard]] inline ReplicaAnswer evaluate(const Deployment& d, const Demand& demand,
                                            const EvaluateOptions& o,
                                            const PreparedLayout& prepared,
                                            const PreparedEngine& engine) {
    return detail::evaluate_with(d, demand, o, prepared, &engine);
}

[[nodiscard]] inline ReplicaAnswer detail::evaluate_with(const Deployment& d, const Demand& demand,
                                                         const EvaluateOptions& o,
                                                         const PreparedLayout& prepared,
                                                         const PreparedEngine* engine) {
    const auto where = [&] { return detail::model_where(d.model.config()); };
    if (demand.context == 0)
        detail::throw_field_error<InvalidInput>(where(), "context", ">= 1 token", "0");
    if (demand.concurrency == 0)
        detail::throw_field_error<InvalidInput>(where(), "concurrency", ">= 1 sequence", "0");
    // Checked only when given: the message's text costs more than the rest of the checks.
    const std::optional<TokenSplit> split =
        demand.prompt_tokens || demand.output_tokens ? token_split(demand, where()) : std::nullopt;
    if (demand.shared_prefix_tokens != 0) check_shared_prefix(demand, where());
    check_run_shape(demand, where());
    ReplicaAnswer a{.replica = prepared_replica(d, prepared)};
    const Replica& r = a.replica;
    const Layout& l = prepared.layout;
    // The deployment's own figures: prepared beforehand, else here, after the demand's checks,
    // each stage's memory straight into the report (a search pays this per candidate).
    std::optional<EngineFigures> own_engine;
    if (engine)
        std::copy_n(engine->memory.begin(), l.pp(), a.report.memory.begin());
    else
        prepare_engine_into(d, prepared, own_engine.emplace(), a.report.memory);
    const EngineFigures& pe = engine ? static_cast<const EngineFigures&>(*engine) : *own_engine;
    const std::uint32_t per_replica = l.ranks();
    a.gpus = pe.gpus;
    a.replicas = a.gpus / per_replica;
    a.placement = l.placement();
    a.replica_gpus = per_replica;
    const std::uint32_t node = std::max<std::uint32_t>(r.gpu.gpus_per_node, 1);
    a.nodes = (per_replica + node - 1) / node;
    a.dp_ranks = l.dp();
    a.weight_source = d.weights                            ? WeightSource::given
                      : !d.model.config().checkpoint.known ? WeightSource::assumed
                      : engine_downcasts(d.model, d.serving.engine, d.serving.engine_version)
                          ? WeightSource::downcast
                          : WeightSource::checkpoint;
    a.kv_source = d.served_kv().source;
    a.serving = pe.serving;
    a.drafter_layers = prepared.drafter_layers;
    a.drafter_weights = prepared.drafter_weights;
    a.demand = demand;
    a.concurrency_per_replica = (demand.concurrency + a.replicas - 1) / a.replicas;
    a.concurrency_per_dp_rank = (a.concurrency_per_replica + a.dp_ranks - 1) / a.dp_ranks;

    // The model's limit (vllm/config/model.py, _get_and_verify_max_len).
    a.limit = context_limit(d.model.config());
    a.over_limit = demand.context > a.limit.tokens;
    a.long_context_allowed = d.serving.allow_long_context;

    // Start-up, as the engine runs it (prepare_engine: the configuration's checks, the weights as
    // loaded, the memory), then the cache at the demand's context, built in place.
    a.startup = pe.startup;
    a.kv_dtype_check = pe.kv_dtype_check;
    a.loaded = pe.loaded_fullest;
    a.report.num_stages = l.pp();
    detail::engine_report_cache(a.report, a.serving.engine, r, l, demand.context, a.serving.budget,
                                a.serving.options);
    const EngineCapacity& cap = a.report.summary;
    a.limiting_stage = std::min(detail::engine_limiting_stage(a.report), l.pp() - 1);
    const Shard shard = l.stage(a.limiting_stage);
    a.kv_given = a.serving.budget.kv_memory_per_gpu.has_value();
    a.kv_budget = a.kv_given ? *a.serving.budget.kv_memory_per_gpu
                             : a.report.memory[a.limiting_stage].kv_memory;
    a.kv_per_sequence =
        reserved_per_sequence(r.model, r.kv, demand.context, a.serving.block_size, shard);
    // SGLang's single token pool spends a whole cell, every layer of the stage, on each token a
    // sequence holds (MHATokenToKVPool and MLATokenToKVPool size every layer's buffer to the
    // pool, python/sglang/srt/mem_cache/memory_pool.py): sliding layers keep the whole context
    // unless the hybrid SWA pool splits them off. What a sequence takes there is what the pool
    // admits by, so the need and the room agree.
    if (a.serving.engine == Engine::sglang && a.report.sglang.swa_tokens == 0) {
        const SglangKvPool& pool = a.report.sglang;
        const Bytes cells =
            pool.cell_size * (detail::ceil_div(demand.context, pool.page_size) * pool.page_size);
        a.kv_per_sequence = std::max(a.kv_per_sequence, cells);
    }
    a.kv_tokens = cap.tokens;
    a.dp_rank_admitted = cap.starts ? cap.admitted : 0;
    a.dp_rank_sequence_cap = cap.sequence_cap;
    const auto within_cap = [&](std::uint64_t n) {
        return a.dp_rank_sequence_cap == 0 ? n : std::min(n, a.dp_rank_sequence_cap);
    };
    a.admitted_without_sharing = detail::mul(a.dp_rank_admitted, a.dp_ranks, "a sequence count");
    a.max_concurrency_without_sharing =
        detail::mul(cap.starts ? cap.max_sequences() : 0, a.dp_ranks, "a sequence count");
    a.total_max_concurrency_without_sharing =
        detail::mul(a.max_concurrency_without_sharing, a.replicas, "a sequence count");

    // A shared prompt prefix: its full blocks held once per dp rank's cache, each sequence then
    // needing only its own (paged_shared_prefix's rules: only full blocks are shared, as vLLM
    // caches only full blocks, vllm/v1/core/block_pool.py cache_full_blocks; a sliding layer shares
    // them only while they are in its window). A request whose whole prompt is cached still
    // computes its last token (vllm/v1/core/kv_cache_manager.py, get_computed_blocks:
    // max_cache_hit_length = num_tokens - 1), so at most context - 1 tokens are shared.
    std::uint64_t sharing_sequences = 0;  // sequences a dp rank runs, sharing it
    Bytes shared_each{};
    if (demand.shared_prefix_tokens != 0) {
        const std::uint64_t prefix = std::min(demand.shared_prefix_tokens, demand.context - 1);
        const SharedPrefixUse two = paged_shared_prefix(r.model, r.kv, 2, prefix, demand.context,
                                                        a.serving.block_size, shard);
        a.shared_prefix_blocks = two.shared_blocks;
        shared_each = two.saved();
        a.shared_prefix_bytes_per_sequence = shared_each;
        a.dp_rank_admitted = detail::admitted_with_prefix(a.report, a.dp_rank_admitted,
                                                          a.kv_per_sequence, shared_each);
    }
    a.dp_rank_max_concurrency = cap.starts ? within_cap(a.dp_rank_admitted) : 0;
    a.admitted = detail::mul(a.dp_rank_admitted, a.dp_ranks, "a sequence count");
    a.sequence_cap = detail::mul(a.dp_rank_sequence_cap, a.dp_ranks, "a sequence count");
    a.max_concurrency = detail::mul(a.dp_rank_max_concurrency, a.dp_ranks, "a sequence count");
    a.max_concurrency_ratio = cap.max_concurrency;
    a.total_max_concurrency = detail::mul(a.max_concurrency, a.replicas, "a sequence count");
    // What the demand's sequences need on a GPU: each its blocks, the prefix's once.
    a.kv_needed = a.kv_per_sequence * a.concurrency_per_dp_rank;
    if (!shared_each.is_zero() && shared_each < a.kv_per_sequence) {
        a.kv_needed -= shared_each * (a.concurrency_per_dp_rank - 1);
        sharing_sequences = std::min(a.concurrency_per_dp_rank, a.dp_rank_max_concurrency);
        if (sharing_sequences > 1) {
            a.shared_prefix_blocks_saved =
                detail::mul(a.shared_prefix_blocks, sharing_sequences - 1, "a block count");
            a.shared_prefix_bytes_saved = shared_each * (sharing_sequences - 1);
        }
    }
    if (a.kv_needed <= a.kv_budget)
        a.headroom = a.kv_budget - a.kv_needed;
    else
        a.shortfall = a.kv_needed - a.kv_budget;
    if (a.serving.engine == Engine::vllm && !a.report.vllm.enough_memory &&
        a.report.vllm.refused.empty())
        a.estimated_max_model_len = a.report.vllm.estimated_max_model_len;

    // The verdict and its reason.
    bool weights_fit = true, outside_fits = true;
    for (const EngineMemory& m : a.report.stage_memory()) {
        weights_fit = weights_fit && m.shortfall.is_zero();
        outside_fits = outside_fits && m.outside_fits;
    }
    // In vLLM's order: argument parsing (a dtype name the release lacks), the model's
    // configuration (its length), VllmConfig's validators (nvfp4 with MLA), the weights.
    if (a.kv_dtype_check.rule == KvDtypeRule::release_too_old ||
        a.kv_dtype_check.rule == KvDtypeRule::no_engine_name) {
        a.refusal = Refusal::kv_dtype;
    } else if (a.over_limit && !a.long_context_allowed) {
        a.refusal = Refusal::context_limit;
    } else if (a.kv_dtype_check.refused()) {
        a.refusal = Refusal::kv_dtype;
    } else if (a.startup.refused) {
        a.refusal = Refusal::quantization_block;
    } else if (!a.kv_given && !weights_fit) {
        a.refusal = Refusal::weights;
    } else if (!a.kv_given && !outside_fits) {
        a.refusal = Refusal::outside_fraction;
    } else if (!cap.starts) {
        const bool no_cache =
            (a.serving.engine == Engine::vllm && !a.report.vllm.refused.empty()) ||
            (a.serving.engine == Engine::sglang && a.report.sglang.max_total_num_tokens == 0) ||
            a.serving.engine == Engine::trtllm;  // it starts whenever it has a block
        a.refusal = no_cache ? Refusal::cache : Refusal::request;
    }
    if (a.refusal != Refusal::none) {
        a.verdict = Verdict::does_not_start;
        a.max_concurrency = a.admitted = a.total_max_concurrency = 0;
        a.dp_rank_max_concurrency = a.dp_rank_admitted = 0;
        a.max_concurrency_without_sharing = a.admitted_without_sharing = 0;
        a.total_max_concurrency_without_sharing = 0;
        a.shared_prefix_blocks_saved = 0;
        a.shared_prefix_bytes_saved = Bytes{};
    } else {
        a.verdict =
            a.total_max_concurrency >= demand.concurrency ? Verdict::fits : Verdict::does_not_fit;
    }

    // The longest contexts, searched over the engine's own cache and capped at the limit.
    if (o.contexts && a.refusal != Refusal::weights && a.refusal != Refusal::outside_fraction &&
        a.refusal != Refusal::quantization_block && a.refusal != Refusal::kv_dtype) {
        std::array<Bytes, max_pipeline_stages> kv{};
        for (std::uint32_t st = 0; st < l.pp(); ++st)
            kv[st] = a.kv_given ? a.kv_budget : a.report.memory[st].kv_memory;
        const std::span<const Bytes> per_stage(kv.data(), l.pp());
        // Past the limit only when allowed; then up to 2^40 tokens.
        const std::uint64_t most = a.long_context_allowed ? (1ULL << 40) : a.limit.tokens;
        a.max_context =
            detail::longest_admitted(r, l, per_stage, a.serving, a.concurrency_per_dp_rank, most);
        a.longest_single_context = detail::longest_admitted(r, l, per_stage, a.serving, 1, most);
        // A model of constant state alone holds any length in its cache, but the engine still
        // refuses a length past the model's limit unless long contexts are allowed.
        if (!a.long_context_allowed) {
            if (!a.max_context) a.max_context = a.limit.tokens;
            if (!a.longest_single_context) a.longest_single_context = a.limit.tokens;
        }
        a.max_context_at_limit =
            !a.long_context_allowed && a.max_context && *a.max_context == a.limit.tokens;
        a.longest_at_limit = !a.long_context_allowed && a.longest_single_context &&
                             *a.longest_single_context == a.limit.tokens;
    } else if (o.contexts) {
        // The engine stops before it builds a cache: no context runs (nullopt would read "any").
        a.max_context = a.longest_single_context = 0;
    }

    // Weights and bytes, per GPU as the engine's memory counts them (a draft model's own).
    a.weights = prepared.weights_whole;
    a.weights_on_gpu = pe.weights_on_gpu;
    a.weights_checkpoint_per_gpu = a.weights_on_gpu.total();
    a.weights_per_gpu = pe.weights_per_gpu;
    a.kv_per_token = pe.kv_per_token;
    a.drafter_kv_per_token = pe.drafter_kv_per_token;
    a.kv_per_token_per_gpu = pe.kv_per_token_per_gpu;

    // The decode bound at each replica's load.
    // Both are of the model's own step: what speculation saves depends on its acceptance, not
    // modelled, so a drafter's layers are left out.
    const PreparedStep* const own = prepared.step ? &*prepared.step : nullptr;
    const Layout& step_layout = own ? own->layout : prepared.layout;
    const StageWeights& step_weights = own ? own->stage_weights : prepared.stage_weights;
    const auto& step_matmul = own ? own->matmul : prepared.matmul;
    std::optional<Replica> plain;
    if (own)
        plain = Replica{.model = d.model,
                        .gpu = d.gpu,
                        .parallel = own->parallel,
                        .weights = prepared.weights,
                        .kv = r.kv};
    const Replica& stepped = plain ? *plain : r;
    const bool has_link = r.parallel.tp == 1 || r.gpu.scale_up_bandwidth > BytesPerSecond{} ||
                          r.gpu.pcie_bandwidth > BytesPerSecond{};
    const bool has_figures = r.gpu.memory_bandwidth > BytesPerSecond{} &&
                             r.gpu.dense(*with_compute(o.roofline, r).compute).has_value();
    if (o.decode && has_figures)
        a.decode = decode_point(
            detail::decode_costs_with(stepped, step_layout, step_weights, step_matmul, o.roofline),
            a.concurrency_per_replica, demand.context);

    // The latency estimate at each replica's load, with the verdict's running cap.
    a.gpu_family = gpu_family(r.gpu);
    if (!split || !o.estimate) {
        a.estimate_basis = EstimateBasis::not_asked;
    } else if (!a.starts()) {
        a.estimate_basis = EstimateBasis::does_not_start;
    } else if (!has_figures || !has_link) {
        a.estimate_basis = EstimateBasis::no_gpu_figures;
    } else if (!d.serving.estimate && !a.gpu_family) {
        a.estimate_basis = EstimateBasis::unknown_family;
    } else {
        if (d.serving.estimate) {
            a.estimate_params = *d.serving.estimate;
            a.estimate_basis = EstimateBasis::given;
        } else {
            const FamilyParams& f = default_params(*a.gpu_family);
            a.estimate_params = f.params;
            a.estimate_basis =
                f.fitted ? EstimateBasis::family_fitted : EstimateBasis::family_borrowed;
        }
        RooflineOptions ro = o.roofline;
        ro.efficiency.reset();  // the estimate's fractions replace any efficiency
        // The run's requests spread over the replicas as its clients do (the busiest's share).
        std::optional<std::uint64_t> requests = demand.run.requests;
        if (requests) *requests = (*requests + a.replicas - 1) / a.replicas;
        const Load load{.kind = LoadKind::serving,
                        .concurrency = a.concurrency_per_replica,
                        .prompt_tokens = split->prompt,
                        .output_tokens = split->output,
                        .max_num_batched_tokens = d.serving.max_num_batched_tokens,
                        .fixed_lengths = demand.run.fixed_lengths,
                        .length_spread = demand.run.length_spread,
                        .requests = requests};
        a.estimate = estimate_latency(
            detail::decode_costs_with(stepped, step_layout, step_weights, step_matmul, ro), load,
            a.estimate_params,
            RunningCap{std::max<std::uint64_t>(a.max_concurrency, 1), a.max_concurrency >= 1});
    }
    return a;
}

}  // namespace kvplan
