// trace/replay.hpp: the replay sorted once and walked per figure must give exactly what replaying
// every event sorted by comparison gives (tests/support/trace_reference.hpp), on random traces.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <kvplan/presets.hpp>
#include <kvplan/trace/replay.hpp>
#include <limits>
#include <vector>

#include "support/random.hpp"
#include "support/rounds.hpp"
#include "support/trace_reference.hpp"

using namespace kvplan;

namespace {

void check_same(const TraceConcurrency& got, const TraceConcurrency& want) {
    CHECK(got.arrival_span == want.arrival_span);
    CHECK(got.rate_per_s == want.rate_per_s);
    CHECK(got.mean_time_in_system == want.mean_time_in_system);
    CHECK(got.littles_law == want.littles_law);
    CHECK(got.peak_requests == want.peak_requests);
    CHECK(got.p95_requests == want.p95_requests);
    CHECK(got.mean_requests == want.mean_requests);
    CHECK(got.peak_kv == want.peak_kv);
    CHECK(got.p95_kv == want.p95_kv);
    CHECK(got.peak_at == want.peak_at);
}

}  // namespace

TEST_CASE("the sorted-once replay gives exactly the figures of a replay sorted by comparison",
          "[trace][replay][property]") {
    // 400 random traces (whole-second, eighth-second and arbitrary arrivals; shuffled or not),
    // each request holding a random size: every figure equal, to the last bit. (An eighth of them
    // under the sanitizers: support/rounds.hpp.)
    KVPLAN_TEST_RNG(rng, 20231116);
    const auto size = [&rng] { return rng.between<std::uint64_t>(0, 1u << 20); };
    for (int round = 0; round < test::rounds(400); ++round) {
        const Trace t = test::random_trace(rng);
        const ServiceTimes times = test::random_times(rng);
        std::vector<Bytes> held;
        for (std::size_t i = 0; i < t.requests.size(); ++i)
            held.push_back(Bytes::exactly(size() * 4096));
        const auto want = test::reference_concurrency(t, times, held);
        const auto got = trace_concurrency(t, times, held);
        INFO("round " << round << ", " << t.requests.size() << " requests");
        REQUIRE(got.has_value() == want.has_value());
        if (got) check_same(*got, *want);
    }
}

TEST_CASE("a table of KV per length gives the figures of KV per request",
          "[trace][replay][property]") {
    // KV depends on a request's total length alone: held per length, looked up, equals held per
    // request, for a model whose layers differ (Gemma 3: sliding and global) and one whose do not.
    KVPLAN_TEST_RNG(rng, 7);
    for (int round = 0; round < 100; ++round) {
        const Trace t = test::random_trace(rng);
        const ServiceTimes times = test::random_times(rng);
        const Model& m = round % 2 == 0 ? presets::gemma_3_27b : presets::llama_3_8b;
        const std::uint32_t block = round % 3 == 0 ? 1 : 16;
        TraceReplay replay(t, times);
        const auto per_request = kv_per_request(t, m, KvDtype::bf16, block);
        const auto want = test::reference_concurrency(t, times, per_request);
        const auto got =
            replay.concurrency_by_length(kv_per_length(replay, m, KvDtype::bf16, block));
        INFO("round " << round);
        REQUIRE(got.has_value() == want.has_value());
        if (!got) continue;
        check_same(*got, *want);
        // Asked again (remembered), and the peak alone: the same.
        check_same(*replay.concurrency_by_length(kv_per_length(replay, m, KvDtype::bf16, block)),
                   *want);
        CHECK(replay.peak_kv_by_length(kv_per_length(replay, m, KvDtype::bf16, block)) ==
              want->peak_kv);
    }
}

TEST_CASE("tables equal up to a factor share one walk and scale its figures", "[trace][replay]") {
    // The replay of the hand-made trace in test_trace.cpp: blocks in use [0,1) 1, [1,2) 3, [2,3)
    // 3, [3,3.5) 4, [3.5,4) 3, [4,5) 0, [5,15) 5: peak 5 blocks, p95 5 blocks. At 2 MiB a block and
    // at 6 MiB (three times) the figures scale by the block's size.
    const Trace t = parse_trace_csv(
        "arrival_time,prompt_tokens,output_tokens\n0,1,12\n1,1,20\n2,1,12\n3,1,0\n5,1,76\n", "r");
    TraceReplay replay(t, {0.5 * seconds, 0.125 * seconds});
    // Lengths 1, 13, 21, 77 hold 1, 1, 2, 5 blocks.
    REQUIRE(replay.lengths().size() == 4);
    CHECK(replay.lengths()[0] == 1);
    CHECK(replay.lengths()[3] == 77);
    const std::vector<Bytes> two{2 * MiB, 2 * MiB, 4 * MiB, 10 * MiB};
    const std::vector<Bytes> six{6 * MiB, 6 * MiB, 12 * MiB, 30 * MiB};
    const auto a = replay.concurrency_by_length(two);
    const auto b = replay.concurrency_by_length(six);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->peak_kv == 10 * MiB);
    CHECK(a->p95_kv == 10 * MiB);
    CHECK(b->peak_kv == 30 * MiB);
    CHECK(b->p95_kv == 30 * MiB);
    CHECK(a->peak_at == b->peak_at);
    CHECK(a->peak_at.in(seconds) == 5.0);  // D arrives at 5 s with 5 blocks alone
    CHECK(a->peak_requests == 3);
}

