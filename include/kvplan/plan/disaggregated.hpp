#pragma once

// Disaggregated prefill and decode: a pool of replicas that only prefill and a pool that only
// decode, sized apart for a request rate and TTFT / TPOT targets, the prompt's KV moved between
// them per request, and beside them the aggregated plan (replicas doing both) for the same
// targets: the GPUs each way, and which is smaller.
//
// Timing. Steps are timed by the latency estimate (roofline/estimate.hpp: the GPU family's fitted
// fractions of peak and fixed costs per layer and all-reduce, expert-parallel all-to-all included)
// because pool sizes must hold against what users measure; the roofline bound is optimistic by a
// factor of two or more at small batches, and a pool sized on it misses its targets.
// LatencyModel::bound times the same steps at peak (fractions 1, no fixed costs), for a lower
// bound on the GPUs.
//
// Prefill pool. Each attention data-parallel rank of a prefill replica is a server taking one
// prompt at a time: its service time t_p is a step prefilling one prompt of I tokens per dp rank
// (in passes of max_num_batched_tokens, as chunked prefill runs it). Requests arrive at random
// (Poisson), so a server is an M/D/1 queue, as DistServe sizes its prefill instances (Zhong et al.,
// "DistServe", OSDI 2024, section 3.1): a prompt waits W = rho t_p / (2 (1 - rho)) on average at
// utilization rho. TTFT = W + t_p + the KV transfer must meet the target, so
//     S = TTFT target - t_p - transfer,   rho_max = 2 S / (t_p + 2 S),
//     servers = ceil(rate x t_p / rho_max),   replicas = ceil(servers / dp).
//
// Decode pool. A decode replica runs B sequences at the mean context I + O/2; its step time at B
// is the TPOT. B is the largest batch whose TPOT meets the target and that its caches hold at
// I + O tokens each (evaluate()'s max_concurrency). By Little's law the pool holds
// rate x O x TPOT(B) sequences on average, so replicas = ceil(rate x O x TPOT(B) / B).
//
// Transfer. The decode side pulls the prompt's KV (vLLM's NixlConnector reads the blocks after
// prefill; an MLA latent, whole on every rank, is read once per decode rank): each decode GPU of
// the request's dp rank moves its share over its own link (transfer.hpp), and the time is added
// to TTFT. Both pools use the same KV format (the connectors' handshake requires one cache dtype).
//
// Aggregated. A replica doing both runs C requests at once, prefill chunks riding along decodes
// (the estimate's serving load); C is the largest concurrency whose TTFT and TPOT meet the targets
// and that its caches hold, and replicas = ceil(rate x request time / C): size_replicas
// (plan/replicas.hpp), the sizing kvplan fleet does for the same replica.
//
// Each pool's layout is chosen over the search space (GPU type, count, parallel layout, weight
// format) as the one needing the fewest GPUs, then the faster step.
//
// Lengths. A demand names one prompt and one output length; from a trace they are read at one of
// its nearest-rank percentiles (lengths_at), prompt and output each at its own.
//
// Speculative decoding is refused: the pools' steps are the model's own (the estimate leaves out
// what a drafter saves, which depends on its acceptance) and the KV moved is the model's, so a
// drafter's layers would be charged on one side and not moved to the other.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../detail/enum_table.hpp"
#include "../engine/load_dtype.hpp"
#include "../error.hpp"
#include "../roofline/estimate.hpp"
#include "../trace/distributions.hpp"
#include "../transfer.hpp"
#include "deployment.hpp"
#include "evaluate.hpp"
#include "replicas.hpp"
#include "search.hpp"

