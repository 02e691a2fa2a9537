#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <kvplan/engine.hpp>
#include <kvplan/plan/commands.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/presets.hpp>
#include <string>
#include <vector>

using namespace kvplan;
using namespace kvplan::presets;

namespace {

/// DeepSeek-V3.2: DeepSeek-V3's latent with a sparse-attention indexer of index_head_dim 128.
const Model deepseek_v3_2{ModelConfig{
    .name = "DeepSeek-V3.2",
    .layers = LayerStack::uniform(61, mla_latent(512, 64, 128)),
    .num_heads = 128,
    .head_dim = 192,
    .hidden_size = 7168,
    .intermediate_size = 18432,
    .vocab_size = 129280,
    .max_position_embeddings = 163840,
    .mla = {.q_lora_rank = 1536, .qk_nope_head_dim = 128, .v_head_dim = 128, .index_n_heads = 64}}};

VllmBackendChoice backend(const Model& m, GpuFamily f, KvDtype kv = KvDtype::bf16,
                          std::uint32_t dcp = 1, std::uint32_t block = 16) {
    const auto c = vllm_attention_backend(m, f, kv, dcp, block);
    REQUIRE(c.has_value());
    return *c;
}

/// The --kv-cache-dtype vLLM's printed command for `d` names.
std::string printed_kv_cache_dtype(const Deployment& d) {
    const auto commands = serve_commands(d, {.context = 8192});
    REQUIRE(commands.front().command.has_value());
    const std::vector<std::string>& argv = commands.front().command->argv;
    const auto flag = std::find(argv.begin(), argv.end(), "--kv-cache-dtype");
    REQUIRE(flag != argv.end());
    REQUIRE(flag + 1 != argv.end());
    return *(flag + 1);
}

}  // namespace

TEST_CASE("vLLM pages an MLA model in blocks of 64 on Hopper, as FlashMLA forces",
          "[engine][vllm][backend]") {
    // vllm/platforms/cuda.py, check_and_update_config: off Blackwell, FlashMLA's dense kernel
    // supported (sm90) -> "Forcing kv cache block size to 64 for FlashMLA backend" when the block
    // is no multiple of 64. The H100 and the H200 are both Hopper.
    REQUIRE(gpu_family(gpus::h100_sxm) == GpuFamily::hopper);
    REQUIRE(gpu_family(gpus::h200_sxm) == GpuFamily::hopper);
    const VllmBackendChoice bf16 = backend(deepseek_v3, GpuFamily::hopper);
    CHECK(bf16.block_size == 64);
    CHECK(bf16.forced);
    // FLASH_ATTN_MLA is first on Hopper and takes 16-bit caches; an FP8 cache goes to FLASHMLA.
    CHECK(bf16.backend == VllmAttentionBackend::flash_attn_mla);
    const VllmBackendChoice fp8 = backend(deepseek_v3, GpuFamily::hopper, KvDtype::fp8_e4m3);
    CHECK(fp8.backend == VllmAttentionBackend::flashmla);
    CHECK(fp8.block_size == 64);
    // A given multiple of 64 stands (128 % 64 == 0); 16 and 32 become 64.
    CHECK(backend(deepseek_v3, GpuFamily::hopper, KvDtype::bf16, 1, 128).block_size == 128);
    CHECK(!backend(deepseek_v3, GpuFamily::hopper, KvDtype::bf16, 1, 128).forced);
    CHECK(backend(deepseek_v3, GpuFamily::hopper, KvDtype::bf16, 1, 32).block_size == 64);
}

TEST_CASE("vLLM's MLA backends on Blackwell: FlashInfer MLA, or CUTLASS MLA under dcp",
          "[engine][vllm][backend]") {
    REQUIRE(gpu_family(gpus::b200) == GpuFamily::blackwell);
    // DeepSeek-V3's qk_nope_head_dim is 128 and dcp 1: FLASHINFER_MLA, which takes 32 or a
    // multiple of 64; 16 becomes 64.
    const VllmBackendChoice fi = backend(deepseek_v3, GpuFamily::blackwell);
    CHECK(fi.backend == VllmAttentionBackend::flashinfer_mla);
    CHECK(fi.block_size == 64);
    CHECK(backend(deepseek_v3, GpuFamily::blackwell, KvDtype::bf16, 1, 32).block_size == 32);
    // Under dcp FlashInfer MLA returns no LSE: CUTLASS_MLA, a multiple of 128.
    const VllmBackendChoice cutlass = backend(deepseek_v3, GpuFamily::blackwell, KvDtype::bf16, 2);
    CHECK(cutlass.backend == VllmAttentionBackend::cutlass_mla);
    CHECK(cutlass.block_size == 128);
    CHECK(backend(deepseek_v3, GpuFamily::blackwell, KvDtype::bf16, 2, 256).block_size == 256);
}

