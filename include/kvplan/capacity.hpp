#pragma once

// The inverse of sizing: given bytes on a rank, how many tokens, or sequences of a length, fit, and
// how long sequences can grow at a given concurrency. A block size of 1 means no paging.

#include <cstdint>

#include "detail/checked.hpp"
#include "kv_bytes.hpp"
#include "optional.hpp"
#include "paging.hpp"

namespace kvplan {

/// Bytes one sequence of `tokens` reserves: exact for block_size 1, else its paged blocks.
[[nodiscard]] constexpr Bytes reserved_per_sequence(const Model& m, KvFormat f,
                                                    std::uint64_t tokens,
                                                    std::uint32_t block_size = 1,
                                                    const Shard& s = {}) {
    if (block_size == 1) return kv_bytes_per_sequence(m, f, tokens, s);
    // paged_sequence's reserved bytes, without the used bytes it also sizes; under decode context
    // parallelism each rank pages its share of the tokens (vLLM: cdiv(cdiv(L, dcp), block)).
    return detail::paged_sum(m, f, s, block_size,
                             [&](const CacheSpec& spec) {
                                 return held_blocks(spec, tokens_on_rank(spec.kind, tokens, s),
                                                    block_size)
                                     .count();
                             })
        .reserved;
}

/// Tokens of context that fit in `budget` counting every growing layer per token (the KV-token
/// figure engines print for uniform models); empty when no layer grows with context.
[[nodiscard]] constexpr Optional<std::uint64_t> tokens_that_fit(Bytes budget, const Model& m,
                                                                KvFormat f, const Shard& s = {}) {
    const Bytes per_token = kv_bytes_per_token(m, f, s);
    if (per_token.is_zero()) return {};  // nothing grows with context
    if (s.dcp <= 1) return budget / per_token;
    // Under decode context parallelism a rank holds one token in dcp of the layers dcp splits and
    // every token of the others: T tokens take T / dcp x split + T x whole bytes.
    const Bytes split = detail::sum_over_shard(m, s, [&](const CacheSpec& spec) {
        return dcp_splits(spec.kind) ? layer_bytes_per_token(spec, f, s.tp) : Bytes{};
    });
    const Bytes whole = per_token - split;
    if (whole.is_zero()) return detail::mul(budget / per_token, s.dcp, "a token count");
    return detail::mul(budget.count(), s.dcp, "a byte count") /
           detail::add(split.count(), detail::mul(whole.count(), s.dcp, "a byte count"),
                       "a byte count");
}

/// Sequences of `tokens` (>= 1) that fit in `budget`.
[[nodiscard]] constexpr std::uint64_t sequences_that_fit(Bytes budget, const Model& m, KvFormat f,
                                                         std::uint64_t tokens,
                                                         std::uint32_t block_size = 1,
                                                         const Shard& s = {}) {
    KVPLAN_EXPECTS(tokens >= 1);
    const Bytes each = reserved_per_sequence(m, f, tokens, block_size, s);
    if (each.is_zero()) return detail::u64_max;
    return budget / each;
}

/// The longest context each of `sequences` (>= 1) sequences can have within `budget`: 0 when not
/// even one token fits; empty when the sequences fit at any length (every growing layer is
/// windowed and the windows fit).
[[nodiscard]] constexpr Optional<std::uint64_t> max_context(Bytes budget, const Model& m,
                                                            KvFormat f, std::uint64_t sequences,
                                                            std::uint32_t block_size = 1,
                                                            const Shard& s = {}) {
    KVPLAN_EXPECTS(sequences >= 1 && block_size >= 1);
    const Bytes each_budget = budget / sequences;
    const auto fits = [&](std::uint64_t len) {
        // A sequence too large for 64 bits is larger than any budget: it does not fit.
        try {
            return reserved_per_sequence(m, f, len, block_size, s) <= each_budget;
        } catch (const OverflowError&) {
            return false;
        }
    };
    const Bytes slope = unbounded_bytes_per_token(m, f, s);
    if (slope.is_zero()) {
        // Past the largest window (and one block of slack for alignment) nothing grows. Saturate:
        // a window near 2^64 must not wrap the plateau round to a short length.
        const std::uint64_t window = largest_window(m);
        const std::uint64_t slack = 2ULL * block_size;
        const std::uint64_t plateau =
            window > detail::u64_max - slack ? detail::u64_max : window + slack;
        if (fits(plateau)) return {};        // any length fits
        std::uint64_t lo = 0, hi = plateau;  // fits(lo) or lo == 0; !fits(hi)
        while (hi - lo > 1) {
            const std::uint64_t mid = lo + (hi - lo) / 2;
            (fits(mid) ? lo : hi) = mid;
        }
        return fits(lo) ? lo : 0;
    }
    // Beyond budget / slope tokens the growing layers alone exceed the budget, so when that many
    // fit it is the answer (checked apart: budget / slope + 1 would wrap for a 1-byte slope).
    std::uint64_t lo = 0, hi = each_budget / slope;
    if (s.dcp > 1) hi = hi > detail::u64_max / s.dcp ? detail::u64_max : hi * s.dcp;
    if (!fits(0)) return 0;
    if (fits(hi)) return hi;
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

}  // namespace kvplan
