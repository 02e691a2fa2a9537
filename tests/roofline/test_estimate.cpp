// kvplan/roofline/estimate.hpp: each term of the estimate on a case derived by hand.
//
// The case: Llama-3-8B (presets.hpp) in bf16 on a made-up GPU with round figures: 1 TB/s,
// 100 TFLOP/s bf16, a 100 GB/s link, 80 GiB (so vLLM's defaults are 8,192 tokens and 1,024
// sequences a step). Llama-3-8B's matmul parameters per token, from its config:
//   per layer  q 4096 x 4096 = 16,777,216; k and v 4096 x 1024 = 4,194,304 each; o 16,777,216;
//              gate, up, down 3 x 4096 x 14336 = 176,160,768; together 218,103,808
//   32 layers  6,979,321,856; LM head 128256 x 4096 = 525,336,576; total 7,504,658,432
//   norms      2 x 4096 per layer x 32 + 4096 final = 266,240 (read, not multiplied)
// A decode step reads every weight but the input embedding table: 2 B x (7,504,658,432 + 266,240)
// = 15,009,849,344 B. KV per token in bf16: 2 x 32 layers x 8 heads x 128 x 2 B = 131,072 B.
// Attention per token attended: 2 x 32 heads x (128 + 128) x 32 layers = 524,288 FLOP.

#include <catch2/catch.hpp>
#include <cmath>
#include <kvplan/presets.hpp>
#include <kvplan/roofline/estimate.hpp>

#include "support/bundled_models.hpp"

using namespace kvplan;

namespace {

GpuSpec round_gpu() {
    return gpus::detail::make("round", "Round-figure GPU", 80'000'000'000, 80ULL << 30, 1.0,
                              {50, 100, 100, 0, 0, 0}, 100, 32);
}

Replica llama_8b(std::uint32_t tp = 1, std::uint32_t pp = 1) {
    return Replica{.model = presets::llama_3_8b,
                   .gpu = round_gpu(),
                   .parallel = {.tp = tp, .pp = pp},
                   .weights = {.format = WeightFormat::bf16},
                   .kv = KvDtype::bf16};
}

constexpr double w_bytes = 15'009'849'344.0;
constexpr double kv_token_bytes = 131'072.0;
constexpr double matmul_per_token = 7'504'658'432.0;
constexpr double attn_per_token = 524'288.0;

const EstimateParams half{.bandwidth = 0.5,
                          .compute = 0.5,
                          .layer_overhead = 10.0 * microseconds,
                          .all_reduce_latency = 5.0 * microseconds};

}  // namespace

