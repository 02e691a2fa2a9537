#pragma once

// The GPU families whose kernels reach different fractions of their peaks, and which family a GPU
// is in: the latency estimate's parameters (roofline/estimate.hpp) and the engines' kernel choices
// (engine/startup.hpp, engine/vllm_backend.hpp) both go by it, so it stands apart from both.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "detail/enum_table.hpp"
#include "fixed_array.hpp"
#include "gpu.hpp"

namespace kvplan {

/// GPU families whose achieved fractions differ.
enum class GpuFamily : std::uint8_t { ampere, ada, hopper, blackwell, cdna3 };

inline constexpr std::array all_gpu_families{GpuFamily::ampere, GpuFamily::ada, GpuFamily::hopper,
                                             GpuFamily::blackwell, GpuFamily::cdna3};

/// Each family's spelling.
inline constexpr FixedArray<detail::EnumName<GpuFamily>, 5> gpu_family_names{{
    {GpuFamily::ampere, "ampere"},
    {GpuFamily::ada, "ada"},
    {GpuFamily::hopper, "hopper"},
    {GpuFamily::blackwell, "blackwell"},
    {GpuFamily::cdna3, "cdna3"},
}};

/// "ampere", "ada", "hopper", "blackwell", "cdna3".
[[nodiscard]] constexpr std::string_view name(GpuFamily f) noexcept {
    return detail::enum_name(gpu_family_names, f);
}

/// The family of a GPU by its id (a100* ampere; l4, l40* ada; h100*, h200*, h20, gh200* hopper;
/// b100*, b200*, b300*, gb200*, gb300* blackwell; mi300*, mi325* cdna3), or nullopt for one not
/// known.
[[nodiscard]] constexpr std::optional<GpuFamily> gpu_family(const GpuSpec& g) noexcept {
    const std::string_view id(g.id);
    const auto starts = [&](std::string_view p) { return id.substr(0, p.size()) == p; };
    if (starts("a100")) return GpuFamily::ampere;
    if (starts("l4")) return GpuFamily::ada;  // l4 and l40, l40s
    if (starts("h100") || starts("h200") || id == "h20" || starts("gh200"))
        return GpuFamily::hopper;
    if (starts("b100") || starts("b200") || starts("b300") || starts("gb200") || starts("gb300"))
        return GpuFamily::blackwell;
    if (starts("mi300") || starts("mi325")) return GpuFamily::cdna3;
    return std::nullopt;
}

}  // namespace kvplan
