// Properties that must hold for every model, checked over generated configs (a seed of our own,
// or $KVPLAN_TEST_SEED's: a failure names the seed and the config index and reproduces exactly).

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <kvplan/budget.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/kvplan.hpp>
#include <kvplan/roofline.hpp>
#include <limits>
#include <optional>
#include <vector>

#include "support/model_generator.hpp"
#include "support/random.hpp"

using namespace kvplan;
using kvplan::testing::generate_config;
using kvplan::testing::Rng;
using kvplan::testing::valid_tp;

namespace {

constexpr int models_per_property = 150;
/// The generated models' seed: $KVPLAN_TEST_SEED when set, else "kvplan" in ASCII.
std::uint64_t seed() {
    static const std::uint64_t s = kvplan::test::seed(0x6b76706c616eULL);
    return s;
}

/// Every property names the seed with any failure, so that KVPLAN_TEST_SEED reruns it.
#define KVPLAN_PROPERTY_SEED() \
    INFO("random seed " << seed() << " (KVPLAN_TEST_SEED=" << seed() << " draws the same values)")

std::vector<Model> generated_models() {
    Rng r(seed());
    std::vector<Model> out;
    for (int i = 0; i < models_per_property; ++i)
        out.emplace_back(generate_config(r, static_cast<std::uint32_t>(i)));
    return out;
}

const std::vector<Model>& models() {
    static const std::vector<Model> m = generated_models();
    return m;
}

constexpr std::array<std::uint64_t, 12> lengths{0,   1,    2,    15,     16,      17,
                                                127, 4095, 4097, 131072, 999'999, 10'000'000};

}  // namespace

TEST_CASE("every generated config is a valid model", "[properties]") {
    KVPLAN_PROPERTY_SEED();
    // The generator itself is under test: 150 models, each validated by the Model constructor,
    // and the mix covers every cache kind (else the properties below prove less than they claim).
    bool kinds[5] = {};
    for (const Model& m : models())
        for (std::uint32_t i = 0; i < m.layers().num_specs; ++i)
            kinds[static_cast<int>(m.layers().specs[i].kind)] = true;
    for (bool k : kinds) CHECK(k);
}

TEST_CASE("bytes per sequence never shrink as the context grows", "[properties]") {
    KVPLAN_PROPERTY_SEED();
    for (const Model& m : models()) {
        INFO(m.name().c_str());
        for (KvDtype d : all_kv_dtypes) {
            Bytes prev{};
            std::uint64_t prev_blocks = 0;
            for (std::uint64_t t : lengths) {
                const Bytes b = kv_bytes_per_sequence(m, d, t);
                CHECK(b >= prev);
                prev = b;
                const PagedUse p = paged_sequence(m, d, t, 16);
                CHECK(p.blocks >= prev_blocks);
                prev_blocks = p.blocks;
                CHECK(p.reserved >= p.used);
            }
        }
    }
}

TEST_CASE("one-token blocks reserve exactly what a sequence uses", "[properties]") {
    KVPLAN_PROPERTY_SEED();
    // Block size 1 has no partial block, and a window of w tokens holds exactly w blocks.
    for (const Model& m : models()) {
        INFO(m.name().c_str());
        for (std::uint64_t t : lengths) {
            const PagedUse p = paged_sequence(m, KvDtype::fp8_e4m3, t, 1);
            CHECK(p.reserved == p.used);
        }
    }
}

TEST_CASE("fewer sequences fit as they grow, and shorter contexts as sequences multiply",
          "[properties]") {
    KVPLAN_PROPERTY_SEED();
    const Bytes budget = 60 * GiB;
    for (const Model& m : models()) {
        INFO(m.name().c_str());
        std::uint64_t prev_fit = std::numeric_limits<std::uint64_t>::max();
        for (std::uint64_t t : lengths) {
            if (t == 0) continue;
            const std::uint64_t n = sequences_that_fit(budget, m, KvDtype::bf16, t, 16);
            CHECK(n <= prev_fit);
            prev_fit = n;
        }
        // nullopt (any length fits) is the largest answer of all.
        std::optional<std::uint64_t> prev_ctx;
        bool unbounded = true;
        for (std::uint64_t n : {1ULL, 2ULL, 7ULL, 64ULL, 1000ULL, 1'000'000ULL}) {
            const std::optional<std::uint64_t> c = max_context(budget, m, KvDtype::bf16, n, 16);
            if (!unbounded) CHECK(c.has_value());
            if (c && prev_ctx) CHECK(*c <= *prev_ctx);
            unbounded = unbounded && !c;
            prev_ctx = c;
        }
    }
}

TEST_CASE("ranks together hold at least the whole cache, exactly it when heads split evenly",
          "[properties]") {
    KVPLAN_PROPERTY_SEED();
    // Per rank x tp, summed over pipeline stages, covers the whole model; it is larger only when
    // something is replicated (KV heads fewer than tp, an MLA latent) or rounded up (a constant
    // state split unevenly).
    for (const Model& m : models()) {
        INFO(m.name().c_str());
        for (std::uint32_t tp : valid_tp(m)) {
            bool even = true;
            for (std::uint32_t i = 0; i < m.layers().num_specs; ++i) {
                const CacheSpec& s = m.layers().specs[i];
                if (s.kind == CacheKind::full_attention || s.kind == CacheKind::sliding_window)
                    even = even && s.kv_heads % tp == 0;
                if (s.kind == CacheKind::mla_latent) even = even && tp == 1;
                if (s.kind == CacheKind::constant_state)
                    even = even && s.state_bytes.count() % tp == 0;
            }
            for (std::uint32_t pp = 1; pp <= 4 && pp <= m.num_layers(); ++pp) {
                const Layout l(m, {.tp = tp, .pp = pp});
                for (std::uint64_t t : {1ULL, 4097ULL, 131072ULL}) {
                    const Bytes whole = kv_bytes_per_sequence(m, KvDtype::bf16, t);
                    Bytes ranks{};
                    for (std::uint32_t s = 0; s < pp; ++s)
                        ranks += kv_bytes_per_sequence(m, KvDtype::bf16, t, l.stage(s)) * tp;
                    INFO("tp " << tp << " pp " << pp << " tokens " << t);
                    CHECK(ranks >= whole);
                    if (even) CHECK(ranks == whole);
                }
            }
        }
    }
}

TEST_CASE("max_context inverts bytes per sequence exactly", "[properties]") {
    KVPLAN_PROPERTY_SEED();
    // The answer L fits n times in the budget and L + 1 does not; nullopt means a length far past
    // every window still fits. Random budgets up to 200 GiB, 1 to 100,000 sequences.
    Rng r(seed() + 1);
    for (const Model& m : models()) {
        INFO(m.name().c_str());
        for (int k = 0; k < 4; ++k) {
            const Bytes budget = Bytes::exactly(r.between(0, 200ULL << 30));
            const std::uint64_t n = r.pick(std::array<std::uint64_t, 5>{1, 3, 16, 256, 100'000});
            const std::uint32_t bs = static_cast<std::uint32_t>(r.pick(std::array{1, 16, 256}));
            const KvFormat f = r.pick(all_kv_dtypes);
            INFO("budget " << budget.count() << " B, " << n << " sequences, block " << bs);
            const std::optional<std::uint64_t> L = max_context(budget, m, f, n, bs);
            if (!L) {
                CHECK(reserved_per_sequence(m, f, largest_window(m) + 10'000'000, bs) * n <=
                      budget);
                continue;
            }
            // 0 also answers "not even the constant state fits", so only a positive L must fit.
            if (*L >= 1) CHECK(reserved_per_sequence(m, f, *L, bs) * n <= budget);
            CHECK(reserved_per_sequence(m, f, *L + 1, bs) * n > budget);
            if (*L >= 1) CHECK(sequences_that_fit(budget, m, f, *L, bs) >= n);
        }
    }
}

TEST_CASE("tokens_that_fit is the floor of budget over bytes per token", "[properties]") {
    KVPLAN_PROPERTY_SEED();
    Rng r(seed() + 2);
    for (const Model& m : models()) {
        INFO(m.name().c_str());
        const Bytes budget = Bytes::exactly(r.between(0, 1ULL << 40));
        const std::optional<std::uint64_t> T = tokens_that_fit(budget, m, KvDtype::fp8_e4m3);
        const Bytes per_token = kv_bytes_per_token(m, KvDtype::fp8_e4m3);
        REQUIRE(T.has_value() == !per_token.is_zero());
        if (!T) continue;
        CHECK(per_token * *T <= budget);
        CHECK(per_token * (*T + 1) > budget);
    }
}

TEST_CASE("the stages of a pipeline together hold the whole model's blocks", "[properties]") {
    KVPLAN_PROPERTY_SEED();
    // Blocks are per layer and stages partition the layers, so at tp 1 the stages' blocks and
    // bytes add up to the whole model's exactly, whatever mix of layer shapes a stage gets.
    for (const Model& m : models()) {
        INFO(m.name().c_str());
        for (std::uint32_t pp = 1; pp <= 5 && pp <= m.num_layers(); ++pp) {
            const Layout l(m, {.pp = pp});
            for (std::uint64_t t : {1ULL, 100ULL, 5000ULL}) {
                const PagedUse whole = paged_sequence(m, KvDtype::fp8_e4m3, t, 16);
                std::uint64_t blocks = 0;
                Bytes reserved{};
                for (std::uint32_t s = 0; s < pp; ++s) {
                    const PagedUse part = paged_sequence(m, KvDtype::fp8_e4m3, t, 16, l.stage(s));
                    blocks += part.blocks;
                    reserved += part.reserved;
                }
                CHECK(blocks == whole.blocks);
                CHECK(reserved == whole.reserved);
            }
        }
    }
}

TEST_CASE("a decode bound from prepared costs equals the bound summed sequence by sequence",
          "[properties][roofline]") {
    KVPLAN_PROPERTY_SEED();
    // decode_point over DecodeCosts multiplies one sequence's KV and attention by the batch; the
    // span form of decode_bound adds them sequence by sequence from scratch. Every term is an
    // integer below 2^53 here, so the two agree exactly.
    for (std::size_t i = 0; i < models().size(); i += 5) {
        const Model& m = models()[i];
        INFO(m.name().c_str());
        for (std::uint32_t tp : valid_tp(m)) {
            if (tp > 8) continue;
            const Replica r{.model = m,
                            .gpu = gpus::h100_sxm,
                            .parallel = {.tp = tp, .pp = m.num_layers() >= 2 ? 2U : 1U},
                            .kv = KvDtype::fp8_e4m3};
            const DecodeCosts costs = decode_costs(r);
            for (std::uint64_t b : {1ULL, 3ULL, 64ULL})
                for (std::uint64_t ctx : {1ULL, 4097ULL, 131072ULL}) {
                    const std::vector<std::uint64_t> each(b, ctx);
                    const DecodePoint summed = point_of(decode_bound(r, each));
                    const DecodePoint p = decode_point(costs, b, ctx);
                    INFO("tp " << tp << " batch " << b << " context " << ctx);
                    CHECK(p.step.in(seconds) == summed.step.in(seconds));
                    CHECK(p.tpot.in(seconds) == summed.tpot.in(seconds));
                    CHECK(p.bound == summed.bound);
                    CHECK(p.tokens_per_s == summed.tokens_per_s);
                    // With efficiency factors, the estimates agree too.
                    const RooflineOptions eff{.efficiency = Efficiency{0.8, 0.6}};
                    CHECK(decode_point(decode_costs(r, eff), b, ctx).step_estimate->in(seconds) ==
                          decode_bound(r, each, eff).step_estimate->in(seconds));
                }
        }
    }
}

TEST_CASE("the decode lower bound grows with batch and context and never exceeds an estimate",
          "[properties][roofline]") {
    KVPLAN_PROPERTY_SEED();
    for (std::size_t i = 0; i < models().size(); i += 3) {
        const Model& m = models()[i];
        INFO(m.name().c_str());
        for (const GpuSpec* g : {&gpus::l4, &gpus::mi300x}) {
            const Replica r{.model = m, .gpu = *g};
            const DecodeCosts bare = decode_costs(r);
            const DecodeCosts est = decode_costs(r, {.efficiency = Efficiency{0.7, 0.5}});
            Seconds prev_batch{};
            for (std::uint64_t b : {1ULL, 2ULL, 16ULL, 256ULL, 4096ULL}) {
                const DecodePoint p = decode_point(bare, b, 8192);
                CHECK(p.step >= prev_batch);
                prev_batch = p.step;
                CHECK(std::isfinite(p.tokens_per_s));
                CHECK(p.tokens_per_s > 0.0);
                // Efficiency factors below 1 only slow a step down: the bound stays below.
                CHECK(*decode_point(est, b, 8192).step_estimate >= p.step);
            }
            Seconds prev_ctx{};
            for (std::uint64_t ctx : {1ULL, 128ULL, 4096ULL, 131072ULL, 10'000'000ULL}) {
                const DecodePoint p = decode_point(bare, 16, ctx);
                CHECK(p.step >= prev_ctx);
                CHECK(std::isfinite(p.step.in(seconds)));
                prev_ctx = p.step;
            }
        }
    }
}
