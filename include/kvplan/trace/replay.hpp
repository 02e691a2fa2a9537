#pragma once

// Replaying a trace's arrivals: the concurrency they imply (Little's law, and the requests and KV
// in flight over time), and the replica that holds the replay's peak.
//
// A replay sorts arrivals and completions once (linear in the requests: times spread into ranges,
// or a radix sort) into one stream of events, then walks it as often as a figure needs: once for
// a peak and a p95, never sorting again. What a request holds depends only on its total length,
// so the KV of every candidate replica is a table per distinct length; tables equal up to a factor
// (every stage of a model whose layers are all alike) share one walk.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../budget.hpp"
#include "../detail/checked.hpp"
#include "../error.hpp"
#include "../layout.hpp"
#include "../units.hpp"
#include "distributions.hpp"
#include "reading.hpp"

namespace kvplan {

/// How long a request stays: TTFT for the prompt, then TPOT per generated token.
struct ServiceTimes {
    Seconds ttft{};
    Seconds tpot{};
    /// Time in system of a request generating `output_tokens`: ttft + output_tokens x tpot.
    [[nodiscard]] constexpr Seconds time_in_system(std::uint64_t output_tokens) const noexcept {
        return ttft + tpot * static_cast<double>(output_tokens);
    }
};

/// The service times a trace is replayed at unless others are given: a TTFT of 500 ms and a TPOT
/// of 50 ms, interactive chat's targets (kvplan trace and kvplan.trace take them as defaults).
inline constexpr ServiceTimes default_service_times{.ttft = 500 * milliseconds,
                                                    .tpot = 50 * milliseconds};

/// The concurrency a trace's arrivals imply at given service times.
struct TraceConcurrency {
    Seconds arrival_span{};         ///< last arrival - first arrival
    double rate_per_s = 0;          ///< (requests - 1) / arrival_span: arrivals per second
    Seconds mean_time_in_system{};  ///< ttft + mean generated tokens x tpot
    double littles_law = 0;         ///< rate x mean time in system: mean requests in flight
    // Replay: request i is in the system over [arrival_i, arrival_i + time in system), holding its
    // KV at completion size throughout (an upper bound: an engine grows it token by token).
    std::uint64_t peak_requests = 0;
    std::uint64_t p95_requests =
        0;                     ///< time-weighted: in flight at most this many 95 % of the time
    double mean_requests = 0;  ///< time-weighted mean over [first arrival, last completion]
    Bytes peak_kv{};
    Bytes p95_kv{};     ///< time-weighted, as p95_requests
    Seconds peak_at{};  ///< when peak_kv is first reached, since the first arrival
};

namespace detail {

/// A double's bits as an unsigned integer that orders as the doubles do (-0 taken as +0; no NaN).
[[nodiscard]] inline std::uint64_t ordered_bits(double x) noexcept {
    const auto u = std::bit_cast<std::uint64_t>(x + 0.0);
    return (u >> 63) != 0 ? ~u : u | (std::uint64_t{1} << 63);
}

[[nodiscard]] inline double from_ordered_bits(std::uint64_t u) noexcept {
    return std::bit_cast<double>((u >> 63) != 0 ? u & ~(std::uint64_t{1} << 63) : ~u);
}

/// Sorts `key` ascending with `idx` permuted alike, stably: a least-significant-digit radix sort
/// in 11-bit digits, skipping digits every key shares. Linear in the count (at most six passes).
inline void radix_sort_by_key(std::span<std::uint64_t> key, std::span<std::uint32_t> idx) {
    KVPLAN_EXPECTS(key.size() == idx.size());
    constexpr unsigned bits = 11, digits = (64 + bits - 1) / bits;
    constexpr std::size_t radix = std::size_t{1} << bits;
    const std::size_t n = key.size();
    if (n < 2) return;
    std::vector<std::size_t> count(digits * radix, 0);
    for (const std::uint64_t k : key)
        for (unsigned d = 0; d < digits; ++d)
            ++count[d * radix + ((k >> (d * bits)) & (radix - 1))];
    std::vector<std::uint64_t> key2(n);
    std::vector<std::uint32_t> idx2(n);
    std::span<std::uint64_t> from_key = key, to_key = key2;
    std::span<std::uint32_t> from_idx = idx, to_idx = idx2;
    for (unsigned d = 0; d < digits; ++d) {
        std::size_t* c = count.data() + d * radix;
        const unsigned shift = d * bits;
        if (c[(from_key[0] >> shift) & (radix - 1)] == n) continue;  // every key has this digit
        std::size_t sum = 0;
        for (std::size_t b = 0; b < radix; ++b) sum += std::exchange(c[b], sum);
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t at = c[(from_key[i] >> shift) & (radix - 1)]++;
            to_key[at] = from_key[i];
            to_idx[at] = from_idx[i];
        }
        std::swap(from_key, to_key);
        std::swap(from_idx, to_idx);
    }
    if (from_key.data() != key.data()) {
        std::copy(from_key.begin(), from_key.end(), key.begin());
        std::copy(from_idx.begin(), from_idx.end(), idx.begin());
    }
}

/// Sorts the ordered_bits of times (`key`) ascending with `idx` permuted alike, stably. Times
/// spread over their range, so one pass spreads them into as many ranges as there are times
/// (the range a time falls in rises with it) and a second puts each where its range starts; the
/// few in a range are then sorted in place, by insertion (or radix, when many crowd in one).
/// A trace's times come nearly in order (completions trail arrivals by a stay), so every pass
/// writes near where it wrote last: two passes through memory, where a radix sort takes six.
inline void sort_times(std::vector<std::uint64_t>& key, std::vector<std::uint32_t>& idx) {
    KVPLAN_EXPECTS(key.size() == idx.size() && key.size() <= 0xFFFFFFFFu);
    const std::size_t n = key.size();
    if (n < 2) return;
    const auto [lo_key, hi_key] = std::minmax_element(key.begin(), key.end());
    const double lo = from_ordered_bits(*lo_key), hi = from_ordered_bits(*hi_key);
    if (!(hi - lo > 0) || !(hi - lo < std::numeric_limits<double>::infinity())) {
        radix_sort_by_key(key, idx);  // one instant, or an infinite range
        return;
    }
    // (t - lo) x scale rises with t (each operation is monotonic), so ranges keep the order.
    const double scale = static_cast<double>(n) / (hi - lo);
    const auto range_of = [&](std::uint64_t k) {
        const double r = (from_ordered_bits(k) - lo) * scale;
        return r < static_cast<double>(n - 1) ? static_cast<std::size_t>(r) : n - 1;
    };
    std::vector<std::uint32_t> end(n, 0);  // end[r]: where range r ends, once placed
    for (const std::uint64_t k : key) ++end[range_of(k)];
    std::uint32_t sum = 0;
    for (std::uint32_t& e : end) sum = e = sum + e;
    std::vector<std::uint64_t> key2(n);
    std::vector<std::uint32_t> idx2(n);
    for (std::size_t i = n; i-- > 0;) {  // backwards, from each range's end: stable
        const std::uint32_t at = --end[range_of(key[i])];
        key2[at] = key[i];
        idx2[at] = idx[i];
    }
    key.swap(key2);
    idx.swap(idx2);
    // end[r] is now where range r starts. A crowded range is sorted by a comparison sort while
    // small enough for its log to be bounded, by radix past that: linear whatever the times.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> crowd;
    for (std::size_t r = 0; r < n; ++r) {
        const std::size_t first = end[r], last = r + 1 < n ? end[r + 1] : n;
        if (last - first <= 1) continue;
        if (last - first >= 4096) {
            radix_sort_by_key(std::span(key).subspan(first, last - first),
                              std::span(idx).subspan(first, last - first));
            continue;
        }
        if (last - first > 32) {
            crowd.clear();
            for (std::size_t i = first; i < last; ++i) crowd.emplace_back(key[i], idx[i]);
            std::stable_sort(crowd.begin(), crowd.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
            for (std::size_t i = first; i < last; ++i) std::tie(key[i], idx[i]) = crowd[i - first];
            continue;
        }
        for (std::size_t i = first + 1; i < last; ++i) {
            const std::uint64_t k = key[i];
            const std::uint32_t x = idx[i];
            std::size_t j = i;
            for (; j > first && key[j - 1] > k; --j) {
                key[j] = key[j - 1];
                idx[j] = idx[j - 1];
            }
            key[j] = k;
            idx[j] = x;
        }
    }
}

/// The smallest value v with (time spent at values <= v) >= p % of `total`: the time-weighted
/// nearest-rank percentile of a step function. `each(fn)` calls fn(value, duration) for every
/// segment of it, values in [0, max_value]. Time is summed per range of values, and the range that
/// holds the percentile split again, until it is one value: a few calls of `each`, no sort.
template <class EachSegment>
[[nodiscard]] std::uint64_t time_weighted_percentile(EachSegment&& each, std::uint64_t max_value,
                                                     double total, double p) {
    constexpr std::uint64_t max_buckets = std::uint64_t{1} << 16;
    const double reach = p / 100.0 * total * (1 - 1e-12);
    std::uint64_t lo = 0, hi = max_value;  // the answer lies in [lo, hi]
    double below = 0;                      // time at values < lo
    std::vector<double> time(static_cast<std::size_t>(std::min(max_buckets, max_value) + 1));
    for (;;) {
        unsigned shift = 0;  // ranges of 2^shift values, at most max_buckets of them
        while (((hi - lo) >> shift) >= max_buckets) ++shift;
        const std::uint64_t width = std::uint64_t{1} << shift;
        const std::size_t used = static_cast<std::size_t>(((hi - lo) >> shift) + 1);
        std::fill(time.begin(), time.begin() + static_cast<std::ptrdiff_t>(used), 0.0);
        each([&](std::uint64_t v, double dt) {
            if (v >= lo && v <= hi) time[static_cast<std::size_t>((v - lo) >> shift)] += dt;
        });
        // The first range with time in it that reaches the percentile; else (sums rounded
        // differently at a finer split) the last with time in it.
        std::size_t pick = used;
        double acc = below, before_pick = below;
        for (std::size_t b = 0; b < used; ++b) {
            if (time[b] <= 0) continue;
            pick = b;
            before_pick = acc;
            if (acc + time[b] >= reach) break;
            acc += time[b];
        }
        if (pick == used) return hi;
        lo += pick * width;
        if (width == 1) return lo;
        hi = lo + std::min(width - 1, hi - lo);
        below = before_pick;
    }
}

}  // namespace detail

/// A trace's arrivals and completions at given service times, sorted once into one stream of
/// events, to be walked for each figure and each candidate replica. Refers to the trace, which
/// must outlive it. Memory: 16 bytes per request beside the trace (32 while sorting).
class TraceReplay {
    struct ByLength {
        const TraceReplay* replay;
        std::span<const std::uint64_t> units;
        [[nodiscard]] std::uint64_t operator()(std::uint32_t, const TraceRequest& q) const {
            const std::uint64_t n = q.prompt_tokens + q.output_tokens;  // checked when counted
            const auto& dense = replay->dense_index_;
            if (n < dense.size()) return units[dense[static_cast<std::size_t>(n)]];
            const auto& all = replay->lengths_;
            return units[static_cast<std::size_t>(std::lower_bound(all.begin(), all.end(), n) -
                                                  all.begin())];
        }
    };

