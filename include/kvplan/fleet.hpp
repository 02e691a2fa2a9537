#pragma once

// Fleet sizing against latency targets. From a request rate, a length distribution and TTFT / TPOT
// targets:
//   batch per replica = the largest batch where the KV budget holds and the TPOT and TTFT at that
//                       batch meet the targets (and the engine's max_num_seqs, when given);
//   in flight         = rate x the request's stay at that batch           (Little's law);
//   replicas          = ceil(in flight / batch),
// with the constraint that binds named. Two ways to hold KV:
//   - percentile sizing: every request is sized at one percentile (p95 by default) of paged KV per
//     request: batch_kv = floor(budget / that);
//   - overflow probability: the largest batch B for which P(X_1 + ... + X_B > budget) <= epsilon,
//     the X_i drawn independently from the distribution's paged KV per request. The probability is
//     bounded with Chernoff's inequality, P(S > c) <= min over theta > 0 of exp(B log E[e^(theta
//     X)]
//     - theta c), evaluated exactly on the empirical distribution: a guaranteed upper bound, never
//     an approximation that can fall short in the tail. The normal (central limit) estimate is
//     reported beside it for comparison only.
// Each request is held at its completion size for its whole stay, as the trace replay does (an
// upper bound). Opt-in (not in kvplan.hpp): allocates.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/enum_table.hpp"
#include "detail/text.hpp"
#include "error.hpp"
#include "plan/replicas.hpp"
#include "trace/distributions.hpp"
#include "units.hpp"

namespace kvplan {

// ---- Length distributions
// ------------------------------------------------------------------------

/// One point of a length distribution: `tokens` at percentile `percentile` (0..100).
struct QuantilePoint {
    double percentile = 0;
    std::uint64_t tokens = 0;
};

/// Reads "50:1000,95:4000,99:8000" (percentile:tokens, percentiles ascending, tokens not
/// decreasing) or a bare "2000" (every request that long). Throws InvalidInput naming `field`.
[[nodiscard]] inline std::vector<QuantilePoint> parse_quantile_points(std::string_view text,
                                                                      std::string_view field) {
    std::vector<QuantilePoint> pts;
    if (auto n = detail::parse_token_count(text)) {
        pts.push_back({100.0, *n});
        return pts;
    }
    const auto bad = [&](std::string_view what) {
        detail::throw_field_error<InvalidInput>(
            "", field, "tokens, or percentile:tokens pairs such as 50:1000,95:4000",
            detail::quoted(what));
    };
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const std::size_t end = std::min(text.find(',', pos), text.size());
        const std::string_view item = detail::trim(text.substr(pos, end - pos));
        const std::size_t colon = item.find(':');
        if (colon == std::string_view::npos) bad(item);
        const auto p = detail::parse_double(item.substr(0, colon));
        const auto t = detail::parse_token_count(item.substr(colon + 1));
        if (!p || !t || *p < 0 || *p > 100) bad(item);
        if (!pts.empty() && (*p <= pts.back().percentile || *t < pts.back().tokens))
            detail::throw_field_error<InvalidInput>(
                "", field, "percentiles ascending with tokens not decreasing",
                detail::quoted(text));
        pts.push_back({*p, *t});
        pos = end + 1;
    }
    return pts;
}

/// The tokens at fraction u (0..1) of a distribution given by points: flat at the first point's
/// tokens below it (conservative), linear in u between points and rounded up to whole tokens, flat
/// at the last point's tokens above it. Precondition: points non-empty.
[[nodiscard]] inline std::uint64_t quantile_tokens(std::span<const QuantilePoint> pts, double u) {
    KVPLAN_EXPECTS(!pts.empty());
    const double pct = u * 100.0;
    if (pct <= pts.front().percentile) return pts.front().tokens;
    for (std::size_t i = 1; i < pts.size(); ++i) {
        if (pct <= pts[i].percentile) {
            const double f =
                (pct - pts[i - 1].percentile) / (pts[i].percentile - pts[i - 1].percentile);
            const double v = static_cast<double>(pts[i - 1].tokens) +
                             f * static_cast<double>(pts[i].tokens - pts[i - 1].tokens);
            return static_cast<std::uint64_t>(std::ceil(v - 1e-9));
        }
    }
    return pts.back().tokens;
}

