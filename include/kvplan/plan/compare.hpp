#pragma once

// `kvplan compare` as one library call: several models, GPUs, KV dtypes and weight formats side by
// side. Each case is one size() (plan/size.hpp) on the layout's tp x pp and, with a GPU, one
// evaluate() (plan/evaluate.hpp) of the deployment: the budget, the concurrency, the longest
// context and the decode bound.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "../dtype.hpp"
#include "../gpu.hpp"
#include "../model.hpp"
#include "deployment.hpp"
#include "evaluate.hpp"
#include "size.hpp"

namespace kvplan {

/// One configuration to compare: a model, its KV format and weights, and optionally a GPU.
struct CompareCase {
    Model model;
    /// nullopt: what the serving engine's "auto" stores for the checkpoint (served_kv).
    std::optional<KvFormat> kv{};
    std::optional<WeightOptions> weights{};  ///< nullopt: the checkpoint's own format
    std::optional<GpuSpec> gpu{};            ///< nullopt: sizes only, no budget
};

/// What every case shares: the layout, the serving engine and the demand.
struct CompareRequest {
    ParallelConfig parallel{};
    std::uint32_t gpus = 0;  ///< every GPU deployed; 0: one replica
    Serving serving{};
    /// Tokens per sequence; nullopt: each model's context limit.
    std::optional<std::uint64_t> context{};
    std::uint64_t concurrency = 1;
    std::uint64_t shared_prefix_tokens = 0;
};

/// One case's figures.
struct CompareRow {
    SizeAnswer size;                         ///< on tp x pp, at the case's context
    std::optional<Deployment> deployment{};  ///< with a GPU: the deployment evaluated
    std::optional<ReplicaAnswer> replica{};  ///< with a GPU: evaluate()'s answer
};

/// The figures of one case under `r`. Throws as size() and evaluate() do.
[[nodiscard]] inline CompareRow compare_one(const CompareCase& c, const CompareRequest& r) {
    SizeRequest sr;
    sr.context = r.context;
    sr.concurrency = r.concurrency;
    sr.weights = c.weights;
    sr.engine = r.serving.engine;
    sr.engine_version = r.serving.engine_version;
    // The sizes of tp x pp, as `kvplan size` gives them; the GPU's budget takes the whole layout.
    const ParallelConfig sized{.tp = r.parallel.tp, .pp = r.parallel.pp};
    CompareRow row{.size = size(c.model, c.kv, sized, sr)};
    if (c.gpu) {
        row.deployment = Deployment{.model = c.model,
                                    .gpu = *c.gpu,
                                    .parallel = r.parallel,
                                    .gpus = r.gpus,
                                    .weights = c.weights,
                                    .kv = c.kv,
                                    .serving = r.serving};
        row.replica = evaluate(*row.deployment, {.context = row.size.context,
                                                 .concurrency = r.concurrency,
                                                 .shared_prefix_tokens = r.shared_prefix_tokens});
    }
    return row;
}

/// The figures of every case under `r`, in order. Throws as compare_one does.
[[nodiscard]] inline std::vector<CompareRow> compare(std::span<const CompareCase> cases,
                                                     const CompareRequest& r) {
    std::vector<CompareRow> rows;
    rows.reserve(cases.size());
    for (const CompareCase& c : cases) rows.push_back(compare_one(c, r));
    return rows;
}

}  // namespace kvplan
