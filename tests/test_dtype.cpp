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
