#pragma once

// The smallest replica that fits a workload, over GPU types and tp x pp.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../error.hpp"
#include "../gpu.hpp"
#include "../model.hpp"
#include "budget.hpp"
#include "replica.hpp"

namespace kvplan {

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
                const Replica r{.model = m,
                                .gpu = gpus[g],
                                .parallel = {.tp = tp, .pp = pp},
                                .weights = weights,
                                .kv = kv};
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
