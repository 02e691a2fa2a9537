#pragma once

// The replica search behind `kvplan plan`: every GPU type, GPU count and layout of a search space,
// every KV and weight format, each evaluated by evaluate() (so a candidate's figures are the ones
// fit prints for it), those that hold the demand ranked, and the nearest misses kept for a review
// that finds nothing fits. With a demand that splits its requests into prompt and output, each
// candidate carries the latency estimate, and Ranking::estimate orders by it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "../error.hpp"
#include "../gpu.hpp"
#include "../model.hpp"
#include "deployment.hpp"
#include "evaluate.hpp"

namespace kvplan {

/// What the search tries.
struct SearchSpace {
    std::vector<GpuSpec> gpus{};                      ///< GPU types, in order of preference
    std::vector<KvFormat> kv_formats{KvFormat{}};     ///< KV formats
    /// Weight formats; nullopt: the checkpoint's own.
    std::vector<std::optional<WeightOptions>> weights{std::nullopt};
    std::uint32_t max_gpus = 8;  ///< the most GPUs a replica may have
    std::uint32_t max_tp = 8;    ///< the largest tensor-parallel degree (one NVLink domain)
};

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
    std::vector<PlanCandidate> fits{};          ///< ranked
    std::vector<PlanCandidate> nearest_misses{};  ///< those that start, the most sequences first
    std::size_t searched = 0;  ///< layouts evaluated (those the model can take)
};

/// Every replica of `space` for `model` serving `demand` (one replica holding it all) under
/// `serving`, ranked by `ranking`; `misses` nearest misses are kept. Layouts the model cannot take
/// (tp not dividing its heads) are skipped; a knob the engine cannot take throws InvalidInput.
[[nodiscard]] inline PlanAnswer plan_replicas(const Model& model, const SearchSpace& space,
                                              const Serving& serving, const Demand& demand,
                                              Ranking ranking = Ranking::fewest_gpus,
                                              std::size_t misses = 5) {
    PlanAnswer out;
    EvaluateOptions eo;
    eo.contexts = false;
    std::vector<PlanCandidate> started;
    for (std::size_t g = 0; g < space.gpus.size(); ++g)
        for (std::size_t k = 0; k < space.kv_formats.size(); ++k)
            for (std::size_t w = 0; w < space.weights.size(); ++w)
                for (std::uint32_t n = 1; n <= space.max_gpus; ++n)
                    for (std::uint32_t tp = 1; tp <= std::min(n, space.max_tp); tp *= 2) {
                        if (n % tp != 0) continue;
                        const std::uint32_t pp = n / tp;
                        if (pp > model.num_layers() || pp > max_pipeline_stages) continue;
                        const Deployment d{.model = model,
                                           .gpu = space.gpus[g],
                                           .parallel = {.tp = tp, .pp = pp},
                                           .weights = space.weights[w],
                                           .kv = space.kv_formats[k],
                                           .serving = serving};
                        std::optional<ReplicaAnswer> a;
                        try {
                            a = evaluate(d, demand, eo);
                        } catch (const InvalidLayout&) {
                            continue;  // tp does not divide the heads: not a layout it takes
                        }
                        ++out.searched;
                        PlanCandidate c{g, k, w, std::move(*a)};
                        if (c.answer.fits())
                            out.fits.push_back(std::move(c));
                        else if (c.answer.starts())
                            started.push_back(std::move(c));
                    }
    const auto tpot = [](const PlanCandidate& c) {
        return c.answer.decode ? c.answer.decode->tpot : Seconds{};
    };
    const auto gpus = [](const PlanCandidate& c) { return c.answer.replica.gpus(); };
    std::stable_sort(out.fits.begin(), out.fits.end(),
                     [&](const PlanCandidate& a, const PlanCandidate& b) {
                         if (ranking == Ranking::fastest && tpot(a) != tpot(b))
                             return tpot(a) < tpot(b);
                         if (ranking == Ranking::estimate) {
                             const auto& ea = a.answer.estimate;
                             const auto& eb = b.answer.estimate;
                             if (ea.has_value() != eb.has_value()) return ea.has_value();
                             if (ea && eb) {
                                 if (ea->tokens_per_s_per_gpu != eb->tokens_per_s_per_gpu)
                                     return ea->tokens_per_s_per_gpu > eb->tokens_per_s_per_gpu;
                                 if (gpus(a) != gpus(b)) return gpus(a) < gpus(b);
                                 if (ea->tpot != eb->tpot) return ea->tpot < eb->tpot;
                             }
                         }
                         if (gpus(a) != gpus(b)) return gpus(a) < gpus(b);
                         if (a.answer.max_concurrency != b.answer.max_concurrency)
                             return a.answer.max_concurrency > b.answer.max_concurrency;
                         return tpot(a) < tpot(b);
                     });
    std::stable_sort(started.begin(), started.end(),
                     [&](const PlanCandidate& a, const PlanCandidate& b) {
                         if (a.answer.max_concurrency != b.answer.max_concurrency)
                             return a.answer.max_concurrency > b.answer.max_concurrency;
                         return gpus(a) < gpus(b);
                     });
    if (started.size() > misses)
        started.erase(started.begin() + static_cast<std::ptrdiff_t>(misses), started.end());
    out.nearest_misses = std::move(started);
    return out;
}

}  // namespace kvplan