namespace kvplan {

/// What a disaggregated deployment must serve.
struct DisaggDemand {
    double rate = 0.0;                ///< requests per second, arriving at random (Poisson)
    std::uint64_t prompt_tokens = 0;  ///< I, the prompt length sized for (a percentile of a trace)
    std::uint64_t output_tokens = 0;  ///< O, the output length sized for, the first token included
    Seconds ttft{};                   ///< target time to first token
    Seconds tpot{};                   ///< target time per output token
};

/// How steps are timed.
enum class LatencyModel : std::uint8_t {
    estimate,  ///< the latency estimate with the GPU family's fitted parameters
    bound,     ///< the same steps at peak bandwidth and FLOP/s, no fixed costs
};

/// Each latency model's spelling (kvplan disagg --latency).
inline constexpr FixedArray<detail::EnumName<LatencyModel>, 2> latency_model_names{{
    {LatencyModel::estimate, "estimate"},
    {LatencyModel::bound, "bound"},
}};

/// The spelling of `m`.
[[nodiscard]] constexpr const char* name(LatencyModel m) noexcept {
    return detail::enum_name(latency_model_names, m);
}

/// Which of a trace's percentiles a disaggregated plan's lengths are read at (kvplan disagg
/// --percentile).
enum class LengthPercentile : std::uint8_t { p50, p95, p99, max };

/// Each percentile's spelling (kvplan disagg --percentile, Python's percentile=).
inline constexpr FixedArray<detail::EnumName<LengthPercentile>, 4> length_percentile_names{{
    {LengthPercentile::p50, "50"},
    {LengthPercentile::p95, "95"},
    {LengthPercentile::p99, "99"},
    {LengthPercentile::max, "max"},
}};

/// The spelling of `p`.
[[nodiscard]] constexpr const char* name(LengthPercentile p) noexcept {
    return detail::enum_name(length_percentile_names, p);
}

/// The percentile spelled `s`, or nothing.
[[nodiscard]] constexpr Optional<LengthPercentile> parse_length_percentile(
    detail::TextRef s) noexcept {
    return detail::enum_parse(length_percentile_names, s);
}

/// The value of `p` at `at`.
template <class T>
[[nodiscard]] constexpr T at_percentile(const Percentiles<T>& p, LengthPercentile at) noexcept {
    switch (at) {
        case LengthPercentile::p50:
            return p.p50;
        case LengthPercentile::p95:
            return p.p95;
        case LengthPercentile::p99:
            return p.p99;
        case LengthPercentile::max:
            break;
    }
    return p.max;
}

/// A trace's lengths at one percentile: the prompt and output a demand sizes for.
struct LengthsAt {
    std::uint64_t prompt_tokens = 0;  ///< the prompts' nearest-rank percentile
    std::uint64_t output_tokens = 0;  ///< the outputs' own, taken apart from the prompts'
    LengthPercentile percentile = LengthPercentile::p95;
    std::size_t requests = 0;  ///< the trace's requests
};

/// The lengths of `len` at `at`, each of prompt and output at its own percentile.
[[nodiscard]] constexpr LengthsAt lengths_at(const TraceLengths& len,
                                             LengthPercentile at = LengthPercentile::p95) noexcept {
    return {.prompt_tokens = at_percentile(len.prompt, at),
            .output_tokens = at_percentile(len.output, at),
            .percentile = at,
            .requests = len.requests};
}

/// The link between the pools: one named, a bandwidth per GPU, or each decode GPU's own
/// node-to-node figure (GpuSpec::scale_out_bandwidth, its spec's node.GB_per_s_per_direction).
struct DisaggLink {
    Link link = links::infiniband_ndr;  ///< unless `node`
    bool node = false;                  ///< the decode GPU's node-to-node link
};

/// What a link's spelling may be (kvplan disagg --link, Python's link=).
inline constexpr std::string_view disagg_link_expected =
    "ib-ndr, ib-hdr, node or a bandwidth per GPU such as 25GB/s";

/// The link spelled `text`: ib-ndr (InfiniBand NDR, 50 GB/s a GPU), ib-hdr (25 GB/s), node, or a
/// bandwidth per GPU in GB/s (10^9 B/s): "25GB/s". nullopt for anything else, a bandwidth of 0
/// included.
[[nodiscard]] inline std::optional<DisaggLink> parse_disagg_link(std::string_view text) {
    if (text == "ib-ndr") return DisaggLink{.link = links::infiniband_ndr};
    if (text == "ib-hdr") return DisaggLink{.link = links::infiniband_hdr};
    if (text == "node") return DisaggLink{.node = true};
    constexpr std::string_view unit = "GB/s";
    if (text.size() <= unit.size() || !text.ends_with(unit)) return std::nullopt;
    const std::string_view number = text.substr(0, text.size() - unit.size());
    double v = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc{} || end != number.data() + number.size() || !std::isfinite(v) ||
        !(v > 0.0))
        return std::nullopt;
    return DisaggLink{.link = {"the given link", v * GB_per_s, LinkScope::per_gpu}};
}

/// The name a node-to-node link goes by.
inline constexpr std::string_view node_link_name = "the GPU spec's node-to-node link";

