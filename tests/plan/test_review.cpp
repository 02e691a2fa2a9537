// A replica search for a design review (plan/review.hpp): what would make a miss fit, cost and
// throughput under latency targets, the Pareto front; and the price file (price_file.hpp).

#include <catch2/catch.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan.hpp>
#include <kvplan/price_file.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

/// A candidate of Llama-3-8B on one H100 whose estimate says `rate` tokens/s per GPU at `tpot`
/// and `ttft`: the ranking reads only these figures, so they are set by hand.
PlanCandidate with_estimate(const ReplicaAnswer& base, double rate, double tpot_ms, double ttft_ms,
                            const GpuSpec& g) {
    PlanCandidate c{0, 0, 0, base};
    c.answer.replica.gpu = g;
    c.answer.estimate = LatencyEstimate{};
    c.answer.estimate->tokens_per_s_per_gpu = rate;
    c.answer.estimate->tpot = tpot_ms * milliseconds;
    c.answer.estimate->ttft = ttft_ms * milliseconds;
    return c;
}

}  // namespace

TEST_CASE("a miss is made to fit by more replicas or a shorter context, not by fp8 alone",
          "[review]") {
    // Llama-3-8B: 32 layers x 2 x 8 KV heads x 128 x 2 B = 128 KiB per token in bf16. Given
    // 8 GiB of KV per GPU, vLLM pages 16-token blocks of 2 MiB: 4,096 blocks
    // (vllm/v1/core/kv_cache_utils.py, get_num_blocks). A sequence of 8,192 tokens holds 512 of
    // them. Block 0 is the pool's null block (vllm/v1/core/block_pool.py, BlockPool), so 4,095
    // are left: one H100 holds floor(4,095 / 512) = 7 sequences, and 20 do not fit.
    Deployment d{.model = bundled("llama-3-8b"), .gpu = bundled_gpu("h100-sxm")};
    d.serving.kv_memory_per_gpu = 8 * GiB;
    const Demand demand{.context = 8192, .concurrency = 20};
    const ReplicaAnswer miss = evaluate(d, demand);
    REQUIRE(miss.verdict == Verdict::does_not_fit);
    CHECK(miss.max_concurrency == 7);

    const std::vector<GpuSpec> others{bundled_gpu("h100-sxm"), bundled_gpu("h200-sxm")};
    const WhatWouldFit w = what_would_fit(d, demand, others);
    // ceil(20 / 7) = 3 replicas of one GPU: 7 sequences each, 21 held.
    REQUIRE(w.more_gpus);
    CHECK(w.more_gpus->gpus == 3);
    CHECK(w.more_gpus->replicas == 3);
    CHECK(w.more_gpus->concurrency_per_replica == 7);
    CHECK(w.more_gpus->total_max_concurrency == 21);
    // fp8 halves a block to 1 MiB: 8,191 blocks hold 15 sequences of 512, still short of 20.
    CHECK_FALSE(w.fp8_kv);
    // 20 sequences share 4,095 blocks: 204 each (20 x 204 = 4,080), 204 x 16 = 3,264 tokens.
    REQUIRE(w.shorter_context);
    CHECK(w.shorter_context->demand.context == 3264);
    CHECK(w.shorter_context->fits());
    // One token more needs a 205th block per sequence: 4,100 > 4,095.
    CHECK_FALSE(evaluate(d, {.context = 3265, .concurrency = 20}).fits());
    // Another GPU is given the same 8 GiB of KV: it holds the same 7 (the H100 itself skipped).
    CHECK_FALSE(w.other_gpu);
    CHECK(w.any());
}

