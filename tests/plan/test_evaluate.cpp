// One answer per replica: evaluate() on the scenarios a design review asks about.

#include <catch2/catch.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

Deployment deployment(const std::string& model, const std::string& g, std::uint32_t tp = 1,
                      std::uint32_t pp = 1) {
    return Deployment{
        .model = bundled(model), .gpu = bundled_gpu(g), .parallel = {.tp = tp, .pp = pp}};
}

}  // namespace

TEST_CASE("gpt-oss-120b loads on one H100 in its MXFP4 checkpoint format", "[evaluate]") {
    // Sized in bf16 it would need 233.66 GB and never start; its checkpoint is 65.25 GB
    // (test_checkpoint.cpp), which one 79.19 GiB H100 holds.
    const ReplicaAnswer a = evaluate(deployment("gpt-oss-120b", "h100-sxm"), {.context = 8000});
    CHECK(a.weight_source == WeightSource::checkpoint);
    CHECK(a.replica.weights.expert_format == WeightFormat::mxfp4);
    CHECK(a.weights.total().count() == 65'248'815'744ULL);
    CHECK(a.starts());
    CHECK(a.fits());
    CHECK(a.max_concurrency >= 1);
}

TEST_CASE("vLLM holds gpt-oss-120b's MXFP4 experts as the GPU's kernel repacks them",
          "[evaluate][startup]") {
    // vllm/model_executor/layers/quantization/mxfp4.py. 36 MoE layers x 128 experts on one GPU =
    // 4,608 experts, each I = H = 2,880 wide; stored: gate/up 2 x 2,880 rows of 2,880 inputs and
    // down 2,880 rows of 2,880, 4-bit values plus a byte per 32 inputs, and bf16 biases.
    const std::uint64_t stored = 65'248'815'744ULL;  // test_checkpoint.cpp
    const std::uint64_t experts = 36ULL * 128;
    // Hopper runs the Triton kernel: 2,880 is a multiple of 64, so no width is padded, but the
    // swizzled scales are a second copy, in triton_kernels' Hopper layout, whose rows align to
    // 256 ((5,888 + 3,072) rows x 90 bytes = 806,400 B; the values' 16-row, 32-byte tiles pad
    // nothing here: mxfp4_triton_hopper_expert_bytes), and the biases become fp32 (2 more bytes
    // for each of 5,760 + 2,880: 17,280 B). The newest release's triton_kernels pre-pads each
    // weight's 1,440 bytes a row to 1,472 (Triton PR #8677; vllm_triton_values_padded_to_64):
    // 32 B for each of the 8,640 rows, 276,480 B.
    // Beside the experts, vLLM's rotary cos/sin table: yarn's 4,096 x 32 = 131,072 positions x
    // head_dim 64, in float32 as models/gpt_oss.py builds it, x 4 B = 33,554,432 B
    // (engine/startup.hpp, vllm_rotary_table_bytes).
    const std::uint64_t rope = 131072ULL * 64 * 4;
    const ReplicaAnswer h = evaluate(deployment("gpt-oss-120b", "h100-sxm"), {.context = 8000});
    CHECK(h.loaded.kernel == WeightKernel::mxfp4_triton);
    CHECK(h.loaded.rotary_table.count() == rope);
    CHECK(h.weights_checkpoint_per_gpu.count() == stored);
    CHECK(h.weights_per_gpu.count() == stored + experts * (806'400 + 17'280 + 276'480) + rope);
    CHECK(h.memory().weights == h.weights_per_gpu);
    // vLLM logs "Model loading took" 64.4 to 66.0 GiB on Hopper (issue 23): 70,351,907,456 B =
    // 65.52 GiB, between the two (64.33 GiB, the low end, under the v3.5 layout of v0.13).
    CHECK(h.weights_per_gpu.in(GiB) == Approx(65.52).epsilon(0.001));
    // Through v0.13 vLLM bundled triton_kernels v3.5, whose layout pads nothing of gpt-oss's
    // values: the scales' copy and the biases alone (engine/release.hpp,
    // vllm_triton_values_padded_to_64), 69,077,887,616 B = 64.33 GiB, as the January 2026
    // image's 64.38 GiB says (tests/data/startup_logs/vllm/gpt-oss-120b-h100-16k.log).
    Deployment v13 = deployment("gpt-oss-120b", "h100-sxm");
    v13.serving.engine_version = EngineVersion{0, 13};
    const ReplicaAnswer h13 = evaluate(v13, {.context = 8000});
    CHECK(h13.weights_per_gpu.count() == stored + experts * (806'400 + 17'280) + rope);
    v13.serving.engine_version = EngineVersion{0, 14};
    CHECK(evaluate(v13, {.context = 8000}).weights_per_gpu == h.weights_per_gpu);
    // Ampere runs Marlin: I to 2,944 (a multiple of 128), H to 3,072 (of 256). Per expert
    // 2 x 2,944 x 3,072 / 2 + 5,888 x 96 + 3,072 x 2,944 / 2 + 3,072 x 92 = 14,413,824 B against
    // 13,219,200 B stored, and bf16 biases 2 x (5,888 + 3,072 - 8,640) = 640 B longer.
    const ReplicaAnswer a =
        evaluate(deployment("gpt-oss-120b", "a100-sxm4-80gb"), {.context = 8000});
    CHECK(a.loaded.kernel == WeightKernel::mxfp4_marlin);
    CHECK(a.loaded.padded_intermediate == 2944);
    CHECK(a.loaded.padded_hidden == 3072);
    CHECK(a.weights_per_gpu.count() == stored + experts * (14'413'824 - 13'219'200 + 640) + rope);
    // 65.91 GiB: the high end of the range logged on Hopper is what Marlin's padding gives.
    CHECK(a.weights_per_gpu.in(GiB) == Approx(66.0).epsilon(0.02));
    // engine_memory and engine_report, the memory step alone, count the same loaded bytes.
    const Model oss = bundled("gpt-oss-120b");
    const Replica r{
        .model = oss, .gpu = bundled_gpu("h100-sxm"), .weights = checkpoint_weights(oss)};
    CHECK(engine_memory(Engine::vllm, r, r.layout(), 0).weights == h.weights_per_gpu);
    CHECK(engine_report(Engine::vllm, r, 8000).memory[0].weights == h.weights_per_gpu);
}

TEST_CASE("SGLang holds MXFP4 and ROCm INT4 experts as its MoE kernels keep them",
          "[evaluate][startup][sglang]") {
    // python/sglang/srt/layers/quantization/mxfp4.py (Mxfp4MoEMethod). gpt-oss-120b on one GPU:
    // 4,608 experts of I = H = 2,880, 13,219,200 B each as stored (test above). Beside them
    // SGLang's load holds its rotary table in fp32 on CUDA, 131,072 x 64 x 4 B = 32 MiB (bf16 on
    // ROCm), and the caching allocator's rounding of its parameters (sglang_allocator_slack;
    // engine/test_engine.cpp derives it for QwQ-32B).
    const std::uint64_t stored = 65'248'815'744ULL;
    const std::uint64_t experts = 36ULL * 128;
    const auto extra = [](const ReplicaAnswer& x) {
        return x.loaded.rotary_table.count() + x.loaded.allocator_slack.count();
    };
    // Hopper: the Triton kernels, as in vLLM: 2,880 is a multiple of 64, the swizzled scales a
    // second copy with rows aligned to 256 (806,400 B) and the biases fp32 (17,280 B more).
    Deployment sg = deployment("gpt-oss-120b", "h100-sxm");
    sg.serving.engine = Engine::sglang;
    const ReplicaAnswer h = evaluate(sg, {.context = 8000});
    CHECK(h.loaded.kernel == WeightKernel::mxfp4_triton);
    CHECK(h.weights_checkpoint_per_gpu.count() == stored);
    CHECK(h.loaded.rotary_table.count() == 131'072ULL * 64 * 4);
    CHECK(h.loaded.allocator_slack ==
          sglang_allocator_slack(h.replica.model, h.replica.layout(), 0, h.replica.weights));
    CHECK(h.weights_per_gpu.count() == stored + experts * (806'400 + 17'280) + extra(h));
    // Blackwell: FlashInfer's TRT-LLM MoE pads I and H to 3,072 (multiples of 256): gate/up
    // 6,144 rows x (1,536 + 96) B + down 3,072 x 1,632 B = 15,040,512 B against 13,219,200 B,
    // and fp32 biases 4 x (6,144 + 3,072) = 36,864 B against bf16 2 x (5,760 + 2,880) = 17,280 B.
    sg.gpu = bundled_gpu("b200");
    const ReplicaAnswer b = evaluate(sg, {.context = 8000});
    CHECK(b.loaded.kernel == WeightKernel::mxfp4_flashinfer);
    CHECK(b.loaded.padded_intermediate == 3072);
    CHECK(b.loaded.padded_hidden == 3072);
    CHECK(b.weights_per_gpu.count() ==
          stored + experts * (15'040'512 - 13'219'200 + 36'864 - 17'280) + extra(b));
    // Ampere is not modelled for SGLang: the checkpoint's bytes.
    sg.gpu = bundled_gpu("a100-sxm4-80gb");
    const ReplicaAnswer a = evaluate(sg, {.context = 8000});
    CHECK(a.loaded.kernel == WeightKernel::as_stored);
    CHECK(a.weights_per_gpu.count() == stored + extra(a));

    // Kimi-K2.5 (compressed-tensors, symmetric INT4 experts in groups of 32) at tp 8 on MI355X:
    // CompressedTensorsWNA16TritonMoE keeps its int32 g_idx and sort indices, 2 x 4 x (7,168 +
    // 2,048 / 8) B, and two 2 x fp32 shape tensors, 16 B: 59,408 B an expert, for 384 experts on
    // each of 60 MoE layers (first_k_dense_replace 1 of 61): 1,368,760,320 B.
    Deployment k{
        .model = bundled("kimi-k2.5"), .gpu = bundled_gpu("mi355x"), .parallel = {.tp = 8}};
    k.serving.engine = Engine::sglang;
    const ReplicaAnswer r = evaluate(k, {.context = 8000});
    CHECK(r.replica.weights.expert_format == WeightFormat::int4);
    CHECK(r.replica.weights.layout.group_size == 32);
    CHECK(r.loaded.kernel == WeightKernel::int4_triton_rocm);
    CHECK(r.loaded.experts == 384ULL * 60);
    // Its rotary table in bf16 on ROCm: yarn's 4,096 x 64 = 262,144 positions x 64 x 2 B.
    CHECK(r.loaded.rotary_table.count() == 262'144ULL * 64 * 2);
    CHECK((r.weights_per_gpu - r.weights_checkpoint_per_gpu).count() ==
          1'368'760'320ULL + extra(r));
    // On Hopper the Marlin path empties them: as stored; and vLLM keeps the checkpoint's bytes.
    k.gpu = bundled_gpu("h200-sxm");
    CHECK(evaluate(k, {.context = 8000}).loaded.kernel == WeightKernel::as_stored);
    k.gpu = bundled_gpu("mi355x");
    k.serving.engine = Engine::vllm;
    CHECK(evaluate(k, {.context = 8000}).loaded.kernel == WeightKernel::as_stored);
}

namespace {

Deployment fp8_deployment(const std::string& file, const std::string& g, std::uint32_t tp) {
    return Deployment{.model = load_hf_config(data_dir / "fp8" / file),
                      .gpu = bundled_gpu(g),
                      .parallel = {.tp = tp}};
}

}  // namespace

TEST_CASE("an FP8 checkpoint whose expert width per GPU breaks its weight block does not start",
          "[evaluate][startup]") {
    // Qwen3-235B-A22B-FP8: moe_intermediate_size 1,536 in 128 x 128 blocks. At tp 8 each GPU
    // holds 1,536 / 8 = 192 of every expert's gate/up outputs and down inputs, and 192 % 128 =
    // 64: vLLM's Fp8MoEMethod.create_weights raises "The output_size of gate's and up's weight =
    // 192 is not divisible by weight quantization block_n = 128" (quantization/fp8.py).
    Deployment d = fp8_deployment("qwen3-235b-a22b-fp8.json", "h100-sxm", 8);
    const ReplicaAnswer a = evaluate(d, {.context = 32768, .concurrency = 8});
    CHECK(a.verdict == Verdict::does_not_start);
    CHECK(a.refusal == Refusal::quantization_block);
    CHECK(a.startup.part == StartupPart::routed_experts);
    CHECK(a.startup.width == 1536);
    CHECK(a.startup.ways == 8);
    CHECK(a.startup.per_rank == 192);
    CHECK(a.startup.block == 128);
    CHECK(std::string(a.startup.source) == "vllm/model_executor/layers/quantization/fp8.py");
    CHECK(a.max_concurrency == 0);
    CHECK(a.max_context == 0u);  // nothing runs, not "any length"
    // Expert parallelism keeps each expert whole (1,536 = 12 x 128); tp 4 keeps 384 = 3 x 128.
    CHECK(a.startup.expert_parallel_starts);
    CHECK(a.startup.starting_tp == 4);
    // With --enable-expert-parallel (ep = dp x tp = 8) the same 8 GPUs start and hold the demand.
    d.parallel.ep = 8;
    const ReplicaAnswer ep = evaluate(d, {.context = 32768, .concurrency = 8});
    CHECK(ep.refusal == Refusal::none);
    CHECK(ep.placement.expert_tp == 1);
    CHECK(ep.fits());
    // SGLang checks the same rule (python/sglang/srt/layers/quantization/fp8.py).
    Deployment sg = fp8_deployment("qwen3-235b-a22b-fp8.json", "h100-sxm", 8);
    sg.serving.engine = Engine::sglang;
    CHECK(evaluate(sg, {.context = 32768}).refusal == Refusal::quantization_block);
}

TEST_CASE("TensorRT-LLM refuses a block-FP8 expert width per GPU that breaks its block too",
          "[evaluate][startup][trtllm]") {
    // TensorRT-LLM's PyTorch backend loads a block-FP8 MoE through
    // DeepSeekFP8BlockScalesFusedMoEMethod (tensorrt_llm/_torch/modules/fused_moe/
    // quantization.py), which asserts intermediate_size_per_partition % FP8_QUANT_BLOCK_SIZE
    // (128) == 0 as it loads a per-expert checkpoint's scales: Qwen3-235B-A22B-FP8 at tp 8 (MoE
    // tp 8, the default with no --ep_size) leaves 1,536 / 8 = 192 per GPU, 192 % 128 = 64.
    Deployment d = fp8_deployment("qwen3-235b-a22b-fp8.json", "h100-sxm", 8);
    d.serving.engine = Engine::trtllm;
    const ReplicaAnswer a = evaluate(d, {.context = 32768, .concurrency = 8});
    CHECK(a.verdict == Verdict::does_not_start);
    CHECK(a.refusal == Refusal::quantization_block);
    CHECK(a.startup.part == StartupPart::routed_experts);
    CHECK(a.startup.per_rank == 192);
    CHECK(a.startup.block == 128);
    CHECK(std::string(a.startup.source) == "tensorrt_llm/_torch/modules/fused_moe/quantization.py");
    // --ep_size 8 keeps each expert whole (1,536 = 12 x 128); tp 4 keeps 384 = 3 x 128.
    CHECK(a.startup.expert_parallel_starts);
    CHECK(a.startup.starting_tp == 4);
    CHECK(a.startup.expert_parallel_tp == 0);  // vLLM's tp x dp proposal only
    CHECK_THAT(refusal_text(a),
               Catch::Contains("192 per GPU, no multiple of the 128-wide fp8 weight block "
                               "(tensorrt_llm/_torch/modules/fused_moe/quantization.py, "
                               "DeepSeekFP8BlockScalesFusedMoEMethod") &&
                   Catch::EndsWith(": --ep_size 8 keeps every expert whole; tp 4 (pp x 2) starts"));
    d.parallel.ep = 8;
    const ReplicaAnswer ep = evaluate(d, {.context = 32768, .concurrency = 8});
    CHECK(ep.refusal == Refusal::none);
    CHECK(ep.placement.expert_tp == 1);
    // Its dense block-FP8 Linear (FP8BlockScalesLinearMethod, _torch/modules/linear.py) asserts
    // nothing: Qwen3-Next-80B-A3B-FP8 at tp 8 breaks the routed experts (512 / 8 = 64), and
    // --ep_size 8 starts it although the shared expert still splits 8 ways, where vLLM and
    // SGLang refuse the shared expert's 64.
    Deployment next = fp8_deployment("qwen3-next-80b-a3b-instruct-fp8.json", "h100-sxm", 8);
    next.serving.engine = Engine::trtllm;
    const ReplicaAnswer n = evaluate(next, {.context = 32768});
    CHECK(n.refusal == Refusal::quantization_block);
    CHECK(n.startup.per_rank == 64);
    CHECK(n.startup.expert_parallel_starts);
    next.serving.engine = Engine::vllm;
    CHECK_FALSE(evaluate(next, {.context = 32768}).startup.expert_parallel_starts);
    // Where the experts keep whole blocks it starts: Qwen3-235B-A22B-FP8 at tp 4.
    Deployment four = fp8_deployment("qwen3-235b-a22b-fp8.json", "h200-sxm", 4);
    four.serving.engine = Engine::trtllm;
    CHECK_FALSE(evaluate(four, {.context = 32768}).startup.refused);
}

TEST_CASE("Qwen3-30B-A3B-FP8 does not start at tp 4 and starts at tp 2", "[evaluate][startup]") {
    // moe_intermediate_size 768: 768 / 4 = 192 (192 % 128 = 64) is refused; 768 / 2 = 384 =
    // 3 x 128 starts.
    const ReplicaAnswer four =
        evaluate(fp8_deployment("qwen3-30b-a3b-fp8.json", "h100-sxm", 4), {.context = 8192});
    CHECK(four.refusal == Refusal::quantization_block);
    CHECK(four.startup.per_rank == 192);
    CHECK(four.startup.starting_tp == 2);
    const ReplicaAnswer two =
        evaluate(fp8_deployment("qwen3-30b-a3b-fp8.json", "h100-sxm", 2), {.context = 8192});
    CHECK(two.refusal == Refusal::none);
    CHECK_FALSE(two.startup.refused);
}

TEST_CASE(
    "Qwen3-Next-80B-A3B-FP8 at tp 8 breaks its shared expert: tp x dp with expert parallelism",
    "[evaluate][startup]") {
    // moe_intermediate_size 512 and shared_expert_intermediate_size 512: at tp 8 both leave 64
    // per GPU. Expert parallelism keeps the routed experts whole but the shared expert still
    // splits 8 ways (SGLang issue #10852: "The output_size of gate's and up's weight = 64 is not
    // divisible by weight quantization block_n = 128"). tp 4 keeps 128 of each: tp 4 with pp 2,
    // or tp 4 x dp 2 with --enable-expert-parallel, starts.
    const ReplicaAnswer a = evaluate(
        fp8_deployment("qwen3-next-80b-a3b-instruct-fp8.json", "h100-sxm", 8), {.context = 32768});
    CHECK(a.refusal == Refusal::quantization_block);
    CHECK(a.startup.part == StartupPart::routed_experts);
    CHECK(a.startup.per_rank == 64);
    CHECK_FALSE(a.startup.expert_parallel_starts);
    CHECK(a.startup.starting_tp == 4);
    CHECK(a.startup.expert_parallel_tp == 4);
    CHECK_THAT(refusal_text(a),
               Catch::EndsWith(": tp 4 (pp x 2) starts; tp 4 x dp 2 with --enable-expert-parallel "
                               "starts"));
    // The proposed layout starts.
    Deployment d = fp8_deployment("qwen3-next-80b-a3b-instruct-fp8.json", "h100-sxm", 4);
    d.parallel.dp = 2;
    d.parallel.ep = 8;
    CHECK(evaluate(d, {.context = 32768}).refusal == Refusal::none);
}

TEST_CASE(
    "DeepSeek-V3 at tp 32 breaks its blocks in the dense MLP too: expert parallelism alone "
    "does not start it",
    "[evaluate][startup]") {
    // deepseek-v3's config carries weight_block_size [128, 128]. At tp 32: routed experts 2,048 /
    // 32 = 64, the shared expert 2,048 / 32 = 64 and the dense MLP 18,432 / 32 = 576 (vLLM's
    // "Weight output_partition_size = 576 is not divisible by weight quantization block_n =
    // 128"). Expert parallelism mends only the routed experts; tp 16 keeps 128, 128 and 1,152.
    Deployment d = deployment("deepseek-v3", "h200-sxm", 32);
    d.serving.allow_long_context = true;
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    CHECK(a.refusal == Refusal::quantization_block);
    CHECK(a.startup.part == StartupPart::routed_experts);
    CHECK(a.startup.per_rank == 64);
    CHECK_FALSE(a.startup.expert_parallel_starts);
    CHECK(a.startup.starting_tp == 16);
    // The same 32 GPUs as tp 16 x dp 2 with expert parallelism: the dense MLP and the shared
    // expert split 16 ways (1,152 and 128), the routed experts whole; the verdict names both ways.
    CHECK(a.startup.expert_parallel_tp == 16);
    CHECK_THAT(refusal_text(a),
               Catch::EndsWith("tp 16 (pp x 2) starts; tp 16 x dp 2 with --enable-expert-parallel "
                               "starts"));
    // Where expert parallelism alone starts it, no data-parallel layout is proposed.
    const ReplicaAnswer q =
        evaluate(fp8_deployment("qwen3-235b-a22b-fp8.json", "h100-sxm", 8), {.context = 32768});
    CHECK(q.startup.expert_parallel_starts);
    CHECK(q.startup.expert_parallel_tp == 0);
}

TEST_CASE("vLLM's MoE activation peak is its fused kernel's workspaces at the token budget",
          "[evaluate][startup]") {
    // Qwen3-235B-A22B-FP8 on 8 x L40S with expert parallelism. A token's values in the profiled
    // forward: the residual stream 2 x 4,096, and the larger of attention (8 query heads x 128,
    // one KV head x (128 + 128), 8 x 128 out: 2,304) and the MoE's workspaces
    // (fused_moe/fused_moe.py, TritonExperts.workspace_shapes: k x (max(N / 2, H) + max(N, H)) +
    // H with N = 2 x 1,536 and H = 4,096: 8 x (4,096 + 4,096) + 4,096 = 69,632), in bf16:
    // (8,192 + 69,632) x 2 = 155,648 B. Logits: 256 sequences (vLLM's max_num_seqs on a 48 GB
    // GPU) x 151,936 x (2 + 4) B = 233,373,696 B.
    Deployment d = fp8_deployment("qwen3-235b-a22b-fp8.json", "l40s", 8);
    d.parallel.ep = 8;
    d.serving.max_num_batched_tokens = 8192;
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    CHECK(a.startup.refused == false);
    // 155,648 x 8,192 + 233,373,696 = 1,508,442,112 B = 1.405 GiB: vLLM logs 1.4 GiB of peak
    // activation for this replica (issue 23), a forward of 8,192 tokens.
    CHECK(a.memory().activation.count() == 155'648ULL * 8192 + 233'373'696ULL);
    CHECK(a.memory().activation.in(GiB) == Approx(1.4).epsilon(0.02));
    // At the 2,048 tokens vLLM defaults to on a GPU under 70 GiB the sampling after the forward
    // sets the peak: an MoE model keeps the V1 runner, whose FlashInfer sampler holds two fp32
    // copies of the logits (256 x 151,936 x 8 = 311,164,928 B) beside the logits and the
    // forward's output (2,048 x 4,096 x 2 = 16,777,216 B): 561,315,840 B, above the forward's
    // 155,648 x 2,048 + 233,373,696 = 552,140,800 B.
    d.serving.max_num_batched_tokens.reset();
    CHECK(evaluate(d, {.context = 8192}).memory().activation.count() ==
          16'777'216ULL + 233'373'696ULL + 311'164'928ULL);
    // Split eight ways without expert parallelism (Qwen3-235B in bf16) each expert is 192 wide on
    // a GPU, yet the workspaces are as wide: max(192, 4,096) + max(384, 4,096) values per expert.
    Deployment tp = deployment("qwen3-235b-a22b", "h100-sxm", 8);
    tp.serving.max_num_batched_tokens = 8192;
    const ReplicaAnswer t = evaluate(tp, {.context = 8192});
    CHECK(t.placement.expert_tp == 8);
    // Logits: 1,024 sequences (H100) x 151,936 x 6 B = 933,494,784 B; the sampling after the
    // forward, 8,192 x 4,096 x 2 + 933,494,784 + 1,024 x 151,936 x 8 = 2,245,263,360 B, passes
    // the forward with its logits (155,648 x 8,192 + 933,494,784 = 2,208,563,200 B).
    CHECK(t.memory().activation.count() == 67'108'864ULL + 933'494'784ULL + 1'244'659'712ULL);
}

TEST_CASE("a replica whose weights do not fit reaches no context, not any length", "[evaluate]") {
    // Llama-3-70B in bf16 (131.42 GiB) on one H100: the engine stops before it builds a cache,
    // so no length runs.
    const ReplicaAnswer a = evaluate(deployment("llama-3-70b", "h100-sxm"), {.context = 8192});
    CHECK(a.refusal == Refusal::weights);
    CHECK(a.kv_budget.is_zero());
    CHECK(a.max_context == 0u);
    CHECK(a.longest_single_context == 0u);
}

TEST_CASE("a context past the model's limit does not start, unless allowed as vLLM allows it",
          "[evaluate]") {
    // Llama-3-8B's config allows 8,192 tokens (max_position_embeddings); vLLM refuses a longer
    // --max-model-len unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.
    Deployment d = deployment("llama-3-8b", "h100-sxm");
    const ReplicaAnswer a = evaluate(d, {.context = 200'000});
    CHECK(a.verdict == Verdict::does_not_start);
    CHECK(a.refusal == Refusal::context_limit);
    CHECK(a.over_limit);
    CHECK(a.limit.tokens == 8192);
    CHECK(std::string(a.limit.field) == "max_position_embeddings");
    // Within the limit the longest contexts are capped at it, and say so.
    const ReplicaAnswer within = evaluate(d, {.context = 4096});
    CHECK(within.fits());
    CHECK(within.longest_single_context == 8192u);
    CHECK(within.longest_at_limit);
    // Allowed, it is sized like any other context.
    d.serving.allow_long_context = true;
    const ReplicaAnswer allowed = evaluate(d, {.context = 200'000});
    CHECK(allowed.refusal == Refusal::none);
    CHECK(allowed.long_context_allowed);
    CHECK_FALSE(allowed.longest_at_limit);
}

TEST_CASE("the verdict counts every replica of the GPUs deployed", "[evaluate]") {
    // 8 x H100 at tp 4: two replicas of Llama-3-70B. Each carries ceil(500 / 2) = 250 sequences
    // of 8,000 tokens; the verdict compares 500 with what both hold together.
    Deployment d = deployment("llama-3-70b", "h100-sxm", 4);
    d.gpus = 8;
    const ReplicaAnswer a = evaluate(d, {.context = 8000, .concurrency = 500});
    CHECK(a.replicas == 2);
    CHECK(a.concurrency_per_replica == 250);
    CHECK(a.total_max_concurrency == 2 * a.max_concurrency);
    CHECK(a.fits() == (a.total_max_concurrency >= 500));
    CHECK(a.kv_needed == a.kv_per_sequence * 250);
    // 100 sequences fit two replicas where 2 x max_concurrency >= 100.
    const ReplicaAnswer small = evaluate(d, {.context = 8000, .concurrency = 100});
    CHECK(small.fits());
    // A GPU count that is no multiple of tp x pp is refused.
    d.gpus = 6;
    CHECK_THROWS_AS(evaluate(d, {.context = 8000}), InvalidLayout);
}

TEST_CASE("a hybrid's verdict is what vLLM's scheduler admits, its log figure beside it",
          "[evaluate]") {
    // gpt-oss-120b at 8k on one H100: the sliding layers keep a window of 128 tokens, so the
    // scheduler holds about twice the sequences the start-up line logs, less what rounding the
    // admitted count down takes at 17 sequences (the line logs 9.49x).
    const ReplicaAnswer a = evaluate(deployment("gpt-oss-120b", "h100-sxm"), {.context = 8000});
    const double logged = a.max_concurrency_ratio;
    CHECK(a.max_concurrency == a.admitted);
    CHECK(static_cast<double>(a.admitted) > 1.75 * logged);
    // What it admits never passes the exact bytes: the KV budget over one sequence's bytes.
    CHECK(a.admitted <= a.kv_budget.count() / a.kv_per_sequence.count());
}

TEST_CASE("under SGLang a sequence needs what its token pool spends on it, so need and room agree",
          "[evaluate][sglang]") {
    // Gemma-3-27B at 131,072 tokens on one H100. Five of every six of its 62 layers slide over
    // 1,024 tokens, but SGLang runs it on one token pool (Gemma 3 is not among model_config.py's
    // is_hybrid_swa_model architectures) that gives every layer a cell per token
    // (profile_max_num_token, model_runner_kv_cache_mixin.py): 62 layers x 2 x 16 KV heads x 128
    // x 2 B = 507,904 B a token, 131,072 x 507,904 = 66,571,993,088 B (62 GiB) a sequence.
    // Windows kept apart a sequence would need 10.41 GiB, less than the 14.46 GiB of KV the GPU
    // has, beside a pool that admits not one sequence.
    Deployment d = deployment("gemma-3-27b", "h100-sxm");
    d.serving.engine = Engine::sglang;
    const ReplicaAnswer a = evaluate(d, {.context = 131'072, .concurrency = 8});
    REQUIRE(a.report.sglang.cell_size.count() == 507'904);
    CHECK(a.kv_per_sequence.count() == 66'571'993'088ULL);
    CHECK(a.kv_needed == a.kv_per_sequence * 8);
    CHECK(a.max_concurrency == 0);
    CHECK(a.kv_per_sequence > a.kv_budget);
    CHECK(*a.kv_tokens < 131'072);
    // With room for some, the room is the budget over the need per sequence, rounded down.
    const ReplicaAnswer b = evaluate(d, {.context = 16'384, .concurrency = 64});
    CHECK(b.kv_per_sequence.count() == 16'384ULL * 507'904);
    CHECK(b.max_concurrency == b.kv_budget / b.kv_per_sequence);
    // A model without sliding layers needs the same bytes either way: Llama-3.1-8B, 32 layers x 2
    // x 8 x 128 x 2 B = 131,072 B a token.
    Deployment llama = deployment("llama-3.1-8b", "h100-sxm");
    llama.serving.engine = Engine::sglang;
    CHECK(evaluate(llama, {.context = 8'192}).kv_per_sequence.count() == 8'192ULL * 131'072);
}

TEST_CASE("the engine's sequence cap binds when the cache holds more", "[evaluate]") {
    // Llama-3-8B at 256 tokens on an H200: 32 MiB a sequence in some 110 GiB of KV memory is
    // thousands of sequences; vLLM's max_num_seqs (1,024 on GPUs of 70 GiB or more that are not
    // A100s) holds 1,024.
    Deployment d = deployment("llama-3-8b", "h200-sxm");
    const ReplicaAnswer a = evaluate(d, {.context = 256, .concurrency = 2000});
    CHECK(a.sequence_cap == 1024);
    CHECK(a.admitted > 1024);
    CHECK(a.max_concurrency == 1024);
    CHECK(a.verdict == Verdict::does_not_fit);
    // --max-num-seqs raises it.
    d.serving.max_sequences = 4096;
    const ReplicaAnswer raised = evaluate(d, {.context = 256, .concurrency = 2000});
    CHECK(raised.sequence_cap == 4096);
    CHECK(raised.fits());
}

TEST_CASE("the ideal profile is an upper bound no engine exceeds", "[evaluate][properties]") {
    // Over bundled models, GPUs and layouts: ideal gives the cache every byte but the weights and
    // stores exactly the context's bytes, so every engine holds at most as many sequences.
    for (const char* model : {"llama-3-70b", "llama-3-8b", "gpt-oss-120b", "qwen3-30b-a3b",
                              "gemma-3-27b", "deepseek-v3", "jamba-1.5-mini"})
        for (const char* g : {"h100-sxm", "a100-sxm4-80gb", "mi300x", "l40s"})
            for (std::uint32_t tp : {1U, 2U, 4U, 8U})
                for (std::uint64_t ctx : {1024ULL, 8000ULL, 32768ULL}) {
                    Deployment d = deployment(model, g, tp);
                    d.serving.engine = Engine::ideal;
                    ReplicaAnswer ideal = [&] {
                        try {
                            return evaluate(d, {.context = ctx});
                        } catch (const InvalidLayout&) {
                            return ReplicaAnswer{.replica = {.model = d.model}};
                        }
                    }();
                    if (ideal.replica.parallel.tp != tp) continue;  // a layout it cannot take
                    for (Engine e : {Engine::vllm, Engine::sglang, Engine::trtllm}) {
                        d.serving.engine = e;
                        const ReplicaAnswer a = evaluate(d, {.context = ctx});
                        INFO(model << " on " << g << " tp " << tp << " at " << ctx << ": "
                                   << name(e));
                        CHECK(a.admitted <= ideal.admitted);
                        CHECK(a.kv_budget <= ideal.kv_budget);
                    }
                }
}

TEST_CASE("the replica search ranks replicas whose figures are evaluate()'s own",
          "[evaluate][plan]") {
    // Llama-3-70B, 64 sequences of 8,000 tokens, on H100s and H200s with bf16 and fp8 KV.
    const Model m = bundled("llama-3-70b");
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm"), bundled_gpu("h200-sxm")};
    space.kv_formats = {KvFormat{KvDtype::bf16}, KvFormat{KvDtype::fp8_e4m3}};
    const Demand demand{.context = 8000, .concurrency = 64};
    const PlanAnswer p = plan_replicas(m, space, {}, demand);
    REQUIRE_FALSE(p.fits.empty());
    // 2 GPU types x 2 KV formats x the tp x pp layouts of 1 to 8 GPUs with tp a power of two
    // dividing the count: n = 1..8 gives 1, 2, 1, 3, 1, 2, 1, 4 = 15, every one of which
    // Llama-3-70B (64 heads, 8 KV heads) takes.
    CHECK(p.searched == 2 * 2 * 15);
    // Ranked: never more GPUs than the next; each figure is what evaluate() gives that deployment.
    for (std::size_t i = 0; i + 1 < p.fits.size(); ++i)
        CHECK(p.fits[i].answer.replica.gpus() <= p.fits[i + 1].answer.replica.gpus());
    const PlanCandidate& best = p.fits.front();
    const Deployment d{.model = m,
                       .gpu = space.gpus[best.gpu],
                       .parallel = best.answer.replica.parallel,
                       .kv = space.kv_formats[best.kv]};
    const ReplicaAnswer again = evaluate(d, demand);
    CHECK(again.max_concurrency == best.answer.max_concurrency);
    CHECK(again.kv_budget == best.answer.kv_budget);
    CHECK(again.decode->tpot == best.answer.decode->tpot);
    // Llama-3-70B's 141 GB of bf16 weights need two 80 GB H100s or one 141 GB H200: the best
    // holds 64 sequences in at most two GPUs.
    CHECK(best.answer.replica.gpus() <= 2);
}

TEST_CASE("speculative decoding: the drafter's layers keep KV in the model's cache",
          "[evaluate][speculation]") {
    // Llama-3-8B: 32 layers x 2 x 8 KV heads x 128 x 2 B = 131,072 B per token. An EAGLE head is
    // one more decoder layer of the same shape: +4,096 B per token, and its weights: q and o
    // 4,096^2 each, k and v 4,096 x 1,024 each, MLP 3 x 4,096 x 14,336, two norms of 4,096 =
    // 218,112,000 parameters = 436,224,000 B in bf16, on the one GPU.
    Deployment d = deployment("llama-3-8b", "h100-sxm");
    const ReplicaAnswer plain = evaluate(d, {.context = 8192, .concurrency = 64});
    d.serving.speculation = {.method = DraftMethod::eagle, .tokens = 3};
    const ReplicaAnswer eagle = evaluate(d, {.context = 8192, .concurrency = 64});
    CHECK(plain.kv_per_token.count() == 131'072);
    CHECK(eagle.kv_per_token.count() == 135'168);
    CHECK(eagle.drafter_layers == 1);
    CHECK(eagle.drafter_kv_per_token.count() == 4'096);
    CHECK((eagle.weights_per_gpu - plain.weights_per_gpu).count() == 436'224'000);
    // Less memory and more bytes per block: never more sequences.
    CHECK(eagle.kv_budget < plain.kv_budget);
    CHECK(eagle.max_concurrency <= plain.max_concurrency);
    // The decode bound is the model's own step (acceptance is not modelled).
    REQUIRE(plain.decode);
    REQUIRE(eagle.decode);
    CHECK(eagle.decode->tpot == plain.decode->tpot);
    // n-gram speculation has no drafter: the same figures as without.
    d.serving.speculation = {.method = DraftMethod::ngram, .tokens = 3};
    const ReplicaAnswer ngram = evaluate(d, {.context = 8192, .concurrency = 64});
    CHECK(ngram.kv_per_token == plain.kv_per_token);
    CHECK(ngram.max_concurrency == plain.max_concurrency);
}

TEST_CASE("speculative decoding: DeepSeek-V3's MTP layer, on the last pipeline stage",
          "[evaluate][speculation]") {
    // config.json: num_nextn_predict_layers 1. An MLA layer caches (512 + 64) x 2 B = 1,152 B per
    // token: 61 layers hold 70,272 B, with the MTP layer 71,424 B.
    Deployment d = deployment("deepseek-v3", "h200-sxm", 8, 2);
    CHECK(d.model.config().mtp_layers == 1);
    d.serving.speculation = {.method = DraftMethod::mtp, .tokens = 1};
    const ReplicaAnswer a = evaluate(d, {.context = 32'768, .concurrency = 16});
    CHECK(a.kv_per_token.count() == 71'424);
    CHECK(a.drafter_layers == 1);
    // pp 2 splits the 61 layers 31 / 30 (vLLM's get_pp_indices in vllm/distributed/utils.py hands
    // the remainder to the stages before the last, which also holds the LM head); the drafter runs
    // on the last stage (gpu_model_runner.py builds it only where is_last_rank): 31 / 31 layers,
    // each stage's latent replicated over tp, so 31 x 1,152 = 35,712 B per token on a GPU.
    Deployment target = d;
    target.serving.speculation = {};
    const ReplicaAnswer plain = evaluate(target, {.context = 32'768, .concurrency = 16});
    CHECK(plain.kv_per_token_per_gpu.count() == 31 * 1'152);  // the first stage's 31 layers
    CHECK(a.replica.parallel.stage_layers[0] == 31);
    CHECK(a.replica.parallel.stage_layers[1] == 31);
    CHECK(a.kv_per_token_per_gpu.count() == 31 * 1'152);
    // A model with no MTP layers cannot draft with them.
    Deployment llama = deployment("llama-3-8b", "h100-sxm");
    llama.serving.speculation = {.method = DraftMethod::mtp, .tokens = 1};
    CHECK_THROWS_AS(evaluate(llama, {.context = 8192}), InvalidInput);
    // A drafter with no tokens to draft is refused, as vLLM refuses it.
    llama.serving.speculation = {.method = DraftMethod::eagle, .tokens = 0};
    CHECK_THROWS_AS(evaluate(llama, {.context = 8192}), InvalidInput);
    // Speculation is modelled for vLLM only.
    llama.serving.speculation = {.method = DraftMethod::eagle, .tokens = 2};
    llama.serving.engine = Engine::sglang;
    CHECK_THROWS_AS(evaluate(llama, {.context = 8192}), InvalidInput);
}

TEST_CASE("speculative decoding: an MTP draft holds its eh_proj and norms beside its layers",
          "[evaluate][speculation]") {
    // Each MTP layer vLLM builds holds, beside its decoder layer, the projection of the normed
    // embedding and hidden state (2 hidden -> hidden, 16-bit, unquantized) and three norms of
    // hidden (enorm, hnorm and the head's norm), 16-bit (weights/checkpoint_files.hpp,
    // mtp_head_bytes).
    // MiMo-V2-Flash (h = 4,096; vLLM's mimo_v2_mtp.py: eh_proj a ReplicatedLinear, whole on every
    // rank; 64 attention sinks split by heads) at tp 4: 4,096 x 8,192 x 2 B = 67,108,864 B,
    // norms 3 x 4,096 x 2 B = 24,576 B, sinks 64 / 4 x 2 B = 32 B: 67,133,472 B a GPU.
    Deployment mimo = deployment("mimo-v2-flash", "h200-sxm", 4);
    const WeightBytes mimo_head = mtp_head_bytes(mimo.model, mimo.served_weights(), 4);
    CHECK(mimo_head.other.count() == 67'108'864ULL);
    CHECK(mimo_head.norms.count() == 24'576);
    CHECK(mimo_head.attention.count() == 32);
    CHECK(mimo_head.total().count() == 67'133'472ULL);
    // DeepSeek-V3 (h = 7,168; deepseek_mtp.py: eh_proj an nn.Linear, replicated) at tp 8:
    // 7,168 x 14,336 x 2 B = 205,520,896 B and 3 x 7,168 x 2 B = 43,008 B a GPU.
    Deployment v3 = deployment("deepseek-v3", "h200-sxm", 8);
    CHECK(mtp_head_bytes(v3.model, v3.served_weights(), 8).total().count() == 205'563'904ULL);
    // Qwen3.5-27B (h = 5,120; qwen3_5_mtp.py: fc a ColumnParallelLinear, its 5,120 output rows
    // split) at tp 4: 1,280 x 10,240 x 2 B = 26,214,400 B, and 3 x 5,120 x 2 B = 30,720 B of norms
    // (pre_fc_norm_embedding, pre_fc_norm_hidden, norm); whole, 104,857,600 + 30,720 B.
    Deployment q = deployment("qwen3.5-27b", "h200-sxm", 4);
    CHECK(q.model.config().mtp_projection_split);
    CHECK(mtp_head_bytes(q.model, q.served_weights(), 4).total().count() == 26'245'120ULL);
    CHECK(mtp_head_bytes(q.model, q.served_weights()).total().count() == 104'888'320ULL);
    // Drafting puts them on the last stage beside the drafter's decoder layer: the drafted
    // model's stages as weight_bytes_per_stage sizes them, plus the head on the last.
    const std::pair<const char*, Deployment*> drafted[] = {
        {"mimo-v2-flash", &mimo}, {"deepseek-v3", &v3}, {"qwen3.5-27b", &q}};
    for (const auto& [label, d] : drafted) {
        INFO(label);
        d->serving.speculation = {.method = DraftMethod::mtp, .tokens = 1};
        const PreparedLayout p = prepare_layout(*d);
        const std::uint32_t tp = d->parallel.tp;
        const StageWeights layers = weight_bytes_per_stage(p.model, p.layout, p.weights);
        const WeightBytes head = mtp_head_bytes(d->model, p.weights, tp);
        CHECK(p.stage_weights[0].total() == layers[0].total() + head.total());
        CHECK(p.weights_whole.total() == weight_bytes(p.model, p.weights).total() +
                                             mtp_head_bytes(d->model, p.weights).total());
    }
}

TEST_CASE("speculative decoding: a separate draft model brings its layers and its weights",
          "[evaluate][speculation]") {
    // Llama-3-70B at tp 4 x pp 2, drafted by Llama-3.1-8B. KV per token: 327,680 + 131,072 =
    // 458,752 B. The draft model runs at the model's tp on the last stage: its 16,060,522,496 B
    // split four ways, the 532,480 B of norms (32 layers x 2 x 4,096 + 4,096, x 2 B) replicated:
    // (16,060,522,496 - 532,480) / 4 + 532,480 = 4,015,529,984 B more on the last stage's GPUs.
    Deployment d = deployment("llama-3-70b", "h100-sxm", 4, 2);
    const ReplicaAnswer plain = evaluate(d, {.context = 8192, .concurrency = 64});
    d.serving.speculation = {
        .method = DraftMethod::draft_model, .tokens = 4, .draft_model = bundled("llama-3.1-8b")};
    const ReplicaAnswer a = evaluate(d, {.context = 8192, .concurrency = 64});
    CHECK(a.kv_per_token.count() == 458'752);
    CHECK(a.drafter_layers == 32);
    CHECK(a.drafter_weights.count() == 16'060'522'496ULL);
    CHECK(a.weights.total() == plain.weights.total() + a.drafter_weights);
    CHECK((a.report.stage_memory()[1].weights - plain.report.stage_memory()[1].weights).count() ==
          4'015'529'984ULL);
    CHECK(a.report.stage_memory()[0].weights == plain.report.stage_memory()[0].weights);
    CHECK(a.max_concurrency < plain.max_concurrency);
    // Without a draft model there is nothing to draft with.
    d.serving.speculation.draft_model.reset();
    CHECK_THROWS_AS(evaluate(d, {.context = 8192}), InvalidInput);
}

// ---- The latency estimate in the one answer --------------------------------------------------

namespace {

/// The estimate for the same replica and load through estimate_latency directly, with the running
/// cap the answer's verdict counts.
LatencyEstimate direct_estimate(const ReplicaAnswer& a, const EstimateParams& p) {
    return estimate_latency(a.replica,
                            Load{.concurrency = a.concurrency_per_replica,
                                 .prompt_tokens = *a.demand.prompt_tokens,
                                 .output_tokens = *a.demand.output_tokens,
                                 .max_running = a.max_concurrency},
                            p);
}

}  // namespace

TEST_CASE("fixed-length clients (Demand::run) reach the estimate as Load::fixed_lengths",
          "[evaluate][estimate][run]") {
    // Llama-3-8B on one H100 under vLLM, a budget of 8,192 tokens a step, 8 clients of exactly
    // 2,048 + 257 tokens (a benchmark's fixed lengths). The cache holds far more than 8 such
    // sequences, so all 8 run. A cycle's prompts, 8 x 2,048 = 16,384 tokens, pass the budget:
    // they queue for it and each prompt's one chunk rides in a step full to the budget
    // (estimate.hpp), so TTFT's prefill is that full step: its own step plus the wait,
    // ttft_prefill_wait = ttft_prefill - prefill_step. Without fixed lengths the prompts arrive
    // at random and wait less.
    Deployment d = deployment("llama-3-8b", "h100-sxm");
    d.serving.max_num_batched_tokens = 8192;
    const Demand fixed{.context = 2305,
                       .concurrency = 8,
                       .prompt_tokens = 2048,
                       .output_tokens = 257,
                       .run = {.fixed_lengths = true}};
    Demand drawn = fixed;
    drawn.run = {};
    const ReplicaAnswer a = evaluate(d, fixed);
    const ReplicaAnswer b = evaluate(d, drawn);
    REQUIRE(a.estimate);
    REQUIRE(b.estimate);
    const LatencyEstimate& e = *a.estimate;
    CHECK(e.running == 8);
    CHECK(e.chunks == 1);
    CHECK(e.ttft_prefill_wait == e.ttft_prefill - e.prefill_step.time);
    CHECK(e.ttft_prefill > b.estimate->ttft_prefill);
    // The same as estimate_latency's at the load with Load::fixed_lengths.
    const LatencyEstimate direct = estimate_latency(a.replica,
                                                    Load{.concurrency = 8,
                                                         .prompt_tokens = 2048,
                                                         .output_tokens = 257,
                                                         .max_num_batched_tokens = 8192,
                                                         .max_running = a.max_concurrency,
                                                         .fixed_lengths = true},
                                                    a.estimate_params);
    CHECK(e.ttft == direct.ttft);
    CHECK(e.itl == direct.itl);
    CHECK(e.tpot == direct.tpot);
    CHECK(e.tokens_per_s == direct.tokens_per_s);
    // 8 x 1,000 = 8,000 tokens fit one step (8,192 less the d = 1 + 7 x 256 / 257 = 7.97 mean
    // decodes beside them): nothing queues to hold the clients together, the same figures.
    Demand fits = fixed;
    fits.prompt_tokens = 1000;
    fits.context = 1257;
    Demand fits_drawn = fits;
    fits_drawn.run = {};
    const ReplicaAnswer f = evaluate(d, fits), g = evaluate(d, fits_drawn);
    CHECK(f.estimate->ttft == g.estimate->ttft);
    CHECK(f.estimate->tpot == g.estimate->tpot);
    CHECK(f.estimate->tokens_per_s == g.estimate->tokens_per_s);
    // Fixed lengths take no spread; and, as the spread, only with the split.
    Demand both = fixed;
    both.run.length_spread = 0.5;
    CHECK_THROWS_WITH(evaluate(d, both),
                      Catch::Contains("length_spread: expected 0 with fixed_lengths"));
    CHECK_THROWS_WITH(evaluate(d, {.context = 2305, .run = {.fixed_lengths = true}}),
                      Catch::Contains("fixed_lengths: expected prompt_tokens and output_tokens"));
}

TEST_CASE("the estimate is estimate_latency's at the load, with the verdict's running cap",
          "[evaluate][estimate]") {
    // Llama-3-70B on 4 x H100 at tp 4: 48 clients, 1,000 tokens in and 200 out, sized at their
    // 1,200 tokens. The cache holds far more than 48 such sequences (62 of 8,000 tokens,
    // test_cli_commands.cpp), so all 48 run and none waits.
    const ReplicaAnswer a =
        evaluate(deployment("llama-3-70b", "h100-sxm", 4),
                 {.context = 1200, .concurrency = 48, .prompt_tokens = 1000, .output_tokens = 200});
    REQUIRE(a.estimate);
    CHECK(a.estimate_basis == EstimateBasis::family_fitted);
    CHECK(a.gpu_family == GpuFamily::hopper);
    CHECK(a.estimate_params == default_params(GpuFamily::hopper).params);
    const LatencyEstimate& e = *a.estimate;
    CHECK(e.running_cap == a.max_concurrency);
    CHECK(e.running == 48);
    CHECK(e.waiting == 0);
    CHECK(e.ttft_queue.in(seconds) == 0.0);
    const LatencyEstimate direct = direct_estimate(a, a.estimate_params);
    CHECK(e.itl == direct.itl);
    CHECK(e.ttft == direct.ttft);
    CHECK(e.tokens_per_s == direct.tokens_per_s);
    // Beside its own bound, never below it; tokens/s per GPU is the replica's over its 4 GPUs.
    CHECK(e.itl_bound <= e.itl);
    CHECK(e.ttft_bound <= e.ttft);
    CHECK(e.tokens_per_s_per_gpu == Approx(e.tokens_per_s / 4));
    // The bound the answer already had is unchanged by the split: the same as without it.
    const ReplicaAnswer plain =
        evaluate(deployment("llama-3-70b", "h100-sxm", 4), {.context = 1200, .concurrency = 48});
    CHECK_FALSE(plain.estimate);
    CHECK(plain.estimate_basis == EstimateBasis::not_asked);
    CHECK(plain.decode->tpot == a.decode->tpot);
    CHECK(plain.max_concurrency == a.max_concurrency);
}

TEST_CASE("requests past what the cache holds wait, and the wait is in the TTFT",
          "[evaluate][estimate]") {
    // 200 clients of 8,000-token requests (7,000 in, 1,000 out) on Llama-3-70B at tp 4. The cache
    // per GPU: ceil(0.92 x 85,029,027,840 B) = 78,226,705,613 B, less weights 35,278,831,616 B
    // and vLLM's rotary table (8,192 positions x 128 x 2 B = 2,097,152 B), activation peak
    // 2,096,627,712 B (a forward of 16,384 tokens, vLLM's default from v0.28, PR #51726, at 79,872
    // B each, the MLP's out-of-place all-reduce holding (2 x 8,192 + 7,168 + 2 x 8,192) x 2 B, and
    // the logits of 1,024 rows, 1,024 x 128,256 x 6 B), CUDA graphs 536,870,912 B and NCCL's NVLS
    // buffers the profile's 256 MiB all-reduces connect, 4 heads x 32 MiB = 134,217,728 B
    // (engine/nccl.hpp), FlashInfer's all-reduce fusion workspace, 128 tokens (2 MiB / (8,192 x
    // 2 B)) in buffers of 8 MiB, 4 KiB and 24 MiB each rounded with its pad to 2 MiB, 39,845,888 B
    // (engine/allreduce_fusion.hpp), and PyTorch's cuBLAS workspace on Hopper, 33,554,432 B
    // (budget/reserve.hpp): 40,104,660,173 B, 30,597 blocks of 16 x 81,920 B. A sequence takes 500
    // blocks: 1 + (30,597 - 1 - 500) / 500 = 61 hold, so 61 run and 139 wait; by Little's law for a
    // closed loop a client's cycle is 200 / 61 of a request's time, of which it spends 139 / 61
    // waiting less the request overhead (HTTP, tokenizer), which it spends before it reaches the
    // queue.
    const ReplicaAnswer a = evaluate(
        deployment("llama-3-70b", "h100-sxm", 4),
        {.context = 8000, .concurrency = 200, .prompt_tokens = 7000, .output_tokens = 1000});
    CHECK(a.verdict == Verdict::does_not_fit);
    CHECK(a.max_concurrency == 61);
    REQUIRE(a.estimate);
    CHECK(a.estimate->running == 61);
    CHECK(a.estimate->waiting == 139);
    CHECK(a.estimate->ttft_queue.in(seconds) ==
          Approx(a.estimate->request.in(seconds)*139.0 / 61.0 -
                 a.estimate->ttft_overhead.in(seconds)));
    CHECK(a.estimate->ttft_overhead == default_params(ParallelRules::vllm).request_overhead);
    // The four terms add up (to rounding: the estimate sums them in another order).
    CHECK(a.estimate->ttft.in(seconds) ==
          Approx((a.estimate->ttft_overhead + a.estimate->ttft_prefill +
                  a.estimate->ttft_in_flight + a.estimate->ttft_queue)
                     .in(seconds)));
}

TEST_CASE("each replica's estimate is of its share of the clients", "[evaluate][estimate]") {
    // 8 GPUs at tp 4 are 2 replicas: 100 clients are ceil(100 / 2) = 50 each.
    Deployment d = deployment("llama-3-70b", "h100-sxm", 4);
    d.gpus = 8;
    const ReplicaAnswer a = evaluate(
        d, {.context = 1200, .concurrency = 100, .prompt_tokens = 1000, .output_tokens = 200});
    REQUIRE(a.estimate);
    CHECK(a.estimate->concurrency == 50);
    CHECK(a.estimate->itl == direct_estimate(a, a.estimate_params).itl);
}

TEST_CASE("given parameters change the estimate and never the bound", "[evaluate][estimate]") {
    Deployment d = deployment("llama-3-8b", "h100-sxm");
    const Demand demand{
        .context = 2500, .concurrency = 16, .prompt_tokens = 2000, .output_tokens = 500};
    const ReplicaAnswer family = evaluate(d, demand);
    d.serving.estimate = EstimateParams{.bandwidth = 0.5,
                                        .compute = 0.3,
                                        .layer_overhead = 50.0 * microseconds,
                                        .all_reduce_latency = 0.0 * microseconds};
    const ReplicaAnswer given = evaluate(d, demand);
    REQUIRE(family.estimate);
    REQUIRE(given.estimate);
    CHECK(given.estimate_basis == EstimateBasis::given);
    CHECK(given.estimate_params == *d.serving.estimate);
    CHECK(given.estimate->itl == direct_estimate(given, *d.serving.estimate).itl);
    // Hopper's bandwidth fraction is 1.00 (estimate.hpp's defaults): at 0.5 the step's memory
    // time is 1.00 / 0.5 = 2 times as long.
    CHECK(given.estimate->decode_step.memory.in(seconds) ==
          Approx(1.00 / 0.5 * family.estimate->decode_step.memory.in(seconds)));
    CHECK(given.estimate->itl != family.estimate->itl);
    CHECK(given.decode->tpot == family.decode->tpot);
    CHECK(given.estimate->itl_bound == family.estimate->itl_bound);
    CHECK(given.estimate->ttft_bound == family.estimate->ttft_bound);
}

TEST_CASE("the estimate says why it is absent", "[evaluate][estimate]") {
    const Demand demand{
        .context = 2500, .concurrency = 1, .prompt_tokens = 2000, .output_tokens = 500};
    // Llama-3-70B's 141 GB of bf16 weights do not load on one 80 GB H100: nothing runs.
    const ReplicaAnswer none = evaluate(deployment("llama-3-70b", "h100-sxm"), demand);
    CHECK(none.refusal == Refusal::weights);
    CHECK_FALSE(none.estimate);
    CHECK(none.estimate_basis == EstimateBasis::does_not_start);
    // A GPU whose family is not known has no default parameters; given ones serve.
    Deployment d = deployment("llama-3-8b", "h100-sxm");
    d.gpu.id = "custom-accelerator";
    const ReplicaAnswer unknown = evaluate(d, demand);
    CHECK_FALSE(unknown.estimate);
    CHECK(unknown.estimate_basis == EstimateBasis::unknown_family);
    d.serving.estimate = default_params(GpuFamily::hopper).params;
    CHECK(evaluate(d, demand).estimate_basis == EstimateBasis::given);
    // Ada has no published measurement: the L4 borrows Ampere's values, and says so.
    const ReplicaAnswer l4 =
        evaluate(deployment("llama-3-8b", "l4"),
                 {.context = 2500, .prompt_tokens = 2000, .output_tokens = 500});
    CHECK(l4.estimate_basis == EstimateBasis::family_borrowed);
    CHECK(l4.estimate_params == default_params(GpuFamily::ampere).params);
}

TEST_CASE("a split is both parts, each at least a token, within the context",
          "[evaluate][estimate]") {
    const Deployment d = deployment("llama-3-8b", "h100-sxm");
    CHECK_THROWS_WITH(evaluate(d, {.context = 2500, .prompt_tokens = 2000}),
                      Catch::Contains("output_tokens") && Catch::Contains("both"));
    CHECK_THROWS_WITH(evaluate(d, {.context = 2500, .output_tokens = 500}),
                      Catch::Contains("prompt_tokens"));
    CHECK_THROWS_WITH(evaluate(d, {.context = 2500, .prompt_tokens = 0, .output_tokens = 500}),
                      Catch::Contains("prompt_tokens") && Catch::Contains(">= 1 token"));
    // 2,000 + 501 = 2,501 tokens pass a 2,500-token context.
    CHECK_THROWS_AS(evaluate(d, {.context = 2500, .prompt_tokens = 2000, .output_tokens = 501}),
                    InvalidInput);
    CHECK_THROWS_WITH(evaluate(d, {.context = 2500, .prompt_tokens = 2000, .output_tokens = 501}),
                      Catch::Contains("2500 tokens") && Catch::Contains("2501 tokens"));
}

TEST_CASE("ranked by the estimate, the replica search serves the most tokens per GPU first",
          "[evaluate][plan][estimate]") {
    const Model m = bundled("llama-3-70b");
    SearchSpace space;
    space.gpus = {bundled_gpu("h100-sxm"), bundled_gpu("h200-sxm")};
    space.kv_formats = {KvFormat{KvDtype::bf16}, KvFormat{KvDtype::fp8_e4m3}};
    const Demand demand{
        .context = 1200, .concurrency = 64, .prompt_tokens = 1000, .output_tokens = 200};
    const PlanAnswer p = plan_replicas(m, space, {}, demand, Ranking::estimate);
    REQUIRE(p.fits.size() > 2);
    for (std::size_t i = 0; i + 1 < p.fits.size(); ++i) {
        REQUIRE(p.fits[i].answer.estimate);
        CHECK(p.fits[i].answer.estimate->tokens_per_s_per_gpu >=
              p.fits[i + 1].answer.estimate->tokens_per_s_per_gpu);
    }
    // The best's estimate is what evaluate() gives that deployment.
    const PlanCandidate& best = p.fits.front();
    const ReplicaAnswer again = evaluate(Deployment{.model = m,
                                                    .gpu = space.gpus[best.gpu],
                                                    .parallel = best.answer.replica.parallel,
                                                    .kv = space.kv_formats[best.kv]},
                                         demand);
    CHECK(again.estimate->tokens_per_s_per_gpu == best.answer.estimate->tokens_per_s_per_gpu);
    // The same candidates as the default ranking, in another order.
    const PlanAnswer by_gpus = plan_replicas(m, space, {}, demand);
    CHECK(by_gpus.fits.size() == p.fits.size());
}

TEST_CASE("a prepared layout holds what no demand changes, the same figures to the bit",
          "[evaluate][prepare]") {
    // prepare_layout computes once the whole model's weights and, with a drafter, the model's own
    // step; an evaluation reads them instead of walking every tensor again, so each figure must be
    // the one computed from the model directly, for every bundled model and many demands.
    for (const std::string& id : bundled_model_ids(config_dir)) {
        INFO(id);
        const Deployment d = deployment(id, "h200-sxm");
        const PreparedLayout p = prepare_layout(d);
        // The weights it serves: its checkpoint's as vLLM loads them (Gemma-2-27B's float32 in
        // bf16, engine/load_dtype.hpp).
        const WeightBytes whole = weight_bytes(d.model, d.served_weights());
        CHECK(p.weights_whole.total() == whole.total());
        CHECK_FALSE(p.step.has_value());
        for (std::uint64_t ctx : {1ULL, 4096ULL, 8000ULL})
            for (std::uint64_t n : {1ULL, 64ULL}) {
                const ReplicaAnswer a = evaluate(d, {.context = ctx, .concurrency = n}, {}, p);
                CHECK(a.weights.total() == whole.total());
                CHECK(a.weights.routed_experts == whole.routed_experts);
            }
    }
    // EAGLE on Llama-3.1-8B: the step prepared without the drafter's layer is the plain model's,
    // so the decode bound and the estimate at any demand are those of the model without it.
    Deployment plain = deployment("llama-3.1-8b", "h100-sxm");
    Deployment eagle = plain;
    eagle.serving.speculation = {.method = DraftMethod::eagle, .tokens = 3};
    const PreparedLayout pe = prepare_layout(eagle);
    REQUIRE(pe.step.has_value());
    CHECK(pe.step->stage_weights[0].total() == prepare_layout(plain).stage_weights[0].total());
    for (std::uint64_t n : {1ULL, 16ULL, 64ULL}) {
        const Demand demand{
            .context = 3000, .concurrency = n, .prompt_tokens = 2000, .output_tokens = 1000};
        const ReplicaAnswer a = evaluate(eagle, demand, {}, pe);
        const ReplicaAnswer b = evaluate(plain, demand);
        REQUIRE(a.decode.has_value());
        REQUIRE(a.estimate.has_value());
        CHECK(a.decode->tpot == b.decode->tpot);
        // The estimate runs at most the verdict's sequences, which the drafter's KV lowers; at
        // these loads both hold every client, so the step is the same.
        CHECK(a.estimate->running == b.estimate->running);
        CHECK(a.estimate->itl == b.estimate->itl);
    }
}

TEST_CASE("a shared system prompt is held once: the blocks it saves and the sequences it adds",
          "[evaluate][shared_prefix]") {
    // Llama-3-8B in bf16: 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 B = 131,072 B a token;
    // a block of 16 tokens is 2 MiB. A sequence of 8,192 tokens holds 512 blocks, 1 GiB. A system
    // prompt of 2,048 tokens is 128 full blocks, 256 MiB, which every sequence after the first no
    // longer holds: each then needs 384 blocks, 768 MiB, of its own.
    Deployment d = deployment("llama-3-8b", "h100-sxm");
    d.serving.kv_memory_per_gpu = 40 * GiB;
    d.serving.block_size = 16;
    const Demand plain{.context = 8192, .concurrency = 60};
    Demand shared = plain;
    shared.shared_prefix_tokens = 2048;

    // The ideal profile: 40 GiB / 1 GiB = 40 sequences; sharing, 256 MiB + n x 768 MiB <= 40 GiB,
    // n = (40,960 - 256) / 768 = 53 exactly.
    d.serving.engine = Engine::ideal;
    const ReplicaAnswer ideal = evaluate(d, shared);
    CHECK(ideal.kv_per_sequence == 1 * GiB);
    CHECK(ideal.shared_prefix_blocks == 128);
    CHECK(ideal.shared_prefix_bytes_per_sequence == 256 * MiB);
    CHECK(ideal.max_concurrency_without_sharing == 40);
    CHECK(ideal.max_concurrency == 53);
    CHECK(ideal.shared_prefix_concurrency_added() == 13);
    // The 53 sequences it runs of the 60 asked: 52 of them do not hold the prefix again, 52 x 128
    // = 6,656 blocks, 13 GiB; the 60 need 60 GiB - 59 x 256 MiB = 46,336 MiB.
    CHECK(ideal.shared_prefix_blocks_saved == 6656);
    CHECK(ideal.shared_prefix_bytes_saved == 13 * GiB);
    CHECK(ideal.kv_needed == 46'336 * MiB);
    CHECK(ideal.verdict == Verdict::does_not_fit);

    // vLLM: 40 GiB / 2 MiB = 20,480 blocks, 20,479 past the null block; a request of 8,192 tokens
    // holds 512 at its peak and while decoding, so 1 + (20,479 - 512) / 512 = 39 without sharing;
    // sharing, the first pays its 512 and each other 384: 1 + 19,967 / 384 = 52.
    d.serving.engine = Engine::vllm;
    const ReplicaAnswer vllm = evaluate(d, shared);
    CHECK(vllm.max_concurrency_without_sharing == 39);
    CHECK(vllm.max_concurrency == 52);
    CHECK(vllm.total_max_concurrency == 52);
    CHECK(vllm.shared_prefix_blocks_saved == 51 * 128);
    CHECK(vllm.shared_prefix_bytes_saved == 51 * 256 * MiB);
    // Without a shared prefix the figures are today's, to the bit.
    const ReplicaAnswer none = evaluate(d, plain);
    CHECK(none.max_concurrency == 39);
    CHECK(none.max_concurrency_without_sharing == 39);
    CHECK(none.shared_prefix_blocks == 0);
    CHECK(none.shared_prefix_bytes_saved.is_zero());
    CHECK(none.kv_needed == 60 * GiB);
}

TEST_CASE("only full blocks of the prefix are shared, and never the last token's",
          "[evaluate][shared_prefix]") {
    Deployment d = deployment("llama-3-8b", "h100-sxm");
    d.serving.kv_memory_per_gpu = 40 * GiB;
    d.serving.block_size = 16;
    // 2,047 tokens are 127 full blocks and a partial one each sequence writes itself.
    CHECK(evaluate(d, {.context = 8192, .shared_prefix_tokens = 2047}).shared_prefix_blocks == 127);
    CHECK(evaluate(d, {.context = 8192, .shared_prefix_tokens = 15}).shared_prefix_blocks == 0);
    // A prefix as long as the context: the last token is recomputed (vLLM caps a hit at
    // num_tokens - 1), so 8,191 tokens, 511 blocks, are shared and each sequence keeps one block.
    const ReplicaAnswer whole = evaluate(d, {.context = 8192, .shared_prefix_tokens = 8192});
    CHECK(whole.shared_prefix_blocks == 511);
    CHECK(whole.shared_prefix_bytes_per_sequence == 511 * 2 * MiB);
    CHECK(whole.max_concurrency > whole.max_concurrency_without_sharing);
}

TEST_CASE("a shared prefix is at most the context and the prompt", "[evaluate][shared_prefix]") {
    const Deployment d = deployment("llama-3-8b", "h100-sxm");
    CHECK_THROWS_AS(evaluate(d, {.context = 4096, .shared_prefix_tokens = 4097}), InvalidInput);
    CHECK_THROWS_WITH(evaluate(d, {.context = 4096, .shared_prefix_tokens = 4097}),
                      Catch::Contains("shared_prefix_tokens") &&
                          Catch::Contains("at most the context, 4096 tokens") &&
                          Catch::Contains("4097 tokens"));
    CHECK_THROWS_WITH(evaluate(d, {.context = 4096,
                                   .prompt_tokens = 1000,
                                   .output_tokens = 500,
                                   .shared_prefix_tokens = 1001}),
                      Catch::Contains("shared_prefix_tokens") &&
                          Catch::Contains("at most the prompt, 1000 tokens"));
    CHECK_NOTHROW(evaluate(d, {.context = 4096,
                               .prompt_tokens = 1000,
                               .output_tokens = 500,
                               .shared_prefix_tokens = 1000}));
}

TEST_CASE("a longer shared prefix never lowers the concurrency; none gives today's figures",
          "[evaluate][shared_prefix][properties]") {
    for (const char* model : {"llama-3-8b", "gpt-oss-120b", "gemma-3-27b", "deepseek-v3",
                              "jamba-1.5-mini", "qwen3-30b-a3b"})
        for (Engine e : {Engine::ideal, Engine::vllm, Engine::sglang, Engine::trtllm})
            for (std::uint32_t tp : {1U, 8U}) {
                Deployment d = deployment(model, "h200-sxm", tp);
                d.serving.engine = e;
                const std::uint64_t ctx = 8192;
                const ReplicaAnswer base = [&] {
                    try {
                        return evaluate(d, {.context = ctx, .concurrency = 64});
                    } catch (const InvalidLayout&) {
                        return ReplicaAnswer{.replica = {.model = d.model}};
                    }
                }();
                if (base.replica.parallel.tp != tp) continue;  // a layout it cannot take
                INFO(model << " tp " << tp << " " << name(e));
                const ReplicaAnswer zero =
                    evaluate(d, {.context = ctx, .concurrency = 64, .shared_prefix_tokens = 0});
                CHECK(zero.max_concurrency == base.max_concurrency);
                CHECK(zero.admitted == base.admitted);
                CHECK(zero.kv_needed == base.kv_needed);
                CHECK(zero.verdict == base.verdict);
                CHECK(base.max_concurrency_without_sharing == base.max_concurrency);
                std::uint64_t last = base.max_concurrency;
                Bytes last_saved{};
                for (std::uint64_t p : {1ULL, 16ULL, 500ULL, 1024ULL, 4096ULL, 8000ULL, 8192ULL}) {
                    const ReplicaAnswer a =
                        evaluate(d, {.context = ctx, .concurrency = 64, .shared_prefix_tokens = p});
                    INFO("prefix " << p);
                    CHECK(a.max_concurrency >= last);
                    CHECK(a.max_concurrency_without_sharing == base.max_concurrency);
                    CHECK(a.shared_prefix_bytes_per_sequence >= last_saved);
                    CHECK(a.kv_needed <= base.kv_needed);
                    last = a.max_concurrency;
                    last_saved = a.shared_prefix_bytes_per_sequence;
                }
            }
}

TEST_CASE("a replica answer's per-rank figures are read from its own fields", "[evaluate]") {
    // Two dp ranks: 40 sequences asked of a rank that holds 31 run 31; 20 admitted without
    // sharing over 2 ranks are 10 a rank. (An answer has a replica, so one is evaluated, then its
    // fields set by hand.)
    ReplicaAnswer a = evaluate(deployment("llama-3-8b", "h100-sxm"), {.context = 8000});
    a.serving.engine = Engine::vllm;
    a.verdict = Verdict::fits;
    a.dp_ranks = 2;
    a.concurrency_per_dp_rank = 40;
    a.dp_rank_max_concurrency = 31;
    a.admitted_without_sharing = 20;
    CHECK(a.dp_rank_running() == 31);
    a.concurrency_per_dp_rank = 12;
    CHECK(a.dp_rank_running() == 12);
    CHECK(a.dp_rank_admitted_without_sharing() == 10);
    // vLLM logging 8.4x where a rank admits 10: 10 > floor(8.4) + 1 = 9, beyond its rounding; at
    // 9.2x, 10 > 10 is not.
    a.max_concurrency_ratio = 8.4;
    CHECK(a.vllm_log_understates());
    a.max_concurrency_ratio = 9.2;
    CHECK_FALSE(a.vllm_log_understates());
    // Only vLLM logs the figure, and only an engine that starts.
    a.max_concurrency_ratio = 8.4;
    a.serving.engine = Engine::sglang;
    CHECK_FALSE(a.vllm_log_understates());
    a.serving.engine = Engine::vllm;
    a.verdict = Verdict::does_not_start;
    CHECK_FALSE(a.vllm_log_understates());
}

TEST_CASE("a request's tokens are its prompt and output, and never wrap", "[evaluate]") {
    CHECK(TokenSplit{.prompt = 2000, .output = 500}.tokens() == 2500);
    CHECK_THROWS_AS((TokenSplit{.prompt = ~std::uint64_t{0}, .output = 1}.tokens()), OverflowError);
}

namespace {

/// Every figure of two answers, term by term: the engine's memory per stage, its cache, the
/// verdict's counts, the weights, the decode bound and the estimate.
void check_same_figures(const ReplicaAnswer& a, const ReplicaAnswer& b) {
    CHECK(a.verdict == b.verdict);
    CHECK(a.refusal == b.refusal);
    CHECK(a.serving.engine == b.serving.engine);
    CHECK(a.serving.block_size == b.serving.block_size);
    CHECK(a.gpus == b.gpus);
    CHECK(a.replicas == b.replicas);
    CHECK(a.report.num_stages == b.report.num_stages);
    for (std::uint32_t st = 0; st < a.report.num_stages; ++st) {
        INFO("stage " << st);
        const EngineMemory& x = a.report.memory[st];
        const EngineMemory& y = b.report.memory[st];
        CHECK(x.fraction == y.fraction);
        CHECK(x.fraction_bytes == y.fraction_bytes);
        CHECK(x.weights == y.weights);
        CHECK(x.activation == y.activation);
        CHECK(x.cuda_graphs == y.cuda_graphs);
        CHECK(x.nccl_nvls == y.nccl_nvls);
        CHECK(x.torch_nccl_communicator == y.torch_nccl_communicator);
        CHECK(x.cublas_workspace == y.cublas_workspace);
        CHECK(x.charged == y.charged);
        CHECK(x.outside == y.outside);
        CHECK(x.kv_memory == y.kv_memory);
        CHECK(x.shortfall == y.shortfall);
        CHECK(x.outside_fits == y.outside_fits);
    }
    CHECK(a.report.summary.tokens == b.report.summary.tokens);
    CHECK(a.report.summary.max_concurrency == b.report.summary.max_concurrency);
    CHECK(a.report.vllm.num_blocks == b.report.vllm.num_blocks);
    CHECK(a.report.vllm.needed == b.report.vllm.needed);
    CHECK(a.report.sglang.max_total_num_tokens == b.report.sglang.max_total_num_tokens);
    CHECK(a.report.trtllm.num_pools == b.report.trtllm.num_pools);
    CHECK(a.limiting_stage == b.limiting_stage);
    CHECK(a.kv_budget == b.kv_budget);
    CHECK(a.kv_per_sequence == b.kv_per_sequence);
    CHECK(a.kv_needed == b.kv_needed);
    CHECK(a.headroom == b.headroom);
    CHECK(a.shortfall == b.shortfall);
    CHECK(a.kv_tokens == b.kv_tokens);
    CHECK(a.admitted == b.admitted);
    CHECK(a.sequence_cap == b.sequence_cap);
    CHECK(a.max_concurrency == b.max_concurrency);
    CHECK(a.max_concurrency_ratio == b.max_concurrency_ratio);
    CHECK(a.total_max_concurrency == b.total_max_concurrency);
    CHECK(a.max_context == b.max_context);
    CHECK(a.longest_single_context == b.longest_single_context);
    CHECK(a.estimated_max_model_len == b.estimated_max_model_len);
    CHECK(a.startup.refused == b.startup.refused);
    CHECK(a.weights.total() == b.weights.total());
    CHECK(a.weights_per_gpu == b.weights_per_gpu);
    CHECK(a.weights_checkpoint_per_gpu == b.weights_checkpoint_per_gpu);
    CHECK(a.loaded.loaded == b.loaded.loaded);
    CHECK(a.weights_on_gpu.total() == b.weights_on_gpu.total());
    CHECK(a.kv_per_token == b.kv_per_token);
    CHECK(a.drafter_kv_per_token == b.drafter_kv_per_token);
    CHECK(a.kv_per_token_per_gpu == b.kv_per_token_per_gpu);
    REQUIRE(a.decode.has_value() == b.decode.has_value());
    if (a.decode) CHECK(a.decode->tpot == b.decode->tpot);
    REQUIRE(a.estimate.has_value() == b.estimate.has_value());
    if (a.estimate) {
        CHECK(a.estimate->ttft == b.estimate->ttft);
        CHECK(a.estimate->itl == b.estimate->itl);
    }
}

}  // namespace

TEST_CASE("a prepared engine gives the figures evaluate computes, to the bit",
          "[evaluate][prepare]") {
    // prepare_engine computes once what no demand changes (the serving knobs, the loaded weights,
    // each stage's memory with its activation peak); the cache at the demand's context is built
    // each call. Both paths run the same functions on the same inputs, so every figure is equal,
    // whatever the engine, the layout, a drafter, a hybrid's state or a stage split.
    Deployment mtp = deployment("deepseek-v3", "h200-sxm", 8);
    mtp.serving.speculation = {.method = DraftMethod::mtp, .tokens = 1};
    Deployment hybrid = deployment("jamba-1.5-mini", "a100-sxm4-80gb");
    Deployment hybrid_trtllm = hybrid;
    hybrid_trtllm.serving.engine = Engine::trtllm;
    Deployment next = deployment("qwen3-next-80b-a3b", "h200-sxm", 4);
    Deployment llama = deployment("llama-3-70b", "h100-sxm", 4);
    Deployment llama_pp = deployment("llama-3-70b", "h100-sxm", 2, 2);
    llama_pp.gpus = 8;
    Deployment llama_sglang = llama;
    llama_sglang.serving.engine = Engine::sglang;
    const std::pair<const char*, const Deployment*> cases[] = {
        {"deepseek-v3 mtp", &mtp},
        {"jamba-1.5-mini vllm", &hybrid},
        {"jamba-1.5-mini trtllm", &hybrid_trtllm},
        {"qwen3-next-80b-a3b", &next},
        {"llama-3-70b tp4", &llama},
        {"llama-3-70b tp2 pp2 x2", &llama_pp},
        {"llama-3-70b sglang", &llama_sglang}};
    for (const auto& [label, d] : cases) {
        INFO(label);
        const PreparedLayout p = prepare_layout(*d);
        const PreparedEngine e = prepare_engine(*d, p);
        for (std::uint64_t ctx : {1ULL, 2048ULL, 8192ULL, 131072ULL})
            for (std::uint64_t n : {1ULL, 48ULL, 1000ULL}) {
                INFO(ctx << " tokens x " << n);
                Demand demand{.context = ctx, .concurrency = n};
                if (ctx >= 2048) {
                    demand.prompt_tokens = ctx - 1024;
                    demand.output_tokens = 1024;
                    demand.shared_prefix_tokens = ctx == 8192 ? 1000 : 0;
                }
                check_same_figures(evaluate(*d, demand, {}, p, e), evaluate(*d, demand));
            }
    }
    // A bad demand is still the demand's error, before the deployment's figures are read.
    const PreparedLayout p = prepare_layout(llama);
    const PreparedEngine e = prepare_engine(llama, p);
    CHECK_THROWS_AS(evaluate(llama, {.context = 0}, {}, p, e), InvalidInput);
    CHECK_THROWS_AS(evaluate(llama, {.context = 8, .concurrency = 0}, {}, p, e), InvalidInput);
}

TEST_CASE("vLLM's releases v0.11 to v0.22 charge the logits gather's NCCL communicator",
          "[evaluate]") {
    // Llama-3-70B at tp 8 on H100 SXMs: from v0.11 (the snapshot after the groups) to v0.22 the
    // profile's logits all-gather runs on PyTorch's own NCCL communicator, created inside the
    // charged window: 24 ring channels x 12 MiB + 115 x 2 MiB = 518 MiB = 543,162,368 B
    // (engine/nccl.hpp). v0.10 charged the communication buffers as one term, and from v0.23 the
    // gather goes through pynccl (vLLM PR #40996): nothing; nor at tp 1, which gathers nothing.
    Deployment d{
        .model = bundled("llama-3-70b"), .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 8}};
    const auto communicator = [&](std::optional<EngineVersion> v) {
        d.serving.engine_version = v;
        const ReplicaAnswer a = evaluate(d, {.context = 8192});
        return a.report.memory[a.limiting_stage].torch_nccl_communicator;
    };
    CHECK(communicator(EngineVersion{0, 11}).count() == 543'162'368ULL);
    CHECK(communicator(EngineVersion{0, 20}).count() == 543'162'368ULL);
    CHECK(communicator(EngineVersion{0, 22}).count() == 543'162'368ULL);
    CHECK(communicator(EngineVersion{0, 10}).is_zero());
    CHECK(communicator(EngineVersion{0, 23}).is_zero());
    CHECK(communicator(std::nullopt).is_zero());  // the newest release, v0.30
    d.parallel.tp = 1;
    CHECK(communicator(EngineVersion{0, 20}).is_zero());
}

TEST_CASE("SGLang's release picks its default fraction and aiter's all-reduce on ROCm",
          "[evaluate][sglang]") {
    // Llama-3-70B at tp 8 on H200s, no fraction given. The 0.4 line's tp table gives 0.81 at tp 8
    // (server_args.py, __post_init__); from 0.5.3 the memory rule (PR #10975): the H200's
    // nvidia-smi total, 143,771 MiB, is below 160 GiB, so a prefill chunk of 8,192 and a graph
    // batch of 512 at tp 8: reserved = 512 + 12,288 + 1,024 + 1,024 = 14,848 MiB;
    // (143,771 - 14,848) / 143,771 = 0.89672 -> 0.897.
    Deployment d{
        .model = bundled("llama-3-70b"), .gpu = bundled_gpu("h200-sxm"), .parallel = {.tp = 8}};
    d.serving.engine = Engine::sglang;
    const auto fraction = [&](std::optional<EngineVersion> v) {
        d.serving.engine_version = v;
        const ReplicaAnswer a = evaluate(d, {.context = 8192});
        return a.report.memory[a.limiting_stage].fraction;
    };
    const double by_memory = sglang_mem_fraction(d.gpu, 8, 1).fraction;
    CHECK(sglang_mem_fraction(d.gpu, 8, 1).gpu_memory_mib == 143'771);
    CHECK(by_memory == 0.897);
    CHECK(fraction(EngineVersion{0, 4, 0}) == 0.81);
    CHECK(fraction(EngineVersion{0, 4, 6}) == 0.81);
    CHECK(fraction(EngineVersion{0, 5, 3}) == by_memory);
    CHECK(fraction(std::nullopt) == by_memory);  // the newest, 0.5.20
    // The answer names the release it ran, given or the newest.
    d.serving.engine_version = EngineVersion{0, 5, 9};
    CHECK(evaluate(d, {.context = 8192}).serving.sglang_release == EngineVersion{0, 5, 9});
    d.serving.engine_version.reset();
    CHECK(evaluate(d, {.context = 8192}).serving.sglang_release == sglang_newest_release);
    // 0.4.8 to 0.5.2 by SGLang PR #7054's reserve: (12 + 8 / 2) GiB = 16,384 MiB on a GPU of
    // 143,771 MiB, (143,771 - 16,384) / 143,771 = 0.886041 -> 0.886.
    CHECK(fraction(EngineVersion{0, 4, 8}) == 0.886);
    CHECK(fraction(EngineVersion{0, 5, 2}) == 0.886);
    // 0.4.7's tag ran the tp table and 0.4.7.post1 PR #7054's reserve, which kvplan reads as one
    // release: refused unless a fraction is given; a release outside the table is refused.
    d.serving.engine_version = EngineVersion{0, 4, 7};
    CHECK_THROWS_WITH(evaluate(d, {.context = 8192}), Catch::Contains("0.4.7.post1"));
    d.serving.memory_fraction = 0.93;
    CHECK(evaluate(d, {.context = 8192}).report.memory[0].fraction == 0.93);
    d.serving.engine_version = EngineVersion{0, 5, 21};
    CHECK_THROWS_AS(evaluate(d, {.context = 8192}), InvalidInput);
    d.serving.engine_version = EngineVersion{0, 3, 6};
    CHECK_THROWS_AS(evaluate(d, {.context = 8192}), InvalidInput);
    // TensorRT-LLM has no release table.
    d.serving.engine = Engine::trtllm;
    d.serving.engine_version = EngineVersion{0, 5, 9};
    CHECK_THROWS_AS(evaluate(d, {.context = 8192}), InvalidInput);

    // On MI355Xs at tp 2 (fraction 0.85) aiter's custom all-reduce is charged with the groups:
    // 138 MiB under 0.5.8 (aiter v0.1.9.post1, max_size 64 MiB), 394 MiB under 0.5.9
    // (v0.1.10.post3, 128 MiB and an output buffer), 3 GiB + 10 MiB from 0.5.10 (v0.1.12.post1, 1
    // GiB: engine/sglang_release.hpp). The pool is 0.85 of what is free after them, so 0.5.10's is
    // 0.85 x (3,082 - 394) MiB = 2,284.8 MiB smaller than 0.5.9's.
    Deployment m{
        .model = bundled("llama-3-70b"), .gpu = bundled_gpu("mi355x"), .parallel = {.tp = 2}};
    m.serving.engine = Engine::sglang;
    m.serving.memory_fraction = 0.85;
    const auto memory = [&](EngineVersion v) {
        m.serving.engine_version = v;
        const ReplicaAnswer a = evaluate(m, {.context = 8192});
        return a.report.memory[a.limiting_stage];
    };
    const EngineMemory m8 = memory({0, 5, 8}), m9 = memory({0, 5, 9}), m10 = memory({0, 5, 10});
    CHECK((m9.comm_buffers - m8.comm_buffers) == 256 * MiB);
    CHECK((m10.comm_buffers - m9.comm_buffers) == 3 * GiB + 10 * MiB - 394 * MiB);
    CHECK((m9.kv_memory - m10.kv_memory).in(MiB) == Approx(0.85 * (3082 - 394)).margin(0.01));
    CHECK(memory(sglang_newest_release).comm_buffers == m10.comm_buffers);
    // On CUDA nothing of aiter's.
    d.serving.engine = Engine::sglang;
    d.serving.memory_fraction.reset();
    const auto comm = [&](EngineVersion v) {
        d.serving.engine_version = v;
        return evaluate(d, {.context = 8192}).report.memory[0].comm_buffers;
    };
    CHECK(comm({0, 5, 9}) == comm({0, 5, 12}));
}