/// The link the prompt's KV crosses to a decode GPU `gpu` under `l`. Throws InvalidInput when `l`
/// is the node's and the GPU's spec states no node-to-node figure.
[[nodiscard]] inline Link link_to(const DisaggLink& l, const GpuSpec& gpu) {
    if (!l.node) return l.link;
    if (!(gpu.scale_out_bandwidth > BytesPerSecond{}))
        detail::throw_field_error<InvalidInput>(
            "GPU '" + std::string(gpu.id) + "'", "node.GB_per_s_per_direction",
            "a node-to-node bandwidth for the link node (or another link: ib-ndr, ib-hdr, a "
            "bandwidth such as 25GB/s)",
            "none");
    return {node_link_name, gpu.scale_out_bandwidth, LinkScope::per_gpu};
}

/// Why the disaggregated plan takes no speculative decoding, in the words of its refusal.
inline constexpr std::string_view disagg_speculation_refusal =
    "the pools are sized without a drafter: their steps and the KV moved between them are the "
    "model's own";

/// Options of the disaggregated plan.
struct DisaggOptions {
    DisaggLink link{};  ///< between the pools, per GPU
    LatencyModel latency = LatencyModel::estimate;
    /// Replaces the GPU family's parameters (estimate). A GPU whose family has none is timed at
    /// peak, and its pool says so (fitted false).
    std::optional<EstimateParams> params{};
    RooflineOptions roofline{};  ///< the compute type the matmuls run in
};

/// The prefill pool.
struct PrefillPool {
    PlanCandidate candidate;  ///< one replica, evaluated holding one prompt of I tokens
    bool fitted = true;       ///< timed with fitted parameters (estimate)
    std::uint32_t servers_per_replica = 1;  ///< its attention data-parallel ranks
    std::uint64_t passes = 1;  ///< forwards per prompt (chunks of max_num_batched_tokens)
    Seconds service{};         ///< t_p: one prompt per dp rank
    Seconds transfer{};        ///< the prompt's KV to the decode pool
    double utilization = 0.0;  ///< rho of each server at the rate
    Seconds wait{};            ///< mean queueing wait (M/D/1)
    Seconds ttft{};            ///< wait + service + transfer
    std::uint64_t servers = 0;
    std::uint32_t replicas = 0;
    std::uint32_t gpus = 0;
};

/// The decode pool.
struct DecodePool {
    PlanCandidate candidate;  ///< one replica, evaluated at I + O tokens
    bool fitted = true;
    std::uint64_t batch = 0;         ///< sequences per replica at the TPOT target
    std::uint64_t batch_cap = 0;     ///< what its caches hold (max_concurrency)
    std::uint64_t mean_context = 0;  ///< I + O/2
    Seconds tpot{};                  ///< at `batch`
    double requests_per_s = 0.0;     ///< per replica: batch / (O x tpot)
    std::uint32_t replicas = 0;
    std::uint32_t gpus = 0;
};

/// The aggregated plan for the same targets.
struct AggregatedPool {
    PlanCandidate candidate;  ///< one replica, evaluated at I + O tokens
    bool fitted = true;
    std::uint64_t concurrency = 0;  ///< requests per replica at once meeting both targets
    Seconds ttft{};
    Seconds tpot{};
    Seconds request{};            ///< a request's time once admitted
    double requests_per_s = 0.0;  ///< per replica: concurrency / request
    std::uint32_t replicas = 0;
    std::uint32_t gpus = 0;
};

/// The disaggregated plan beside the aggregated one.
struct DisaggPlan {
    std::optional<PrefillPool> prefill{};
    std::optional<DecodePool> decode{};
    KvTransfer transfer{};   ///< one request's prompt KV, prefill to decode, over its link
    std::uint32_t gpus = 0;  ///< prefill + decode (0: no disaggregated plan)
    std::optional<AggregatedPool> aggregated{};
    /// Both plans exist and the disaggregated one needs fewer GPUs.
    bool disaggregated_smaller = false;
    std::string note{};  ///< why a plan is missing
};