   public:
    /// Sorts the replay of `t` at `times` (linear in the requests), and walks it once for the
    /// figures that do not depend on what requests hold. Throws InvalidInput past 2^30 - 1
    /// requests. Precondition: times are not negative.
    TraceReplay(const Trace& t, ServiceTimes times) : t_(&t), times_(times) {
        KVPLAN_EXPECTS(times.ttft.in(seconds) >= 0 && times.tpot.in(seconds) >= 0);
        const std::size_t n = t.requests.size();
        if (n > index_mask)
            detail::throw_field_error<InvalidInput>(
                t.source, "requests", "at most 1,073,741,823 requests", std::to_string(n));
        // One pass over the requests: lengths, and what Little's law needs.
        detail::LengthCounter lengths;
        double first = n > 0 ? t.requests[0].arrival.in(seconds) : 0, last = first, out_sum = 0;
        bool in_order = true;
        for (std::size_t i = 0; i < n; ++i) {
            const TraceRequest& q = t.requests[i];
            lengths.add(q.total_tokens());
            const double a = q.arrival.in(seconds);
            first = std::min(first, a);
            last = std::max(last, a);
            out_sum += static_cast<double>(q.output_tokens);
            if (i > 0 && a < t.requests[i - 1].arrival.in(seconds)) in_order = false;
        }
        const Histogram<std::uint64_t> h = std::move(lengths).finish();
        lengths_.reserve(h.bins().size());
        for (const auto& b : h.bins()) lengths_.push_back(b.value);
        if (!lengths_.empty() && lengths_.back() < dense_lengths) {
            dense_index_.assign(static_cast<std::size_t>(lengths_.back() + 1), 0);
            for (std::size_t k = 0; k < lengths_.size(); ++k)
                dense_index_[static_cast<std::size_t>(lengths_[k])] = static_cast<std::uint32_t>(k);
        }
        if (!t.has_arrivals || n < 2 || !(last > first)) return;
        first_ = first;
        TraceConcurrency& c = requests_;
        c.arrival_span = (last - first) * seconds;
        c.rate_per_s = static_cast<double>(n - 1) / c.arrival_span.in(seconds);
        c.mean_time_in_system = times.ttft + times.tpot * (out_sum / static_cast<double>(n));
        c.littles_law = c.rate_per_s * c.mean_time_in_system.in(seconds);
        sort_events(in_order);
        walk_requests();
        has_replay_ = true;
    }
    TraceReplay(Trace&&, ServiceTimes) = delete;  // it would outlive the trace

