#pragma once

// The straightforward computations the trace headers' fast ones must agree with, figure for figure:
// every value listed and sorted, every replay event sorted by time, every candidate replica
// replayed in full. And random traces to compare them on.

#include <algorithm>
#include <cstdint>
#include <kvplan/trace.hpp>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "random.hpp"

namespace kvplan::test {

/// Time-weighted nearest-rank percentile by sorting (value, duration) segments.
template <class T>
[[nodiscard]] T reference_time_weighted(std::vector<std::pair<T, double>> segs, double p) {
    std::sort(segs.begin(), segs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    double total = 0;
    for (const auto& sg : segs) total += sg.second;
    const double need = p / 100.0 * total;
    double acc = 0;
    for (const auto& sg : segs) {
        acc += sg.second;
        if (acc >= need * (1 - 1e-12)) return sg.first;
    }
    return segs.back().first;
}

/// Little's law and the replay with every event sorted by time (completions first at one instant),
/// the state read after each instant.
[[nodiscard]] inline std::optional<TraceConcurrency> reference_concurrency(
    const Trace& t, ServiceTimes times, std::span<const Bytes> held) {
    const std::size_t n = t.requests.size();
    if (!t.has_arrivals || n < 2) return std::nullopt;
    double first = t.requests[0].arrival.in(seconds), last = first, out_sum = 0;
    for (const TraceRequest& q : t.requests) {
        first = std::min(first, q.arrival.in(seconds));
        last = std::max(last, q.arrival.in(seconds));
        out_sum += static_cast<double>(q.output_tokens);
    }
    if (!(last > first)) return std::nullopt;
    TraceConcurrency c;
    c.arrival_span = (last - first) * seconds;
    c.rate_per_s = static_cast<double>(n - 1) / c.arrival_span.in(seconds);
    c.mean_time_in_system = times.ttft + times.tpot * (out_sum / static_cast<double>(n));
    c.littles_law = c.rate_per_s * c.mean_time_in_system.in(seconds);
    struct Event {
        double at;
        bool arrive;
        std::size_t i;
    };
    std::vector<Event> ev;
    for (std::size_t i = 0; i < n; ++i) {
        const double a = t.requests[i].arrival.in(seconds);
        ev.push_back({a, true, i});
        ev.push_back({a + times.time_in_system(t.requests[i].output_tokens).in(seconds), false, i});
    }
    std::sort(ev.begin(), ev.end(), [](const Event& x, const Event& y) {
        return x.at != y.at ? x.at < y.at : (!x.arrive && y.arrive);
    });
    // Signed sums: a request that stays no time leaves (first) before it arrives at one instant.
    std::int64_t in_flight = 0, kv = 0;
    std::vector<std::pair<std::uint64_t, double>> req_segs, kv_segs;
    double weighted = 0;
    std::uint64_t peak_kv = 0;
    for (std::size_t k = 0; k < ev.size();) {
        const double now = ev[k].at;
        for (; k < ev.size() && ev[k].at == now; ++k) {
            const auto h = static_cast<std::int64_t>(held[ev[k].i].count());
            in_flight += ev[k].arrive ? 1 : -1;
            kv += ev[k].arrive ? h : -h;
        }
        const auto r = static_cast<std::uint64_t>(in_flight);
        const auto b = static_cast<std::uint64_t>(kv);
        c.peak_requests = std::max(c.peak_requests, r);
        if (b > peak_kv) {
            peak_kv = b;
            c.peak_at = (now - first) * seconds;
        }
        if (k < ev.size()) {
            const double dt = ev[k].at - now;
            req_segs.emplace_back(r, dt);
            kv_segs.emplace_back(b, dt);
            weighted += static_cast<double>(r) * dt;
        }
    }
    const double horizon = ev.back().at - ev.front().at;
    c.mean_requests = horizon > 0 ? weighted / horizon : 0;
    c.p95_requests = reference_time_weighted(std::move(req_segs), 95);
    c.p95_kv = Bytes::exactly(reference_time_weighted(std::move(kv_segs), 95));
    c.peak_kv = Bytes::exactly(peak_kv);
    return c;
}

/// The replica search replaying every stage of every candidate in full.
template <class KvBudget>
[[nodiscard]] std::optional<TraceReplica> reference_smallest_replica(
    const Trace& t, const Replica& base, ServiceTimes times, std::uint32_t block_size,
    KvBudget kv_budget, const ReplicaSearch& rs = {}) {
    if (!t.has_arrivals) return std::nullopt;
    for (std::uint32_t n = 1; n <= rs.max_gpus; ++n) {
        std::uint32_t tp = 1;
        while (tp * 2 <= std::min(n, rs.max_tp)) tp *= 2;
        for (; tp >= 1; tp /= 2) {
            if (n % tp != 0) continue;
            const std::uint32_t pp = n / tp;
            if (pp > base.model.num_layers() || pp > max_pipeline_stages) continue;
            Replica r = base;
            r.parallel = {.tp = tp, .pp = pp, .stage_layers = {}};
            try {
                const Layout l = r.layout();
                std::optional<TraceReplica> out;
                double worst = -1;
                bool all_peak = true, all_p95 = true, any_zero = false;
                std::uint64_t most = 1;
                for (std::uint32_t st = 0; st < l.pp(); ++st) {
                    const auto held = kv_per_request(t, r.model, r.kv, block_size, l.stage(st));
                    const auto c = reference_concurrency(t, times, held);
                    if (!c) return std::nullopt;
                    const Bytes budget = kv_budget(r, l, st);
                    all_peak = all_peak && c->peak_kv <= budget;
                    all_p95 = all_p95 && c->p95_kv <= budget;
                    if (budget.is_zero())
                        any_zero = true;
                    else
                        most = std::max(most,
                                        (c->peak_kv.count() + budget.count() - 1) / budget.count());
                    const double ratio = budget.is_zero() ? 1e300 : c->peak_kv.in(B) / budget.in(B);
                    if (ratio > worst) {
                        worst = ratio;
                        out = TraceReplica{r.parallel,       st,    budget, c->peak_kv, c->p95_kv,
                                           c->peak_requests, false, false,  0};
                    }
                }
                out->holds_peak = all_peak;
                out->holds_p95 = all_p95;
                out->replicas_for_peak = any_zero ? 0 : most;
                if (all_peak) return out;
            } catch (const InvalidLayout&) {
            }
        }
    }
    return std::nullopt;
}

/// A random trace of 2 to `max_n` requests. Arrival times are whole seconds (many at one instant),
/// multiples of 1/8 s (exact sums), or arbitrary doubles, in file order or shuffled; some requests
/// generate no tokens, so that with zero TTFT they stay no time at all.
[[nodiscard]] inline Trace random_trace(Rng& rng, std::size_t max_n = 300) {
    const std::size_t n = rng.between<std::size_t>(2, max_n);
    const int k = rng.between(0, 2);
    const auto prompt = [&rng] { return rng.between<std::uint64_t>(1, 3000); };
    const auto output = [&rng] { return rng.between<std::uint64_t>(0, 400); };
    const auto tick = [&rng] { return rng.between<std::uint64_t>(0, 40); };
    Trace t;
    t.source = "random";
    t.has_arrivals = true;
    double at = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (k == 0)
            at += static_cast<double>(tick() / 8);  // whole seconds, often repeated
        else if (k == 1)
            at += static_cast<double>(tick()) / 8;
        else
            at += rng.real(0.0, 2.0);
        const std::uint64_t p = prompt();
        const std::uint64_t o = output() % 5 == 0 ? 0 : output();
        t.requests.push_back({p, o, at * seconds});
    }
    if (rng.between(0, 1) == 1) shuffle(t.requests.begin(), t.requests.end(), rng);
    return t;
}

/// Service times to replay random traces at: binary fractions (so completions land on arrival
/// instants) or arbitrary ones, TTFT sometimes zero.
[[nodiscard]] inline ServiceTimes random_times(Rng& rng) {
    switch (rng.between(0, 2)) {
        case 0:
            return {0.5 * seconds, 0.125 * seconds};
        case 1:
            return {0.0 * seconds, 0.25 * seconds};
        default: {
            const double ttft = rng.real(0.0, 1.0);
            return {ttft * seconds, rng.real(0.0, 1.0) * 0.1 * seconds};
        }
    }
}

}  // namespace kvplan::test