/// A length distribution: equally likely requests, counted by prompt, generated and total tokens
/// (the total is what KV depends on; counted per request, so pairings are kept).
struct LengthDistribution {
    LengthCounts lengths;

    /// Every request of a trace, arrival times dropped.
    [[nodiscard]] static LengthDistribution from_trace(const Trace& t) {
        return {length_counts(t)};
    }

    /// `n` samples at u = 1/n, 2/n, ..., 1 of the prompt and output quantile functions, paired at
    /// the same u (long prompts with long outputs: the pairing that makes the tail of the KV sum
    /// heaviest, so a conservative one). With n = 1000 the sample's nearest-rank percentiles at
    /// multiples of 0.1 are the quantile functions' values there.
    [[nodiscard]] static LengthDistribution from_percentiles(std::span<const QuantilePoint> prompt,
                                                             std::span<const QuantilePoint> output,
                                                             std::size_t n = 1000) {
        KVPLAN_EXPECTS(n >= 1 && !prompt.empty() && !output.empty());
        std::vector<TraceRequest> samples;
        samples.reserve(n);
        for (std::size_t i = 1; i <= n; ++i) {
            const double u = static_cast<double>(i) / static_cast<double>(n);
            samples.push_back({quantile_tokens(prompt, u), quantile_tokens(output, u), {}});
        }
        return {length_counts(samples)};
    }

    /// Requests (samples) in the distribution.
    [[nodiscard]] std::uint64_t requests() const noexcept { return lengths.total.count(); }
    [[nodiscard]] double mean_output() const {
        return lengths.output.empty() ? 0.0 : mean_of(lengths.output);
    }
    /// Mean tokens in context over a request's decode: prompt + output / 2, averaged. What a decode
    /// step reads per sequence on average.
    [[nodiscard]] double mean_decode_context() const {
        if (lengths.total.empty()) return 0.0;
        // Sums of whole and half tokens: exact in double, so summed apart as well as together.
        const auto sum = [](const Histogram<std::uint64_t>& h) {
            double v = 0;
            for (const auto& b : h.bins())
                v += static_cast<double>(b.value) * static_cast<double>(b.count);
            return v;
        };
        return (sum(lengths.prompt) + sum(lengths.output) / 2) /
               static_cast<double>(lengths.total.count());
    }
};

/// Throws InvalidInput when a shared prefix of `prefix_tokens` passes the shortest prompt of `d`
/// (Demand::shared_prefix_tokens is part of every prompt).
inline void check_shared_prefix(const LengthDistribution& d, std::uint64_t prefix_tokens) {
    if (prefix_tokens == 0 || d.lengths.prompt.empty()) return;
    const std::uint64_t shortest = d.lengths.prompt.min();
    if (prefix_tokens > shortest)
        detail::throw_field_error<InvalidInput>(
            "the length distribution", "shared_prefix_tokens",
            detail::text("at most the shortest prompt, ", shortest, " tokens"),
            detail::text(prefix_tokens, " tokens"));
}

// ---- Overflow probability
// ------------------------------------------------------------------------

/// Request sizes as (size, count) pairs in units of the largest size, for the tail bounds.
struct SizeHistogram {
    std::vector<std::pair<double, double>> values;  ///< (size / scale, count)
    double scale = 0;                               ///< bytes of the largest size
    double count = 0;
    double mean = 0;      ///< in units of scale
    double variance = 0;  ///< in units of scale^2

