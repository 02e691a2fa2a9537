// kvplan fleet as one library call (plan/fleet.hpp), and its agreement with the aggregated pool of
// plan_disaggregated for the same replica (both sized by plan/replicas.hpp).

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/plan.hpp>
#include <kvplan/plan/fleet.hpp>
#include <kvplan/presets.hpp>
#include <vector>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

/// Every request `prompt` + `output` tokens.
LengthDistribution fixed(std::uint64_t prompt, std::uint64_t output) {
    const std::vector<QuantilePoint> p{{100, prompt}}, o{{100, output}};
    return LengthDistribution::from_percentiles(p, o);
}

}  // namespace

TEST_CASE("fleet and disagg's aggregated pool size the same fleet for the same replica",
          "[fleet][disaggregated]") {
    // Llama-3.1-70B in bf16 on tp 4 x H100 SXM, 20 requests/s of 2,000 + 500 tokens, TTFT within
    // 1 s, TPOT within 50 ms, both timed by the latency estimate with Hopper's parameters.
    const Model m = bundled("llama-3.1-70b");
    const DisaggDemand demand{.rate = 20.0,
                              .prompt_tokens = 2000,
                              .output_tokens = 500,
                              .ttft = 1.0 * seconds,
                              .tpot = 0.05 * seconds};
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm")};
    space.min_gpus = space.max_gpus = 4;
    space.max_tp = 4;
    const DisaggPlan d = plan_disaggregated(m, space, {}, demand);
    REQUIRE(d.aggregated);
    const AggregatedPool& agg = *d.aggregated;
    REQUIRE(agg.candidate.answer.replica.parallel.tp == 4);

    const FleetAnswer f = plan_fleet(FleetRequest{
        .deployment = {.model = m, .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 4}},
        .lengths = fixed(2000, 500),
        .rate_per_s = demand.rate,
        .tpot_target = demand.tpot,
        .ttft_target = demand.ttft,
    });
    REQUIRE(f.plan.feasible);
    // Both hold the batch of 86 that the TPOT target binds (the estimate's ITL at 86 running is
    // 49.845 ms, at 87 50.233 ms; the cache holds 194 of 2,500 tokens): TTFT at 86 is 408 ms,
    // vLLM's 50.0 ms request overhead and the wait for the prompts ahead included.
    CHECK(f.plan.binding == FleetBinding::tpot);
    CHECK(f.plan.batch == 86);
    CHECK(agg.concurrency == f.plan.batch);
    CHECK(f.plan.tpot_at_batch <= demand.tpot);
    CHECK(f.plan.ttft_at_batch <= demand.ttft);
    // A request holds its slot from its first forward: its TTFT less the request overhead (HTTP,
    // tokenizer: no slot), then 499 more tokens a TPOT apart: 0.4076 - 0.0500 + 499 x 0.049845 =
    // 25.230 s; by Little's law 20 x 25.230 = 504.61 requests are in flight, ceil(504.61 / 86) =
    // 6 replicas of 4 GPUs: 24. (Staying the targets instead, 1 + 500 x 0.05 = 26 s, would put 520
    // in flight: ceil(520 / 86) = 7, one replica more.)
    const Seconds overhead = default_params(ParallelRules::vllm).request_overhead;
    const double stay =
        (f.plan.ttft_at_batch - overhead).in(seconds) + 499 * f.plan.tpot_at_batch.in(seconds);
    CHECK(f.plan.time_in_system.in(seconds) == Approx(stay));
    CHECK(stay == Approx(25.230).epsilon(1e-4));
    CHECK(f.plan.in_flight == Approx(20 * stay));
    CHECK(f.plan.replicas == 6);
    CHECK(f.gpus == 24);
    CHECK(agg.replicas == 6);
    CHECK(agg.gpus == f.gpus);
    CHECK(agg.request == f.plan.time_in_system);
}