    /// Whether the trace has a replay: arrival times, two requests or more, not all at one instant.
    [[nodiscard]] bool has_replay() const noexcept { return has_replay_; }
    [[nodiscard]] const Trace& trace() const noexcept { return *t_; }
    [[nodiscard]] ServiceTimes times() const noexcept { return times_; }
    /// The distinct total lengths (prompt + generated tokens) of the requests, ascending: what a
    /// table of KV per length is indexed by.
    [[nodiscard]] std::span<const std::uint64_t> lengths() const noexcept { return lengths_; }

    /// Little's law and the replay, with request i (file order) holding held[i] throughout its
    /// stay. nullopt without a replay. Precondition: held.size() == requests.
    [[nodiscard]] std::optional<TraceConcurrency> concurrency(std::span<const Bytes> held) const {
        KVPLAN_EXPECTS(held.size() == t_->requests.size());
        if (!has_replay_) return std::nullopt;
        const Units u = units_of(held);
        const auto of = [&](std::uint32_t i, const TraceRequest&) { return u.units[i]; };
        check_total(of);
        return figures(kv_of(of), u.unit);
    }

    /// As concurrency, with every request of total length lengths()[k] holding held[k]. Each
    /// table's walks (tables equal up to a factor being one) are remembered: asking again, as a
    /// replica search does, costs no walk. Precondition: held.size() == lengths().size().
    [[nodiscard]] std::optional<TraceConcurrency> concurrency_by_length(
        std::span<const Bytes> held) {
        KVPLAN_EXPECTS(held.size() == lengths_.size());
        if (!has_replay_) return std::nullopt;
        Units u = units_of(held);
        const Bytes unit = u.unit;
        return figures(remembered(std::move(u), true).second, unit);
    }