TEST_CASE("fp8 KV and another GPU make a two-GPU Llama-3-70B replica fit", "[review]") {
    // Llama-3-70B at tp 2: 141 GB of bf16 weights, vLLM's profile of 16,384 tokens (2.55 GiB) and
    // FlashInfer's all-reduce fusion workspace (4,096 tokens of 64 MiB at tp 2: 130 + 2 + 386 MiB,
    // engine/allreduce_fusion.hpp) leave an H100 (79.19 GiB, 0.92 of it to vLLM) 3.50 GiB of KV;
    // 80 layers x 2 x 8 KV heads x 128 x 2 B = 320 KiB per token, 160 KiB per GPU, so a sequence
    // of 8,192 tokens takes 1.25 GiB a GPU: 2 sequences. An H200 (140 GiB) leaves about 60 GiB:
    // some 48. fp8 halves the sequence: 5 on the H100.
    const Deployment d{
        .model = bundled("llama-3-70b"), .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 2}};
    const Demand demand{.context = 8192, .concurrency = 5};
    const ReplicaAnswer miss = evaluate(d, demand);
    REQUIRE(miss.verdict == Verdict::does_not_fit);
    CHECK(miss.max_concurrency == 2);
    const std::vector<GpuSpec> others{bundled_gpu("a100-sxm4-80gb"), bundled_gpu("b200"),
                                      bundled_gpu("h200-sxm")};
    const WhatWouldFit w = what_would_fit(d, demand, others);
    // The A100 80 GB (79.3 GiB) runs no fusion pass (vLLM's needs Hopper or Blackwell,
    // engine/allreduce_fusion.hpp), so its 0.5 GiB more of KV hold the 5: of the GPUs that fit,
    // it has the least memory.
    REQUIRE(w.other_gpu);
    CHECK(std::string(w.other_gpu->replica.gpu.id) == "a100-sxm4-80gb");
    CHECK(w.other_gpu->max_concurrency >= 5);
    CHECK(w.other_gpu->replica.parallel.tp == 2);
    REQUIRE(w.fp8_kv);
    CHECK(w.fp8_kv->replica.kv.dtype == KvDtype::fp8_e4m3);
    CHECK(w.fp8_kv->max_concurrency >= 5);
    CHECK(w.fp8_kv->max_concurrency <= 2 * miss.max_concurrency + 1);
    // Three replicas (6 GPUs) hold 3 x max_concurrency >= 5.
    REQUIRE(w.more_gpus);
    CHECK(w.more_gpus->gpus == 6);
}

TEST_CASE("a search that finds nothing says what would make each nearest miss fit",
          "[review][plan]") {
    // Llama-3-8B, 64 sequences of 8,192 tokens, within 8 GiB of KV per GPU and one GPU: each
    // candidate holds 7 (bf16; 4,095 blocks of the 4,096 over 512 a sequence); none holds 64.
    const Model m = bundled("llama-3-8b");
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm")};
    space.kv_formats = {KvFormat{KvDtype::bf16}};
    space.max_gpus = 1;
    Serving s;
    s.kv_memory_per_gpu = 8 * GiB;
    const Demand demand{.context = 8192, .concurrency = 64};
    const PlanAnswer p = plan_replicas(m, space, s, demand);
    REQUIRE(p.fits.empty());
    REQUIRE(p.nearest_misses.size() == 1);
    const Deployment d = candidate_deployment(m, space, s, p.nearest_misses.front());
    const WhatWouldFit w = what_would_fit(d, demand);
    // ceil(64 / 7) = 10 replicas of one GPU.
    REQUIRE(w.more_gpus);
    CHECK(w.more_gpus->gpus == 10);
    // fp8: 15 sequences, short of 64.
    CHECK_FALSE(w.fp8_kv);
    // 64 sequences in 4,095 blocks: 63 blocks each (4,032), 63 x 16 = 1,008 tokens.
    REQUIRE(w.shorter_context);
    CHECK(w.shorter_context->demand.context == 1008);
}