    [[nodiscard]] static SizeHistogram of(const Histogram<Bytes>& sizes) {
        KVPLAN_EXPECTS(!sizes.empty());
        SizeHistogram h;
        h.scale = sizes.max().in(B);
        h.count = static_cast<double>(sizes.count());
        for (const auto& [v, n] : sizes.bins()) {
            const double x = h.scale > 0 ? v.in(B) / h.scale : 0.0;
            h.values.emplace_back(x, static_cast<double>(n));
        }
        for (const auto& [x, c] : h.values) h.mean += x * c / h.count;
        for (const auto& [x, c] : h.values) h.variance += (x - h.mean) * (x - h.mean) * c / h.count;
        return h;
    }
    [[nodiscard]] static SizeHistogram of(std::span<const Bytes> sizes) {
        return of(histogram_of(sizes));
    }

    /// log E[e^(theta X)] and the tilted mean E[X e^(theta X)] / E[e^(theta X)], computed stably
    /// (the exponents are shifted by theta x max = theta).
    [[nodiscard]] std::pair<double, double> log_mgf_and_tilted_mean(double theta) const {
        double z = 0, zx = 0;
        for (const auto& [x, c] : values) {
            const double w = c * std::exp(theta * (x - 1.0));
            z += w;
            zx += w * x;
        }
        return {theta + std::log(z / count), zx / z};
    }
};

/// Chernoff's upper bound on P(X_1 + ... + X_batch > capacity), X_i independent draws from `sizes`
/// (equally likely): exp(batch x log E[e^(theta X)] - theta x capacity) at the theta that minimises
/// it, found by bisection on the tilted mean (the exponent is convex in theta). 1 when the mean
/// load already reaches capacity; 0 when even batch largest sizes fit.
[[nodiscard]] inline double chernoff_overflow_bound(const SizeHistogram& h, std::uint64_t batch,
                                                    Bytes capacity) {
    if (batch == 0) return 0.0;
    if (h.scale == 0) return 0.0;
    const double b = static_cast<double>(batch);
    const double a = capacity.in(B) / h.scale / b;  // capacity per request, in units of the largest
    if (a >= 1.0) return 0.0;
    if (a <= h.mean) return 1.0;
    // The tilted mean rises from the mean (theta = 0) towards the largest size (1): find theta
    // where it equals a. Any theta gives a valid bound, so the bisection's last step is safe.
    double lo = 0, hi = 1;
    while (h.log_mgf_and_tilted_mean(hi).second < a && hi < 1e7) hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
        const double mid = (lo + hi) / 2;
        (h.log_mgf_and_tilted_mean(mid).second < a ? lo : hi) = mid;
    }
    const double theta = hi;
    const double exponent = b * (h.log_mgf_and_tilted_mean(theta).first - theta * a);
    return std::min(1.0, std::exp(exponent));
}

[[nodiscard]] inline double chernoff_overflow_bound(const Histogram<Bytes>& sizes,
                                                    std::uint64_t batch, Bytes capacity) {
    if (batch == 0) return 0.0;
    return chernoff_overflow_bound(SizeHistogram::of(sizes), batch, capacity);
}

[[nodiscard]] inline double chernoff_overflow_bound(std::span<const Bytes> sizes,
                                                    std::uint64_t batch, Bytes capacity) {
    if (batch == 0) return 0.0;
    return chernoff_overflow_bound(SizeHistogram::of(sizes), batch, capacity);
}

/// The normal (central limit) estimate of the same probability: 1 - Phi((capacity - B mean) /
/// (sd sqrt(B))). Not a bound; it understates right-skewed tails. For comparison only.
[[nodiscard]] inline double normal_overflow_estimate(const SizeHistogram& h, std::uint64_t batch,
                                                     Bytes capacity) {
    if (batch == 0) return 0.0;
    if (h.scale == 0) return 0.0;
    const double b = static_cast<double>(batch);
    const double margin = capacity.in(B) / h.scale - b * h.mean;
    if (h.variance <= 0) return margin < 0 ? 1.0 : 0.0;
    return 0.5 * std::erfc(margin / std::sqrt(2.0 * b * h.variance));
}

[[nodiscard]] inline double normal_overflow_estimate(const Histogram<Bytes>& sizes,
                                                     std::uint64_t batch, Bytes capacity) {
    if (batch == 0) return 0.0;
    return normal_overflow_estimate(SizeHistogram::of(sizes), batch, capacity);
}