    /// The peak of the KV in flight alone, with held per length as concurrency_by_length takes it:
    /// one walk, remembered likewise. Zero without a replay.
    [[nodiscard]] Bytes peak_kv_by_length(std::span<const Bytes> held) {
        KVPLAN_EXPECTS(held.size() == lengths_.size());
        if (!has_replay_) return Bytes{};
        Units u = units_of(held);
        const Bytes unit = u.unit;
        return unit * remembered(std::move(u), false).second.peak;
    }

   private:
    static constexpr std::uint64_t dense_lengths = std::uint64_t{1} << 20;
    static constexpr std::uint64_t dense_values = std::uint64_t{1} << 20;
    // An event: the request's index, whether it arrives (else it completes), and whether it is
    // the last event of its instant.
    static constexpr std::uint32_t arrives = std::uint32_t{1} << 31;
    static constexpr std::uint32_t ends_instant = std::uint32_t{1} << 30;
    static constexpr std::uint32_t index_mask = ends_instant - 1;

    /// KV held per request as a multiple of one unit (the greatest common divisor of the sizes):
    /// tables equal up to a factor have equal units, and share their walks.
    struct Units {
        std::vector<std::uint64_t> units;
        Bytes unit{};  ///< zero when every size is
    };
    [[nodiscard]] static Units units_of(std::span<const Bytes> held) {
        std::uint64_t g = 0;
        for (const Bytes b : held) g = std::gcd(g, b.count());
        Units u;
        u.unit = Bytes::exactly(g);
        u.units.reserve(held.size());
        for (const Bytes b : held) u.units.push_back(g == 0 ? 0 : b.count() / g);
        return u;
    }