TEST_CASE("cost ranks by dollars per million output tokens, under the latency targets",
          "[review][cost]") {
    const ReplicaAnswer base =
        evaluate(Deployment{.model = bundled("llama-3-8b"), .gpu = bundled_gpu("h100-sxm")},
                 {.context = 1024});
    const GpuSpec h100 = bundled_gpu("h100-sxm"), h200 = bundled_gpu("h200-sxm"),
                  l4 = bundled_gpu("l4");
    const std::vector<PlanCandidate> c{
        with_estimate(base, 1000.0, 20.0, 300.0, h100),   // 0
        with_estimate(base, 1500.0, 30.0, 400.0, h200),   // 1
        with_estimate(base, 200.0, 60.0, 900.0, l4),      // 2
        with_estimate(base, 1200.0, 25.0, 2000.0, h100),  // 3: TTFT 2 s
    };
    PriceTable prices{.date = "2026-11-01",
                      .source = "test",
                      .example = true,
                      .prices = {{"h100-sxm", 3.0}, {"h200-sxm", 3.8}}};
    // US$/h over tokens per hour: H100 3.0 / (1,000 x 3,600) x 1e6 = 0.8333; H200 3.8 / (1,500 x
    // 3,600) x 1e6 = 0.7037; the H100 at 1,200 tokens/s: 3.0 / 4.32e6 x 1e6 = 0.6944.
    CHECK(dollars_per_million_tokens(3.0, 1000.0) == Approx(0.833333).epsilon(1e-6));
    const ReviewAnswer cost = rank_for_review(c, ReviewRanking::cost, {}, &prices);
    REQUIRE(cost.ranked.size() == 3);
    CHECK(cost.without_price == 1);  // the L4 has no price
    CHECK(cost.ranked[0].index == 3);
    CHECK(*cost.ranked[0].dollars_per_million_tokens == Approx(0.694444).epsilon(1e-6));
    CHECK(cost.ranked[1].index == 1);
    CHECK(*cost.ranked[1].dollars_per_million_tokens == Approx(0.703704).epsilon(1e-6));
    CHECK(cost.ranked[2].index == 0);
    // A 1 s TTFT target leaves out the fourth, a 28 ms TPOT target the H200 and the L4.
    const LatencyTargets targets{.ttft = 1.0 * seconds, .tpot = 28.0 * milliseconds};
    const ReviewAnswer under = rank_for_review(c, ReviewRanking::cost, targets, &prices);
    CHECK(under.over_ttft == 1);
    CHECK(under.over_tpot == 2);
    REQUIRE(under.ranked.size() == 1);
    CHECK(under.ranked[0].index == 0);
    // By tokens/s per GPU, no prices needed: 1,500, 1,200, 1,000, 200.
    const ReviewAnswer rate = rank_for_review(c, ReviewRanking::tokens_per_gpu);
    REQUIRE(rate.ranked.size() == 4);
    CHECK(rate.ranked[0].index == 1);
    CHECK(rate.ranked[1].index == 3);
    CHECK(rate.ranked[2].index == 0);
    CHECK(rate.ranked[3].index == 2);
    CHECK_FALSE(rate.ranked[0].dollars_per_million_tokens);
    // Without an estimate a candidate is counted, never ranked.
    std::vector<PlanCandidate> none{PlanCandidate{0, 0, 0, base}};
    CHECK(rank_for_review(none, ReviewRanking::tokens_per_gpu).without_estimate == 1);
}

TEST_CASE("the Pareto front keeps the candidates no other beats on both rate and TPOT",
          "[review][pareto]") {
    const ReplicaAnswer base =
        evaluate(Deployment{.model = bundled("llama-3-8b"), .gpu = bundled_gpu("h100-sxm")},
                 {.context = 1024});
    const GpuSpec g = bundled_gpu("h100-sxm");
    // (tokens/s per GPU, TPOT ms): A (1000, 20), B (1500, 30), C (900, 25) dominated by A,
    // D (1500, 35) dominated by B, E (400, 10), F (1000, 20) equal to A, G (2000, 50).
    const std::vector<PlanCandidate> c{
        with_estimate(base, 1000, 20, 0, g), with_estimate(base, 1500, 30, 0, g),
        with_estimate(base, 900, 25, 0, g),  with_estimate(base, 1500, 35, 0, g),
        with_estimate(base, 400, 10, 0, g),  with_estimate(base, 1000, 20, 0, g),
        with_estimate(base, 2000, 50, 0, g)};
    // The front by TPOT: E (10), A and F (20), B (30), G (50).
    const std::vector<std::size_t> front = pareto_front(c);
    CHECK(front == std::vector<std::size_t>{4, 0, 5, 1, 6});
    // No kept point is dominated, every dropped one is.
    for (std::size_t i = 0; i < c.size(); ++i) {
        bool dominated = false;
        for (std::size_t j = 0; j < c.size(); ++j) {
            const auto& a = *c[i].answer.estimate;
            const auto& b = *c[j].answer.estimate;
            dominated = dominated ||
                        (b.tokens_per_s_per_gpu >= a.tokens_per_s_per_gpu && b.tpot <= a.tpot &&
                         (b.tokens_per_s_per_gpu > a.tokens_per_s_per_gpu || b.tpot < a.tpot));
        }
        const bool kept = std::find(front.begin(), front.end(), i) != front.end();
        CHECK(kept == !dominated);
    }
    // Without an estimate a candidate is not on the chart.
    std::vector<PlanCandidate> none{PlanCandidate{0, 0, 0, base}};
    CHECK(pareto_front(none).empty());
}

