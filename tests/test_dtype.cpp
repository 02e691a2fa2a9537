#include <catch2/catch.hpp>
#include <kvplan/dtype.hpp>

using namespace kvplan;

TEST_CASE("each KV dtype has its bit width", "[dtype]") {
    CHECK(bits(KvDtype::fp32) == 32);
    CHECK(bits(KvDtype::bf16) == 16);
    CHECK(bits(KvDtype::fp16) == 16);
    CHECK(bits(KvDtype::fp8_e4m3) == 8);
    CHECK(bits(KvDtype::fp8_e5m2) == 8);
    CHECK(bits(KvDtype::int8) == 8);
    CHECK(bits(KvDtype::int4) == 4);
    CHECK(bits(KvDtype::nvfp4) == 4);
    CHECK(bits(KvDtype::mxfp4) == 4);
}

TEST_CASE("dtype spellings parse, aliases included", "[dtype]") {
    for (KvDtype d : all_kv_dtypes) CHECK(parse_kv_dtype(name(d)) == d);
    CHECK(parse_kv_dtype("fp8") == KvDtype::fp8_e4m3);  // vLLM's --kv-cache-dtype fp8
    CHECK(parse_kv_dtype("bfloat16") == KvDtype::bf16);
    CHECK_FALSE(parse_kv_dtype("fp9").has_value());
}

TEST_CASE("a vector costs its elements plus its scales, in whole bytes", "[dtype]") {
    // 128 values: bf16 256 B, fp8 (per-tensor scale) 128 B, fp32 512 B.
    CHECK(vector_bytes(KvDtype::bf16, 128).count() == 256);
    CHECK(vector_bytes(KvDtype::fp8_e4m3, 128).count() == 128);
    CHECK(vector_bytes(KvDtype::fp32, 128).count() == 512);
    // int8 with one fp32 scale per token per head: 128 + 4 = 132 B.
    CHECK(vector_bytes(KvDtype::int8, 128).count() == 132);
    // int4: 128 x 4 bits = 64 B, + 4 B scale = 68 B.
    CHECK(vector_bytes(KvDtype::int4, 128).count() == 68);
    // NVFP4: 64 B of values + 128 / 16 = 8 e4m3 scales of 1 B = 72 B.
    CHECK(vector_bytes(KvDtype::nvfp4, 128).count() == 72);
    // MXFP4: 64 B + 128 / 32 = 4 e8m0 scales = 68 B.
    CHECK(vector_bytes(KvDtype::mxfp4, 128).count() == 68);
    // Odd sub-byte counts round up: 3 int4 values without scales = 12 bits = 2 B.
    CHECK(vector_bytes(KvFormat{KvDtype::int4, {}}, 3).count() == 2);
    // A partial group still carries a scale: 17 NVFP4 values = 68 bits + 2 x 8 bits = 84 bits -> 11
    // B.
    CHECK(vector_bytes(KvDtype::nvfp4, 17).count() == 11);
}

TEST_CASE("scale layouts can be stated explicitly", "[dtype]") {
    // fp8 with one fp32 scale per token per head: 128 + 4 = 132 B.
    const KvFormat f{KvDtype::fp8_e4m3, {ScaleGranularity::per_token_head, 32, 0}};
    CHECK(vector_bytes(f, 128).count() == 132);
    // int4 with an fp16 scale per group of 64: 64 B + 2 x 2 B = 68 B.
    const KvFormat g{KvDtype::int4, {ScaleGranularity::per_group, 16, 64}};
    CHECK(vector_bytes(g, 128).count() == 68);
}

TEST_CASE("vLLM's per-token-head and 4-over-6 caches cost what vLLM allocates", "[dtype][vllm]") {
    // vLLM's *_per_token_head types carve one fp32 scale per token per KV head, for K and for V,
    // from the KV allocation: AttentionSpec.page_size_bytes adds 2 x block x heads x 4 B to the
    // 2 x block x heads x head_size x 1 B of the values (vllm/v1/kv_cache_interface.py). A head
    // of 128: 128 + 4 = 132 B for K, as many for V.
    CHECK(bits(KvDtype::fp8_per_token_head) == 8);
    CHECK(vector_bytes(KvDtype::fp8_per_token_head, 128).count() == 132);
    CHECK(parse_kv_dtype("int8_per_token_head") == KvDtype::int8);
    CHECK(vector_bytes(*parse_kv_dtype("int8_per_token_head"), 128).count() == 132);
    // int4_per_token_head: 128 values of 4 bits = 64 B, + 4 B.
    CHECK(parse_kv_dtype("int4_per_token_head") == KvDtype::int4);
    CHECK(vector_bytes(*parse_kv_dtype("int4_per_token_head"), 128).count() == 68);
    // nvfp4_4over6 keeps NVFP4's packed layout (vLLM PR #45187: "The physical cache layout and
    // capacity remain NVFP4"): head_size / 2 + head_size / 16 = 64 + 8 = 72 B a head
    // (FullAttentionSpec.real_page_size_bytes, nvfp4_kv_cache_full_dim).
    CHECK(bits(KvDtype::nvfp4_4over6) == 4);
    CHECK(vector_bytes(KvDtype::nvfp4_4over6, 128).count() == 72);
    // Gemma 4's 256-wide heads: 128 + 16 = 144 B, as nvfp4.
    CHECK(vector_bytes(KvDtype::nvfp4_4over6, 256) == vector_bytes(KvDtype::nvfp4, 256));
    CHECK(vector_bytes(KvDtype::nvfp4_4over6, 256).count() == 144);
    // SGLang's fp4_e2m1: e2m1 values with one 8-bit scale per 16 (KVFP4QuantizeUtil,
    // python/sglang/srt/layers/quantization/kvfp4_tensor.py), NVFP4's bytes.
    CHECK(parse_kv_dtype("fp4_e2m1") == KvDtype::nvfp4);
}
