// The deployments people run: attention data parallelism, expert parallelism and decode context
// parallelism evaluated, searched and timed as evaluate(), plan_replicas() and the rooflines give
// them, each figure derived by hand.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// DeepSeek-V3's checkpoint stores its linear layers in fp8 with one fp32 scale per 128 x 128 block
// (quantization_config.weight_block_size): rows x cols bytes, plus 4 B per block.
std::uint64_t fp8(std::uint64_t rows, std::uint64_t cols) {
    return rows * cols + ceil_div(rows, 128) * ceil_div(cols, 128) * 4;
}
// Norms, the router and the embeddings stay 16-bit.
std::uint64_t bf16(std::uint64_t values) { return 2 * values; }

}  // namespace

TEST_CASE("DeepSeek-V3 on 8 x H200 at 8k: dp 8 x ep 8 holds over three times the sequences of tp 8",
          "[deployments][evaluate]") {
    // The new user: DeepSeek-V3 (its fp8 checkpoint, bf16 KV) on 8 x H200, sequences of
    // 8,000 tokens, under vLLM. tp 8 keeps a whole copy of the MLA latent on every GPU; dp 8 with
    // expert parallelism gives each GPU its own sequences and 32 of the 256 experts.
    const Model m = bundled("deepseek-v3");
    const GpuSpec h200 = bundled_gpu("h200-sxm");
    const Demand demand{.context = 8000, .concurrency = 256};
    const ReplicaAnswer tp8 =
        evaluate(Deployment{.model = m, .gpu = h200, .parallel = {.tp = 8}}, demand);
    const ReplicaAnswer dpep = evaluate(
        Deployment{.model = m, .gpu = h200, .parallel = {.tp = 1, .dp = 8, .ep = 8}}, demand);
    REQUIRE(tp8.starts());
    REQUIRE(dpep.starts());
    CHECK(tp8.replica_gpus == 8);
    CHECK(dpep.replica_gpus == 8);
    CHECK(dpep.dp_ranks == 8);
    CHECK(dpep.placement.experts_per_gpu == 32);

    // Weights on one GPU at dp 8 x ep 8 (tp 1: attention, dense MLPs, shared experts, embedding
    // and LM head whole on every GPU; 32 routed experts whole). Per layer:
    //   MLA: q_a 1,536 x 7,168, q_b 128 x 192 = 24,576 x 1,536, kv_a 576 x 7,168,
    //        kv_b 128 x 256 = 32,768 x 512, o 7,168 x 16,384 in fp8; q_a and kv_a layernorms
    //        (1,536 + 512) in bf16
    const std::uint64_t mla = fp8(1536, 7168) + fp8(24576, 1536) + fp8(576, 7168) +
                              fp8(32768, 512) + fp8(7168, 16384) + bf16(1536 + 512);
    CHECK(mla == 187'155'168);
    //   two RMSNorms of 7,168
    const std::uint64_t norms = bf16(2 * 7168);
    //   the 3 dense layers: gate, up 18,432 x 7,168 and down 7,168 x 18,432
    const std::uint64_t dense = 2 * fp8(18432, 7168) + fp8(7168, 18432);
    CHECK(dense == 396'458'496);
    //   the 58 MoE layers: an expert of width 2,048 (gate, up, down), 32 of them and the shared
    //   one, and the router 256 x 7,168 with its bias of 256 in bf16
    const std::uint64_t expert = 2 * fp8(2048, 7168) + fp8(7168, 2048);
    CHECK(expert == 44'050'944);
    const std::uint64_t router = bf16(256 * 7168 + 256);
    //   the embedding and LM head 129,280 x 7,168 (129,280 is a multiple of 64: no padding) and
    //   the final norm.
    const std::uint64_t table = bf16(129280ULL * 7168);
    const std::uint64_t dpep_weights = 61 * (mla + norms) + 3 * dense +
                                       58 * (32 * expert + expert + router) + 2 * table +
                                       bf16(7168);
    CHECK(dpep_weights == 100'840'717'664ULL);
    // vLLM holds RoPE's cos/sin table beside them on every GPU: 163,840 positions x
    // qk_rope_head_dim 64 x 2 B (engine/startup.hpp, vllm_rotary_table_bytes).
    const std::uint64_t rope = 163840ULL * 64 * 2;
    CHECK(rope == 20'971'520);
    CHECK(dpep.weights_per_gpu.count() == dpep_weights + rope);
    CHECK(dpep.weights_on_gpu.routed_experts.count() == 58 * 32 * expert);
    CHECK(dpep.weights_on_gpu.embedding.count() == table);
    // At tp 8 the heads, MLPs, the experts' widths and the vocabulary split 8 ways: q_b 3,072 rows,
    // kv_b 4,096 rows, o 2,048 columns; q_a and kv_a stay whole. Each expert is 256 wide on a GPU,
    // so its 256 slices weigh what 32 whole experts do.
    const std::uint64_t mla8 = fp8(1536, 7168) + fp8(3072, 1536) + fp8(576, 7168) + fp8(4096, 512) +
                               fp8(7168, 2048) + bf16(1536 + 512);
    const std::uint64_t dense8 = 2 * fp8(2304, 7168) + fp8(7168, 2304);
    const std::uint64_t slice8 = 2 * fp8(256, 7168) + fp8(7168, 256);
    const std::uint64_t tp8_weights = 61 * (mla8 + norms) + 3 * dense8 +
                                      58 * (256 * slice8 + slice8 + router) + 2 * (table / 8) +
                                      bf16(7168);
    CHECK(tp8_weights == 85'140'101'152ULL);
    CHECK(tp8.weights_per_gpu.count() == tp8_weights + rope);

    // KV per GPU: each holds the whole latent of its own sequences, (512 + 64) x 2 B x 61 layers
    // = 70,272 B per token; a sequence of 8,000 tokens in blocks of 64 is 125 blocks,
    // 562,176,000 B, in both layouts. tp 8 holds the same latent on all 8 GPUs; at dp 8 each GPU
    // holds 32 of the 256 sequences.
    CHECK(tp8.kv_per_token_per_gpu.count() == 70'272);
    CHECK(dpep.kv_per_token_per_gpu.count() == 70'272);
    CHECK(tp8.kv_per_sequence.count() == 562'176'000);
    CHECK(dpep.kv_per_sequence.count() == 562'176'000);
    CHECK(dpep.concurrency_per_dp_rank == 32);
    CHECK(dpep.kv_needed.count() == 32ULL * 562'176'000);
    CHECK(tp8.kv_needed.count() == 256ULL * 562'176'000);

    // vLLM's KV memory: ceil(0.92 x 150,109,945,856 B) = 138,101,150,188 B (the CUDA total of an
    // H200, 143,156 MiB), less the weights and the rotary table, the profiled activation peak,
    // PyTorch's cuBLAS workspace that the profile's first GEMM takes (32 MiB on Hopper:
    // aten/src/ATen/cuda/CublasHandlePool.cpp) and the CUDA graphs (256 x 2 MiB). The activation
    // over 16,384 tokens (vLLM's default from v0.28, PR #51726): 2 B x (residual 2 x 7,168 + the
    // larger of attention and MLP per token) + the logits of 1,024 rows x 129,280 x (2 + 4) B =
    // 794,296,320 B; the FlashInfer sampling after it (16,384 x 7,168 x 2 + 794,296,320 + 1,024 x
    // 129,280 x 8 = 2,088,239,104 B) is smaller.
    // The MoE is the fused kernel's workspaces (fused_moe.py, TritonExperts.workspace_shapes):
    // k x (max(N / 2, H) + max(N, H)) + H for N = 2 x the expert width on a GPU, H = 7,168, and
    // the shared expert's gate, up and activation (3 x its width on a GPU).
    //   dp 8 x ep 8 (128 heads on a GPU, experts whole): attention 128 x 192 + 576 + 128 x 256 +
    //   128 x 128 = 74,304; MoE 8 x (7,168 + 7,168) + 7,168 + 3 x 2,048 = 128,000.
    //   tp 8 (16 heads, experts 256 wide): attention 16 x 192 + 576 + 16 x 256 + 16 x 128 =
    //   9,792; MoE 8 x (7,168 + 7,168) + 7,168 + 3 x 256 = 122,624.
    const std::uint64_t logits = 1024ULL * 129280 * 6;
    const std::uint64_t act_dpep = 16384ULL * 2 * (2 * 7168 + 128000) + logits;
    const std::uint64_t act_tp8 = 16384ULL * 2 * (2 * 7168 + 122624) + logits;
    CHECK(dpep.memory().activation.count() == act_dpep);
    CHECK(tp8.memory().activation.count() == act_tp8);
    const std::uint64_t fraction = 138'101'150'188ULL;
    const std::uint64_t graphs = 256ULL * 2 * 1024 * 1024;
    const std::uint64_t cublas = 32ULL * 1024 * 1024;
    CHECK(dpep.memory().cublas_workspace.count() == cublas);
    CHECK(dpep.kv_budget.count() == fraction - dpep_weights - rope - act_dpep - cublas - graphs);
    // At tp 8 the profile's all-reduces (16,384 x 7,168 x 2 B = 224 MiB, past symmetric memory's
    // 64 MiB at 8 Hopper GPUs: all_reduce_utils.py) connect NCCL's NVLS buffers inside the
    // profile, charged with its increase: 16 channels x 2 x 8 steps x 128 KiB x 8 = 256 MiB
    // (engine/nccl.hpp). dp 8 x ep 8 runs tp 1 on each rank: no all-reduce, none.
    const std::uint64_t nvls_tp8 = 256ULL * 1024 * 1024;
    // And FlashInfer's all-reduce fusion workspace (engine/allreduce_fusion.hpp): the pass fuses
    // up to 0.5 MiB at 8 Hopper GPUs, 524,288 / (7,168 x 2 B) = 36 tokens, so buffers of 8 x 36 x
    // 7,168 x 2 = 4,128,768 B, 8 KiB of flags and 3 x 4,128,768 = 12,386,304 B, each with its
    // 2 KiB pad rounded to 2 MiB: 4 + 2 + 12 = 18 MiB.
    const std::uint64_t fusion_tp8 = 18ULL * 1024 * 1024;
    CHECK(tp8.memory().fusion_workspace.count() == fusion_tp8);
    CHECK(dpep.memory().fusion_workspace.count() == 0);
    CHECK(tp8.kv_budget.count() ==
          fraction - tp8_weights - rope - act_tp8 - cublas - graphs - nvls_tp8 - fusion_tp8);
    // Blocks of 64 tokens (vLLM forces 64 for FlashMLA on Hopper: vllm/platforms/cuda.py) x
    // 70,272 B: 4,497,408 B. vLLM keeps one null block and admits a sequence per 125 blocks:
    // 1 + (blocks - 1 - 125) / 125 per dp rank.
    CHECK(tp8.serving.block_size == 64);
    const std::uint64_t block = 64 * 70'272;
    // 31,210,673,292 B / 4,497,408 B = 6,939 blocks at dp 8 x ep 8; 46,800,140,748 B / 4,497,408
    // B = 10,406 at tp 8.
    const std::uint64_t blocks_dpep = dpep.kv_budget.count() / block;  // 6,939
    const std::uint64_t blocks_tp8 = tp8.kv_budget.count() / block;    // 10,406
    CHECK(blocks_dpep == 6'939);
    CHECK(blocks_tp8 == 10'406);
    CHECK(tp8.report.vllm.num_blocks == blocks_tp8);
    CHECK(dpep.dp_rank_admitted == 1 + (blocks_dpep - 1 - 125) / 125);  // 55
    CHECK(tp8.admitted == 1 + (blocks_tp8 - 1 - 125) / 125);            // 83
    CHECK(tp8.max_concurrency == 83);
    CHECK(dpep.dp_rank_max_concurrency == 55);
    // Each dp rank is an engine of its own with its own cap (--max-num-seqs 1,024 per rank).
    CHECK(dpep.dp_rank_sequence_cap == 1024);
    CHECK(dpep.sequence_cap == 8 * 1024);
    // 8 ranks x 55 = 440 sequences against 83: over three times (5.3).
    CHECK(dpep.max_concurrency == 440);
    CHECK(dpep.max_concurrency >= 3 * tp8.max_concurrency);
    CHECK(dpep.fits());
    CHECK_FALSE(tp8.fits());
}

TEST_CASE("decode context parallelism 8 gives an MLA model 8 times the KV tokens per GPU",
          "[deployments][evaluate][dcp]") {
    // DeepSeek-V3 at tp 8 on H200, 8,192 tokens: dcp adds no GPU and no weight, so the KV memory
    // and the block count (10,406 blocks of 64 tokens, as above) are the same; each rank holds
    // one token in 8, and vLLM counts a request's blocks in units of 64 x 8 = 512 tokens.
    // "GPU KV cache size" = int(blocks / cdiv(8,192, 64 x dcp) x 8,192): 10,406 / 128 x 8,192 =
    // 665,984 tokens at dcp 1, 10,406 / 16 x 8,192 = 5,327,872 at dcp 8.
    const Model m = bundled("deepseek-v3");
    const GpuSpec h200 = bundled_gpu("h200-sxm");
    const Demand demand{.context = 8192, .concurrency = 1};
    const ReplicaAnswer one =
        evaluate(Deployment{.model = m, .gpu = h200, .parallel = {.tp = 8}}, demand);
    const ReplicaAnswer eight =
        evaluate(Deployment{.model = m, .gpu = h200, .parallel = {.tp = 8, .dcp = 8}}, demand);
    CHECK(one.kv_budget == eight.kv_budget);
    CHECK(one.report.vllm.num_blocks == 10'406);
    CHECK(eight.report.vllm.num_blocks == 10'406);
    CHECK(*one.kv_tokens == 665'984);
    CHECK(*eight.kv_tokens == 5'327'872);
    CHECK(*eight.kv_tokens == 8 * *one.kv_tokens);
    // A sequence on a GPU: 8,192 x 70,272 B against 1,024 x 70,272 B.
    CHECK(one.kv_per_sequence.count() == 8192ULL * 70'272);
    CHECK(eight.kv_per_sequence.count() == 1024ULL * 70'272);
    // Admitted: 1 + (10,405 - 128) / 128 = 81 against 1 + (10,405 - 16) / 16 = 650.
    CHECK(one.max_concurrency == 81);
    CHECK(eight.max_concurrency == 650);
}

TEST_CASE("SGLang's dp attention reserves graph memory per dp rank and shares its sequence cap",
          "[deployments][evaluate]") {
    // python/sglang/srt/arg_groups/memory_hook.py on an H200 (143,771 MiB): chunked prefill 8,192,
    // graphs up to 512 at tp 8. reserved = 512 + 1.5 x 8,192 + 2 x 512 + 8 / 8 x 1,024, plus under
    // dp attention 3 x 512 x 8 and (512 > 300) 1.5 x 512 x 8: 33,280 MiB, over the 10 GiB floor.
    // mem_fraction_static = round((143,771 - 33,280) / 143,771, 3) = 0.769.
    const GpuSpec h200 = bundled_gpu("h200-sxm");
    const SglangMemFraction f = sglang_mem_fraction(h200, 8, 1, {}, 8);
    CHECK(f.dp_attention_mib == 512 * 8 * 3 + 512 * 8 * 1.5);
    CHECK(f.reserved_mib == 33'280);
    CHECK(f.fraction == Approx(0.769));
    // Without dp attention: 14,848 MiB, fraction round(128,923 / 143,771, 3) = 0.897.
    CHECK(sglang_mem_fraction(h200, 8, 1).reserved_mib == 14'848);
    CHECK(sglang_mem_fraction(h200, 8, 1).fraction == Approx(0.897));
    // --max-running-requests 512 is shared: each of the 8 attention groups takes 512 // 8 = 64.
    const Model m = bundled("deepseek-v3");
    Deployment d{.model = m,
                 .gpu = h200,
                 .parallel = {.tp = 8, .dp = 8, .ep = 8},
                 .serving = {.engine = Engine::sglang, .max_sequences = 512}};
    const ReplicaAnswer a = evaluate(d, {.context = 8000, .concurrency = 256});
    CHECK(a.replica_gpus == 8);
    CHECK(a.dp_rank_sequence_cap == 64);
    CHECK(a.sequence_cap == 512);
    CHECK(a.dp_rank_max_concurrency <= 64);
}

TEST_CASE("an expert-parallel decode step moves its tokens' hidden states to their experts",
          "[deployments][roofline]") {
    // DeepSeek-V3 fp8 at dp 8 x ep 8 on H200, 256 sequences: 32 per GPU. vLLM dispatches in fp8
    // (its experts are fp8 in 128 x 128 blocks): 16 + 7,168 + 7,168 / 128 x 4 = 7,408 B per token
    // and expert, combine 2 x 7,168 = 14,336 B; 8 experts per token. Of a GPU's messages 7/8 go to
    // the 7 other GPUs of its node over NVLink at 450 GB/s, none off the node.
    const Model m = bundled("deepseek-v3");
    const Replica r{.model = m,
                    .gpu = bundled_gpu("h200-sxm"),
                    .parallel = {.tp = 1, .dp = 8, .ep = 8},
                    .weights = checkpoint_weights(m)};
    const DecodeBound d = decode_bound(r, 256, 8000);
    const AllToAll& a = d.all_to_all;
    REQUIRE(a.applies);
    CHECK(d.dp_rank_batch == 32);
    CHECK(a.fp8_dispatch);
    CHECK(a.dispatch_message.count() == 7408);
    CHECK(a.combine_message.count() == 14'336);
    CHECK(a.dispatch.count() == 32 * 8 * 7408);
    CHECK(a.combine.count() == 32 * 8 * 14'336);
    CHECK(a.off_node == 0.0);
    const double per_layer = (32.0 * 8 * 7408 + 32.0 * 8 * 14'336) * 7.0 / 8.0 / 450e9;
    CHECK(a.per_layer.in(seconds) == Approx(per_layer));
    CHECK(a.moe_layers == 58);
    CHECK(a.per_step.in(seconds) == Approx(58 * per_layer));
    // Each GPU reads only its 32 sequences' KV (exact tokens: 8,000 x 70,272 B each), and the
    // experts of its 32 the whole batch of 256 touches: 32 x (1 - (1 - 8/256)^256).
    CHECK(d.stages[0].kv_read.count() == 32ULL * 8000 * 70'272);
    CHECK(d.stages[0].experts_touched == Approx(32.0 * (1.0 - std::pow(31.0 / 32.0, 256))));

    // dp 16 x ep 16 over two nodes of 8: 7/16 of the messages stay in the node, 8/16 go over
    // the GPU's 400 Gb/s NIC (50 GB/s); dispatch and combine each take the slower share.
    Replica two = r;
    two.parallel = {.tp = 1, .dp = 16, .ep = 16};
    const DecodeBound d2 = decode_bound(two, 512, 8000);
    CHECK(d2.dp_rank_batch == 32);
    CHECK(d2.all_to_all.off_node == 0.5);
    const double dispatch = 32.0 * 8 * 7408, combine = 32.0 * 8 * 14'336;
    const double across = std::max(dispatch * 7 / 16 / 450e9, dispatch * 0.5 / 50e9) +
                          std::max(combine * 7 / 16 / 450e9, combine * 0.5 / 50e9);
    CHECK(d2.all_to_all.per_layer.in(seconds) == Approx(across));
    CHECK(d2.all_to_all.per_layer > a.per_layer * 4.0);
    // A GPU whose spec states no node-to-node bandwidth cannot be timed across nodes.
    two.gpu = bundled_gpu("mi300x");
    CHECK(decode_bound(two, 512, 8000).all_to_all.network_unknown);
}

TEST_CASE("TensorRT-LLM sends a token once to each GPU holding its experts, quantized",
          "[deployments][roofline]") {
    // DeepSeek-V3 fp8 under TensorRT-LLM's attention dp 8 x ep 8 on H200, 256 sequences: 32 per
    // GPU. NVLinkOneSided (nvlink_one_sided.py) sends each token once to every GPU holding one of
    // its 8 experts, after quantizing it as the experts are: fp8, 7,168 B and 7,168 / 128 x 4 =
    // 224 B of block scales, with 8 expert ids and 8 weights of 4 B: 7,456 B. The combine returns
    // one bf16 partial sum per token and GPU, 14,336 B. Of 256 experts 32 sit on each GPU: a token
    // misses a given GPU with C(224, 8) / C(256, 8) = (224 x 223 x ... x 217) / (256 x 255 x ...
    // x 249) = 0.33816850, so it reaches 8 x (1 - 0.33816850) = 5.2946520 GPUs, 7/8 of them
    // over NVLink at 450 GB/s. Dispatch 32 x 7,456 x 5.2946520 = 1,263,261.6 B, rounded up to
    // 1,263,262; combine 32 x 14,336 x 5.2946520 = 2,428,932.2, to 2,428,933: 7.1793 us a layer,
    // against vLLM's 32 x 8 x (7,408 + 14,336) x 7/8 / 450e9 = 10.823 us (above).
    const Model m = bundled("deepseek-v3");
    Replica r{.model = m,
              .gpu = bundled_gpu("h200-sxm"),
              .parallel = {.tp = 8, .dp = 8, .ep = 8},
              .weights = checkpoint_weights(m)};
    r.parallel.rules = ParallelRules::trtllm;
    const AllToAll a = decode_bound(r, 256, 8000).all_to_all;
    REQUIRE(a.applies);
    CHECK(a.per_gpu);
    CHECK(a.tokens == 32);
    CHECK(a.dispatch_message.count() == 7456);
    CHECK(a.combine_message.count() == 14'336);
    CHECK(a.destinations == Approx(5.2946520).epsilon(1e-7));
    CHECK(a.dispatch.count() == 1'263'262);
    CHECK(a.combine.count() == 2'428'933);
    CHECK(a.per_layer.in(seconds) == Approx((1'263'262.0 + 2'428'933.0) * 7.0 / 8.0 / 450e9));
    // NVFP4 experts dispatch 7,168 / 2 B of values and 7,168 / 16 B of fp8 scales: 4,096 B.
    r.weights.format = WeightFormat::nvfp4;
    r.weights.expert_format = WeightFormat::nvfp4;
    CHECK(decode_bound(r, 256, 8000).all_to_all.dispatch_message.count() == 3584 + 448 + 64);
}

TEST_CASE("each engine's splits of 8 GPUs for DeepSeek-V3", "[deployments][plan]") {
    const Model m = bundled("deepseek-v3");
    // vLLM, tp a power of two with dp x tp x pp = 8, ep 1 or dp x tp, dcp dividing tp:
    //   tp 1: dp 1, 2, 4, 8 (pp 8, 4, 2, 1), ep two ways but at dp 1: 1 + 3 x 2 = 7;
    //   tp 2: dp 1, 2, 4, ep 2 ways, dcp 1, 2: 12;  tp 4: dp 1, 2, ep 2, dcp 1, 2, 4: 12;
    //   tp 8: ep 2 ways, dcp 1, 2, 4, 8: 8. 39 in all; DeepSeek-V3 takes every one.
    CHECK(parallel_splits(m, Engine::vllm, 8).size() == 39);
    // SGLang, tp x pp = 8, dp and ep dividing tp: 1 + 2 x 2 + 3 x 3 + 4 x 4 = 30.
    CHECK(parallel_splits(m, Engine::sglang, 8).size() == 30);
    // TensorRT-LLM, dp 1 or tp, ep dividing tp: 1 + 2 x 2 + 2 x 3 + 2 x 4 = 19.
    CHECK(parallel_splits(m, Engine::trtllm, 8).size() == 19);
    // A dense model tries no dp or ep, and Llama-3-70B's 8 KV heads leave dcp nothing at tp <= 8:
    // tp 1, 2, 4, 8.
    CHECK(parallel_splits(bundled("llama-3-70b"), Engine::vllm, 8).size() == 4);
}

TEST_CASE("plan for DeepSeek-V3 at 32k x 256 lists dp and ep layouts and both engines' lines",
          "[deployments][plan]") {
    // plan --model deepseek-v3 --context 32k --concurrency 256 over every bundled GPU, 1 to 8 GPUs.
    const Model m = bundled("deepseek-v3");
    SearchSpace space;
    const GpuRegistry registry = GpuRegistry::load(config_dir);
    for (const GpuSpecFile& f : registry.files()) space.gpus.push_back(f.spec);
    const Demand demand{.context = 32000, .concurrency = 256};
    const PlanAnswer p = plan_replicas(m, space, {}, demand);
    REQUIRE_FALSE(p.fits.empty());
    bool dp = false, ep = false, dcp = false;
    for (const PlanCandidate& c : p.fits) {
        dp = dp || c.answer.replica.parallel.dp > 1;
        ep = ep || c.answer.replica.parallel.ep > 1;
        dcp = dcp || c.answer.replica.parallel.dcp > 1;
    }
    CHECK(dp);
    CHECK(ep);
    CHECK(dcp);
    // The best holds the demand on the fewest GPUs; its figures are evaluate()'s own.
    const PlanCandidate& best = p.fits.front();
    const ReplicaAnswer again = evaluate(Deployment{.model = m,
                                                    .gpu = space.gpus[best.gpu],
                                                    .parallel = best.answer.replica.parallel,
                                                    .kv = space.kv_formats[best.kv]},
                                         demand);
    CHECK(again.max_concurrency == best.answer.max_concurrency);
    CHECK(again.decode->tpot == best.answer.decode->tpot);
    for (std::size_t i = 1; i < p.fits.size(); ++i)
        CHECK(p.fits[i - 1].answer.replica_gpus <= p.fits[i].answer.replica_gpus);

    // Both engines' command lines: vLLM's for the best, SGLang's for the best it can state and
    // start holding the demand.
    const std::vector<EngineCommand> lines =
        serve_commands(p, m, space, {}, demand, {.model = "deepseek-ai/DeepSeek-V3"});
    REQUIRE(lines.size() == 2);
    REQUIRE(lines[0].command);
    REQUIRE(lines[1].command);
    CHECK(lines[0].engine == Engine::vllm);
    CHECK(lines[0].candidate == 0);
    const ParallelConfig& b = best.answer.replica.parallel;
    // Appended piece by piece: g++ 12 warns falsely on "literal" + std::string (-Wrestrict).
    const auto flag = [](std::string& line, const char* name, std::uint32_t value) {
        line += name;
        line += std::to_string(value);
    };
    std::string expected = "vllm serve deepseek-ai/DeepSeek-V3";
    flag(expected, " --tensor-parallel-size ", b.tp);
    if (b.pp > 1) flag(expected, " --pipeline-parallel-size ", b.pp);
    if (b.dp > 1) flag(expected, " --data-parallel-size ", b.dp);
    if (b.ep > 1) expected += " --enable-expert-parallel";
    if (b.dcp > 1) flag(expected, " --decode-context-parallel-size ", b.dcp);
    // What kvplan assumed: vLLM's 0.92, the context as --max-model-len, 1,024 sequences per dp
    // rank (GPUs of 70 GiB or more), bf16 KV; no --block-size: none was given, and vLLM forces
    // the 64 kvplan assumed (FlashMLA on Hopper).
    expected +=
        " --gpu-memory-utilization 0.92 --max-model-len 32000 --max-num-seqs 1024"
        " --kv-cache-dtype bfloat16";
    CHECK(lines[0].command->line() == expected);
    // SGLang's line states its own layout: tp is every GPU of a stage, dp attention within it.
    const EngineCommand& sg = lines[1];
    CHECK(sg.engine == Engine::sglang);
    REQUIRE(sg.answer);
    CHECK(sg.answer->fits());
    const ParallelConfig& s = *sg.parallel;
    CHECK(s.rules == ParallelRules::sglang);
    const ParallelConfig& from = p.fits[sg.candidate].answer.replica.parallel;
    CHECK(s.tp == from.tp * from.dp);  // the stage's GPUs
    CHECK(s.dp == from.dp);
    const std::string sl = sg.command->line();
    std::string head = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3";
    flag(head, " --tp-size ", s.tp);
    CHECK_THAT(sl, Catch::StartsWith(head));
    CHECK_THAT(sl, Catch::Contains("--context-length 32000"));
    CHECK_THAT(sl, Catch::EndsWith("--kv-cache-dtype bf16"));
    std::string fraction = "--mem-fraction-static ";
    fraction += detail::short_number(sg.answer->memory().fraction);
    CHECK_THAT(sl, Catch::Contains(fraction));
    if (s.dp > 1) {
        std::string dp = "";
        flag(dp, "--dp-size ", s.dp);
        dp += " --enable-dp-attention";
        CHECK_THAT(sl, Catch::Contains(dp));
    }
}

TEST_CASE("the replica budget spreads the sequences over the dp ranks", "[deployments][budget]") {
    // replica_budget (the budget behind the latency estimate's running cap): at dp 8 each GPU
    // holds 256 / 8 = 32 of the sequences, and the replica 8 times what one GPU holds.
    const Model m = bundled("deepseek-v3");
    const Replica r{.model = m,
                    .gpu = bundled_gpu("h200-sxm"),
                    .parallel = {.tp = 1, .dp = 8, .ep = 8},
                    .weights = checkpoint_weights(m)};
    const ReplicaBudget b = replica_budget(r, {.context = 8000, .concurrency = 256});
    CHECK(b.stages[0].kv_needed == b.stages[0].kv_per_sequence * 32);
    CHECK(b.max_concurrency == 8 * b.stages[0].max_concurrency);
    CHECK(b.fits);
}

TEST_CASE("whole-node layouts: a power of two within a node, stages across nodes",
          "[deployments][layout]") {
    const GpuSpec h200 = bundled_gpu("h200-sxm");  // 8 GPUs per node and per NVLink domain
    const auto ok = [&](ParallelConfig p, std::uint32_t n, const GpuSpec& g) {
        return deployed_layout(p, n, g);
    };
    // Within a node: 1, 2, 4 or 8 GPUs, no pipeline.
    CHECK(ok({.tp = 8}, 8, h200));
    CHECK(ok({.tp = 4}, 4, h200));
    CHECK_FALSE(ok({.tp = 1, .pp = 7}, 7, h200));  // 7 GPUs: not a power of two
    CHECK_FALSE(ok({.tp = 2, .pp = 2}, 4, h200));  // a pipeline within a node
    // Past a node: whole nodes, each stage whole nodes: 9 x H200 at pp 9 is refused, 16 at tp 8
    // x pp 2 and dp 2 x tp 8 taken, tp 4 x pp 4 (4-GPU stages) refused.
    CHECK_FALSE(ok({.tp = 1, .pp = 9}, 9, h200));
    CHECK(ok({.tp = 8, .pp = 2}, 16, h200));
    CHECK(ok({.tp = 8, .dp = 2, .ep = 16}, 16, h200));
    CHECK_FALSE(ok({.tp = 4, .pp = 4}, 16, h200));
    // Tensor parallelism stays within the node: tp 16 (SGLang's rules, no dp attention) refused,
    // tp 16 over dp 2 attention groups of 8 taken.
    CHECK_FALSE(ok({.tp = 16, .rules = ParallelRules::sglang}, 16, h200));
    CHECK(ok({.tp = 16, .dp = 2, .ep = 16, .rules = ParallelRules::sglang}, 16, h200));
    // GB200: 4 GPUs a tray, 72 in the NVLink domain: tp 8 over two trays stays on NVLink.
    CHECK(ok({.tp = 8}, 8, bundled_gpu("gb200")));
    CHECK_FALSE(ok({.tp = 1, .pp = 6}, 6, bundled_gpu("gb200")));

    // plan for Kimi-K2 (about a trillion fp8 parameters) on up to 16 H200s: only whole nodes.
    const Model kimi = bundled("kimi-k2-instruct");
    SearchSpace space;
    space.gpus = {h200};
    space.max_gpus = 16;
    space.layouts = LayoutRule::whole_nodes;
    const PlanAnswer p = plan_replicas(kimi, space, {}, {.context = 8192, .concurrency = 16});
    REQUIRE_FALSE(p.fits.empty());
    for (const PlanCandidate& c : p.fits) {
        INFO(c.answer.replica_gpus);
        CHECK((c.answer.replica_gpus == 8 || c.answer.replica_gpus == 16));
    }
    // The wider search finds the 9- and 7-GPU replicas whole nodes leave out.
    space.layouts = LayoutRule::any;
    bool odd = false;
    for (const PlanCandidate& c :
         plan_replicas(kimi, space, {}, {.context = 8192, .concurrency = 16}).fits)
        odd = odd || c.answer.replica_gpus == 9 || c.answer.replica_gpus == 7;
    CHECK(odd);
}

TEST_CASE("a prefix-cache hit rate is the shared prefix it stands for", "[deployments][prefix]") {
    // 40 % of a 6,000-token prompt found in the cache: 2,400 tokens held once. Decimal rates land
    // on whole tokens (0.29 x 100 is 29, not the 28.999999999999996 binary gives), others round
    // down to the token.
    const Demand d{.context = 8192, .prompt_tokens = 6000, .output_tokens = 500};
    CHECK(shared_prefix_of_hit_rate(d, 0.4, "demand") == 2400);
    CHECK(shared_prefix_of_hit_rate(d, 1.0, "demand") == 6000);
    CHECK(shared_prefix_of_hit_rate(d, 0.0, "demand") == 0);
    CHECK(shared_prefix_of_hit_rate({.context = 200, .prompt_tokens = 100, .output_tokens = 1},
                                    0.29, "demand") == 29);
    CHECK(shared_prefix_of_hit_rate(d, 0.33333, "demand") == 1999);  // 1,999.98
    CHECK_THROWS_AS(shared_prefix_of_hit_rate(d, 1.5, "demand"), InvalidInput);
    CHECK_THROWS_AS(shared_prefix_of_hit_rate(d, -0.1, "demand"), InvalidInput);
    CHECK_THROWS_AS(shared_prefix_of_hit_rate(d, std::nan(""), "demand"), InvalidInput);
    CHECK_THROWS_AS(shared_prefix_of_hit_rate({.context = 8192}, 0.4, "demand"), InvalidInput);
}