TEST_CASE("the example price file reads, marked as an example with its date and source",
          "[review][prices]") {
    const PriceTable t = load_price_table(config_dir / "prices" / "example.json");
    CHECK(t.example);
    CHECK(t.date == "2026-11-01");
    CHECK_FALSE(t.source.empty());
    CHECK(t.price("h100-sxm") == 3.0);
    CHECK_FALSE(t.price("no-such-gpu"));
    // Every id names a bundled GPU.
    for (const GpuPrice& p : t.prices) {
        INFO(p.gpu);
        CHECK(std::filesystem::exists(config_dir / "gpus" / (p.gpu + ".json")));
    }
}

TEST_CASE("a bad price file names the field, what was expected and what was found",
          "[review][prices]") {
    const auto read = [](const char* text) {
        return price_table_from_json(Json::parse(text), "prices.json");
    };
    CHECK_THROWS_WITH(
        read(R"({"date": "d", "source": "s", "dollars_per_gpu_hour": {"h100-sxm": 0}})"),
        Catch::Contains("prices.json") && Catch::Contains("dollars_per_gpu_hour.h100-sxm") &&
            Catch::Contains("> 0"));
    CHECK_THROWS_WITH(read(R"({"date": "d", "source": "s", "price": {"h100-sxm": 2}})"),
                      Catch::Contains("price") && Catch::Contains("did you mean"));
    CHECK_THROWS_WITH(read(R"({"source": "s", "dollars_per_gpu_hour": {"h100-sxm": 2}})"),
                      Catch::Contains("date"));
    CHECK_THROWS_WITH(read(R"({"date": "d", "source": "s", "dollars_per_gpu_hour": {}})"),
                      Catch::Contains("at least one GPU"));
    CHECK_THROWS_WITH(
        read(
            R"({"date": "d", "source": "s", "currency": "EUR", "dollars_per_gpu_hour": {"a": 1}})"),
        Catch::Contains("USD"));
}