TEST_CASE("the replica search judging peaks alone finds what replaying every candidate finds",
          "[trace][replay][replica][property]") {
    // Budgets from 1 GiB to 64 GiB per GPU: the search stops at 1 to dozens of GPUs. Gemma 3's
    // stages differ in their sliding / global mix, so several tables of KV per length are walked.
    KVPLAN_TEST_RNG(rng, 11);
    for (int round = 0; round < 60; ++round) {
        const Trace t = test::random_trace(rng, 120);
        const ServiceTimes times = test::random_times(rng);
        const Model& m = round % 2 == 0 ? presets::gemma_3_27b : presets::llama_3_8b;
        const Replica base{
            .model = m, .gpu = {}, .parallel = {}, .weights = {}, .kv = KvDtype::bf16};
        const Bytes each = rng.between<std::uint64_t>(1, 64) * GiB / 16;
        const auto budget = [&](const Replica& r, const Layout&, std::uint32_t st) {
            // Per GPU: more with more tensor parallelism, less on later stages.
            return each * r.parallel.tp / (st + 1);
        };
        const auto want = test::reference_smallest_replica(t, base, times, 16, budget);
        const auto got = smallest_replica_for_trace(t, base, times, 16, budget);
        INFO("round " << round << ", " << t.requests.size() << " requests");
        REQUIRE(got.has_value() == want.has_value());
        if (!got) continue;
        CHECK(got->parallel.tp == want->parallel.tp);
        CHECK(got->parallel.pp == want->parallel.pp);
        CHECK(got->limiting_stage == want->limiting_stage);
        CHECK(got->kv_budget == want->kv_budget);
        CHECK(got->peak_kv == want->peak_kv);
        CHECK(got->p95_kv == want->p95_kv);
        CHECK(got->peak_requests == want->peak_requests);
        CHECK(got->holds_peak == want->holds_peak);
        CHECK(got->holds_p95 == want->holds_p95);
        CHECK(got->replicas_for_peak == want->replicas_for_peak);
    }
}

TEST_CASE("a time-weighted percentile splits ranges of values until one value is left",
          "[trace][replay][property]") {
    // Values up to 2^62 need four splits of 2^16 ranges; the answer is the sorted segments'.
    KVPLAN_TEST_RNG(rng, 3);
    for (int round = 0; round < 200; ++round) {
        const int bits = rng.between(1, 62);
        const auto value = [&] {
            return rng.between<std::uint64_t>(0, (std::uint64_t{1} << bits) - 1);
        };
        std::vector<std::pair<std::uint64_t, double>> segs(rng.between<std::size_t>(1, 500));
        std::uint64_t max = 0;
        double total = 0;
        for (auto& [v, d] : segs) {
            v = value();
            d = round % 2 == 0 ? rng.real(0.001, 5.0)
                               : static_cast<double>(1 + v % 7) / 4;  // exact sums
            max = std::max(max, v);
            total += d;
        }
        const double p = round % 3 == 0 ? 95.0 : rng.real(0, 100);
        int walks = 0;
        const std::uint64_t got = detail::time_weighted_percentile(
            [&](auto&& fn) {
                ++walks;
                for (const auto& [v, d] : segs) fn(v, d);
            },
            max, total, p);
        INFO("round " << round << ", p " << p << ", values below 2^" << bits);
        CHECK(got == test::reference_time_weighted(segs, p));
        CHECK(walks <= 4);
    }
}

