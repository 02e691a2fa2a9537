#pragma once

// SGLang releases: what changes by release in what kvplan models of SGLang. kvplan's SGLang rules
// follow SGLang's main branch; an older release differs from it in the rows of this table only,
// each naming where it changed. The newest release kvplan knows is the default and is named in
// every answer, so a figure says which SGLang it is for. SGLang numbers its releases 0.5.x, each a
// release of its own (the patch is kept; post releases are not told apart).

#include <cstdint>
#include <optional>

#include "../gpu.hpp"
#include "../units.hpp"
#include "release.hpp"

namespace kvplan {

/// The oldest SGLang release kvplan models: 0.4.0 (December 2024), the first of the 0.4 line
/// whose start-up logs the corpus holds (tests/data/startup_logs/sglang).
inline constexpr EngineVersion sglang_oldest_release{0, 4, 0};
/// The newest SGLang release kvplan knows: 0.5.20 (September 2026: lmsysorg/sglang:v0.5.20
/// images, InferenceX PR #3318 of 2026-09-20); its rules are those of SGLang's main branch that
/// kvplan follows.
inline constexpr EngineVersion sglang_newest_release{0, 5, 20};

/// The SGLang release whose rules apply: the one given, else the newest kvplan knows.
[[nodiscard]] constexpr EngineVersion sglang_release_or_newest(
    const std::optional<EngineVersion>& given) noexcept {
    return given.value_or(sglang_newest_release);
}

/// How an SGLang release picks mem_fraction_static when --mem-fraction-static is unset
/// (python/sglang/srt/server_args.py).
enum class SglangFractionRule : std::uint8_t {
    /// By tensor-parallel size (ServerArgs.__post_init__ of the 0.4 line): 0.79 from tp 16, 0.81
    /// from tp 8, 0.85 from tp 4, 0.87 from tp 2, else 0.88 (sglang_tp_fraction).
    by_tp,
    /// SGLang 0.4.7, which kvplan cannot tell from 0.4.7.post1 (post releases are read as their
    /// release): the v0.4.7 tag (PR #7038, "chore: bump v0.4.7") was merged before SGLang PR
    /// #7054 on 2025-06-10 and keeps the tp table, 0.4.7.post1 runs PR #7054's rule
    /// (by_reserve). A fraction must be given (resolve_serving refuses the default).
    ambiguous,
    /// SGLang PR #7054 ("Simplify the heuristics for setting --mem-fraction-static", merged
    /// 2025-06-10), ServerArgs.__post_init__ through 0.5.2: a reserve by the GPU's memory and
    /// tp x pp, 4 GiB more with DP attention, taken from the GPU's memory
    /// (sglang_reserve_fraction).
    by_reserve,
    /// By the GPU's memory, the prefill chunk, the graph batch and the parallel size
    /// (_handle_gpu_memory_settings, SGLang PR #10975: sglang_mem_fraction).
    by_memory,
};

/// The custom all-reduce SGLang's ROCm images run in the tensor-parallel group: aiter's
/// CustomAllreduce (parallel_state.py, dispatch_custom_allreduce: "[AR] Using
/// AiterCustomAllreduce (AMD default)"), at the default max_size of the aiter the release's
/// docker/rocm.Dockerfile pins (AITER_COMMIT).
enum class AiterAllReduce : std::uint8_t {
    /// aiter through v0.1.10.post1: max_size 64 MiB; an uncached meta buffer of meta_size() +
    /// max_size and an input buffer of max_size.
    max_64_mib,
    /// aiter v0.1.10.post2 to v0.1.11: max_size 128 MiB, and an output buffer of max_size beside.
    max_128_mib,
    /// aiter from v0.1.12: max_size 1 GiB ("2GB bf16/half"), an uncached meta buffer of
    /// meta_size() + 2 x max_size (the two-stage kernel's temporary region) and an input buffer of
    /// max_size (aiter/dist/device_communicators/custom_all_reduce.py, CustomAllreduce.__init__
    /// and _init_ipc).
    max_1_gib,
};

/// What changes by SGLang release (the rows of sglang_releases).
struct SglangReleaseDefaults {
    EngineVersion since{};  ///< the first release with these rules
    SglangFractionRule fraction = SglangFractionRule::by_memory;
    AiterAllReduce aiter = AiterAllReduce::max_1_gib;
};

/// Where SGLang's rules changed, oldest first; a release takes the last row at or before it.
///   0.4.0   mem_fraction_static by tp (server_args.py, __post_init__); on ROCm aiter's custom
///           all-reduce at max_size 64 MiB (aiter v0.1.9.post1 in the 0.5.8 images, SGLang PR
///           #18076; earlier pins older, the same buffers).
///   0.4.7   the v0.4.7 tag (SGLang PR #7038) precedes SGLang PR #7054 (merged 2025-06-10), which
///           replaced the tp table by a reserve; 0.4.7.post1 carries it, and kvplan does not tell
///           the two apart: a fraction must be given.
///   0.4.8   SGLang PR #7054's reserve (sglang_reserve_fraction), through 0.5.2 and 0.5.3rc0.
///   0.5.3   the fraction by GPU memory (SGLang PR #10975, merged 2025-09-27, after 0.5.2 of
///           September 2025 and 0.5.3rc0 of 2025-09-15, SGLang PR #10468, whose "rc" kvplan does
///           not read): sglang_mem_fraction.
///   0.5.9   aiter v0.1.10.post3 (docker/rocm.Dockerfile of v0.5.9; SGLang PR #18423 of
///           2026-02-07 moved v0.1.9.post1 to v0.1.10.post2): max_size 128 MiB with an output
///           buffer.
///   0.5.10  aiter v0.1.12.post1 (SGLang PR #22657 of 2026-04-13 removes the hot fixes it covers;
///           the lmsysorg/sglang-rocm:v0.5.10rc0 image of 2026-04-14 carries it, InferenceX PR
///           #811), and every later pin (PR #25896's 32e1e6d7 of 2026-05-18 and on): max_size
///           1 GiB. GLM-5.1 on two MI355Xs under 0.5.12.post1 logs 8.18 GB taken by its
///           distributed groups, where the 0.5.9 image's GLM-5 logs 7.81 GB on eight.
inline constexpr SglangReleaseDefaults sglang_releases[] = {
    {.since = {0, 4, 0},
     .fraction = SglangFractionRule::by_tp,
     .aiter = AiterAllReduce::max_64_mib},
    {.since = {0, 4, 7},
     .fraction = SglangFractionRule::ambiguous,
     .aiter = AiterAllReduce::max_64_mib},
    {.since = {0, 4, 8},
     .fraction = SglangFractionRule::by_reserve,
     .aiter = AiterAllReduce::max_64_mib},
    {.since = {0, 5, 3}, .aiter = AiterAllReduce::max_64_mib},
    {.since = {0, 5, 9}, .aiter = AiterAllReduce::max_128_mib},
    {.since = {0, 5, 10}},
};

/// The rules of SGLang release `v`, or nullopt outside sglang_oldest_release ..
/// sglang_newest_release.
[[nodiscard]] constexpr std::optional<SglangReleaseDefaults> sglang_release_defaults(
    EngineVersion v) noexcept {
    if (v < sglang_oldest_release || v > sglang_newest_release) return std::nullopt;
    return detail::release_row(sglang_releases, v);
}

/// The 0.4 line's default mem_fraction_static at tensor-parallel size `tp`
/// (SglangFractionRule::by_tp).
[[nodiscard]] constexpr double sglang_tp_fraction(std::uint32_t tp) noexcept {
    return tp >= 16 ? 0.79 : tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88;
}

/// aiter's meta_size(): the Signal structure at the head of the meta buffer on gfx94x and gfx95x
/// (5,504 B, as aiter's custom_all_reduce.py states it beside _init_ipc).
inline constexpr Bytes aiter_meta_size = Bytes::exactly(5504);
/// The granularity an uncached HIP allocation of 2 MiB or more is backed in (coarse-grained, 2 MiB
/// aligned: hipMemGetAllocationGranularity, as aiter's _init_ipc states it).
inline constexpr Bytes hip_uncached_granularity = 2 * MiB;

/// The buffers aiter's CustomAllreduce holds on each GPU of a tensor-parallel group at `a`'s
/// max_size M: the uncached meta buffer (hipExtMallocWithFlags, rounded up to
/// hip_uncached_granularity), the input buffer of M (and from aiter v0.1.10.post2 to v0.1.11 an
/// output buffer of M) through PyTorch's allocator, and 8 MiB of rank_data.
///   max_64_mib   (5,504 B + 64 MiB -> 66 MiB) + 64 + 8 = 138 MiB;
///   max_128_mib  (5,504 B + 128 MiB -> 130 MiB) + 128 + 128 + 8 = 394 MiB;
///   max_1_gib    (5,504 B + 2 GiB -> 2 GiB + 2 MiB) + 1 GiB + 8 MiB = 3 GiB + 10 MiB.
[[nodiscard]] constexpr Bytes aiter_custom_all_reduce_bytes(AiterAllReduce a) {
    const auto uncached = [](Bytes b) {
        const std::uint64_t g = hip_uncached_granularity.count();
        return Bytes::exactly((b.count() + g - 1) / g * g);
    };
    const Bytes rank_data = 8 * MiB;
    switch (a) {
        case AiterAllReduce::max_64_mib:
            return uncached(aiter_meta_size + 64 * MiB) + 64 * MiB + rank_data;
        case AiterAllReduce::max_128_mib:
            return uncached(aiter_meta_size + 128 * MiB) + 2 * (128 * MiB) + rank_data;
        case AiterAllReduce::max_1_gib:
            return uncached(aiter_meta_size + 2 * GiB) + 1 * GiB + rank_data;
    }
    return Bytes{};
}

/// aiter's custom all-reduce buffers on each GPU of a tensor-parallel group of `tp` GPUs `gpu`
/// under SGLang release `v`, taken with the distributed groups before SGLang reads the pool's base
/// ("Init torch distributed ends. mem usage="); zero off ROCm (CDNA3, CDNA4), at tp 1, past
/// two GPUs without a fabric (custom_all_reduce.py turns the custom all-reduce off between more
/// than two PCIe-only GPUs), for a tp aiter does not support (2, 4, 6, 8:
/// CustomAllreduce._SUPPORTED_WORLD_SIZES), or outside the release table.
[[nodiscard]] constexpr Bytes sglang_aiter_all_reduce_bytes(const GpuSpec& gpu, std::uint32_t tp,
                                                            EngineVersion v) {
    if (!is_rocm(gpu.arch)) return {};
    if (tp != 2 && tp != 4 && tp != 6 && tp != 8) return {};
    if (tp > 2 && gpu.scale_up_bandwidth == BytesPerSecond{}) return {};
    const auto d = sglang_release_defaults(v);
    if (!d) return {};
    return aiter_custom_all_reduce_bytes(d->aiter);
}

static_assert(aiter_custom_all_reduce_bytes(AiterAllReduce::max_64_mib) == 138 * MiB);
static_assert(aiter_custom_all_reduce_bytes(AiterAllReduce::max_128_mib) == 394 * MiB);
static_assert(aiter_custom_all_reduce_bytes(AiterAllReduce::max_1_gib) == 3 * GiB + 10 * MiB);
static_assert(sglang_release_defaults({0, 4, 6})->fraction == SglangFractionRule::by_tp &&
              sglang_release_defaults({0, 4, 7})->fraction == SglangFractionRule::ambiguous &&
              sglang_release_defaults({0, 4, 8})->fraction == SglangFractionRule::by_reserve &&
              sglang_release_defaults({0, 5, 2})->fraction == SglangFractionRule::by_reserve &&
              sglang_release_defaults({0, 5, 3})->fraction == SglangFractionRule::by_memory);
static_assert(sglang_release_defaults({0, 5, 8})->aiter == AiterAllReduce::max_64_mib &&
              sglang_release_defaults({0, 5, 9})->aiter == AiterAllReduce::max_128_mib &&
              sglang_release_defaults({0, 5, 10})->aiter == AiterAllReduce::max_1_gib &&
              sglang_release_defaults(sglang_newest_release)->aiter == AiterAllReduce::max_1_gib);
static_assert(!sglang_release_defaults({0, 3, 6}) && !sglang_release_defaults({0, 5, 21}) &&
              !sglang_release_defaults({0, 13}));
static_assert(sglang_tp_fraction(8) == 0.81 && sglang_tp_fraction(1) == 0.88);

}  // namespace kvplan