    /// KV in flight over the replay, in units.
    struct Kv {
        std::uint64_t peak = 0;
        double peak_at = 0;  ///< since the first arrival
        std::optional<std::uint64_t> p95;
    };

    /// What a request holds by its total length, from a table per length.
    [[nodiscard]] ByLength by_length(std::span<const std::uint64_t> units) const {
        return {this, units};
    }

    /// The walks of a table per length: walked the first time it is asked for, again only for a
    /// p95 first asked for later.
    std::pair<std::vector<std::uint64_t>, Kv>& remembered(Units&& u, bool with_p95) {
        for (auto& entry : remembered_) {
            if (entry.first != u.units) continue;
            if (with_p95 && !entry.second.p95)
                entry.second.p95 = p95_of(by_length(entry.first), entry.second.peak);
            return entry;
        }
        const auto of = by_length(u.units);
        check_total(of);
        const Kv kv = with_p95 ? kv_of(of) : peak_of(of);
        return remembered_.emplace_back(std::move(u.units), kv);
    }

    /// The walks add and remove sizes in wrapping arithmetic (an instant's completions may be
    /// removed before its arrivals are added); the KV after each instant is exact when the sum
    /// over every request fits, which this checks.
    template <class HeldOf>
    void check_total(HeldOf&& held_of) const {
        std::uint64_t total = 0;
        for (std::uint32_t i = 0; i < t_->requests.size(); ++i)
            total = detail::add(total, held_of(i, t_->requests[i]), "a sum of sizes");
    }

    void sort_events(bool arrivals_in_order) {
        const std::vector<TraceRequest>& rq = t_->requests;
        const std::size_t n = rq.size();
        std::vector<std::uint64_t> key(n);
        std::vector<std::uint32_t> idx(n);
        std::vector<std::uint32_t> arrival_order;
        if (!arrivals_in_order) {
            for (std::size_t i = 0; i < n; ++i) {
                key[i] = detail::ordered_bits(rq[i].arrival.in(seconds));
                idx[i] = static_cast<std::uint32_t>(i);
            }
            detail::sort_times(key, idx);
            arrival_order = idx;
        }
        for (std::size_t i = 0; i < n; ++i) {
            key[i] = detail::ordered_bits(rq[i].arrival.in(seconds) +
                                          times_.time_in_system(rq[i].output_tokens).in(seconds));
            idx[i] = static_cast<std::uint32_t>(i);
        }
        detail::sort_times(key, idx);
        // Merged, completions first at one instant (intervals are half-open), without a branch
        // on which comes next; an event ends its instant when the next one is later.
        events_.resize(2 * n);
        constexpr double never = std::numeric_limits<double>::infinity();
        const auto arrival_at = [&](std::size_t k) {
            return k < n ? rq[arrival_order.empty() ? k : arrival_order[k]].arrival.in(seconds)
                         : never;
        };
        std::size_t ia = 0, ic = 0;
        double ta = arrival_at(0), tc = detail::from_ordered_bits(key[0]), prev = 0;
        for (std::size_t k = 0; k < 2 * n; ++k) {
            // Counted, not compared with a sentinel: a time may itself be infinite.
            const bool completes = (ia == n) | ((ic < n) & (tc <= ta));
            const double now = completes ? tc : ta;
            // Both candidates read in bounds, so the choice can be a select, not a jump.
            const std::uint32_t arriving = static_cast<std::uint32_t>(
                arrival_order.empty() ? ia : arrival_order[std::min(ia, n - 1)]);
            const std::uint32_t completing = idx[std::min(ic, n - 1)];
            events_[k] = completes ? completing : arriving | arrives;
            if (k > 0 && now != prev) events_[k - 1] |= ends_instant;
            prev = now;
            ic += completes ? 1 : 0;
            ia += completes ? 0 : 1;
            tc = ic < n ? detail::from_ordered_bits(key[ic]) : never;
            ta = arrival_at(ia);
        }
        events_.back() |= ends_instant;
        completion_time_ = std::move(key);
    }

