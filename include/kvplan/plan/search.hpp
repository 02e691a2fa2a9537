#pragma once

// The replica search behind `kvplan plan`: every GPU type, GPU count and layout of a search space
// (tp x pp, and attention data, expert and decode context parallelism as the engine takes them),
// every KV and weight format, each evaluated by evaluate() (so a candidate's figures are the ones
// fit prints for it), those that hold the demand ranked, and the nearest misses kept for a review
// that finds nothing fits. With a demand that splits its requests into prompt and output, each
// candidate carries the latency estimate, and Ranking::estimate orders by it.
//
// Which splits of n GPUs an engine takes (parallel_splits): tp a power of two, and
//   vLLM     dp x tp x pp = n; ep 1 or dp x tp (--enable-expert-parallel); dcp dividing tp;
//   SGLang   tp x pp = n; dp and ep dividing tp (--enable-dp-attention, --ep-size);
//   TensorRT tp x pp = n; dp 1 or tp (enable_attention_dp); ep dividing tp;
// then Layout refuses what the model or the engine cannot take (heads, experts, dcp beyond the
// KV head copies). Attention data parallelism is tried on mixture-of-experts models only: on a
// dense model dp ranks are replicas, which the search already counts.
//
// Speed: a split is checked against the model once, the weights of each split and weight format
// are computed once and a GPU that cannot hold them is skipped (the engine would not start: every
// engine charges the weights before the cache), and only the answers kept are stored.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "../engine/load_dtype.hpp"
#include "../error.hpp"
#include "../gpu.hpp"
#include "../kv_support.hpp"
#include "../model.hpp"
#include "deployment.hpp"
#include "evaluate.hpp"

