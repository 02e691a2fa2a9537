// The edges of every input: 10M-token contexts, a million sequences, block sizes of 1 and 2^20
// tokens, budgets of 0 and 2^64 - 1 bytes. Each gives an exact answer or a kvplan::Error; never a
// wrapped integer, a NaN or an infinity.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <kvplan/budget.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/kvplan.hpp>
#include <kvplan/weights.hpp>
#include <limits>
#include <optional>

using namespace kvplan;
using namespace kvplan::presets;

namespace {

constexpr std::uint64_t ten_million = 10'000'000;
constexpr std::uint64_t one_million = 1'000'000;
constexpr std::uint32_t mebi_block = 1U << 20;
constexpr Bytes all_bytes = Bytes::exactly(std::numeric_limits<std::uint64_t>::max());

// One layer caching one fp8 value per token: a slope of 1 byte per token, the steepest test of
// arithmetic near 2^64.
const Model one_byte_per_token{ModelConfig{
    .name = "one-byte",
    .layers = LayerStack::uniform(1, mla_latent(1, 0)),
    .num_heads = 1,
    .hidden_size = 1,
    .intermediate_size = 1,
    .vocab_size = 1,
    .mla = {.v_head_dim = 1},
}};

}  // namespace

TEST_CASE("max_context near 2^64 bytes answers exactly instead of wrapping",
          "[extremes][capacity]") {
    // 2^64 - 1 bytes at 1 byte per token hold 2^64 - 1 tokens. budget / slope + 1 used to wrap to 0
    // and the search answered 0.
    CHECK(max_context(all_bytes, one_byte_per_token, KvDtype::fp8_e4m3, 1) ==
          std::numeric_limits<std::uint64_t>::max());
    // In 16-token blocks: the largest multiple of 16 below 2^64, 18,446,744,073,709,551,600.
    CHECK(max_context(all_bytes, one_byte_per_token, KvDtype::fp8_e4m3, 1, 16) ==
          18'446'744'073'709'551'600ULL);
    // Llama-3-8B (131,072 B per token) in 2^20-token blocks: floor((2^64 - 1) / 2^17) =
    // 140,737,488,355,327 tokens, rounded down to whole blocks: 134,217,727 x 2^20 =
    // 140,737,487,306,752. Probing longer lengths used to overflow and throw.
    CHECK(max_context(all_bytes, llama_3_8b, KvDtype::bf16, 1, mebi_block) ==
          140'737'487'306'752ULL);
}

TEST_CASE("a window too large for any budget is not mistaken for a plateau",
          "[extremes][capacity]") {
    // One sliding layer with a window of 2^64 - 1 tokens: the plateau (window + two blocks) used
    // to wrap to a few tokens, which fit, and max_context answered "any length fits". At 16 B per
    // token (fp8, K and V of 8 heads of dim 1: 2 x 8 x 1 B), 1 GiB holds 2^30 / 16 = 67,108,864.
    const Model huge_window{ModelConfig{
        .name = "huge-window",
        .layers =
            LayerStack::uniform(1, sliding_window(8, 1, std::numeric_limits<std::uint64_t>::max())),
        .num_heads = 8,
        .hidden_size = 8,
        .intermediate_size = 8,
        .vocab_size = 1,
    }};
    CHECK(max_context(1 * GiB, huge_window, KvDtype::fp8_e4m3, 1) == 67'108'864u);
}