TEST_CASE("vLLM's sparse MLA (DeepSeek-V3.2) pages in 64 on CUDA, the rest as asked",
          "[engine][vllm][backend]") {
    // "Forcing kv cache block size to 64 for FlashMLASparse backend" (block_size != 64).
    for (GpuFamily f : {GpuFamily::hopper, GpuFamily::blackwell}) {
        const VllmBackendChoice c = backend(deepseek_v3_2, f, KvDtype::bf16, 1, 128);
        CHECK(c.backend == VllmAttentionBackend::flashmla_sparse);
        CHECK(c.block_size == 64);
    }
    // ROCm (vllm/platforms/rocm.py): ROCM_AITER_MLA_SPARSE, no forcing.
    const VllmBackendChoice rocm = backend(deepseek_v3_2, GpuFamily::cdna3);
    CHECK(rocm.backend == VllmAttentionBackend::rocm_aiter_mla_sparse);
    CHECK(rocm.block_size == 16);
    // Before Hopper, and on ROCm without AITER: TRITON_MLA at the block asked.
    CHECK(backend(deepseek_v3, GpuFamily::ada).backend == VllmAttentionBackend::triton_mla);
    CHECK(backend(deepseek_v3, GpuFamily::ampere).block_size == 16);
    CHECK(backend(deepseek_v3, GpuFamily::cdna3).backend == VllmAttentionBackend::triton_mla);
}

TEST_CASE("vLLM stores DeepSeek-V3.2's fp8 cache as fp8_ds_mla on FlashMLA sparse",
          "[engine][vllm][backend][fp8_ds_mla]") {
    // FLASHMLA_SPARSE (Hopper; Blackwell before v0.18): every 8-bit float
    // cache of a sparse MLA model is DeepSeek's fp8_ds_mla (MLAAttention.__init__ in
    // vllm/model_executor/layers/attention/mla_attention.py; v0.11's config.py hook).
    const KvFormat fp8 = KvDtype::fp8_e4m3;
    for (KvDtype d : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2, KvDtype::fp8_per_token_head})
        CHECK(vllm_stored_kv(deepseek_v3_2, d, gpus::h200_sxm, 1).dtype == KvDtype::fp8_ds_mla);
    // Blackwell from v0.18 puts FLASHINFER_MLA_SPARSE first for an fp8 cache: plain fp8. v0.17
    // kept FLASHMLA_SPARSE, and with it fp8_ds_mla.
    CHECK(vllm_stored_kv(deepseek_v3_2, fp8, gpus::b200, 1).dtype == KvDtype::fp8_e4m3);
    CHECK(vllm_stored_kv(deepseek_v3_2, fp8, gpus::b200, 1, 8, {0, 17}).dtype ==
          KvDtype::fp8_ds_mla);
    // A GPU of no known backend: taken as FLASHMLA_SPARSE, the backend on CUDA.
    CHECK(vllm_stored_kv(deepseek_v3_2, fp8, std::nullopt).dtype == KvDtype::fp8_ds_mla);
    // ROCm's AITER sparse MLA keeps plain fp8; a 16-bit cache and a dense MLA model stay as asked.
    CHECK(vllm_stored_kv(deepseek_v3_2, fp8, VllmAttentionBackend::rocm_aiter_mla_sparse).dtype ==
          KvDtype::fp8_e4m3);
    CHECK(vllm_stored_kv(deepseek_v3_2, KvDtype::bf16, gpus::h200_sxm, 1).dtype == KvDtype::bf16);
    CHECK(vllm_stored_kv(deepseek_v3, fp8, gpus::h200_sxm, 1).dtype == KvDtype::fp8_e4m3);
    // Per layer: the latent's 512 e4m3 values + 4 fp32 scales (one per 128) + 64 bf16 RoPE
    // values = 512 + 16 + 128 = 656 B (MLAAttentionSpec.real_page_size_bytes, vllm/v1/
    // kv_cache_interface.py: block_size x 656), and the indexer's key of 128 fp8 values + one
    // fp32 scale = 132 B: 788 B; x 61 layers = 48,068 B a token, on every TP rank.
    CHECK(kv_bytes_per_token(deepseek_v3_2, KvDtype::fp8_ds_mla).count() == 61u * 788u);
    // Plain fp8 would be 576 + 132 = 708 B a layer, 43,188 B a token.
    CHECK(kv_bytes_per_token(deepseek_v3_2, fp8).count() == 61u * 708u);
}

