#pragma once

// A GPU as capacity planning sees it: memory (as the vendor states it and as the driver reports
// it), peak memory bandwidth, dense tensor throughput per compute type, and its links. The bundled
// specs are JSON files under configs/gpus/ (loaded by kvplan/gpu_spec.hpp); this struct is what
// the core computes with.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "model.hpp"
#include "units.hpp"

namespace kvplan {

/// Tensor-core compute types a GPU may support, spelled as in JSON.
enum class ComputeDtype : std::uint8_t { tf32, bf16, fp16, fp8, int8, fp4 };

inline constexpr std::array all_compute_dtypes{ComputeDtype::tf32, ComputeDtype::bf16,
                                               ComputeDtype::fp16, ComputeDtype::fp8,
                                               ComputeDtype::int8, ComputeDtype::fp4};

[[nodiscard]] constexpr std::string_view name(ComputeDtype d) noexcept {
    switch (d) {
        case ComputeDtype::tf32: return "tf32";
        case ComputeDtype::bf16: return "bf16";
        case ComputeDtype::fp16: return "fp16";
        case ComputeDtype::fp8: return "fp8";
        case ComputeDtype::int8: return "int8";
        case ComputeDtype::fp4: return "fp4";
    }
    return "?";
}

[[nodiscard]] constexpr std::optional<ComputeDtype> parse_compute_dtype(std::string_view s) noexcept {
    for (ComputeDtype d : all_compute_dtypes)
        if (s == name(d)) return d;
    return std::nullopt;
}

/// One GPU SKU. Bandwidths are one direction, decimal (as vendors state them); memory is exact.
struct GpuSpec {
    ModelName id{};    ///< stable lower-case id, e.g. "h100-sxm"
    ModelName name{};  ///< the vendor's product name
    Bytes memory_stated{};  ///< the vendor's figure read in SI units (80 GB = 80e9 B)
    Bytes memory_total{};   ///< what the driver reports as total (nvidia-smi): the budget starts here
    BytesPerSecond memory_bandwidth{};
    std::array<FlopsPerSecond, all_compute_dtypes.size()> dense_flops{};  ///< zero: unsupported
    BytesPerSecond scale_up_bandwidth{};  ///< NVLink / Infinity Fabric per GPU, one direction; zero: none
    BytesPerSecond pcie_bandwidth{};      ///< host link, one direction

    /// Peak dense tensor throughput for `d`, or nullopt when the GPU has none for it.
    [[nodiscard]] constexpr std::optional<FlopsPerSecond> dense(ComputeDtype d) const noexcept {
        const FlopsPerSecond f = dense_flops[static_cast<std::size_t>(d)];
        if (!(f > FlopsPerSecond{})) return std::nullopt;
        return f;
    }
    constexpr GpuSpec& set_dense(ComputeDtype d, FlopsPerSecond f) noexcept {
        dense_flops[static_cast<std::size_t>(d)] = f;
        return *this;
    }
};

}  // namespace kvplan
