#include <catch2/catch.hpp>
#include <kvplan/paging.hpp>
#include <kvplan/presets.hpp>

using namespace kvplan;
using namespace kvplan::presets;

TEST_CASE("blocks round up", "[paging]") {
    // 17 tokens in 16-token blocks need 2 blocks; 16 need 1; 0 need 0.
    CHECK(blocks_for(17, 16) == 2);
    CHECK(blocks_for(16, 16) == 1);
    CHECK(blocks_for(0, 16) == 0);
    CHECK(blocks_for(~0ULL, 16) == (~0ULL / 16) + 1);  // no wrap in the rounding
}

TEST_CASE("a paged sequence wastes only its last block's tail", "[paging]") {
    // Llama-3-70B, 17 tokens: 2 blocks per layer x 80 layers = 160 blocks; reserved
    // 32 tokens x 327,680 B = 10,485,760 B; used 17 x 327,680 = 5,570,560; waste 15 tokens' worth.
    const PagedUse u = paged_sequence(llama_3_70b, KvDtype::bf16, 17, 16);
    CHECK(u.blocks == 160);
    CHECK(u.reserved.count() == 10'485'760);
    CHECK(u.used.count() == 5'570'560);
    CHECK(u.waste().count() == 15 * 327'680);
}

TEST_CASE("a block spans every layer", "[paging]") {
    // Llama-3-8B: 128 KiB per token x 16 tokens = 2 MiB per block.
    CHECK(bytes_per_block(llama_3_8b, KvDtype::bf16, 16) == 2 * MiB);
}

TEST_CASE("a sliding window straddling a block boundary holds one more block", "[paging][window]") {
    // Window 4,096 in 16-token blocks. At 5,000 tokens the layer keeps positions 904..4,999:
    // blocks 56 (904 / 16) .. 312 (4,999 / 16), 257 blocks = ceil(4096 / 16) + 1.
    const CacheSpec w = sliding_window(8, 128, 4096);
    const BlockRange r = held_blocks(w, 5000, 16);
    CHECK(r.first == 56);
    CHECK(r.end == 313);
    CHECK(r.count() == 257);
    // At 4,112 tokens the window is block aligned (positions 16..4,111): exactly 256 blocks.
    CHECK(held_blocks(w, 4112, 16).count() == 256);
}

TEST_CASE("contiguous reservation against paging", "[paging]") {
    // A contiguous engine reserves max_model_len = 8,192 tokens per sequence; a 200-token request
    // then owns 8,192 x 327,680 B but uses 200 x 327,680; paged it holds 13 blocks = 208 tokens.
    const ContiguousUse c = contiguous_sequence(llama_3_70b, KvDtype::bf16, 200, 8192);
    CHECK(c.reserved.count() == 8192ULL * 327'680);
    CHECK(c.used.count() == 200ULL * 327'680);
    CHECK(c.waste().count() == 7992ULL * 327'680);
    CHECK(paged_sequence(llama_3_70b, KvDtype::bf16, 200, 16).waste().count() == 8 * 327'680);
}

TEST_CASE("sequences sharing a prefix hold its full blocks once", "[paging][prefix]") {
    // 8 sequences share a 1,000-token prefix: 1,000 / 16 = 62 full blocks (992 tokens); the 63rd
    // block is partial and each sequence keeps its own. Each sequence is 1,500 tokens: 94 blocks.
    // Per layer: 62 shared + 8 x (94 - 62) = 318 blocks, against 8 x 94 = 752 unshared.
    const SharedPrefixUse u = paged_shared_prefix(llama_3_70b, KvDtype::bf16, 8, 1000, 1500, 16);
    CHECK(u.shared_blocks == 62);
    CHECK(u.blocks == 80 * 318);
    // Per-layer block of 16 tokens: 16 x 4,096 B = 65,536 B.
    CHECK(u.reserved.count() == 80ULL * 318 * 65'536);
    CHECK(u.unshared.count() == 80ULL * 752 * 65'536);
    CHECK(u.saved().count() == 80ULL * (752 - 318) * 65'536);
}

TEST_CASE("a sliding layer shares prefix blocks only inside its window", "[paging][prefix]") {
    // Mistral-7B (window 4,096): at 10,000 tokens a 2,000-token prefix has left every window,
    // so nothing is shared: 2 sequences hold twice one sequence's blocks.
    const SharedPrefixUse u =
        paged_shared_prefix(mistral_7b_v0_1, KvDtype::bf16, 2, 2000, 10000, 16);
    CHECK(u.saved().is_zero());
    // At 3,000 tokens the whole prefix (125 full blocks) is inside the window and shared.
    const SharedPrefixUse v =
        paged_shared_prefix(mistral_7b_v0_1, KvDtype::bf16, 2, 2000, 3000, 16);
    CHECK(v.blocks == 32ULL * (125 + 2 * (188 - 125)));
}