TEST_CASE("the fleet call sizes a replica by the bound as the hand calculation does", "[fleet]") {
    // Llama-3-8B in bf16 with 16 GiB of KV per GPU: a request of 2,000 + 500 tokens holds
    // ceil(2,500 / 16) = 157 blocks of 16 x 128 KiB = 2 MiB, 314 MiB; floor(16,384 / 314) = 52
    // fit. Sized by the bound, a step at 52 reads 15 GB of weights and 52 x 2,250 x 128 KiB of KV
    // at 3.35 TB/s, under 10 ms, so the 100 ms TPOT target does not bind: the KV budget does.
    FleetRequest q{.deployment = {.model = presets::llama_3_8b, .gpu = bundled_gpu("h100-sxm")},
                   .lengths = fixed(2000, 500),
                   .rate_per_s = 10,
                   .tpot_target = 0.1 * seconds,
                   .size_by = FleetSizeBy::bound};
    q.deployment.serving.kv_memory_per_gpu = 16 * GiB;
    const FleetAnswer a = plan_fleet(q);
    REQUIRE(a.plan.feasible);
    CHECK(a.kv_budget_per_gpu == 16 * GiB);
    CHECK(a.plan.kv_at_percentile == 314 * MiB);
    CHECK(a.plan.batch == 52);
    CHECK(a.plan.binding == FleetBinding::kv_budget);
    CHECK(a.decode_context == 2250);
    CHECK(a.plan.tpot_at_batch < 10 * milliseconds);
    // vLLM runs at most 1,024 sequences on an 80 GB H100 (vllm/engine/arg_utils.py).
    CHECK(a.max_batch == 1024);
    CHECK(a.max_batch_default);
    // The stay: the prefill bound of the 2,000-token prompt, then 499 tokens at the bound.
    const Seconds stay = a.prefill_bound_mean + a.plan.tpot_at_batch * 499.0;
    CHECK(a.plan.time_in_system.in(seconds) == Approx(stay.in(seconds)));
    CHECK(a.plan.replicas == static_cast<std::uint64_t>(std::ceil(10 * stay.in(seconds) / 52)));
    CHECK(a.gpus == a.plan.replicas);
    // No estimate asked, but the GPU's family has parameters: the estimate is beside it.
    CHECK(a.basis == EstimateBasis::family_fitted);
    REQUIRE(a.estimate);
    CHECK(a.estimate->running == 52);

    // A 2,000-token system prompt shared by every request: its floor(2,000 / 16) = 125 full
    // blocks, 250 MiB, held once; each request then 157 - 125 = 32 blocks of its own, 64 MiB:
    // floor((16,384 - 250) / 64) = 252 fit. Without sharing, 52 again.
    q.shared_prefix_tokens = 2000;
    const FleetAnswer s = plan_fleet(q);
    CHECK(s.shared_prefix_blocks == 125);  // floor(min(2,000, 2,499) / 16)
    CHECK(s.shared_prefix_held_once == 250 * MiB);
    CHECK(s.plan.kv_at_percentile == 64 * MiB);  // 157 - 125 = 32 blocks
    CHECK(s.plan.batch_kv == 252);
    REQUIRE(s.without_sharing);
    CHECK(s.without_sharing->batch == 52);
    // At the batch each request after the first does not hold the prefix again: 250 MiB x
    // (batch - 1). Without a prefix nothing is saved.
    CHECK(s.shared_prefix_saved_at_batch == 250 * MiB * (s.plan.batch - 1));
    CHECK(a.shared_prefix_saved_at_batch.is_zero());
    // The fleet's output: 10 requests/s x 500 output tokens = 5,000 tokens/s.
    CHECK(a.output_tokens_per_s == Approx(5000.0));

    // Out of range: named.
    q.rate_per_s = 0;
    CHECK_THROWS_WITH(plan_fleet(q), Catch::Contains("rate"));
    q.rate_per_s = 10;
    q.shared_prefix_tokens = 2001;
    CHECK_THROWS_AS(plan_fleet(q), InvalidInput);
}