TEST_CASE("host, NVMe and remote tiers hold sequences and bring one back faster than its prefill",
          "[review][tiers]") {
    // Llama-3-8B at 8,192 tokens: 8,192 x 131,072 B = 1,073,741,824 B (1 GiB) a sequence, in
    // 512 whole 16-token blocks.
    const Deployment d{.model = bundled("llama-3-8b"), .gpu = bundled_gpu("h100-sxm")};
    const ReplicaAnswer a = evaluate(d, {.context = 8192, .concurrency = 8});
    const TierAnswer t = kv_tiers(a, {.host = 64 * GiB, .nvme = 1000 * GB, .remote = 10 * GiB});
    CHECK(t.sequence_bytes.count() == 1'073'741'824ULL);
    REQUIRE(t.num_tiers == 3);
    // Host: 64 GiB / 1 GiB = 64 sequences; back over the H100's PCIe Gen5 x16 at 64 GB/s one
    // way: 1,073,741,824 / 64e9 = 16.78 ms.
    CHECK(t.tiers[0].tier == Tier::host);
    CHECK(t.tiers[0].sequences == 64);
    CHECK(t.tiers[0].back.time.in(milliseconds) == Approx(1'073'741'824.0 / 64e9 * 1e3));
    // NVMe: 1e12 / 1,073,741,824 = 931.3: 931 sequences; over Gen4 x4 (7.877 GB/s): 136.3 ms.
    CHECK(t.tiers[1].sequences == 931);
    CHECK(t.tiers[1].back.time.in(milliseconds) ==
          Approx(1'073'741'824.0 / (16.0 * 4 * 128 / 130 / 8 * 1e9) * 1e3));
    // Remote: 10 sequences, over InfiniBand NDR at 50 GB/s: 21.47 ms.
    CHECK(t.tiers[2].sequences == 10);
    CHECK(t.tiers[2].back.time.in(milliseconds) == Approx(1'073'741'824.0 / 50e9 * 1e3));
    // Recomputing the prefill takes at least the matmul FLOPs of the 7.0e9 parameters outside
    // the embedding, 2 x 7.0e9 x 8,192 = 1.15e14, over 989.4 TFLOP/s: 115.9 ms. PCIe brings
    // the sequence back in under a seventh of that; NVMe, 64 / 7.877 = 8.125 times slower than
    // PCIe, comes close to the recompute bound (a real prefill is slower than its bound).
    REQUIRE(t.recompute);
    CHECK(t.recompute->in(milliseconds) > 2 * 7.0e9 * 8192 / 989.4e12 * 1e3);
    REQUIRE(t.tiers[0].versus_recompute);
    CHECK(*t.tiers[0].versus_recompute < 1.0 / 7);
    CHECK(*t.tiers[1].versus_recompute / *t.tiers[0].versus_recompute ==
          Approx(64e9 / (16.0 * 4 * 128 / 130 / 8 * 1e9)));
}

TEST_CASE("a tier needs a replica that starts, and a host tier the GPU's PCIe figure",
          "[review][tiers]") {
    // Llama-3-8B on one H100 starts: its tiers have no problem.
    Deployment d{.model = bundled("llama-3-8b"), .gpu = bundled_gpu("h100-sxm")};
    const TierSizes all{.host = 64 * GiB, .nvme = 1000 * GB, .remote = 10 * GiB};
    const ReplicaAnswer starts = evaluate(d, {.context = 8192, .concurrency = 8});
    REQUIRE(starts.starts());
    CHECK_FALSE(tier_problem(starts, all));
    CHECK_FALSE(tier_problem(starts, {}));
    // Llama-3-70B's 141 GB of bf16 weights on one 80 GB H100 do not load: the first tier given
    // is refused, with the answer's refusal as what was found.
    d.model = bundled("llama-3-70b");
    const ReplicaAnswer refused = evaluate(d, {.context = 8192, .concurrency = 8});
    REQUIRE_FALSE(refused.starts());
    const auto first = tier_problem(refused, all);
    REQUIRE(first);
    CHECK(first->tier == Tier::host);
    CHECK(first->found == name(refused.refusal));
    const auto remote = tier_problem(refused, {.remote = 10 * GiB});
    REQUIRE(remote);
    CHECK(remote->tier == Tier::remote);
    // A GPU spec without a PCIe figure cannot time a host tier's way back; NVMe alone is fine.
    d.model = bundled("llama-3-8b");
    GpuSpec no_pcie = bundled_gpu("h100-sxm");
    no_pcie.pcie_bandwidth = BytesPerSecond{};
    d.gpu = no_pcie;
    const ReplicaAnswer bare = evaluate(d, {.context = 8192, .concurrency = 8});
    REQUIRE(bare.starts());
    const auto host = tier_problem(bare, all);
    REQUIRE(host);
    CHECK(host->tier == Tier::host);
    CHECK(host->found == "h100-sxm");
    CHECK_FALSE(tier_problem(bare, {.nvme = 1000 * GB}));
}

TEST_CASE("a review's candidates left out are the sum of its reasons", "[review]") {
    // 2 without an estimate, 3 over the TTFT target, 1 over the TPOT target, 4 without a price.
    const ReviewAnswer r{.without_estimate = 2, .over_ttft = 3, .over_tpot = 1, .without_price = 4};
    CHECK(r.left_out() == 10);
    CHECK(ReviewAnswer{}.left_out() == 0);
}

TEST_CASE("memory_short is what a GPU lacks to start, nothing for a rule no memory lifts",
          "[review][plan]") {
    const Model m = bundled("llama-3-8b");
    const GpuSpec h100 = bundled_gpu("h100-sxm");
    // 512 MiB of KV for a sequence of 8,192 tokens: 512 blocks of 16 x 32 layers x 2 x 8 KV heads
    // x 128 x 2 B = 1 GiB; it lacks 1 GiB - 512 MiB = 536,870,912 B.
    Serving s;
    s.kv_memory_per_gpu = 512 * MiB;
    const ReplicaAnswer request =
        evaluate(Deployment{.model = m, .gpu = h100, .serving = s}, {.context = 8192});
    REQUIRE(request.refusal == Refusal::request);
    CHECK(memory_short(request) == Bytes::exactly(536'870'912));
    // Past the model's limit (8,192) no memory helps.
    const ReplicaAnswer limit = evaluate(Deployment{.model = m, .gpu = h100}, {.context = 9000});
    REQUIRE(limit.refusal == Refusal::context_limit);
    CHECK_FALSE(memory_short(limit).has_value());
    CHECK(nearer_refusal(request, limit));
    CHECK_FALSE(nearer_refusal(limit, request));
    // A replica that starts lacks nothing.
    CHECK_FALSE(memory_short(evaluate(Deployment{.model = m, .gpu = h100}, {.context = 8192})));
}

TEST_CASE("when nothing starts, plan shows the replica nearest to starting", "[review][plan]") {
    // Llama-3-70B's 141,107,412,992 B of bf16 weights on one GPU of either type: neither starts.
    // vLLM's fraction of 0.92 is ceil(0.92 x 23,570,219,008) = 21,684,601,488 B of an L4 and
    // ceil(0.92 x 85,029,027,840) = 78,226,705,613 B of an H100 SXM (the CUDA totals,
    // configs/gpus): the H100 lacks some 57 GB less. The first GPU count searched holds both, the
    // L4 first in the list: the refused replica shown is the H100's, not the first found.
    const Model m = bundled("llama-3-70b");
    SearchSpace space;
    space.gpus = {bundled_gpu("l4"), bundled_gpu("h100-sxm")};
    space.max_gpus = 1;
    space.layouts = LayoutRule::any;
    const Demand demand{.context = 8192};
    const PlanAnswer p = plan_replicas(m, space, Serving{}, demand);
    REQUIRE(p.fits.empty());
    REQUIRE(p.nearest_misses.empty());
    REQUIRE(p.refused);
    CHECK(p.refused->gpu == 1);
    const ReplicaAnswer& h100 = p.refused->answer;
    REQUIRE(h100.refusal == Refusal::weights);
    CHECK(h100.memory().fraction_bytes == Bytes::exactly(78'226'705'613));
    // What it lacks: the weights and the terms charged with them past the fraction.
    CHECK(memory_short(h100) == h100.memory().charged - Bytes::exactly(78'226'705'613));
    CHECK(*memory_short(h100) > Bytes::exactly(141'107'412'992 - 78'226'705'613));
    const ReplicaAnswer l4 = evaluate(
        Deployment{.model = m, .gpu = bundled_gpu("l4"), .kv = KvFormat{KvDtype::bf16}}, demand);
    REQUIRE(l4.refusal == Refusal::weights);
    CHECK(l4.memory().fraction_bytes == Bytes::exactly(21'684'601'488));
    CHECK(*memory_short(l4) > *memory_short(h100));
    CHECK(nearer_refusal(h100, l4));
}

TEST_CASE("a plan review says what it cannot take, in the words of the front end that asks",
          "[review][plan_review]") {
    const Demand split{.context = 3000, .prompt_tokens = 2000, .output_tokens = 1000};
    const Demand bare{.context = 3000};
    const PlanReviewSpelling flags{.ranking = "--rank",
                                   .prices = "--prices",
                                   .ttft = "--ttft-ms",
                                   .tpot = "--tpot-ms",
                                   .pareto = "--pareto",
                                   .prompt_tokens = "--prompt-tokens",
                                   .output_tokens = "--output-tokens"};
    // Nothing asked: gpus without the split, estimate with it; neither is a problem.
    CHECK(PlanReview{}.ranking_for(bare) == PlanRanking::gpus);
    CHECK(PlanReview{}.ranking_for(split) == PlanRanking::estimate);
    CHECK_FALSE(plan_review_problem({}, bare));
    CHECK_FALSE(plan_review_problem({}, split));
    // Cost without prices.
    auto p = plan_review_problem({.ranking = PlanRanking::cost}, split, flags);
    REQUIRE(p);
    CHECK(p->field == PlanReviewField::ranking);
    CHECK(p->expected == "--prices beside cost (US$ per GPU-hour by GPU id)");
    // Targets, prices and the front read the estimate, which needs the split.
    p = plan_review_problem({.targets = {.tpot = 40.0 * milliseconds}}, bare, flags);
    REQUIRE(p);
    CHECK(p->field == PlanReviewField::tpot);
    CHECK(p->expected ==
          "--prompt-tokens and --output-tokens beside it (the load the latency estimate serves)");
    p = plan_review_problem({.prices = PriceTable{}}, bare);
    REQUIRE(p);
    CHECK(p->field == PlanReviewField::prices);
    CHECK(p->expected ==
          "demand.prompt_tokens and demand.output_tokens beside it (the load the "
          "latency estimate serves)");
    CHECK(plan_review_problem({.pareto = true}, bare)->field == PlanReviewField::pareto);
    CHECK_FALSE(plan_review_problem({.pareto = true}, split));
    // Targets rank by the estimate: not with gpus or fastest.
    p = plan_review_problem({.ranking = PlanRanking::fastest, .targets = {.ttft = 1.0 * seconds}},
                            split, flags);
    REQUIRE(p);
    CHECK(p->field == PlanReviewField::ranking);
    CHECK(p->expected ==
          "estimate or cost beside --prices, --ttft-ms or --tpot-ms (they rank by the estimate)");
    // The estimate's ranking needs its load.
    p = plan_review_problem({.ranking = PlanRanking::estimate}, bare, flags);
    REQUIRE(p);
    CHECK(p->expected ==
          "--prompt-tokens and --output-tokens beside estimate (the load the estimate serves)");
    // The library refuses the same, in its own names.
    CHECK_THROWS_WITH(review_plan(bundled("llama-3-8b"), {}, {}, bare, {.pareto = true}),
                      Catch::Contains("pareto: expected demand.prompt_tokens"));
}

TEST_CASE("a plan ranks its search's fits by cost under targets and charts their front",
          "[review][plan_review]") {
    // Llama-3-8B given 8 GiB of KV a GPU on H100s and H200s, up to two GPUs, 2,000 tokens in and
    // 1,000 out. One GPU pages 4,096 blocks of 16 x 128 KiB = 2 MiB, the null block held back, and
    // a request of 3,000 tokens takes ceil(3,000 / 16) = 188 blocks: floor(4,095 / 188) = 21
    // sequences. At tp 2 a block is 1 MiB a GPU: floor(8,191 / 188) = 43.
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm"), bundled_gpu("h200-sxm")};
    space.max_gpus = 2;
    space.layouts = LayoutRule::whole_nodes;  // tp 1 and tp 2, no pipeline within a node
    space.keep = 1;                           // a review keeps every fit, whatever keep says
    Serving serving;
    serving.kv_memory_per_gpu = 8 * GiB;
    const Demand demand{
        .context = 3000, .concurrency = 16, .prompt_tokens = 2000, .output_tokens = 1000};
    const PriceTable prices{
        .date = "2026-11-01", .source = "test", .prices = {{"h100-sxm", 3.0}, {"h200-sxm", 3.8}}};
    const Model llama = bundled("llama-3-8b");
    const ReviewedPlan plan =
        review_plan(llama, space, serving, demand,
                    {.ranking = PlanRanking::cost, .prices = prices, .pareto = true});
    CHECK(plan.ranking == PlanRanking::cost);
    CHECK(plan.reviewed);
    REQUIRE(plan.search.fits.size() == plan.search.fitting);
    REQUIRE(plan.search.fitting == 4);  // 1 and 2 GPUs of each type
    for (const PlanCandidate& c : plan.search.fits)
        CHECK(c.answer.max_concurrency == (c.answer.gpus == 1 ? 21U : 43U));
    // The order is rank_for_review()'s over the search's fits, each priced as
    // $/GPU-hour / (output tokens/s per GPU x 3,600 s) x 10^6.
    const ReviewAnswer expected =
        rank_for_review(plan.search.fits, ReviewRanking::cost, {}, &prices);
    REQUIRE(plan.order.ranked.size() == expected.ranked.size());
    REQUIRE(plan.order.ranked.size() == 4);
    for (std::size_t i = 0; i < plan.order.ranked.size(); ++i) {
        const ReviewedCandidate& r = plan.order.ranked[i];
        CHECK(r.index == expected.ranked[i].index);
        const double price = plan.at(i).answer.replica.gpu.id == "h100-sxm" ? 3.0 : 3.8;
        CHECK(*r.dollars_per_gpu_hour == price);
        CHECK(*r.dollars_per_million_tokens ==
              Approx(price / (plan.at(i).answer.estimate->tokens_per_s_per_gpu * 3600.0) * 1e6));
        if (i > 0)
            CHECK(*plan.order.ranked[i - 1].dollars_per_million_tokens <=
                  *r.dollars_per_million_tokens);
    }
    // The front is pareto_front() over the plan's order.
    std::vector<PlanCandidate> pool;
    for (std::size_t i = 0; i < plan.order.ranked.size(); ++i) pool.push_back(plan.at(i));
    CHECK(plan.pareto == pareto_front(pool));
    CHECK_FALSE(plan.pareto.empty());

    // A TPOT target of 1 us: no estimate meets it, every fit is counted against it.
    const ReviewedPlan none =
        review_plan(llama, space, serving, demand, {.targets = {.tpot = 1.0 * microseconds}});
    CHECK(none.ranking == PlanRanking::estimate);
    CHECK(none.order.ranked.empty());
    CHECK(none.order.over_tpot == none.search.fitting);

    // No review: the search's fits in its order (fewest GPUs first), unpriced, keep respected.
    const ReviewedPlan plain = review_plan(llama, space, serving, {.context = 3000});
    CHECK_FALSE(plain.reviewed);
    CHECK(plain.ranking == PlanRanking::gpus);
    REQUIRE(plain.order.ranked.size() == 1);
    CHECK(plain.order.ranked[0].index == 0);
    CHECK(plain.at(0).answer.gpus == 1);
    CHECK_FALSE(plain.order.ranked[0].dollars_per_million_tokens);
}

TEST_CASE("a search's weight formats carry the experts' format beside each",
          "[review][plan_review]") {
    // kvplan plan --expert-dtype fp8 alone: the checkpoint's format with fp8 experts, as fit.
    const std::vector<std::optional<WeightFormat>> none;
    const auto alone = searched_weights(none, WeightFormat::fp8);
    REQUIRE(alone.size() == 1);
    REQUIRE(alone[0]);
    CHECK(alone[0]->expert_format == WeightFormat::fp8);
    // Nothing given: the checkpoint's own, unset.
    const auto plain = searched_weights(none);
    REQUIRE(plain.size() == 1);
    CHECK_FALSE(plain[0]);
    // --weight-dtype checkpoint,fp8: each with the experts'.
    const std::vector<std::optional<WeightFormat>> two{std::nullopt, WeightFormat::fp8};
    const auto both = searched_weights(two, WeightFormat::fp8);
    REQUIRE(both.size() == 2);
    CHECK(both[1]->format == WeightFormat::fp8);
    CHECK(both[0]->expert_format == WeightFormat::fp8);
    CHECK_FALSE(searched_weights(two)[0]);
}