TEST_CASE("a 10-million-token context is sized exactly", "[extremes]") {
    // Llama-3.1-405B in fp32: 126 layers x 8 KV heads x (K + V) x 128 x 4 B = 1,032,192 B per
    // token; x 10^7 tokens = 10,321,920,000,000 B.
    CHECK(kv_bytes_per_sequence(llama_3_1_405b, KvDtype::fp32, ten_million).count() ==
          10'321'920'000'000ULL);
    // DeepSeek-V3: 61 MLA layers x (512 + 64) values x 2 B = 70,272 B per token; x 10^7.
    CHECK(kv_bytes_per_sequence(deepseek_v3, KvDtype::bf16, ten_million).count() ==
          702'720'000'000ULL);
    // gpt-oss-120b: 18 full layers grow (2 x 8 x 64 x 2 B = 2,048 B per token each) and 18 sliding
    // layers stop at 128 tokens: 18 x 2,048 x 10^7 + 18 x 2,048 x 128 = 368,644,718,592 B.
    CHECK(kv_bytes_per_sequence(gpt_oss_120b, KvDtype::bf16, ten_million).count() ==
          368'644'718'592ULL);
}

TEST_CASE("a million concurrent sequences multiply exactly or throw", "[extremes]") {
    const Bytes each = kv_bytes_per_sequence(llama_3_1_405b, KvDtype::fp32, ten_million);
    // 10,321,920,000,000 B x 10^6 = 1.032e19 B, below 2^64 - 1 = 1.845e19: exact.
    CHECK((each * one_million).count() == 10'321'920'000'000'000'000ULL);
    // Twice that passes 2^64: an error, never a wrapped size.
    CHECK_THROWS_AS(each * (2 * one_million), OverflowError);
    // floor((2^64 - 1) / 10,321,920,000,000) = 1,787,142 such sequences fit in every byte there is.
    CHECK(sequences_that_fit(all_bytes, llama_3_1_405b, KvDtype::fp32, ten_million) == 1'787'142u);
    // A million sequences share 1 TiB: floor(2^40 / 10^6) = 1,099,511 B each, over Llama-3-8B's
    // 131,072 B per token: 8 tokens. In 80 GiB, 85,899 B each: not one token.
    CHECK(max_context(1 * TiB, llama_3_8b, KvDtype::bf16, one_million) == 8u);
    CHECK(max_context(80 * GiB, llama_3_8b, KvDtype::bf16, one_million) == 0u);
    // Every byte there is over a million 405B sequences in 16-token blocks: floor((2^64 - 1) /
    // 10^6) = 18,446,744,073,709 B each; / 1,032,192 B = 17,871,427 tokens, down to whole blocks:
    // 17,871,424.
    CHECK(max_context(all_bytes, llama_3_1_405b, KvDtype::fp32, one_million, 16) == 17'871'424u);
}

TEST_CASE("blocks of one token and of a million tokens", "[extremes][paging]") {
    // Llama-3-70B (327,680 B per token), 10^7 tokens in 2^20-token blocks: ceil(10^7 / 2^20) = 10
    // blocks per layer, 800 over 80 layers, reserving 10 x 2^20 tokens = 3,200 GiB; using 10^7.
    const PagedUse big = paged_sequence(llama_3_70b, KvDtype::bf16, ten_million, mebi_block);
    CHECK(big.blocks == 800);
    CHECK(big.reserved == 3200 * GiB);
    CHECK(big.used.count() == 3'276'800'000'000ULL);
    // One block holds 327,680 B x 2^20 = 320 GiB: 80 GiB cannot hold one token, 640 GiB holds
    // two blocks, 2,097,152 tokens.
    CHECK(bytes_per_block(llama_3_70b, KvDtype::bf16, mebi_block) == 320 * GiB);
    CHECK(max_context(80 * GiB, llama_3_70b, KvDtype::bf16, 1, mebi_block) == 0u);
    CHECK(max_context(640 * GiB, llama_3_70b, KvDtype::bf16, 1, mebi_block) == 2'097'152u);
    CHECK(sequences_that_fit(80 * GiB, llama_3_70b, KvDtype::bf16, 1, mebi_block) == 0u);
    // Mistral-7B's 4,096-token window at 10^7 tokens sits inside one 2^20 block (positions
    // 9,995,904..9,999,999 are all in block 9): 32 layers x 4,096 B x 2^20 = 128 GiB reserved for
    // 32 x 4,096 B x 4,096 = 512 MiB used.
    const PagedUse win = paged_sequence(mistral_7b_v0_1, KvDtype::bf16, ten_million, mebi_block);
    CHECK(win.blocks == 32);
    CHECK(win.reserved == 128 * GiB);
    CHECK(win.used == 512 * MiB);
    // One-token blocks waste nothing: 80 x 10^7 blocks, reserved = used.
    const PagedUse one = paged_sequence(llama_3_70b, KvDtype::bf16, ten_million, 1);
    CHECK(one.blocks == 800'000'000u);
    CHECK(one.reserved == one.used);
}

TEST_CASE("a shared prefix across a million sequences", "[extremes][paging]") {
    // Llama-3-8B, 10^6 sequences of 8,192 tokens sharing a 4,096-token prompt, 16-token blocks:
    // per layer each sequence holds 512 blocks of which 256 are shared, so (512 - 256) x 10^6 + 256
    // = 256,000,256 blocks per layer, x 32 layers = 8,192,008,192. One layer block is 16 x 4,096 B
    // = 65,536 B: reserved 536,871,448,870,912 B against 512 x 10^6 x 32 x 65,536 =
    // 1,073,741,824,000,000 B unshared.
    const SharedPrefixUse u =
        paged_shared_prefix(llama_3_8b, KvDtype::bf16, one_million, 4096, 8192, 16);
    CHECK(u.shared_blocks == 256);
    CHECK(u.blocks == 8'192'008'192ULL);
    CHECK(u.reserved.count() == 536'871'448'870'912ULL);
    CHECK(u.unshared.count() == 1'073'741'824'000'000ULL);
    CHECK(u.saved().count() == 536'870'375'129'088ULL);
}

TEST_CASE("a two-trillion-parameter model is counted and sized exactly", "[extremes][weights]") {
    // A generated dense model: 340 layers, hidden 20,480 (160 heads of 128), 16 KV heads, gated
    // MLP of 81,920, vocab 128,256, untied, two RMSNorms per layer, no biases.
    const Model two_t{ModelConfig{
        .name = "dense-2T",
        .layers = LayerStack::uniform(340, full_attention(16, 128)),
        .num_heads = 160,
        .hidden_size = 20480,
        .intermediate_size = 81920,
        .vocab_size = 128256,
    }};
    // Per layer: q and o 20,480^2 each, k and v 20,480 x 2,048 each, MLP 3 x 20,480 x 81,920,
    // norms 2 x 20,480: 5,955,952,640. Whole: 340 x that + embedding and LM head 2 x 128,256 x
    // 20,480 + final norm 20,480 = 2,030,277,283,840.
    CHECK(total_params(two_t) == 2'030'277'283'840ULL);
    // bf16: 2 B per parameter, 4,060,554,567,680 B.
    CHECK(weight_bytes(two_t).total().count() == 4'060'554'567'680ULL);
    // KV: 340 x 16 x 2 x 128 x 2 B = 2,785,280 B per token; 10^7 tokens: 27,852,800,000,000 B.
    CHECK(kv_bytes_per_token(two_t, KvDtype::bf16).count() == 2'785'280u);
    CHECK(kv_bytes_per_sequence(two_t, KvDtype::bf16, ten_million).count() ==
          27'852'800'000'000ULL);
}

TEST_CASE("lengths past 2^64 bytes are errors, not wrapped sizes", "[extremes]") {
    constexpr std::uint64_t every_token = std::numeric_limits<std::uint64_t>::max();
    CHECK_THROWS_AS(kv_bytes_per_sequence(llama_3_8b, KvDtype::bf16, every_token), OverflowError);
    CHECK_THROWS_AS(paged_sequence(llama_3_8b, KvDtype::bf16, every_token, 16), OverflowError);
    CHECK_THROWS_AS(sequences_that_fit(all_bytes, llama_3_8b, KvDtype::bf16, every_token, 16),
                    OverflowError);
    // A window caps the bytes, so a sliding-only model sizes even 2^64 - 1 tokens: Mistral-7B
    // keeps 4,096 tokens x 128 KiB = 512 MiB.
    CHECK(kv_bytes_per_sequence(mistral_7b_v0_1, KvDtype::bf16, every_token) == 512 * MiB);
    // Sums and differences of sizes are checked too.
    CHECK_THROWS_AS(all_bytes + 1 * B, OverflowError);
    CHECK_THROWS_AS(Bytes{} - 1 * B, OverflowError);
    CHECK_THROWS_AS((std::uint64_t{1} << 60) * (16 * B), OverflowError);  // 2^64 B
    CHECK_THROWS_AS(17'179'869'184 * GiB, OverflowError);                 // 2^34 GiB = 2^64 B
}

TEST_CASE("sizes read out in any unit are finite", "[extremes][units]") {
    // (2^64 - 1) B = 2^34 GiB less one byte, which a double rounds to 2^34 = 17,179,869,184.
    CHECK(all_bytes.in(GiB) == 17'179'869'184.0);
    CHECK(std::isfinite(all_bytes.in(B)));
    CHECK(std::isfinite(all_bytes.in(TB)));
    // Doubles that are not sizes are refused.
    CHECK_THROWS_AS(round_to_bytes(std::nan(""), GiB), OverflowError);
    CHECK_THROWS_AS(round_to_bytes(HUGE_VAL, GiB), OverflowError);
    CHECK_THROWS_AS(round_to_bytes(-1.0, B), OverflowError);
    CHECK_THROWS_AS(round_to_bytes(17'179'869'184.0, GiB), OverflowError);  // 2^64 B exactly
    CHECK(round_to_bytes(0.0, GiB).is_zero());
}

TEST_CASE("parallel layouts at their limits", "[extremes][layout]") {
    // tp 64 on Llama-3-70B (64 query heads, 8 KV heads): each rank keeps one replicated KV head,
    // 80 x 1 x 2 x 128 x 2 B = 40,960 B per token.
    const Layout wide(llama_3_70b, {.tp = 64});
    CHECK(kv_bytes_per_token(llama_3_70b, KvDtype::bf16, wide.stage(0)).count() == 40'960u);
    // 64 stages, the most there can be, over 80 layers: vLLM's split gives one layer to each stage
    // but 16 of them (47..62, just before the last) get two: 4,096 B or 8,192 B per token.
    const Layout deep(llama_3_70b, {.pp = 64});
    CHECK(deep.ranks() == 64);
    CHECK(kv_bytes_per_token(llama_3_70b, KvDtype::bf16, deep.stage(0)).count() == 4'096u);
    CHECK(kv_bytes_per_token(llama_3_70b, KvDtype::bf16, deep.stage(47)).count() == 8'192u);
    CHECK(kv_bytes_per_token(llama_3_70b, KvDtype::bf16, deep.stage(63)).count() == 4'096u);
    CHECK_THROWS_AS(Layout(llama_3_8b, {.pp = 33}), InvalidLayout);      // 32 layers
    CHECK_THROWS_AS(Layout(llama_3_1_405b, {.pp = 65}), InvalidLayout);  // past 64 stages
    CHECK_THROWS_AS(Layout(llama_3_70b, {.tp = 0}), InvalidLayout);
    CHECK_THROWS_AS(Layout(llama_3_70b, {.tp = 128}), InvalidLayout);  // not a divisor of 64 heads
}

TEST_CASE("utilization 0 is refused and utilization 1 is the whole GPU", "[extremes][budget]") {
    const Replica r{.model = llama_3_8b, .gpu = gpus::h100_sxm};
    const Workload w{.context = 8192, .concurrency = 1};
    CHECK_THROWS_AS(replica_budget(r, w, {.utilization = 0.0}), InvalidInput);
    CHECK_THROWS_AS(replica_budget(r, w, {.utilization = -0.5}), InvalidInput);
    CHECK_THROWS_AS(replica_budget(r, w, {.utilization = 1.0000001}), InvalidInput);
    CHECK_THROWS_AS(replica_budget(r, w, {.utilization = std::nan("")}), InvalidInput);
    CHECK_THROWS_AS(replica_budget(r, w, {.utilization = HUGE_VAL}), InvalidInput);
    // At 1, usable is the runtime's whole total: 85,029,027,840 B for an H100 SXM (its file).
    const ReplicaBudget all = replica_budget(r, w, {.utilization = 1.0});
    CHECK(all.stages[0].usable.count() == 85'029'027'840ULL);
    // The smallest positive double still gives a whole byte, rounded up, and nothing fits.
    const ReplicaBudget least = replica_budget(r, w, {.utilization = 4.9e-324});
    CHECK(least.stages[0].usable.count() == 1u);
    CHECK_FALSE(least.fits);
    CHECK(least.max_concurrency == 0u);
}

TEST_CASE("a budget for 10M-token contexts at a million sequences answers, or names the overflow",
          "[extremes][budget]") {
    // Llama-3.1-405B on 8 x H100 (tp 8: one KV head per rank): 126 x 2 x 128 x 2 B = 64,512 B per
    // token per rank; 10^7 tokens are whole 16-token blocks: 645,120,000,000 B per sequence, x 10^6
    // = 6.4512e17 B needed per rank. Far from fitting, and the answers say by how much.
    const Replica r{.model = llama_3_1_405b, .gpu = gpus::h100_sxm, .parallel = {.tp = 8}};
    const ReplicaBudget b = replica_budget(r, {.context = ten_million, .concurrency = one_million});
    const StageBudget& s = b.stages[0];
    CHECK(s.kv_per_sequence.count() == 645'120'000'000ULL);
    CHECK(s.kv_needed.count() == 645'120'000'000'000'000ULL);
    CHECK_FALSE(b.fits);
    CHECK(b.max_concurrency == s.kv_budget.count() / 645'120'000'000ULL);
    // In fp32 on one GPU a sequence takes 10,321,920,000,000 B; 2 x 10^6 of them pass 2^64 B.
    const Replica whole{.model = llama_3_1_405b, .gpu = gpus::h100_sxm, .kv = KvDtype::fp32};
    CHECK_THROWS_AS(replica_budget(whole, {.context = ten_million, .concurrency = 2 * one_million}),
                    OverflowError);
}

TEST_CASE("a layout whose GPU count passes 32 bits is refused, not wrapped", "[extremes][layout]") {
    // 2^31 heads of dimension 1, each its own KV head: tp 2^31 divides them, and tp x pp = 2^32
    // GPUs for pp 2 used to wrap ranks() to 0 (and throughput per GPU to infinity).
    const Model wide{ModelConfig{
        .name = "2^31 heads",
        .layers = LayerStack::uniform(2, full_attention(1U << 31, 1)),
        .num_heads = 1U << 31,
        .hidden_size = 1ULL << 31,
        .intermediate_size = 1,
        .vocab_size = 1,
    }};
    CHECK_THROWS_AS(Layout(wide, {.tp = 1U << 31, .pp = 2}), InvalidLayout);
    // One stage is 2^31 GPUs, which fits.
    CHECK(Layout(wide, {.tp = 1U << 31}).ranks() == 1U << 31);
}
