#pragma once

// The replicas a request rate needs of one replica design under TTFT / TPOT targets: the batch it
// runs (the largest that its KV, the engine's sequence cap and both latency targets allow) and, by
// Little's law, replicas = ceil(rate x a request's stay at that batch / batch). Every aggregated
// fleet is sized here (kvplan fleet through fleet.hpp and plan/fleet.hpp, the aggregated pool of
// plan/disaggregated.hpp), so that the same replica gets the same fleet whichever asks.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "../detail/enum_table.hpp"
#include "../fixed_array.hpp"
#include "../roofline/estimate.hpp"
#include "../units.hpp"

namespace kvplan {

/// What the fleet must serve and how fast.
struct FleetTargets {
    double rate_per_s = 0;          ///< requests arriving per second
    std::optional<Seconds> ttft{};  ///< time to first token target; nullopt: none
    Seconds tpot{};                 ///< time per output token target
};

/// How to size the batch.
struct FleetOptions {
    double size_at_percentile = 95;  ///< percentile sizing: KV of every request at this percentile
    double epsilon = 0;              ///< > 0: size by overflow probability instead
    std::uint64_t max_batch = 0;     ///< the engine's max_num_seqs; 0: no limit
};

/// One replica's latencies with a batch of sequences running, as the sizing model times them.
struct BatchTiming {
    Seconds ttft{};     ///< a request's time to first token (no queue: the batch is what runs)
    Seconds tpot{};     ///< time per output token after the first
    Seconds request{};  ///< a request's whole stay: TTFT + (output tokens - 1) x TPOT
};

/// The constraint that sets the batch.
enum class FleetBinding : std::uint8_t { kv_budget, tpot, max_batch, ttft };

/// Each binding's spelling, as reports name it.
inline constexpr FixedArray<detail::EnumName<FleetBinding>, 4> fleet_binding_names{{
    {FleetBinding::kv_budget, "KV budget"},
    {FleetBinding::tpot, "TPOT"},
    {FleetBinding::max_batch, "max_num_seqs"},
    {FleetBinding::ttft, "TTFT"},
}};

[[nodiscard]] constexpr std::string_view name(FleetBinding b) noexcept {
    return detail::enum_name(fleet_binding_names, b);
}

struct FleetPlan {
    bool feasible = false;       ///< some batch >= 1 meets every constraint
    std::uint64_t batch_kv = 0;  ///< the largest batch the KV budget holds (chosen mode)
    std::uint64_t batch_kv_at_percentile = 0;          ///< floor(budget / KV at size_at_percentile)
    std::optional<std::uint64_t> batch_kv_overflow{};  ///< the epsilon mode's batch, when asked
    std::uint64_t batch_tpot = 0;  ///< the largest batch whose TPOT meets the target
    /// The search stopped at the other limits: at least batch_tpot.
    bool batch_tpot_capped = false;
    /// The largest batch whose TTFT meets the target (no target: the other limits' batch).
    std::uint64_t batch_ttft = 0;
    bool batch_ttft_capped = false;  ///< as batch_tpot_capped, for the TTFT
    std::uint64_t batch = 0;         ///< min of the above (and max_batch)
    FleetBinding binding = FleetBinding::kv_budget;
    Bytes kv_at_percentile{};    ///< paged KV per request at size_at_percentile
    Seconds tpot_at_batch{};     ///< the TPOT at `batch`
    Seconds ttft_at_batch{};     ///< the TTFT at `batch`
    double overflow_bound = 0;   ///< Chernoff bound on P(KV > budget) at `batch`
    double overflow_normal = 0;  ///< normal estimate of the same, for comparison
    double mean_output_tokens = 0;
    Seconds time_in_system{};    ///< a request's stay at `batch`: BatchTiming::request
    double in_flight = 0;        ///< rate x time in system
    std::uint64_t replicas = 0;  ///< ceil(in flight / batch), at least 1; 0 when infeasible
};

namespace detail {

/// The largest b in [1, cap] with ok(b) (ok true up to a point), 0 when not even ok(1); `capped`
/// says the search stopped at cap.
template <class Ok>
[[nodiscard]] std::uint64_t largest_meeting(std::uint64_t cap, Ok ok, bool& capped) {
    capped = false;
    if (!ok(1)) return 0;
    if (ok(cap)) {
        capped = true;
        return cap;
    }
    std::uint64_t lo = 1, hi = cap;  // meets at lo, misses at hi
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (ok(mid) ? lo : hi) = mid;
    }
    return lo;
}

}  // namespace detail

