#pragma once

// Enums by table (magic_enum's enum_name / enum_cast): one table per enum lists each value with its
// spelling, and any further spellings it accepts after it. name() is the first spelling of a value,
// parse() finds any; the table is the one place a spelling lives.

#include <cstddef>

#include "../fixed_array.hpp"
#include "../optional.hpp"
#include "message.hpp"

namespace kvplan::detail {

/// One spelling of an enum value.
template <class E>
struct EnumName {
    E value;
    const char* name;
};

/// The first spelling of `e` in `table` ("?" when it has none).
template <class E, std::size_t N>
[[nodiscard]] constexpr const char* enum_name(const FixedArray<EnumName<E>, N>& table,
                                              E e) noexcept {
    for (const EnumName<E>& n : table)
        if (n.value == e) return n.name;
    return "?";
}

/// The value spelled `s` in `table`, or nothing.
template <class E, std::size_t N>
[[nodiscard]] constexpr Optional<E> enum_parse(const FixedArray<EnumName<E>, N>& table,
                                               TextRef s) noexcept {
    for (const EnumName<E>& n : table)
        if (s == TextRef(n.name)) return n.value;
    return {};
}

}  // namespace kvplan::detail
