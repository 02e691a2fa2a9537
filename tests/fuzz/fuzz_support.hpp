#pragma once

// What every harness shares: run one input, accept kvplan::Error as a result, and push a model
// that parsed through the sizing functions so their arithmetic is fuzzed as well as the parser.
// Anything else (another exception type, a broken invariant, a sanitizer report) ends the process
// abnormally, which libFuzzer and the replay test both count as a failure.

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <kvplan/budget.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/kvplan.hpp>
#include <kvplan/roofline.hpp>
#include <optional>
#include <string_view>

namespace kvplan::fuzz {

/// An invariant of the results, checked on every input: a wrapped integer shows up as a size that
/// shrank when it should have grown.
#define KVPLAN_FUZZ_CHECK(cond)                                                           \
    ((cond) ? static_cast<void>(0)                                                        \
            : (std::fprintf(stderr, "kvplan fuzz: invariant failed: %s (%s:%d)\n", #cond, \
                            __FILE__, __LINE__),                                          \
               std::abort()))

/// Runs `fn`; a kvplan::Error is an expected answer to bad input.
template <class Fn>
void expect_errors_only(Fn&& fn) {
    try {
        fn();
    } catch (const Error&) {
    }
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

/// Sizes `m` over a few lengths, formats, block sizes and layouts, checking what must hold.
inline void probe_model(const Model& m) {
    constexpr std::array<std::uint64_t, 6> lengths{0, 1, 17, 4096, 131072, 10'000'000};
    for (KvDtype d : {KvDtype::bf16, KvDtype::fp8_e4m3, KvDtype::int4, KvDtype::nvfp4}) {
        expect_errors_only([&] {
            Bytes prev{};
            for (std::uint64_t t : lengths) {
                const Bytes b = kv_bytes_per_sequence(m, d, t);
                KVPLAN_FUZZ_CHECK(b >= prev);
                prev = b;
                const PagedUse p = paged_sequence(m, d, t, 16);
                KVPLAN_FUZZ_CHECK(p.reserved >= p.used && p.used == b);
            }
        });
        expect_errors_only([&] {
            const Bytes budget = 70 * GiB;
            if (const auto n = tokens_that_fit(budget, m, d))
                KVPLAN_FUZZ_CHECK(kv_bytes_per_token(m, d) * *n <= budget);
            const std::uint64_t seqs = sequences_that_fit(budget, m, d, 4096, 16);
            // floor(budget / each) sequences of `each` bytes never exceed the budget.
            KVPLAN_FUZZ_CHECK(reserved_per_sequence(m, d, 4096, 16) * seqs <= budget);
            if (const auto L = max_context(budget, m, d, 8, 16); L && *L >= 1)
                KVPLAN_FUZZ_CHECK(reserved_per_sequence(m, d, *L, 16) * 8 <= budget);
        });
    }
    for (std::uint32_t tp : {1U, 2U, 8U}) {
        for (std::uint32_t pp : {1U, 4U}) {
            expect_errors_only([&] {
                const Layout l(m, {.tp = tp, .pp = pp});
                Bytes ranks{};
                for (std::uint32_t s = 0; s < l.pp(); ++s)
                    ranks += kv_bytes_per_sequence(m, KvDtype::bf16, 4096, l.stage(s)) * tp;
                KVPLAN_FUZZ_CHECK(ranks >= kv_bytes_per_sequence(m, KvDtype::bf16, 4096));
                static_cast<void>(busiest_stage(m, KvDtype::bf16, l, 4096));
            });
        }
    }
    expect_errors_only([&] {
        const std::uint64_t total = total_params(m);
        KVPLAN_FUZZ_CHECK(active_params(m) <= total);
        static_cast<void>(weight_bytes(m).total());
    });
}

/// The replica budget of `m` on `gpu` over a few layouts, workloads and utilizations, checking
/// that its answers agree with one another.
inline void probe_budget(const Model& m, const GpuSpec& gpu) {
    struct Case {
        std::uint32_t tp, pp;
        Workload w;
        double utilization;
    };
    constexpr std::array<Case, 5> cases{{
        {1, 1, {.context = 4096, .concurrency = 16}, 0.92},
        {8, 1, {.context = 131072, .concurrency = 1, .block_size = 1}, 1.0},
        {2, 2, {.context = 32768, .concurrency = 64}, 0.5},
        {1, 4, {.context = 10'000'000, .concurrency = 1'000'000}, 0.9},
        {4, 1, {.context = 1, .concurrency = 1, .block_size = 1U << 20}, 1e-9},
    }};
    for (const Case& c : cases) {
        expect_errors_only([&] {
            const Replica r{.model = m,
                            .gpu = gpu,
                            .parallel = {.tp = c.tp, .pp = c.pp},
                            .kv = KvDtype::fp8_e4m3};
            const ReplicaBudget b = replica_budget(r, c.w, {.utilization = c.utilization});
            // It fits exactly when the target concurrency is within what fits, and then the
            // longest context at that concurrency is at least the target's.
            KVPLAN_FUZZ_CHECK(b.fits == (b.max_concurrency >= c.w.concurrency));
            if (b.fits) KVPLAN_FUZZ_CHECK(!b.max_context || *b.max_context >= c.w.context);
            KVPLAN_FUZZ_CHECK(b.fits ? b.shortfall.is_zero() : b.headroom.is_zero());
        });
        expect_errors_only([&] {
            // The decode bound: a positive finite time that never shrinks as the batch grows.
            const Replica r{.model = m, .gpu = gpu, .parallel = {.tp = c.tp, .pp = c.pp}};
            const DecodeCosts costs = decode_costs(r);
            const DecodePoint one = decode_point(costs, 1, c.w.context);
            const DecodePoint many = decode_point(costs, 64, c.w.context);
            KVPLAN_FUZZ_CHECK(std::isfinite(one.step.in(seconds)) && one.step.in(seconds) > 0.0);
            KVPLAN_FUZZ_CHECK(many.step >= one.step);
        });
    }
}

}  // namespace kvplan::fuzz
