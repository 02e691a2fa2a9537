#include <catch2/catch.hpp>
#include <kvplan/format.hpp>

using namespace kvplan;

TEST_CASE("a size prints with its unit, binary by default", "[format]") {
    // 40 GiB = 42,949,672,960 B.
    CHECK(fmt::format("{}", 40 * GiB) == "40.00 GiB");
    // 40 GiB in GB: 42,949,672,960 / 10^9 = 42.95 (2 decimals).
    CHECK(fmt::format("{:GB}", 40 * GiB) == "42.95 GB");
    CHECK(fmt::format("{:B}", 320 * KiB) == "327680 B");
    // 327,680 B = 320 KiB exactly.
    CHECK(fmt::format("{}", 320 * KiB) == "320.00 KiB");
    CHECK(fmt::format("{:.0}", 320 * KiB) == "320 KiB");
    // Below 1 KiB a size is a whole number of bytes.
    CHECK(fmt::format("{}", 512 * B) == "512 B");
    CHECK(fmt::format("{}", Bytes{}) == "0 B");
    // 80 GB auto-scaled in decimal units.
    CHECK(fmt::format("{:si}", 80 * GB) == "80.00 GB");
    // 1,500 MiB = 1.46484375 GiB.
    CHECK(fmt::format("{:.3}", 1500 * MiB) == "1.465 GiB");
}

TEST_CASE("sizes above 2^53 bytes print without losing their unit", "[format]") {
    // 2^64 - 1 B = 16,777,216 TiB - 1 B: auto-scaling stops at TiB.
    CHECK(fmt::format("{:.0}", Bytes::exactly(~0ULL)) == "16777216 TiB");
    CHECK(fmt::format("{:B}", Bytes::exactly(~0ULL)) == "18446744073709551615 B");
}

TEST_CASE("rates, times and FLOPs print in decimal units", "[format]") {
    CHECK(fmt::format("{}", 3.35 * TB_per_s) == "3.35 TB/s");
    CHECK(fmt::format("{:.1TB/s}", 3.35 * TB_per_s) == "3.4 TB/s");
    CHECK(fmt::format("{:GB/s}", 3.35 * TB_per_s) == "3350.00 GB/s");
    CHECK(fmt::format("{}", 450.0 * GB_per_s) == "450.00 GB/s");
    // 0.0123 s is 12.30 ms; 45e-6 s is 45.00 us.
    CHECK(fmt::format("{}", 0.0123 * seconds) == "12.30 ms");
    CHECK(fmt::format("{}", 45.0 * microseconds) == "45.00 us");
    CHECK(fmt::format("{:ms}", 2.0 * seconds) == "2000.00 ms");
    CHECK(fmt::format("{}", 989.4 * TFLOP_per_s) == "989.40 TFLOP/s");
    CHECK(fmt::format("{}", 1.5 * PFLOP) == "1.50 PFLOP");
}
