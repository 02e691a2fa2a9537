// trace/distributions.hpp: counted per length, every figure equals the one computed from the list
// of values sorted (tests/support/trace_reference.hpp's random traces).

#include <catch2/catch.hpp>
#include <cstdint>
#include <kvplan/presets.hpp>
#include <kvplan/trace/distributions.hpp>
#include <vector>

#include "support/trace_reference.hpp"

using namespace kvplan;

TEST_CASE("a histogram merges equal values, drops empty bins and ranks by counts", "[trace]") {
    // (5, 2), (3, 1), (5, 1), (7, 0): sorted 3, 5, 5, 5.
    const Histogram<std::uint64_t> h({{5, 2}, {3, 1}, {5, 1}, {7, 0}});
    REQUIRE(h.bins().size() == 2);
    CHECK(h.count() == 4);
    CHECK(h.min() == 3);
    CHECK(h.max() == 5);
    CHECK(h.at_rank(1) == 3);
    CHECK(h.at_rank(2) == 5);
    CHECK(h.at_rank(4) == 5);
    // Nearest rank: p25 is rank ceil(1) = 1, p26 rank ceil(1.04) = 2.
    CHECK(h.percentile(25) == 3);
    CHECK(h.percentile(26) == 5);
    CHECK(h.percentile(0) == 3);
}

TEST_CASE("lengths counted per length give the percentiles and means of the sorted lengths",
          "[trace][property]") {
    // Lengths below 2^20 are counted by index, longer ones listed: both kinds in every round.
    KVPLAN_TEST_RNG(rng, 42);
    for (int round = 0; round < 200; ++round) {
        const std::size_t n = rng.between<std::size_t>(1, 2000);
        const std::uint64_t small_max = round % 4 == 0 ? 5 : 20000;
        const auto small = [&] { return rng.between<std::uint64_t>(0, small_max); };
        const auto large = [&] { return rng.between<std::uint64_t>(1u << 20, 1ull << 40); };
        std::vector<TraceRequest> rq;
        for (std::size_t i = 0; i < n; ++i)
            rq.push_back({i % 50 == 7 ? large() : small(), small(), {}});
        const LengthCounts c = length_counts(rq);
        std::vector<std::uint64_t> prompt, total;
        double sum = 0;
        for (const TraceRequest& q : rq) {
            prompt.push_back(q.prompt_tokens);
            total.push_back(q.total_tokens());
            sum += static_cast<double>(q.prompt_tokens);
        }
        std::sort(prompt.begin(), prompt.end());
        std::sort(total.begin(), total.end());
        const double p = rng.real(0, 100);
        INFO("round " << round << ", " << n << " requests, p " << p);
        CHECK(c.prompt.count() == n);
        CHECK(c.prompt.percentile(p) == nearest_rank(std::span<const std::uint64_t>(prompt), p));
        CHECK(c.total.percentile(p) == nearest_rank(std::span<const std::uint64_t>(total), p));
        CHECK(c.total.max() == total.back());
        CHECK(c.prompt.min() == prompt.front());
        // Sums below 2^53 are exact in double, in any order.
        CHECK(mean_of(c.prompt) == sum / static_cast<double>(n));
        const TraceLengths l = trace_lengths(c);
        const auto ps = percentiles_of(prompt);
        CHECK(l.prompt.p50 == ps.p50);
        CHECK(l.prompt.p95 == ps.p95);
        CHECK(l.prompt.p99 == ps.p99);
        CHECK(l.prompt.max == ps.max);
        CHECK(l.mean_prompt == sum / static_cast<double>(n));
    }
}

TEST_CASE("KV per length gives the KV distribution and waste of KV per request",
          "[trace][property]") {
    // Gemma 3 (sliding and global layers: KV not proportional to length) and Llama 3, exact bytes
    // and 16-token blocks, whole model and one rank of tp 2 x pp 2.
    KVPLAN_TEST_RNG(rng, 9);
    for (int round = 0; round < 80; ++round) {
        const Trace t = test::random_trace(rng);
        const Model& m = round % 2 == 0 ? presets::gemma_3_27b : presets::llama_3_8b;
        const std::uint32_t block = round % 3 == 0 ? 1 : 16;
        const Shard shard = round % 4 < 2 ? Shard{} : Layout(m, {2, 2, {}}).stage(1);
        const std::uint64_t max_len = 1500 + 100 * static_cast<std::uint64_t>(round);
        INFO("round " << round);

        std::vector<Bytes> exact = kv_per_request(t, m, KvDtype::bf16, 1, shard);
        std::vector<Bytes> paged = kv_per_request(t, m, KvDtype::bf16, block, shard);
        Bytes sum_exact{}, sum_paged{};
        for (const Bytes b : exact) sum_exact += b;
        for (const Bytes b : paged) sum_paged += b;
        const auto e = percentiles_of(exact);
        const auto p = percentiles_of(paged);
        const KvDistribution d = kv_distribution(t, m, KvDtype::bf16, block, shard);
        CHECK(d.exact.p50 == e.p50);
        CHECK(d.exact.p95 == e.p95);
        CHECK(d.exact.p99 == e.p99);
        CHECK(d.exact.max == e.max);
        CHECK(d.paged.p50 == p.p50);
        CHECK(d.paged.p95 == p.p95);
        CHECK(d.paged.p99 == p.p99);
        CHECK(d.paged.max == p.max);
        CHECK(d.mean_exact == sum_exact / t.requests.size());
        CHECK(d.mean_paged == sum_paged / t.requests.size());

        TraceWaste want;
        for (const TraceRequest& q : t.requests) {
            if (q.total_tokens() > max_len) {
                ++want.over_max_len;
                continue;
            }
            const PagedUse u = paged_sequence(m, KvDtype::bf16, q.total_tokens(), block, shard);
            ++want.requests;
            want.used += u.used;
            want.paged += u.reserved;
            want.contiguous += kv_bytes_per_sequence(m, KvDtype::bf16, max_len, shard);
        }
        const TraceWaste w = trace_waste(t, m, KvDtype::bf16, max_len, block, shard);
        CHECK(w.requests == want.requests);
        CHECK(w.over_max_len == want.over_max_len);
        CHECK(w.used == want.used);
        CHECK(w.paged == want.paged);
        CHECK(w.contiguous == want.contiguous);
    }
}