namespace detail {

constexpr void check_disagg(const Model& m, const DisaggDemand& d) {
    const auto where = [&] { return model_where(m.config()); };
    if (!(d.rate > 0.0) || !std::isfinite(d.rate))
        throw_field_error<InvalidInput>(where(), "rate", "> 0 requests per second",
                                        std::to_string(d.rate));
    if (d.prompt_tokens == 0)
        throw_field_error<InvalidInput>(where(), "prompt_tokens", ">= 1 token", "0");
    if (d.output_tokens == 0)
        throw_field_error<InvalidInput>(where(), "output_tokens", ">= 1 token", "0");
    if (!(d.ttft > Seconds{}))
        throw_field_error<InvalidInput>(where(), "ttft", "> 0 s", "0 s or less");
    if (!(d.tpot > Seconds{}))
        throw_field_error<InvalidInput>(where(), "tpot", "> 0 s", "0 s or less");
}

/// The parameters a pool's steps are timed with, and whether they are fitted.
struct StepParams {
    EstimateParams params{};
    bool fitted = true;
};

/// The step parameters for `gpu` under `o`.
[[nodiscard]] inline StepParams step_params(const GpuSpec& gpu, const DisaggOptions& o) {
    const EstimateParams peak{};  // fractions 1, no fixed costs
    if (o.latency == LatencyModel::bound) return {peak, true};
    if (o.params) return {*o.params, true};
    if (const auto f = default_params(gpu)) return {f->params, true};
    return {peak, false};
}

/// ceil(x) for a non-negative double that fits 64 bits.
[[nodiscard]] inline std::uint64_t ceil_u64(double x) {
    return static_cast<std::uint64_t>(std::ceil(x - 1e-9));
}

/// The largest n in [1, most] with ok(n), or 0 when not even ok(1); ok is monotone (true up to a
/// point).
template <class Ok>
[[nodiscard]] std::uint64_t largest(std::uint64_t most, Ok ok) {
    if (most == 0 || !ok(1)) return 0;
    if (ok(most)) return most;
    std::uint64_t lo = 1, hi = most;  // ok(lo), !ok(hi)
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (ok(mid) ? lo : hi) = mid;
    }
    return lo;
}

/// Calls fn(deployment, prepared, gpu index, kv index, weights index) for each candidate of
/// `space` whose weights fit its GPU.
template <class Fn>
void for_each_candidate(const Model& m, const SearchSpace& space, const Serving& serving, Fn&& fn) {
    for (std::uint32_t n = std::max<std::uint32_t>(space.min_gpus, 1); n <= space.max_gpus; ++n)
        for (const ParallelConfig& p : parallel_splits(m, serving.engine, n, space))
            for (std::size_t w = 0; w < space.weights.size(); ++w) {
                const PreparedLayout prep = prepare_layout(
                    m, p,
                    served_weights(m, space.weights[w], serving.engine, serving.engine_version),
                    serving.speculation);
                for (std::size_t g = 0; g < space.gpus.size(); ++g) {
                    if (!serving.kv_memory_per_gpu &&
                        prep.stage_weights.most() > space.gpus[g].memory_total)
                        continue;
                    for (std::size_t k = 0; k < space.kv_formats.size(); ++k) {
                        const Deployment d{.model = m,
                                           .gpu = space.gpus[g],
                                           .parallel = p,
                                           .weights = space.weights[w],
                                           .kv = space.kv_formats[k],
                                           .serving = serving};
                        fn(d, prep, g, k, w);
                    }
                }
            }
}

/// Whether `a` (gpus, then time) is better than `b`.
[[nodiscard]] inline bool better(std::uint32_t gpus_a, Seconds time_a, std::uint32_t gpus_b,
                                 Seconds time_b) {
    return gpus_a != gpus_b ? gpus_a < gpus_b : time_a < time_b;
}

}  // namespace detail

/// The decode pool of one candidate `a` (evaluated at I + O), or nullopt when its caches hold no
/// sequence or one sequence already misses the TPOT target.
[[nodiscard]] inline std::optional<DecodePool> size_decode_pool(const PlanCandidate& a,
                                                                const DisaggDemand& demand,
                                                                const DisaggOptions& o = {}) {
    const ReplicaAnswer& r = a.answer;
    if (!r.starts() || r.max_concurrency == 0) return std::nullopt;
    const detail::StepParams timing = detail::step_params(r.replica.gpu, o);
    const DecodeCosts c = decode_costs(r.replica, o.roofline);
    DecodePool pool{.candidate = a, .fitted = timing.fitted};
    pool.batch_cap = r.max_concurrency;
    pool.mean_context = demand.prompt_tokens + demand.output_tokens / 2;
    const auto tpot = [&](std::uint64_t b) {
        return detail::step(c, b, pool.mean_context, {}, timing.params).time;
    };
    pool.batch =
        detail::largest(pool.batch_cap, [&](std::uint64_t b) { return tpot(b) <= demand.tpot; });
    if (pool.batch == 0) return std::nullopt;
    pool.tpot = tpot(pool.batch);
    const double O = static_cast<double>(demand.output_tokens);
    pool.requests_per_s = static_cast<double>(pool.batch) / (O * pool.tpot.in(seconds));
    const std::uint64_t replicas = detail::ceil_u64(demand.rate / pool.requests_per_s);
    pool.replicas = static_cast<std::uint32_t>(std::max<std::uint64_t>(replicas, 1));
    pool.gpus = pool.replicas * r.replica_gpus;
    return pool;
}

