#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <kvplan/engine.hpp>
#include <kvplan/presets.hpp>

#include "support/bundled_models.hpp"
#include "support/datasheet_gpus.hpp"
#include "support/fixture_models.hpp"

using namespace kvplan;
using namespace kvplan::presets;
using kvplan::testing::a100_sxm4_80gb;
using kvplan::testing::h100_sxm;

namespace {

// Qwen/Qwen3-14B: 40 layers, 40 heads, 8 KV heads of 128 (config.json).
const Model qwen3_14b{ModelConfig{.name = "Qwen3-14B",
                                  .layers = LayerStack::uniform(40, full_attention(8, 128)),
                                  .num_heads = 40,
                                  .head_dim = 128,
                                  .hidden_size = 5120,
                                  .intermediate_size = 17408,
                                  .vocab_size = 151936,
                                  .max_position_embeddings = 40960}};

// Qwen3-30B-A3B (configs/models/qwen3-30b-a3b.json): 48 layers, 32 heads, 4 KV heads of 128, 128
// experts of 768, 8 per token.
const Model qwen3_30b_a3b = kvplan::testing::bundled("qwen3-30b-a3b");

// bigcode/starcoder2-3b: 30 layers, 24 heads, 2 KV heads of 128, sliding window 4,096 on every
// layer, max_position_embeddings 16,384.
const Model starcoder2_3b{
    ModelConfig{.name = "starcoder2-3b",
                .layers = LayerStack::uniform(30, sliding_window(2, 128, 4096)),
                .num_heads = 24,
                .hidden_size = 3072,
                .intermediate_size = 12288,
                .vocab_size = 49152,
                .max_position_embeddings = 16384,
                .mlp = MlpKind::plain,
                .norm = NormKind::layer}};

// Qwen3-235B-A22B (configs/models/qwen3-235b-a22b.json): 94 layers, 64 heads, 4 KV heads of
// 128, 128 experts of 1,536, 8 per token.
const Model qwen3_235b_a22b = kvplan::testing::bundled("qwen3-235b-a22b");

}  // namespace

// ---- vLLM ----------------------------------------------------------------------------------

