#pragma once

// An estimate of serving latency beside the roofline bound, never in its place. The bound says no
// step is faster than its bytes at peak bandwidth or its FLOPs at peak throughput; what users
// measure is slower, by the fraction of peak a real kernel reaches and by fixed costs the bound
// leaves out. The estimate models a steady-state step of continuous batching with chunked prefill,
// as vLLM V1 and SGLang schedule it:
//
//   step(b decodes at context c, p prefill tokens)
//       = max(bytes / (bandwidth x f_bw), FLOPs / (peak x f_compute))
//         + layers x t_layer                                   (launches and small kernels)
//         + 2 x layers x (t_all_reduce + message / link x 2 (tp - 1) / tp)   (tp > 1)
//         + MoE layers x (dispatch + combine at link peak)   (expert parallelism: AllToAll)
//   bytes = weights (once, however many tokens) + KV of the b running sequences + KV written
//   FLOPs = 2 x matmul parameters x (b + p) + attention of the decodes + causal attention of p
//
// Serving at concurrency C (a closed loop: a new request as soon as one finishes), prompt I,
// output O: B = min(C, what the KV cache holds, max_num_seqs) sequences run at once, at the mean
// context I + O/2; the rest wait. A prompt is prefilled in chunks of min(I, max_num_batched_tokens
// - B) tokens riding along the decodes (vllm/v1/core/sched/scheduler.py schedules running
// requests first and gives waiting prefills the token budget left). While one request decodes
// its O tokens the other B - 1 each bring their ceil(I / chunk) prefill chunks, so a share
// min(1, (B - 1) x chunks / O) of its steps is a mixed step:
//
//   ITL = TPOT = decode step + share x (mixed step - decode step)
//   TTFT       = chunks x (a chunk with B - 1 decodes) + half a step in flight (B > 1)
//                + the wait in the queue, (C - B) / B x the request's whole time (Little's law
//                for a closed loop of C clients on B slots)
//   tokens/s   = B x O / (the request's whole time)
//
// A static batch (vllm bench latency, a TensorRT-LLM batch) prefills B prompts in passes of the
// token budget, then decodes O - 1 steps at the mean context. With pipeline parallelism a token
// passes every stage in turn: times are summed over stages, as the bound's TPOT is.
//
// Under attention data parallelism a step's time is its busiest dp rank's: ceil(B / dp) of the
// decodes and the prefill chunk, with the experts seeing every rank's tokens.
//
// What it leaves out: prefix caching, speculative decoding, preemption, CPU-side scheduling that
// does not scale with layers, and the latency (not the bytes) of the MoE all-to-all. The fractions
// and fixed costs are per GPU family, fitted on published measurements (default_params names them).

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "../budget.hpp"
#include "../detail/enum_table.hpp"
#include "../roofline.hpp"