/// The prefill pool of one candidate `a` (evaluated holding one prompt), with `transfer` the KV
/// transfer time per request; nullopt when one prompt's service and transfer already miss the
/// TTFT target.
[[nodiscard]] inline std::optional<PrefillPool> size_prefill_pool(const PlanCandidate& a,
                                                                  const DisaggDemand& demand,
                                                                  Seconds transfer,
                                                                  const DisaggOptions& o = {}) {
    const ReplicaAnswer& r = a.answer;
    if (!r.starts() || r.max_concurrency == 0) return std::nullopt;
    const detail::StepParams timing = detail::step_params(r.replica.gpu, o);
    const DecodeCosts c = decode_costs(r.replica, o.roofline);
    PrefillPool pool{.candidate = a, .fitted = timing.fitted};
    pool.servers_per_replica = r.dp_ranks;
    const std::uint64_t budget = r.serving.options.vllm.max_num_batched_tokens.value_or(
        vllm_batch_defaults(r.replica.gpu).max_num_batched_tokens);
    pool.passes = detail::ceil_div_u(demand.prompt_tokens, budget);
    pool.service = detail::step(c, 0, 0,
                                {.prompts = r.dp_ranks,
                                 .prompt_tokens = demand.prompt_tokens,
                                 .share = 1.0,
                                 .passes = pool.passes,
                                 .spread = true},
                                timing.params)
                       .time;
    pool.transfer = transfer;
    const Seconds slack = demand.ttft - pool.service - transfer;
    if (!(slack > Seconds{})) return std::nullopt;
    const double tp = pool.service.in(seconds), s = slack.in(seconds);
    const double rho_max = 2.0 * s / (tp + 2.0 * s);
    pool.servers = std::max<std::uint64_t>(detail::ceil_u64(demand.rate * tp / rho_max), 1);
    pool.replicas = static_cast<std::uint32_t>((pool.servers + pool.servers_per_replica - 1) /
                                               pool.servers_per_replica);
    pool.servers = std::uint64_t{pool.replicas} * pool.servers_per_replica;
    pool.utilization = demand.rate * tp / static_cast<double>(pool.servers);
    pool.wait = Seconds::in_base(pool.utilization * tp / (2.0 * (1.0 - pool.utilization)));
    pool.ttft = pool.wait + pool.service + transfer;
    pool.gpus = pool.replicas * r.replica_gpus;
    return pool;
}

/// The aggregated pool of one candidate `a` (evaluated at I + O), or nullopt when even one request
/// at a time misses a target.
[[nodiscard]] inline std::optional<AggregatedPool> size_aggregated_pool(
    const PlanCandidate& a, const DisaggDemand& demand, const DisaggOptions& o = {}) {
    const ReplicaAnswer& r = a.answer;
    if (!r.starts() || r.max_concurrency == 0) return std::nullopt;
    const detail::StepParams timing = detail::step_params(r.replica.gpu, o);
    const DecodeCosts c = decode_costs(r.replica, o.roofline);
    AggregatedPool pool{.candidate = a, .fitted = timing.fitted};
    const auto at = [&](std::uint64_t n) {
        return batch_timing(estimate_with_batch(c, n, demand.prompt_tokens, demand.output_tokens,
                                                r.serving.options.vllm.max_num_batched_tokens,
                                                timing.params));
    };
    // The fleet kvplan fleet sizes for the same replica (plan/replicas.hpp): its caches'
    // max_concurrency, already within the engine's sequence cap, is the KV's batch.
    const FleetPlan f =
        size_replicas({.rate_per_s = demand.rate, .ttft = demand.ttft, .tpot = demand.tpot},
                      r.max_concurrency, 0, static_cast<double>(demand.output_tokens), at);
    if (!f.feasible) return std::nullopt;
    pool.concurrency = f.batch;
    pool.ttft = f.ttft_at_batch;
    pool.tpot = f.tpot_at_batch;
    pool.request = f.time_in_system;
    pool.requests_per_s = static_cast<double>(pool.concurrency) / pool.request.in(seconds);
    pool.replicas = static_cast<std::uint32_t>(f.replicas);
    pool.gpus = pool.replicas * r.replica_gpus;
    return pool;
}