namespace kvplan {

/// Which layouts the search tries.
enum class LayoutRule : std::uint8_t {
    /// Every split the model and the engine take (any GPU count, pipeline stages within a node).
    any,
    /// Layouts people deploy (deployed_layout): whole nodes, tensor parallelism within a node or
    /// scale-up domain, pipeline stages across nodes. `kvplan plan` searches these by default.
    whole_nodes,
};

/// What the search tries.
struct SearchSpace {
    std::vector<GpuSpec> gpus{};  ///< GPU types, in order of preference
    /// KV formats; nullopt: what the engine's "auto" stores for the checkpoint (served_kv).
    std::vector<std::optional<KvFormat>> kv_formats{std::nullopt};
    /// Weight formats; nullopt: the checkpoint's own.
    std::vector<std::optional<WeightOptions>> weights{std::nullopt};
    std::uint32_t min_gpus = 1;  ///< the fewest GPUs a replica may have
    std::uint32_t max_gpus = 8;  ///< the most GPUs a replica may have
    /// The largest attention tensor-parallel degree: heads split within one NVLink domain.
    std::uint32_t max_tp = 8;
    bool data_parallel = true;     ///< try attention data parallelism (mixture-of-experts models)
    bool expert_parallel = true;   ///< try expert parallelism (mixture-of-experts models)
    bool context_parallel = true;  ///< try decode context parallelism (vLLM)
    /// Redundant experts for expert-parallel layouts (vLLM's EPLB, SGLang's
    /// --ep-num-redundant-experts); 0: none.
    std::uint32_t redundant_experts = 0;
    /// The best fits kept with their whole answer; PlanAnswer::fitting counts them all.
    std::size_t keep = 50;
    LayoutRule layouts = LayoutRule::any;  ///< which layouts, per GPU type (its node)
};

/// The weight formats a search tries: each of `formats` (nullopt: the checkpoint's own) with the
/// routed experts in `experts` (nullopt: as the rest), as fit reads one format beside its experts';
/// no formats: the checkpoint's own, with `experts`.
[[nodiscard]] inline std::vector<std::optional<WeightOptions>> searched_weights(
    std::span<const std::optional<WeightFormat>> formats,
    std::optional<WeightFormat> experts = std::nullopt) {
    const auto one = [&](std::optional<WeightFormat> f) -> std::optional<WeightOptions> {
        if (!f && !experts) return std::nullopt;
        WeightOptions w;
        if (f) w.format = *f;
        w.expert_format = experts;
        return w;
    };
    std::vector<std::optional<WeightOptions>> out;
    if (formats.empty()) out.push_back(one(std::nullopt));
    for (const std::optional<WeightFormat>& f : formats) out.push_back(one(f));
    return out;
}

/// Whether `p` on `n` GPUs of `g` is a layout people deploy: within one node a power of two of its
/// GPUs (1, 2, 4, 8: the node holds whole replicas) and no pipeline; past one node whole nodes,
/// each pipeline stage whole nodes (stages across nodes, never within one). Attention's
/// tensor-parallel group stays within the node or its scale-up domain (an NVL72 rack's 72 GPUs):
/// vLLM's --tensor-parallel-size, SGLang's tp over its dp attention groups.
[[nodiscard]] constexpr bool deployed_layout(const ParallelConfig& p, std::uint32_t n,
                                             const GpuSpec& g) noexcept {
    const std::uint32_t node = g.gpus_per_node > 0 ? g.gpus_per_node : 1;
    const std::uint32_t dp = p.dp > 0 ? p.dp : 1;
    const std::uint32_t pp = p.pp > 0 ? p.pp : 1;
    const std::uint32_t attention_tp = p.rules == ParallelRules::vllm               ? p.tp
                                       : dp > 1 && p.rules == ParallelRules::trtllm ? 1
                                                                                    : p.tp / dp;
    if (attention_tp > g.fast_domain()) return false;
    if (n <= node) return (n & (n - 1)) == 0 && pp == 1;
    return n % node == 0 && n % pp == 0 && (n / pp) % node == 0;
}

/// How candidates that fit are ordered.
enum class Ranking : std::uint8_t {
    fewest_gpus,  ///< fewest GPUs, then the most sequences held, then the faster decode bound
    fastest,      ///< the faster decode bound, then fewest GPUs
    /// The most output tokens/s per GPU by the latency estimate at the demand (the load served on
    /// the fewest GPU-seconds per token), then fewest GPUs, then the lower TPOT estimate;
    /// candidates without an estimate after those with one, by fewest_gpus.
    estimate,
};

/// One replica the search evaluated.
struct PlanCandidate {
    std::size_t gpu = 0;      ///< index into SearchSpace::gpus
    std::size_t kv = 0;       ///< index into SearchSpace::kv_formats
    std::size_t weights = 0;  ///< index into SearchSpace::weights
    ReplicaAnswer answer;
};

/// The search's answer.
struct PlanAnswer {
    std::vector<PlanCandidate> fits{};            ///< ranked: the best SearchSpace::keep of them
    std::vector<PlanCandidate> nearest_misses{};  ///< those that start, the most sequences first
    /// When no candidate starts: the one nearest to starting (nearer_refusal: the least memory a
    /// GPU lacks, then the most GPUs), whose refusal says what stops every replica (a context past
    /// the model's limit, weights larger than the GPUs).
    std::optional<PlanCandidate> refused{};
    std::size_t searched = 0;  ///< candidates evaluated (layouts the model and engine take)
    std::size_t fitting = 0;   ///< of them, those that hold the demand (fits keeps the best)
    std::size_t layouts = 0;   ///< distinct parallel layouts the model and engine take
    /// Every candidate was evaluated. The search skips those that cannot enter the kept list:
    /// under Ranking::fewest_gpus it goes up in GPU count and stops after the count at which
    /// SearchSpace::keep fits are found; under Ranking::fastest it skips a candidate whose decode
    /// bound is slower than the keep fastest fits found so far. The kept fits are the same as an
    /// exhaustive search's; fitting and the misses then count what was evaluated.
    bool complete = true;
};

namespace detail {

/// Calls fn(ParallelConfig) for each split of `n` GPUs that engine `e` takes for `m` under
/// `space` (before the model's own checks, which Layout makes).
template <class Fn>
constexpr void for_each_split(const Model& m, Engine e, std::uint32_t n, const SearchSpace& space,
                              Fn&& fn) {
    const bool moe = m.config().moe.experts != 0;
    const bool dp_on = moe && space.data_parallel;
    const bool ep_on = moe && space.expert_parallel;
    const ParallelRules rules = parallel_rules(e);
    const std::uint32_t layers = m.num_layers();
    const auto pp_ok = [&](std::uint32_t pp) {
        return pp >= 1 && pp <= layers && pp <= max_pipeline_stages;
    };
    for (std::uint32_t tp = 1; tp <= n; tp *= 2) {
        if (n % tp != 0) continue;
        const std::uint32_t rest = n / tp;  // dp x pp (vLLM) or pp
        if (rules == ParallelRules::vllm) {
            if (tp > space.max_tp) break;
            for (std::uint32_t dp = 1; dp <= rest; ++dp) {
                if (rest % dp != 0 || (dp > 1 && !dp_on)) continue;
                const std::uint32_t pp = rest / dp;
                if (!pp_ok(pp)) continue;
                const std::uint32_t flat = dp * tp;
                for (std::uint32_t ep : {1U, flat}) {
                    // ep 1 with dp > 1 splits every expert dp x tp ways: a layout of its own.
                    if (ep > 1 && !ep_on) continue;
                    const std::uint32_t redundant = ep > 1 ? space.redundant_experts : 0;
                    for (std::uint32_t dcp = 1; dcp <= tp; dcp *= 2) {
                        if (dcp > 1 && !space.context_parallel) break;
                        fn(ParallelConfig{.tp = tp,
                                          .pp = pp,
                                          .dp = dp,
                                          .ep = ep,
                                          .dcp = dcp,
                                          .redundant_experts = redundant,
                                          .rules = rules});
                    }
                    if (flat == 1) break;  // ep 1 and dp x tp the same
                }
            }
        } else {
            // SGLang and TensorRT-LLM: tp is every GPU of a stage, dp and ep live within it.
            const std::uint32_t pp = rest;
            if (!pp_ok(pp)) continue;
            for (std::uint32_t dp = 1; dp <= tp; dp *= 2) {
                if (tp % dp != 0 || (dp > 1 && !dp_on)) continue;
                if (rules == ParallelRules::trtllm && dp != 1 && dp != tp) continue;
                const std::uint32_t attention_tp =
                    rules == ParallelRules::trtllm && dp > 1 ? 1 : tp / dp;
                if (attention_tp > space.max_tp) continue;
                for (std::uint32_t ep = 1; ep <= tp; ep *= 2) {
                    if (tp % ep != 0 || (ep > 1 && !ep_on)) continue;
                    const std::uint32_t redundant =
                        ep > 1 && rules == ParallelRules::sglang ? space.redundant_experts : 0;
                    fn(ParallelConfig{.tp = tp,
                                      .pp = pp,
                                      .dp = dp,
                                      .ep = ep,
                                      .redundant_experts = redundant,
                                      .rules = rules});
                }
            }
        }
    }
}

/// A split the model and engine take, with the GPUs it needs and, per weight format, what
/// evaluate() computes of it whatever the GPU (prepare_layout).
struct ValidSplit {
    ParallelConfig parallel{};
    std::uint32_t gpus = 0;
    std::vector<PreparedLayout> prepared{};  ///< per SearchSpace::weights
};

}  // namespace detail

/// The memory a GPU of `a`'s replica lacks for its engine to start: the terms charged to the
/// fraction past it (Refusal::weights, the worst stage), the terms kept outside the fraction past
/// what it leaves (Refusal::outside_fraction; under TensorRT-LLM the weights and the terms beside
/// them past the GPU), one sequence's blocks past the KV memory (Refusal::request). nullopt when
/// it starts, or for a refusal no memory lifts: a context past the model's limit, a quantization
/// block, a KV dtype, a cache the engine cannot build for the model.
[[nodiscard]] constexpr std::optional<Bytes> memory_short(const ReplicaAnswer& a) {
    using detail::saturating_sub;
    const EngineMemory& m = a.memory();
    switch (a.refusal) {
        case Refusal::weights: {
            Bytes most{};
            for (const EngineMemory& st : a.report.stage_memory())
                most = std::max(most, st.shortfall);
            return most;
        }
        case Refusal::outside_fraction:
            if (a.serving.engine == Engine::trtllm)
                return saturating_sub(m.weights + m.lora + m.activation + m.cuda_context +
                                          m.comm_buffers + m.cuda_graphs,
                                      m.memory_total);
            return saturating_sub(m.outside, saturating_sub(m.memory_total, m.fraction_bytes));
        case Refusal::request:
            return saturating_sub(a.kv_per_sequence, a.kv_budget);
        case Refusal::none:
        case Refusal::context_limit:
        case Refusal::cache:
        case Refusal::quantization_block:
        case Refusal::kv_dtype:
            return std::nullopt;
    }
    return std::nullopt;
}

/// Whether refused replica `a` is nearer to starting than refused replica `b`: one that lacks
/// only memory before one refused by a rule no memory lifts; of two short of memory, the one a
/// GPU lacks the least of (memory_short); then the one of more GPUs, whose refusal holds for the
/// smaller ones too.
[[nodiscard]] constexpr bool nearer_refusal(const ReplicaAnswer& a, const ReplicaAnswer& b) {
    const std::optional<Bytes> sa = memory_short(a), sb = memory_short(b);
    if (sa.has_value() != sb.has_value()) return sa.has_value();
    if (sa && *sa != *sb) return *sa < *sb;
    return a.replica_gpus > b.replica_gpus;
}

/// Every layout of `n` GPUs that engine `e` takes for `m` under `space`, each checked by Layout
/// (what the engine refuses is left out).
[[nodiscard]] inline std::vector<ParallelConfig> parallel_splits(const Model& m, Engine e,
                                                                 std::uint32_t n,
                                                                 const SearchSpace& space = {}) {
    std::vector<ParallelConfig> out;
    detail::for_each_split(m, e, n, space, [&](const ParallelConfig& p) {
        try {
            (void)Layout(m, p);
        } catch (const InvalidLayout&) {
            return;
        }
        out.push_back(p);
    });
    return out;
}

/// The KV formats `space` searches for `model` under `serving`, each unset one resolved as
/// Deployment::served_kv resolves it.
[[nodiscard]] inline std::vector<KvFormat> searched_kv_formats(const Model& model,
                                                               const SearchSpace& space,
                                                               const Serving& serving) {
    std::vector<KvFormat> out;
    out.reserve(space.kv_formats.size());
    for (const std::optional<KvFormat>& k : space.kv_formats)
        out.push_back(served_kv(model, k, serving.engine, serving.engine_version).format);
    return out;
}

/// Every replica of `space` for `model` serving `demand` (one replica holding it all) under
/// `serving`, ranked by `ranking`; the best space.keep fits and `misses` nearest misses are kept
/// with their whole answer. Layouts the model or the engine cannot take are skipped; a knob the
/// engine cannot take throws InvalidInput.
[[nodiscard]] inline PlanAnswer plan_replicas(const Model& model, const SearchSpace& space,
                                              const Serving& serving, const Demand& demand,
                                              Ranking ranking = Ranking::fewest_gpus,
                                              std::size_t misses = 5) {
    PlanAnswer out;
    (void)resolve_serving(serving);  // a knob the engine cannot take throws before any search
    const std::vector<KvFormat> kvs = searched_kv_formats(model, space, serving);
    // A KV dtype a GPU cannot hold is left out for that GPU (kv_support.hpp); when no GPU of the
    // space can hold any of the KV dtypes, the first refusal is the answer.
    const auto kv_refused = [&](std::size_t g, std::size_t k) {
        return kv_dtype_refusal(kvs[k].dtype, space.gpus[g], serving.engine);
    };
    {
        std::optional<std::pair<std::size_t, std::size_t>> first_refused;
        bool any = false;
        for (std::size_t g = 0; g < space.gpus.size(); ++g)
            for (std::size_t k = 0; k < space.kv_formats.size(); ++k) {
                if (!kv_refused(g, k))
                    any = true;
                else if (!first_refused)
                    first_refused = std::pair{g, k};
            }
        if (!any && first_refused) {
            const GpuSpec& gpu = space.gpus[first_refused->first];
            detail::throw_field_error<InvalidInput>(
                detail::text("GPU '", gpu.id, "' (", arch_text(gpu), ")"), "kv_dtype",
                detail::text("a KV dtype it can hold (",
                             *kv_refused(first_refused->first, first_refused->second), ")"),
                name(kvs[first_refused->second].dtype));
        }
    }
    EvaluateOptions eo;
    eo.contexts = false;

    // The layouts, each checked once; prepared per weight format when its GPU count is reached.
    std::vector<detail::ValidSplit> splits;
    for (std::uint32_t n = std::max<std::uint32_t>(space.min_gpus, 1); n <= space.max_gpus; ++n)
        for (const ParallelConfig& p : parallel_splits(model, serving.engine, n, space))
            splits.push_back(detail::ValidSplit{p, n, {}});
    out.layouts = splits.size();

    // Every candidate's ranking keys; the answers are computed again for those kept.
    struct Key {
        std::size_t split = 0, gpu = 0, kv = 0, weights = 0;
        std::uint32_t gpus = 0;
        std::uint64_t max_concurrency = 0;
        Seconds tpot{};
        bool fits = false;
        bool estimated = false;     ///< the latency estimate is set
        double per_gpu_rate = 0.0;  ///< its output tokens/s per GPU
        Seconds estimate_tpot{};
    };
    std::vector<Key> keys;
    // The candidates the engine refuses, answered again only when none starts (the nearest of
    // them is then the answer's refused one).
    std::vector<Key> refused;
    const bool kv_given = serving.kv_memory_per_gpu.has_value();
    // GPU counts in order: under fewest_gpus, once `keep` fits are found no larger replica can
    // enter the kept list, and the search stops there.
    std::size_t fits_found = 0;
    // Under fastest, the decode bounds of the best `keep` fits so far (a max-heap): a candidate
    // whose bound is slower than all of them cannot enter the kept list, whatever its fit.
    std::vector<Seconds> fastest;
    const auto slower = [](Seconds a, Seconds b) { return a < b; };
    out.complete = true;
    // The splits of each GPU count; under fastest the largest replicas (the fastest) go first, so
    // that the bar rises early.
    std::vector<std::pair<std::size_t, std::size_t>> groups;
    for (std::size_t first = 0; first < splits.size();) {
        std::size_t end = first;
        while (end < splits.size() && splits[end].gpus == splits[first].gpus) ++end;
        groups.emplace_back(first, end);
        first = end;
    }
    if (ranking == Ranking::fastest) std::reverse(groups.begin(), groups.end());
    for (const auto& [first, end] : groups) {
        if (ranking == Ranking::fewest_gpus && space.keep > 0 && fits_found >= space.keep) {
            out.complete = false;
            break;
        }
        for (std::size_t s = first; s < end; ++s) {
            splits[s].prepared.reserve(space.weights.size());
            for (const auto& w : space.weights)
                splits[s].prepared.push_back(
                    prepare_layout(model, splits[s].parallel,
                                   served_weights(model, w, serving.engine, serving.engine_version),
                                   serving.speculation));
        }
        for (std::size_t g = 0; g < space.gpus.size(); ++g)
            for (std::size_t k = 0; k < space.kv_formats.size(); ++k)
                for (std::size_t w = 0; w < space.weights.size(); ++w)
                    for (std::size_t s = first; s < end; ++s) {
                        const detail::ValidSplit& v = splits[s];
                        if (kv_refused(g, k)) continue;
                        if (space.layouts == LayoutRule::whole_nodes &&
                            !deployed_layout(v.parallel, v.gpus, space.gpus[g]))
                            continue;
                        const PreparedLayout& prep = v.prepared[w];
                        ++out.searched;
                        // Weights past the GPU's memory: no engine starts (each charges the
                        // weights before its cache), so the answer is does_not_start, neither fit
                        // nor miss.
                        if (!kv_given && prep.stage_weights.most() > space.gpus[g].memory_total) {
                            if (keys.empty()) refused.push_back(Key{s, g, k, w, v.gpus});
                            continue;
                        }
                        const GpuSpec& gpu = space.gpus[g];
                        const bool timed = gpu.memory_bandwidth > BytesPerSecond{} &&
                                           gpu.dense(eo.roofline.compute.value_or(
                                                         matmul_compute(prep.weights, gpu)))
                                               .has_value();
                        if (ranking == Ranking::fastest && timed && space.keep > 0 &&
                            fastest.size() == space.keep && prep.drafter_layers == 0) {
                            // A token passes every stage, each reading at least its weights but
                            // the experts and the embedding: a floor under the bound, cheap.
                            Seconds floor{};
                            for (std::uint32_t st = 0; st < prep.layout.pp(); ++st) {
                                const WeightBytes& wb = prep.stage_weights[st];
                                floor += (wb.total() - wb.routed_experts - wb.embedding) /
                                         gpu.memory_bandwidth;
                            }
                            if (floor > fastest.front()) {
                                out.complete = false;
                                continue;
                            }
                            // The bound evaluate() would give, from the same prepared costs.
                            const Replica r{.model = model,
                                            .gpu = gpu,
                                            .parallel = prep.layout.config(),
                                            .weights = prep.weights,
                                            .kv = kvs[k]};
                            const Seconds tpot =
                                decode_point(
                                    detail::decode_costs_with(r, prep.layout, prep.stage_weights,
                                                              prep.matmul, eo.roofline),
                                    demand.concurrency, demand.context)
                                    .tpot;
                            if (tpot > fastest.front()) {
                                out.complete = false;
                                continue;
                            }
                        }
                        const Deployment d{.model = model,
                                           .gpu = gpu,
                                           .parallel = v.parallel,
                                           .weights = space.weights[w],
                                           .kv = space.kv_formats[k],
                                           .serving = serving};
                        const ReplicaAnswer a = evaluate(d, demand, eo, prep);
                        if (!a.starts()) {
                            if (keys.empty()) refused.push_back(Key{s, g, k, w, a.replica_gpus});
                            continue;
                        }
                        const Seconds tpot = a.decode ? a.decode->tpot : Seconds{};
                        if (a.fits()) {
                            ++fits_found;
                            if (space.keep > 0 &&
                                (fastest.size() < space.keep || tpot < fastest.front())) {
                                if (fastest.size() == space.keep) {
                                    std::pop_heap(fastest.begin(), fastest.end(), slower);
                                    fastest.pop_back();
                                }
                                fastest.push_back(tpot);
                                std::push_heap(fastest.begin(), fastest.end(), slower);
                            }
                        }
                        keys.push_back({s, g, k, w, a.replica_gpus, a.max_concurrency, tpot,
                                        a.fits(), a.estimate.has_value(),
                                        a.estimate ? a.estimate->tokens_per_s_per_gpu : 0.0,
                                        a.estimate ? a.estimate->tpot : Seconds{}});
                    }
    }

    std::vector<Key> fits, started;
    for (const Key& key : keys) (key.fits ? fits : started).push_back(key);
    out.fitting = fits.size();
    std::stable_sort(fits.begin(), fits.end(), [&](const Key& a, const Key& b) {
        if (ranking == Ranking::fastest && a.tpot != b.tpot) return a.tpot < b.tpot;
        if (ranking == Ranking::estimate) {
            if (a.estimated != b.estimated) return a.estimated;
            if (a.estimated) {
                if (a.per_gpu_rate != b.per_gpu_rate) return a.per_gpu_rate > b.per_gpu_rate;
                if (a.gpus != b.gpus) return a.gpus < b.gpus;
                if (a.estimate_tpot != b.estimate_tpot) return a.estimate_tpot < b.estimate_tpot;
            }
        }
        if (a.gpus != b.gpus) return a.gpus < b.gpus;
        if (a.max_concurrency != b.max_concurrency) return a.max_concurrency > b.max_concurrency;
        return a.tpot < b.tpot;
    });
    std::stable_sort(started.begin(), started.end(), [&](const Key& a, const Key& b) {
        if (a.max_concurrency != b.max_concurrency) return a.max_concurrency > b.max_concurrency;
        return a.gpus < b.gpus;
    });
    const auto answer = [&](const Key& key) {
        const Deployment d{.model = model,
                           .gpu = space.gpus[key.gpu],
                           .parallel = splits[key.split].parallel,
                           .weights = space.weights[key.weights],
                           .kv = space.kv_formats[key.kv],
                           .serving = serving};
        return PlanCandidate{key.gpu, key.kv, key.weights,
                             evaluate(d, demand, eo, splits[key.split].prepared[key.weights])};
    };
    for (std::size_t i = 0; i < fits.size() && i < space.keep; ++i)
        out.fits.push_back(answer(fits[i]));
    for (std::size_t i = 0; i < started.size() && i < misses; ++i)
        out.nearest_misses.push_back(answer(started[i]));
    // Nothing started: of the refused candidates, the nearest to starting, the first found of
    // equals (candidates skipped for weights past the GPU are answered now, their shortfall
    // counted as evaluate() counts every other's).
    if (keys.empty())
        for (const Key& key : refused) {
            PlanCandidate c = answer(key);
            if (!out.refused || nearer_refusal(c.answer, out.refused->answer))
                out.refused = std::move(c);
        }
    return out;
}

}  // namespace kvplan