    /// Walks the events in time order: each instant's completions leave and its arrivals join,
    /// then on_instant(now, in flight, KV in flight) is called with the state after the instant
    /// (intervals are half-open). held_of(i, request) is what request i holds.
    template <class HeldOf, class OnInstant>
    void walk(HeldOf&& held_of, OnInstant&& on_instant) const {
        const TraceRequest* rq = t_->requests.data();
        std::uint64_t in_flight = 0, kv = 0;
        std::size_t completed = 0;
        for (const std::uint32_t e : events_) {
            const std::uint32_t i = e & index_mask;
            const TraceRequest& q = rq[i];
            // +x for an arrival, -x for a completion, without a branch on which.
            const std::uint64_t leave = (e & arrives) != 0 ? 0 : ~std::uint64_t{0};
            kv += (held_of(i, q) ^ leave) - leave;
            in_flight += (std::uint64_t{1} ^ leave) - leave;
            completed += static_cast<std::size_t>(leave & 1);
            if ((e & ends_instant) != 0) {
                const double now = leave == 0
                                       ? q.arrival.in(seconds)
                                       : detail::from_ordered_bits(completion_time_[completed - 1]);
                on_instant(now, in_flight, kv);
            }
        }
    }

    /// The request figures: peak, and the time-weighted mean and p95 from the time spent at each
    /// count in flight (at most the requests, so counted directly), in one walk.
    void walk_requests() {
        TraceConcurrency& c = requests_;
        std::vector<double> time_at;  // time_at[k]: time with k requests in flight
        double weighted = 0, total = 0, prev = 0;
        std::uint64_t prev_n = 0;
        bool started = false;
        walk([](std::uint32_t, const TraceRequest&) { return std::uint64_t{0}; },
             [&](double now, std::uint64_t in_flight, std::uint64_t) {
                 if (started) {
                     const double dt = now - prev;
                     weighted += static_cast<double>(prev_n) * dt;
                     total += dt;
                     time_at[static_cast<std::size_t>(prev_n)] += dt;
                 }
                 started = true;
                 prev = now;
                 prev_n = in_flight;
                 c.peak_requests = std::max(c.peak_requests, in_flight);
                 if (in_flight >= time_at.size()) time_at.resize(2 * in_flight + 1, 0.0);
             });
        total_time_ = total;
        const double horizon = prev - first_;
        c.mean_requests = horizon > 0 ? weighted / horizon : 0;
        c.p95_requests = dense_percentile(time_at, c.peak_requests);
    }

    template <class HeldOf>
    [[nodiscard]] Kv peak_of(HeldOf&& held_of) const {
        Kv kv;
        walk(held_of, [&](double now, std::uint64_t, std::uint64_t v) {
            if (v > kv.peak) {
                kv.peak = v;
                kv.peak_at = now - first_;
            }
        });
        return kv;
    }

    /// The peak and the p95 in one walk, counting the time spent at each value while the values
    /// stay below dense_values (a few MiB of counts); past that, the p95 takes walks of its own.
    template <class HeldOf>
    [[nodiscard]] Kv kv_of(HeldOf&& held_of) const {
        Kv kv;
        std::vector<double> time_at;
        bool dense = true;
        double prev = 0;
        std::uint64_t prev_v = 0;
        bool started = false;
        walk(held_of, [&](double now, std::uint64_t, std::uint64_t v) {
            if (started && dense) time_at[static_cast<std::size_t>(prev_v)] += now - prev;
            started = true;
            prev = now;
            prev_v = v;
            if (v > kv.peak) {
                kv.peak = v;
                kv.peak_at = now - first_;
            }
            if (dense && v >= time_at.size()) {
                if (v >= dense_values) {
                    dense = false;
                    time_at = {};
                } else {
                    time_at.resize(static_cast<std::size_t>(std::min(2 * v + 1, dense_values)));
                }
            }
        });
        kv.p95 = dense ? dense_percentile(time_at, kv.peak) : p95_of(held_of, kv.peak);
        return kv;
    }

    /// The time-weighted p95 of time spent per value (values 0 to peak).
    [[nodiscard]] std::uint64_t dense_percentile(const std::vector<double>& time_at,
                                                 std::uint64_t peak) const {
        return detail::time_weighted_percentile(
            [&](auto&& fn) {
                for (std::size_t k = 0; k < time_at.size(); ++k)
                    if (time_at[k] > 0) fn(static_cast<std::uint64_t>(k), time_at[k]);
            },
            peak, total_time_, 95);
    }

