#pragma once

// The ideal cache: exactly the bytes of each sequence's context, no blocks.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "../budget.hpp"
#include "../capacity.hpp"
#include "../detail/checked.hpp"
#include "../dtype.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"

namespace kvplan {

/// The ideal cache: exactly the bytes of each sequence's context, windows applied, no blocks.
struct IdealKvCache {
    Bytes available{};
    std::uint32_t limiting_stage = 0;
    Bytes per_token{};                      ///< every growing layer, on the limiting stage
    std::optional<std::uint64_t> tokens{};  ///< available / per_token; nullopt: nothing grows
};

/// The ideal cache for `m` under `l` with `available[stage]` bytes per GPU.
[[nodiscard]] constexpr IdealKvCache ideal_kv_cache(const Model& m, KvFormat f, const Layout& l,
                                                    std::span<const Bytes> available) {
    KVPLAN_EXPECTS(available.size() == 1 || available.size() == l.pp());
    IdealKvCache c;
    c.available = available[0];
    bool first = true;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const Bytes avail = available[available.size() == 1 ? 0 : st];
        const auto t = tokens_that_fit(avail, m, f, l.stage(st));
        if (first || detail::min_bounded(c.tokens, t) != c.tokens) {
            c.tokens = first ? t : detail::min_bounded(c.tokens, t);
            c.limiting_stage = st;
            c.per_token = kv_bytes_per_token(m, f, l.stage(st));
        }
        first = false;
    }
    return c;
}

}  // namespace kvplan