TEST_CASE("DeepSeek-V3.2 with --kv-dtype fp8 on 8 x H200 under vLLM: 48,068 B a token",
          "[engine][vllm][backend][fp8_ds_mla]") {
    const Deployment d{.model = deepseek_v3_2,
                       .gpu = gpus::h200_sxm,
                       .parallel = {.tp = 8},
                       .weights = WeightOptions{.format = WeightFormat::fp8},
                       .kv = KvDtype::fp8_e4m3};
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    CHECK(a.replica.kv.dtype == KvDtype::fp8_ds_mla);
    // 61 x (656 + 132) = 48,068 B a token, whole on each of the 8 ranks (the latent is not split).
    CHECK(a.kv_per_token.count() == 48'068u);
    CHECK(a.kv_per_token_per_gpu.count() == 48'068u);
    // FlashMLA sparse pages in 64 tokens: a block is 64 x 61 x 656 B of latents (the indexer's
    // keys are their own pool).
    CHECK(a.serving.block_size == 64);
    // Its command line names the layout it is sized in, a name vLLM lists from v0.11.
    CHECK(printed_kv_cache_dtype(d) == "fp8_ds_mla");
    // SGLang stores the fp8 asked as plain e4m3: 61 x 708 = 43,188 B.
    Deployment s = d;
    s.serving.engine = Engine::sglang;
    const ReplicaAnswer b = evaluate(s, {.context = 8192});
    CHECK(b.replica.kv.dtype == KvDtype::fp8_e4m3);
    CHECK(b.kv_per_token.count() == 43'188u);
}

TEST_CASE("A DeepSeek-V3.2 checkpoint whose KV cache is fp8: its layout is the GPU's backend's",
          "[engine][vllm][backend][fp8_ds_mla]") {
    // nvidia/DeepSeek-V3.2-NVFP4's hf_quant_config.json names kv_cache_quant_algo FP8: vLLM's
    // "auto" follows it (engine/checkpoint_kv.hpp), as SGLang's and TensorRT-LLM's do; the dtype
    // resolved is the checkpoint's, before any layout of the engine's.
    ModelConfig c = deepseek_v3_2.config();
    c.checkpoint = detail::checkpoint_with_kv(KvDtype::fp8_e4m3, CheckpointKvSource::modelopt_algo);
    const Model m{c};
    CHECK(engine_default_kv_dtype(m, Engine::vllm) == KvDtype::fp8_e4m3);
    CHECK(engine_default_kv_dtype(m, Engine::sglang) == KvDtype::fp8_e4m3);
    CHECK(engine_default_kv_dtype(m, Engine::trtllm) == KvDtype::fp8_e4m3);
    // Before v0.14 vLLM's "auto" did not follow a ModelOpt KV cache: bf16.
    CHECK(engine_default_kv_dtype(m, Engine::vllm, {0, 13}) == KvDtype::bf16);
    CHECK(served_kv(m, std::nullopt).format.dtype == KvDtype::fp8_e4m3);

    // The layout is the attention backend's, so the GPU's: evaluate applies it (engine_kv).
    const auto stored = [&](const GpuSpec& g) {
        const Deployment d{.model = m,
                           .gpu = g,
                           .parallel = {.tp = 8},
                           .weights = WeightOptions{.format = WeightFormat::fp8}};
        return evaluate(d, {.context = 8192});
    };
    // H100 (SM 9.0): FLASHMLA_SPARSE, which MLAAttention.__init__ turns to fp8_ds_mla:
    // 61 x (656 + 132) = 48,068 B a token.
    const ReplicaAnswer h100 = stored(gpus::h100_sxm);
    CHECK(h100.replica.kv.dtype == KvDtype::fp8_ds_mla);
    CHECK(h100.kv_per_token.count() == 48'068u);
    // MI300X (gfx942) and MI355X (gfx950): vllm/platforms/rocm.py runs sparse MLA on
    // ROCM_AITER_MLA_SPARSE alone, whose cache is (num_blocks, block_size, 576) in the dtype
    // asked (rocm_aiter_mla_sparse.py, get_kv_cache_shape): plain fp8, 576 B a latent + the
    // indexer's 132 B = 708 B a layer, x 61 = 43,188 B a token.
    for (const GpuSpec* g : {&gpus::mi300x, &gpus::mi355x}) {
        const ReplicaAnswer a = stored(*g);
        CHECK(a.replica.kv.dtype == KvDtype::fp8_e4m3);
        CHECK(a.kv_per_token.count() == 43'188u);
    }
    // The same checkpoint on a dense MLA model keeps plain fp8 on Hopper too (FLASHMLA):
    // 61 x 576 = 35,136 B.
    ModelConfig v3 = deepseek_v3.config();
    v3.checkpoint = c.checkpoint;
    const Deployment dense{.model = Model{v3},
                           .gpu = gpus::h100_sxm,
                           .parallel = {.tp = 8},
                           .weights = WeightOptions{.format = WeightFormat::fp8}};
    const ReplicaAnswer dv3 = evaluate(dense, {.context = 8192});
    CHECK(dv3.replica.kv.dtype == KvDtype::fp8_e4m3);
    CHECK(dv3.kv_per_token.count() == 35'136u);
}

TEST_CASE("DeepSeek-V3.2 on 8 x B200 under vLLM: FlashInfer sparse MLA, plain fp8, 43,188 B",
          "[engine][vllm][backend][fp8_ds_mla]") {
    // vllm/platforms/cuda.py, _get_backend_priorities, SM 10.x: the sparse backends close the MLA
    // list, FLASHINFER_MLA_SPARSE first for a quantized cache (PR #37252, counted from v0.18) or
    // at 16 query heads a rank or fewer with a 16-bit one (PR #33451, from v0.17); else
    // FLASHMLA_SPARSE first. FLASHINFER_MLA_SPARSE's cache is (num_blocks, block_size, 576) in
    // the cache dtype (flashinfer_mla_sparse.py, get_kv_cache_shape), and MLAAttention.__init__
    // turns a cache into fp8_ds_mla on FLASHMLA_SPARSE only.
    REQUIRE(gpus::b200.capability == sm(10, 0));
    Deployment d{.model = deepseek_v3_2,
                 .gpu = gpus::b200,
                 .parallel = {.tp = 8},
                 .weights = WeightOptions{.format = WeightFormat::fp8},
                 .kv = KvDtype::fp8_e4m3};
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    REQUIRE(a.serving.backend.has_value());
    CHECK(a.serving.backend->backend == VllmAttentionBackend::flashinfer_mla_sparse);
    CHECK(name(a.serving.backend->backend) == "FLASHINFER_MLA_SPARSE");
    CHECK(a.replica.kv.dtype == KvDtype::fp8_e4m3);
    // Per layer: 512 + 64 = 576 e4m3 values, 576 B, and the indexer's key 128 fp8 values + one
    // fp32 scale = 132 B: 708 B; x 61 layers = 43,188 B a token (the H100's fp8_ds_mla: 48,068).
    CHECK(a.kv_per_token.count() == 61u * (576u + 132u));
    CHECK(a.kv_per_token.count() == 43'188u);
    // Every sparse model pages in 64 (check_and_update_config); FlashInfer's takes 32 or 64.
    CHECK(a.serving.block_size == 64);
    // Its command names the cache it is sized in.
    CHECK(printed_kv_cache_dtype(d) != "fp8_ds_mla");

    // v0.17: FLASHMLA_SPARSE first for fp8 (FlashInfer's came first for 16 heads, but took no
    // fp8 cache before PR #35891): fp8_ds_mla, 61 x (656 + 132) = 48,068 B.
    d.serving.engine_version = EngineVersion{0, 17};
    const ReplicaAnswer v17 = evaluate(d, {.context = 8192});
    CHECK(v17.serving.backend->backend == VllmAttentionBackend::flashmla_sparse);
    CHECK(v17.replica.kv.dtype == KvDtype::fp8_ds_mla);
    CHECK(v17.kv_per_token.count() == 48'068u);
    d.serving.engine_version.reset();

    // fp8_e5m2 is not among FlashInfer sparse MLA's dtypes (auto, float16, bfloat16, fp8,
    // fp8_e4m3): FLASHMLA_SPARSE takes it, as fp8_ds_mla.
    d.kv = KvDtype::fp8_e5m2;
    CHECK(evaluate(d, {.context = 8192}).replica.kv.dtype == KvDtype::fp8_ds_mla);

    // bf16: 128 heads / tp 8 = 16 a rank: FlashInfer first from v0.17, FlashMLA before; at tp 4
    // (32 a rank) FlashMLA. The cache is 61 x (576 x 2 + 132) = 78,324 B a token either way.
    const auto bf16 = [&](std::uint32_t tp, EngineVersion v) {
        const auto c =
            vllm_attention_backend(deepseek_v3_2, gpus::b200, KvDtype::bf16, 1, 16, tp, v);
        REQUIRE(c.has_value());
        CHECK(c->block_size == 64);
        return c->backend;
    };
    CHECK(bf16(8, vllm_newest_release) == VllmAttentionBackend::flashinfer_mla_sparse);
    CHECK(bf16(8, {0, 17}) == VllmAttentionBackend::flashinfer_mla_sparse);
    CHECK(bf16(8, {0, 16}) == VllmAttentionBackend::flashmla_sparse);
    CHECK(bf16(4, vllm_newest_release) == VllmAttentionBackend::flashmla_sparse);
    d.kv = KvDtype::bf16;
    CHECK(evaluate(d, {.context = 8192}).kv_per_token.count() == 61u * (1152u + 132u));
    // Hopper keeps FLASHMLA_SPARSE whatever the cache and heads.
    CHECK(vllm_attention_backend(deepseek_v3_2, gpus::h200_sxm, KvDtype::fp8_e4m3, 1, 16, 8)
              ->backend == VllmAttentionBackend::flashmla_sparse);
}

TEST_CASE("vLLM's first attention backend per architecture keeps the 16-token block",
          "[engine][vllm][backend]") {
    // _get_backend_priorities: FLASHINFER first on Blackwell (10.x), FLASH_ATTN first elsewhere;
    // ROCm: ROCM_ATTN first. Each takes a multiple of 16.
    CHECK(backend(llama_3_8b, GpuFamily::hopper).backend == VllmAttentionBackend::flash_attn);
    CHECK(backend(llama_3_8b, GpuFamily::ampere).backend == VllmAttentionBackend::flash_attn);
    CHECK(backend(llama_3_8b, GpuFamily::blackwell).backend == VllmAttentionBackend::flashinfer);
    CHECK(backend(llama_3_8b, GpuFamily::cdna3).backend == VllmAttentionBackend::rocm_attn);
    CHECK(backend(llama_3_8b, GpuFamily::blackwell).block_size == 16);
    CHECK(!backend(llama_3_8b, GpuFamily::hopper).forced);
    // A GPU of no known family: no backend named, the block as asked.
    CHECK(!vllm_attention_backend(llama_3_8b, std::nullopt, KvDtype::bf16, 1, 16));
    CHECK(name(VllmAttentionBackend::flashmla) == "FLASHMLA");
}

TEST_CASE("DeepSeek-V3 on 8 x H200: blocks of 64 tokens and the block count they give",
          "[engine][vllm][backend]") {
    // FP8 weights (given), bf16 KV, tp 8. A block of 64 tokens over 61 layers of one latent of
    // 512 + 64 values x 2 B: 64 x 61 x 1,152 B = 4,497,408 B; the pool is the KV budget over that,
    // whatever the budget is.
    const Deployment d{.model = deepseek_v3,
                       .gpu = gpus::h200_sxm,
                       .parallel = {.tp = 8},
                       .weights = WeightOptions{.format = WeightFormat::fp8}};
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    REQUIRE(a.serving.backend.has_value());
    CHECK(a.serving.block_size == 64);
    CHECK(a.report.vllm.block_size == 64);
    CHECK(a.report.vllm.page.count() == 64u * 1152u);
    CHECK(a.report.vllm.num_blocks == a.kv_budget.count() / (64u * 61u * 1152u));
    // 16-token blocks would have made 4 times as many (within the rounding of the division).
    const std::uint64_t at16 = a.kv_budget.count() / (16u * 61u * 1152u);
    CHECK(at16 / 4 == a.report.vllm.num_blocks);
    // A sequence of 8,192 tokens takes 128 blocks of 64.
    CHECK(a.report.vllm.blocks_per_request == 128);
    // --block-size 16 is forced to 64 as vLLM forces it.
    Deployment given = d;
    given.serving.block_size = 16;
    CHECK(evaluate(given, {.context = 8192}).serving.block_size == 64);
}

TEST_CASE("vLLM releases: 0.9 of the GPU through v0.1x, 0.92 from v0.20", "[engine][vllm]") {
    const auto v010 = vllm_release_defaults({0, 10});
    REQUIRE(v010);
    CHECK(v010->gpu_memory_utilization == 0.9);
    CHECK(!v010->charge_cuda_graphs);
    CHECK(!v010->chunked_local_hybrid);
    CHECK(vllm_release_defaults({0, 19})->gpu_memory_utilization == 0.9);
    CHECK(vllm_release_defaults({0, 13})->chunked_local_hybrid);
    CHECK(vllm_release_defaults({0, 20})->gpu_memory_utilization == 0.92);
    CHECK(!vllm_release_defaults({0, 20})->charge_cuda_graphs);
    CHECK(vllm_release_defaults({0, 21})->charge_cuda_graphs);
    CHECK(vllm_release_defaults(vllm_newest_release)->gpu_memory_utilization == 0.92);
    // v0.8 made the v1 engine the default: the oldest line modelled, with v0.10's defaults.
    CHECK(vllm_release_defaults({0, 8})->gpu_memory_utilization == 0.9);
    CHECK(!vllm_release_defaults({0, 8})->chunked_local_hybrid);
    CHECK(!vllm_release_defaults({0, 7}));
    CHECK(!vllm_release_defaults({vllm_newest_release.major, vllm_newest_release.minor + 1}));
    CHECK(parse_engine_version("0.10") == EngineVersion{0, 10});
    CHECK(parse_engine_version("v0.21") == EngineVersion{0, 21});
    // A patch is read (SGLang's releases differ by it); vLLM's rules take its line.
    CHECK(parse_engine_version("0.10.1") == EngineVersion{0, 10, 1});
    CHECK(parse_engine_version("0.10.1")->line() == EngineVersion{0, 10});
    CHECK(!parse_engine_version("0.10.1.1"));
    CHECK(!parse_engine_version("10"));
    CHECK(EngineVersion{0, 9} < EngineVersion{0, 10});
}

TEST_CASE("engine version 0.10 gives vLLM 0.9 of the GPU and graphs outside the fraction",
          "[engine][vllm]") {
    Deployment d{.model = llama_3_8b, .gpu = gpus::h100_sxm};
    d.serving.engine_version = EngineVersion{0, 10};
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    const EngineMemory& m = a.memory();
    CHECK(m.fraction == 0.9);
    // ceil(total x 0.9), the total read from the spec.
    CHECK(m.fraction_bytes.count() ==
          static_cast<std::uint64_t>(
              std::ceil(static_cast<double>(gpus::h100_sxm.memory_total.count()) * 0.9)));
    // Before v0.21 the graphs are not charged: charged = weights + the profile's torch peak (the
    // activation peak and PyTorch's cuBLAS workspace, 32 MiB on an H100) only.
    CHECK(m.cublas_workspace == 32 * MiB);
    CHECK(m.charged == m.weights + m.activation + m.cublas_workspace);
    CHECK(a.serving.engine_version == EngineVersion{0, 10});
    // The newest release: 0.92, graphs charged.
    const ReplicaAnswer now =
        evaluate(Deployment{.model = llama_3_8b, .gpu = gpus::h100_sxm}, {.context = 8192});
    CHECK(now.memory().fraction == 0.92);
    CHECK(now.memory().charged == now.memory().weights + now.memory().activation +
                                      now.memory().cublas_workspace + now.memory().cuda_graphs);
    // A fraction given wins over the release's.
    d.serving.memory_fraction = 0.8;
    CHECK(evaluate(d, {.context = 8192}).memory().fraction == 0.8);
    // Another engine has no release table here.
    Deployment s{.model = llama_3_8b, .gpu = gpus::h100_sxm};
    s.serving.engine = Engine::sglang;
    s.serving.engine_version = EngineVersion{0, 10};
    CHECK_THROWS_AS(evaluate(s, {.context = 8192}), InvalidInput);
}

TEST_CASE("an older vLLM release profiles its own batch defaults", "[engine][vllm][release]") {
    // v0.8 gave 8,192 tokens and 1,024 sequences to an H100 or H200 by name only (vLLM PR
    // #12369): a B200 (178 GiB, neither name) profiles 2,048 tokens in 256 sequences there, and
    // 16,384 in 1,024 on main (70 GiB or more, not an A100; PR #51726). Llama-3-8B's forward is
    // (2 x 4,096 + 3 x 14,336) x 2 B = 102,400 B per token: under v0.8, 2,048 x 102,400 =
    // 209,715,200 B and logits 256 x 128,256 x 6 B = 197,001,216 B, 406,716,416 B in all.
    Deployment d{.model = llama_3_8b, .gpu = gpus::b200};
    d.serving.engine_version = EngineVersion{0, 8};
    const ReplicaAnswer old = evaluate(d, {.context = 8192});
    CHECK(old.memory().activation.count() == 406'716'416ULL);
    CHECK(old.dp_rank_sequence_cap == 256);
    CHECK(old.serving.options.vllm.max_num_batched_tokens == 2048u);
    // Main: 16,384 x 102,400 + 1,024 x 128,256 x 6 = 1,677,721,600 + 788,004,864 B.
    const ReplicaAnswer now =
        evaluate(Deployment{.model = llama_3_8b, .gpu = gpus::b200}, {.context = 8192});
    CHECK(now.memory().activation.count() == 2'465'726'464ULL);
    CHECK(now.dp_rank_sequence_cap == 1024);
    // An H100 has the larger defaults under both rules, 8,192 tokens in v0.8: 838,860,800 +
    // 788,004,864 B, its FlashInfer softmax (1,024 x 128,256 x 4 B) below the forward.
    Deployment h{.model = llama_3_8b, .gpu = gpus::h100_sxm};
    h.serving.engine_version = EngineVersion{0, 8};
    CHECK(evaluate(h, {.context = 8192}).memory().activation.count() == 1'626'865'664ULL);
    // Given, the release's default gives way.
    d.serving.max_num_batched_tokens = 4096;
    CHECK(evaluate(d, {.context = 8192}).serving.options.vllm.max_num_batched_tokens == 4096u);
}

TEST_CASE("vLLM v0.8 charges the CUDA context, and a pip install's sampler sorts",
          "[engine][vllm][release]") {
    // The v0.8 line's worker charged every byte in use outside PyTorch after the profile (PR
    // #19312 made it the increase past a snapshot, from v0.9.2): the 700 MiB context is charged.
    CHECK(vllm_charges_non_torch_in_use({0, 8}));
    CHECK(!vllm_charges_non_torch_in_use({0, 9}));
    CHECK(!vllm_charges_non_torch_in_use(vllm_newest_release));
    Deployment d{.model = llama_3_8b, .gpu = gpus::h100_sxm};
    d.serving.engine_version = EngineVersion{0, 8};
    const ReplicaAnswer v08 = evaluate(d, {.context = 8192});
    CHECK(v08.memory().charged == v08.memory().weights + v08.memory().activation +
                                      v08.memory().cublas_workspace + v08.memory().cuda_context);
    CHECK(v08.memory().outside == v08.memory().cuda_graphs);
    d.serving.engine_version = EngineVersion{0, 9};
    const ReplicaAnswer v09 = evaluate(d, {.context = 8192});
    // v0.9's FlashInfer sampler holds 4 B more per logit than v0.8's (engine/release.hpp), so
    // the context is the difference of the caches once the peaks' difference is added back.
    CHECK(v09.memory().kv_memory - v08.memory().kv_memory +
              (v09.memory().activation - v08.memory().activation) ==
          700 * MiB);
    // Through v0.10 the snapshot preceded the distributed groups, so their buffers were charged
    // (PR #25359 moved it, v0.11): at tp 2 the 2 x 128 MiB leave the cache at v0.10, not at v0.11.
    CHECK(vllm_charges_comm_buffers({0, 10}));
    CHECK(!vllm_charges_comm_buffers({0, 11}));
    Deployment t{.model = llama_3_8b, .gpu = gpus::h100_sxm, .parallel = {.tp = 2}};
    t.serving.engine_version = EngineVersion{0, 10};
    const ReplicaAnswer t10 = evaluate(t, {.context = 8192});
    t.serving.engine_version = EngineVersion{0, 11};
    t.serving.without_flashinfer = false;  // the same sampler at both, as v0.10's
    const ReplicaAnswer t11 = evaluate(t, {.context = 8192});
    // At v0.11 the buffers leave the charge and PyTorch's NCCL communicator, which the profile's
    // logits all-gather opens inside the window, enters it (engine/nccl.hpp): 24 ring channels x
    // 12 MiB + 115 x 2 MiB = 518 MiB.
    CHECK(t11.memory().torch_nccl_communicator == 518 * MiB);
    CHECK(t11.memory().kv_memory + t11.memory().torch_nccl_communicator - t10.memory().kv_memory ==
          256 * MiB);
    CHECK(t10.memory().outside == t10.memory().cuda_context + t10.memory().cuda_graphs);
    // Without FlashInfer the profile's sampler sorts its 1,024 rows of 128,256 logits: 32 B
    // each beside the logits and their fp32 copy (6 B) and the forward's output, 8,192 x 4,096 x
    // 2 B: 1,024 x 128,256 x 38 + 67,108,864 = 5,057,806,336 B, more than the forward's
    // 838,860,800 B.
    d.serving.without_flashinfer = true;
    CHECK(evaluate(d, {.context = 8192}).memory().activation.count() == 5'057'806'336ULL);
    // From v0.17 vLLM's native top-k/top-p is Triton's (PR #33538): without FlashInfer the
    // profile holds the fp32 softmax and noise, 8 B a value, not a sort: 838,860,800 B of forward
    // against 67,108,864 + 1,024 x 128,256 x 14 = 1,905,786,880 B of sampling, and Triton's
    // outlier buffer, an fp32 vocabulary row for each of the H100's 132 SMs, 132 x 128,256 x 4 =
    // 67,719,168 B: 1,973,506,048 B. With FlashInfer it holds its two fp32 copies, the same 8 B,
    // and no such buffer.
    Deployment n = d;
    n.serving.engine_version = EngineVersion{0, 19};
    CHECK(evaluate(n, {.context = 8192}).memory().activation.count() == 1'973'506'048ULL);
    n.serving.without_flashinfer = false;
    CHECK(evaluate(n, {.context = 8192}).memory().activation.count() == 1'905'786'880ULL);
    // Not an SGLang knob.
    Deployment s{.model = llama_3_8b, .gpu = gpus::h100_sxm};
    s.serving.engine = Engine::sglang;
    s.serving.without_flashinfer = true;
    CHECK_THROWS_AS(evaluate(s, {.context = 8192}), InvalidInput);
}

TEST_CASE("vLLM's --max-num-seqs sizes its profile's logits", "[engine][vllm]") {
    // The profile run samples min(tokens, max_num_seqs) rows (vllm/v1/worker/gpu_model_runner.py,
    // _dummy_run): at --max-num-seqs 64 on an H100, Llama-3-8B's peak is 16,384 x 102,400 +
    // 64 x 128,256 x 6 = 1,677,721,600 + 49,250,304 = 1,726,971,904 B, not the 1,024 rows'
    // figure.
    Deployment d{.model = llama_3_8b, .gpu = gpus::h100_sxm};
    d.serving.max_sequences = 64;
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    CHECK(a.memory().activation.count() == 1'726'971'904ULL);
    CHECK(a.dp_rank_sequence_cap == 64);
}

TEST_CASE("vLLM main's sparse MLA on SM 12.x: FLASHINFER_MLA_SPARSE_SM120, fp8_ds_mla only",
          "[engine][vllm][backend][capability]") {
    // vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm120.py: the impl raises
    // "FLASHINFER_MLA_SPARSE_SM120 requires the packed fp8_ds_mla KV cache layout" for any other
    // kv_cache_dtype; check_and_update_config (vllm/platforms/cuda.py) forces blocks of 64 on a
    // sparse model. fp8_ds_mla keeps DeepSeek-V3.2's latent in 656 B and its indexer key in 132:
    // 788 B a layer, 61 x 788 = 48,068 B a token.
    const GpuSpec rtx = gpus::rtx_pro_6000;
    auto c = vllm_attention_backend(deepseek_v3_2, rtx, KvDtype::fp8_ds_mla, 1, 16);
    REQUIRE(c);
    CHECK(c->backend == VllmAttentionBackend::flashinfer_mla_sparse_sm120);
    CHECK(c->block_size == 64);
    CHECK(c->forced);
    CHECK(vllm_stored_kv(deepseek_v3_2, KvDtype::fp8_ds_mla, rtx, 1).dtype == KvDtype::fp8_ds_mla);
    CHECK(kv_bytes_per_token(deepseek_v3_2, KvDtype::fp8_ds_mla).count() == 48'068u);
    CHECK_FALSE(vllm_sparse_mla_refusal(deepseek_v3_2, rtx, KvDtype::fp8_ds_mla));
    // Any other cache: no backend takes it, and the reason names the one that would.
    for (KvDtype kv : {KvDtype::bf16, KvDtype::fp8_e4m3}) {
        CHECK_FALSE(vllm_attention_backend(deepseek_v3_2, rtx, kv, 1, 16));
        const auto why = vllm_sparse_mla_refusal(deepseek_v3_2, rtx, kv);
        REQUIRE(why);
        CHECK_THAT(std::string(*why), Catch::Contains("FLASHINFER_MLA_SPARSE_SM120") &&
                                          Catch::Contains("fp8_ds_mla cache only"));
    }
    // An older line: none at all. Off SM 12.x, or a dense model, nothing is refused here.
    CHECK_FALSE(vllm_attention_backend(deepseek_v3_2, rtx, KvDtype::fp8_ds_mla, 1, 16, 1, {0, 29}));
    CHECK(vllm_sparse_mla_refusal(deepseek_v3_2, rtx, KvDtype::fp8_ds_mla, {0, 29}));
    CHECK_FALSE(vllm_sparse_mla_refusal(deepseek_v3_2, gpus::h100_sxm, KvDtype::bf16));
    CHECK_FALSE(vllm_sparse_mla_refusal(llama_3_8b, rtx, KvDtype::bf16));
}

TEST_CASE("vLLM picks backends by compute capability: the RTX PRO 6000 (12.0) is not a B200",
          "[engine][vllm][backend][capability]") {
    // vllm/platforms/cuda.py, _get_backend_priorities: the Blackwell lists (FLASHINFER first;
    // FLASHINFER_MLA, CUTLASS_MLA) are for device_capability.major == 10 only. SM 12.0 takes the
    // other list, where FLASH_ATTN runs (FlashAttention 2) and, for MLA, FLASH_ATTN_MLA (FA3:
    // SM 9.0), FLASHMLA (SM 9.x and 10.x) and FLASHINFER_MLA (10.x) do not: TRITON_MLA, the block
    // as asked. FlashMLA sparse's supports_compute_capability is major 9 or 10: no sparse MLA.
    const GpuSpec rtx = gpus::rtx_pro_6000;
    REQUIRE(rtx.capability == sm(12, 0));
    auto c = vllm_attention_backend(llama_3_8b, rtx, KvDtype::bf16, 1, 16);
    REQUIRE(c);
    CHECK(c->backend == VllmAttentionBackend::flash_attn);
    c = vllm_attention_backend(deepseek_v3, rtx, KvDtype::fp8_e4m3, 1, 16);
    REQUIRE(c);
    CHECK(c->backend == VllmAttentionBackend::triton_mla);
    CHECK(c->block_size == 16);
    CHECK_FALSE(c->forced);
    CHECK_FALSE(vllm_attention_backend(deepseek_v3_2, rtx, KvDtype::bf16, 1, 16));
    // The B300 and GB300 (10.3) are SM 10.x: what the B200 gets, which their ids' family gave too.
    for (const GpuSpec& g : {gpus::b200, gpus::b300, gpus::gb300}) {
        INFO(g.id.c_str());
        c = vllm_attention_backend(deepseek_v3, g, KvDtype::fp8_e4m3, 1, 16);
        REQUIRE(c);
        CHECK(c->backend == VllmAttentionBackend::flashinfer_mla);
        CHECK(c->block_size == 64);
        CHECK(vllm_attention_backend(llama_3_8b, g, KvDtype::bf16, 1, 16)->backend ==
              VllmAttentionBackend::flashinfer);
    }
    // Hopper's 9.0 as before: FlashMLA's block of 64.
    c = vllm_attention_backend(deepseek_v3, gpus::h20, KvDtype::fp8_e4m3, 1, 16);
    REQUIRE(c);
    CHECK(c->backend == VllmAttentionBackend::flashmla);
    CHECK(c->block_size == 64);
    // ROCm's rules were read for gfx942; the MI355X's gfx950 is left unknown.
    CHECK(vllm_attention_backend(llama_3_8b, gpus::mi300x, KvDtype::bf16, 1, 16)->backend ==
          VllmAttentionBackend::rocm_attn);
    CHECK_FALSE(vllm_attention_backend(llama_3_8b, gpus::mi355x, KvDtype::bf16, 1, 16));
}