    template <class HeldOf>
    [[nodiscard]] std::uint64_t p95_of(HeldOf&& held_of, std::uint64_t peak) const {
        return detail::time_weighted_percentile(
            [&](auto&& fn) {
                double prev = 0;
                std::uint64_t prev_kv = 0;
                bool started = false;
                walk(held_of, [&](double now, std::uint64_t, std::uint64_t v) {
                    if (started) fn(prev_kv, now - prev);
                    started = true;
                    prev = now;
                    prev_kv = v;
                });
            },
            peak, total_time_, 95);
    }

    [[nodiscard]] TraceConcurrency figures(const Kv& kv, Bytes unit) const {
        TraceConcurrency c = requests_;
        c.peak_kv = unit * kv.peak;
        c.peak_at = kv.peak_at * seconds;
        c.p95_kv = unit * kv.p95.value_or(0);
        return c;
    }

    const Trace* t_;
    ServiceTimes times_;
    bool has_replay_ = false;
    double first_ = 0;             ///< the first arrival
    double total_time_ = 0;        ///< first arrival to last completion, summed segment by segment
    TraceConcurrency requests_{};  ///< the figures that do not depend on what requests hold
    std::vector<std::uint64_t> lengths_;
    std::vector<std::uint32_t> dense_index_;      ///< lengths_ index by length, below dense_lengths
    std::vector<std::uint32_t> events_;           ///< 2 per request, in time order
    std::vector<std::uint64_t> completion_time_;  ///< ordered_bits of each completion, ascending
    std::vector<std::pair<std::vector<std::uint64_t>, Kv>> remembered_;  ///< units -> walks
};

/// Little's law and a replay of the trace's arrivals at `times`, with `held[i]` the KV request i
/// holds (from kv_per_request, paged or not). nullopt when the trace has no arrival times, fewer
/// than two requests, or all arrive at one instant (no rate). Precondition: held.size() ==
/// requests.
[[nodiscard]] inline std::optional<TraceConcurrency> trace_concurrency(
    const Trace& t, ServiceTimes times, std::span<const Bytes> held) {
    KVPLAN_EXPECTS(held.size() == t.requests.size());
    return TraceReplay(t, times).concurrency(held);
}

/// What requests of each of the replay's lengths hold on one rank (`shard`) in blocks of
/// `block_size` tokens: kv_held per length.
[[nodiscard]] inline std::vector<Bytes> kv_per_length(const TraceReplay& replay, const Model& m,
                                                      KvFormat f, std::uint32_t block_size,
                                                      const Shard& shard = {}) {
    std::vector<Bytes> out;
    out.reserve(replay.lengths().size());
    for (const std::uint64_t n : replay.lengths())
        out.push_back(kv_held(m, f, n, block_size, shard));
    return out;
}

// ---- The replica that holds a trace
// --------------------------------------------------------------

/// How a trace's replay sits on one replica: per pipeline stage, the peak of the KV in use on its
/// GPUs against their KV budget; the stage nearest its budget is reported.
struct TraceReplica {
    ParallelConfig parallel{};
    std::uint32_t limiting_stage = 0;
    Bytes kv_budget{};  ///< per GPU of the limiting stage
    Bytes peak_kv{};    ///< the replay's peak there
    Bytes p95_kv{};     ///< time-weighted p95 there
    std::uint64_t peak_requests = 0;
    bool holds_peak = false;  ///< every stage's peak fits its budget
    bool holds_p95 = false;
    /// Replicas of this shape the peak needs with arrivals split evenly: ceil(peak / budget), the
    /// most over stages (at least 1); 0 when a stage has no KV budget at all.
    std::uint64_t replicas_for_peak = 0;
    std::uint32_t gpus = 0;  ///< GPUs of the replica (Replica::gpus), so no front end multiplies
};

/// The replay on replica `r` (its layout as given), each request held in blocks of `block_size`
/// tokens on each stage's GPUs; `kv_budget(r, layout, stage)` gives a stage's KV budget per GPU
/// (budget.hpp's stage_budget, or an engine's). nullopt when the trace has no replay. Throws
/// InvalidLayout for a layout the model cannot take.
template <class KvBudget>
[[nodiscard]] std::optional<TraceReplica> trace_on_replica(TraceReplay& replay, const Replica& r,
                                                           std::uint32_t block_size,
                                                           KvBudget kv_budget) {
    const Layout l = r.layout();
    if (!replay.has_replay()) return std::nullopt;
    std::optional<TraceReplica> out;
    double worst = -1;
    bool all_peak = true, all_p95 = true;
    std::uint64_t most_replicas = 1;
    bool any_zero = false;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const auto c = replay.concurrency_by_length(
            kv_per_length(replay, r.model, r.kv, block_size, l.stage(st)));
        const Bytes budget = kv_budget(r, l, st);
        const bool peak_ok = c->peak_kv <= budget, p95_ok = c->p95_kv <= budget;
        all_peak = all_peak && peak_ok;
        all_p95 = all_p95 && p95_ok;
        if (budget.is_zero())
            any_zero = true;
        else
            most_replicas =
                std::max(most_replicas, detail::ceil_div(c->peak_kv.count(), budget.count()));
        const double ratio = budget.is_zero() ? 1e300 : c->peak_kv.in(B) / budget.in(B);
        if (ratio > worst) {
            worst = ratio;
            out = TraceReplica{r.parallel,       st,    budget, c->peak_kv, c->p95_kv,
                               c->peak_requests, false, false,  0};
        }
    }
    out->holds_peak = all_peak;
    out->holds_p95 = all_p95;
    out->replicas_for_peak = any_zero ? 0 : most_replicas;
    out->gpus = r.gpus();
    return out;
}