namespace kvplan {

/// GPU families whose achieved fractions differ.
enum class GpuFamily : std::uint8_t { ampere, ada, hopper, blackwell, cdna3 };

inline constexpr std::array all_gpu_families{GpuFamily::ampere, GpuFamily::ada, GpuFamily::hopper,
                                             GpuFamily::blackwell, GpuFamily::cdna3};

/// Each family's spelling.
inline constexpr FixedArray<detail::EnumName<GpuFamily>, 5> gpu_family_names{{
    {GpuFamily::ampere, "ampere"},
    {GpuFamily::ada, "ada"},
    {GpuFamily::hopper, "hopper"},
    {GpuFamily::blackwell, "blackwell"},
    {GpuFamily::cdna3, "cdna3"},
}};

/// "ampere", "ada", "hopper", "blackwell", "cdna3".
[[nodiscard]] constexpr std::string_view name(GpuFamily f) noexcept {
    return detail::enum_name(gpu_family_names, f);
}

/// The family of a GPU by its id (a100* ampere; l4, l40* ada; h100*, h200*, gh200* hopper; b100*,
/// b200*, gb200* blackwell; mi300*, mi325* cdna3), or nullopt for one not known.
[[nodiscard]] constexpr std::optional<GpuFamily> gpu_family(const GpuSpec& g) noexcept {
    const std::string_view id(g.id);
    const auto starts = [&](std::string_view p) { return id.substr(0, p.size()) == p; };
    if (starts("a100")) return GpuFamily::ampere;
    if (starts("l4")) return GpuFamily::ada;  // l4 and l40, l40s
    if (starts("h100") || starts("h200") || starts("gh200")) return GpuFamily::hopper;
    if (starts("b100") || starts("b200") || starts("gb200")) return GpuFamily::blackwell;
    if (starts("mi300") || starts("mi325")) return GpuFamily::cdna3;
    return std::nullopt;
}

/// What the estimate adds to the bound: achieved fractions of peak and fixed costs per step.
struct EstimateParams {
    double bandwidth = 1.0;        ///< achieved fraction of peak memory bandwidth, in (0, 1]
    double compute = 1.0;          ///< achieved fraction of peak dense FLOP/s, in (0, 1]
    Seconds layer_overhead{};      ///< per layer per step: kernel launches and small kernels
    Seconds all_reduce_latency{};  ///< per tensor-parallel all-reduce (its bytes move at link peak)
    friend constexpr bool operator==(const EstimateParams&, const EstimateParams&) = default;
};

/// A family's default parameters and the measurements they were fitted on.
struct FamilyParams {
    GpuFamily family = GpuFamily::hopper;
    EstimateParams params{};
    bool fitted = false;           ///< false: borrowed from another family, no measurement seen
    std::string_view fitted_on{};  ///< the rows of tests/data/latency_measurements.json
};

// Fitted by fit_params (kvplan/calibrate/latency.hpp) from the start {0.8, 0.5, 20 us, 10 us} on
// the "fit" rows of tests/data/latency_measurements.json (a test refits them and checks these).
inline constexpr std::array default_family_params{
    FamilyParams{GpuFamily::ampere,
                 {.bandwidth = 1.00,
                  .compute = 0.45,
                  .layer_overhead = 153.0 * microseconds,
                  .all_reduce_latency = 16.0 * microseconds},
                 true,
                 "NeMo Llama-2-7B on A100 80GB SXM4, TP 1/2/4/8, batch 1 and 4"},
    FamilyParams{GpuFamily::ada,
                 {.bandwidth = 1.00,
                  .compute = 0.45,
                  .layer_overhead = 153.0 * microseconds,
                  .all_reduce_latency = 16.0 * microseconds},
                 false,
                 "none: Ampere's values (no published Ada measurement in the table)"},
    FamilyParams{GpuFamily::hopper,
                 {.bandwidth = 1.00,
                  .compute = 0.46,
                  .layer_overhead = 123.0 * microseconds,
                  .all_reduce_latency = 7.0 * microseconds},
                 true,
                 "NIM Llama-3.3-70B fp8 on 2 x H100 (concurrency 1, 25, 100, 200; 500/2000 at 1); "
                 "NeMo Llama-2-7B on H100, TP 1/2/4/8, batch 1 and 4"},
    FamilyParams{GpuFamily::blackwell,
                 {.bandwidth = 1.00,
                  .compute = 0.46,
                  .layer_overhead = 123.0 * microseconds,
                  .all_reduce_latency = 7.0 * microseconds},
                 false,
                 "none: Hopper's values (no published Blackwell measurement in the table)"},
    FamilyParams{GpuFamily::cdna3,
                 {.bandwidth = 0.34,
                  .compute = 0.16,
                  .layer_overhead = 2.0 * microseconds,
                  .all_reduce_latency = 2.0 * microseconds},
                 true,
                 "vLLM Llama-3.1-405B FP8 on 8 x MI300X, batch 1, 4, 16, 64, 256"},
};

/// The default parameters of a family.
[[nodiscard]] constexpr const FamilyParams& default_params(GpuFamily f) noexcept {
    return default_family_params[static_cast<std::size_t>(f)];
}

/// The default parameters for a GPU, or nullopt when its family is not known.
[[nodiscard]] constexpr std::optional<FamilyParams> default_params(const GpuSpec& g) noexcept {
    const std::optional<GpuFamily> f = gpu_family(g);
    if (!f) return std::nullopt;
    return default_params(*f);
}

/// How requests reach the replica.
enum class LoadKind : std::uint8_t {
    serving,       ///< a closed loop of `concurrency` clients, each sending again when served
    static_batch,  ///< one batch of `concurrency` prompts, prefilled then decoded together
};

/// What a replica serves: every request has the same prompt and output length.
struct Load {
    LoadKind kind = LoadKind::serving;
    std::uint64_t concurrency = 1;    ///< requests in flight (vllm bench serve --max-concurrency)
    std::uint64_t prompt_tokens = 1;  ///< I
    std::uint64_t output_tokens = 1;  ///< O, the first token included
    /// Tokens of one step; nullopt: vLLM's default for the GPU (vllm_batch_defaults).
    std::optional<std::uint64_t> max_num_batched_tokens{};
    /// Sequences that may run at once; nullopt: what the KV budget holds at I + O tokens each
    /// (replica_budget with its defaults), at most vLLM's max_num_seqs.
    std::optional<std::uint64_t> max_running{};
};

/// One step's cost, every term; times summed over pipeline stages, bytes and FLOPs on a GPU of
/// the first stage.
struct StepTerms {
    std::uint64_t decodes = 0;  ///< sequences decoding one token each
    std::uint64_t prefill_tokens = 0;
    Bytes bytes{};  ///< weights read + KV read + KV written
    Flops flops{};
    Seconds memory{};             ///< bytes at bandwidth x fraction
    Seconds compute{};            ///< FLOPs at peak x fraction
    Seconds layers{};             ///< layers x layer_overhead
    Seconds all_reduce{};         ///< latency and bytes of every all-reduce
    Seconds all_to_all{};         ///< expert parallelism's dispatch and combine at link peak
    Seconds time{};               ///< max(memory, compute) + layers + all_reduce + all_to_all
    Bound bound = Bound::memory;  ///< the larger of memory and compute (first stage)
};

/// The estimate, its terms, and the bound beside it.
struct LatencyEstimate {
    LoadKind kind = LoadKind::serving;
    std::uint64_t concurrency = 0;
    std::uint64_t running = 0;       ///< B: sequences decoding at once
    std::uint64_t waiting = 0;       ///< C - B: requests in the queue
    std::uint64_t running_cap = 0;   ///< what caps B (KV cache, max_num_seqs, or given)
    bool kv_holds_one = true;        ///< false: the KV budget holds no sequence of I + O
    std::uint64_t token_budget = 0;  ///< max_num_batched_tokens
    std::uint64_t chunk = 0;         ///< prefill tokens per chunk (per pass for a batch)
    std::uint64_t chunks = 0;        ///< chunks per prompt (passes for a batch)
    std::uint64_t mean_context = 0;  ///< I + O/2: the context of a running sequence
    double mixed_share = 0.0;        ///< share of a request's decode steps carrying a chunk
    StepTerms decode_step{};         ///< B decodes
    StepTerms mixed_step{};          ///< B - 1 decodes and another request's chunk
    StepTerms prefill_step{};        ///< the request's own chunk (a batch: all its prefill)
    Seconds itl{};                   ///< mean inter-token latency
    Seconds tpot{};                  ///< time per output token after the first (= itl here)
    Seconds ttft{};                  ///< prefill + step in flight + queue
    Seconds ttft_prefill{};
    Seconds ttft_in_flight{};
    Seconds ttft_queue{};
    Seconds request{};          ///< a request's whole time once admitted (a batch: e2e)
    double tokens_per_s = 0.0;  ///< output tokens per second of the replica
    double tokens_per_s_per_gpu = 0.0;
    // The roofline bound at the same load (peak figures, no fixed costs).
    Seconds itl_bound{};      ///< decode bound TPOT at B sequences of I tokens
    Seconds ttft_bound{};     ///< prefill bound of one prompt (a batch: all of them)
    Seconds request_bound{};  ///< a batch: prefill bound + (O - 1) x decode bound
};

namespace detail {

constexpr void check_estimate(const Replica& r, const Load& l, const EstimateParams& p) {
    const auto where = [&] { return model_where(r.model.config()); };
    const auto fraction = [](double f) { return f > 0.0 && f <= 1.0; };
    if (!fraction(p.bandwidth))
        throw_field_error<InvalidInput>(where(), "estimate.bandwidth", "a fraction in (0, 1]",
                                        std::to_string(p.bandwidth));
    if (!fraction(p.compute))
        throw_field_error<InvalidInput>(where(), "estimate.compute", "a fraction in (0, 1]",
                                        std::to_string(p.compute));
    if (p.layer_overhead < Seconds{} || p.all_reduce_latency < Seconds{})
        throw_field_error<InvalidInput>(where(), "estimate.overheads", ">= 0 s", "a negative time");
    if (l.concurrency == 0)
        throw_field_error<InvalidInput>(where(), "load.concurrency", ">= 1 request", "0");
    if (l.prompt_tokens == 0)
        throw_field_error<InvalidInput>(where(), "load.prompt_tokens", ">= 1 token", "0");
    if (l.output_tokens == 0)
        throw_field_error<InvalidInput>(where(), "load.output_tokens", ">= 1 token", "0");
    if (l.max_num_batched_tokens && *l.max_num_batched_tokens == 0)
        throw_field_error<InvalidInput>(where(), "load.max_num_batched_tokens", ">= 1 token", "0");
    if (l.max_running && *l.max_running == 0)
        throw_field_error<InvalidInput>(where(), "load.max_running", ">= 1 sequence", "0");
}

/// What one step carries on top of its decodes: `prompts` prompts of `prompt_tokens`, of which
/// a share `share` is done in this step, over `passes` forwards (a batch's prefill may take
/// several; weights and fixed costs are paid once per pass).
struct PrefillPart {
    std::uint64_t prompts = 0;
    std::uint64_t prompt_tokens = 0;
    double share = 1.0;
    std::uint64_t passes = 1;
    /// The prompts spread over the attention data-parallel ranks (ceil(prompts / dp) on the
    /// busiest); otherwise all of them run on one rank.
    bool spread = false;
};

/// One step on stage `s`: `decodes` sequences at `context` tokens plus `pre`.
[[nodiscard]] constexpr StepTerms stage_step(const DecodeCosts& c, std::uint32_t s,
                                             std::uint64_t decodes, std::uint64_t context,
                                             const PrefillPart& pre, const EstimateParams& p) {
    const DecodeCosts::Stage& cs = c.stages[s];
    const Model& m = c.replica.model;
    const LayerStack& L = m.layers();
    const double prefill_tokens =
        static_cast<double>(pre.prompts) * static_cast<double>(pre.prompt_tokens) * pre.share;
    const auto tokens = decodes + static_cast<std::uint64_t>(prefill_tokens + 0.5);
    StepTerms t;
    t.decodes = decodes;
    t.prefill_tokens = tokens - decodes;
    // Under attention data parallelism the busiest dp rank runs its own decodes and the chunk;
    // the experts see every rank's tokens.
    const std::uint64_t own_prompts =
        pre.spread ? own_sequences(c.layout, pre.prompts) : pre.prompts;
    const std::uint64_t own_prefill =
        pre.spread && pre.prompts > 0
            ? static_cast<std::uint64_t>(static_cast<double>(own_prompts) *
                                             static_cast<double>(pre.prompt_tokens) * pre.share +
                                         0.5)
            : t.prefill_tokens;
    const std::uint64_t own = own_sequences(c.layout, decodes) + own_prefill;
    // Weights: read once per pass; MoE experts by the tokens of a pass.
    const std::uint64_t per_pass = (tokens + pre.passes - 1) / pre.passes;
    const std::uint64_t own_per_pass = (own + pre.passes - 1) / pre.passes;
    const Bytes weights = weight_read_at(cs.weights, m.config(), per_pass).read * pre.passes;
    Bytes kv{};
    double attention = 0.0;
    if (decodes > 0) {
        const DecodeLoad d = decode_load(c, s, decodes, context);
        kv += d.kv_read;
        attention += d.attention.in(FLOP);
    }
    if (pre.prompts > 0 && pre.share > 0.0) {
        // The KV the prompts write, and their causal attention, in the share this step does.
        Bytes prompt_kv{};
        for (std::uint32_t k = 0; k < L.num_specs; ++k)
            prompt_kv += (cs.kv_per_token[k] *
                              tokens_on_rank(L.specs[k].kind,
                                             tokens_kept(L.specs[k], pre.prompt_tokens), cs.shard) +
                          cs.state[k]) *
                         cs.layers[k];
        kv += scale_up(prompt_kv * own_prompts, pre.share);
        attention += prefill_attention_flops(m, cs.shard, pre.prompt_tokens) *
                     static_cast<double>(own_prompts) * pre.share;
    }
    t.bytes = weights + kv;
    t.flops = matmul_flops(cs.matmul, own, tokens) + Flops::in_base(attention);
    const GpuSpec& g = c.replica.gpu;
    t.memory = t.bytes / (g.memory_bandwidth * p.bandwidth);
    t.compute = t.flops / (peak_flops(g, detail::compute_of(c.options)) * p.compute);
    t.bound = t.compute > t.memory ? Bound::compute : Bound::memory;
    const std::uint32_t layers = shard_end(m, cs.shard) - cs.shard.first_layer;
    const double passes = static_cast<double>(pre.passes);
    t.layers = p.layer_overhead * (static_cast<double>(layers) * passes);
    if (c.layout.attention_tp() > 1) {
        // Two all-reduces per layer (after attention, after the MLP), each of a pass's tokens.
        const AllReduce ar = all_reduce(c.replica, c.layout, own_per_pass, c.options);
        t.all_reduce =
            (ar.per_layer + p.all_reduce_latency * 2.0) * (static_cast<double>(layers) * passes);
    }
    // Expert parallelism: each MoE layer of the stage dispatches and combines a pass's tokens.
    const AllToAll a2a = all_to_all(c.replica, c.layout, own_per_pass);
    if (a2a.applies) {
        std::uint32_t moe_layers = 0;
        for (std::uint32_t i = cs.shard.first_layer; i < shard_end(m, cs.shard); ++i)
            moe_layers += m.is_moe_layer(i) ? 1 : 0;
        t.all_to_all = a2a.per_layer * (static_cast<double>(moe_layers) * passes);
    }
    t.time = std::max(t.memory, t.compute) + t.layers + t.all_reduce + t.all_to_all;
    return t;
}

/// The step over every stage: times summed (a token passes each), bytes and FLOPs of stage 0.
[[nodiscard]] constexpr StepTerms step(const DecodeCosts& c, std::uint64_t decodes,
                                       std::uint64_t context, const PrefillPart& pre,
                                       const EstimateParams& p) {
    StepTerms sum = stage_step(c, 0, decodes, context, pre, p);
    for (std::uint32_t s = 1; s < c.layout.pp(); ++s) {
        const StepTerms t = stage_step(c, s, decodes, context, pre, p);
        sum.memory += t.memory;
        sum.compute += t.compute;
        sum.layers += t.layers;
        sum.all_reduce += t.all_reduce;
        sum.all_to_all += t.all_to_all;
        sum.time += t.time;
    }
    return sum;
}

[[nodiscard]] constexpr std::uint64_t ceil_div_u(std::uint64_t a, std::uint64_t b) noexcept {
    return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace detail

/// The sequences a replica runs at once for `l`: l.max_running if given, else what its KV budget
/// holds at I + O tokens each (replica_budget with default options) capped by vLLM's
/// max_num_seqs; never below 1 (`holds_one` says whether the KV budget holds one at all).
struct RunningCap {
    std::uint64_t sequences = 1;
    bool holds_one = true;
};

[[nodiscard]] constexpr RunningCap running_cap(const Replica& r, const Load& l) {
    if (l.max_running) return {*l.max_running, true};
    const ReplicaBudget b = replica_budget(
        r, Workload{.context = l.prompt_tokens + l.output_tokens, .concurrency = l.concurrency});
    // max_num_seqs caps each attention data-parallel rank.
    const std::uint64_t seqs = std::min<std::uint64_t>(
        b.max_concurrency,
        std::uint64_t{vllm_batch_defaults(r.gpu).max_num_seqs} * r.layout().dp());
    return {std::max<std::uint64_t>(seqs, 1), b.max_concurrency >= 1};
}

/// The estimate for `l` on the replica of prepared costs `c`, with the running cap `cap`
/// (running_cap). Throws InvalidInput for parameters or a load out of range.
[[nodiscard]] constexpr LatencyEstimate estimate_latency(const DecodeCosts& c, const Load& l,
                                                         const EstimateParams& p, RunningCap cap) {
    const Replica& r = c.replica;
    detail::check_estimate(r, l, p);
    LatencyEstimate e;
    e.kind = l.kind;
    e.concurrency = l.concurrency;
    e.token_budget =
        l.max_num_batched_tokens.value_or(vllm_batch_defaults(r.gpu).max_num_batched_tokens);
    const std::uint64_t I = l.prompt_tokens, O = l.output_tokens;
    e.mean_context = I + O / 2;
    RooflineOptions bound_options = c.options;
    bound_options.efficiency.reset();

    if (l.kind == LoadKind::static_batch) {
        // Every prompt is admitted: a static batch holds its own KV.
        const std::uint64_t batch = l.concurrency;
        e.running = e.running_cap = batch;
        e.chunks = detail::ceil_div_u(detail::mul(batch, I, "a token count"), e.token_budget);
        e.chunk = detail::ceil_div_u(batch * I, e.chunks);
        e.prefill_step = detail::step(c, 0, 0, {batch, I, 1.0, e.chunks}, p);
        e.decode_step = detail::step(c, batch, e.mean_context, {}, p);
        e.itl = e.tpot = e.decode_step.time;
        e.ttft = e.ttft_prefill = e.prefill_step.time;
        e.request = e.ttft + e.itl * static_cast<double>(O - 1);
        e.tokens_per_s = static_cast<double>(batch * O) / e.request.in(seconds);
        e.tokens_per_s_per_gpu = e.tokens_per_s / r.gpus();
        e.ttft_bound = prefill_bound(r, I, batch, bound_options).ttft;
        e.itl_bound = decode_bound(r, batch, I, bound_options).tpot;
        e.request_bound = e.ttft_bound + e.itl_bound * static_cast<double>(O - 1);
        return e;
    }

    e.running_cap = cap.sequences;
    e.kv_holds_one = cap.holds_one;
    const std::uint64_t batch = std::min(l.concurrency, cap.sequences);
    e.running = batch;
    e.waiting = l.concurrency - batch;
    // Decodes go first; a prefill gets what is left of the token budget (at least one token).
    const std::uint64_t left = e.token_budget > batch ? e.token_budget - batch : 1;
    e.chunk = std::min(I, left);
    e.chunks = detail::ceil_div_u(I, e.chunk);
    const double share = 1.0 / static_cast<double>(e.chunks);
    e.decode_step = detail::step(c, batch, e.mean_context, {}, p);
    e.mixed_step = detail::step(c, batch - 1, e.mean_context, {1, I, share, 1}, p);
    e.prefill_step = e.mixed_step;  // the request's own chunk rides along the other B - 1
    e.mixed_share =
        std::min(1.0, static_cast<double>((batch - 1) * e.chunks) / static_cast<double>(O));
    e.itl = e.decode_step.time + (e.mixed_step.time - e.decode_step.time) * e.mixed_share;
    e.tpot = e.itl;
    e.ttft_prefill = e.prefill_step.time * static_cast<double>(e.chunks);
    e.ttft_in_flight = batch > 1 ? e.itl * 0.5 : Seconds{};
    e.request = e.ttft_prefill + e.ttft_in_flight + e.itl * static_cast<double>(O - 1);
    e.ttft_queue = e.request * (static_cast<double>(e.waiting) / static_cast<double>(batch));
    e.ttft = e.ttft_prefill + e.ttft_in_flight + e.ttft_queue;
    e.tokens_per_s = static_cast<double>(batch) * static_cast<double>(O) / e.request.in(seconds);
    e.tokens_per_s_per_gpu = e.tokens_per_s / r.gpus();
    e.itl_bound = decode_bound(r, batch, I, bound_options).tpot;
    e.ttft_bound = prefill_bound(r, I, 1, bound_options).ttft;
    return e;
}

/// The estimate for `l` on `r` with parameters `p` (default_params(r.gpu) gives the fitted
/// ones); `o.compute` is the type the matmuls run in (unset: matmul_compute). Throws InvalidInput
/// as decode_bound does, or for parameters or a load out of range.
[[nodiscard]] constexpr LatencyEstimate estimate_latency(const Replica& r, const Load& l,
                                                         const EstimateParams& p,
                                                         const RooflineOptions& o = {}) {
    detail::check_estimate(r, l, p);
    RooflineOptions bound_options = o;
    bound_options.efficiency.reset();
    const DecodeCosts c = decode_costs(r, bound_options);
    const RunningCap cap = l.kind == LoadKind::serving ? running_cap(r, l) : RunningCap{};
    return estimate_latency(c, l, p, cap);
}

}  // namespace kvplan