TEST_CASE("vLLM: Qwen3-14B with 6.51 GiB prints 42,656 tokens and 1.30x at 32,768",
          "[engine][vllm]") {
    // LMCache issue #1739 (vLLM 0.10): "Available KV cache memory: 6.51 GiB", "GPU KV cache size:
    // 42,656 tokens", "Maximum concurrency for 32,768 tokens per request: 1.30x".
    // Page per layer: 16 x 8 x (128 + 128) x 2 B = 65,536 B; 40 layers, one group: a block is
    // 2,621,440 B. 6.51 GiB = 6,990,102,446 B -> 2,666 blocks (2,666.5) -> 42,656 tokens.
    // A 32,768-token request takes 2,048 blocks: 2,666 / 2,048 = 1.3017578125 -> "1.30x".
    const Layout l{qwen3_14b, {}};
    for (VllmTokenReport rule :
         {VllmTokenReport::blocks_per_group, VllmTokenReport::concurrency_times_length}) {
        const VllmKvCache c = vllm_kv_cache(qwen3_14b, KvDtype::bf16, l, round_to_bytes(6.51, GiB),
                                            {.max_model_len = 32768, .token_report = rule});
        CHECK(c.num_groups == 1);
        CHECK(c.page.count() == 65'536);
        CHECK(c.bytes_per_block.count() == 2'621'440);
        CHECK(c.num_blocks == 2666);
        CHECK(c.blocks_per_request == 2048);
        CHECK(c.max_concurrency == 1.3017578125);
        // Both rules agree here: 2,666 x 16 and int(1.3017578125 x 32,768) are 42,656.
        CHECK(c.kv_cache_tokens == 42'656);
        CHECK(c.enough_memory);
    }
}

TEST_CASE("vLLM: a sliding window reserves window - 1 + batched tokens, plus a block",
          "[engine][vllm]") {
    // vLLM PR #19029 (v0.9), bigcode/starcoder2-3b at max_model_len 16,384: "GPU KV cache size:
    // 2,198,512 tokens" and "Maximum concurrency for 16,384 tokens per request: 178.68x" (134.19x
    // before the PR counted the window).
    // 2,198,512 / 16 = 137,407 blocks. A request takes cdiv(min(4,096 - 1 + 8,192, 16,384), 16) + 1
    // = cdiv(12,287, 16) + 1 = 769 blocks: 137,407 / 769 = 178.6827 -> "178.68x".
    // Page per layer 16 x 2 x 256 x 2 B = 16,384 B, 30 layers: 491,520 B per block, so 137,407
    // blocks need 67,538,288,640 B; give a little more.
    const Layout l{starcoder2_3b, {}};
    const VllmKvCache c = vllm_kv_cache(starcoder2_3b, KvDtype::bf16, l,
                                        Bytes::exactly(137'407ULL * 491'520 + 100'000),
                                        {.max_model_len = 16384,
                                         .max_num_batched_tokens = 8192,
                                         .concurrent_batches = 1,
                                         .token_report = VllmTokenReport::blocks_per_group});
    CHECK(c.num_blocks == 137'407);
    CHECK(c.kinds[0].blocks_per_request == 769);
    CHECK(c.kv_cache_tokens == 2'198'512);
    CHECK(c.max_concurrency == Approx(178.68).margin(0.005));
    // Current vLLM with async scheduling keeps two batches in flight: cdiv(4,095 + 16,384 capped
    // at 16,384, 16) + 1 = 1,025 blocks.
    const VllmKvCache now = vllm_kv_cache(starcoder2_3b, KvDtype::bf16, l,
                                          Bytes::exactly(137'407ULL * 491'520 + 100'000),
                                          {.max_model_len = 16384, .max_num_batched_tokens = 8192});
    CHECK(now.in_flight_tokens == 16'384);
    CHECK(now.blocks_per_request == 1025);
}

TEST_CASE("vLLM: a Mamba hybrid raises the block size and prints per-group tokens",
          "[engine][vllm]") {
    // A vLLM v0.17.0 log of a 40-layer hybrid (three linear-attention layers to one full layer,
    // 2 KV heads of 256, fp8 KV, max_model_len 65,536, prefix caching on): "Setting attention block
    // size to 2096 tokens", "GPU KV cache size: 159,296 tokens", "Maximum concurrency for 65,536
    // tokens per request: 8.00x", KV memory 6.08 GiB.
    // An attention token is 2 x 2 x 256 x 1 B = 1,024 B per layer, so a block of 2,096 = 16 x 131
    // tokens means a state of 130 x 16,384 < state <= 131 x 16,384 B; any state in that range
    // gives these figures. Page: 2,096 x 1,024 = 2,146,304 B.
    // Groups: 10 full and 30 linear layers; 30 >= 1.5 x 10, so groups of 10: 1 full + 3 linear.
    // Blocks: 6.08 GiB / (2,146,304 x 10) = 304.16 -> 304 (both printed figures pin it: 304 // 4
    // x 2,096 = 159,296 and 304 / 38 = 8.00). A request: cdiv(65,536, 2,096) = 32 blocks for the
    // full group and 2 per linear group in align mode: 38.
    const Model hybrid = testing::hybrid_40();
    const Layout l{hybrid, {}};
    const VllmOptions v0_17{.max_model_len = 65536,
                            .mamba_cache_mode = MambaCacheMode::align,
                            .token_report = VllmTokenReport::blocks_per_group};
    const VllmKvCache c =
        vllm_kv_cache(hybrid, KvDtype::fp8_e4m3, l, round_to_bytes(6.08, GiB), v0_17);
    CHECK(c.block_size == 2096);
    CHECK(c.page.count() == 2'146'304);
    CHECK(c.num_groups == 4);
    CHECK(c.group_size == 10);
    CHECK(c.num_blocks == 304);
    CHECK(c.blocks_per_request == 38);
    CHECK(c.kv_cache_tokens == 159'296);
    CHECK(c.max_concurrency == Approx(8.00).margin(0.005));
    // The current rule prints max_concurrency x max_model_len = 8 x 65,536 = 524,288 tokens.
    VllmOptions current = v0_17;
    current.token_report = VllmTokenReport::concurrency_times_length;
    CHECK(vllm_kv_cache(hybrid, KvDtype::fp8_e4m3, l, round_to_bytes(6.08, GiB), current)
              .kv_cache_tokens == 524'288);
}

TEST_CASE("vLLM: decode context parallelism on a hybrid splits only the full-attention groups",
          "[engine][vllm][parallel]") {
    // vLLM keeps a hybrid's Mamba and sliding-window groups at dcp 1 and counts a full-attention
    // group's blocks in block_size x dcp tokens (vllm/v1/core/single_type_kv_cache_manager.py).
    // The hybrid-40 above at tp 4: a rank holds 1 of the 2 KV heads, 2 x 256 x 1 B = 512 B a
    // token per full layer (fp8), and a quarter of each state, ceil(2,140,000 / 4) = 535,000 B.
    // The attention block is the least multiple of 16 whose page holds a state: 535,000 / 512 =
    // 1,044.9 -> 1,056 tokens, a page of 540,672 B. Groups of 10 layers (30 linear >= 1.5 x 10):
    // 4 groups, so 3,000,000,000 B / (540,672 x 10) = 554.9 -> 554 blocks.
    const Model hybrid = testing::hybrid_40();
    const VllmOptions o{.max_model_len = 65536,
                        .mamba_cache_mode = MambaCacheMode::align,
                        .token_report = VllmTokenReport::blocks_per_group};
    const Bytes kv = Bytes::exactly(3'000'000'000ULL);
    const VllmKvCache dcp1 =
        vllm_kv_cache(hybrid, KvDtype::fp8_e4m3, Layout{hybrid, {.tp = 4}}, kv, o);
    const VllmKvCache dcp2 =
        vllm_kv_cache(hybrid, KvDtype::fp8_e4m3, Layout{hybrid, {.tp = 4, .dcp = 2}}, kv, o);
    for (const VllmKvCache* c : {&dcp1, &dcp2}) {
        CHECK(c->block_size == 1056);
        CHECK(c->page.count() == 540'672);
        CHECK(c->num_groups == 4);
        CHECK(c->num_blocks == 554);
    }
    // dcp 1: the full group takes cdiv(65,536, 1,056) = 63 blocks, each linear group 2 (align):
    // 63 + 3 x 2 = 69 a request, 554 / 69 = 8.03x.
    CHECK(dcp1.blocks_per_request == 69);
    // dcp 2: the full group's blocks count 2,112 tokens, cdiv(65,536, 2,112) = 32; the states stay
    // whole on each rank, 2 blocks a group: 32 + 6 = 38 a request, 554 / 38 = 14.58x.
    CHECK(dcp2.kinds[1].block_size == 2112);
    CHECK(dcp2.kinds[0].block_size == 1056);
    CHECK(dcp2.blocks_per_request == 38);
    CHECK(dcp2.max_concurrency == Approx(554.0 / 38));
    // Admitted: the last request its peak of 38 blocks, each running one 32 + 3 x 1 = 35 (an
    // aligned state holds one page between block edges): 1 + (553 - 38) / 35 = 15.
    CHECK(dcp2.blocks_held == 35);
    CHECK(dcp2.admitted == 15);

    // Gemma-2-27B at tp 32 (one 16-KV-head copy in two ranks, 23 sliding layers of window 4,096
    // and 23 global): a page is 16 x 2 x 128 x 2 B = 8,192 B, two groups of 23, so 1,000,000,000 B
    // / (8,192 x 23) = 5,307 blocks. The sliding group takes cdiv(min(4,095 + 2,048, 8,192), 16) +
    // 1 = 385 blocks at any dcp; the global group 8,192 / 16 = 512 at dcp 1 and 8,192 / 32 = 256
    // at dcp 2: 897 and 641 a request, 5.92x and 8.28x.
    const VllmOptions g{.max_model_len = 8192,
                        .max_num_batched_tokens = 2048,
                        .concurrent_batches = 1,
                        .token_report = VllmTokenReport::blocks_per_group};
    const Bytes gkv = Bytes::exactly(1'000'000'000ULL);
    const VllmKvCache g1 =
        vllm_kv_cache(gemma_2_27b, KvDtype::bf16, Layout{gemma_2_27b, {.tp = 32}}, gkv, g);
    const VllmKvCache g2 = vllm_kv_cache(gemma_2_27b, KvDtype::bf16,
                                         Layout{gemma_2_27b, {.tp = 32, .dcp = 2}}, gkv, g);
    CHECK(g1.num_blocks == 5307);
    CHECK(g2.num_blocks == 5307);
    CHECK(g1.blocks_per_request == 897);
    CHECK(g2.blocks_per_request == 641);
    CHECK(g2.max_concurrency == Approx(5307.0 / 641));
}

TEST_CASE("vLLM: speculative tokens keep blocks beside each Mamba state", "[engine][vllm]") {
    // MambaSpec.max_memory_usage_bytes (vllm/v1/kv_cache_interface.py): a state takes
    // (2 + num_speculative_blocks) pages in align mode, num_speculative_blocks being
    // num_speculative_tokens. The hybrid above with 2 speculative tokens: 32 blocks for the full
    // group and 2 + 2 for each of its 3 linear groups, 44 a request; 304 blocks / 44 = 6.91x.
    const Model hybrid = testing::hybrid_40();
    const Layout l{hybrid, {}};
    const VllmOptions spec{.max_model_len = 65536,
                           .mamba_cache_mode = MambaCacheMode::align,
                           .token_report = VllmTokenReport::blocks_per_group,
                           .num_speculative_tokens = 2};
    const VllmKvCache c =
        vllm_kv_cache(hybrid, KvDtype::fp8_e4m3, l, round_to_bytes(6.08, GiB), spec);
    CHECK(c.num_blocks == 304);
    CHECK(c.blocks_per_request == 44);
    CHECK(c.max_concurrency == Approx(304.0 / 44));
    // The scheduler admits what the blocks allow. The last request admitted needs its peak, 44
    // blocks; once decoding, an aligned state holds 1 + 2 pages away from a block edge, so a
    // running request holds 32 + 3 x 3 = 41. Of 303 usable blocks (one is the null block):
    // 1 + (303 - 44) / 41 = 1 + 6 = 7 requests, one more than the logged 6.91x.
    CHECK(c.blocks_to_admit == 44);
    CHECK(c.blocks_held == 41);
    CHECK(c.admitted == 7);
}

TEST_CASE("vLLM: fp8 KV on Qwen3-30B-A3B, and the estimate when max_model_len does not fit",
          "[engine][vllm]") {
    // vLLM issue #25350 (v0.10, --kv-cache-dtype fp8). Page per layer 16 x 4 x 256 x 1 B =
    // 16,384 B; 48 layers: 786,432 B per block.
    const Layout l{qwen3_30b_a3b, {}};
    // "Available KV cache memory: 10.55 GiB", "GPU KV cache size: 230,528 tokens" = 14,408 blocks
    // = 11,330,912,256 B (10.5527 GiB); at 100,000 tokens a request takes 6,250 blocks: 14,408 /
    // 6,250 = 2.30528 -> "2.31x".
    const VllmKvCache ok =
        vllm_kv_cache(qwen3_30b_a3b, KvDtype::fp8_e4m3, l, Bytes::exactly(14'408ULL * 786'432),
                      {.max_model_len = 100000, .token_report = VllmTokenReport::blocks_per_group});
    CHECK(ok.num_blocks == 14'408);
    CHECK(ok.kv_cache_tokens == 230'528);
    CHECK(ok.max_concurrency == Approx(2.30528));
    // At --max-model-len 221000 with 5.59 GiB: "(10.12 GiB KV cache is needed ...) ... the
    // estimated maximum model length is 122080". Needed: 48 x cdiv(221,000, 16) x 16,384 =
    // 48 x 13,813 x 16,384 = 10,862,985,216 B = 10.117 GiB. 122,080 = 7,630 blocks x 16, so the
    // memory was in [7,630, 7,631) x 786,432 B; take 6,000,476,160 B (5.588 GiB, "5.59").
    // Current vLLM (PR #47272) holds the null block back from the check and the estimate: the
    // same memory's 7,630 blocks leave 7,629 usable, so it now names 7,629 x 16 = 122,064.
    const VllmKvCache short_of =
        vllm_kv_cache(qwen3_30b_a3b, KvDtype::fp8_e4m3, l, Bytes::exactly(6'000'476'160ULL),
                      {.max_model_len = 221000});
    CHECK_FALSE(short_of.enough_memory);
    CHECK(short_of.num_blocks == 7'630);
    CHECK(short_of.usable_blocks == 7'629);
    CHECK(short_of.needed.count() == 10'862'985'216ULL);
    CHECK(short_of.estimated_max_model_len == 122'064);
}

TEST_CASE("vLLM: Gemma-3-27B forms 7 groups of 10 layers with 8 padding layers", "[engine][vllm]") {
    // 62 layers, five sliding (window 1,024) to one full: 52 sliding and 10 full. Both pages are
    // 16 x 16 x 256 x 2 B = 131,072 B. Group size: the fewest layers, 10 (52 >= 1.5 x 10);
    // sliding layers form cdiv(52, 10) = 6 groups with 60 - 52 = 8 padding layers ("Add 8 padding
    // layers, may waste at most 15.38%"), full layers 1 group.
    const Layout l{gemma_3_27b, {}};
    const VllmKvCache c = vllm_kv_cache(
        gemma_3_27b, KvDtype::bf16, l, 20 * GiB,
        {.max_model_len = 32768, .max_num_batched_tokens = 8192, .concurrent_batches = 1});
    CHECK(c.num_groups == 7);
    CHECK(c.group_size == 10);
    CHECK(c.page.count() == 131'072);
    const VllmLayerKind& sliding =
        c.kinds[0].kind == CacheKind::sliding_window ? c.kinds[0] : c.kinds[1];
    CHECK(sliding.groups == 6);
    CHECK(sliding.padding_layers == 8);
    // A block is 10 layers x 131,072 B = 1,310,720 B: 20 GiB / that = 16,384 blocks.
    CHECK(c.num_blocks == 16'384);
    // Per request: 2,048 blocks of the full group + 6 x (cdiv(1,023 + 8,192, 16) + 1 = 577).
    CHECK(c.blocks_per_request == 2048 + 6 * 577);
}

TEST_CASE("vLLM: an MLA latent is replicated on every tensor-parallel rank", "[engine][vllm]") {
    // DeepSeek-V3: one latent of 512 + 64 values per token per layer, 16 x 576 x 2 B = 18,432 B
    // per page, 61 layers: 1,124,352 B per block on every rank whatever tp. 10 GiB / 1,124,352 B
    // = 9,549.9 -> 9,549 blocks at tp 1 and tp 8 alike.
    for (std::uint32_t tp : {1u, 8u}) {
        const VllmKvCache c =
            vllm_kv_cache(deepseek_v3, KvDtype::bf16, Layout{deepseek_v3, {.tp = tp}}, 10 * GiB,
                          {.max_model_len = 4096});
        CHECK(c.page.count() == 18'432);
        CHECK(c.num_blocks == 9549);
    }
}

TEST_CASE("vLLM: every worker takes the fewest blocks of any pipeline stage", "[engine][vllm]") {
    // Llama-3-70B at pp 3: 27, 27, 26 layers, 65,536 B per page. 20 GiB / (27 x 65,536) =
    // 12,136.3 and / (26 x 65,536) = 12,603.1: every worker gets 12,136.
    const VllmKvCache c = vllm_kv_cache(llama_3_70b, KvDtype::bf16, Layout{llama_3_70b, {.pp = 3}},
                                        20 * GiB, {.max_model_len = 8192});
    CHECK(c.num_blocks == 12'136);
    CHECK(c.limiting_stage == 0);
    CHECK(c.stage_group_size == 27);
}

TEST_CASE("vLLM: the memory it gives the cache", "[engine][vllm]") {
    // Llama-3-8B on an H100 (81,559 MiB = 85,520,809,984 B): requested = ceil(x 0.92) =
    // 78,679,145,186 B; less weights 16,060,522,496 B and the rotary table's 8,192 x 128 x 2 =
    // 2,097,152 B (16,062,619,648 B as loaded), the activation peak of a profile run of
    // 16,384 tokens in 1,024 sequences (vLLM's default from v0.28, PR #51726), (2 x 4,096 + 3 x
    // 14,336) x 2 B x 16,384 + 1,024 x 128,256 x 6 B = 1,677,721,600 + 788,004,864 =
    // 2,465,726,464 B (a dense model's profile samples plainly under model runner V2), and CUDA
    // graphs 536,870,912 B: 59,613,928,162 B. The CUDA context lives outside.
    const Replica r{.model = llama_3_8b, .gpu = h100_sxm()};
    const EngineMemory m = engine_memory(Engine::vllm, r, r.layout(), 0);
    CHECK(m.fraction_bytes.count() == 78'679'145'186ULL);
    CHECK(m.weights.count() == 16'062'619'648ULL);
    CHECK(m.activation.count() == 2'465'726'464ULL);
    CHECK(m.kv_memory.count() == 59'613'928'162ULL);
    CHECK(m.outside == 700 * MiB);
    CHECK(m.outside_fits);
    // Before v0.21 graphs were not charged: 536,870,912 B more for the cache.
    const EngineMemory old =
        engine_memory(Engine::vllm, r, r.layout(), 0, {}, {.vllm = {.charge_cuda_graphs = false}});
    CHECK(old.kv_memory - m.kv_memory == 512 * MiB);
    // The v0.8 line charged the memory in use outside PyTorch after the profile
    // (vllm/v1/worker/gpu_worker.py of v0.8, determine_available_memory): the 700 MiB context
    // leaves the cache, and nothing is left outside but the uncharged graphs.
    const EngineMemory v08 =
        engine_memory(Engine::vllm, r, r.layout(), 0, {},
                      {.vllm = {.charge_cuda_graphs = false, .charge_non_torch_in_use = true}});
    CHECK(old.kv_memory - v08.kv_memory == 700 * MiB);
    CHECK(v08.outside == 512 * MiB);
    // On two GPUs the communication buffers (2 ranks x 128 MiB) are charged with it.
    const Replica r2{.model = llama_3_8b, .gpu = h100_sxm(), .parallel = {.tp = 2}};
    const EngineMemory tp2 = engine_memory(Engine::vllm, r2, r2.layout(), 0, {},
                                           {.vllm = {.charge_cuda_graphs = false}});
    const EngineMemory tp2_v08 =
        engine_memory(Engine::vllm, r2, r2.layout(), 0, {},
                      {.vllm = {.charge_cuda_graphs = false, .charge_non_torch_in_use = true}});
    CHECK(tp2.kv_memory - tp2_v08.kv_memory == 700 * MiB + 256 * MiB);
}

TEST_CASE("vLLM: the rotary cos/sin table is part of the weights as loaded", "[engine][vllm]") {
    // One table per GPU of max_position x rotary_dim in the model dtype (2 B), shared by every
    // layer (get_rope's _ROPE_DICT): Llama-3-8B, 8,192 x 128 x 2 = 2,097,152 B (2 MiB); its
    // v0.11.2 H200 log's 14.9596 GiB is the checkpoint's 16,060,522,496 B plus this, 14.9595 GiB.
    CHECK(vllm_rotary_table_bytes(llama_3_8b) == 2 * MiB);
    // Llama-4-Scout's 10,485,760 positions (llama3 scaling keeps them) x head_dim 128 x 2 B =
    // 2,684,354,560 B = 2.5 GiB on every GPU at any tp: the 27.8072 - 25.3024 GiB its v0.12 log
    // on eight H200s shows.
    ModelConfig scout = llama_3_8b.config();
    scout.max_position_embeddings = 10'485'760;
    CHECK(vllm_rotary_table_bytes(Model{scout}).count() == 2'684'354'560ULL);
    // MLA rotates qk_rope_head_dim (64) only: DeepSeek-V3, 163,840 x 64 x 2 = 20,971,520 B.
    CHECK(vllm_rotary_table_bytes(deepseek_v3) == 20 * MiB);
    // A partial rotary factor (GLM-4.5's 0.5 of 128): 131,072 x 64 x 2 = 16 MiB.
    ModelConfig partial = llama_3_8b.config();
    partial.max_position_embeddings = 131'072;
    partial.rotary_dim = 64;
    CHECK(vllm_rotary_table_bytes(Model{partial}) == 16 * MiB);
    // Sliding layers with a rope of their own add a second table: Gemma-3-27B's global layers
    // build 131,072 x 8 = 1,048,576 positions (linear scaling), its sliding ones 131,072, so
    // (1,048,576 + 131,072) x 128 x 2 B = 301,989,888 B (288 MiB).
    CHECK(vllm_rotary_table_bytes(gemma_3_27b).count() == 301'989'888ULL);
    ModelConfig one_rope = gemma_3_27b.config();
    one_rope.rotary_positions = one_rope.local_rotary_positions = 0;
    CHECK(vllm_rotary_table_bytes(Model{one_rope}) == 32 * MiB);  // 131,072 x 128 x 2
    // No attention, no rope: a Mamba model holds none.
    ModelConfig mamba = llama_3_8b.config();
    mamba.layers = LayerStack::uniform(32, constant_state(16 * KiB));
    mamba.num_heads = 0;
    CHECK(vllm_rotary_table_bytes(Model{mamba}).is_zero());
    // It adds to what vLLM holds, on each pipeline stage; SGLang keeps its table in fp32 on CUDA
    // (8,192 x 128 x 4 B = 4 MiB; Llama-3-8B's parameters round to no slack), and a weights
    // figure given (a logged "Model loading took") already holds it.
    const Layout l{llama_3_8b, {.pp = 2}};
    const LoadedWeights v =
        loaded_weights(Engine::vllm, GpuFamily::hopper, llama_3_8b, l, 1, WeightOptions{}, 1 * GiB);
    CHECK(v.loaded == 1 * GiB + 2 * MiB);
    CHECK(v.rotary_table == 2 * MiB);
    CHECK(loaded_weights(Engine::sglang, GpuFamily::hopper, llama_3_8b, l, 1, WeightOptions{},
                         1 * GiB)
              .loaded == 1 * GiB + 4 * MiB);
    CHECK(loaded_weights(Engine::vllm, GpuFamily::hopper, llama_3_8b, l, 1,
                         WeightOptions{.override_bytes = 1 * GiB}, 1 * GiB)
              .loaded == 1 * GiB);
}

TEST_CASE("vLLM: the profile's large all-reduces connect NCCL's NVLS buffers from v0.11",
          "[engine][vllm]") {
    // Llama-3-70B at tp 4 on H100 SXMs (NVSwitch, Hopper), vLLM's profile of 16,384 tokens: its
    // all-reduces carry 16,384 x 8,192 x 2 B = 256 MiB, past symmetric memory's 32 MiB at 4 Hopper
    // GPUs (all_reduce_utils.py), so NCCL's first large collective connects NVLS inside the
    // profile: 16 channels x 2 x 8 steps x 128 KiB x 4 heads = 128 MiB (src/transport/nvls.cc),
    // charged with the profile's increase. At tp 8: 8 heads, 256 MiB.
    const Replica r4{.model = llama_3_70b, .gpu = gpus::h100_sxm, .parallel = {.tp = 4}};
    const EngineMemory m4 = engine_memory(Engine::vllm, r4, r4.layout(), 0);
    CHECK(m4.nccl_nvls == 128 * MiB);
    const Replica r8{.model = llama_3_70b, .gpu = gpus::h100_sxm, .parallel = {.tp = 8}};
    CHECK(engine_memory(Engine::vllm, r8, r8.layout(), 0).nccl_nvls == 256 * MiB);
    // Before v0.11 NCCL connected every algorithm at init (NCCL_CUMEM_ENABLE=0): nothing is
    // charged apart from the communication buffers, and the cache gets the 128 MiB back.
    const EngineMemory v10 = engine_memory(Engine::vllm, r4, r4.layout(), 0, {},
                                           {.vllm = {.charge_nvls_buffers = false}});
    CHECK(v10.nccl_nvls.is_zero());
    CHECK(v10.kv_memory - m4.kv_memory == 128 * MiB);
    // A reserve measured from a log (calibrate.hpp) holds the profile's non-torch increase, the
    // NVLS buffers with it: they are not charged twice.
    const BudgetOptions measured{.reserve = {.activation = 2 * GiB}};
    CHECK(engine_memory(Engine::vllm, r4, r4.layout(), 0, measured).nccl_nvls.is_zero());
    // A profile of 2,048 tokens of Llama-3-8B (2,048 x 4,096 x 2 B = 16 MiB) stays with symmetric
    // memory; A100s have no NVLS (compute capability 8.0); a group past the NVLink domain (tp 16
    // on 8-GPU nodes) is not within one node's NVLS.
    const Replica small{.model = llama_3_8b, .gpu = gpus::h100_sxm, .parallel = {.tp = 4}};
    const BudgetOptions b2k{.reserve = {.max_num_batched_tokens = 2048}};
    CHECK(engine_memory(Engine::vllm, small, small.layout(), 0, b2k).nccl_nvls.is_zero());
    const Replica a100{.model = llama_3_70b, .gpu = gpus::a100_sxm4_80gb, .parallel = {.tp = 4}};
    CHECK(engine_memory(Engine::vllm, a100, a100.layout(), 0).nccl_nvls.is_zero());
    const Replica r16{.model = llama_3_70b, .gpu = gpus::h100_sxm, .parallel = {.tp = 16}};
    CHECK(engine_memory(Engine::vllm, r16, r16.layout(), 0).nccl_nvls.is_zero());
}

TEST_CASE("vLLM through v0.22: the logits all-gather opens PyTorch's NCCL communicator",
          "[engine][vllm]") {
    // NCCL 2.27/2.28 on eight H100 SXMs (18 NVLinks into NVSwitches each). The ring the gather
    // connects: src/graph/search.cc finds 6 channels, ncclTopoDupChannels makes 12 and
    // connect.cc's ncclTopoPostset 24. A channel's send side is the 4 MiB SIMPLE buffer behind a
    // 4 KiB header, 4,198,400 B, rounded up to CUDA_IPC_MIN (2 MiB): 6 MiB; its receive side is
    // LL128's 120 x 640 x 8 x 8 B = 4,915,200 B and LL's 8 x 512 x 8 x 16 B = 524,288 B behind
    // the same header, 5,443,584 B, rounded: 6 MiB (src/transport/p2p.cc). 24 x 12 MiB = 288 MiB.
    // The communicator's init (PyTorch runs ncclCommInitRank at the first collective): 2 (device
    // communicator and rank map) + 3 x 32 channels + 16 NVLS channels + 1 NVLS credits = 115 cuMem
    // allocations of 2 MiB = 230 MiB. 288 + 230 = 518 MiB = 518 x 1,048,576 B = 543,162,368 B.
    CHECK(nccl_cumem_rounded(4 * KiB + 4 * MiB) == 6 * MiB);
    CHECK(nccl_cumem_rounded(Bytes::exactly(4'096 + 4'915'200 + 524'288)) == 6 * MiB);
    CHECK(vllm_logits_gather_communicator_bytes(gpus::h100_sxm, 8).count() == 543'162'368ULL);
    const Replica r8{.model = llama_3_70b, .gpu = gpus::h100_sxm, .parallel = {.tp = 8}};
    const VllmOptions v20{.charge_logits_gather_communicator = true};
    const EngineMemory m20 = engine_memory(Engine::vllm, r8, r8.layout(), 0, {}, {.vllm = v20});
    CHECK(m20.torch_nccl_communicator.count() == 543'162'368ULL);
    // The newest release gathers through pynccl (vLLM PR #40996): nothing, and the cache gets the
    // 518 MiB back.
    const EngineMemory now = engine_memory(Engine::vllm, r8, r8.layout(), 0);
    CHECK(now.torch_nccl_communicator.is_zero());
    CHECK(now.kv_memory - m20.kv_memory == 518 * MiB);
    // The same at tp 2 and tp 4 (the ring's channels come from each GPU's 18 NVLinks, the init's
    // from NCCL's constants) and on H200s; nothing at tp 1 (no gather), at tp 16 (two nodes), on
    // an H100 NVL pair, A100s or B200s (channel counts not derived), nor from a measured profile,
    // whose non-torch increase holds it.
    for (const std::uint32_t tp : {2U, 4U}) {
        const Replica r{.model = llama_3_70b, .gpu = gpus::h200_sxm, .parallel = {.tp = tp}};
        CHECK(engine_memory(Engine::vllm, r, r.layout(), 0, {}, {.vllm = v20})
                  .torch_nccl_communicator == 518 * MiB);
    }
    const auto charged = [&](const GpuSpec& g, std::uint32_t tp, BudgetOptions b = {}) {
        const Replica r{.model = llama_3_70b, .gpu = g, .parallel = {.tp = tp}};
        return engine_memory(Engine::vllm, r, r.layout(), 0, b, {.vllm = v20})
            .torch_nccl_communicator;
    };
    CHECK(charged(gpus::h100_sxm, 1).is_zero());
    CHECK(charged(gpus::h100_sxm, 16).is_zero());
    CHECK(charged(gpus::h100_nvl, 2).is_zero());
    CHECK(charged(gpus::a100_sxm4_80gb, 8).is_zero());
    CHECK(charged(gpus::b200, 8).is_zero());
    CHECK(charged(gpus::h100_sxm, 8, {.reserve = {.activation = 2 * GiB}}).is_zero());
    // Under pipeline parallelism only the last stage computes the logits and gathers them.
    const Replica pp2{.model = llama_3_70b, .gpu = gpus::h100_sxm, .parallel = {.tp = 4, .pp = 2}};
    CHECK(engine_memory(Engine::vllm, pp2, pp2.layout(), 0, {}, {.vllm = v20})
              .torch_nccl_communicator.is_zero());
    CHECK(engine_memory(Engine::vllm, pp2, pp2.layout(), 1, {}, {.vllm = v20})
              .torch_nccl_communicator == 518 * MiB);
}

TEST_CASE("vLLM: the profile allocates FlashInfer's all-reduce fusion workspace at tp > 1",
          "[engine][vllm]") {
    // vLLM 0.19 on H100 SXMs: the fusion pass fuses all-reduces up to 64 MiB at tp 2
    // (FI_ALLREDUCE_FUSION_MAX_SIZE_MB, allreduce_rms_fusion.py), 64 MiB / (4,096 x 2 B) = 8,192
    // tokens of Llama-3.1-8B, so FlashInfer's three buffers hold 2 x 8,192 x 4,096 x 2 B = 128
    // MiB, 2 x 256 x 4 B of flags and 3 x 128 = 384 MiB of Lamport buffers
    // (flashinfer/comm/trtllm_ar.py). FlashInfer 0.6.6 to 0.6.8 rounds each to the multicast
    // granularity, 512 MiB on Hopper (flashinfer/comm/mnnvl.py, SymmDeviceMemory): 1.5 GiB.
    const VllmOptions v19{.fusion_workspace = vllm_fusion_workspace_rounding({0, 19}),
                          .fusion_single_stage_only = vllm_fusion_needs_single_stage({0, 19})};
    const BudgetOptions b8k{.reserve = {.max_num_batched_tokens = 8192}};
    const Replica tp2{.model = llama_3_8b, .gpu = gpus::h100_sxm, .parallel = {.tp = 2}};
    const EngineMemory m19 = engine_memory(Engine::vllm, tp2, tp2.layout(), 0, b8k, {.vllm = v19});
    CHECK(m19.fusion_workspace == 1536 * MiB);
    // At tp 4 the pass stops at 2 MiB: 2 MiB / 8 KiB = 256 tokens, buffers of 8 MiB, 4 KiB and 24
    // MiB, each 512 MiB once rounded: the same 1.5 GiB, as the logs' non-torch increase is the
    // same at tp 2 and tp 4.
    const Replica tp4{.model = llama_3_8b, .gpu = gpus::h100_sxm, .parallel = {.tp = 4}};
    CHECK(engine_memory(Engine::vllm, tp4, tp4.layout(), 0, b8k, {.vllm = v19}).fusion_workspace ==
          1536 * MiB);
    // From FlashInfer 0.6.10 (vLLM v0.22) each buffer and its signal pad is rounded to 2 MiB
    // alone: 130 + 2 + 386 MiB at tp 2; the cache gets back 1,536 - 518 MiB.
    const EngineMemory m22 = engine_memory(Engine::vllm, tp2, tp2.layout(), 0, b8k);
    CHECK(m22.fusion_workspace == 518 * MiB);
    CHECK(m22.kv_memory - m19.kv_memory == 1018 * MiB);
    // No pass on one GPU; none under pipeline parallelism in v0.19 (enable_allreduce_rms_fusion
    // asks pp 1); none before v0.17, nor without FlashInfer; none at tp 2 on an NVLink pair
    // (H100 NVL), which has no multicast for SymmDeviceMemory; none from a measured profile,
    // whose non-torch increase holds it.
    const Replica tp1{.model = llama_3_8b, .gpu = gpus::h100_sxm};
    CHECK(engine_memory(Engine::vllm, tp1, tp1.layout(), 0, b8k, {.vllm = v19})
              .fusion_workspace.is_zero());
    const Replica pp2{.model = llama_3_8b, .gpu = gpus::h100_sxm, .parallel = {.tp = 2, .pp = 2}};
    CHECK(engine_memory(Engine::vllm, pp2, pp2.layout(), 0, b8k, {.vllm = v19})
              .fusion_workspace.is_zero());
    CHECK(engine_memory(Engine::vllm, tp2, tp2.layout(), 0, b8k,
                        {.vllm = {.fusion_workspace = vllm_fusion_workspace_rounding({0, 16})}})
              .fusion_workspace.is_zero());
    const Replica nvl{.model = llama_3_8b, .gpu = gpus::h100_nvl, .parallel = {.tp = 2}};
    CHECK(engine_memory(Engine::vllm, nvl, nvl.layout(), 0, b8k, {.vllm = v19})
              .fusion_workspace.is_zero());
    const BudgetOptions measured{.reserve = {.activation = 2 * GiB}};
    CHECK(engine_memory(Engine::vllm, tp2, tp2.layout(), 0, measured, {.vllm = v19})
              .fusion_workspace.is_zero());
}

TEST_CASE("vLLM: PyTorch's cuBLAS workspace is in the profile's torch peak", "[engine][vllm]") {
    // PyTorch takes the workspace from its caching allocator at the first GEMM
    // (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize): 4,096 KiB x 8 =
    // 33,554,432 B on Hopper; ":4096:2:16:8", 2 x 4,096 KiB + 8 x 16 KiB = 8,519,680 B on Ampere
    // and Ada (the size PyTorch 2.0's warning prints, pytorch issue #103499).
    CHECK(cublas_workspace_bytes(gpus::h100_sxm).count() == 33'554'432ULL);
    CHECK(cublas_workspace_bytes(gpus::a100_sxm4_80gb).count() == 8'519'680ULL);
    // Llama-3.1-8B on an H100 at 8,192 tokens and 1,024 rows (test_budget.cpp): the sorting
    // sampler's peak, 5,057,806,336 B, and the workspace make 5,091,360,768 B (4.742 GiB) against
    // the 4.76 GiB llm-d's v0.13/v0.14 run measured (0.4 % under, 1.0 % without it); Triton's,
    // 1,973,506,048 B, make 2,007,060,480 B (1.869 GiB) against the 1.89 GiB of the v0.19.0 run
    // (1.1 % under, 2.8 % without it).
    const Layout l{llama_3_8b, {}};
    const Bytes ws = cublas_workspace_bytes(gpus::h100_sxm);
    const Bytes sorts =
        activation_peak(llama_3_8b, l, 0, 8192, 1024, {}, VllmSampler::sorts).total();
    CHECK((sorts + ws).count() == 5'091'360'768ULL);
    CHECK((sorts + ws).in(GiB) == Approx(4.76).epsilon(0.005));
    const Bytes triton = activation_peak(llama_3_8b, l, 0, 8192, 1024, {}, VllmSampler::triton,
                                         gpus::h100_sxm.compute_units)
                             .total();
    CHECK((triton + ws).count() == 2'007'060'480ULL);
    CHECK((triton + ws).in(GiB) == Approx(1.89).epsilon(0.015));
    // vLLM charges it with the modelled peak, and the cache gives it up.
    const Replica r{.model = llama_3_8b, .gpu = gpus::h100_sxm};
    const EngineMemory m = engine_memory(Engine::vllm, r, r.layout(), 0);
    CHECK(m.cublas_workspace == 32 * MiB);
    const Replica a100{.model = llama_3_8b, .gpu = gpus::a100_sxm4_80gb};
    CHECK(engine_memory(Engine::vllm, a100, a100.layout(), 0).cublas_workspace.count() ==
          8'519'680ULL);
    // A measured torch peak holds it already; a GPU of no stated architecture gets none; SGLang
    // sizes its pool before any forward, so its workspace lives outside the fraction like its
    // activations.
    const BudgetOptions measured{.reserve = {.activation = 2 * GiB}};
    CHECK(engine_memory(Engine::vllm, r, r.layout(), 0, measured).cublas_workspace.is_zero());
    GpuSpec unstated = gpus::h100_sxm;
    unstated.arch = GpuArch::unknown;
    const Replica u{.model = llama_3_8b, .gpu = unstated};
    CHECK(engine_memory(Engine::vllm, u, u.layout(), 0).cublas_workspace.is_zero());
    CHECK(engine_memory(Engine::vllm, u, u.layout(), 0).kv_memory - m.kv_memory == 32 * MiB);
    CHECK(engine_memory(Engine::sglang, r, r.layout(), 0).cublas_workspace.is_zero());
}

// ---- SGLang --------------------------------------------------------------------------------

TEST_CASE("SGLang: the default mem_fraction_static from its GPU-memory table", "[engine][sglang]") {
    // server_args.py: reserved MiB = 512 + max(chunked_prefill, 2048) x 1.5 + cuda_graph_max_bs x 2
    // + tp x pp / 8 x 1024, at least 10,240 above 60 GiB; fraction = round((mem - reserved) / mem,
    // 3). H100 (81,559 MiB): chunked prefill 8,192, graph batch 256 below tp 4, 512 from tp 4.
    //   tp 1: 512 + 12,288 + 512 + 128 = 13,440 -> 68,119 / 81,559 = 0.83521 -> 0.835
    //   tp 4: 512 + 12,288 + 1,024 + 512 = 14,336 -> 0.82422 -> 0.824
    //   tp 8: 512 + 12,288 + 1,024 + 1,024 = 14,848 -> 0.81795 -> 0.818
    const GpuSpec h100 = h100_sxm();
    const SglangMemFraction f1 = sglang_mem_fraction(h100, 1, 1);
    CHECK(f1.gpu_memory_mib == 81'559);
    CHECK(f1.chunked_prefill_size == 8192);
    CHECK(f1.cuda_graph_max_bs == 256);
    CHECK(f1.reserved_mib == 13'440.0);
    CHECK(f1.fraction == 0.835);
    CHECK(sglang_mem_fraction(h100, 4, 1).fraction == 0.824);
    CHECK(sglang_mem_fraction(h100, 8, 1).fraction == 0.818);
    // A100-80GB (81,920 MiB), tp 1: (81,920 - 13,440) / 81,920 = 0.83594 -> 0.836.
    CHECK(sglang_mem_fraction(a100_sxm4_80gb(), 1, 1).fraction == 0.836);
}

TEST_CASE("SGLang: PR #7054's default mem_fraction_static, 0.4.8 to 0.5.2", "[engine][sglang]") {
    // server_args.py of 0.4.7.post1 to 0.5.2 (SGLang PR #7054): with p = tp x pp and G in MiB,
    // reserved = (9.5 + p / 2) GiB below 90 GiB, (12 + p / 2) GiB below 160 GiB, 32 GiB above, 4
    // GiB more with DP attention; fraction = round((G - reserved) / G, 3).
    //   H100 (81,559 MiB), tp 1: 10,240 -> 71,319 / 81,559 = 0.874446 -> 0.874
    //   H100, tp 8: 13,824 -> 67,735 / 81,559 = 0.830503 -> 0.831 (tp 4 x pp 2 alike)
    //   H100, tp 8, DP attention: 17,920 -> 63,639 / 81,559 = 0.780282 -> 0.780
    //   H200 (143,771 MiB), tp 8: 16,384 -> 127,387 / 143,771 = 0.886041 -> 0.886
    //   MI300X (196,592 MiB), tp 8: 32,768 -> 163,824 / 196,592 = 0.833320 -> 0.833
    const GpuSpec h100 = h100_sxm();
    const SglangReserveFraction f1 = sglang_reserve_fraction(h100, 1, 1);
    CHECK(f1.gpu_memory_mib == 81'559);
    CHECK(f1.reserved_mib == 10'240.0);
    CHECK(f1.fraction == 0.874);
    CHECK(sglang_reserve_fraction(h100, 8, 1).reserved_mib == 13'824.0);
    CHECK(sglang_reserve_fraction(h100, 8, 1).fraction == 0.831);
    CHECK(sglang_reserve_fraction(h100, 4, 2).fraction == 0.831);
    CHECK(sglang_reserve_fraction(h100, 8, 1, 8).reserved_mib == 17'920.0);
    CHECK(sglang_reserve_fraction(h100, 8, 1, 8).fraction == 0.780);
    CHECK(sglang_reserve_fraction(gpus::h200_sxm, 8, 1).gpu_memory_mib == 143'771);
    CHECK(sglang_reserve_fraction(gpus::h200_sxm, 8, 1).fraction == 0.886);
    CHECK(sglang_reserve_fraction(gpus::mi300x, 8, 1).gpu_memory_mib == 196'592);
    CHECK(sglang_reserve_fraction(gpus::mi300x, 8, 1).reserved_mib == 32'768.0);
    CHECK(sglang_reserve_fraction(gpus::mi300x, 8, 1).fraction == 0.833);
    // The release picks it: 0.4.8 and 0.5.2 by the reserve, 0.4.6 by tp, 0.5.3 by the memory
    // table (0.818 at tp 8 on an H100).
    SglangOptions v046{}, v048{}, v052{}, v053{};
    v046.release = {0, 4, 6};
    v048.release = {0, 4, 8};
    v052.release = {0, 5, 2};
    v053.release = {0, 5, 3};
    CHECK(sglang_default_fraction(h100, 8, 1, v046) == 0.81);
    CHECK(sglang_default_fraction(h100, 8, 1, v048) == 0.831);
    CHECK(sglang_default_fraction(h100, 8, 1, v052) == 0.831);
    CHECK(sglang_default_fraction(h100, 8, 1, v052, 8) == 0.780);
    CHECK(sglang_default_fraction(h100, 8, 1, v053) == 0.818);
}

TEST_CASE("SGLang: the rotary cos/sin table is fp32 on CUDA, the model dtype elsewhere",
          "[engine][sglang]") {
    // python/sglang/srt/layers/rotary_embedding.py, RotaryEmbedding.__init__: the table is cast
    // to the model dtype only off CUDA. Llama-3.1-8B's 131,072 positions x 128 x 4 B = 64 MiB on
    // CUDA, twice vLLM's 32 MiB; on ROCm 131,072 x 128 x 2 B = 32 MiB.
    ModelConfig llama_3_1 = llama_3_8b.config();
    llama_3_1.max_position_embeddings = 131'072;
    CHECK(sglang_rotary_table_bytes(Model{llama_3_1}, true) == 64 * MiB);
    CHECK(sglang_rotary_table_bytes(Model{llama_3_1}, false) == 32 * MiB);
    CHECK(sglang_rotary_table_bytes(Model{llama_3_1}, false) ==
          vllm_rotary_table_bytes(Model{llama_3_1}));
    // MLA rotates qk_rope_head_dim (64): DeepSeek-V3 on CUDA, 163,840 x 64 x 4 = 40 MiB.
    CHECK(sglang_rotary_table_bytes(deepseek_v3, true) == 40 * MiB);
}

TEST_CASE("SGLang: the CUDA context grows with the SMs", "[engine][sglang]") {
    // The line through llama.cpp PR #23604's two cudaMemGetInfo contexts: 107 MiB at 34 SMs
    // (RTX 4060 Ti), 555 MiB at 188 SMs (RTX PRO 6000 Blackwell): (623 + 224 n) / 77 MiB.
    GpuSpec g = gpus::l4;
    g.compute_units = 34;
    CHECK(sglang_cuda_context(g) == 107 * MiB);
    g.compute_units = 188;
    CHECK(sglang_cuda_context(g) == 555 * MiB);
    // L4, 58 SMs: 13,615 MiB / 77 = 185,407,301 B (0.1727 GiB).
    CHECK(gpus::l4.compute_units == 58);
    CHECK(sglang_cuda_context(gpus::l4)->count() == 185'407'301ULL);
    // H100 SXM, 132 SMs: 30,191 MiB / 77 = 411,137,117 B (0.3829 GiB); SGLang issue #485 logged
    // 78.81 GiB free of 79.19 on H100s before its groups, 0.38 GiB taken.
    CHECK(gpus::h100_sxm.compute_units == 132);
    CHECK(sglang_cuda_context(gpus::h100_sxm)->count() == 411'137'117ULL);
    CHECK(sglang_cuda_context(gpus::h100_sxm)->in(GiB) == Approx(79.19 - 78.81).margin(0.005));
    // No SM count, or a ROCm GPU: no figure (the reserve's default stands).
    g.compute_units = 0;
    CHECK(!sglang_cuda_context(g));
    GpuSpec mi = gpus::mi355x;
    mi.compute_units = 256;
    CHECK(!sglang_cuda_context(mi));
}

TEST_CASE("SGLang: the caching allocator rounds each parameter of 10 MiB or more to 2 MiB",
          "[engine][sglang]") {
    // c10/cuda/CUDACachingAllocator.cpp, get_allocation_size: below 10 MiB blocks share segments.
    CHECK(detail::torch_segment_slack(10 * MiB - Bytes::exactly(1)).is_zero());
    CHECK(detail::torch_segment_slack(12 * MiB).is_zero());
    // 12.5 MiB takes a 14 MiB segment; 10 MiB + 1 B is first rounded to 512 B, then to 12 MiB.
    CHECK(detail::torch_segment_slack(Bytes::exactly(13'107'200)) == Bytes::exactly(1'572'864));
    CHECK(detail::torch_segment_slack(10 * MiB + Bytes::exactly(1)) == 2 * MiB - Bytes::exactly(1));
    // QwQ-32B (Qwen2.5-32B's sizes: 64 layers, 40 heads and 8 KV heads of 128, hidden 5,120,
    // intermediate 27,648, vocabulary 152,064, q/k/v biases) at tp 4, as SGLang fuses it:
    // qkv_proj (1,280 + 2 x 256) x 5,120 x 2 B = 17.5 MiB in 18; o_proj 5,120 x 1,280 x 2 B =
    // 12.5 MiB in 14; gate_up_proj 2 x 6,912 x 5,120 x 2 B = 135 MiB in 136; down_proj 67.5 MiB in
    // 68: 3.5 MiB a layer, 224 MiB; each vocabulary table 38,016 x 5,120 x 2 B = 371.25 MiB in 372.
    // 225.5 MiB in all. Unfused, q (12.5 MiB) alone would be rounded, k and v would share segments.
    ModelConfig qwq = qwen2_5_72b.config();
    qwq.layers = LayerStack::uniform(64, full_attention(8, 128));
    qwq.num_heads = 40;
    qwq.hidden_size = 5120;
    qwq.intermediate_size = 27648;
    const Model m{qwq};
    const Layout l{m, {.tp = 4}};
    CHECK(sglang_allocator_slack(m, l, 0, {}) == Bytes::exactly(225 * MiB.bytes + MiB.bytes / 2));
    // Its load on L4s adds the fp32 rotary table, 131,072 x 128 x 4 B = 64 MiB: 289.5 MiB over the
    // checkpoint's 15.2578 GiB, 15.5405 GiB, where the QwQ-32B log (tests/data/startup_logs)
    // prints "mem usage=15.54 GB". On ROCm the table is bf16.
    const Bytes stored = weight_bytes_per_rank(m, l, 0, {}).total();
    const LoadedWeights cuda =
        sglang_loaded_weights(gpu_family(gpus::l4), m, l, 0, {}, stored, gpus::l4.arch);
    CHECK(cuda.rotary_table == 64 * MiB);
    CHECK(cuda.allocator_slack == sglang_allocator_slack(m, l, 0, {}));
    CHECK(cuda.loaded - stored == Bytes::exactly(289 * MiB.bytes + MiB.bytes / 2));
    CHECK(cuda.loaded.in(GiB) == Approx(15.54).margin(0.005));
    const LoadedWeights rocm =
        sglang_loaded_weights(std::nullopt, m, l, 0, {}, stored, GpuArch::cdna4);
    CHECK(rocm.rotary_table == 32 * MiB);
    // A given override is the logged figure: nothing is added.
    const LoadedWeights given = sglang_loaded_weights(
        gpu_family(gpus::l4), m, l, 0, {.override_bytes = 15 * GiB}, 15 * GiB, gpus::l4.arch);
    CHECK(given.loaded == 15 * GiB);
}

TEST_CASE("SGLang: Marlin's MXFP4 MoE keeps the block-FP8 loader's float32 scales",
          "[engine][sglang]") {
    // DeepSeek-V4-Pro (hidden 7,168, 384 experts of moe_intermediate 3,072; FP8 with MXFP4 experts)
    // at tp 8 on H200s: every GPU holds all 384 experts of each MoE layer at 3,072 / 8 = 384 wide,
    // a multiple of 64, so Marlin pads nothing and its 4-bit weights and e8m0 scales are the
    // checkpoint's bytes. Kept beside them: the loader's w13/w2_weight_scale_inv in float32, per
    // expert (2 x 384 x 7,168 / 32 + 7,168 x 384 / 32) = 172,032 + 86,016 = 258,048 scales x 4 B =
    // 1,032,192 B.
    const Model v4 = kvplan::testing::bundled("deepseek-v4-pro");
    const Layout l{v4, {.tp = 8}};
    const WeightOptions w = checkpoint_weights(v4);
    REQUIRE(w.format == WeightFormat::fp8);
    REQUIRE(w.expert_format == WeightFormat::mxfp4);
    const Bytes stored = weight_bytes_per_rank(v4, l, 0, w).total();
    const auto family = gpu_family(gpus::h200_sxm);
    const LoadedWeights marlin = sglang_kernel_weights(
        family, v4, l, 0, w, stored, gpus::h200_sxm.arch, SglangMoeRunnerBackend::marlin);
    CHECK(marlin.kernel == WeightKernel::mxfp4_marlin);
    CHECK(marlin.intermediate == 384);
    CHECK(marlin.padded_intermediate == 384);
    CHECK(marlin.hidden == 7168);
    // 61 MoE layers x 384 experts = 23,424 experts: 24,178,065,408 B (22.52 GiB) more a GPU, which
    // takes the start logged at 125.65 GiB (tests/data/startup_logs) to 124.78 GiB.
    CHECK(marlin.experts == 61 * 384);
    CHECK(marlin.loaded - stored == Bytes::exactly(24'178'065'408ULL));
    // The same start under "auto" holds them in the Triton kernels' layouts: not Marlin's.
    const LoadedWeights automatic =
        sglang_kernel_weights(family, v4, l, 0, w, stored, gpus::h200_sxm.arch);
    CHECK(automatic.kernel == WeightKernel::mxfp4_triton);
    // The option reaches the load through loaded_weights, and not vLLM's.
    CHECK(loaded_weights(Engine::sglang, family, v4, l, 0, w, stored, gpus::h200_sxm.arch,
                         vllm_newest_release, SglangMoeRunnerBackend::marlin)
                  .loaded -
              sglang_loaded_weights(family, v4, l, 0, w, stored, gpus::h200_sxm.arch).loaded ==
          marlin.loaded - automatic.loaded);
    CHECK(loaded_weights(Engine::vllm, family, v4, l, 0, w, stored, gpus::h200_sxm.arch,
                         vllm_newest_release, SglangMoeRunnerBackend::marlin)
              .loaded ==
          loaded_weights(Engine::vllm, family, v4, l, 0, w, stored, gpus::h200_sxm.arch).loaded);
    // An MXFP4 checkpoint (Mxfp4Config, gpt-oss) names its scales w13/w2_weight_scale, which the
    // repack replaces: only the padding grows. gpt-oss-120b at tp 2: hidden 2,880 is not a
    // multiple of 128, so the intermediate 2,880 / 2 = 1,440 is padded to 128, 1,536: 3 x 2,880 x
    // 96 = 829,440 weights more at 4.25 bits = 440,640 B, and gate/up's bf16 bias 2 x 96 x 2 B =
    // 384 B: 441,024 B an expert, 36 layers x 128 experts.
    const Layout l2{gpt_oss_120b, {.tp = 2}};
    WeightOptions mx{};
    mx.format = WeightFormat::mxfp4;
    const Bytes oss = weight_bytes_per_rank(gpt_oss_120b, l2, 0, mx).total();
    const LoadedWeights g = sglang_kernel_weights(
        family, gpt_oss_120b, l2, 0, mx, oss, gpus::h200_sxm.arch, SglangMoeRunnerBackend::marlin);
    CHECK(g.padded_intermediate == 1536);
    CHECK(g.experts == 36 * 128);
    CHECK(g.loaded - oss == Bytes::exactly(441'024ULL * 36 * 128));
    // On ROCm there is no Marlin MoE: as without the option.
    CHECK(sglang_kernel_weights(std::nullopt, v4, l, 0, w, stored, GpuArch::cdna4,
                                SglangMoeRunnerBackend::marlin)
              .loaded == stored);
    // The spellings --moe-runner-backend takes.
    CHECK(parse_sglang_moe_runner_backend("marlin") == SglangMoeRunnerBackend::marlin);
    CHECK(parse_sglang_moe_runner_backend("auto") == SglangMoeRunnerBackend::automatic);
    CHECK(name(SglangMoeRunnerBackend::automatic) == "auto");
    CHECK(!parse_sglang_moe_runner_backend("triton"));
}

TEST_CASE("vLLM holds DeepSeek-V4's tid2eid tables in int32, half the checkpoint's int64",
          "[engine][deepseek_v4]") {
    // vllm/model_executor/models/deepseek_v4.py (DeepseekV4MoE): gate.tid2eid of each of the
    // num_hash_layers = 3 first layers is vocab x num_experts_per_tok = 129,280 x 6, replicated on
    // every rank, built torch.int32 (int64 only under the deep_gemm_mega_moe backend); the
    // checkpoint stores it int64. 3 x 129,280 x 6 x (8 - 4) B = 9,308,160 B less on each GPU of
    // the stage holding layers 0-2.
    const Model v4 = kvplan::testing::bundled("deepseek-v4-flash");
    REQUIRE(v4.config().moe.hash_layers == 3);
    constexpr std::uint64_t narrowed = 3ULL * 129'280 * 6 * 4;
    static_assert(narrowed == 9'308'160ULL);
    const Layout l{v4, {.tp = 4}};
    const WeightOptions w = checkpoint_weights(v4);
    const Bytes stored = weight_bytes_per_rank(v4, l, 0, w).total();
    const auto family = gpu_family(gpus::b200);
    const LoadedWeights lw =
        loaded_weights(Engine::vllm, family, v4, l, 0, w, stored, gpus::b200.arch);
    CHECK(lw.narrowed.count() == narrowed);
    // On B200 FlashInfer's MXFP4 kernel pads nothing here (hidden 4,096 and 2,048 / 4 = 512 are
    // multiples of 256), so the load is the checkpoint, the rotary table, less the tables' halves.
    CHECK(lw.loaded + lw.narrowed == stored + lw.rotary_table);
    CHECK(vllm_hash_table_narrowing(v4, l, 0).count() == narrowed);
    // The per-group split takes it from the router, whose tables they are.
    const StageWeights st = weight_bytes_per_stage(v4, l, w);
    const StageWeights loaded = loaded_stage_weights(Engine::vllm, gpus::b200, v4, l, w, st);
    CHECK((st[0].router - loaded[0].router).count() == narrowed);
    CHECK(loaded[0].routed_experts == st[0].routed_experts);
    CHECK(loaded[0].total() == lw.loaded);
    // Under pipeline parallelism only the first stage holds hash layers.
    const Layout pp{v4, {.tp = 2, .pp = 2}};
    CHECK(vllm_hash_table_narrowing(v4, pp, 0).count() == narrowed);
    CHECK(vllm_hash_table_narrowing(v4, pp, 1).is_zero());
    // SGLang's rules are its own, and a model without hash layers has no tables.
    CHECK(loaded_weights(Engine::sglang, family, v4, l, 0, w, stored, gpus::b200.arch)
              .narrowed.is_zero());
    CHECK(vllm_hash_table_narrowing(kvplan::testing::bundled("deepseek-v3"),
                                    Layout{kvplan::testing::bundled("deepseek-v3"), {.tp = 8}}, 0)
              .is_zero());
}

TEST_CASE("SGLang: NCCL's ring and tree buffers on a PCIe node past two GPUs", "[engine][sglang]") {
    // Two communicators x 2 channels x 2 receiving connections x (4 MiB + 4,915,200 B + 524,288 B
    // = 9.1875 MiB) = 73.5 MiB.
    CHECK(sglang_pcie_nccl_bytes(gpus::l4, 4) == Bytes::exactly(73 * MiB.bytes + MiB.bytes / 2));
    CHECK(sglang_pcie_nccl_bytes(gpus::l4, 8) == sglang_pcie_nccl_bytes(gpus::l4, 4));
    // Two GPUs keep the custom all-reduce (the reserve's buffers stand); NVLink nodes too.
    CHECK(sglang_pcie_nccl_bytes(gpus::l4, 2).is_zero());
    CHECK(sglang_pcie_nccl_bytes(gpus::h100_sxm, 8).is_zero());
    // QwQ-32B on four L4s: 21.95 GiB (the runtime's total) - 0.173 (the context of 58 SMs) - 0.072
    // = 21.71 GiB free before the weights, where the log prints "avail mem=21.63 GB".
    const Bytes free = gpus::l4.memory_total - *sglang_cuda_context(gpus::l4) -
                       sglang_pcie_nccl_bytes(gpus::l4, 4);
    CHECK(free.in(GiB) == Approx(21.63).margin(0.09));
}

TEST_CASE("SGLang: the quick all-reduce's IPC buffer on ROCm", "[engine][sglang]") {
    // DeviceComms::init (sgl-kernel quick_all_reduce_hip.h): 2 x the 2 GiB maximum problem, and
    // 2 x tp x kMaxNumBlocks (304 x 4 = 1,216) uint32 flags: at tp 8, 77,824 B (76 KiB); at tp 2,
    // 19,456 B.
    CHECK(sglang_rocm_quick_reduce_bytes(gpus::mi355x, 8) == 4 * GiB + Bytes::exactly(77'824));
    CHECK(sglang_rocm_quick_reduce_bytes(gpus::mi300x, 4) == 4 * GiB + Bytes::exactly(38'912));
    CHECK(sglang_rocm_quick_reduce_bytes(gpus::mi355x, 2) == 4 * GiB + Bytes::exactly(19'456));
    // None on one GPU, at a world size it does not support, on CUDA, or where it does not start.
    CHECK(sglang_rocm_quick_reduce_bytes(gpus::mi355x, 1).is_zero());
    CHECK(sglang_rocm_quick_reduce_bytes(gpus::mi355x, 6).is_zero());
    CHECK(sglang_rocm_quick_reduce_bytes(gpus::h100_sxm, 8).is_zero());
    CHECK(sglang_rocm_quick_reduce_bytes(gpus::mi355x, 8, {.rocm_quick_reduce = false}).is_zero());
    // Past two GPUs it needs them fully connected over xGMI.
    GpuSpec pcie = gpus::mi300x;
    pcie.scale_up_bandwidth = BytesPerSecond{};
    CHECK(sglang_rocm_quick_reduce_bytes(pcie, 4).is_zero());
    CHECK(sglang_rocm_quick_reduce_bytes(pcie, 2) == 4 * GiB + Bytes::exactly(19'456));
    // SGLang's pool takes mem_fraction_static of the memory free once the groups hold it: at tp 8
    // on MI355Xs, 0.9 x (4 GiB + 76 KiB) less than without it.
    const Replica r{.model = llama_3_70b, .gpu = gpus::mi355x, .parallel = {.tp = 8}};
    EngineOptions on{}, off{};
    on.sglang.mem_fraction_static = 0.9;
    off.sglang.mem_fraction_static = 0.9;
    off.sglang.rocm_quick_reduce = false;
    const EngineMemory with = engine_memory(Engine::sglang, r, r.layout(), 0, {}, on);
    const EngineMemory without = engine_memory(Engine::sglang, r, r.layout(), 0, {}, off);
    CHECK(with.comm_buffers - without.comm_buffers == 4 * GiB + Bytes::exactly(77'824));
    CHECK((without.kv_memory - with.kv_memory).in(GiB) == Approx(0.9 * 4.0).margin(0.001));
}

TEST_CASE("SGLang: aiter's custom all-reduce buffers on ROCm follow the release's aiter",
          "[engine][sglang]") {
    // aiter's CustomAllreduce (custom_all_reduce.py): an uncached meta buffer of meta_size()
    // (5,504 B) + max_size (+ 2 x max_size from v0.1.12) in 2 MiB granules, an input buffer of
    // max_size (and an output buffer from v0.1.10.post2 to v0.1.11), 8 MiB of rank_data.
    //   0.5.8  (aiter v0.1.9.post1, 64 MiB):    66 + 64 + 8        = 138 MiB = 144,703,488 B
    //   0.5.9  (v0.1.10.post3, 128 MiB):        130 + 128 + 128 + 8 = 394 MiB = 413,138,944 B
    //   0.5.10 (v0.1.12.post1, 1 GiB):          2,050 + 1,024 + 8  = 3,082 MiB = 3,231,711,232 B
    CHECK(sglang_aiter_all_reduce_bytes(gpus::mi355x, 8, {0, 5, 8}).count() == 144'703'488ULL);
    CHECK(sglang_aiter_all_reduce_bytes(gpus::mi355x, 8, {0, 5, 9}).count() == 413'138'944ULL);
    CHECK(sglang_aiter_all_reduce_bytes(gpus::mi355x, 2, {0, 5, 10}).count() == 3'231'711'232ULL);
    CHECK(sglang_aiter_all_reduce_bytes(gpus::mi300x, 4, sglang_newest_release).count() ==
          3'231'711'232ULL);
    // None on CUDA, on one GPU, at a world size aiter does not take, past two GPUs without a
    // fabric, or for a release outside the table.
    CHECK(sglang_aiter_all_reduce_bytes(gpus::h100_sxm, 8, {0, 5, 12}).is_zero());
    CHECK(sglang_aiter_all_reduce_bytes(gpus::mi355x, 1, {0, 5, 12}).is_zero());
    CHECK(sglang_aiter_all_reduce_bytes(gpus::mi355x, 3, {0, 5, 12}).is_zero());
    GpuSpec pcie = gpus::mi300x;
    pcie.scale_up_bandwidth = BytesPerSecond{};
    CHECK(sglang_aiter_all_reduce_bytes(pcie, 4, {0, 5, 12}).is_zero());
    CHECK(sglang_aiter_all_reduce_bytes(pcie, 2, {0, 5, 12}).count() == 3'231'711'232ULL);
    CHECK(sglang_aiter_all_reduce_bytes(gpus::mi355x, 8, {0, 5, 21}).is_zero());
    // The release's default fraction: the 0.4 line's tp table (0.81 at tp 8), else the memory
    // rule (sglang_mem_fraction: 0.818 at tp 8 on an H100).
    SglangOptions v04{}, v053{};
    v04.release = {0, 4, 0};
    v053.release = {0, 5, 3};
    CHECK(sglang_default_fraction(h100_sxm(), 8, 1, v04) == 0.81);
    CHECK(sglang_default_fraction(h100_sxm(), 1, 1, v04) == 0.88);
    CHECK(sglang_default_fraction(h100_sxm(), 8, 1, v053) == 0.818);
    CHECK(sglang_default_fraction(h100_sxm(), 8, 1) == 0.818);
}

TEST_CASE("SGLang: Qwen3-235B-A22B at tp 4 allocates 367,404 tokens of 8.23 GiB K",
          "[engine][sglang]") {
    // vLLM issue #21348: "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB"
    // (GB there is 2^30 B). Each rank holds 1 of 4 KV heads: a cell is 94 x 1 x (128 + 128) x 2 B
    // = 48,128 B, so the pool memory was in [367,404, 367,405) x 48,128 B. K: (367,404 + 1 padded
    // row) x 94 x 128 x 2 B = 8,841,233,920 B = 8.234 GiB.
    const Layout l{qwen3_235b_a22b, {.tp = 4}};
    const SglangKvPool p = sglang_kv_pool(qwen3_235b_a22b, KvDtype::bf16, l,
                                          Bytes::exactly(367'404ULL * 48'128 + 100));
    CHECK(p.cell_size.count() == 48'128);
    CHECK(p.max_total_num_tokens == 367'404);
    CHECK(p.k_size.count() == 8'841'233'920ULL);
    CHECK(p.v_size == p.k_size);
    CHECK(p.k_size.in(GiB) == Approx(8.23).margin(0.005));
}

TEST_CASE("SGLang: the fraction applies to memory free before load, weights come out of it",
          "[engine][sglang]") {
    // Llama-3-8B on an H100: free before load = 85,520,809,984 - 734,003,200 (CUDA context) =
    // 84,786,806,784 B; x 0.835 = 70,796,983,664 B; less 16,060,522,496 B of weights and SGLang's
    // fp32 rotary table, 8,192 x 128 x 4 B = 4 MiB (its parameters are whole multiples of 2 MiB):
    // 54,732,266,864 B. A cell is 32 x 8 x 256 x 2 B = 131,072 B: 417,574 tokens.
    const Replica r{.model = llama_3_8b, .gpu = h100_sxm()};
    const EngineReport rep = engine_report(Engine::sglang, r, 8192);
    const EngineMemory& m = rep.memory[0];
    CHECK(m.fraction == 0.835);
    CHECK(m.fraction_base.count() == 84'786'806'784ULL);
    CHECK(m.weights.count() == 16'060'522'496ULL + 4 * MiB.bytes);
    CHECK(m.kv_memory.count() == 54'732'266'864ULL);
    CHECK(rep.sglang.max_total_num_tokens == 417'574);
    // 417,574 / 8,192 = 50.97 sequences.
    CHECK(rep.summary.max_concurrency == Approx(417'574.0 / 8192.0));
}

// ---- TensorRT-LLM --------------------------------------------------------------------------

TEST_CASE("TensorRT-LLM: Llama-3.1-8B with fp8 KV allocates 8,219 blocks of 32 tokens",
          "[engine][trtllm]") {
    // TensorRT-LLM issue #4275 (0.19, RTX 5090): "available: 17.83 GiB", "Number of blocks in KV
    // cache primary pool: 8219", "Number of tokens per block: 32.", "Allocated 16.05 GiB for max
    // tokens in paged KV cache (263008)". 32 layers x 8 heads x 256 x 1 B = 65,536 B per token.
    // 8,219 blocks need more than 262,976 tokens: 0.9 x free >= 262,977 x 65,536 B, i.e. free >=
    // 17.8343 GiB (and < 17.835 to print 17.83). Take 17.8345 GiB.
    const Model llama_3_1_8b = llama_3_8b;  // same shapes
    const Bytes free = round_to_bytes(17.8345, GiB);
    const TrtllmKvCache c = trtllm_kv_cache(
        llama_3_1_8b, KvDtype::fp8_e4m3, Layout{llama_3_1_8b, {}}, detail::scale_down(free, 0.9));
    REQUIRE(c.num_pools == 1);
    CHECK(c.pools[0].bytes_per_token.count() == 65'536);
    CHECK(c.pools[0].blocks == 8219);
    CHECK(c.pools[0].tokens == 263'008);
    // 263,008 x 65,536 B = 17,236,492,288 B = 16.0527 GiB.
    CHECK(c.pools[0].allocated.count() == 17'236'492'288ULL);
}

TEST_CASE("TensorRT-LLM: gpt-oss-120b sizes every layer as full attention by default",
          "[engine][trtllm]") {
    // A PyTorch-backend log (DGX Spark): "kv size is 73728", 86,711 max tokens, "Number of tokens
    // per block: 32.", "Allocated 5.95 GiB for max tokens in paged KV cache (86720)".
    // 36 layers x 8 heads x (64 + 64) x 2 B = 73,728 B per token, the sliding layers included.
    // ceil(86,711 / 32) = 2,710 blocks = 86,720 tokens = 6,393,692,160 B = 5.9546 GiB.
    const TrtllmKvCache c = trtllm_kv_cache(gpt_oss_120b, KvDtype::bf16, Layout{gpt_oss_120b, {}},
                                            Bytes::exactly(86'711ULL * 73'728 + 1000));
    REQUIRE(c.num_pools == 1);
    CHECK(c.pools[0].bytes_per_token.count() == 73'728);
    CHECK(c.pools[0].max_tokens == 86'711);
    CHECK(c.pools[0].blocks == 2710);
    CHECK(c.pools[0].tokens == 86'720);
    CHECK(c.pools[0].allocated.count() == 6'393'692'160ULL);
}

TEST_CASE("TensorRT-LLM: one pool per window, memory shared in proportion to window x bytes",
          "[engine][trtllm]") {
    // kvCacheManagerTest.cpp, BlockManagerTestWindowSizeToShare: windows {1024: layer 1, 4096:
    // layers 0, 4, 5, 8192: layers 2, 3} with equal bytes per token per window share the memory
    // 1024 : 4096 : 8192, i.e. 1024/13312, 4096/13312, 8192/13312. Equal bytes per window: 6 KV
    // heads on the one 1,024 layer, 2 on each 4,096 layer, 3 on each full (8,192) layer.
    LayerStack layers;
    layers.append(sliding_window(2, 128, 4096))
        .append(sliding_window(6, 128, 1024))
        .append(full_attention(3, 128), 2)
        .append(sliding_window(2, 128, 4096), 2);
    const Model m{ModelConfig{.name = "vswa",
                              .layers = layers,
                              .num_heads = 12,
                              .head_dim = 128,
                              .hidden_size = 1536,
                              .intermediate_size = 4096,
                              .vocab_size = 32000,
                              .max_position_embeddings = 8192}};
    const TrtllmKvCache c = trtllm_kv_cache(m, KvDtype::bf16, Layout{m, {}}, 1 * GiB,
                                            {.max_seq_len = 8192, .variable_window = true});
    REQUIRE(c.num_pools == 3);
    for (std::uint32_t k = 0; k < 3; ++k) {
        CHECK(c.pools[k].bytes_per_token.count() == 6 * 256 * 2);
        CHECK(c.pools[k].share == Approx(static_cast<double>(c.pools[k].window) / 13312.0));
    }
    // Without per-layer windows every layer is one full-attention pool.
    CHECK(trtllm_kv_cache(m, KvDtype::bf16, Layout{m, {}}, 1 * GiB, {.max_seq_len = 8192})
              .num_pools == 1);
}

TEST_CASE("TensorRT-LLM: the fraction applies to what is free after load and profiling",
          "[engine][trtllm]") {
    // Llama-3-8B on an H100: 85,520,809,984 - 16,060,522,496 (weights) - 1,626,865,664
    // (activation) - 734,003,200 (context) - 536,870,912 (graphs) = 66,562,547,712 B free; x 0.9
    // (a float: 0.89999997615814208984375) = 59,906,291,353.8 -> 59,906,291,353 B.
    const Replica r{.model = llama_3_8b, .gpu = h100_sxm()};
    const EngineMemory m = engine_memory(Engine::trtllm, r, r.layout(), 0);
    CHECK(m.fraction_base.count() == 66'562'547'712ULL);
    CHECK(m.kv_memory.count() == 59'906'291'353ULL);
}

// ---- Ideal and across engines --------------------------------------------------------------

TEST_CASE("ideal: 40 GiB holds 131,072 tokens of Llama-3-70B, 32 sequences of 4,096", "[engine]") {
    // 40 GiB / 327,680 B = 131,072 tokens; a 4,096-token sequence is 1.25 GiB: 32 of them.
    const Replica r{.model = llama_3_70b, .gpu = h100_sxm()};
    const EngineReport rep = engine_report(Engine::ideal, r, 4096, {.kv_memory_per_gpu = 40 * GiB});
    CHECK(rep.summary.tokens == 131'072u);
    CHECK(rep.summary.max_concurrency == 32.0);
}

TEST_CASE("given the same KV memory, no engine holds more tokens than the ideal cache",
          "[engine][property]") {
    // vLLM and SGLang round down to whole blocks and pages. TensorRT-LLM rounds its blocks up
    // (ceil(max_tokens / tokens_per_block)), so it may hold up to one block (32 tokens) more.
    for (const Model* m :
         {&llama_3_8b, &llama_3_70b, &mixtral_8x7b, &qwen2_5_72b, &deepseek_v3, &falcon_7b}) {
        for (std::uint64_t gib : {1ULL, 7ULL, 33ULL}) {
            const Replica r{.model = *m, .gpu = h100_sxm()};
            const BudgetOptions given{.kv_memory_per_gpu = gib * GiB};
            const auto ideal = engine_report(Engine::ideal, r, 4096, given).summary;
            for (Engine e : {Engine::vllm, Engine::sglang, Engine::trtllm}) {
                INFO(m->name().c_str() << " " << name(e) << " " << gib << " GiB");
                const auto s = engine_report(e, r, 4096, given).summary;
                CHECK(s.kv_memory == gib * GiB);
                CHECK(*s.tokens <= *ideal.tokens + (e == Engine::trtllm ? 31 : 0));
            }
        }
    }
}

TEST_CASE("engine names parse back", "[engine]") {
    for (Engine e : all_engines) CHECK(parse_engine(name(e)) == e);
    CHECK(parse_engine("tensorrt-llm") == Engine::trtllm);
    CHECK_FALSE(parse_engine("tgi").has_value());
}

// ---------------------------------------------------------------------------------------------
// vLLM's current accounting: the null block, page padding, what the scheduler admits
// ---------------------------------------------------------------------------------------------

namespace {

// One full-attention layer kind: 2 layers of 1 KV head of 64, bf16: 2 x 64 x 2 B = 256 B per
// token per layer, a page of 16 tokens 4,096 B, a block over both layers 8,192 B.
const Model tiny{ModelConfig{.name = "tiny",
                             .layers = LayerStack::uniform(2, full_attention(1, 64)),
                             .num_heads = 1,
                             .head_dim = 64,
                             .hidden_size = 64,
                             .intermediate_size = 128,
                             .vocab_size = 256,
                             .max_position_embeddings = 4096}};

}  // namespace

TEST_CASE("vLLM holds one block back as the null block in its start-up check and estimate",
          "[engine][vllm]") {
    const Layout l{tiny, {}};
    // vLLM PR #47272's end-to-end case: --num-gpu-blocks-override 50, block 16, max_model_len 800.
    // A request takes 800 / 16 = 50 blocks, but only 49 are usable: vLLM refuses, and its
    // estimate is 49 x 16 = 784 tokens.
    const VllmKvCache c = vllm_kv_cache(tiny, KvDtype::bf16, l, 1 * GiB,
                                        {.max_model_len = 800, .num_gpu_blocks_override = 50});
    CHECK(c.blocks_overridden);
    CHECK(c.num_blocks == 50);
    CHECK(c.usable_blocks == 49);
    CHECK(c.blocks_per_request == 50);
    CHECK_FALSE(c.enough_memory);
    CHECK(c.estimated_max_model_len == 784);
    CHECK(c.admitted == 0);
    // test_kv_cache_reserves_null_block_for_max_model_len: 32 blocks for 512 tokens (exactly 32
    // needed) is refused; test_check_enough_kv_cache_memory_reserves_null_block: 33 is accepted.
    CHECK_FALSE(vllm_kv_cache(tiny, KvDtype::bf16, l, 1 * GiB,
                              {.max_model_len = 512, .num_gpu_blocks_override = 32})
                    .enough_memory);
    const VllmKvCache ok = vllm_kv_cache(tiny, KvDtype::bf16, l, 1 * GiB,
                                         {.max_model_len = 512, .num_gpu_blocks_override = 33});
    CHECK(ok.enough_memory);
    // The log line does not subtract it: 33 / 32 = 1.03x; the scheduler admits 32 / 32 = 1.
    CHECK(ok.max_concurrency == Approx(33.0 / 32.0));
    CHECK(ok.admitted == 1);
    // From memory: 8,192 B per block, so 33 x 8,192 B makes 33 blocks, 32 usable.
    const VllmKvCache mem =
        vllm_kv_cache(tiny, KvDtype::bf16, l, Bytes::exactly(33 * 8192), {.max_model_len = 512});
    CHECK(mem.num_blocks == 33);
    CHECK(mem.usable_blocks == 32);
    CHECK(mem.enough_memory);
}

TEST_CASE("vLLM's concurrency figures match its own unit test for full, sliding and hybrid models",
          "[engine][vllm]") {
    // tests/v1/core/test_kv_cache_utils.py, test_get_max_concurrency_for_kv_cache_config: a
    // Qwen1.5-7B-shaped model (32 layers, 32 KV heads of 128), max_model_len 16,384, block 16,
    // max_num_batched_tokens 1,024 with one batch in flight, window 1,024.
    const auto qwen = [](const LayerStack& layers) {
        return Model{ModelConfig{.name = "qwen1.5-7b-shape",
                                 .layers = layers,
                                 .num_heads = 32,
                                 .head_dim = 128,
                                 .hidden_size = 4096,
                                 .intermediate_size = 11008,
                                 .vocab_size = 151936,
                                 .max_position_embeddings = 32768}};
    };
    const VllmOptions o{
        .max_model_len = 16384, .max_num_batched_tokens = 1024, .concurrent_batches = 1};
    // Full attention: 16,384 / 16 = 1,024 blocks a request; 1,536 blocks -> 1.5x.
    const Model full = qwen(LayerStack::uniform(32, full_attention(32, 128)));
    VllmOptions with = o;
    with.num_gpu_blocks_override = 1536;
    CHECK(vllm_kv_cache(full, KvDtype::bf16, Layout{full, {}}, 1 * GiB, with).max_concurrency ==
          Approx(1.5));
    // Sliding window: cdiv(min(1,023 + 1,024, 16,384), 16) + 1 = 128 + 1 = 129 blocks; 129 x 3
    // blocks -> 3x.
    const Model swa = qwen(LayerStack::uniform(32, sliding_window(32, 128, 1024)));
    with.num_gpu_blocks_override = 129 * 3;
    const VllmKvCache s = vllm_kv_cache(swa, KvDtype::bf16, Layout{swa, {}}, 1 * GiB, with);
    CHECK(s.blocks_per_request == 129);
    CHECK(s.max_concurrency == Approx(3.0));
    // Hybrid, half full and half sliding: two groups of 16 layers, 1,024 + 129 blocks a request;
    // (1,024 + 129) x 3 blocks -> 3x.
    const Model hybrid = qwen(LayerStack::periodic(
        32, std::array{full_attention(32, 128), sliding_window(32, 128, 1024)}));
    with.num_gpu_blocks_override = (1024 + 129) * 3;
    const VllmKvCache h = vllm_kv_cache(hybrid, KvDtype::bf16, Layout{hybrid, {}}, 1 * GiB, with);
    CHECK(h.num_groups == 2);
    CHECK(h.blocks_per_request == 1024 + 129);
    CHECK(h.max_concurrency == Approx(3.0));
}

TEST_CASE(
    "vLLM's scheduler admits about twice what it logs for gpt-oss, whose sliding layers "
    "keep a window",
    "[engine][vllm]") {
    // gpt-oss-120b: 36 layers alternating sliding (window 128) and full, 8 KV heads of 64. bf16:
    // 2 x 8 x 64 x 2 B = 2,048 B per token per layer, a page of 16 tokens 32,768 B; two groups of
    // 18 layers, a block 18 x 32,768 = 589,824 B. At 8,000 tokens on an H100 (8,192 batched
    // tokens, two batches in flight: 16,384 tokens):
    //   logged per request: full 500 + sliding cdiv(min(127 + 16,384, 8,000), 16) + 1 = 501;
    //   running at its 8,000th slot (a prompt of 7,999 tokens, then decode): full 500, sliding
    //   500 - floor((7,999 + 1 - 128) / 16) = 500 - 492 = 8 (remove_skipped_blocks), 508 in all;
    //   to admit (7,999 <= 8,192, the prompt in one step): 500 + 500 = 1,000.
    // With 20,000 blocks (19,999 usable): logged 20,000 / 1,001 = 19.98x; admitted
    // 1 + (19,999 - 1,000) / 508 = 1 + 37 = 38.
    const Layout l{gpt_oss_120b, {}};
    const VllmKvCache c =
        vllm_kv_cache(gpt_oss_120b, KvDtype::bf16, l, Bytes::exactly(20'000ULL * 589'824),
                      {.max_model_len = 8000, .max_num_batched_tokens = 8192});
    CHECK(c.num_groups == 2);
    CHECK(c.bytes_per_block.count() == 589'824);
    CHECK(c.num_blocks == 20'000);
    CHECK(c.blocks_per_request == 1001);
    CHECK(c.blocks_held == 508);
    CHECK(c.blocks_to_admit == 1000);
    CHECK(c.max_concurrency == Approx(20'000.0 / 1001.0));
    CHECK(c.admitted == 38);
    // Exactly: 18 x 8,000 x 2,048 + 18 x 128 x 2,048 = 299,630,592 B a sequence, 39.37 in the
    // same memory: the scheduler's figure stays below it.
    CHECK(c.admitted <= 11'796'480'000ULL / 299'630'592ULL);
}

TEST_CASE("vLLM pads an attention page that does not divide the largest instead of refusing",
          "[engine][vllm]") {
    // Full layers of 4 KV heads x 128 (bf16 page 16 x 4 x 256 x 2 B = 32,768 B) beside sliding
    // layers of 3 KV heads (24,576 B): 32,768 is no multiple of 24,576, so the sliding page is
    // padded to 32,768 B and keeps its 16-token blocks (_unify_kv_cache_spec_page_size,
    // page_size_padded).
    const Model m{
        ModelConfig{.name = "uneven",
                    .layers = LayerStack::periodic(
                        8, std::array{full_attention(4, 128), sliding_window(3, 128, 512)}),
                    .num_heads = 12,
                    .head_dim = 128,
                    .hidden_size = 1536,
                    .intermediate_size = 4096,
                    .vocab_size = 32000,
                    .max_position_embeddings = 4096}};
    const VllmKvCache c =
        vllm_kv_cache(m, KvDtype::bf16, Layout{m, {}}, 1 * GiB, {.max_model_len = 4096});
    CHECK(c.refused.empty());
    const VllmLayerKind& sliding =
        c.kinds[0].kind == CacheKind::sliding_window ? c.kinds[0] : c.kinds[1];
    CHECK(sliding.unpadded_page.count() == 24'576);
    CHECK(sliding.page.count() == 32'768);
    CHECK(sliding.block_size == 16);
    CHECK(c.enough_memory);
}

TEST_CASE("vLLM groups layers by spec: a draft of 8 x 128 heads beside targets of 4 x 256",
          "[engine][vllm]") {
    // Target: 10 full and 20 sliding (window 1,024) layers of 4 KV heads of 256; the drafter: one
    // full layer of 8 KV heads of 128. Every page is 16 x 4 x 256 x 2 x 2 B = 16 x 8 x 128 x 2 x
    // 2 B = 65,536 B, but the draft layer's FullAttentionSpec (num_kv_heads 8, head_size 128) is
    // not the target's (4, 256): vLLM has three specs of 10, 20 and 1 layers
    // (vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size). The group size is
    // the fewest, 1 (2 x 20 >= 3 x 1), so every layer is a group of its own: 31 groups. Grouped by
    // bytes per token the draft would join the 10 full layers: groups of 11.
    LayerStack L;
    L.append(full_attention(4, 256), 10);
    L.append(sliding_window(4, 256, 1024), 20);
    L.append(full_attention(8, 128), 1);
    const Model m{ModelConfig{.name = "target+draft",
                              .layers = L,
                              .num_heads = 32,
                              .head_dim = 256,
                              .hidden_size = 4096,
                              .intermediate_size = 14336,
                              .vocab_size = 32000,
                              .max_position_embeddings = 32768}};
    const VllmKvCache c =
        vllm_kv_cache(m, KvDtype::bf16, Layout{m, {}}, 4 * GiB, {.max_model_len = 32768});
    REQUIRE(c.refused.empty());
    CHECK(c.num_kinds == 3);
    CHECK(c.group_size == 1);
    CHECK(c.num_groups == 31);
    CHECK(c.page.count() == 65'536);
    // A block is one group's layer: 4 GiB / 65,536 B = 65,536 blocks.
    CHECK(c.num_blocks == 65'536);
    // At tp 4 the heads on a rank are 1 x 256 and 2 x 128: still two specs.
    const VllmKvCache t =
        vllm_kv_cache(m, KvDtype::bf16, Layout{m, {.tp = 4}}, 4 * GiB, {.max_model_len = 32768});
    CHECK(t.num_kinds == 3);
    CHECK(t.num_groups == 31);
}

// LoRA slots are loaded with the weights, so every engine's KV memory shrinks by exactly their
// bytes (854,589,440 B for Llama-3-70B at tp 4 with 4 slots of rank 16:
// tests/budget/test_budget.cpp) while nothing else in the breakdown moves.
TEST_CASE("LoRA slots come out of every engine's KV memory", "[engine][lora]") {
    const Replica r{.model = llama_3_70b, .gpu = h100_sxm(), .parallel = {.tp = 4}};
    const Layout l = r.layout();
    BudgetOptions with_lora;
    with_lora.reserve.lora = {.max_loras = 4, .max_lora_rank = 16};
    for (const Engine e : {Engine::vllm, Engine::sglang, Engine::trtllm, Engine::ideal}) {
        CAPTURE(e);
        const EngineMemory plain = engine_memory(e, r, l, 0);
        const EngineMemory lora = engine_memory(e, r, l, 0, with_lora);
        CHECK(lora.lora.count() == 854'589'440);
        CHECK(lora.weights == plain.weights);
        if (e == Engine::trtllm) {
            // TensorRT-LLM's fraction applies to what is left: 0.9 of the slots comes out.
            CHECK(lora.fraction_base + lora.lora == plain.fraction_base);
        } else {
            CHECK(lora.kv_memory + lora.lora == plain.kv_memory);
        }
    }
}