/// As above, replaying `t` at `times`.
template <class KvBudget>
[[nodiscard]] std::optional<TraceReplica> trace_on_replica(const Trace& t, const Replica& r,
                                                           ServiceTimes times,
                                                           std::uint32_t block_size,
                                                           KvBudget kv_budget) {
    TraceReplay replay(t, times);
    return trace_on_replica(replay, r, block_size, kv_budget);
}

/// The replica with the fewest GPUs whose KV budget holds the replay's peak on every stage, over
/// tp x pp with tp a power of two up to s.max_tp, the larger tp first (as smallest_replica in
/// budget.hpp); the parallel config of `base` is ignored. nullopt when the trace has no replay or
/// nothing within s.max_gpus holds it. Candidates are judged by their peaks alone, each distinct
/// table of KV per length (up to a factor) walked once; the one chosen is then replayed in full.
template <class KvBudget>
[[nodiscard]] std::optional<TraceReplica> smallest_replica_for_trace(TraceReplay& replay,
                                                                     const Replica& base,
                                                                     std::uint32_t block_size,
                                                                     KvBudget kv_budget,
                                                                     const ReplicaSearch& s = {}) {
    if (!replay.has_replay()) return std::nullopt;
    for (std::uint32_t n = 1; n <= s.max_gpus; ++n) {
        std::uint32_t tp = 1;
        while (tp * 2 <= std::min(n, s.max_tp)) tp *= 2;
        for (; tp >= 1; tp /= 2) {
            if (n % tp != 0) continue;
            const std::uint32_t pp = n / tp;
            if (pp > base.model.num_layers() || pp > max_pipeline_stages) continue;
            Replica r = base;
            r.parallel = {.tp = tp, .pp = pp, .stage_layers = {}};
            try {
                const Layout l = r.layout();
                bool holds = true;
                for (std::uint32_t st = 0; st < l.pp(); ++st) {
                    const Bytes peak = replay.peak_kv_by_length(
                        kv_per_length(replay, r.model, r.kv, block_size, l.stage(st)));
                    holds = peak <= kv_budget(r, l, st) && holds;
                }
                if (holds) return trace_on_replica(replay, r, block_size, kv_budget);
            } catch (const InvalidLayout&) {
                // tp does not divide the heads: not a layout this model can take.
            }
        }
    }
    return std::nullopt;
}

/// As above, replaying `t` at `times`. nullopt when the trace has no arrival times.
template <class KvBudget>
[[nodiscard]] std::optional<TraceReplica> smallest_replica_for_trace(
    const Trace& t, const Replica& base, ServiceTimes times, std::uint32_t block_size,
    KvBudget kv_budget, const ReplicaSearch& s = {}) {
    if (!t.has_arrivals) return std::nullopt;
    TraceReplay replay(t, times);
    return smallest_replica_for_trace(replay, base, block_size, kv_budget, s);
}

}  // namespace kvplan
