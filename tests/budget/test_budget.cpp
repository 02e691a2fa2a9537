#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <kvplan/budget.hpp>
#include <kvplan/presets.hpp>

#include "support/datasheet_gpus.hpp"

using namespace kvplan;
using namespace kvplan::presets;
using kvplan::testing::a100_sxm4_80gb;
using kvplan::testing::h100_sxm;

// Figures used throughout:
//   Llama-3-70B: 70,553,706,496 parameters -> 141,107,412,992 B in bf16; its embedding table is
//     128,256 x 8,192 x 2 B = 2,101,346,304 B. KV: 2 x 80 x 8 x 128 x 2 B = 327,680 B per token.
//   Llama-3-8B: 8,030,261,248 parameters -> 16,060,522,496 B in bf16.
//   Reserve defaults on one GPU: CUDA context 700 MiB = 734,003,200 B; CUDA graphs 256 x 2 MiB =
//     536,870,912 B; no communication buffers on a single GPU.
//   Activation peak of vLLM's profile run, for a hidden size h and MLP width I (gated, tp 1):
//     (2h + 3I) x 2 B per token, plus one row of logits per sequence x vocab x (2 + 4) B; vLLM's
//     defaults are 2,048 tokens in 256 sequences on an A100, 8,192 in 1,024 on an H100.