/// The batch and replicas of one replica design: the batch is the largest that the KV holds
/// (`batch_kv`), the engine runs (`max_batch`, 0: no limit) and whose TPOT and TTFT (`timing(b)`,
/// a BatchTiming, each non-decreasing in b) meet the targets; by Little's law the fleet holds
/// rate x the request's stay at that batch (timing(batch).request) in flight, so
/// replicas = ceil(in flight / batch). The stay is the latency the replica delivers, not the
/// targets: the targets bound it, and sizing by them counts slack as occupancy. Every aggregated
/// fleet (kvplan fleet, the aggregated pool of plan_disaggregated) is sized here. The KV fields
/// of the answer are the caller's.
template <class Timing>
[[nodiscard]] FleetPlan size_replicas(const FleetTargets& t, std::uint64_t batch_kv,
                                      std::uint64_t max_batch, double mean_output_tokens,
                                      Timing timing) {
    FleetPlan p;
    p.batch_kv = batch_kv;
    // The latency searches stop where the other limits stop the batch.
    std::uint64_t cap = batch_kv;
    if (max_batch != 0) cap = std::min(cap, max_batch);
    cap = std::max<std::uint64_t>(cap, 1);
    p.batch_tpot = detail::largest_meeting(
        cap, [&](std::uint64_t b) { return BatchTiming(timing(b)).tpot <= t.tpot; },
        p.batch_tpot_capped);
    if (t.ttft)
        p.batch_ttft = detail::largest_meeting(
            cap, [&](std::uint64_t b) { return BatchTiming(timing(b)).ttft <= *t.ttft; },
            p.batch_ttft_capped);
    else {
        p.batch_ttft = cap;
        p.batch_ttft_capped = true;
    }

    // Order of naming: the KV budget, then max_num_seqs, then TPOT, then TTFT; a latency search
    // stopped at the other limits does not bind.
    p.batch = p.batch_kv;
    p.binding = FleetBinding::kv_budget;
    if (max_batch != 0 && max_batch < p.batch) {
        p.batch = max_batch;
        p.binding = FleetBinding::max_batch;
    }
    if (!p.batch_tpot_capped && p.batch_tpot < p.batch) {
        p.batch = p.batch_tpot;
        p.binding = FleetBinding::tpot;
    }
    if (!p.batch_ttft_capped && p.batch_ttft < p.batch) {
        p.batch = p.batch_ttft;
        p.binding = FleetBinding::ttft;
    }
    p.mean_output_tokens = mean_output_tokens;
    p.feasible = p.batch >= 1;
    if (p.feasible) {
        const BatchTiming at = timing(p.batch);
        p.tpot_at_batch = at.tpot;
        p.ttft_at_batch = at.ttft;
        p.time_in_system = at.request;
        p.in_flight = t.rate_per_s * p.time_in_system.in(seconds);
        p.replicas = std::max<std::uint64_t>(
            1, static_cast<std::uint64_t>(
                   std::ceil(p.in_flight / static_cast<double>(p.batch) - 1e-9)));
    }
    return p;
}

/// The latency estimate with `batch` requests of `prompt` + `output` tokens running at once: the
/// batch sized is the batch that runs, so none waits (roofline/estimate.hpp).
[[nodiscard]] constexpr LatencyEstimate estimate_with_batch(
    const DecodeCosts& c, std::uint64_t batch, std::uint64_t prompt, std::uint64_t output,
    std::optional<std::uint64_t> max_num_batched_tokens, const EstimateParams& p) {
    const Load load{.concurrency = batch,
                    .prompt_tokens = prompt,
                    .output_tokens = output,
                    .max_num_batched_tokens = max_num_batched_tokens,
                    .max_running = batch};
    return estimate_latency(c, load, p, RunningCap{batch, true});
}

/// The timing size_replicas takes, from an estimate: its TTFT, its TPOT and a request's stay.
[[nodiscard]] constexpr BatchTiming batch_timing(const LatencyEstimate& e) noexcept {
    return {.ttft = e.ttft, .tpot = e.tpot, .request = e.request};
}

}  // namespace kvplan