/// The disaggregated plan for `demand` over `space` under `serving`, and the aggregated plan
/// beside it. Throws InvalidInput for a demand out of range, a knob the engine cannot take,
/// speculative decoding (disagg_speculation_refusal), or the node's link on a GPU whose spec
/// states none.
[[nodiscard]] inline DisaggPlan plan_disaggregated(const Model& m, const SearchSpace& space,
                                                   const Serving& serving,
                                                   const DisaggDemand& demand,
                                                   const DisaggOptions& o = {}) {
    detail::check_disagg(m, demand);
    (void)resolve_serving(serving);
    if (serving.speculation.method != DraftMethod::none)
        detail::throw_field_error<InvalidInput>(
            detail::model_where(m.config()), "speculation",
            detail::text("none (", disagg_speculation_refusal, ")"),
            name(serving.speculation.method));
    // Every GPU a decode pool may take states the link the KV crosses to it.
    for (const GpuSpec& g : space.gpus) (void)link_to(o.link, g);
    const std::uint64_t I = demand.prompt_tokens, O = demand.output_tokens;
    EvaluateOptions eo;
    eo.contexts = false;
    eo.decode = false;
    eo.roofline = o.roofline;
    DisaggPlan plan;

    // Per KV format: the best decode pool, then the best prefill pool given its transfer.
    std::vector<std::optional<DecodePool>> decode(space.kv_formats.size());
    std::optional<AggregatedPool> aggregated;
    detail::for_each_candidate(
        m, space, serving,
        [&](const Deployment& d, const PreparedLayout& p, std::size_t g, std::size_t k,
            std::size_t w) {
            const PlanCandidate full{g, k, w, evaluate(d, {.context = I + O}, eo, p)};
            if (!full.answer.starts()) return;
            if (auto pool = size_decode_pool(full, demand, o))
                if (!decode[k] ||
                    detail::better(pool->gpus, pool->tpot, decode[k]->gpus, decode[k]->tpot))
                    decode[k] = std::move(pool);
            if (auto pool = size_aggregated_pool(full, demand, o))
                if (!aggregated ||
                    detail::better(pool->gpus, pool->ttft, aggregated->gpus, aggregated->ttft))
                    aggregated = std::move(pool);
        });
    std::vector<KvTransfer> transfer(space.kv_formats.size());
    for (std::size_t k = 0; k < space.kv_formats.size(); ++k) {
        if (!decode[k]) continue;
        const ReplicaAnswer& da = decode[k]->candidate.answer;
        transfer[k] = kv_transfer(m, da.replica.kv, da.replica.layout(), I,
                                  link_to(o.link, da.replica.gpu), da.serving.block_size);
    }
    std::vector<std::optional<PrefillPool>> prefill(space.kv_formats.size());
    detail::for_each_candidate(
        m, space, serving,
        [&](const Deployment& d, const PreparedLayout& p, std::size_t g, std::size_t k,
            std::size_t w) {
            if (!decode[k]) return;
            const PlanCandidate one{g, k, w, evaluate(d, {.context = I}, eo, p)};
            if (!one.answer.starts()) return;
            if (auto pool = size_prefill_pool(one, demand, transfer[k].time, o))
                if (!prefill[k] ||
                    detail::better(pool->gpus, pool->ttft, prefill[k]->gpus, prefill[k]->ttft))
                    prefill[k] = std::move(pool);
        });
    for (std::size_t k = 0; k < space.kv_formats.size(); ++k) {
        if (!decode[k] || !prefill[k]) continue;
        const std::uint32_t gpus = decode[k]->gpus + prefill[k]->gpus;
        if (plan.gpus == 0 || gpus < plan.gpus) {
            plan.gpus = gpus;
            plan.decode = decode[k];
            plan.prefill = prefill[k];
            plan.transfer = transfer[k];
        }
    }
    plan.aggregated = std::move(aggregated);
    if (plan.gpus == 0) plan.note = "no layout of the search space meets the targets disaggregated";
    if (!plan.aggregated)
        plan.note += std::string(plan.note.empty() ? "" : "; ") +
                     "no layout of the search space meets the targets aggregated";
    plan.disaggregated_smaller =
        plan.gpus != 0 && plan.aggregated && plan.gpus < plan.aggregated->gpus;
    return plan;
}

}  // namespace kvplan