[[nodiscard]] inline double normal_overflow_estimate(std::span<const Bytes> sizes,
                                                     std::uint64_t batch, Bytes capacity) {
    if (batch == 0) return 0.0;
    return normal_overflow_estimate(SizeHistogram::of(sizes), batch, capacity);
}

/// The largest batch whose Chernoff bound on overflowing `capacity` is at most `epsilon` (0 when
/// not even one request meets it). The bound grows with the batch, so the search bisects.
[[nodiscard]] inline std::uint64_t largest_batch_within(const Histogram<Bytes>& sizes,
                                                        Bytes capacity, double epsilon) {
    KVPLAN_EXPECTS(!sizes.empty() && epsilon > 0 && epsilon < 1);
    const SizeHistogram h = SizeHistogram::of(sizes);
    const Bytes smallest = sizes.min();
    const auto ok = [&](std::uint64_t b) {
        return chernoff_overflow_bound(h, b, capacity) <= epsilon;
    };
    if (!ok(1)) return 0;
    // Past capacity / smallest + 1 requests even the smallest sizes overflow.
    std::uint64_t lo = 1;
    std::uint64_t hi = smallest.is_zero() ? (1ULL << 40) : capacity / smallest + 2;
    if (ok(hi)) return hi;
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (ok(mid) ? lo : hi) = mid;
    }
    return lo;
}

[[nodiscard]] inline std::uint64_t largest_batch_within(std::span<const Bytes> sizes,
                                                        Bytes capacity, double epsilon) {
    KVPLAN_EXPECTS(!sizes.empty());
    return largest_batch_within(histogram_of(sizes), capacity, epsilon);
}

// ---- The plan
// ------------------------------------------------------------------------------------

/// Plans replicas for `t`, with `kv_sizes` the paged KV per request on the replica's limiting rank
/// (counted over the length distribution), `kv_budget` that rank's KV budget, and `timing(batch)`
/// the replica's BatchTiming at that batch (size_replicas).
template <class Timing>
[[nodiscard]] FleetPlan plan_fleet(const FleetTargets& t, const Histogram<Bytes>& kv_sizes,
                                   double mean_output_tokens, Bytes kv_budget, Timing timing,
                                   const FleetOptions& o = {}) {
    KVPLAN_EXPECTS(!kv_sizes.empty());
    const SizeHistogram sizes = SizeHistogram::of(kv_sizes);
    const Bytes at_percentile = kv_sizes.percentile(o.size_at_percentile);
    const std::uint64_t batch_at_percentile =
        at_percentile.is_zero() ? std::uint64_t{1} << 40 : kv_budget / at_percentile;
    std::optional<std::uint64_t> batch_overflow;
    if (o.epsilon > 0) batch_overflow = largest_batch_within(kv_sizes, kv_budget, o.epsilon);
    FleetPlan p = size_replicas(t, batch_overflow.value_or(batch_at_percentile), o.max_batch,
                                mean_output_tokens, timing);
    p.kv_at_percentile = at_percentile;
    p.batch_kv_at_percentile = batch_at_percentile;
    p.batch_kv_overflow = batch_overflow;
    if (p.feasible) {
        p.overflow_bound = chernoff_overflow_bound(sizes, p.batch, kv_budget);
        p.overflow_normal = normal_overflow_estimate(sizes, p.batch, kv_budget);
    }
    return p;
}

/// As above, with one size per request (or sample).
template <class Timing>
[[nodiscard]] FleetPlan plan_fleet(const FleetTargets& t, std::span<const Bytes> kv_sizes,
                                   double mean_output_tokens, Bytes kv_budget, Timing timing,
                                   const FleetOptions& o = {}) {
    KVPLAN_EXPECTS(!kv_sizes.empty());
    return plan_fleet(t, histogram_of(kv_sizes), mean_output_tokens, kv_budget, timing, o);
}

}  // namespace kvplan