TEST_CASE("Llama-3-70B in bf16 does not fit on one A100-SXM4-80GB at 32 x 4,096 tokens",
          "[budget]") {
    const Replica r{.model = llama_3_70b, .gpu = a100_sxm4_80gb()};
    const ReplicaBudget b = replica_budget(r, {.context = 4096, .concurrency = 32});
    REQUIRE(b.num_stages == 1);
    const StageBudget& s = b.stages[0];
    // usable = ceil(81,920 MiB x 0.92) = ceil(85,899,345,920 x 0.92) = ceil(79,027,398,246.4).
    CHECK(s.usable.count() == 79'027'398'247ULL);
    CHECK(s.weights.count() == 141'107'412'992ULL);
    // Activation: (2 x 8,192 + 3 x 28,672) x 2 B = 204,800 B x 2,048 = 419,430,400 B; logits
    // 256 x 128,256 x 6 B = 197,001,216 B; together 616,431,616 B.
    CHECK(s.reserve.activation_model.tokens == 2048);
    CHECK(s.reserve.activation_model.per_token.count() == 204'800);
    CHECK(s.reserve.activation.bytes.count() == 616'431'616ULL);
    // Reserve = 734,003,200 + 616,431,616 + 536,870,912 + 0 = 1,887,305,728 B.
    CHECK(s.reserve.total().count() == 1'887'305'728ULL);
    // KV: 32 x 4,096 x 327,680 B = 42,949,672,960 B (40 GiB), in 16-token blocks exactly.
    CHECK(s.kv_needed == 40 * GiB);
    // Weights alone exceed the usable memory: no KV budget, and the shortfall is
    // 141,107,412,992 + 1,887,305,728 + 42,949,672,960 - 79,027,398,247 = 106,916,993,433 B.
    CHECK(s.kv_budget.is_zero());
    CHECK_FALSE(b.fits);
    CHECK(b.shortfall.count() == 106'916'993'433ULL);
    CHECK(b.headroom.is_zero());
    CHECK(b.max_concurrency == 0);
    CHECK(b.longest_single_context == 0u);
}

TEST_CASE("the smallest replica for Llama-3-70B at 32 x 4,096 takes three GPUs", "[budget]") {
    const std::array gpus{a100_sxm4_80gb(), h100_sxm()};
    const auto choice = smallest_replica(llama_3_70b, gpus, {}, KvDtype::bf16,
                                         {.context = 4096, .concurrency = 32});
    REQUIRE(choice.has_value());
    // One GPU cannot hold the weights. Two cannot either: half the weights plus half the KV is
    // 70.55 + 21.47 = 92.0 GB against 79.0 GB usable (A100) or 78.7 GB (H100), whether split by
    // tp or by pp. Three GPUs allow only tp 1 x pp 3 (tp is a power of two dividing 3): stages of
    // 27, 27 and 26 layers; the first holds 27/80 of the layers' 139.0 GB plus the 2.1 GB
    // embedding = 49.0 GB, 27/80 of the KV = 14.5 GB, and about 2.2 GB of reserve: 65.7 GB fits
    // in 79.0 GB. The A100 is listed first, so it is chosen.
    CHECK(choice->budget.gpus() == 3);
    CHECK(choice->gpu_index == 0);
    CHECK(choice->parallel.tp == 1);
    CHECK(choice->parallel.pp == 3);
    CHECK(choice->budget.fits);
}

TEST_CASE("weights, reserve and KV budget never exceed the usable memory", "[budget][property]") {
    for (const Model* m : all) {
        for (double u : {0.5, 0.8, 0.9, 0.92, 0.95, 1.0}) {
            for (std::uint32_t tp : {1u, 2u, 4u, 8u}) {
                const Replica r{.model = *m, .gpu = h100_sxm(), .parallel = {.tp = tp}};
                ReplicaBudget b{};
                try {
                    b = replica_budget(r, {.context = 8192, .concurrency = 8}, {.utilization = u});
                } catch (const InvalidLayout&) {
                    continue;  // tp does not divide this model's heads
                }
                for (const StageBudget& s : b.stage_budgets()) {
                    INFO(m->name().c_str() << " tp " << tp << " utilization " << u);
                    const Bytes committed = s.weights + s.reserve.total();
                    // Either the budget is what remains of usable memory, exactly, or nothing
                    // remains and the budget is zero.
                    if (committed <= s.usable)
                        CHECK(committed + s.kv_budget == s.usable);
                    else
                        CHECK(s.kv_budget.is_zero());
                    // Fitting means weights, reserve and the KV needed fit in usable memory.
                    CHECK(s.fits() == (committed + s.kv_needed <= s.usable));
                    if (s.fits()) CHECK(committed + s.kv_needed + s.headroom == s.usable);
                }
            }
        }
    }
}

TEST_CASE("capacity grows with utilization", "[budget][property]") {
    const Replica r{.model = llama_3_8b, .gpu = h100_sxm()};
    std::uint64_t last_tokens = 0, last_sequences = 0;
    for (int pct = 30; pct <= 100; pct += 5) {
        const ReplicaBudget b =
            replica_budget(r, {.context = 8192, .concurrency = 16}, {.utilization = pct / 100.0});
        INFO("utilization " << pct << "%");
        CHECK(b.kv_tokens.value() >= last_tokens);
        CHECK(b.max_concurrency >= last_sequences);
        last_tokens = *b.kv_tokens;
        last_sequences = b.max_concurrency;
    }
    // 5 points of 85,520,809,984 B are 4.28 GB, 32,000+ tokens of 128 KiB: it did grow.
    CHECK(last_tokens > 400'000);
}

TEST_CASE("a given KV memory per GPU replaces the computed budget", "[budget]") {
    // Llama-3-70B on 4 x H100 at tp 4: each rank holds 2 of the 8 KV heads, 81,920 B per token,
    // 1,310,720 B per 16-token block.
    const Replica r{.model = llama_3_70b, .gpu = h100_sxm(), .parallel = {.tp = 4}};
    const ReplicaBudget b =
        replica_budget(r, {.context = 4096, .concurrency = 32}, {.kv_memory_per_gpu = 40 * GiB});
    const StageBudget& s = b.stages[0];
    CHECK(s.kv_given);
    CHECK(s.kv_budget == 40 * GiB);
    CHECK(s.kv_per_token.count() == 81'920);
    // 40 GiB / 1,310,720 B = 32,768 blocks of 16 tokens = 524,288 tokens.
    CHECK(b.kv_tokens == 524'288u);
    // A 4,096-token sequence is 256 blocks = 335,544,320 B: 128 of them fit.
    CHECK(b.max_concurrency == 128);
    // 32 sequences get 40 GiB / 32 = 1,342,177,280 B each = 16,384 tokens of 81,920 B.
    CHECK(b.max_context == 16'384u);
    // 32 x 335,544,320 B = 10 GiB needed: 30 GiB of headroom.
    CHECK(b.fits);
    CHECK(b.headroom == 30 * GiB);
}

TEST_CASE("the busiest pipeline stage sets the capacity", "[budget]") {
    // Llama-3-70B at pp 3: vLLM's split gives 27, 27 and 26 layers. With 20 GiB of KV per GPU a
    // 4,096-token sequence takes 27 x 4,096 x 4,096 B = 452,984,832 B on the first two stages
    // (47 fit: 21,474,836,480 / 452,984,832 = 47.4) and 26 x 4,096 x 4,096 = 436,207,616 B on the
    // last (49 fit). The replica holds 47, set by stage 0.
    const Replica r{.model = llama_3_70b, .gpu = h100_sxm(), .parallel = {.pp = 3}};
    const ReplicaBudget b =
        replica_budget(r, {.context = 4096, .concurrency = 1}, {.kv_memory_per_gpu = 20 * GiB});
    CHECK(b.stages[0].max_concurrency == 47);
    CHECK(b.stages[2].max_concurrency == 49);
    CHECK(b.limiting_stage == 0);
    CHECK(b.max_concurrency == 47);
}

TEST_CASE("per-stage figures agree with the core and the weights", "[budget]") {
    const Replica r{.model = gemma_2_27b,
                    .gpu = h100_sxm(),
                    .parallel = {.tp = 2, .pp = 2},
                    .kv = KvDtype::fp8_e4m3};
    const Layout l = r.layout();
    const ReplicaBudget b =
        replica_budget(r, {.context = 6000, .concurrency = 5, .block_size = 16});
    for (std::uint32_t st = 0; st < 2; ++st) {
        const StageBudget& s = b.stages[st];
        CHECK(s.weights == weight_bytes_per_rank(gemma_2_27b, l, st).total());
        CHECK(s.kv_per_sequence ==
              reserved_per_sequence(gemma_2_27b, KvDtype::fp8_e4m3, 6000, 16, l.stage(st)));
        CHECK(s.kv_per_token == kv_bytes_per_token(gemma_2_27b, KvDtype::fp8_e4m3, l.stage(st)));
        CHECK(s.max_concurrency == sequences_that_fit(s.kv_budget, gemma_2_27b, KvDtype::fp8_e4m3,
                                                      6000, 16, l.stage(st)));
    }
}

TEST_CASE("the activation model is within 3% of vLLM's measured profile peak", "[budget]") {
    // vLLM issue #10517 (RTX 3090, Llama-3.1-8B, chunked prefill off, so the profile batch is
    // max_model_len tokens in 256 sequences): "Loading model weights took 14.9888 GB" (GiB) and
    // peak_torch_memory 17.06 GiB at 20,000 tokens, 17.98 GiB at 29,000: activation peaks of
    // 2.0712 and 2.9912 GiB. Llama-3.1-8B has Llama-3-8B's shapes.
    // Model: (2 x 4,096 + 3 x 14,336) x 2 B = 102,400 B per token, logits 256 x 128,256 x 6 B =
    // 197,001,216 B: 2,245,001,216 B = 2.0908 GiB and 3,166,601,216 B = 2.9491 GiB.
    const Layout l{llama_3_8b, {}};
    const ActivationPeak at20k = activation_peak(llama_3_8b, l, 0, 20'000, 256);
    const ActivationPeak at29k = activation_peak(llama_3_8b, l, 0, 29'000, 256);
    CHECK(at20k.total().count() == 2'245'001'216ULL);
    CHECK(at29k.total().count() == 3'166'601'216ULL);
    CHECK(at20k.total().in(GiB) == Approx(17.06 - 14.9888).epsilon(0.03));
    CHECK(at29k.total().in(GiB) == Approx(17.98 - 14.9888).epsilon(0.03));
}

TEST_CASE("vLLM's out-of-place all-reduce sets the MLP's peak where the hidden size is wider",
          "[budget]") {
    // Llama-3-70B: h = 8,192, I = 28,672, 64 heads of 128, 8 KV heads. vLLM's all-reduce returns a
    // new tensor (vLLM PR #10121; pynccl.py allocates the output), so at the MLP's all-reduce the
    // activation (I / tp), the partial and the reduced sums (2 x h) live beside the residual
    // stream (2 h), against the gate/up peak of 3 x I / tp:
    //   tp 8: max(3 x 3,584 = 10,752, 3,584 + 16,384 = 19,968) -> (16,384 + 19,968) x 2 B =
    //         72,704 B a token, where the gate/up peak alone gives 54,272 B;
    //   tp 4: max(21,504, 7,168 + 16,384 = 23,552) -> (16,384 + 23,552) x 2 = 79,872 B;
    //   tp 2: max(43,008, 14,336 + 16,384 = 30,720): the gate/up peak, 118,784 B;
    //   tp 1: no all-reduce, (16,384 + 86,016) x 2 = 204,800 B.
    const auto per_token = [](std::uint32_t tp) {
        const Layout l{llama_3_70b, {.tp = tp}};
        return activation_peak(llama_3_70b, l, 0, 16'384, 64).per_token.count();
    };
    CHECK(per_token(8) == 72'704);
    CHECK(per_token(4) == 79'872);
    CHECK(per_token(2) == 118'784);
    CHECK(per_token(1) == 204'800);
    // At 16,384 tokens and tp 8 the term adds 16,384 x 18,432 B = 301,989,888 B (0.28 GiB).
    CHECK((per_token(8) - 54'272) * 16'384 == 301'989'888ULL);
}

TEST_CASE("a sorting sampler sets vLLM's profile peak", "[budget]") {
    // llm-d's vLLM memory study (vllm/vllm-openai of January 2026, v0.13 or v0.14, whose profile
    // sampler sorts the logits; tests/data/startup_logs/vllm/llama-3.1-8b-h100-16k.log): on an
    // H100, Llama-3.1-8B-Instruct profiled at vLLM's defaults, 8,192 tokens in 1,024 sequences,
    // measured a torch peak memory increase of 4.76 GiB.
    // Forward: (2 x 4,096 + 3 x 14,336) x 2 B = 102,400 B per token x 8,192 = 838,860,800 B.
    // Sampling: output 8,192 x 4,096 x 2 B = 67,108,864 B; logits 1,024 x 128,256 x 6 B =
    // 788,004,864 B; the sort 1,024 x 128,256 x 32 B = 4,202,692,608 B; 5,057,806,336 B in all,
    // 4.7105 GiB, the larger of the two (4.742 GiB with PyTorch's cuBLAS workspace, which the
    // engine charges beside it: test_engine.cpp).
    const Layout l{llama_3_8b, {}};
    const ActivationPeak sorts =
        activation_peak(llama_3_8b, l, 0, 8192, 1024, {}, VllmSampler::sorts);
    CHECK(sorts.hidden.count() == 838'860'800ULL);
    CHECK(sorts.sampler.count() == 4'202'692'608ULL);
    CHECK(sorts.sampling().count() == 5'057'806'336ULL);
    CHECK(sorts.total() == sorts.sampling());
    CHECK(sorts.total().in(GiB) == Approx(4.76).epsilon(0.03));
    // Sampled plainly the logits add to the forward: 838,860,800 + 788,004,864 B.
    CHECK(activation_peak(llama_3_8b, l, 0, 8192, 1024).total().count() == 1'626'865'664ULL);
    // A forward larger than the sampling sets the peak: 20,000 tokens in 256 sequences give
    // 20,000 x 102,400 = 2,048,000,000 B against 163,840,000 + 256 x 128,256 x 38 =
    // 1,411,514,368 B of sampling.
    CHECK(activation_peak(llama_3_8b, l, 0, 20'000, 256, {}, VllmSampler::sorts).total().count() ==
          2'048'000'000ULL);
    // Off the LM head's stage nothing is sampled: the forward alone.
    const Layout pp{llama_3_8b, {.pp = 2}};
    const ActivationPeak first =
        activation_peak(llama_3_8b, pp, 0, 8192, 1024, {}, VllmSampler::sorts);
    CHECK(first.sampling().is_zero());
    CHECK(first.total() == first.hidden);
}

TEST_CASE("vLLM's batch defaults depend on the GPU", "[budget]") {
    // arg_utils.py: 16,384 tokens (PR #51726) and 1,024 sequences from 70 GiB unless the GPU is
    // an A100.
    CHECK(vllm_batch_defaults(h100_sxm()).max_num_batched_tokens == 16384);
    CHECK(vllm_batch_defaults(h100_sxm()).max_num_seqs == 1024);
    CHECK(vllm_batch_defaults(a100_sxm4_80gb()).max_num_batched_tokens == 2048);
    CHECK(vllm_batch_defaults(a100_sxm4_80gb()).max_num_seqs == 256);
    GpuSpec small = h100_sxm();
    small.id = "l40s";
    small.name = "NVIDIA L40S";
    small.memory_total = 46'068 * MiB;
    CHECK(vllm_batch_defaults(small).max_num_batched_tokens == 2048);
}

TEST_CASE("vLLM's batch defaults follow the release's rule", "[budget][release]") {
    // v0.8 gave the larger defaults to an H100 or H200 by name (PR #12369); v0.9 and main to 70
    // GiB or more that is not an A100 (PRs #17073, #17885). An H20 (95 GiB, not named) is 2,048
    // tokens and 256 sequences under v0.8 and 8,192 and 1,024 from v0.9; an H100 is 8,192 and
    // 1,024 under both; an A100 80GB is 2,048 and 256 under both. From v0.28 the larger GPUs
    // profile 16,384 tokens (PR #51726: "Update default _max_num_batched_tokens from 8192 to
    // 16384"), main's default; the others keep 2,048.
    GpuSpec h20 = h100_sxm();
    h20.id = "h20";
    h20.name = "NVIDIA H20 96GB";
    h20.memory_total = 95 * GiB;
    const VllmReleaseDefaults v08 = *vllm_release_defaults({0, 8});
    const VllmReleaseDefaults v27 = *vllm_release_defaults({0, 27});
    const VllmReleaseDefaults v28 = *vllm_release_defaults({0, 28});
    CHECK(vllm_batch_defaults(h20, v08).max_num_batched_tokens == 2048);
    CHECK(vllm_batch_defaults(h20, v08).max_num_seqs == 256);
    CHECK(vllm_batch_defaults(h20, v27).max_num_batched_tokens == 8192);
    CHECK(vllm_batch_defaults(h20, v27).max_num_seqs == 1024);
    CHECK(vllm_batch_defaults(h20, v28).max_num_batched_tokens == 16384);
    CHECK(vllm_batch_defaults(h20).max_num_batched_tokens == 16384);
    CHECK(vllm_batch_defaults(h20).max_num_seqs == 1024);
    CHECK(vllm_batch_defaults(h100_sxm(), v08).max_num_batched_tokens == 8192);
    CHECK(vllm_batch_defaults(h100_sxm(), v08).max_num_seqs == 1024);
    CHECK(vllm_batch_defaults(a100_sxm4_80gb(), v08).max_num_batched_tokens == 2048);
    CHECK(vllm_batch_defaults(a100_sxm4_80gb(), v28).max_num_batched_tokens == 2048);
    CHECK(vllm_batch_defaults(a100_sxm4_80gb()).max_num_seqs == 256);
}

TEST_CASE("FlashInfer's sampler in the profile run holds two fp32 copies of the logits",
          "[budget][release]") {
    // flashinfer/sampling.py, top_k_top_p_sampling_from_logits (top_k_first): top_k_mask_logits
    // allocates a masked copy like the fp32 logits (4 B) and torch.softmax of it another (4 B).
    // Llama-3.1-8B's shapes on an H100 at 8,192 tokens and 1,024 rows: the forward 838,860,800 B;
    // the sampling 67,108,864 (output) + 788,004,864 (logits, 6 B) + 1,024 x 128,256 x 8 =
    // 1,050,673,152 B = 1,905,786,880 B, above the forward with its logits (1,626,865,664 B).
    const Layout l{llama_3_8b, {}};
    const ActivationPeak fi =
        activation_peak(llama_3_8b, l, 0, 8192, 1024, {}, VllmSampler::flashinfer_logits);
    CHECK(fi.sampler.count() == 1'050'673'152ULL);
    CHECK(fi.total().count() == 1'905'786'880ULL);
    // v0.8 handed FlashInfer the fp32 softmax alone, 4 B a value: 525,336,576 B of sampler,
    // 1,380,450,304 B of sampling, below the forward with its logits.
    const ActivationPeak probs =
        activation_peak(llama_3_8b, l, 0, 8192, 1024, {}, VllmSampler::flashinfer_probs);
    CHECK(probs.sampler.count() == 525'336'576ULL);
    CHECK(probs.total().count() == 1'626'865'664ULL);
    // A forward larger than the sampling sets the peak with its logits, as issue #10517 measured:
    // 20,000 tokens in 256 rows, 2,048,000,000 + 197,001,216 B against 163,840,000 +
    // 197,001,216 + 262,668,288 B.
    CHECK(activation_peak(llama_3_8b, l, 0, 20'000, 256, {}, VllmSampler::flashinfer_logits)
              .total()
              .count() == 2'245'001'216ULL);
}

TEST_CASE("Triton's top-k/top-p in the profile run holds the softmax and the noise",
          "[budget][release]") {
    // vllm/v1/sample/ops/topk_topp_sampler.py (vLLM PR #33538, v0.17 on): apply_top_k_top_p masks
    // the fp32 logits in place by Triton's pivot search, then forward_native takes their fp32
    // softmax (4 B) and random_sample draws fp32 exponential noise like it (4 B): 8 B a value.
    // Llama-3.1-8B on an H100 at v0.19's defaults, 8,192 tokens in 1,024 rows: the forward
    // 838,860,800 B; the sampling 67,108,864 (output) + 788,004,864 (logits, 6 B) + 1,024 x
    // 128,256 x 8 = 1,050,673,152 B, 1,905,786,880 B (1.775 GiB) in all. llm-d-planner's vLLM
    // 0.19.0 run of it on an H100 (its pull request 205, accuracy/results/v0.19.0/logs) logs
    // "torch peak memory increase: 1.89GiB". Without the GPU's SM count that is all (6 % short);
    // with it, Triton's outlier buffer joins the sampling: min(SMs, 1,024 rows) = 132 programs on
    // an H100 SXM, 132 x 128,256 x 4 = 67,719,168 B (topk_topp_triton.py, _TRITON_BUFFER_CACHE),
    // 1,973,506,048 B (1.838 GiB) in all, 2.8 % under the log; PyTorch's cuBLAS workspace, which
    // the engine charges beside it, brings it within 1.1 % (test_engine.cpp). The sort would be
    // 4.71 GiB.
    const Layout l{llama_3_8b, {}};
    const ActivationPeak triton =
        activation_peak(llama_3_8b, l, 0, 8192, 1024, {}, VllmSampler::triton);
    CHECK(triton.sampler.count() == 1'050'673'152ULL);
    CHECK(triton.sampler_buffer.is_zero());
    CHECK(triton.total().count() == 1'905'786'880ULL);
    const ActivationPeak on_h100 = activation_peak(
        llama_3_8b, l, 0, 8192, 1024, {}, VllmSampler::triton, gpus::h100_sxm.compute_units);
    CHECK(on_h100.sampler_buffer.count() == 67'719'168ULL);
    CHECK(on_h100.total().count() == 1'973'506'048ULL);
    CHECK(on_h100.total().in(GiB) == Approx(1.89).epsilon(0.03));
    // Fewer rows than SMs: 100 programs, the buffer rounded up to 128 rows (next_power_of_2,
    // capped at the SMs), 128 x 128,256 x 4 = 65,667,072 B; 3 rows take 4. An L4's 58 SMs cap
    // 1,024 rows at 58: 58 x 128,256 x 4 = 29,755,392 B. Other samplers and unknown SMs: none.
    CHECK(triton_sampler_buffer_bytes(VllmSampler::triton, 100, 128'256, 132).count() ==
          65'667'072ULL);
    CHECK(triton_sampler_buffer_bytes(VllmSampler::triton, 3, 128'256, 132).count() ==
          4ULL * 128'256 * 4);
    CHECK(triton_sampler_buffer_bytes(VllmSampler::triton, 1024, 128'256, gpus::l4.compute_units)
              .count() == 29'755'392ULL);
    CHECK(triton_sampler_buffer_bytes(VllmSampler::sorts, 1024, 128'256, 132).is_zero());
    CHECK(triton_sampler_buffer_bytes(VllmSampler::triton, 1024, 128'256, 0).is_zero());
    // The releases: v0.11 to v0.16 sort, v0.17 to v0.19 run Triton's kernel, v0.20 FlashInfer's.
    CHECK(vllm_profile_sampler(llama_3_70b, *vllm_release_defaults({0, 16})) == VllmSampler::sorts);
    CHECK(vllm_profile_sampler(llama_3_70b, *vllm_release_defaults({0, 17})) ==
          VllmSampler::triton);
    CHECK(vllm_profile_sampler(llama_3_70b, *vllm_release_defaults({0, 19})) ==
          VllmSampler::triton);
    CHECK(vllm_profile_sampler(llama_3_70b, *vllm_release_defaults({0, 20})) ==
          VllmSampler::flashinfer_logits);
}

TEST_CASE("the profile's sampler follows the release and the model runner", "[budget][release]") {
    // v0.20 to v0.24 run the FlashInfer sampler in the V1 runner for every model (PR #40376);
    // from v0.25 dense models run model runner V2 (PR #44443), whose dummy batch asks no top-k or
    // top-p; MoE and hybrid models keep the V1 runner and FlashInfer.
    const VllmReleaseDefaults v24 = *vllm_release_defaults({0, 24});
    const VllmReleaseDefaults v25 = *vllm_release_defaults({0, 25});
    CHECK(vllm_profile_sampler(llama_3_70b, v24) == VllmSampler::flashinfer_logits);
    CHECK(vllm_profile_sampler(llama_3_70b, v25) == VllmSampler::plain);
    CHECK(vllm_profile_sampler(mixtral_8x7b, v25) == VllmSampler::flashinfer_logits);
    CHECK(vllm_profile_sampler(llama_3_70b, *vllm_release_defaults({0, 13})) == VllmSampler::sorts);
    CHECK(vllm_profile_sampler(llama_3_70b, *vllm_release_defaults({0, 8})) ==
          VllmSampler::flashinfer_probs);
}

TEST_CASE("logits count only on the stage that holds the LM head", "[budget]") {
    const Layout l{llama_3_70b, {.pp = 2}};
    CHECK(activation_peak(llama_3_70b, l, 0, 8192, 256).logits.is_zero());
    // 256 x 128,256 x 6 B.
    CHECK(activation_peak(llama_3_70b, l, 1, 8192, 256).logits.count() == 197'001'216ULL);
}

TEST_CASE("each reserve term can be replaced by a figure", "[budget]") {
    const Replica r{.model = llama_3_8b, .gpu = h100_sxm()};
    const BudgetOptions o{.reserve = {.cuda_context = 300 * MiB,
                                      .activation = 2 * GiB,
                                      .cuda_graphs = Bytes{},
                                      .comm_buffers = 64 * MiB}};
    const StageBudget s = replica_budget(r, {.context = 1024}, o).stages[0];
    CHECK(s.reserve.cuda_context.bytes == 300 * MiB);
    CHECK(s.reserve.cuda_context.source == TermSource::given);
    CHECK(s.reserve.activation.bytes == 2 * GiB);
    CHECK(s.reserve.cuda_graphs.bytes.is_zero());
    CHECK(s.reserve.comm_buffers.bytes == 64 * MiB);
    // The modelled peak is still shown beside the given figure.
    CHECK_FALSE(s.reserve.activation_model.total().is_zero());
    CHECK(s.reserve.total() == 300 * MiB + 2 * GiB + 64 * MiB);
}

TEST_CASE("bad budget inputs name the field", "[budget]") {
    const Replica r{.model = llama_3_8b, .gpu = h100_sxm()};
    CHECK_THROWS_WITH(replica_budget(r, {.context = 1024}, {.utilization = 0.0}),
                      Catch::Contains("utilization"));
    CHECK_THROWS_AS(replica_budget(r, {.context = 0}), InvalidInput);
    CHECK_THROWS_AS(
        replica_budget(Replica{.model = llama_3_8b, .gpu = h100_sxm(), .parallel = {.tp = 3}},
                       {.context = 1024}),
        InvalidLayout);
}

// Multi-LoRA adapter slots, as vLLM allocates them at load (budget/lora.hpp). Llama-3-70B at tp 4,
// rank 16, per layer and slot, in elements:
//   qkv_proj  A 3 x 16 x 8,192 = 393,216; B (16 x 128 + 2 x 2 x 128 = 2,560) x 16 = 40,960
//   o_proj    A 16 x (16 x 128) = 32,768; B 8,192 x 16 = 131,072
//   gate_up   A 2 x 16 x 8,192 = 262,144; B 2 x 7,168 x 16 = 229,376
//   down      A 16 x 7,168 = 114,688;     B 8,192 x 16 = 131,072
// = 1,335,296 a layer; x 80 layers = 106,823,680; x 4 slots x 2 B (bf16) = 854,589,440 B.
TEST_CASE("LoRA slots cost what vLLM allocates for them", "[budget][lora]") {
    const Layout l(llama_3_70b, {.tp = 4});
    CHECK(lora_bytes_on_rank(llama_3_70b, l, 0, {}).count() == 0);
    const LoraOptions four{.max_loras = 4, .max_lora_rank = 16};
    CHECK(lora_bytes_on_rank(llama_3_70b, l, 0, four).count() == 854'589'440);

    // Fully sharded: A of column layers and B of row layers split 4 ways. Per layer:
    //   qkv A 3 x 4 x 8,192 = 98,304 (+ B 40,960); o B 2,048 x 16 = 32,768 (+ A 32,768);
    //   gate_up A 2 x 4 x 8,192 = 65,536 (+ B 229,376); down B 32,768 (+ A 114,688)
    // = 647,168 a layer; x 80 x 4 x 2 B = 414,187,520 B.
    const LoraOptions sharded{.max_loras = 4, .max_lora_rank = 16, .fully_sharded = true};
    CHECK(lora_bytes_on_rank(llama_3_70b, l, 0, sharded).count() == 414'187'520);

    // The reserve charges it: the same replica's reserve grows by exactly the slots.
    const Replica r{.model = llama_3_70b, .gpu = h100_sxm(), .parallel = {.tp = 4}};
    const Reserve without = reserve_on_rank(r, l, 0);
    const Reserve with = reserve_on_rank(r, l, 0, {.lora = four});
    CHECK(without.lora.bytes.count() == 0);
    CHECK((with.total() - without.total()).count() == 854'589'440);
}

// Mixtral-8x7B at tp 2: every expert on every GPU, each split 2 ways (7,168 wide). Per layer and
// slot, rank 16:
//   qkv_proj  A 3 x 16 x 4,096 = 196,608; B (16 x 128 + 2 x 4 x 128 = 3,072) x 16 = 49,152
//   o_proj    A 16 x 2,048 = 32,768;      B 4,096 x 16 = 65,536
//   experts   8 x [w13 2 x (16 x 4,096 + 7,168 x 16) + w2 (16 x 7,168 + 4,096 x 16)]
//             = 8 x (360,448 + 180,224) = 4,325,376   (vllm/lora/layers/fused_moe.py)
// = 4,669,440 a layer; x 32 layers x 2 slots x 2 B = 597,688,320 B under SGLang's rules (its pool
// has no router stack). vLLM also wraps the router gate (ReplicatedLinear hidden -> 8 experts,
// whole on every GPU: vllm/lora/layers/gate_linear.py, base_linear.py create_lora_weights):
//   gate      A 16 x 4,096 = 65,536;      B 8 x 16 = 128   -> 65,664 a layer
// x 32 layers x 2 slots x 2 B = 8,404,992 B more: 606,093,312 B.
TEST_CASE("LoRA slots of a MoE model count every local expert", "[budget][lora]") {
    const Layout l(mixtral_8x7b, {.tp = 2});
    REQUIRE(l.placement().expert_tp == 2);
    REQUIRE(l.placement().experts_per_gpu == 8);
    const LoraOptions two{.max_loras = 2, .max_lora_rank = 16};
    CHECK(lora_bytes_on_rank(mixtral_8x7b, l, 0, two).count() == 606'093'312);
    const Layout sglang(mixtral_8x7b, {.tp = 2, .rules = ParallelRules::sglang});
    REQUIRE(sglang.placement().expert_tp == 2);
    REQUIRE(sglang.placement().experts_per_gpu == 8);
    CHECK(lora_bytes_on_rank(mixtral_8x7b, sglang, 0, two).count() == 597'688'320);
    CHECK(606'093'312 - 597'688'320 == 32ULL * 2 * 2 * (16 * 4'096 + 8 * 16));
    // The gate is replicated: --fully-sharded-loras leaves its stacks whole (GateLinearWithLoRA
    // is chosen whatever the setting), so sharding moves the total by the other stacks alone.
    LoraOptions sharded = two;
    sharded.fully_sharded = true;
    LoraOptions sharded_sglang = sharded;
    CHECK(lora_bytes_on_rank(mixtral_8x7b, l, 0, sharded).count() -
              lora_bytes_on_rank(mixtral_8x7b, sglang, 0, sharded_sglang).count() ==
          8'404'992);
}

// SGLang allocates only the stacks adapters target (--lora-target-modules, normalized by
// python/sglang/srt/lora/utils.py get_normalized_target_modules: q, k and v share qkv_proj's stack,
// gate and up gate_up_proj's). Llama-3-70B at tp 4, rank 16, the per-layer elements above:
//   q_proj,v_proj -> qkv_proj only: 393,216 + 40,960 = 434,176 a layer
//   x 80 layers x 4 slots x 2 B = 277,872,640 B
//   o_proj,down_proj: 32,768 + 131,072 + 114,688 + 131,072 = 409,600 a layer -> 262,144,000 B
TEST_CASE("LoRA slots charge only the stacks adapters target", "[budget][lora]") {
    const Layout l(llama_3_70b, {.tp = 4});
    LoraOptions qv{.max_loras = 4, .max_lora_rank = 16};
    qv.targets = lora_targets("t", "q_proj,v_proj");
    CHECK(qv.targets == lora_qkv);
    CHECK(lora_bytes_on_rank(llama_3_70b, l, 0, qv).count() == 277'872'640);
    LoraOptions od{.max_loras = 4, .max_lora_rank = 16};
    od.targets = lora_targets("t", "self_attn.o_proj down_proj");
    CHECK(lora_target_names(od.targets) == "o_proj down_proj");
    CHECK(lora_bytes_on_rank(llama_3_70b, l, 0, od).count() == 262'144'000);
    // Together the four stacks are every stack: the 854,589,440 B above.
    CHECK(277'872'640 + 262'144'000 +
              80ULL * 4 * 2 * (262'144 + 229'376) ==  // gate_up: A 262,144 + B 229,376
          854'589'440);
    CHECK(lora_targets("t", "all") == lora_all);
    CHECK(lora_target_names(lora_all) == "all");
    CHECK_THROWS_WITH(lora_targets("--lora-target-modules", "q_proj,lm_head"),
                      Catch::Contains("lm_head") && Catch::Contains("lora_target_modules"));
    CHECK_THROWS_AS(lora_targets("t", " , "), InvalidInput);
}

// vLLM's LoRAConfig keeps max_cpu_loras adapters in host memory (vllm/config/lora.py: "Must be >=
// than max_loras", its validator raises otherwise). Host memory: the GPU's bytes do not move.
TEST_CASE("CPU-cached adapters cost no GPU memory and are checked as vLLM checks them",
          "[budget][lora]") {
    const Layout l(llama_3_70b, {.tp = 4});
    LoraOptions cached{.max_loras = 4, .max_lora_rank = 16};
    cached.max_cpu_loras = 64;
    CHECK(lora_bytes_on_rank(llama_3_70b, l, 0, cached).count() == 854'589'440);
    cached.max_cpu_loras = 3;  // fewer than the 4 GPU slots
    CHECK_THROWS_WITH(
        lora_bytes_on_rank(llama_3_70b, l, 0, cached),
        Catch::Contains("max_cpu_loras") && Catch::Contains("at least max_loras (4)"));
}

TEST_CASE("LoRA sizing refuses what it does not model", "[budget][lora]") {
    const Layout v3(deepseek_v3, {.tp = 8});
    CHECK_THROWS_AS(lora_bytes_on_rank(deepseek_v3, v3, 0, {.max_loras = 1}), InvalidInput);
    // The refusal names the kind of layer it met, not a list of kinds it might have been.
    CHECK_THROWS_WITH(lora_bytes_on_rank(deepseek_v3, v3, 0, {.max_loras = 1}),
                      Catch::Contains("layer 0") && Catch::Contains("found an MLA layer") &&
                          Catch::Contains("serve it without adapters"));
    const Layout l(llama_3_70b, {.tp = 4});
    CHECK_THROWS_AS(lora_bytes_on_rank(llama_3_70b, l, 0, {.max_loras = 1, .max_lora_rank = 0}),
                    InvalidInput);
}
