#include <catch2/catch.hpp>
#include <cstdint>
#include <kvplan/presets.hpp>
#include <kvplan/transfer.hpp>

#include "support/datasheet_gpus.hpp"

using namespace kvplan;
using namespace kvplan::presets;
using kvplan::testing::h100_sxm;

// One 4,096-token sequence of Llama-3-70B in bf16: 4,096 x 327,680 B = 1,342,177,280 B (1.25 GiB),
// a quarter of it (335,544,320 B) on each rank at tp 4.

TEST_CASE("offloading a sequence to host memory over PCIe", "[transfer]") {
    const GpuSpec h100 = h100_sxm();
    // One GPU, PCIe Gen5 x16 at 64 GB/s one way: 1,342,177,280 / 64e9 = 20.97 ms.
    const KvTransfer one =
        kv_transfer(llama_3_70b, KvDtype::bf16, Layout{llama_3_70b, {}}, 4096, links::pcie(h100));
    CHECK(one.bytes_per_rank.count() == 1'342'177'280ULL);
    CHECK(one.time.in(milliseconds) == Approx(1'342'177'280.0 / 64e9 * 1e3));
    // At tp 4 each GPU moves its quarter over its own link: 335,544,320 / 64e9 = 5.243 ms.
    const KvTransfer tp4 = kv_transfer(llama_3_70b, KvDtype::bf16, Layout{llama_3_70b, {.tp = 4}},
                                       4096, links::pcie(h100));
    CHECK(tp4.bytes_per_rank.count() == 335'544'320);
    CHECK(tp4.bytes_replica.count() == 1'342'177'280ULL);
    CHECK(tp4.links_in_parallel == 4);
    CHECK(tp4.time.in(milliseconds) == Approx(335'544'320.0 / 64e9 * 1e3));
}

TEST_CASE("reading a sequence back from one NVMe drive", "[transfer]") {
    // PCIe Gen4 x4 carries 16 GT/s x 4 x 128/130 / 8 = 7.877 GB/s, shared by the node: the whole
    // 1,342,177,280 B pass it whatever tp, 170.4 ms.
    const double gen4_x4 = 16.0 * 4 * 128 / 130 / 8 * 1e9;
    CHECK(links::nvme_gen4_x4.bandwidth.in(B_per_s) == Approx(gen4_x4));
    for (std::uint32_t tp : {1u, 4u}) {
        const KvTransfer t = kv_transfer(
            llama_3_70b, KvDtype::bf16, Layout{llama_3_70b, {.tp = tp}}, 4096, links::nvme_gen4_x4);
        CHECK(t.links_in_parallel == 1);
        CHECK(t.time.in(milliseconds) == Approx(1'342'177'280.0 / gen4_x4 * 1e3));
    }
}

TEST_CASE("prefill/decode disaggregation over InfiniBand and NVLink", "[transfer]") {
    // A decode replica at tp 4 receives each rank's quarter on its own NDR NIC (50 GB/s one way):
    // 335,544,320 / 50e9 = 6.711 ms; within a node over NVLink (450 GB/s): 0.746 ms.
    const Layout tp4{llama_3_70b, {.tp = 4}};
    CHECK(kv_transfer(llama_3_70b, KvDtype::bf16, tp4, 4096, links::infiniband_ndr)
              .time.in(milliseconds) == Approx(335'544'320.0 / 50e9 * 1e3));
    CHECK(kv_transfer(llama_3_70b, KvDtype::bf16, tp4, 4096, links::nvlink(h100_sxm()))
              .time.in(milliseconds) == Approx(335'544'320.0 / 450e9 * 1e3));
    // fp8 halves the bytes and the time.
    CHECK(kv_transfer(llama_3_70b, KvDtype::fp8_e4m3, tp4, 4096, links::infiniband_ndr)
              .bytes_per_rank.count() == 167'772'160);
}

TEST_CASE("an MLA latent is moved from every tensor-parallel rank", "[transfer]") {
    // DeepSeek-V3 at tp 8: every rank holds the whole latent, 4,096 x 70,272 B = 287,834,112 B,
    // so the replica holds 8 copies.
    const KvTransfer t = kv_transfer(deepseek_v3, KvDtype::bf16, Layout{deepseek_v3, {.tp = 8}},
                                     4096, links::infiniband_ndr);
    CHECK(t.bytes_per_rank.count() == 287'834'112ULL);
    CHECK(t.bytes_replica.count() == 8 * 287'834'112ULL);
}

TEST_CASE("paged transfers move whole blocks", "[transfer]") {
    // 4,100 tokens in 16-token blocks are 257 blocks = 4,112 tokens x 327,680 B = 1,347,420,160 B.
    const KvTransfer t = kv_transfer(llama_3_70b, KvDtype::bf16, Layout{llama_3_70b, {}}, 4100,
                                     links::infiniband_ndr, 16);
    CHECK(t.bytes_per_rank.count() == 1'347'420'160ULL);
}

TEST_CASE("a link without bandwidth is refused by name", "[transfer]") {
    CHECK_THROWS_WITH(
        kv_transfer(llama_3_8b, KvDtype::bf16, Layout{llama_3_8b, {}}, 1, links::nvlink(GpuSpec{})),
        Catch::Contains("link.bandwidth"));
}

TEST_CASE("speculative decoding: k draft tokens and the draft model's cache", "[transfer]") {
    // Llama-3-70B target, 4 draft tokens, 4,096-token contexts, 16-token blocks, on one GPU.
    // The target: 256 blocks = 1,342,177,280 B; with 4 more positions 4,100 tokens take 257
    // blocks: +16 x 327,680 = 5,242,880 B. The draft, Llama-3-8B, caches 4,100 tokens: 257 blocks
    // x 16 x 131,072 B = 538,968,064 B. Together 544,210,944 B per sequence, 0.40547 of the
    // target's cache; x 32 sequences = 17,414,750,208 B.
    const Layout l{llama_3_70b, {}};
    const SpeculativeKv s =
        speculative_kv(llama_3_70b, KvDtype::bf16, l, 4096, 4, 32,
                       {.draft = llama_3_8b, .draft_kv = KvDtype::bf16, .block_size = 16});
    CHECK(s.target.count() == 1'342'177'280ULL);
    CHECK(s.target_extra.count() == 5'242'880);
    CHECK(s.draft.count() == 538'968'064);
    CHECK(s.per_sequence.count() == 544'210'944);
    CHECK(s.replica.count() == 17'414'750'208ULL);
    CHECK(s.overhead == Approx(544'210'944.0 / 1'342'177'280.0));
    // Without a draft model (n-gram drafts) and unpaged, only the 4 positions: 4 x 327,680 B.
    const SpeculativeKv ngram = speculative_kv(llama_3_70b, KvDtype::bf16, l, 4096, 4, 1);
    CHECK(ngram.draft.is_zero());
    CHECK(ngram.per_sequence.count() == 1'310'720);
}
