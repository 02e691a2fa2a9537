// Disaggregated prefill and decode pools against the aggregated plan (plan/disaggregated.hpp).

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/plan.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

TEST_CASE("a disaggregated plan for Llama-3.1-70B sizes both pools as the hand calculation does",
          "[disaggregated]") {
    // Llama-3.1-70B in bf16 on H100 SXM replicas of 8 GPUs, 100 requests a second of 2,000 prompt
    // and 200 output tokens, TTFT within 500 ms and TPOT within 25 ms, the KV moved over
    // InfiniBand NDR (50 GB/s per GPU). Timed at peak (LatencyModel::bound) so that every step is
    // bytes / 3.35 TB/s, FLOPs / 989.4 TFLOP/s and the all-reduce's bytes / 450 GB/s. Of the four
    // 8-GPU layouts (tp 1, 2, 4, 8 with pp 8, 4, 2, 1) tp 8 is fastest for both pools: a token
    // passes every pipeline stage in turn.
    const Model m = bundled("llama-3.1-70b");
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm")};
    space.min_gpus = space.max_gpus = 8;
    const DisaggDemand demand{.rate = 100.0,
                              .prompt_tokens = 2000,
                              .output_tokens = 200,
                              .ttft = 0.5 * seconds,
                              .tpot = 0.025 * seconds};
    DisaggOptions o;
    o.latency = LatencyModel::bound;
    const DisaggPlan p = plan_disaggregated(m, space, {}, demand, o);
    REQUIRE(p.prefill);
    REQUIRE(p.decode);
    REQUIRE(p.aggregated);
    CHECK(p.prefill->candidate.answer.replica.parallel.tp == 8);
    CHECK(p.decode->candidate.answer.replica.parallel.tp == 8);

    // A rank at tp 8 multiplies, per token: per layer q 8,192 x 1,024, k and v 8,192 x 128 (one of
    // the 8 KV heads), o 1,024 x 8,192, gate and up 8,192 x 3,584, down 3,584 x 8,192, times 80
    // layers; and the LM head's 128,256 / 8 = 16,032 rows of 8,192.
    const double layer = 8192.0 * 1024 + 2 * 8192.0 * 128 + 1024.0 * 8192 + 3 * 8192.0 * 3584;
    const double matmul = 80 * layer + 16032.0 * 8192;
    CHECK(matmul == 8'687'714'304.0);
    // Its weights (bf16) less the embedding it only looks up: the matmuls and 2 x 80 + 1 norms of
    // 8,192, 17,378,066,432 B. Its KV: one KV head, 2 x 128 x 2 B x 80 layers = 40,960 B a token.
    const double weights_read = 2 * matmul + 2.0 * 8192 * 161;
    CHECK(weights_read == 17'378'066'432.0);
    const double kv_token = 40'960;
    const double bw = 3.35e12, peak = 989.4e12, nvlink = 450e9;
    // The ring all-reduce: 2 per layer of tokens x 8,192 x 2 B, each moving 2 x 7/8 of it.
    const auto all_reduce = [&](double tokens) {
        return tokens * 8192 * 2 / nvlink * 2 * (2 * 7.0 / 8) * 80;
    };

    // Prefill: one prompt of 2,000 tokens (within vLLM's 8,192-token budget: one pass), bound by
    // compute: 2 x the layers' matmuls x 2,000, the LM head once (at the prompt's last token, the
    // one sampled), plus causal attention, 80 layers x 2 x 8 heads x (128 + 128) x
    // (1 + ... + 2,000); then its all-reduce.
    const double head = 16032.0 * 8192;
    const double flops =
        2 * (matmul - head) * 2000 + 2 * head + 80 * 2.0 * 8 * 256 * (2000.0 * 2001 / 2);
    const double t_p = flops / peak + all_reduce(2000);  // 35.26 ms + 20.39 ms = 55.64 ms
    CHECK(p.prefill->passes == 1);
    CHECK(p.prefill->service.in(seconds) == Approx(t_p));
    // The decode pool pulls the prompt's KV: 2,000 x 40,960 B per decode GPU over 50 GB/s.
    CHECK(p.transfer.bytes_per_rank.count() == 2000 * 40'960);
    const double t_x = 2000 * kv_token / 50e9;  // 1.64 ms
    CHECK(p.prefill->transfer.in(seconds) == Approx(t_x));
    // M/D/1: slack S = 0.5 - t_p - t_x, rho_max = 2 S / (t_p + 2 S), servers =
    // ceil(100 x t_p / rho_max) = ceil(5.91) = 6, one per replica (dp 1): 48 GPUs.
    const double slack = 0.5 - t_p - t_x;
    const double rho_max = 2 * slack / (t_p + 2 * slack);
    const auto servers = static_cast<std::uint64_t>(std::ceil(100 * t_p / rho_max));
    CHECK(servers == 6);
    CHECK(p.prefill->servers == servers);
    CHECK(p.prefill->replicas == 6);
    CHECK(p.prefill->gpus == 48);
    const double rho = 100 * t_p / 6;
    CHECK(p.prefill->utilization == Approx(rho));
    CHECK(p.prefill->ttft.in(seconds) == Approx(rho * t_p / (2 * (1 - rho)) + t_p + t_x));
    CHECK(p.prefill->ttft <= demand.ttft);

    // Decode at the mean context 2,000 + 200 / 2 = 2,100, bound by memory: TPOT(B) = (weights +
    // B x 2,100 x 40,960 B) / 3.35 TB/s + the all-reduce of B tokens. The largest B within 25 ms is
    // floor((25 ms - weights / bw) / (2,100 x 40,960 / bw + all_reduce(1))) = 552, which the
    // caches hold (638 sequences of 2,200 tokens: below).
    const auto tpot = [&](double b) {
        return (weights_read + b * 2100 * kv_token) / bw + all_reduce(b);
    };
    const auto batch = static_cast<std::uint64_t>(
        std::floor((0.025 - weights_read / bw) / (2100 * kv_token / bw + all_reduce(1))));
    CHECK(batch == 552);
    CHECK(2 * matmul * 552 / peak < (weights_read + 552 * 2100 * kv_token) / bw);  // memory-bound
    CHECK(p.decode->batch == batch);
    CHECK(p.decode->tpot.in(seconds) == Approx(tpot(552)));
    // vLLM's cache per GPU: ceil(0.92 x 85,029,027,840) - weights 17,640,734,720 - the rotary
    // table (131,072 positions x 128 x 2 B = 32 MiB, rotary_embedding/base.py) - activation
    // (16,384 x 2 x (2 x 8,192 + max(3 x 3,584, 3,584 + 2 x 8,192)): the out-of-place all-reduce
    // holds its output beside the MLP's (pynccl.py), + 1,024 x 128,256 x 6 B of logits; vLLM's
    // 16,384 tokens from v0.28) - graphs 512 MiB - NCCL's NVLS buffers at tp 8 (the profile's
    // 256 MiB all-reduces pass symmetric memory's 64 MiB: 16 channels x 2 x 8 steps x 128 KiB x
    // 8 = 256 MiB, engine/nccl.hpp); in blocks of 16 x 40,960 B, one kept null; a sequence of
    // 2,200 tokens takes 138 of them.
    const std::uint64_t kv = 78'226'705'613ULL - 17'640'734'720ULL - 32ULL * 1024 * 1024 -
                             (16384ULL * 2 * (2 * 8192 + 3584 + 2 * 8192) + 1024ULL * 128'256 * 6) -
                             512ULL * 1024 * 1024 - 256ULL * 1024 * 1024;
    const std::uint64_t blocks = kv / (16 * 40'960);             // 88,147
    CHECK(p.decode->batch_cap == 1 + (blocks - 1 - 138) / 138);  // 638
    // Little's law: the pool holds 100 x 200 x TPOT sequences; one replica of 552 suffices.
    const double per_replica = 552 / (200 * tpot(552));  // 110.4 requests per second
    CHECK(p.decode->requests_per_s == Approx(per_replica));
    CHECK(p.decode->replicas == 1);
    CHECK(p.decode->gpus == 8);

    // 48 + 8 = 56 GPUs disaggregated. Aggregated, a replica runs its requests' prefill chunks
    // beside the decodes, which slows every decode step: at TPOT within 25 ms it runs fewer at
    // once, and needs ceil(100 x request time / concurrency) replicas.
    CHECK(p.gpus == 56);
    const AggregatedPool& agg = *p.aggregated;
    CHECK(agg.tpot <= demand.tpot);
    CHECK(agg.ttft <= demand.ttft);
    CHECK(agg.replicas ==
          static_cast<std::uint32_t>(
              std::ceil(100 * agg.request.in(seconds) / static_cast<double>(agg.concurrency))));
    CHECK(agg.gpus == 8 * agg.replicas);
    CHECK(agg.gpus == 64);
    CHECK(p.disaggregated_smaller);
}

TEST_CASE("the pools refuse targets one request already misses", "[disaggregated]") {
    const Model m = bundled("llama-3.1-70b");
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm")};
    space.min_gpus = space.max_gpus = 8;
    // A TPOT of 1 ms is below reading the weights once (17.4 GB / 3.35 TB/s = 5.2 ms).
    const DisaggDemand tight{.rate = 1.0,
                             .prompt_tokens = 2000,
                             .output_tokens = 200,
                             .ttft = 0.5 * seconds,
                             .tpot = 0.001 * seconds};
    const DisaggPlan p = plan_disaggregated(m, space, {}, tight, {.latency = LatencyModel::bound});
    CHECK_FALSE(p.decode);
    CHECK_FALSE(p.aggregated);
    CHECK(p.gpus == 0);
    CHECK_THAT(p.note, Catch::Contains("disaggregated") && Catch::Contains("aggregated"));
    // A demand out of range is refused by name.
    DisaggDemand bad = tight;
    bad.rate = 0.0;
    CHECK_THROWS_WITH(plan_disaggregated(m, space, {}, bad), Catch::Contains("rate"));
}

TEST_CASE("the latency estimate sizes larger pools than the bound", "[disaggregated]") {
    // The estimate adds what the bound leaves out (achieved fractions of peak, fixed costs per
    // layer and all-reduce), so each step is slower and a pool needs at least as many GPUs.
    const Model m = bundled("llama-3.1-70b");
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm")};
    space.min_gpus = space.max_gpus = 8;
    const DisaggDemand demand{.rate = 100.0,
                              .prompt_tokens = 2000,
                              .output_tokens = 200,
                              .ttft = 0.5 * seconds,
                              .tpot = 0.04 * seconds};
    const DisaggPlan bound =
        plan_disaggregated(m, space, {}, demand, {.latency = LatencyModel::bound});
    const DisaggPlan est = plan_disaggregated(m, space, {}, demand);
    REQUIRE(bound.prefill);
    REQUIRE(est.prefill);
    CHECK(est.prefill->fitted);
    CHECK(est.prefill->service > bound.prefill->service);
    CHECK(est.prefill->gpus >= bound.prefill->gpus);
    REQUIRE(est.decode);
    CHECK(est.decode->gpus >= bound.decode->gpus);
}

TEST_CASE("a disaggregated link is named, given per GPU, or the decode GPU's node figure",
          "[disaggregated][link]") {
    // ib-ndr: 400 Gb/s = 50 GB/s each way; ib-hdr: 200 Gb/s = 25 GB/s (transfer.hpp).
    const auto ndr = parse_disagg_link("ib-ndr");
    REQUIRE(ndr);
    CHECK_FALSE(ndr->node);
    CHECK(ndr->link.bandwidth.in(GB_per_s) == 50.0);
    CHECK(parse_disagg_link("ib-hdr")->link.bandwidth.in(GB_per_s) == 25.0);
    // A bandwidth per GPU in GB/s (10^9 B/s): 12.5GB/s is 12,500,000,000 B/s.
    const auto given = parse_disagg_link("12.5GB/s");
    REQUIRE(given);
    CHECK(given->link.bandwidth.in(B_per_s) == 12.5e9);
    CHECK(given->link.scope == LinkScope::per_gpu);
    CHECK(parse_disagg_link("node")->node);
    for (const char* bad : {"5", "GB/s", "0GB/s", "-3GB/s", "25 GB/s", "25GiB/s", "ib", ""})
        CHECK_FALSE(parse_disagg_link(bad));
    // node: the H100 SXM spec's node.GB_per_s_per_direction, 50 (one ConnectX-7 a GPU); the
    // H100 PCIe spec states none, and the library says which field it lacks.
    const DisaggLink node{.node = true};
    CHECK(link_to(node, bundled_gpu("h100-sxm")).bandwidth.in(GB_per_s) == 50.0);
    CHECK_THROWS_AS(link_to(node, bundled_gpu("h100-pcie")), InvalidInput);
    CHECK_THROWS_WITH(link_to(node, bundled_gpu("h100-pcie")),
                      Catch::StartsWith("GPU 'h100-pcie': node.GB_per_s_per_direction: expected"));
    CHECK(link_to(*given, bundled_gpu("h100-pcie")).bandwidth.in(B_per_s) == 12.5e9);
}

TEST_CASE("the KV crosses the link given, and a trace's lengths are read at one percentile",
          "[disaggregated][link]") {
    // The first test's deployment at peak: the decode pool pulls 2,000 x 40,960 B a GPU, 1.64 ms
    // over NDR's 50 GB/s; over 12.5 GB/s four times as long, 6.5536 ms.
    const Model m = bundled("llama-3.1-70b");
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm")};
    space.min_gpus = space.max_gpus = 8;
    const DisaggDemand demand{.rate = 100.0,
                              .prompt_tokens = 2000,
                              .output_tokens = 200,
                              .ttft = 0.5 * seconds,
                              .tpot = 0.025 * seconds};
    DisaggOptions o;
    o.latency = LatencyModel::bound;
    o.link = *parse_disagg_link("12.5GB/s");
    const DisaggPlan slow = plan_disaggregated(m, space, {}, demand, o);
    REQUIRE(slow.gpus != 0);
    CHECK(slow.transfer.bytes_per_rank.count() == 2000 * 40'960);
    CHECK(slow.transfer.time.in(seconds) == Approx(2000 * 40'960 / 12.5e9));
    CHECK(slow.prefill->transfer.in(seconds) == Approx(0.0065536));
    // node: the H100 SXM's own 50 GB/s, as ib-ndr.
    o.link = DisaggLink{.node = true};
    const DisaggPlan node = plan_disaggregated(m, space, {}, demand, o);
    CHECK(node.transfer.time.in(seconds) == Approx(2000 * 40'960 / 50e9));
    CHECK(node.transfer.link.name == node_link_name);
    // A GPU of the search without a node figure is refused before any pool is sized.
    space.gpus.push_back(bundled_gpu("h100-pcie"));
    CHECK_THROWS_WITH(plan_disaggregated(m, space, {}, demand, o),
                      Catch::Contains("node.GB_per_s_per_direction"));

    // Nearest-rank percentiles of 20 requests: prompts 100, 200, ..., 2,000 and outputs 2,000,
    // 1,900, ..., 100. p50 is the 10th smallest (ceil(0.5 x 20)), p95 the 19th, p99 the 20th:
    // each of prompt and output at its own rank, not the same request's.
    Trace t;
    for (std::uint64_t i = 1; i <= 20; ++i)
        t.requests.push_back({.prompt_tokens = 100 * i, .output_tokens = 100 * (21 - i)});
    const TraceLengths len = trace_lengths(t);
    const LengthsAt p50 = lengths_at(len, LengthPercentile::p50);
    CHECK((p50.prompt_tokens == 1000 && p50.output_tokens == 1000 && p50.requests == 20));
    const LengthsAt p95 = lengths_at(len);
    CHECK(p95.percentile == LengthPercentile::p95);
    CHECK((p95.prompt_tokens == 1900 && p95.output_tokens == 1900));
    const LengthsAt top = lengths_at(len, *parse_length_percentile("max"));
    CHECK((top.prompt_tokens == 2000 && top.output_tokens == 2000));
    CHECK(lengths_at(len, LengthPercentile::p99).prompt_tokens == 2000);
    CHECK_FALSE(parse_length_percentile("90"));
    CHECK(std::string(name(LengthPercentile::p95)) == "95");
}

TEST_CASE("a disaggregated plan refuses speculative decoding by name", "[disaggregated]") {
    // The pools' steps and the KV moved are the model's own: a drafter is refused, not ignored.
    const Model m = bundled("llama-3.1-70b");
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm")};
    space.min_gpus = space.max_gpus = 8;
    Serving s;
    s.speculation = {.method = DraftMethod::eagle, .tokens = 3};
    const DisaggDemand demand{.rate = 1.0,
                              .prompt_tokens = 2000,
                              .output_tokens = 200,
                              .ttft = 0.5 * seconds,
                              .tpot = 0.025 * seconds};
    CHECK_THROWS_AS(plan_disaggregated(m, space, s, demand), InvalidInput);
    CHECK_THROWS_WITH(plan_disaggregated(m, space, s, demand),
                      Catch::Contains("speculation: expected none (the pools are sized without a "
                                      "drafter") &&
                          Catch::EndsWith("found eagle"));
}
