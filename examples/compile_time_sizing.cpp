// Sizing at compile time: the figures are static_asserts, so a wrong one does not build.
#include <cstdio>
#include <kvplan/core.hpp>
#include <kvplan/presets.hpp>

using namespace kvplan;

// 2 (K, V) x 80 layers x 8 KV heads x 128 dims x 2 B (bf16) = 327,680 B.
constexpr Bytes per_token = kv_bytes_per_token(presets::llama_3_70b, KvDtype::bf16);
static_assert(per_token == 320 * KiB);

// 32 sequences of 4,096 tokens: exactly 40 GiB.
constexpr Bytes batch = kv_bytes_per_sequence(presets::llama_3_70b, KvDtype::bf16, 4096) * 32;
static_assert(batch == 40 * GiB);

// On 8 ranks each holds one of the 8 KV heads: an eighth per rank.
constexpr Layout tp8{presets::llama_3_70b, {.tp = 8}};
static_assert(kv_bytes_per_token(presets::llama_3_70b, KvDtype::bf16, tp8.stage(0)) == 40 * KiB);

int main() {
    std::printf("Llama-3-70B: %llu B per token, %g GiB for 32 x 4096 tokens\n",
                static_cast<unsigned long long>(per_token.count()), batch.in(GiB));
}
