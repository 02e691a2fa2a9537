#pragma once

// Opt-in fmt support (link kvplan::format): sizes and quantities print with their unit.
//
//   fmt::format("{}", 40 * GiB)            "40.00 GiB"   (auto-scaled in binary units)
//   fmt::format("{:GB}", 40 * GiB)         "42.95 GB"    (a named unit)
//   fmt::format("{:.1TB/s}", 3.35 * TB_per_s)  "3.4 TB/s"
//   fmt::format("{:B}", 320 * KiB)         "327680 B"    (the exact byte count)
//   fmt::format("{:si}", 80 * GB)          "80.00 GB"    (auto-scaled in decimal units)
//
// Spec grammar: [.precision][unit], where unit is a symbol of units.hpp for that quantity, or "si"
// for automatic decimal units. Without a unit, sizes scale in binary units (what allocators report)
// and rates, times and FLOPs in decimal ones (what vendors state). A wrong unit is a compile error.

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <string_view>

#include "model.hpp"
#include "units.hpp"

namespace kvplan::detail {

/// A unit a quantity prints in. Auto-scaling stays within one family: binary units (KiB, GiB/s)
/// or decimal ones; the base unit (B, s, FLOP) belongs to both.
enum class UnitFamily : unsigned char { base, decimal, binary };

struct ScaleEntry {
    std::string_view symbol;
    double scale;
    UnitFamily family = UnitFamily::decimal;
};

// Units a quantity may be printed in, smallest first. Auto-scaling picks the largest unit not
// above the value, within the family (binary or decimal) asked for.
inline constexpr std::array<ScaleEntry, 9> size_units{
    {{"B", 1.0, UnitFamily::base},
     {"kB", 1e3},
     {"MB", 1e6},
     {"GB", 1e9},
     {"TB", 1e12},
     {"KiB", 1024.0, UnitFamily::binary},
     {"MiB", 1048576.0, UnitFamily::binary},
     {"GiB", 1073741824.0, UnitFamily::binary},
     {"TiB", 1099511627776.0, UnitFamily::binary}}};
inline constexpr std::array<ScaleEntry, 6> rate_units{
    {{"B/s", 1.0, UnitFamily::base},
     {"kB/s", 1e3},
     {"MB/s", 1e6},
     {"GB/s", 1e9},
     {"TB/s", 1e12},
     {"GiB/s", 1073741824.0, UnitFamily::binary}}};
inline constexpr std::array<ScaleEntry, 4> time_units{
    {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0, UnitFamily::base}}};
inline constexpr std::array<ScaleEntry, 6> flop_units{{{"FLOP", 1.0, UnitFamily::base},
                                                       {"MFLOP", 1e6},
                                                       {"GFLOP", 1e9},
                                                       {"TFLOP", 1e12},
                                                       {"PFLOP", 1e15},
                                                       {"EFLOP", 1e18}}};
inline constexpr std::array<ScaleEntry, 5> flop_rate_units{{{"FLOP/s", 1.0, UnitFamily::base},
                                                            {"GFLOP/s", 1e9},
                                                            {"TFLOP/s", 1e12},
                                                            {"PFLOP/s", 1e15},
                                                            {"EFLOP/s", 1e18}}};

/// A parsed "[.precision][unit]" spec. unit < 0: automatic.
struct QuantitySpec {
    int precision = 2;
    int unit = -1;
    bool si = false;
};

template <std::size_t N>
constexpr const char* parse_quantity_spec(fmt::format_parse_context& ctx, QuantitySpec& spec,
                                          const std::array<ScaleEntry, N>& units) {
    auto it = ctx.begin();
    const auto end = ctx.end();
    if (it != end && *it == '.') {
        ++it;
        if (it == end || *it < '0' || *it > '9')
            throw fmt::format_error("a precision needs digits after '.'");
        int p = 0;
        while (it != end && *it >= '0' && *it <= '9') {
            p = p * 10 + (*it - '0');
            if (p > 17) throw fmt::format_error("precision above 17 digits");
            ++it;
        }
        spec.precision = p;
    }
    auto first = it;
    while (it != end && *it != '}') ++it;
    const std::string_view sym(first, static_cast<std::size_t>(it - first));
    if (sym.empty()) return it;
    if (sym == "si") {
        spec.si = true;
        return it;
    }
    for (std::size_t i = 0; i < N; ++i)
        if (units[i].symbol == sym) {
            spec.unit = static_cast<int>(i);
            return it;
        }
    throw fmt::format_error("unknown unit for this quantity");
}

/// The unit auto-scaling chooses for `value` (in base units) within a family: the largest not
/// above the value, or the smallest of the family when the value is below all of them.
template <std::size_t N>
constexpr std::size_t auto_unit(double value, const std::array<ScaleEntry, N>& units, bool binary) {
    std::size_t best = N;
    if (value == 0.0)
        for (std::size_t i = 0; i < N; ++i)
            if (units[i].family == UnitFamily::base) return i;
    for (std::size_t i = 0; i < N; ++i) {
        const UnitFamily f = units[i].family;
        if (f != UnitFamily::base && (f == UnitFamily::binary) != binary) continue;
        if (best == N) best = i;  // the smallest of the family
        if (value >= units[i].scale && units[i].scale >= units[best].scale) best = i;
    }
    return best;
}