TEST_CASE("both sorts of times order doubles as a stable comparison sort does",
          "[trace][replay][property]") {
    // Times spread evenly, in clusters (crowded ranges: by insertion, by comparison, by radix),
    // all at one instant, and with negative, zero and negative zero (one instant), subnormal, huge
    // and infinite ones.
    KVPLAN_TEST_RNG(rng, 5);
    const auto u = [&rng] { return rng.real(-1e6, 1e6); };
    const std::vector<double> specials{
        0.0, -0.0, 1e-310, -1e-310, 1e300, -1e300, std::numeric_limits<double>::infinity(),
        2.5, 2.5};
    for (int round = 0; round < 40; ++round) {
        std::vector<double> x;
        const int n = rng.between(2, 20000);
        for (int i = 0; i < n; ++i) {
            switch (round % 5) {
                case 0:
                    x.push_back(u());
                    break;
                case 1:
                    x.push_back(std::floor(u() / 1e4));
                    break;  // 200 values, repeated
                case 2:
                    x.push_back(i % 100 == 0 ? 1e6 : u() / 1e6);
                    break;  // a far outlier
                case 3:
                    x.push_back(7.0);
                    break;
                default:
                    x.push_back(i < 9 ? specials[static_cast<std::size_t>(i)] : u());
            }
        }
        std::vector<std::uint32_t> want(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) want[i] = static_cast<std::uint32_t>(i);
        std::stable_sort(want.begin(), want.end(),
                         [&](std::uint32_t a, std::uint32_t b) { return x[a] < x[b]; });
        for (int which = 0; which < 2; ++which) {
            std::vector<std::uint64_t> key;
            std::vector<std::uint32_t> idx;
            for (std::size_t i = 0; i < x.size(); ++i) {
                key.push_back(detail::ordered_bits(x[i]));
                idx.push_back(static_cast<std::uint32_t>(i));
            }
            if (which == 0)
                detail::radix_sort_by_key(key, idx);
            else
                detail::sort_times(key, idx);
            INFO("round " << round << (which == 0 ? ", radix" : ", by ranges"));
            CHECK(idx == want);
            bool keys_follow = true;
            for (std::size_t i = 0; i < x.size(); ++i)
                keys_follow = keys_follow && detail::from_ordered_bits(key[i]) == x[idx[i]] + 0.0;
            CHECK(keys_follow);
        }
    }
}

TEST_CASE("a replay needs arrivals at more than one instant", "[trace][replay]") {
    const Trace same = parse_trace_csv("arrival,prompt_tokens,output_tokens\n4,1,1\n4,2,2\n", "s");
    TraceReplay replay(same, {0.5 * seconds, 0.05 * seconds});
    CHECK_FALSE(replay.has_replay());
    CHECK_FALSE(replay.concurrency_by_length(std::vector<Bytes>(2, 1 * MiB)).has_value());
    CHECK(replay.peak_kv_by_length(std::vector<Bytes>(2, 1 * MiB)) == Bytes{});
    const Replica base{.model = presets::llama_3_8b,
                       .gpu = {},
                       .parallel = {},
                       .weights = {},
                       .kv = KvDtype::bf16};
    const auto any = [](const Replica&, const Layout&, std::uint32_t) { return 1 * GiB; };
    CHECK_FALSE(smallest_replica_for_trace(replay, base, 16, any).has_value());
    CHECK_FALSE(trace_on_replica(replay, base, 16, any).has_value());
}

TEST_CASE("a replay whose sizes sum past 2^64 bytes is an overflow error, not a wrap",
          "[trace][replay][errors]") {
    // Two requests at once, each holding 2^63 bytes: 2^64 in flight.
    const Trace t = parse_trace_csv("arrival,prompt_tokens,output_tokens\n0,1,9\n1,1,9\n", "o");
    const std::vector<Bytes> held(2, Bytes::exactly(std::uint64_t{1} << 63));
    CHECK_THROWS_AS(trace_concurrency(t, {1.0 * seconds, 1.0 * seconds}, held), OverflowError);
}

TEST_CASE("a stay too long for a double ends at infinity, after every arrival", "[trace][replay]") {
    // TPOT 1e300 s: a request generating 1e9 tokens stays 1e309 s, infinite in a double. It is
    // in flight from its arrival to the end; the others come and go around it.
    const Trace t = parse_trace_csv(
        "arrival,prompt_tokens,output_tokens\n0,1,1000000000\n1,1,0\n2,1,0\n", "inf.csv");
    const std::vector<Bytes> held{1 * GiB, 2 * GiB, 4 * GiB};
    const ServiceTimes times{0.5 * seconds, 1e300 * seconds};
    const auto got = trace_concurrency(t, times, held);
    const auto want = test::reference_concurrency(t, times, held);
    REQUIRE(got);
    REQUIRE(want);
    // [0, inf) 1 GiB; [1, 1.5) and [2, 2.5) add 2 and 4 GiB: peak 5 GiB at 2 s, 2 in flight.
    CHECK(got->peak_kv == 5 * GiB);
    CHECK(got->peak_requests == 2);
    CHECK(got->peak_at.in(seconds) == 2.0);
    CHECK(got->peak_kv == want->peak_kv);
    CHECK(got->peak_requests == want->peak_requests);
}
