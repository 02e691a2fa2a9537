#pragma once

// Reading sizes from a config.json: required fields under their aliases, 32-bit sizes.

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "../json.hpp"

namespace kvplan {

namespace detail::hf {

constexpr std::uint64_t u32_max = 0xFFFF'FFFFULL;

/// A required size under the first present of `keys` (the first key names it when all are
/// missing).
[[nodiscard]] inline std::uint64_t size_field(const JsonReader& r,
                                              std::initializer_list<std::string_view> keys,
                                              std::uint64_t max = u32_max) {
    const auto k = r.first_present(keys);
    return r.positive_integer(k ? *k : *keys.begin(), max);
}

[[nodiscard]] inline std::uint32_t u32(std::uint64_t v) { return static_cast<std::uint32_t>(v); }

}  // namespace detail::hf

}  // namespace kvplan