template <class FormatContext, std::size_t N>
auto format_scaled(double base_value, const QuantitySpec& spec,
                   const std::array<ScaleEntry, N>& units, bool binary_default,
                   FormatContext& ctx) {
    const std::size_t u = spec.unit >= 0 ? static_cast<std::size_t>(spec.unit)
                                         : auto_unit(base_value < 0 ? -base_value : base_value,
                                                     units, binary_default && !spec.si);
    return fmt::format_to(ctx.out(), "{:.{}f} {}", base_value / units[u].scale, spec.precision,
                          units[u].symbol);
}

}  // namespace kvplan::detail

/// Sizes: auto binary units by default; "{:B}" prints the exact integer count of bytes.
/// A model or GPU name, as its characters.
template <>
struct fmt::formatter<kvplan::ModelName> : fmt::formatter<fmt::string_view> {
    template <class FormatContext>
    auto format(const kvplan::ModelName& n, FormatContext& ctx) const -> decltype(ctx.out()) {
        return fmt::formatter<fmt::string_view>::format(fmt::string_view(n.data(), n.size()), ctx);
    }
};

template <>
struct fmt::formatter<kvplan::Bytes> {
    kvplan::detail::QuantitySpec spec;
    constexpr auto parse(format_parse_context& ctx) {
        return kvplan::detail::parse_quantity_spec(ctx, spec, kvplan::detail::size_units);
    }
    template <class FormatContext>
    auto format(kvplan::Bytes b, FormatContext& ctx) const {
        namespace d = kvplan::detail;
        // Below one KiB (or kB) an auto-scaled size is a whole number of bytes: "512 B".
        const bool small = spec.unit < 0 && b.count() < (spec.si ? 1000U : 1024U);
        if (spec.unit == 0 || small) return fmt::format_to(ctx.out(), "{} B", b.count());
        const std::size_t u =
            spec.unit >= 0 ? static_cast<std::size_t>(spec.unit)
                           : d::auto_unit(static_cast<double>(b.count()), d::size_units, !spec.si);
        const d::ScaleEntry& e = d::size_units[u];
        // Read through Bytes::in so that sizes above 2^53 bytes keep their precision.
        const kvplan::ByteUnit unit{static_cast<std::uint64_t>(e.scale), e.symbol.data()};
        return fmt::format_to(ctx.out(), "{:.{}f} {}", b.in(unit), spec.precision, e.symbol);
    }
};

template <>
struct fmt::formatter<kvplan::BytesPerSecond> {
    kvplan::detail::QuantitySpec spec;
    constexpr auto parse(format_parse_context& ctx) {
        return kvplan::detail::parse_quantity_spec(ctx, spec, kvplan::detail::rate_units);
    }
    template <class FormatContext>
    auto format(kvplan::BytesPerSecond r, FormatContext& ctx) const {
        return kvplan::detail::format_scaled(r.in(kvplan::B_per_s), spec,
                                             kvplan::detail::rate_units, false, ctx);
    }
};

template <>
struct fmt::formatter<kvplan::Seconds> {
    kvplan::detail::QuantitySpec spec;
    constexpr auto parse(format_parse_context& ctx) {
        return kvplan::detail::parse_quantity_spec(ctx, spec, kvplan::detail::time_units);
    }
    template <class FormatContext>
    auto format(kvplan::Seconds t, FormatContext& ctx) const {
        return kvplan::detail::format_scaled(t.in(kvplan::seconds), spec,
                                             kvplan::detail::time_units, false, ctx);
    }
};

template <>
struct fmt::formatter<kvplan::Flops> {
    kvplan::detail::QuantitySpec spec;
    constexpr auto parse(format_parse_context& ctx) {
        return kvplan::detail::parse_quantity_spec(ctx, spec, kvplan::detail::flop_units);
    }
    template <class FormatContext>
    auto format(kvplan::Flops f, FormatContext& ctx) const {
        return kvplan::detail::format_scaled(f.in(kvplan::FLOP), spec, kvplan::detail::flop_units,
                                             false, ctx);
    }
};

template <>
struct fmt::formatter<kvplan::FlopsPerSecond> {
    kvplan::detail::QuantitySpec spec;
    constexpr auto parse(format_parse_context& ctx) {
        return kvplan::detail::parse_quantity_spec(ctx, spec, kvplan::detail::flop_rate_units);
    }
    template <class FormatContext>
    auto format(kvplan::FlopsPerSecond f, FormatContext& ctx) const {
        return kvplan::detail::format_scaled(f.in(kvplan::FLOP_per_s), spec,
                                             kvplan::detail::flop_rate_units, false, ctx);
    }
};