TEST_CASE("a decode step reads the weights once and every sequence's KV at the achieved bandwidth",
          "[estimate]") {
    // Static batch of 1, prompt 1,000, output 2: the decode step is at the mean context
    // 1000 + 2/2 = 1,001 tokens. Bytes 15,009,849,344 + 1,001 x 131,072 = 15,141,052,416;
    // at 1 TB/s x 0.5 that is 0.030282104832 s.
    const LatencyEstimate e = estimate_latency(
        llama_8b(), {.kind = LoadKind::static_batch, .prompt_tokens = 1000, .output_tokens = 2},
        half);
    CHECK(e.mean_context == 1001);
    CHECK(e.decode_step.bytes.count() == 15'141'052'416ULL);
    CHECK(e.decode_step.memory.in(seconds) == Approx((w_bytes + 1001 * kv_token_bytes) / 0.5e12));
    CHECK(e.decode_step.bound == Bound::memory);
}

TEST_CASE("a decode step's FLOPs are its matmuls and its attention at the achieved throughput",
          "[estimate]") {
    // 2 x 7,504,658,432 + 524,288 x 1,001 = 15,534,129,152 FLOP; at 100 TFLOP/s x 0.5,
    // 0.00031068258304 s.
    const LatencyEstimate e = estimate_latency(
        llama_8b(), {.kind = LoadKind::static_batch, .prompt_tokens = 1000, .output_tokens = 2},
        half);
    const double flops = 2 * matmul_per_token + attn_per_token * 1001;
    CHECK(e.decode_step.flops.in(FLOP) == Approx(flops));
    CHECK(e.decode_step.compute.in(seconds) == Approx(flops / 50e12));
}

TEST_CASE("attention given its own fraction runs at it, of the bf16 peak, beside the GEMMs",
          "[estimate]") {
    // The decode step above with attention at 0.25: the matmuls' 2 x 7,504,658,432 =
    // 15,009,316,864 FLOP at 100 TFLOP/s x 0.5 take 300.18633728 us, attention's 524,288 x 1,001
    // = 524,812,288 FLOP at 100 TFLOP/s x 0.25 take 20.99249152 us: 321.1788288 us together.
    EstimateParams p = half;
    p.attention = 0.25;
    const Load l{.kind = LoadKind::static_batch, .prompt_tokens = 1000, .output_tokens = 2};
    const LatencyEstimate e = estimate_latency(llama_8b(), l, p);
    CHECK(e.decode_step.flops.in(FLOP) == Approx(2 * matmul_per_token + attn_per_token * 1001));
    CHECK(e.decode_step.compute.in(microseconds) == Approx(321.1788288));
    // At the GEMMs' own fraction it is the one-fraction step, to rounding.
    p.attention = 0.5;
    CHECK(estimate_latency(llama_8b(), l, p).decode_step.compute.in(seconds) ==
          Approx(estimate_latency(llama_8b(), l, half).decode_step.compute.in(seconds)));
}

TEST_CASE("every layer adds its fixed overhead to a step", "[estimate]") {
    // 32 layers x 10 us = 320 us; tp 1 has no all-reduce; the step is memory time + 320 us.
    const LatencyEstimate e = estimate_latency(
        llama_8b(), {.kind = LoadKind::static_batch, .prompt_tokens = 1000, .output_tokens = 2},
        half);
    CHECK(e.decode_step.layers.in(microseconds) == Approx(320.0));
    CHECK(e.decode_step.all_reduce.in(seconds) == 0.0);
    CHECK(e.decode_step.time.in(seconds) ==
          Approx((w_bytes + 1001 * kv_token_bytes) / 0.5e12 + 320e-6));
}

TEST_CASE("each tensor-parallel all-reduce costs its latency plus its bytes over the link",
          "[estimate]") {
    // tp 2, one decode: a message of 1 token x 4,096 x 2 B = 8,192 B; a ring moves 2 (2 - 1) / 2
    // = 1 message over the 100 GB/s link: 81.92 ns. Two all-reduces per layer, each 5 us + 81.92
    // ns, over 32 layers: 32 x 2 x 5.08192 us = 325.24288 us.
    const LatencyEstimate e = estimate_latency(
        llama_8b(2), {.kind = LoadKind::static_batch, .prompt_tokens = 1000, .output_tokens = 2},
        half);
    CHECK(e.decode_step.all_reduce.in(microseconds) == Approx(325.24288));
    // Each rank reads half the matmul weights (the 266,240 norm values stay whole on both).
    CHECK(e.decode_step.layers.in(microseconds) == Approx(320.0));
}

TEST_CASE(
    "a prefill step does its FLOPs, the causal attention included, at the achieved throughput",
    "[estimate]") {
    // One prompt of 4,096 tokens fits the 8,192-token budget: one pass. Matmuls: the 32 layers at
    // every token, 2 x 6,979,321,856 x 4,096 = 57,174,604,644,352 FLOP, and the LM head at the
    // last only (the position sampled), 2 x 525,336,576 = 1,050,673,152; causal attention
    // 524,288 x 4,096 x 4,097 / 2 = 4,399,120,252,928 FLOP (token i attends to i tokens); together
    // 61,574,775,570,432 FLOP, at 50 TFLOP/s 1.23149551140864 s. Bytes: weights + the KV written,
    // 4,096 x 131,072 = 536,870,912.
    const LatencyEstimate e = estimate_latency(
        llama_8b(), {.kind = LoadKind::static_batch, .prompt_tokens = 4096, .output_tokens = 1},
        half);
    CHECK(e.chunks == 1);
    const double flops =
        2 * 6'979'321'856.0 * 4096 + 2 * 525'336'576.0 + attn_per_token * 4096.0 * 4097.0 / 2.0;
    CHECK(flops == 61'574'775'570'432.0);
    CHECK(e.prefill_step.flops.in(FLOP) == Approx(flops));
    CHECK(e.prefill_step.bytes.count() == 15'009'849'344ULL + 536'870'912ULL);
    CHECK(e.prefill_step.bound == Bound::compute);
    CHECK(e.ttft.in(seconds) == Approx(flops / 50e12 + 320e-6));
    // One output token: the request is its prefill.
    CHECK(e.request == e.ttft);
}

TEST_CASE("a batch's prefill beyond the token budget takes passes that each read the weights",
          "[estimate]") {
    // 4 prompts of 4,096 = 16,384 tokens at 8,192 a pass (vLLM's budget before v0.28): 2 passes,
    // 2 x the weights and 2 x the 32 layers' overhead (640 us).
    const LatencyEstimate e = estimate_latency(llama_8b(),
                                               {.kind = LoadKind::static_batch,
                                                .concurrency = 4,
                                                .prompt_tokens = 4096,
                                                .output_tokens = 1,
                                                .max_num_batched_tokens = 8192},
                                               half);
    CHECK(e.chunks == 2);
    CHECK(e.chunk == 8192);
    CHECK(e.prefill_step.bytes.count() == 2 * 15'009'849'344ULL + 4 * 536'870'912ULL);
    CHECK(e.prefill_step.layers.in(microseconds) == Approx(640.0));
}

TEST_CASE("a static batch's latency is its prefill then O - 1 decode steps", "[estimate]") {
    const LatencyEstimate e = estimate_latency(llama_8b(),
                                               {.kind = LoadKind::static_batch,
                                                .concurrency = 8,
                                                .prompt_tokens = 128,
                                                .output_tokens = 20},
                                               half);
    CHECK(e.request.in(seconds) ==
          Approx(e.prefill_step.time.in(seconds) + 19 * e.decode_step.time.in(seconds)));
    // 8 x 20 tokens in that time.
    CHECK(e.tokens_per_s == Approx(160.0 / e.request.in(seconds)));
}

TEST_CASE("vLLM: other requests' prompt chunks ride along a share of a request's decode steps",
          "[estimate]") {
    // Concurrency 4, all running (vLLM's rules, the replica's default). A request prefills in one
    // step (1,000 < 8,192 - 4) and decodes 99: a lifetime of 100 steps. While it decodes, each of
    // the other 3 decodes 99 of its 100 steps and brings one prompt: d = 1 + 3 x 99 / 100 = 3.97
    // decodes (4 when timed) and 3 x 1,000 / 100 = 30 prompt tokens a step, in chunks of 1,000:
    // 0.03 of the steps carry one.
    const Load l{.concurrency = 4, .prompt_tokens = 1000, .output_tokens = 100, .max_running = 4};
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    CHECK(e.engine == ParallelRules::vllm);
    CHECK_FALSE(e.separate_prefill);
    CHECK_FALSE(e.prefill_limited);
    CHECK(e.running == 4);
    CHECK(e.chunk == 1000);
    CHECK(e.chunks == 1);
    CHECK(e.decodes_per_step == Approx(3.97));
    CHECK(e.prefill_per_step == Approx(30.0));
    CHECK(e.mixed_share == Approx(0.03));
    CHECK(e.decode_step.decodes == 4);
    CHECK(e.mixed_step.decodes == 4);
    CHECK(e.mixed_step.prefill_tokens == 1000);
    const double td = e.decode_step.time.in(seconds), tm = e.mixed_step.time.in(seconds);
    CHECK(e.itl.in(seconds) == Approx(0.97 * td + 0.03 * tm));
    CHECK(e.tpot == e.itl);
    // TTFT: vLLM's fixed cost per request, the forward in flight when it arrives (E[t^2] / 2
    // E[t] over the mix of steps), and its own chunk beside the other 2.97 (3) decodes; nobody
    // waits for a slot.
    CHECK(e.ttft_overhead == default_params(ParallelRules::vllm).request_overhead);
    CHECK(e.ttft_in_flight.in(seconds) ==
          Approx((0.97 * td * td + 0.03 * tm * tm) / (2.0 * (0.97 * td + 0.03 * tm))));
    CHECK(e.prefill_step.decodes == 3);
    // Its prompt holds the budget for its share of what the decodes leave, 1,000 of
    // budget - 3.97 tokens, of a full step (4 decodes at 1,050 tokens of context and the rest of
    // the budget in prompt tokens); at least its own matmuls at 50 TFLOP/s, the layers' at every
    // token and the LM head's at its last, 2 x (6,979,321,856 x 1,000 + 525,336,576) / 50e12
    // = 0.2792 s. The other 3 bring theirs as often as they
    // cycle: it waits rho S / (2 (1 - rho)), rho = 3 S / a request's time.
    const double room = static_cast<double>(e.token_budget) - 3.97;
    const StepTerms full =
        detail::step(decode_costs(llama_8b()), 4, 1050, {1, 1000, room / 1000.0, 1}, half);
    CHECK(e.prefill_service.in(seconds) == Approx(full.time.in(seconds)*1000.0 / room));
    CHECK(e.prefill_service.in(seconds) > 2.0 * (6'979'321'856.0 * 1000.0 + 525'336'576.0) / 50e12);
    const Seconds alone = e.request - e.ttft_prefill_wait;
    CHECK(e.ttft_prefill_wait == detail::prefill_queue_wait(e.prefill_service, alone, 4));
    CHECK(e.ttft_prefill_wait > Seconds{});
    CHECK(e.ttft_prefill == e.prefill_step.time + e.ttft_prefill_wait);
    CHECK(e.ttft_queue.in(seconds) == 0.0);
    CHECK(e.ttft == e.ttft_overhead + e.ttft_in_flight + e.ttft_prefill);
    // 4 requests of 100 tokens per request time.
    CHECK(e.request == e.ttft_in_flight + e.ttft_prefill + e.itl * 99.0);
    CHECK(e.tokens_per_s == Approx(400.0 / e.request.in(seconds)));
}

TEST_CASE("a prompt's last chunk costs the step it rides, not a full chunk's", "[estimate]") {
    // 2 clients of 8,192 + 100 tokens under vLLM's budget of 8,192: a chunk is what the budget
    // leaves beside the 2 running, 8,190 tokens, so a prompt takes 2 chunks, the second of 2
    // tokens (scheduler.py schedule gives a request what is left of its prompt). A lifetime of
    // 2 + 99 steps: beside its own chunk run d - 1 = 99 / 101 = 0.98 decodes (1, rounded) and the
    // other's prompt, 8,192 / 101 = 81.1 tokens a step on average; its last chunk's step carries
    // that, the larger of the two.
    const Load l{.concurrency = 2,
                 .prompt_tokens = 8192,
                 .output_tokens = 100,
                 .max_num_batched_tokens = 8192,
                 .max_running = 2};
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    CHECK(e.chunk == 8190);
    CHECK(e.chunks == 2);
    CHECK_FALSE(e.prefill_limited);
    // Context I + O / 2 = 8,242; the first chunk: 8,190 of the 8,192 tokens, the second 81.1.
    const DecodeCosts c = decode_costs(llama_8b(), {});
    const StepTerms first = detail::step(c, 1, 8242, {1, 8192, 8190.0 / 8192.0, 1}, half);
    const StepTerms last = detail::step(c, 1, 8242, {1, 8192, (8192.0 / 101.0) / 8192.0, 1}, half);
    CHECK(e.prefill_step.time == first.time);
    // Its own prefill, before the wait for the other's prompt: one full step and one short one.
    CHECK((e.ttft_prefill - e.ttft_prefill_wait).in(seconds) ==
          Approx((first.time + last.time).in(seconds)));
    CHECK(last.time < first.time * 0.1);
}

TEST_CASE("a prompt multiplies the LM head at its last position only", "[estimate]") {
    // The LM head is 128,256 x 4,096 = 525,336,576 parameters, half a GPU's at tp 2.
    CHECK(detail::rank_matmul_params(presets::llama_3_8b, llama_8b().layout(), 0).head ==
          525'336'576.0);
    CHECK(detail::rank_matmul_params(presets::llama_3_8b, llama_8b(2).layout(), 0).head ==
          262'668'288.0);
    // One prompt of 1,000 tokens alone in a step: the 32 layers' 6,979,321,856 parameters at
    // each token, the LM head at one, and causal attention over 1,000 x 1,001 / 2 = 500,500
    // pairs: 2 x 6,979,321,856 x 1,000 + 2 x 525,336,576 + 524,288 x 500,500
    // = 13,958,643,712,000 + 1,050,673,152 + 262,406,144,000 = 14,222,100,529,152 FLOP.
    const DecodeCosts c = decode_costs(llama_8b(), {});
    const StepTerms one = detail::step(c, 0, 0, {1, 1000, 1.0, 1}, half);
    CHECK(one.flops.in(FLOP) == Approx(14'222'100'529'152.0));
    // Two such prompts in one step: two sampled positions, twice everything.
    const StepTerms two = detail::step(c, 0, 0, {1, 1000, 2.0, 1}, half);
    CHECK(two.flops.in(FLOP) == Approx(2.0 * 14'222'100'529'152.0));
    // Four decodes beside the prompt each sample their one token: 4 x 2 x 7,504,658,432 more,
    // and their attention over 1,050 tokens of context, 4 x 524,288 x 1,050.
    const StepTerms mixed = detail::step(c, 4, 1050, {1, 1000, 1.0, 1}, half);
    CHECK(mixed.flops.in(FLOP) ==
          Approx(14'222'100'529'152.0 + 4 * 2 * matmul_per_token + 4 * attn_per_token * 1050));
}

TEST_CASE("vLLM's FlashAttention 3 over an fp8 KV cache on Hopper runs attention at the fp8 peak",
          "[estimate]") {
    // vLLM quantizes the query to e4m3 over an fp8 cache and FA3 multiplies in fp8
    // (vllm/v1/attention/backends/flash_attn.py); elsewhere attention stays in bf16, and beside
    // bf16 GEMMs too (the bound times every FLOP at the GEMMs' peak).
    const Replica r8{.model = presets::llama_3_8b,
                     .gpu = gpus::h100_sxm,
                     .weights = {.format = WeightFormat::fp8},
                     .kv = KvDtype::fp8_e4m3};
    constexpr ComputeDtype fp8 = ComputeDtype::fp8;
    CHECK(detail::attention_compute(r8, fp8) == ComputeDtype::fp8);
    CHECK(detail::attention_compute(r8, ComputeDtype::bf16) == ComputeDtype::bf16);
    Replica r16 = r8;
    r16.kv = KvDtype::bf16;
    CHECK(detail::attention_compute(r16, fp8) == ComputeDtype::bf16);
    Replica e5m2 = r8;
    e5m2.kv = KvDtype::fp8_e5m2;
    CHECK(detail::attention_compute(e5m2, fp8) == ComputeDtype::bf16);
    Replica sglang = r8;
    sglang.parallel.rules = ParallelRules::sglang;
    CHECK(detail::attention_compute(sglang, fp8) == ComputeDtype::bf16);
    Replica ampere = r8;
    ampere.gpu = gpus::a100_sxm4_80gb;
    CHECK(detail::attention_compute(ampere, fp8) == ComputeDtype::bf16);
    Replica mla = r8;
    mla.model = presets::deepseek_v3;
    CHECK(detail::attention_compute(mla, fp8) == ComputeDtype::bf16);
    // A 1,000-token prompt's causal attention, 524,288 x 500,500 = 262,406,144,000 FLOP, at half
    // of H100's fp8 peak (1,978.9 TFLOP/s) rather than half of its bf16 one (989.4): the two
    // steps' compute (their GEMMs in fp8 alike) differs by that alone.
    const EstimateParams p{.bandwidth = 1.0, .compute = 0.5, .attention = 0.5};
    const StepTerms s8 = detail::step(decode_costs(r8), 0, 0, {1, 1000, 1.0, 1}, p);
    const StepTerms s16 = detail::step(decode_costs(r16), 0, 0, {1, 1000, 1.0, 1}, p);
    const double attention = 262'406'144'000.0;
    CHECK((s16.compute - s8.compute).in(seconds) ==
          Approx(attention / (0.5 * 989.4e12) - attention / (0.5 * 1978.9e12)));
}

TEST_CASE("when decodes and prompts want more than the token budget, the budget sets the rate",
          "[estimate]") {
    // 100 running, prompts of 20,000 and 50 out: chunks of 8,192 - 100 = 8,092, 3 a prompt, a
    // lifetime of 3 + 49 = 52 steps. The 100 would want 100 x 20,049 / 52 = 38,556 tokens a
    // step, above 8,192: every step is full, with 8,192 x 49 / 20,049 = 20.02 decodes and
    // 8,171.98 prompt tokens (1.0099 chunks of 8,092, the second cut at the 8,171.98 left).
    // A budget of 8,192 tokens (vLLM's before v0.28).
    const Load l{.concurrency = 100,
                 .prompt_tokens = 20000,
                 .output_tokens = 50,
                 .max_num_batched_tokens = 8192,
                 .max_running = 100};
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    CHECK(e.chunk == 8092);
    CHECK(e.chunks == 3);
    CHECK(e.prefill_limited);
    CHECK(e.decodes_per_step == Approx(8192.0 * 49.0 / 20049.0));
    CHECK(e.prefill_per_step == Approx(8192.0 - 8192.0 * 49.0 / 20049.0));
    CHECK(e.mixed_share == Approx((8192.0 - 8192.0 * 49.0 / 20049.0) / 8092.0));
    CHECK(e.decode_step.decodes == 20);
    // Each request spends 100 x 20,049 / 8,192 = 244.74 steps admitted, 49 of them decoding: the
    // other 195.74 it waits for, or spends in, prefill.
    const double steps = 100.0 * 20049.0 / 8192.0 - 49.0;
    CHECK(e.ttft_prefill.in(seconds) == Approx(steps * e.itl.in(seconds)));
    // The rate: 8,192 tokens a step, 20,049 of them a request: 50 x 8,192 / 20,049 output tokens a
    // step, less the forward in flight each request also waits.
    CHECK(e.tokens_per_s == Approx(100.0 * 50.0 / e.request.in(seconds)));
    CHECK(e.tokens_per_s <= 50.0 * 8192.0 / 20049.0 / e.itl.in(seconds));
    CHECK(e.tokens_per_s >= 0.95 * 50.0 * 8192.0 / 20049.0 / e.itl.in(seconds));
}

TEST_CASE("SGLang runs prompts as prefill passes of their own between decode steps", "[estimate]") {
    // The same load as vLLM's above under SGLang's rules: 3.97 decodes a step, and the 30 prompt
    // tokens a decode step needs come in passes of one 1,000-token prompt, 0.03 of a pass per
    // decode step (python/sglang/srt/managers/scheduler.py runs a waiting prompt first).
    Replica r = llama_8b();
    r.parallel.rules = ParallelRules::sglang;
    const Load l{.concurrency = 4, .prompt_tokens = 1000, .output_tokens = 100, .max_running = 4};
    const LatencyEstimate e = estimate_latency(r, l, half);
    CHECK(e.separate_prefill);
    // 80 GiB: SGLang's chunked_prefill_size is 8,192 (below 160 GiB).
    CHECK(e.token_budget == 8192);
    CHECK(e.chunk == 1000);
    // Prompts arriving at random are gathered into passes (detail::sglang_passes_per_step): q
    // passes per decode step with q = a / (1 - b), a = 1 - e^(-r td), 1 - b = e^(-r tp), and
    // r = 0.03 / (td + q tp) chunks a second; fewer than 0.03, each of 30 / q tokens.
    const double q = e.mixed_share;
    CHECK(q < 0.03);
    CHECK(q > 0.02);
    CHECK(e.mixed_step.decodes == 0);
    CHECK(e.mixed_step.prefill_tokens == static_cast<std::uint64_t>(30.0 / q + 0.5));
    const double td = e.decode_step.time.in(seconds), tp = e.mixed_step.time.in(seconds);
    const double rate = 0.03 / (td + q * tp);
    CHECK(q == Approx((1.0 - std::exp(-rate * td)) / std::exp(-rate * tp)).epsilon(1e-3));
    CHECK(e.itl.in(seconds) == Approx(td + q * tp));
    // TTFT: the forward in flight (decode steps and passes, long ones more often hit), the next
    // one, scheduled while it ran (the overlap scheduler: a mean forward, (td + q tp) / (1 + q)),
    // and its own pass.
    CHECK(e.ttft_in_flight.in(seconds) ==
          Approx((td * td + q * tp * tp) / (2.0 * (td + q * tp)) + (td + q * tp) / (1.0 + q)));
    // A pass runs alone, so its prompt holds the GPU for its share of the pass, 1,000 of its
    // tokens, and waits for the passes of the others ahead of it. The pass's GPU time (0.3 s of
    // GEMMs alone: 2 x 7.5e9 x 1,000 FLOP at 50 TFLOP/s) is past SGLang's default host time of
    // an eager forward (182 us x 128 projections, 23.3 ms), so its own pass is the whole pass.
    const double share = 1000.0 / static_cast<double>(e.mixed_step.prefill_tokens);
    CHECK(e.prefill_service.in(seconds) == Approx(tp * share));
    CHECK(e.prefill_step.time == e.mixed_step.time);
    CHECK(e.ttft_prefill_wait ==
          detail::prefill_queue_wait(e.prefill_service, e.request - e.ttft_prefill_wait, 4));
    CHECK(e.ttft.in(seconds) ==
          Approx((e.ttft_overhead + e.ttft_in_flight + e.mixed_step.time + e.ttft_prefill_wait)
                     .in(seconds)));
}

TEST_CASE("SGLang's passes gather the prompts that arrive during the forward before them",
          "[estimate]") {
    // 100 prompt tokens a decode step in chunks of 1,000 (0.1 of a chunk a decode step), a decode
    // step of 10 ms and a pass of 50 ms whatever its tokens: q = a / (1 - b) with
    // r = 0.1 / (0.01 + 0.05 q), a = 1 - e^(-0.01 r), 1 - b = e^(-0.05 r). Solved:
    // q = 0.0928737, r = 6.82888 chunks/s, a = 0.0660093, 1 - b = 0.710743 (0.0660093 / 0.710743
    // = 0.0928737), a pass of 100 / q = 1,076.7 tokens.
    const double q =
        detail::sglang_passes_per_step(100.0, 1000.0, 8000.0, 10.0 * milliseconds, Seconds{},
                                       50.0 * milliseconds, 50.0 * milliseconds);
    CHECK(q == Approx(0.0928737).epsilon(1e-5));
    // The host time of the eager forward binds when the GPU's pass is shorter: the same q.
    CHECK(detail::sglang_passes_per_step(100.0, 1000.0, 8000.0, 10.0 * milliseconds,
                                         50.0 * milliseconds, 5.0 * milliseconds,
                                         5.0 * milliseconds) == Approx(0.0928737).epsilon(1e-5));
    // Nothing to prefill, no pass; prompts beyond the budget each step: passes of the budget,
    // 20,000 / 8,000 = 2.5 a decode step.
    CHECK(detail::sglang_passes_per_step(0.0, 1000.0, 8000.0, 10.0 * milliseconds, Seconds{},
                                         50.0 * milliseconds, 50.0 * milliseconds) == 0.0);
    CHECK(detail::sglang_passes_per_step(20000.0, 8000.0, 8000.0, 10.0 * milliseconds, Seconds{},
                                         50.0 * milliseconds, 50.0 * milliseconds) == 2.5);
}

TEST_CASE("SGLang's prefill pass under load lasts at least its eager forward's host time",
          "[estimate]") {
    // The load above with a request overhead (SGLang's: the host time of an eager forward) of
    // 1 s, past the pass's GPU time (0.3 s of GEMMs alone, below 1 s in all: the pass's weights
    // 15 GB at 0.5 TB/s are 30 ms): every pass among the decode steps holds the GPU 1 s, while a
    // request's own pass is its GPU time beside the overhead its TTFT counts.
    Replica r = llama_8b();
    r.parallel.rules = ParallelRules::sglang;
    EstimateParams p = half;
    p.request_overhead = 1.0 * seconds;
    const Load l{.concurrency = 4, .prompt_tokens = 1000, .output_tokens = 100, .max_running = 4};
    const LatencyEstimate e = estimate_latency(r, l, p);
    CHECK(e.mixed_step.time == 1.0 * seconds);
    CHECK(e.prefill_step.time < 0.5 * seconds);
    CHECK(e.ttft_overhead == 1.0 * seconds);
    CHECK(e.prefill_service.in(seconds) ==
          Approx(1000.0 / static_cast<double>(e.mixed_step.prefill_tokens)));
}

TEST_CASE("SGLang decodes past its CUDA-graph batch eagerly", "[estimate]") {
    // 80 GiB at tp 1: SGLang captures decode graphs up to 256 sequences (server_args.py, below
    // 160 GiB and tp < 4). With a request overhead (the host time of an eager forward) of 1 s, a
    // step of 256 decodes is its GPU time, (15.0 GB + 256 x 1,050 x 131,072 B) / 0.5 TB/s +
    // 32 x 10 us x 1.4 = 0.102 s, and one of 257 the host's 1 s.
    Replica r = llama_8b();
    r.parallel.rules = ParallelRules::sglang;
    EstimateParams p = half;
    p.uncompiled_layer_scale = 1.4;
    p.request_overhead = 1.0 * seconds;
    const auto decode = [&](std::uint64_t batch) {
        return estimate_latency(r,
                                {.kind = LoadKind::static_batch,
                                 .concurrency = batch,
                                 .prompt_tokens = 1000,
                                 .output_tokens = 100},
                                p)
            .decode_step.time;
    };
    CHECK(decode(256).in(seconds) ==
          Approx((w_bytes + 256.0 * 1050.0 * kv_token_bytes) / 0.5e12 + 32 * 14e-6));
    CHECK(decode(257) == 1.0 * seconds);
    // vLLM's step is its GPU time at any batch.
    r.parallel.rules = ParallelRules::vllm;
    CHECK(decode(257) < 0.2 * seconds);
}

TEST_CASE("a prompt waits for the prompts ahead of it as a queue of constant service",
          "[estimate]") {
    // S = 0.1 s, a request's time 1 s apart from the wait, 3 running: the other 2 hold the
    // prefill rho = 2 x 0.1 / (1 + W) of the time, and W = rho S / (2 (1 - rho)):
    // 2 W (0.8 + W) = 0.02, W^2 + 0.8 W - 0.01 = 0, W = (-0.8 + sqrt(0.68)) / 2 = 0.0123106 s.
    CHECK(detail::prefill_queue_wait(0.1 * seconds, 1.0 * seconds, 3).in(seconds) ==
          Approx(0.0123106).epsilon(1e-5));
    // Prefill alone would need more than the loop's time: 4 others x 0.5 s = 2 s a cycle of 1 s.
    // The wait grows until rho = 2 / (1 + W) < 1: W = 1 / (2 (W - 1)), W^2 - W - 0.5 = 0,
    // W = (1 + sqrt(3)) / 2 = 1.3660254 s.
    CHECK(detail::prefill_queue_wait(0.5 * seconds, 1.0 * seconds, 5).in(seconds) ==
          Approx(1.3660254).epsilon(1e-5));
    // Alone, or with nothing to prefill, nobody is ahead.
    CHECK(detail::prefill_queue_wait(0.5 * seconds, 1.0 * seconds, 1) == Seconds{});
    CHECK(detail::prefill_queue_wait(Seconds{}, 1.0 * seconds, 8) == Seconds{});
    // More clients, more prompts ahead: the wait grows with the load.
    Seconds last{};
    for (std::uint64_t c : {2, 8, 32}) {
        const Load l{.concurrency = c, .prompt_tokens = 4000, .output_tokens = 100};
        const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
        CHECK(e.ttft_prefill_wait > last);
        last = e.ttft_prefill_wait;
    }
}

TEST_CASE("each engine's token budget and fixed cost per request by default", "[estimate]") {
    // SGLang's chunked_prefill_size by the GPU's memory (server_args.py): 2,048 below 35 GiB,
    // 4,096 below 60 GiB, 8,192 below 160 GiB, 16,384 above, as sglang_mem_fraction reads it;
    // TensorRT-LLM's max_num_tokens 8,192; vLLM's max_num_batched_tokens (2,048 on A100s).
    CHECK(default_token_budget(gpus::l4, ParallelRules::sglang) == 2048);              // 24 GB
    CHECK(default_token_budget(gpus::a100_sxm4_40gb, ParallelRules::sglang) == 4096);  // 40 GB
    CHECK(default_token_budget(gpus::l40s, ParallelRules::sglang) == 4096);            // 48 GB
    CHECK(default_token_budget(gpus::a100_sxm4_80gb, ParallelRules::sglang) == 8192);  // 80 GB
    CHECK(default_token_budget(gpus::h200_sxm, ParallelRules::sglang) == 8192);        // 141 GB
    CHECK(default_token_budget(gpus::b200, ParallelRules::sglang) == 16384);           // 180 GB
    CHECK(default_token_budget(gpus::b200, ParallelRules::trtllm) == 8192);
    CHECK(default_token_budget(gpus::a100_sxm4_80gb, ParallelRules::vllm) == 2048);
    // A given overhead replaces the engine's: TTFT moves by the difference, nothing else does.
    EstimateParams p = half;
    p.request_overhead = 50.0 * milliseconds;
    const Load l{.prompt_tokens = 1000, .output_tokens = 100};
    const LatencyEstimate a = estimate_latency(llama_8b(), l, p);
    p.request_overhead = 10.0 * milliseconds;
    const LatencyEstimate b = estimate_latency(llama_8b(), l, p);
    CHECK((a.ttft - b.ttft).in(milliseconds) == Approx(40.0));
    CHECK(a.itl == b.itl);
    CHECK(a.request == b.request);
}

TEST_CASE("requests beyond the running cap wait by Little's law for a closed loop", "[estimate]") {
    // 12 clients on 4 slots: throughput 4 / T, so a client's cycle is 12 T / 4 = 3 T: T running,
    // the overhead before it reaches the queue, and 2 T - overhead in the queue.
    const Load l{.concurrency = 12, .prompt_tokens = 1000, .output_tokens = 100, .max_running = 4};
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    CHECK(e.running == 4);
    CHECK(e.waiting == 8);
    CHECK(e.ttft_queue.in(seconds) ==
          Approx(2.0 * e.request.in(seconds)-e.ttft_overhead.in(seconds)));
    CHECK(e.tokens_per_s == Approx(4.0 * 100.0 / e.request.in(seconds)));
    CHECK(e.tokens_per_s_per_gpu == e.tokens_per_s);
}

TEST_CASE("a burst on vLLM fills every step to the budget while prompts wait", "[estimate]") {
    // 100 requests of 2,000 + 51 tokens sent at once, 40 slots: ceil(100 / 40) = 3 waves, the last
    // of the 20 the others leave. vLLM's scheduler runs the running requests' decodes first and
    // fills the rest of the 8,192-token budget with waiting prompts, first come first served
    // (vllm/v1/core/sched/scheduler.py, schedule), so a wave's 40 x 2,000 = 80,000 prompt tokens
    // take P full steps and the k-th prompt's first token comes at k P / 40. Each request decodes
    // L = 50 steps from its first token; L >= P, so the k-th has P (40 - k) / 40 of them full,
    // on average P x 39 / 80, and the decodes riding a full step average 40 x 39 / 80 = 19.5
    // (20 timed): P = 80,000 / (8,192 - 19.5) = 9.7889.
    const Load l{.kind = LoadKind::burst,
                 .concurrency = 100,
                 .prompt_tokens = 2000,
                 .output_tokens = 51,
                 .max_num_batched_tokens = 8192,  // vLLM's budget before v0.28
                 .max_running = 40};
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    const double P = 80000.0 / 8172.5, ov = P * 39.0 / 80.0;
    CHECK(e.running == 40);
    CHECK(e.prefill_limited);
    CHECK(e.mixed_share == Approx(P));
    CHECK(e.mixed_step.decodes == 20);
    CHECK(e.mixed_step.prefill_tokens == 8172);  // 8,172.5, the step's whole tokens
    // After the last prompt, the decodes left: 40 x (50 - 4.772) / 50 = 36.18, 36 timed.
    CHECK(e.decode_step.decodes == 36);
    const double full = e.mixed_step.time.in(seconds), tail = e.decode_step.time.in(seconds);
    // The first wave's requests: ov of their 50 decode steps full.
    const double first = (full * ov + tail * (50.0 - ov)) / 50.0;
    // A wave: P full steps, then the last prompt's 50 decode steps.
    const double wave = full * P + tail * 50.0;
    CHECK(e.request.in(seconds) == Approx(wave));
    // The last wave is a burst of 20: 40,000 prompt tokens, 20 x 19 / 40 = 9.5 decodes (10 timed)
    // riding P' = 40,000 / (8,192 - 9.5) = 4.8885 full steps, then 50 decode steps.
    Load rest = l;
    rest.concurrency = 20;
    const LatencyEstimate last = estimate_latency(llama_8b(), rest, half);
    CHECK(last.running == 20);
    CHECK(last.mixed_share == Approx(40000.0 / 8182.5));
    CHECK(last.mixed_step.decodes == 10);
    const double last_wave = last.request.in(seconds);
    CHECK(last_wave < wave);
    // The run: two waves of 40 and that one.
    const double run = 2.0 * wave + last_wave;
    CHECK(e.tokens_per_s == Approx(100.0 * 51.0 / run));
    // The later waves' at the steady state a freed slot's admission keeps: 40 requests admitted
    // at 100 requests a run, so each stays 40 / 100 of the run admitted; its own prompt takes
    // ceil(2,000 / 8,172.5) = 1 full step, its 50 tokens the rest (at most a full step a token).
    // The first wave's 40 of the 100 at their own TPOT.
    const double steady = (0.4 * run - full) / 50.0;
    CHECK(steady < full);
    CHECK(e.itl.in(seconds) == Approx(first * 0.4 + steady * 0.6));
    // TTFT: the engine's fixed cost, the wait for the waves before its own (40 requests wait
    // none, 40 one wave, 20 two: 0.8 of a wave on average), and the mean position in its own
    // wave's full steps, (P + 1) / 2 for the 80 of the full waves.
    CHECK(e.ttft_queue.in(seconds) == Approx(0.8 * wave));
    CHECK(e.ttft_prefill.in(seconds) ==
          Approx(0.8 * full * (P + 1.0) / 2.0 + 0.2 * last.ttft_prefill.in(seconds)));
    CHECK(e.ttft == e.ttft_overhead + e.ttft_queue + e.ttft_prefill);
    // The decodes are those of a full step most of their time: slower than a decode-only step,
    // never slower than a full one.
    CHECK(e.itl > e.decode_step.time);
    CHECK(e.itl < e.mixed_step.time);
}

TEST_CASE("a wave's last prompt decodes after every full step", "[estimate]") {
    // The k-th of a wave's n prompts has its first token at k P / n of the P full steps and
    // decodes L steps from there: min(L, P (n - k) / n) of them full. The mean over k:
    // n = 1: its prompt is the wave's last, none;
    CHECK(detail::wave_overlap(1.0, 3.9, 76.0) == 0.0);
    // n = 4, P = 8, L = 100 (L past every prompt's full steps): (6 + 4 + 2 + 0) / 4 = 3 = P 3 / 8;
    CHECK(detail::wave_overlap(4.0, 8.0, 100.0) == Approx(3.0));
    // n = 4, P = 8, L = 3: min(3, 6), min(3, 4), min(3, 2), min(3, 0) = 3 + 3 + 2 + 0 = 8, / 4 = 2;
    CHECK(detail::wave_overlap(4.0, 8.0, 3.0) == Approx(2.0));
    // and as n grows, L - L^2 / (2P) (L < P) or P / 2: n = 10^6, P = 8, L = 3: 3 - 9 / 16.
    CHECK(detail::wave_overlap(1e6, 8.0, 3.0) == Approx(3.0 - 9.0 / 16.0).epsilon(1e-5));
    CHECK(detail::wave_overlap(1e6, 8.0, 100.0) == Approx(4.0).epsilon(1e-5));
    // A one-prompt burst (a 32,000-token prompt alone in a pool of one): its decodes ride no
    // full step, so its TPOT is the decode step's, not a share of its own prompt's chunks.
    const Load one{.kind = LoadKind::burst,
                   .concurrency = 1,
                   .prompt_tokens = 32000,
                   .output_tokens = 77,
                   .max_num_batched_tokens = 8192};
    const LatencyEstimate e = estimate_latency(llama_8b(), one, half);
    CHECK(e.tpot == e.decode_step.time);
}

TEST_CASE("a run started all at once: its first C requests queue for prefill as a burst",
          "[estimate]") {
    // vllm bench serve --max-concurrency 40 --num-prompts 400 --request-rate inf: the client sends
    // the first 40 at once (vllm/benchmarks/serve.py: no delay at rate inf, a semaphore of 40),
    // so those 40 of the 400 prefill as a burst's wave (40 prompts of 2,000 tokens: 40 x 2,000 /
    // 8,192, about 10 full steps; the mean prompt waits half of them), the other 360 at the closed
    // loop's steady state. TTFT is the mean over the 400: the steady state's plus 40 / 400 of
    // the burst's extra wait. TPOT and throughput keep the steady state's.
    Load l{.concurrency = 40,
           .prompt_tokens = 2000,
           .output_tokens = 51,
           .max_num_batched_tokens = 8192,
           .max_running = 40};
    const LatencyEstimate steady = estimate_latency(llama_8b(), l, half);
    Load b = l;
    b.kind = LoadKind::burst;
    const LatencyEstimate burst = estimate_latency(llama_8b(), b, half);
    l.requests = 400;
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    CHECK(burst.ttft > steady.ttft);
    CHECK(e.ttft_first_wave.in(seconds) ==
          Approx((burst.ttft - steady.ttft).in(seconds)*40.0 / 400.0));
    CHECK(e.ttft == steady.ttft + e.ttft_first_wave);
    CHECK(e.ttft ==
          e.ttft_overhead + e.ttft_queue + e.ttft_in_flight + e.ttft_prefill + e.ttft_first_wave);
    CHECK(e.tpot == steady.tpot);
    CHECK(e.tokens_per_s == steady.tokens_per_s);
    // A run of as many prompts as clients is the burst's wave alone.
    l.requests = 40;
    const LatencyEstimate whole = estimate_latency(llama_8b(), l, half);
    CHECK(whole.ttft.in(seconds) == Approx(burst.ttft.in(seconds)));
    // Its TPOT and throughput are the burst's too: the 40 are sent at once and none follows, so
    // no client sends a second request and the closed loop's steady state never forms (the
    // table's runs at --request-rate inf with no lower --max-concurrency, LoadKind::burst).
    CHECK(whole.tpot == burst.tpot);
    CHECK(whole.itl == burst.itl);
    CHECK(whole.tokens_per_s == burst.tokens_per_s);
    CHECK(whole.tokens_per_s_per_gpu == burst.tokens_per_s);  // one GPU
    // Fewer prompts than clients (--num-prompts 25 --max-concurrency 40): the semaphore of 40
    // never holds one back, so 25 are in flight, never 40: the run of 25 clients.
    l.requests = 25;
    Load of25 = l;
    of25.concurrency = 25;
    const LatencyEstimate fewer = estimate_latency(llama_8b(), l, half);
    const LatencyEstimate clients25 = estimate_latency(llama_8b(), of25, half);
    CHECK(fewer.concurrency == 25);
    CHECK(fewer.running == 25);
    CHECK(fewer.waiting == 0);
    CHECK(fewer.ttft == clients25.ttft);
    CHECK(fewer.tpot == clients25.tpot);
    CHECK(fewer.tokens_per_s == clients25.tokens_per_s);
    // One client has no wave: its one request waits for nothing.
    l.concurrency = 1;
    l.requests = 10;
    CHECK(estimate_latency(llama_8b(), l, half).ttft_first_wave == Seconds{});
    l.requests = 0;
    CHECK_THROWS_WITH(estimate_latency(llama_8b(), l, half), Catch::Contains("load.requests"));
}

TEST_CASE("a run of N requests ends with its N mod C alone", "[estimate]") {
    // vllm bench serve --max-concurrency 40 --num-prompts 100: the client keeps 40 in flight
    // until the 100th is sent, then drains (vllm/benchmarks/serve.py: a semaphore of 40; the
    // duration ends with the last response). 100 = 2 x 40 + 20: 80 requests at the 40 clients'
    // rate, then 20 alone at 20's. With O tokens out, the run takes 80 O / tps(40) + 20 O /
    // tps(20) and reports 100 O over that; its TPOT is the mean over the 100,
    // (80 TPOT(40) + 20 TPOT(20)) / 100.
    Load l{.concurrency = 40,
           .prompt_tokens = 2000,
           .output_tokens = 51,
           .max_num_batched_tokens = 8192,
           .max_running = 40};
    const LatencyEstimate at40 = estimate_latency(llama_8b(), l, half);
    Load rest = l;
    rest.concurrency = 20;
    const LatencyEstimate at20 = estimate_latency(llama_8b(), rest, half);
    l.requests = 100;
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    const double time = 80.0 * 51.0 / at40.tokens_per_s + 20.0 * 51.0 / at20.tokens_per_s;
    CHECK(e.tokens_per_s == Approx(100.0 * 51.0 / time));
    CHECK(e.tpot.in(seconds) ==
          Approx((at40.tpot.in(seconds)*80.0 + at20.tpot.in(seconds)*20.0) / 100.0));
    CHECK(e.itl == e.tpot);
    // Fewer clients run faster steps: the run's TPOT is below the steady state's at 40, and its
    // throughput below it too (the last 20 use half the slots).
    CHECK(e.tpot < at40.tpot);
    CHECK(e.tokens_per_s < at40.tokens_per_s);
    CHECK(e.tokens_per_s_per_gpu == Approx(e.tokens_per_s));  // one GPU
    // 120 = 3 x 40: no request runs alone, the steady state is the run's.
    l.requests = 120;
    const LatencyEstimate whole = estimate_latency(llama_8b(), l, half);
    CHECK(whole.tokens_per_s == at40.tokens_per_s);
    CHECK(whole.tpot == at40.tpot);
}

TEST_CASE("drawn lengths: what the running requests have left when the last is sent",
          "[estimate]") {
    // Each slot of the client runs its requests back to back, lengths uniform on
    // [m (1 - s), m (1 + s)]: at a random moment a slot's request has a residual of density
    // (1 - F(r)) / m. At s = 1 (sglang.bench_serving's default range ratio 0: [0, 2m]), with
    // x = r / 2m: F = x, G = 2x - x^2 (the residual's distribution), E[L^2] = 4 m^2 / 3.
    // - sum: the other n - 1 have E[L^2] / (2m) = 2m / 3 left each, the last one sent its m.
    // - longest: 2m times the integral over [0, 1] of 1 - G^(n-1) F.
    //   n = 2: 1 - (2/3 - 1/4) = 7/12, so 7m/6; n = 3: 1 - (4/4 - 4/5 + 1/6) = 19/30, 19m/15.
    const double m = 120.0;
    const detail::RunDrain two = detail::drawn_lengths_drain(m, 1.0, 2);
    CHECK(two.sum == Approx(m * 2.0 / 3.0 + m));                // 200 tokens
    CHECK(two.longest == Approx(7.0 * m / 6.0).epsilon(1e-6));  // 140 steps
    const detail::RunDrain three = detail::drawn_lengths_drain(m, 1.0, 3);
    CHECK(three.sum == Approx(2.0 * m * 2.0 / 3.0 + m));            // 280 tokens
    CHECK(three.longest == Approx(19.0 * m / 15.0).epsilon(1e-6));  // 152 steps
    // One request in flight: it alone is left, its whole length, m on average.
    const detail::RunDrain one = detail::drawn_lengths_drain(m, 0.5, 1);
    CHECK(one.sum == Approx(m));
    CHECK(one.longest == Approx(m).epsilon(1e-6));
    // No spread (the slots drifted apart all the same): each other request has m / 2 left on
    // average, and the last one sent ends the run one length m after it is sent.
    const detail::RunDrain fixed = detail::drawn_lengths_drain(m, 0.0, 5);
    CHECK(fixed.sum == Approx(4.0 * m / 2.0 + m));
    CHECK(fixed.longest == Approx(m));
    // +-15 % (vllm bench serve --random-range-ratio 0.15): E[L^2] = m^2 (1 + 0.15^2 / 3).
    CHECK(detail::drawn_lengths_drain(m, 0.15, 9).sum ==
          Approx(8.0 * m * (1.0 + 0.0225 / 3.0) / 2.0 + m));
}

TEST_CASE("a run of drawn lengths ends when its longest request does", "[estimate]") {
    // sglang.bench_serving --max-concurrency 2 --num-prompts 10 at the default range ratio 0:
    // outputs drawn on [0, 2 x 51], mean 51. When the 10th is sent, the 2 running have 2/3 x 51
    // + 51 = 85 tokens left and the run lasts 7/6 x 51 = 59.5 more steps (the test above), each
    // a decode step of 85 / 59.5 = 1.4 requests, rounded to 1 (no prompt is left to prefill).
    // The steady state at 2 would have given those 85 tokens in 42.5 decode steps of 2: the run
    // takes 10 x 51 / tps(2) - 42.5 x step(2) + 59.5 x step(1) and reports 510 tokens over it.
    // TPOT is the token-weighted mean: (425 TPOT(2) + 85 step(1)) / 510.
    Load l{.concurrency = 2,
           .prompt_tokens = 2000,
           .output_tokens = 51,
           .max_num_batched_tokens = 8192,
           .max_running = 2,
           .length_spread = 1.0};
    const LatencyEstimate steady = estimate_latency(llama_8b(), l, half);
    // Decode steps of 1 and 2 at the same mean context (I + O / 2): static batches decode so.
    const auto step = [&](std::uint64_t k) {
        return estimate_latency(llama_8b(),
                                {.kind = LoadKind::static_batch,
                                 .concurrency = k,
                                 .prompt_tokens = 2000,
                                 .output_tokens = 51},
                                half)
            .decode_step.time.in(seconds);
    };
    l.requests = 10;
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    const double time = 510.0 / steady.tokens_per_s - 42.5 * step(2) + 59.5 * step(1);
    CHECK(e.tokens_per_s == Approx(510.0 / time).epsilon(1e-6));
    CHECK(e.tpot.in(seconds) ==
          Approx((425.0 * steady.tpot.in(seconds) + 85.0 * step(1)) / 510.0).epsilon(1e-6));
    CHECK(e.itl == e.tpot);
    // The drain runs at one request where the steady state ran two: the run is slower. With
    // fixed lengths and N a multiple of C the steady state is the run's.
    CHECK(e.tokens_per_s < steady.tokens_per_s);
    l.length_spread = 0.0;
    CHECK(estimate_latency(llama_8b(), l, half).tokens_per_s == steady.tokens_per_s);
    // A spread outside [0, 1], or beside fixed lengths, is refused.
    l.length_spread = 1.5;
    CHECK_THROWS_WITH(estimate_latency(llama_8b(), l, half), Catch::Contains("load.length_spread"));
    l.length_spread = 0.2;
    l.fixed_lengths = true;
    CHECK_THROWS_WITH(estimate_latency(llama_8b(), l, half),
                      Catch::Contains("load.length_spread") && Catch::Contains("fixed_lengths"));
}

TEST_CASE("a burst's later waves decode at most a full step a token", "[estimate]") {
    // The burst above with 3 tokens out (L = 2 decode steps): a request is admitted 40 / 100 of
    // the run (two waves of 40, each P full steps and 2 tail steps, and one of 20), about 10 full
    // steps, for 2 tokens after its prompt's one, which Little's law would put at about 4.5 full
    // steps a token. No step is longer than a full one: the later waves' TPOT is the full step.
    // The first wave's: the k-th of its 40 prompts has min(2, P (40 - k) / 40) of its 2 steps
    // full; P j / 40 <= 2 for j = 0..8 (P = 9.79), so ov = (P x 8 x 9 / 80 + 31 x 2) / 40.
    const Load l{.kind = LoadKind::burst,
                 .concurrency = 100,
                 .prompt_tokens = 2000,
                 .output_tokens = 3,
                 .max_num_batched_tokens = 8192,
                 .max_running = 40};
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    const double P = e.mixed_share, ov = (P * 72.0 / 80.0 + 62.0) / 40.0;
    CHECK(std::floor(2.0 * 40.0 / P) == 8.0);
    const double full = e.mixed_step.time.in(seconds), tail = e.decode_step.time.in(seconds);
    const double first = (full * ov + tail * (2.0 - ov)) / 2.0;
    const double run = 100.0 * 3.0 / e.tokens_per_s;
    CHECK((0.4 * run - full) / 2.0 > full);
    CHECK(e.itl.in(seconds) == Approx(first * 0.4 + full * 0.6));
}

TEST_CASE("a burst on SGLang prefills each wave, then decodes it", "[estimate]") {
    // The same burst under SGLang's rules: a wave's 80,000 prompt tokens run as prefill batches
    // first (scheduler.py get_next_batch_to_run), ceil(80,000 / 8,192) = 10 passes, and then its
    // 40 sequences decode together.
    Replica r = llama_8b();
    r.parallel.rules = ParallelRules::sglang;
    const Load l{.kind = LoadKind::burst,
                 .concurrency = 100,
                 .prompt_tokens = 2000,
                 .output_tokens = 51,
                 .max_num_batched_tokens = 8192,  // vLLM's budget before v0.28
                 .max_running = 40};
    const LatencyEstimate e = estimate_latency(r, l, half);
    CHECK(e.chunks == 10);
    CHECK(e.decode_step.decodes == 40);
    const Seconds wave = e.prefill_step.time + e.decode_step.time * 50.0;
    CHECK(e.request == wave);
    // The last wave holds the 20 the others leave: 40,000 prompt tokens in ceil(40,000 / 8,192)
    // = 5 passes, then 50 decode steps of 20.
    Load rest = l;
    rest.concurrency = 20;
    const LatencyEstimate last = estimate_latency(r, rest, half);
    CHECK(last.chunks == 5);
    CHECK(last.decode_step.decodes == 20);
    CHECK(last.request == last.prefill_step.time + last.decode_step.time * 50.0);
    // TPOT: the decode step of each request's wave, 80 requests at 40 and 20 at 20.
    CHECK(e.itl.in(seconds) ==
          Approx(0.8 * e.decode_step.time.in(seconds) + 0.2 * last.decode_step.time.in(seconds)));
    // Its first token ends its pass: (10 + 1) / (2 x 10) of its wave's prefill on average, and
    // (5 + 1) / (2 x 5) of the last wave's.
    CHECK(e.ttft_prefill.in(seconds) ==
          Approx(0.8 * e.prefill_step.time.in(seconds)*11.0 / 20.0 +
                 0.2 * last.prefill_step.time.in(seconds)*6.0 / 10.0));
    CHECK(e.tokens_per_s ==
          Approx(100.0 * 51.0 / (2.0 * wave.in(seconds) + last.request.in(seconds))));
}

TEST_CASE("fixed-length clients of an SGLang closed loop stay in step, a wave a cycle",
          "[estimate]") {
    // 100 clients of exactly 2,000 + 51 tokens, 40 slots. Every prompt of a wave prefills before
    // any of them decodes (scheduler.py get_next_batch_to_run), so the wave finishes in one step
    // and its clients send again together: ceil(80,000 / 8,192) = 10 passes, then 50 decode
    // steps of 40.
    Replica r = llama_8b();
    r.parallel.rules = ParallelRules::sglang;
    Load l{.concurrency = 100,
           .prompt_tokens = 2000,
           .output_tokens = 51,
           .max_num_batched_tokens = 8192,
           .max_running = 40,
           .fixed_lengths = true};
    const LatencyEstimate e = estimate_latency(r, l, half);
    CHECK(e.chunks == 10);
    CHECK(e.decode_step.decodes == 40);
    const double pre = e.prefill_step.time.in(seconds), dec = e.decode_step.time.in(seconds);
    const double wave = pre + 50.0 * dec;
    CHECK(e.request.in(seconds) == Approx(wave));
    // Its first token ends its pass, (10 + 1) / 20 of the prefill on average; the other 9 / 20
    // come before its second token, spread over its 50 (TPOT).
    CHECK(e.ttft_prefill.in(seconds) == Approx(pre * 11.0 / 20.0));
    CHECK(e.tpot.in(seconds) == Approx(dec + pre * 9.0 / 20.0 / 50.0));
    // 40 a wave: each client's cycle is 100 / 40 waves, 1.5 of them in the queue less the
    // overhead (Little's law).
    CHECK(e.ttft_queue.in(seconds) == Approx(1.5 * wave - e.ttft_overhead.in(seconds)));
    CHECK(e.ttft == e.ttft_overhead + e.ttft_queue + e.ttft_prefill);
    CHECK(e.tokens_per_s == Approx(40.0 * 51.0 / wave));
    // Drawn lengths spread the arrivals: the prompts come one by one between decode steps.
    l.fixed_lengths = false;
    const LatencyEstimate spread = estimate_latency(r, l, half);
    CHECK(spread.ttft_prefill < e.ttft_prefill);
    CHECK(spread.mixed_share > 0.0);
}

TEST_CASE("fixed-length vLLM clients past the token budget prefill in full steps", "[estimate]") {
    // 8 clients of exactly 2,048 + 257 tokens under vLLM's budget of 8,192: a cycle's 16,384
    // prompt tokens pass what the 8 decodes leave (scheduler.py schedule), so the prompts queue
    // for the budget, come back in the groups they were prefilled in, and a prompt's one chunk
    // rides in a step full to the budget: TTFT's prefill is that full step, not its own chunk
    // beside the mean prefill plus the wait of prompts arriving at random.
    Load l{.concurrency = 8,
           .prompt_tokens = 2048,
           .output_tokens = 257,
           .max_num_batched_tokens = 8192,
           .max_running = 8,
           .fixed_lengths = true};
    const LatencyEstimate e = estimate_latency(llama_8b(), l, half);
    CHECK(e.chunks == 1);
    CHECK_FALSE(e.prefill_limited);
    // 8 - 1 others decode beside it; room = 8,192 - d tokens of prompts, d = 1 + 7 x 256 / 257.
    const double d = 1.0 + 7.0 * 256.0 / 257.0;
    CHECK(e.decodes_per_step == Approx(d));
    CHECK(e.ttft_prefill > e.prefill_step.time);
    CHECK(e.ttft_prefill_wait == e.ttft_prefill - e.prefill_step.time);
    // The full step: the other 7 decodes (d - 1 = 6.97, rounded) at context 2,048 + 257 / 2 =
    // 2,176, and 8,192 - d prompt tokens.
    const DecodeCosts c = decode_costs(llama_8b(), {});
    const StepTerms full = detail::step(c, 7, 2176, {1, 2048, (8192.0 - d) / 2048.0, 1}, half);
    CHECK(e.ttft_prefill.in(seconds) == Approx(full.time.in(seconds)));
    // Drawn lengths spread the arrivals: its chunk rides beside the mean prefill and waits for
    // the prompts ahead of it (Pollaczek-Khinchine), less than a full step here.
    l.fixed_lengths = false;
    const LatencyEstimate spread = estimate_latency(llama_8b(), l, half);
    CHECK(spread.ttft_prefill < e.ttft_prefill);
    CHECK(spread.prefill_step.time == e.prefill_step.time);
    // A cycle that fits one step (8 x 1,000 tokens) keeps the random arrivals' model.
    l.prompt_tokens = 1000;
    l.fixed_lengths = true;
    const LatencyEstimate fits = estimate_latency(llama_8b(), l, half);
    l.fixed_lengths = false;
    CHECK(fits.ttft == estimate_latency(llama_8b(), l, half).ttft);
    // So does one of 8 x 1,024 = 8,192 tokens: past what the 8 mean decodes leave (8,192 - d),
    // but the whole budget, which the cycle has to itself when its 8 requests are all prefilling
    // and none decodes: one step, nothing left waiting to keep the group together.
    l.prompt_tokens = 1024;
    l.fixed_lengths = true;
    const LatencyEstimate whole = estimate_latency(llama_8b(), l, half);
    CHECK(8.0 * 1024.0 > 8192.0 - whole.decodes_per_step);
    l.fixed_lengths = false;
    CHECK(whole.ttft == estimate_latency(llama_8b(), l, half).ttft);
}

TEST_CASE("under attention dp, fixed-length clients' prompts prefill on every rank at once",
          "[estimate][dp]") {
    // DeepSeek-V3 under TensorRT-LLM at tp 8 with attention dp 8 and ep 8, 64 clients of exactly
    // 4,000 + 1,000 tokens, each rank's budget 8,192 tokens. A request spends 1 step prefilling
    // (4,000 fits what a rank's 8 decodes leave) and 999 decoding: life 1,000 steps, so a step
    // holds d = 1 + 63 x 999 / 1,000 decodes and the others bring 63 x 4,000 / 1,000 = 252 prompt
    // tokens. The balancer deals a group's prompts out a rank each
    // (_balance_requests_across_ranks), so a step of prompts carries one on every rank: a rank's
    // share is 252 / 8 = 31.5 tokens a step, 31.5 / 4,000 = 0.007875 of a chunk, and the mixed
    // step carries 8 x 4,000 prompt tokens.
    Replica r{.model = presets::deepseek_v3,
              .gpu = round_gpu(),
              .parallel = {.tp = 8, .dp = 8, .ep = 8},
              .weights = {.format = WeightFormat::fp8}};
    r.parallel.rules = ParallelRules::trtllm;
    Load l{.concurrency = 64,
           .prompt_tokens = 4000,
           .output_tokens = 1000,
           .max_num_batched_tokens = 8192,
           .max_running = 64,
           .fixed_lengths = true};
    const LatencyEstimate e = estimate_latency(r, l, half);
    CHECK(e.chunk == 4000);
    CHECK(e.chunks == 1);
    CHECK_FALSE(e.prefill_limited);
    CHECK(e.decodes_per_step == Approx(1.0 + 63.0 * 999.0 / 1000.0));
    CHECK(e.prefill_per_step == Approx(252.0));
    CHECK(e.mixed_share == Approx(252.0 / 8.0 / 4000.0));
    CHECK(e.mixed_step.prefill_tokens == 8 * 4000);
    // ITL: the decode step, and the mixed one in 0.007875 of the steps.
    CHECK(e.itl.in(seconds) == Approx(e.decode_step.time.in(seconds) * (1.0 - 0.007875) +
                                      e.mixed_step.time.in(seconds)*0.007875));
    // Drawn lengths arrive one by one: the step waits for one rank's whole prompt in
    // 252 / 4,000 = 0.063 of the steps, eight times as often.
    l.fixed_lengths = false;
    const LatencyEstimate drawn = estimate_latency(r, l, half);
    CHECK(drawn.mixed_share == Approx(252.0 / 4000.0));
    CHECK(drawn.mixed_step.prefill_tokens == 4000);
    CHECK(drawn.itl > e.itl);
    // SGLang runs its prompts as passes of their own: not spread.
    r.parallel.rules = ParallelRules::sglang;
    l.fixed_lengths = true;
    CHECK_FALSE(detail::spread_prefill(r, l));
}

TEST_CASE("a recurrent layer's state is read and written back every decode step",
          "[estimate][state]") {
    // Falcon-Mamba-7B: 64 Mamba layers, each with a fixed state per sequence (its SSM state and
    // convolution window). selective_state_update stores the state it loads: the estimate's
    // decode step moves 2 x 64 x state bytes a sequence, the bound's read 1 x. A batch of 4 at
    // 1,000 + 2 tokens: the step's bytes exceed the bound's read by 4 x 64 x state.
    const Model m = kvplan::testing::bundled("falcon-mamba-7b");
    const Replica r{.model = m,
                    .gpu = round_gpu(),
                    .weights = {.format = WeightFormat::bf16},
                    .kv = KvDtype::bf16};
    const Bytes state = layer_state_bytes(m.layer(0));
    REQUIRE(state.count() > 0);
    const LatencyEstimate e = estimate_latency(r,
                                               {.kind = LoadKind::static_batch,
                                                .concurrency = 4,
                                                .prompt_tokens = 1000,
                                                .output_tokens = 2},
                                               half);
    const DecodeBound b = decode_bound(r, 4, e.mean_context);
    CHECK(e.decode_step.bytes.count() == b.stages[0].bytes().count() + 4 * 64 * state.count());
}

TEST_CASE("a Nemotron-H block all-reduces once: one mixer or one MLP a layer",
          "[estimate][hybrid]") {
    // Nemotron-3-Nano-30B-A3B: 52 blocks, each a Mamba, attention or MoE mixer ending in one
    // row-parallel projection (vllm/model_executor/models/nemotron_h.py). At tp 2, one decode: a
    // message of 2,688 x 2 B = 5,376 B, the ring moving 2 (2 - 1) / 2 = 1 message over the 100
    // GB/s link, 53.76 ns; 52 all-reduces of 5 us + 53.76 ns = 262.79552 us, half a transformer's
    // two a layer.
    const Model m = kvplan::testing::bundled("nemotron-3-nano-30b-a3b");
    REQUIRE(m.num_layers() == 52);
    const Replica r{.model = m,
                    .gpu = round_gpu(),
                    .parallel = {.tp = 2},
                    .weights = {.format = WeightFormat::bf16},
                    .kv = KvDtype::bf16};
    const LatencyEstimate e = estimate_latency(
        r, {.kind = LoadKind::static_batch, .prompt_tokens = 1000, .output_tokens = 2}, half);
    CHECK(e.decode_step.all_reduce.in(microseconds) == Approx(52 * (5.0 + 0.05376)));
}

TEST_CASE("vLLM runs a recurrent mixer eagerly in a step that carries prefill",
          "[estimate][hybrid]") {
    // Nemotron-3-Nano-30B-A3B's pattern MEMEM*EMEMEM*...: 23 Mamba blocks (M), 23 MoE (E) and 6
    // attention (*). vLLM replays a decode-only step as one full CUDA graph and a step with prefill
    // piecewise, each Mamba mixer run eagerly between the pieces (EstimateParams::eager_mixer).
    // At 100 us a mixer, a batch's prefill pass of 1,000 tokens (one pass) costs
    // 23 x 100 us = 2.3 ms more, its decode steps nothing more; SGLang and TensorRT-LLM, which
    // run a step with prefill eagerly whole, are charged nothing by it.
    const Model m = kvplan::testing::bundled("nemotron-3-nano-30b-a3b");
    Replica r{.model = m,
              .gpu = round_gpu(),
              .parallel = {.tp = 2},
              .weights = {.format = WeightFormat::bf16},
              .kv = KvDtype::bf16};
    const Load l{.kind = LoadKind::static_batch, .prompt_tokens = 1000, .output_tokens = 2};
    EstimateParams eager = half;
    eager.eager_mixer = 100.0 * microseconds;
    const LatencyEstimate plain = estimate_latency(r, l, half);
    const LatencyEstimate with = estimate_latency(r, l, eager);
    REQUIRE(with.chunks == 1);
    CHECK((with.prefill_step.layers - plain.prefill_step.layers).in(milliseconds) ==
          Approx(2.3).margin(1e-9));
    CHECK(with.decode_step.layers == plain.decode_step.layers);
    for (ParallelRules e : {ParallelRules::sglang, ParallelRules::trtllm}) {
        r.parallel.rules = e;
        CHECK(estimate_latency(r, l, eager).prefill_step.layers ==
              estimate_latency(r, l, half).prefill_step.layers);
    }
    // A transformer has no recurrent mixer: Llama-3.1-8B's prefill is charged nothing.
    const Load one{.kind = LoadKind::static_batch, .prompt_tokens = 1000, .output_tokens = 2};
    CHECK(estimate_latency(llama_8b(), one, eager).prefill_step.layers ==
          estimate_latency(llama_8b(), one, half).prefill_step.layers);
    // A negative time is refused, naming the field.
    eager.eager_mixer = -1.0 * microseconds;
    r.parallel.rules = ParallelRules::vllm;
    CHECK_THROWS_WITH(estimate_latency(r, l, eager), Catch::Contains("estimate.overheads"));
}

TEST_CASE("one request alone decodes without prefill steps and waits for nothing", "[estimate]") {
    const LatencyEstimate e =
        estimate_latency(llama_8b(), {.prompt_tokens = 1000, .output_tokens = 100}, half);
    CHECK(e.running == 1);
    CHECK(e.mixed_share == 0.0);
    CHECK(e.itl == e.decode_step.time);
    CHECK(e.decode_step.decodes == 1);
    CHECK(e.ttft_in_flight.in(seconds) == 0.0);
    // Its prefill runs alone: TTFT is the engine's overhead and one step of its 1,000 tokens.
    CHECK(e.prefill_step.decodes == 0);
    CHECK(e.ttft == e.ttft_overhead + e.prefill_step.time);
}

TEST_CASE("a grouped GEMM computes whole tiles of each expert's tokens", "[estimate][moe]") {
    // Mixtral-8x7B, 8 experts, 2 a token. One decode routes to 2 experts, one token each: with a
    // tile of 16 rows each computes 16 x its work, so the routed FLOPs grow by 15 x theirs.
    const Replica r{.model = presets::mixtral_8x7b,
                    .gpu = round_gpu(),
                    .weights = {.format = WeightFormat::bf16},
                    .kv = KvDtype::bf16};
    const Load l{.kind = LoadKind::static_batch, .prompt_tokens = 100, .output_tokens = 2};
    EstimateParams tiled = half;
    tiled.expert_tile_rows = 16.0;
    const LatencyEstimate plain = estimate_latency(r, l, half);
    const LatencyEstimate tile = estimate_latency(r, l, tiled);
    // Routed parameters of one expert: 3 x 4,096 x 14,336 a layer, 32 layers; 2 a token.
    const double routed = 2.0 * 3.0 * 4096.0 * 14336.0 * 32.0;
    CHECK((tile.decode_step.flops - plain.decode_step.flops).in(FLOP) ==
          Approx(2.0 * routed * 15.0));
    // The prefill's 100 tokens give each of the 8 experts X rows, Poisson with mean 25 (all 8
    // touched: 8 (1 - (3/4)^100) = 8.000). P(X <= 16) = 0.0377, P(17..32) = 0.8908,
    // P(33..48) = 0.0714, P(49..64) = 1.4e-5, so an expert runs 0.0377 + 2 x 0.8908 + 3 x 0.0714
    // + 4 x 1.4e-5 = 2.0337 tiles of 16: 260.32 rows for the 200 routed, 0.3016 x their FLOPs
    // added.
    CHECK((tile.prefill_step.flops - plain.prefill_step.flops).in(FLOP) ==
          Approx(100.0 * 2.0 * routed * 0.30158).epsilon(1e-4));
    // The bytes read do not change.
    CHECK(tile.decode_step.bytes == plain.decode_step.bytes);
    CHECK(tile.prefill_step.bytes == plain.prefill_step.bytes);
}

TEST_CASE("the expert tile is 16 rows in a step of at most E tokens", "[estimate][moe]") {
    // vLLM's fused_moe takes BLOCK_SIZE_M 16 up to E tokens a step and 64 past it
    // (get_default_config): with a tile of 64, one decode of Mixtral-8x7B (1 token, 8 experts)
    // still pads each of its 2 experts to 16 rows, and a tile of 8 stays 8.
    const Replica r{.model = presets::mixtral_8x7b,
                    .gpu = round_gpu(),
                    .weights = {.format = WeightFormat::bf16},
                    .kv = KvDtype::bf16};
    const Load l{.kind = LoadKind::static_batch, .prompt_tokens = 100, .output_tokens = 2};
    EstimateParams big = half, small = half;
    big.expert_tile_rows = 64.0;
    small.expert_tile_rows = 8.0;
    const LatencyEstimate plain = estimate_latency(r, l, half);
    const double routed = 2.0 * 3.0 * 4096.0 * 14336.0 * 32.0;
    CHECK((estimate_latency(r, l, big).decode_step.flops - plain.decode_step.flops).in(FLOP) ==
          Approx(2.0 * routed * 15.0));
    CHECK((estimate_latency(r, l, small).decode_step.flops - plain.decode_step.flops).in(FLOP) ==
          Approx(2.0 * routed * 7.0));
    CHECK(detail::expert_tile(big, 8, 8) == 16.0);
    CHECK(detail::expert_tile(big, 9, 8) == 64.0);
    CHECK(detail::expert_tile(half, 9, 8) == 0.0);
}

TEST_CASE("vLLM 0.12 pads every touched fp8 expert to DeepGEMM's 128-row block on Hopper",
          "[estimate][moe]") {
    // vLLM 0.12 runs fp8 experts in 128 x 128 blocks through DeepGEMM on Hopper at every step size
    // (E8M0 scales by default since PR #26197 send small steps there too), whose contiguous layout
    // pads each expert's rows to 128 (get_mk_alignment_for_contiguous_layout). Mixtral-8x7B on
    // 2 x H200: one decode touches 2 of 8 experts with 1 row each. vLLM's main pads each to the
    // 16-row tile (1 token <= 8 experts), 15 x its work added; 0.12 to 128 rows, 127 x.
    const Replica r{.model = presets::mixtral_8x7b,
                    .gpu = gpus::h200_sxm,
                    .parallel = {.tp = 2},
                    .weights = {.format = WeightFormat::fp8, .layout = {.fp8_block = 128}},
                    .kv = KvDtype::bf16};
    const Load l{.kind = LoadKind::static_batch, .prompt_tokens = 100, .output_tokens = 2};
    EstimateParams tiled = half;
    tiled.expert_tile_rows = 64.0;
    const RooflineOptions v012{.vllm_release = EngineVersion{0, 12}};
    const LatencyEstimate plain = estimate_latency(r, l, half);
    const LatencyEstimate main = estimate_latency(r, l, tiled);
    const LatencyEstimate old = estimate_latency(r, l, tiled, v012);
    // One expert's routed FLOPs a token, 2 x 3 x 4,096 x 14,336 x 32 layers, halved by tp 2.
    const double routed = 2.0 * 3.0 * 4096.0 * 14336.0 * 32.0 / 2.0;
    CHECK((main.decode_step.flops - plain.decode_step.flops).in(FLOP) ==
          Approx(2.0 * routed * 15.0));
    CHECK((old.decode_step.flops - plain.decode_step.flops).in(FLOP) ==
          Approx(2.0 * routed * 127.0));
    CHECK(detail::fixed_expert_block(r, v012) == 128.0);
    // Not on vLLM's main, another release, SGLang, fp8 without blocks, a B200, or experts split 8
    // ways (PR #29346 keeps Triton there).
    CHECK(detail::fixed_expert_block(r, {}) == 0.0);
    CHECK(detail::fixed_expert_block(r, {.vllm_release = EngineVersion{0, 11}}) == 0.0);
    Replica other = r;
    other.parallel.rules = ParallelRules::sglang;
    CHECK(detail::fixed_expert_block(other, v012) == 0.0);
    other = r;
    other.weights.layout.fp8_block = 0;
    CHECK(detail::fixed_expert_block(other, v012) == 0.0);
    other = r;
    other.gpu = gpus::b200;
    CHECK(detail::fixed_expert_block(other, v012) == 0.0);
    other = r;
    other.parallel.tp = 8;
    CHECK(detail::fixed_expert_block(other, v012) == 0.0);
}

TEST_CASE("the routed experts' rows pass through HBM between and after their grouped GEMMs",
          "[estimate][moe]") {
    // vLLM's fused_experts writes the first GEMM's (tokens, k, 2 I), the activation reads it and
    // writes (tokens x k, I), the second GEMM writes (tokens, k, H) and the top-k sum reads it:
    // 3 I + H activation elements a row apart from the GEMMs. Mixtral-8x7B on 2 x H200: H 4,096,
    // each expert's 14,336 split 2 ways (I = 7,168), every expert on both GPUs. 100 tokens route
    // to 2 experts each: 200 rows x (3 x 7,168 + 4,096) x 32 MoE layers = 163,840,000 elements,
    // 327,680,000 bytes in bf16.
    const Replica r{.model = presets::mixtral_8x7b,
                    .gpu = gpus::h200_sxm,
                    .parallel = {.tp = 2},
                    .kv = KvDtype::bf16};
    const DecodeCosts c = decode_costs(r);
    CHECK(detail::expert_round_trip(c, 0, 100) == Bytes::exactly(327'680'000));
    CHECK(detail::expert_round_trip(c, 0, 0) == Bytes{});
    // In the step, at the achieved bandwidth: 327,680,000 B / (4.8 TB/s x 0.5) = 136.533 us.
    const Load l{.kind = LoadKind::static_batch, .prompt_tokens = 100, .output_tokens = 2};
    const LatencyEstimate e = estimate_latency(r, l, half);
    CHECK(e.prefill_step.experts_io.in(microseconds) == Approx(136.5333333));
    // A dense model has none.
    const Replica dense{.model = presets::llama_3_8b, .gpu = gpus::h200_sxm, .kv = KvDtype::bf16};
    CHECK(detail::expert_round_trip(decode_costs(dense), 0, 100) == Bytes{});
    // gpt-oss's MXFP4 experts under vLLM on Hopper run OpenAI's Triton matmul_ogs, which fuses
    // SwiGLU into the first GEMM and the scatter and sum into the second: nothing apart. Under
    // TensorRT-LLM (CUTLASS MoE) and on Ampere (Marlin MoE) the kernels run apart.
    Replica oss{.model = presets::gpt_oss_120b,
                .gpu = gpus::h100_sxm,
                .weights = {.format = WeightFormat::mxfp4},
                .kv = KvDtype::bf16};
    CHECK(detail::experts_fuse_activation(oss));
    CHECK(detail::expert_round_trip(decode_costs(oss), 0, 100) == Bytes{});
    oss.parallel.rules = ParallelRules::trtllm;
    CHECK_FALSE(detail::experts_fuse_activation(oss));
    oss.parallel.rules = ParallelRules::vllm;
    oss.gpu = gpus::a100_sxm4_80gb;
    CHECK_FALSE(detail::experts_fuse_activation(oss));
}

TEST_CASE("vLLM 0.11 pads fp8 experts to DeepGEMM's 128-row block in steps of 128 tokens or more",
          "[estimate][moe]") {
    // vLLM 0.11 has DeepGEMM on by default (PR #24462) at any expert tp, without E8M0 scales on
    // Hopper yet: a step goes to DeepGEMM when _valid_deep_gemm holds (at least 128 tokens, the
    // expert's slice width and the hidden size multiples of 128), smaller ones to Triton.
    // DeepSeek-V3 on 8 x H200: each expert's 2,048 split 8 ways is 256 wide, H 7,168.
    const Replica r{.model = presets::deepseek_v3,
                    .gpu = gpus::h200_sxm,
                    .parallel = {.tp = 8},
                    .weights = {.format = WeightFormat::fp8, .layout = {.fp8_block = 128}},
                    .kv = KvDtype::bf16};
    const RooflineOptions v011{.vllm_release = EngineVersion{0, 11}};
    CHECK(detail::large_step_expert_block(r, v011, 128) == 128.0);
    CHECK(detail::large_step_expert_block(r, v011, 127) == 0.0);
    // Not another release (0.12 is fixed_expert_block's, which keeps Triton at expert tp 8), not
    // SGLang, not fp8 without blocks, not a B200.
    CHECK(detail::large_step_expert_block(r, {.vllm_release = EngineVersion{0, 12}}, 128) == 0.0);
    CHECK(detail::fixed_expert_block(r, {.vllm_release = EngineVersion{0, 12}}) == 0.0);
    Replica other = r;
    other.parallel.rules = ParallelRules::sglang;
    CHECK(detail::large_step_expert_block(other, v011, 128) == 0.0);
    other = r;
    other.weights.layout.fp8_block = 0;
    CHECK(detail::large_step_expert_block(other, v011, 128) == 0.0);
    other = r;
    other.gpu = gpus::b200;
    CHECK(detail::large_step_expert_block(other, v011, 128) == 0.0);
    // gpt-oss-120b's experts are 2,880 wide, not a multiple of 128: Triton whatever the step.
    const Replica oss{.model = presets::gpt_oss_120b,
                      .gpu = gpus::h200_sxm,
                      .weights = {.format = WeightFormat::fp8, .layout = {.fp8_block = 128}},
                      .kv = KvDtype::bf16};
    CHECK(detail::large_step_expert_block(oss, v011, 4096) == 0.0);
    // In a step: a static batch prefilling 16 prompts of 8 tokens, 128 tokens routed to 8 of 256
    // experts each, Poisson(4) rows an expert. 256 (1 - (1 - 8/256)^128) = 251.601 experts are
    // touched; main's Triton pads each to a 16-row tile (a step of at most 256 tokens; past 16
    // rows with odds about 1e-6), 0.11's DeepGEMM to 128: 112 rows more an expert, each row
    // 2 x 3 x 7,168 x 256 x 58 MoE layers = 638,582,784 FLOPs on a rank. 1.79948e13 FLOPs more.
    const Load l{
        .kind = LoadKind::static_batch, .concurrency = 16, .prompt_tokens = 8, .output_tokens = 2};
    EstimateParams tiled = half;
    tiled.expert_tile_rows = 64.0;
    const LatencyEstimate triton = estimate_latency(r, l, tiled);
    const LatencyEstimate deep = estimate_latency(r, l, tiled, v011);
    CHECK((deep.prefill_step.flops - triton.prefill_step.flops).in(FLOP) ==
          Approx(638582784.0 * 251.601146 * (128.0 - 16.0 * 1.0000012)).epsilon(1e-6));
    // The 16 decodes of a step stay on Triton.
    CHECK(deep.decode_step.flops == triton.decode_step.flops);
}

TEST_CASE("the routed experts' grouped GEMMs run at a fraction of their own", "[estimate][moe]") {
    // Mixtral-8x7B's prefill of 100 tokens: each token's 2 experts carry routed FLOPs of
    // 2 x 2 x 3 x 4,096 x 14,336 x 32 = 22,548,578,304 a token, 2,254,857,830,400 for the 100.
    // At 0.125 of 100 TFLOP/s instead of the GEMMs' 0.5 they take 180.389 ms, not 45.097 ms:
    // 135.291 ms added; the FLOPs and bytes do not move.
    const Replica r{.model = presets::mixtral_8x7b,
                    .gpu = round_gpu(),
                    .weights = {.format = WeightFormat::bf16},
                    .kv = KvDtype::bf16};
    const Load l{.kind = LoadKind::static_batch, .prompt_tokens = 100, .output_tokens = 2};
    EstimateParams slow = half;
    slow.experts = 0.125;
    const LatencyEstimate plain = estimate_latency(r, l, half);
    const LatencyEstimate e = estimate_latency(r, l, slow);
    const double routed = 100.0 * 2.0 * 2.0 * 3.0 * 4096.0 * 14336.0 * 32.0;
    CHECK((e.prefill_step.compute - plain.prefill_step.compute).in(seconds) ==
          Approx(routed / 12.5e12 - routed / 50e12));
    CHECK((e.prefill_step.compute - plain.prefill_step.compute).in(milliseconds) ==
          Approx(135.291).epsilon(1e-4));
    CHECK(e.prefill_step.flops == plain.prefill_step.flops);
    CHECK(e.prefill_step.memory == plain.prefill_step.memory);
}

TEST_CASE("with pipeline stages a step's times are summed over the stages", "[estimate]") {
    // pp 2: 16 layers a stage, so the layer overhead is 16 x 10 us on each, 320 us in all.
    const LatencyEstimate e = estimate_latency(
        llama_8b(1, 2), {.kind = LoadKind::static_batch, .prompt_tokens = 1000, .output_tokens = 2},
        half);
    CHECK(e.decode_step.layers.in(microseconds) == Approx(320.0));
}

TEST_CASE("the bound beside the estimate is the roofline's, at the batch the estimate runs",
          "[estimate]") {
    const Replica r = llama_8b();
    const Load l{.concurrency = 16, .prompt_tokens = 2000, .output_tokens = 200, .max_running = 8};
    const LatencyEstimate e = estimate_latency(r, l, half);
    CHECK(e.itl_bound == decode_bound(r, 8, 2000).tpot);
    CHECK(e.ttft_bound == prefill_bound(r, 2000).ttft);
    CHECK(e.itl > e.itl_bound);
}

TEST_CASE("the running cap is the engine's own pool, within its sequence cap", "[estimate]") {
    // Llama-3-70B in fp8 on 2 x H100, 2,000 + 500 tokens a request.
    const Load l{.concurrency = 5000, .prompt_tokens = 2000, .output_tokens = 500};
    const BudgetOptions o{.reserve = {.sampler = VllmSampler::plain}};
    const auto replica = [](ParallelRules e) {
        return Replica{.model = presets::llama_3_70b,
                       .gpu = gpus::h100_sxm,
                       .parallel = {.tp = 2, .rules = e},
                       .weights = {.format = WeightFormat::fp8},
                       .kv = KvDtype::fp8_e4m3};
    };
    // SGLang admits a prompt only while its token pool holds the prompt and its max_new_tokens
    // (schedule_policy.py, add_one_req): whole requests of 2,500 tokens in the pool (page 1).
    const Replica sgl = replica(ParallelRules::sglang);
    const EngineReport s = engine_report(Engine::sglang, sgl, 2500, o);
    const RunningCap cs = running_cap(sgl, l);
    CHECK(cs.sequences == s.sglang.max_total_num_tokens / 2500);
    CHECK(cs.holds_one);
    // Its pool is mem_fraction_static's (0.83 on an H100 at tp 2) less the weights, below what
    // vLLM's 0.9 leaves: the same replica admits fewer requests on SGLang.
    const Replica vll = replica(ParallelRules::vllm);
    const EngineReport v = engine_report(Engine::vllm, vll, 2500, o);
    const RunningCap cv = running_cap(vll, l);
    CHECK(cv.sequences == std::min<std::uint64_t>(v.vllm.admitted, 1024));
    CHECK(cs.sequences < cv.sequences);
    // Given, max_running replaces the pool.
    Load given = l;
    given.max_running = 7;
    CHECK(running_cap(sgl, given).sequences == 7);
    // A run's own options: TensorRT-LLM's pool is free_gpu_memory_fraction of the memory free
    // after load, so at 0.8 it admits what engine_report gives at 0.8, fewer than at its 0.9.
    const Replica trt = replica(ParallelRules::trtllm);
    EngineOptions eo;
    eo.trtllm.free_gpu_memory_fraction = 0.8;
    const EngineReport t = engine_report(Engine::trtllm, trt, 2500, o, eo);
    CHECK(running_cap(trt, l, eo).sequences == t.summary.max_sequences());
    CHECK(running_cap(trt, l, eo).sequences < running_cap(trt, l).sequences);
    // And its max_batch_size caps what the pool holds.
    eo.trtllm.max_batch_size = 5;
    CHECK(running_cap(trt, l, eo).sequences == 5);
}

TEST_CASE("the running cap is the pool of the vLLM release that ran", "[estimate]") {
    // Llama-3-8B in bf16 on one H100 under vLLM, requests of 1,000 + 24 tokens: 64 blocks of
    // 16 x 128 KiB = 128 MiB each. v0.19 and v0.20 differ only in gpu_memory_utilization, 0.90
    // and 0.92 (vllm/config/cache.py; CUDA graphs charged from v0.21 in neither, the batch
    // defaults and the weights alike): the pool of v0.20 is 0.02 x 85,029,027,840 B (the CUDA
    // runtime's total) = 1,700,580,557 B = 810.9 blocks of 2 MiB larger, 12.67 requests of 64
    // blocks: 12 or 13 more by where the two pools' block counts fall.
    const Load l{.concurrency = 5000, .prompt_tokens = 1000, .output_tokens = 24};
    const Replica r{.model = presets::llama_3_8b, .gpu = gpus::h100_sxm};
    const std::uint64_t v19 = running_cap(r, l, {}, EngineVersion{0, 19}).sequences;
    const std::uint64_t v20 = running_cap(r, l, {}, EngineVersion{0, 20}).sequences;
    CHECK(v20 - v19 >= 12);
    CHECK(v20 - v19 <= 13);
    // Unset, the newest release's pool (v0.30: 0.92, graphs charged), below v0.20's by the graphs.
    CHECK(running_cap(r, l).sequences == running_cap(r, l, {}, vllm_newest_release).sequences);
    CHECK(running_cap(r, l).sequences < v20);
    // Another engine's pool takes no vLLM release.
    Replica sgl = r;
    sgl.parallel.rules = ParallelRules::sglang;
    CHECK(running_cap(sgl, l, {}, EngineVersion{0, 11}).sequences == running_cap(sgl, l).sequences);
}

TEST_CASE("the estimate never beats the bound, whatever the fractions", "[estimate][property]") {
    // Fractions <= 1 and fixed costs >= 0 only slow a step: a property over a grid of loads.
    const Replica r = llama_8b(2);
    // Attention's own fraction (0: the GEMMs') of the bf16 peak, no higher than the bound's.
    for (double f : {1.0, 0.7, 0.3})
        for (double a : {0.0, 1.0, 0.2})
            for (std::uint64_t c : {1, 4, 64, 512})
                for (std::uint64_t in : {16, 1000, 9000})
                    // vLLM's budget before v0.28 and from it (PR #51726): at 16,384 tokens a step
                    // holds one 9,000-token prompt whole but not two.
                    for (std::uint64_t budget : {8192, 16384}) {
                        const Load l{.concurrency = c,
                                     .prompt_tokens = in,
                                     .output_tokens = 64,
                                     .max_num_batched_tokens = budget};
                        const LatencyEstimate e =
                            estimate_latency(r, l, {.bandwidth = f, .compute = f, .attention = a});
                        CHECK(e.itl >= e.itl_bound);
                        CHECK(e.ttft >= e.ttft_bound);
                        CHECK(e.tokens_per_s <= e.tokens_per_s_bound);
                    }
}

TEST_CASE("GPU families come from the GPU id", "[estimate]") {
    CHECK(gpu_family(gpus::a100_sxm4_80gb) == GpuFamily::ampere);
    CHECK(gpu_family(gpus::l40s) == GpuFamily::ada);
    CHECK(gpu_family(gpus::l4) == GpuFamily::ada);
    CHECK(gpu_family(gpus::h100_sxm) == GpuFamily::hopper);
    CHECK(gpu_family(gpus::h200_sxm) == GpuFamily::hopper);
    CHECK(gpu_family(gpus::b200) == GpuFamily::blackwell);
    CHECK(gpu_family(gpus::b300) == GpuFamily::blackwell);
    CHECK(gpu_family(gpus::gb300) == GpuFamily::blackwell);
    CHECK(gpu_family(gpus::h20) == GpuFamily::hopper);
    CHECK(gpu_family(gpus::mi300x) == GpuFamily::cdna3);
    CHECK(gpu_family(round_gpu()) == std::nullopt);
    CHECK(default_params(gpus::mi325x)->family == GpuFamily::cdna3);
    // Ada has no published measurement and says so; Blackwell is fitted on its own rows.
    CHECK_FALSE(default_params(GpuFamily::ada).fitted);
    CHECK(default_params(GpuFamily::blackwell).fitted);
}

TEST_CASE("parameters and loads out of range are refused with the field named", "[estimate]") {
    const Replica r = llama_8b();
    CHECK_THROWS_WITH(estimate_latency(r, {}, {.bandwidth = 1.5}),
                      Catch::Contains("estimate.bandwidth") && Catch::Contains("(0, 1]"));
    CHECK_THROWS_WITH(estimate_latency(r, {}, {.compute = 0.0}),
                      Catch::Contains("estimate.compute"));
    CHECK_THROWS_WITH(estimate_latency(r, {}, {.attention = 1.5}),
                      Catch::Contains("estimate.attention") && Catch::Contains("(0, 1]"));
    CHECK_THROWS_WITH(estimate_latency(r, {.concurrency = 0}, half),
                      Catch::Contains("load.concurrency"));
    CHECK_THROWS_WITH(estimate_latency(r, {.prompt_tokens = 0}, half),
                      Catch::Contains("load.prompt_tokens"));
    CHECK_THROWS_WITH(estimate_latency(r, {.max_running = 0}, half),
                      Catch::Contains("load.max_running"));
}

TEST_CASE("matmuls run in the weights' own type where the GPU and vLLM's kernel take it",
          "[estimate][compute]") {
    const auto with = [](WeightFormat f) { return WeightOptions{.format = f}; };
    // H100: an fp8 peak (1,978.9 TFLOP/s), so fp8 checkpoints run W8A8 (vLLM's Fp8LinearMethod
    // uses Marlin only below compute capability 8.9); int8 is W8A8 INT8.
    STATIC_REQUIRE(matmul_compute(with(WeightFormat::fp8), gpus::h100_sxm) == ComputeDtype::fp8);
    STATIC_REQUIRE(matmul_compute(with(WeightFormat::int8), gpus::h100_sxm) == ComputeDtype::int8);
    STATIC_REQUIRE(matmul_compute(with(WeightFormat::bf16), gpus::h100_sxm) == ComputeDtype::bf16);
    STATIC_REQUIRE(matmul_compute(with(WeightFormat::fp16), gpus::h100_sxm) == ComputeDtype::fp16);
    // A100: no fp8 peak (its spec's dense fp8 is 0), so FP8 Marlin: weight-only, bf16 matmuls.
    STATIC_REQUIRE(matmul_compute(with(WeightFormat::fp8), gpus::a100_sxm4_80gb) ==
                   ComputeDtype::bf16);
    // Weight-only 4-bit kernels (AWQ/GPTQ Marlin, gpt-oss's MXFP4 experts) multiply in bf16.
    STATIC_REQUIRE(matmul_compute(with(WeightFormat::int4), gpus::h100_sxm) == ComputeDtype::bf16);
    STATIC_REQUIRE(matmul_compute(with(WeightFormat::mxfp4), gpus::b200) == ComputeDtype::bf16);
    // NVFP4 is W4A4 where there is an fp4 peak (B200: 9,000 TFLOP/s), weight-only elsewhere.
    STATIC_REQUIRE(matmul_compute(with(WeightFormat::nvfp4), gpus::b200) == ComputeDtype::fp4);
    STATIC_REQUIRE(matmul_compute(with(WeightFormat::nvfp4), gpus::h100_sxm) == ComputeDtype::bf16);
    // An explicit type wins.
    RooflineOptions o;
    o.compute = ComputeDtype::bf16;
    const Replica fp8_70b{.model = presets::llama_3_70b,
                          .gpu = gpus::h100_sxm,
                          .parallel = {.tp = 2},
                          .weights = with(WeightFormat::fp8),
                          .kv = KvDtype::fp8_e4m3};
    CHECK(with_compute(o, fp8_70b).compute == ComputeDtype::bf16);
    CHECK(with_compute(RooflineOptions{}, fp8_70b).compute == ComputeDtype::fp8);
}

TEST_CASE("an fp8 checkpoint's estimate is timed at the fp8 peak unless told otherwise",
          "[estimate][compute]") {
    // NVIDIA's NIM figures for Llama-3.3-70B fp8 on 2 x H100, 5,000 in / 500 out, concurrency 50
    // (tests/data/latency_measurements.json, held out): measured ITL 59.73 ms. Its default
    // options leave the compute type to the weights: fp8, as docs/accuracy.md's table computes it.
    const Replica r{.model = presets::llama_3_70b,
                    .gpu = gpus::h100_sxm,
                    .parallel = {.tp = 2},
                    .weights = {.format = WeightFormat::fp8},
                    .kv = KvDtype::fp8_e4m3};
    const Load load{.concurrency = 50, .prompt_tokens = 5000, .output_tokens = 500};
    const EstimateParams p = default_params(GpuFamily::hopper).params;
    RooflineOptions fp8, bf16;
    fp8.compute = ComputeDtype::fp8;
    bf16.compute = ComputeDtype::bf16;
    const LatencyEstimate by_default = estimate_latency(r, load, p);
    CHECK(by_default.itl == estimate_latency(r, load, p, fp8).itl);
    // Within 16 % of the measurement (63.90 ms, +7 %, with vLLM's rules, the replica's default;
    // docs/accuracy.md's row runs NIM's TensorRT engine, whose layers cost 1.65 times as much) ...
    CHECK(by_default.itl.in(milliseconds) == Approx(63.90).margin(0.01));
    CHECK(by_default.itl.in(milliseconds) == Approx(59.73).epsilon(0.16));
    // ... where timing fp8 matmuls at the bf16 peak misses by over 60 % (102.58 ms): the prefill
    // chunks each step carries are compute-bound.
    CHECK(estimate_latency(r, load, p, bf16).itl.in(milliseconds) > 1.6 * 59.73);
}

TEST_CASE("an engine that does not compile its forward pays more per layer",
          "[estimate][layer_overhead]") {
    // Llama-3-70B has 80 layers. vLLM (compiled, torch.compile by default) pays layer_overhead a
    // layer; SGLang (no torch.compile by default) uncompiled_layer_scale times it. Hopper's
    // defaults: 73 us and 1.45, so a decode step's fixed layer time is 80 x 73 us = 5.840 ms on
    // vLLM and 80 x 73 us x 1.45 = 8.468 ms on SGLang.
    Replica r{.model = presets::llama_3_70b,
              .gpu = gpus::h100_sxm,
              .parallel = {.tp = 2},
              .weights = {.format = WeightFormat::fp8},
              .kv = KvDtype::fp8_e4m3};
    const Load load{.concurrency = 4, .prompt_tokens = 1000, .output_tokens = 100};
    const EstimateParams hopper = default_params(GpuFamily::hopper).params;
    CHECK(hopper.layer_overhead.in(microseconds) == Approx(73.0));
    CHECK(hopper.uncompiled_layer_scale == Approx(1.45));
    CHECK(estimate_latency(r, load, hopper).decode_step.layers.in(milliseconds) ==
          Approx(5.84).margin(1e-9));
    r.parallel.rules = ParallelRules::sglang;
    CHECK(estimate_latency(r, load, hopper).decode_step.layers.in(milliseconds) ==
          Approx(8.468).margin(1e-9));
    // Given parameters: 10 us a layer at a scale of 2 is 80 x 20 us = 1.6 ms on SGLang, and the
    // scale leaves vLLM's 80 x 10 us = 0.8 ms alone.
    EstimateParams p{.bandwidth = 1.0,
                     .compute = 1.0,
                     .layer_overhead = 10.0 * microseconds,
                     .uncompiled_layer_scale = 2.0};
    CHECK(estimate_latency(r, load, p).decode_step.layers.in(milliseconds) ==
          Approx(1.6).margin(1e-9));
    // TensorRT-LLM with its own multiples unset (0) takes SGLang's.
    r.parallel.rules = ParallelRules::trtllm;
    CHECK(estimate_latency(r, load, p).decode_step.layers.in(milliseconds) ==
          Approx(1.6).margin(1e-9));
    r.parallel.rules = ParallelRules::vllm;
    CHECK(estimate_latency(r, load, p).decode_step.layers.in(milliseconds) ==
          Approx(0.8).margin(1e-9));
    // A scale of 0 (or below) is refused, naming the field; TensorRT-LLM's may be 0, not below
    // nor above 100.
    p.uncompiled_layer_scale = 0.0;
    CHECK_THROWS_WITH(estimate_latency(r, load, p),
                      Catch::Contains("estimate.uncompiled_layer_scale"));
    p.uncompiled_layer_scale = 1.0;
    p.trtllm_layer_scale = -1.0;
    CHECK_THROWS_WITH(estimate_latency(r, load, p), Catch::Contains("estimate.trtllm_layer_scale"));
    p.trtllm_layer_scale = 0.0;
    p.trtllm_engine_layer_scale = 101.0;
    CHECK_THROWS_WITH(estimate_latency(r, load, p),
                      Catch::Contains("estimate.trtllm_engine_layer_scale"));
}

TEST_CASE("TensorRT-LLM's layers: the PyTorch backend's fused ones and a TensorRT engine's",
          "[estimate][layer_overhead][trtllm]") {
    // Hopper's defaults: 73 us a layer, 6 us an all-reduce; TensorRT-LLM's PyTorch backend 0.85
    // a dense layer, a TensorRT engine 1.65, SGLang (and TensorRT-LLM's MoE layers) 1.45.
    const EstimateParams hopper = default_params(GpuFamily::hopper).params;
    CHECK(hopper.trtllm_layer_scale == Approx(0.85));
    CHECK(hopper.trtllm_engine_layer_scale == Approx(1.65));
    CHECK(hopper.all_reduce_latency.in(microseconds) == Approx(6.0));
    Replica r{.model = presets::llama_3_70b,
              .gpu = gpus::h100_sxm,
              .parallel = {.tp = 2, .rules = ParallelRules::trtllm},
              .weights = {.format = WeightFormat::fp8},
              .kv = KvDtype::fp8_e4m3};
    const Load load{.concurrency = 4, .prompt_tokens = 1000, .output_tokens = 100};
    // Llama-3-70B's 80 dense layers: 80 x 73 us x 0.85 = 4.964 ms on the PyTorch backend.
    const LatencyEstimate torch = estimate_latency(r, load, hopper);
    CHECK(torch.decode_step.layers.in(milliseconds) == Approx(4.964).margin(1e-9));
    // A TensorRT engine (no CUDA graph): 80 x 73 us x 1.65 = 9.636 ms.
    RooflineOptions engine;
    engine.trtllm_tensorrt_engine = true;
    const LatencyEstimate built = estimate_latency(r, load, hopper, engine);
    CHECK(built.decode_step.layers.in(milliseconds) == Approx(9.636).margin(1e-9));
    // The PyTorch backend's all-reduce has no fixed latency beside its bytes; the engine's (and
    // vLLM's) pays 6 us for each of the 160 all-reduces (two a layer): 0.96 ms more.
    CHECK((built.decode_step.all_reduce - torch.decode_step.all_reduce).in(milliseconds) ==
          Approx(0.96).margin(1e-9));
    r.parallel.rules = ParallelRules::vllm;
    CHECK((estimate_latency(r, load, hopper).decode_step.all_reduce - torch.decode_step.all_reduce)
              .in(milliseconds) == Approx(0.96).margin(1e-9));
    // DeepSeek-V3: 3 dense layers and 58 MoE layers, whose routing, permutation, grouped GEMMs and
    // finalize launch as SGLang's do: 3 x 73 x 0.85 + 58 x 73 x 1.45 = 186.15 + 6,139.3 us
    // = 6.32545 ms.
    const Replica v3{.model = presets::deepseek_v3,
                     .gpu = gpus::h200_sxm,
                     .parallel = {.tp = 8, .rules = ParallelRules::trtllm},
                     .weights = {.format = WeightFormat::fp8},
                     .kv = KvDtype::bf16};
    CHECK(estimate_latency(v3, load, hopper).decode_step.layers.in(milliseconds) ==
          Approx(6.32545).margin(1e-9));
}
