#include <catch2/catch.hpp>
#include <kvplan/units.hpp>

using namespace kvplan;

TEST_CASE("decimal and binary units are exact multiples of one byte", "[units]") {
    // 80 GB = 80 x 10^9 B; 80 GiB = 80 x 2^30 = 85,899,345,920 B.
    CHECK((80 * GB).count() == 80'000'000'000ULL);
    CHECK((80 * GiB).count() == 85'899'345'920ULL);
    CHECK(80 * GiB > 80 * GB);
    // 320 KiB = 327,680 B, which is 0.32768 MB: the two notations of the same size.
    CHECK((320 * KiB).count() == 327'680);
    CHECK((320 * KiB).in(MB) == Approx(0.32768));
    CHECK((320 * KiB).in(KiB) == 320.0);
}

TEST_CASE("reading a size names its unit", "[units]") {
    // 42,949,672,960 B = 40 GiB exactly = 42.94967296 GB.
    const Bytes b = Bytes::exactly(42'949'672'960ULL);
    CHECK(b.in(GiB) == 40.0);
    CHECK(b.in(GB) == Approx(42.94967296));
    // Precision survives sizes above 2^53 bytes: 2^60 + 1 B in B is not rounded to 2^60.
    const Bytes big = Bytes::exactly((1ULL << 60) + 1);
    CHECK(big.count() == (1ULL << 60) + 1);
    CHECK(big.in(TiB) == Approx(1048576.0));
}

TEST_CASE("size arithmetic never wraps", "[units][overflow]") {
    const Bytes max = Bytes::exactly(~0ULL);
    CHECK_THROWS_AS(max + Bytes::exactly(1), OverflowError);
    CHECK_THROWS_AS(max * 2, OverflowError);
    CHECK_THROWS_AS(Bytes::exactly(1) - Bytes::exactly(2), OverflowError);
    // 2^34 GiB = 2^64 B, one past the largest representable size.
    CHECK_THROWS_AS((1ULL << 34) * GiB, OverflowError);
    CHECK_NOTHROW(((1ULL << 34) - 1) * GiB);
    CHECK_THROWS_AS(-1 * GiB, OverflowError);
    CHECK_THROWS_WITH(max * 2, Catch::Contains("overflow"));
}

TEST_CASE("fractional sizes round to the nearest byte", "[units]") {
    // vLLM prints "Available KV cache memory: 5.38 GiB": 5.38 x 2^30 = 5,776,731,013.12 B ->
    // ...013.
    CHECK(round_to_bytes(5.38, GiB).count() == 5'776'731'013ULL);
    CHECK(round_to_bytes(0.4, B).count() == 0);
    CHECK_THROWS_AS(round_to_bytes(-1.0, GiB), OverflowError);
    CHECK_THROWS_AS(round_to_bytes(1e30, GiB), OverflowError);
}

TEST_CASE("bytes over a bandwidth is a time", "[units]") {
    // 141.1 GB at 2.039 TB/s: 141.1e9 / 2.039e12 = 69.2 ms.
    const Seconds t = round_to_bytes(141.1, GB) / (2.039 * TB_per_s);
    CHECK(t.in(milliseconds) == Approx(69.200588).epsilon(1e-6));
    // 1 PFLOP at 989 TFLOP/s: 1e15 / 989e12 = 1.0111 s.
    CHECK(((1.0 * PFLOP) / (989.0 * TFLOP_per_s)).in(seconds) == Approx(1.011122).epsilon(1e-6));
    CHECK((3.35 * TB_per_s).in(GB_per_s) == Approx(3350.0));
}