TEST_CASE("a TTFT target binds the fleet's batch as it binds the aggregated pool's", "[fleet]") {
    // Llama-3.1-70B on tp 4 x H100 at 2,000 + 500 tokens: the estimate's TTFT grows with the batch
    // running (each prefill chunk rides along more decodes), so a TTFT target just above the
    // TTFT at batch 20 stops the batch at 20, and the binding says so.
    const Model m = bundled("llama-3.1-70b");
    FleetRequest q{
        .deployment = {.model = m, .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 4}},
        .lengths = fixed(2000, 500),
        .rate_per_s = 20,
        .tpot_target = 0.05 * seconds};
    const FleetAnswer free = plan_fleet(q);
    REQUIRE(free.plan.feasible);
    CHECK(free.plan.batch_ttft_capped);
    // The TTFT at 20 running, from the same estimate the plan uses.
    const DecodeCosts c = decode_costs(Replica{.model = m,
                                               .gpu = bundled_gpu("h100-sxm"),
                                               .parallel = {.tp = 4},
                                               .weights = checkpoint_weights(m)},
                                       RooflineOptions{});
    const EstimateParams hopper = default_params(bundled_gpu("h100-sxm"))->params;
    const Seconds at20 = estimate_with_batch(c, 20, 2000, 500, std::nullopt, hopper).ttft;
    const Seconds at21 = estimate_with_batch(c, 21, 2000, 500, std::nullopt, hopper).ttft;
    REQUIRE(at21 > at20);
    q.ttft_target = at20 + (at21 - at20) * 0.5;
    const FleetAnswer bound = plan_fleet(q);
    CHECK(bound.plan.batch == 20);
    CHECK(bound.plan.binding == FleetBinding::ttft);
}

TEST_CASE("a fleet of the GPUs deployed says whether it serves the rate, and what rate",
          "[fleet]") {
    // The first test's replica (tp 4 x H100 SXM, batch 86, a stay of 25.230 s, 6 replicas for
    // 20 requests/s). 16 GPUs are 4 replicas: by Little's law they serve 4 x 86 / 25.230 = 13.635
    // requests/s, short of 20; 24 GPUs, 6 replicas, serve 6 x 86 / 25.230 = 20.45.
    const Model m = bundled("llama-3.1-70b");
    FleetRequest q{
        .deployment = {.model = m, .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 4}},
        .lengths = fixed(2000, 500),
        .rate_per_s = 20.0,
        .tpot_target = 0.05 * seconds,
        .ttft_target = 1.0 * seconds,
    };
    const FleetAnswer none = plan_fleet(q);
    CHECK(none.gpus_given == 0);
    CHECK_FALSE(none.given_serves);
    q.deployment.gpus = 16;
    const FleetAnswer four = plan_fleet(q);
    REQUIRE(four.plan.feasible);
    CHECK(four.plan.batch == 86);
    CHECK(four.plan.replicas == 6);
    const double stay = four.plan.time_in_system.in(seconds);
    CHECK(stay == Approx(25.230).epsilon(1e-4));
    CHECK((four.gpus_given == 16 && four.replicas_given == 4));
    CHECK_FALSE(four.given_serves);
    CHECK(four.rate_given_serves == Approx(4 * 86 / stay));
    CHECK(four.rate_given_serves == Approx(13.635).epsilon(1e-4));
    q.deployment.gpus = 24;
    const FleetAnswer six = plan_fleet(q);
    CHECK(six.replicas_given == 6);
    CHECK(six.given_serves);
    CHECK(six.rate_given_serves == Approx(6 * 86 / stay));
    CHECK(six.rate_given_serves >= 20.0);
    // GPUs that are not whole replicas of 4 are refused by name.
    q.deployment.gpus = 6;
    CHECK_THROWS_AS(plan_fleet(q), InvalidLayout);
    CHECK_THROWS_WITH(plan_fleet(q),
                      Catch::Contains("gpus: expected a multiple of the replica's 4"));
    // A drafter is refused, not ignored: the fleet's steps and KV are the model's own.
    q.deployment.gpus = 0;
    q.deployment.serving.speculation = {.method = DraftMethod::ngram, .tokens = 3};
    CHECK_THROWS_WITH(plan_fleet(q), Catch::Contains("speculation: expected none (the fleet is "
                                                     "sized without a drafter") &&
                                         Catch::EndsWith("found ngram"));
}
