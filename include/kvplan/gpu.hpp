#pragma once

// A GPU as capacity planning sees it: memory (as the vendor states it and as the CUDA or HIP
// runtime reports it), peak memory bandwidth, dense tensor throughput per compute type, and its
// links. The bundled specs are JSON files under configs/gpus/ (loaded by kvplan/gpu_spec.hpp); this
// struct is what the core computes with.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "detail/enum_table.hpp"
#include "model.hpp"
#include "units.hpp"

namespace kvplan {

/// Tensor-core compute types a GPU may support, spelled as in JSON.
enum class ComputeDtype : std::uint8_t { tf32, bf16, fp16, fp8, int8, fp4 };

inline constexpr std::array all_compute_dtypes{ComputeDtype::tf32, ComputeDtype::bf16,
                                               ComputeDtype::fp16, ComputeDtype::fp8,
                                               ComputeDtype::int8, ComputeDtype::fp4};

/// Each compute type's spelling.
inline constexpr FixedArray<detail::EnumName<ComputeDtype>, 6> compute_dtype_names{{
    {ComputeDtype::tf32, "tf32"},
    {ComputeDtype::bf16, "bf16"},
    {ComputeDtype::fp16, "fp16"},
    {ComputeDtype::fp8, "fp8"},
    {ComputeDtype::int8, "int8"},
    {ComputeDtype::fp4, "fp4"},
}};

[[nodiscard]] constexpr std::string_view name(ComputeDtype d) noexcept {
    return detail::enum_name(compute_dtype_names, d);
}

[[nodiscard]] constexpr std::optional<ComputeDtype> parse_compute_dtype(
    std::string_view s) noexcept {
    if (const auto d = detail::enum_parse(compute_dtype_names, s)) return *d;
    return std::nullopt;
}

/// The architecture of a GPU, spelled as in JSON: what decides which data types its kernels can
/// hold (kv_dtype_refusal).
enum class GpuArch : std::uint8_t { unknown, ampere, ada, hopper, blackwell, cdna3, cdna4 };

/// Each architecture's spelling.
inline constexpr FixedArray<detail::EnumName<GpuArch>, 7> gpu_arch_names{{
    {GpuArch::unknown, "unknown"},
    {GpuArch::ampere, "ampere"},
    {GpuArch::ada, "ada"},
    {GpuArch::hopper, "hopper"},
    {GpuArch::blackwell, "blackwell"},
    {GpuArch::cdna3, "cdna3"},
    {GpuArch::cdna4, "cdna4"},
}};

[[nodiscard]] constexpr std::string_view name(GpuArch a) noexcept {
    return detail::enum_name(gpu_arch_names, a);
}

[[nodiscard]] constexpr std::optional<GpuArch> parse_gpu_arch(std::string_view s) noexcept {
    if (const auto a = detail::enum_parse(gpu_arch_names, s)) return *a;
    return std::nullopt;
}

/// Whether `a` is AMD's (CDNA3, CDNA4): the engines run ROCm there, with its own communication
/// and kernels.
[[nodiscard]] constexpr bool is_rocm(GpuArch a) noexcept {
    return a == GpuArch::cdna3 || a == GpuArch::cdna4;
}

/// The instruction set a GPU's runtime reports, which engines test to pick their kernels:
/// NVIDIA's compute capability (torch.cuda.get_device_capability(), (9, 0) on an H100; vLLM's
/// DeviceCapability in vllm/platforms/interface.py) or AMD's gfx target (gcnArchName, "gfx942"
/// on an MI300X). Not stated: no rule keyed on it applies.
struct ComputeCapability {
    enum class Isa : std::uint8_t { none, sm, gfx };
    Isa isa = Isa::none;
    std::uint8_t major = 0;     ///< SM 9.0: 9; gfx942: 9
    std::uint8_t minor = 0;     ///< SM 9.0: 0; gfx942: 4 (a hexadecimal digit)
    std::uint8_t stepping = 0;  ///< gfx942: 2 (a hexadecimal digit); 0 for an SM

    [[nodiscard]] constexpr bool stated() const noexcept { return isa != Isa::none; }
    /// SM major.x, any minor: vLLM's is_device_capability_family(major x 10).
    [[nodiscard]] constexpr bool sm_family(std::uint8_t m) const noexcept {
        return isa == Isa::sm && major == m;
    }
    /// SM major.minor or later: vLLM's has_device_capability.
    [[nodiscard]] constexpr bool sm_at_least(std::uint8_t ma, std::uint8_t mi) const noexcept {
        return isa == Isa::sm && (major > ma || (major == ma && minor >= mi));
    }
    friend constexpr bool operator==(const ComputeCapability&, const ComputeCapability&) = default;
};

/// An NVIDIA compute capability, SM major.minor.
[[nodiscard]] constexpr ComputeCapability sm(std::uint8_t major, std::uint8_t minor) noexcept {
    return {ComputeCapability::Isa::sm, major, minor, 0};
}
/// An AMD gfx target: gfx942 is gfx(9, 0x4, 0x2).
[[nodiscard]] constexpr ComputeCapability gfx(std::uint8_t major, std::uint8_t minor,
                                              std::uint8_t stepping) noexcept {
    return {ComputeCapability::Isa::gfx, major, minor, stepping};
}

/// "9.0" or "gfx942" (empty when not stated): the spelling of the runtime and of the spec files.
[[nodiscard]] inline std::string text(ComputeCapability c) {
    const auto hex = [](std::uint8_t d) {
        return static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
    };
    switch (c.isa) {
        case ComputeCapability::Isa::sm:
            return std::to_string(c.major) + "." + std::to_string(c.minor);
        case ComputeCapability::Isa::gfx:
            return "gfx" + std::to_string(c.major) + hex(c.minor) + hex(c.stepping);
        case ComputeCapability::Isa::none:
            break;
    }
    return {};
}

/// `s` as a compute capability ("12.0": SM 12.0; "gfx90a": gfx(9, 0, 0xa)), or nullopt when it
/// is neither spelling.
[[nodiscard]] constexpr std::optional<ComputeCapability> parse_compute_capability(
    std::string_view s) noexcept {
    const auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
    const auto hex = [&](char ch) -> int {
        if (digit(ch)) return ch - '0';
        if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
        return -1;
    };
    const auto decimal = [&](std::string_view d) -> int {
        if (d.empty() || d.size() > 2) return -1;
        int v = 0;
        for (char ch : d) {
            if (!digit(ch)) return -1;
            v = v * 10 + (ch - '0');
        }
        return v;
    };
    if (s.substr(0, 3) == "gfx") {
        const std::string_view rest = s.substr(3);
        if (rest.size() < 3) return std::nullopt;
        const int ma = decimal(rest.substr(0, rest.size() - 2));
        const int mi = hex(rest[rest.size() - 2]);
        const int st = hex(rest[rest.size() - 1]);
        if (ma <= 0 || mi < 0 || st < 0) return std::nullopt;
        return gfx(static_cast<std::uint8_t>(ma), static_cast<std::uint8_t>(mi),
                   static_cast<std::uint8_t>(st));
    }
    const std::size_t dot = s.find('.');
    if (dot == std::string_view::npos || s.size() != dot + 2) return std::nullopt;
    const int ma = decimal(s.substr(0, dot));
    if (ma <= 0 || !digit(s[dot + 1])) return std::nullopt;
    return sm(static_cast<std::uint8_t>(ma), static_cast<std::uint8_t>(s[dot + 1] - '0'));
}

/// One GPU SKU. Bandwidths are one direction, decimal (as vendors state them); memory is exact.
struct GpuSpec {
    ModelName id{};                   ///< stable lower-case id, e.g. "h100-sxm"
    ModelName name{};                 ///< the vendor's product name
    GpuArch arch = GpuArch::unknown;  ///< its architecture; unknown: no data-type rule applies
    /// Its compute capability or gfx target, where engines decide by it (kv_dtype_refusal,
    /// vllm_attention_backend); not stated: they fall back to `arch`.
    ComputeCapability capability{};
    Bytes memory_stated{};  ///< the vendor's figure read in SI units (80 GB = 80e9 B)
    /// What the CUDA or HIP runtime reports as total (cudaMemGetInfo, torch.cuda.mem_get_info):
    /// the budget starts here. nvidia-smi's total is larger by the memory the driver reserves.
    Bytes memory_total{};
    /// What the driver's tool reports as total (nvidia-smi memory.total, rocm-smi VRAM Total):
    /// SGLang sizes its reserve from it. Zero: not stated (memory_total stands in).
    Bytes memory_driver{};
    BytesPerSecond memory_bandwidth{};
    std::array<FlopsPerSecond, all_compute_dtypes.size()> dense_flops{};  ///< zero: unsupported
    BytesPerSecond
        scale_up_bandwidth{};  ///< NVLink / Infinity Fabric per GPU, one direction; zero: none
    BytesPerSecond pcie_bandwidth{};  ///< host link, one direction
    /// GPUs in one node: one host and its operating system (8 on an HGX or DGX board, 4 in a
    /// compute tray of a GB200 or GB300 NVL72 rack).
    std::uint32_t gpus_per_node = 8;
    /// GPUs one scale-up fabric joins (NVLink, Infinity Fabric): 8 on an HGX board, 72 in an NVL72
    /// rack, 2 for bridged PCIe pairs, 1 without a link; 0: as many as gpus_per_node.
    std::uint32_t scale_up_gpus = 0;
    /// Node-to-node bandwidth per GPU, one direction (its NIC: 400 Gb/s InfiniBand NDR is
    /// 50 GB/s); zero: not stated.
    BytesPerSecond scale_out_bandwidth{};
    /// Streaming multiprocessors (NVIDIA) or compute units (AMD), as the runtime counts them
    /// (torch.cuda.get_device_properties().multi_processor_count); zero: not stated. Kernels that
    /// keep a buffer per program launch one program per unit.
    std::uint32_t compute_units = 0;

    /// The GPUs one scale-up fabric joins (scale_up_gpus, or the node when it is not stated).
    [[nodiscard]] constexpr std::uint32_t scale_up_domain() const noexcept {
        return scale_up_gpus != 0 ? scale_up_gpus : gpus_per_node;
    }
    /// The most GPUs a collective reaches without the node-to-node network: the node, or a
    /// scale-up domain of whole nodes (an NVL72 rack).
    [[nodiscard]] constexpr std::uint32_t fast_domain() const noexcept {
        return scale_up_domain() > gpus_per_node ? scale_up_domain() : gpus_per_node;
    }

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

/// Its architecture, and its compute capability where stated: "blackwell, compute capability
/// 12.0", as messages name a GPU's kind.
[[nodiscard]] inline std::string arch_text(const GpuSpec& g) {
    std::string out(name(g.arch));
    if (g.capability.stated())
        out.append(g.capability.isa == ComputeCapability::Isa::sm ? ", compute capability " : ", ")
            .append(text(g.capability));
    return out;
}

namespace gpus {
namespace detail {

/// A spec from the figures of its configs/gpus file: bytes (stated, runtime; driver last), TB/s,
/// dense TFLOP/s in all_compute_dtypes order (0: unsupported), GB/s per direction (0: no scale-up
/// link; no scale-out figure).
[[nodiscard]] constexpr GpuSpec make(std::string_view id, std::string_view name,
                                     std::uint64_t stated, std::uint64_t runtime, double tb_per_s,
                                     std::array<double, all_compute_dtypes.size()> tflops,
                                     double scale_up_gb_per_s, double pcie_gb_per_s,
                                     double scale_out_gb_per_s = 0, std::uint32_t node_gpus = 8,
                                     std::uint64_t driver = 0, std::uint32_t scale_up_gpus = 0,
                                     GpuArch arch = GpuArch::unknown) {
    GpuSpec g{.id = id,
              .name = name,
              .arch = arch,
              .memory_stated = Bytes::exactly(stated),
              .memory_total = Bytes::exactly(runtime),
              .memory_driver = Bytes::exactly(driver),
              .memory_bandwidth = tb_per_s * TB_per_s,
              .scale_up_bandwidth = scale_up_gb_per_s * GB_per_s,
              .pcie_bandwidth = pcie_gb_per_s * GB_per_s,
              .gpus_per_node = node_gpus,
              .scale_up_gpus = scale_up_gpus,
              .scale_out_bandwidth = scale_out_gb_per_s * GB_per_s};
    for (std::size_t i = 0; i < tflops.size(); ++i) g.dense_flops[i] = tflops[i] * TFLOP_per_s;
    return g;
}

/// `g` with its compute capability (GpuSpec::capability) stated.
[[nodiscard]] constexpr GpuSpec with_capability(GpuSpec g, ComputeCapability c) noexcept {
    g.capability = c;
    return g;
}

/// `g` with its compute units (GpuSpec::compute_units) stated.
[[nodiscard]] constexpr GpuSpec with_compute_units(GpuSpec g, std::uint32_t units) noexcept {
    g.compute_units = units;
    return g;
}

}  // namespace detail

// The bundled configs/gpus/*.json as constants, for code that wants no JSON; a test checks that
// each equals its file. Figures and their sources are in the files. Dense TFLOP/s order: tf32,
// bf16, fp16, fp8, int8, fp4.
inline constexpr GpuSpec a100_sxm4_40gb = detail::with_capability(
    detail::with_compute_units(
        detail::make("a100-sxm4-40gb", "NVIDIA A100 SXM4 40GB", 40'000'000'000, 42'298'834'944,
                     1.555, {156, 312, 312, 0, 624, 0}, 300, 32, 0, 8, 42'949'672'960, 8,
                     GpuArch::ampere),
        108),
    sm(8, 0));
inline constexpr GpuSpec a100_sxm4_80gb = detail::with_capability(
    detail::with_compute_units(
        detail::make("a100-sxm4-80gb", "NVIDIA A100 SXM4 80GB", 80'000'000'000, 85'100'068'864,
                     2.039, {156, 312, 312, 0, 624, 0}, 300, 32, 0, 8, 85'899'345'920, 8,
                     GpuArch::ampere),
        108),
    sm(8, 0));
inline constexpr GpuSpec a100_pcie_80gb = detail::with_capability(
    detail::with_compute_units(
        detail::make("a100-pcie-80gb", "NVIDIA A100 80GB PCIe", 80'000'000'000, 85'100'068'864,
                     1.935, {156, 312, 312, 0, 624, 0}, 0, 32, 0, 8, 85'899'345'920, 1,
                     GpuArch::ampere),
        108),
    sm(8, 0));
inline constexpr GpuSpec h100_sxm = detail::with_capability(
    detail::with_compute_units(
        detail::make("h100-sxm", "NVIDIA H100 SXM5 80GB", 80'000'000'000, 85'029'027'840, 3.35,
                     {494.7, 989.4, 989.4, 1978.9, 1978.9, 0}, 450, 64, 50, 8, 85'520'809'984, 8,
                     GpuArch::hopper),
        132),
    sm(9, 0));
inline constexpr GpuSpec h100_pcie = detail::with_capability(
    detail::with_compute_units(detail::make("h100-pcie", "NVIDIA H100 PCIe 80GB", 80'000'000'000,
                                            84'943'044'608, 2.0, {378, 756, 756, 1513, 1513, 0}, 0,
                                            64, 0, 8, 85'520'809'984, 1, GpuArch::hopper),
                               114),
    sm(9, 0));
inline constexpr GpuSpec h100_nvl = detail::with_capability(
    detail::with_compute_units(
        detail::make("h100-nvl", "NVIDIA H100 NVL 94GB", 94'000'000'000, 99'861'594'112, 3.9,
                     {417.5, 835.5, 835.5, 1670.5, 1670.5, 0}, 300, 64, 0, 8, 100'485'038'080, 2,
                     GpuArch::hopper),
        132),
    sm(9, 0));
inline constexpr GpuSpec h200_sxm = detail::with_capability(
    detail::with_compute_units(
        detail::make("h200-sxm", "NVIDIA H200 SXM 141GB", 141'000'000'000, 150'109'945'856, 4.8,
                     {494.7, 989.4, 989.4, 1978.9, 1978.9, 0}, 450, 64, 50, 8, 150'754'820'096, 8,
                     GpuArch::hopper),
        132),
    sm(9, 0));
inline constexpr GpuSpec b200 =
    detail::with_capability(detail::make("b200", "NVIDIA B200 (HGX B200, 180GB)", 180'000'000'000,
                                         191'502'483'456, 7.7, {1100, 2250, 2250, 4500, 4500, 9000},
                                         900, 64, 50, 8, 192'265'846'784, 8, GpuArch::blackwell),
                            sm(10, 0));
inline constexpr GpuSpec mi300x = detail::with_capability(
    detail::make("mi300x", "AMD Instinct MI300X", 192'000'000'000, 206'141'652'992, 5.3,
                 {653.7, 1307.4, 1307.4, 2614.9, 2614.9, 0}, 448, 64, 0, 8, 206'141'652'992, 8,
                 GpuArch::cdna3),
    gfx(9, 0x4, 0x2));
inline constexpr GpuSpec mi325x = detail::with_capability(
    detail::make("mi325x", "AMD Instinct MI325X", 256'000'000'000, 274'861'129'728, 6.0,
                 {653.7, 1307.4, 1307.4, 2614.9, 2614.9, 0}, 448, 64, 0, 8, 274'877'906'944, 8,
                 GpuArch::cdna3),
    gfx(9, 0x4, 0x2));
inline constexpr GpuSpec l40s = detail::with_capability(
    detail::with_compute_units(detail::make("l40s", "NVIDIA L40S", 48'000'000'000, 47'695'527'936,
                                            0.864, {183, 362.05, 362.05, 733, 733, 0}, 0, 32, 0, 8,
                                            48'305'799'168, 1, GpuArch::ada),
                               142),
    sm(8, 9));
inline constexpr GpuSpec l4 = detail::with_capability(
    detail::with_compute_units(
        detail::make("l4", "NVIDIA L4", 24'000'000'000, 23'570'219'008, 0.3,
                     {60, 121, 121, 242.5, 242.5, 0}, 0, 32, 0, 8, 24'152'899'584, 1, GpuArch::ada),
        58),
    sm(8, 9));

inline constexpr GpuSpec b300 = detail::with_capability(
    detail::make("b300", "NVIDIA B300 (HGX B300, Blackwell Ultra)", 288'000'000'000,
                 287'428'771'840, 8.0, {1125, 2250, 2250, 4500, 0, 13125}, 900, 128, 100, 8,
                 288'400'343'040, 8, GpuArch::blackwell),
    sm(10, 3));
inline constexpr GpuSpec gb200 = detail::with_capability(
    detail::make("gb200", "NVIDIA GB200 (Blackwell GPU of a GB200 NVL72 rack)", 186'000'000'000,
                 197'898'797'056, 8.0, {1250, 2500, 2500, 5000, 5000, 10000}, 900, 64, 50, 4,
                 198'674'743'296, 72, GpuArch::blackwell),
    sm(10, 0));
inline constexpr GpuSpec gb300 = detail::with_capability(
    detail::make("gb300", "NVIDIA GB300 (Blackwell Ultra GPU of a GB300 NVL72 rack)",
                 288'000'000'000, 296'889'614'336, 8.0, {1250, 2500, 2500, 5000, 0, 15000}, 900,
                 128, 100, 4, 298'013'687'808, 72, GpuArch::blackwell),
    sm(10, 3));
inline constexpr GpuSpec h20 = detail::with_capability(
    detail::make("h20", "NVIDIA H20 96GB", 96'000'000'000, 102'010'716'160, 4.0,
                 {74, 148, 148, 296, 296, 0}, 450, 64, 0, 8, 102'625'181'696, 8, GpuArch::hopper),
    sm(9, 0));
inline constexpr GpuSpec mi355x = detail::with_capability(
    detail::make("mi355x", "AMD Instinct MI355X", 288'000'000'000, 309'220'868'096, 8.0,
                 {0, 2516.6, 2516.6, 5033.2, 5033.2, 10066.3}, 537.6, 64, 0, 8, 309'220'868'096, 8,
                 GpuArch::cdna4),
    gfx(9, 0x5, 0x0));
inline constexpr GpuSpec rtx_pro_6000 = detail::with_capability(
    detail::make("rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 96'000'000'000,
                 101'974'016'000, 1.792, {0, 503.8, 503.8, 1007.6, 0, 2015.2}, 0, 64, 0, 8,
                 102'641'958'912, 1, GpuArch::blackwell),
    sm(12, 0));

/// Every bundled GPU, in file-name order.
inline constexpr std::array all{
    &a100_pcie_80gb, &a100_sxm4_40gb, &a100_sxm4_80gb, &b200,        &b300,     &gb200, &gb300,
    &h100_nvl,       &h100_pcie,      &h100_sxm,       &h20,         &h200_sxm, &l4,    &l40s,
    &mi300x,         &mi325x,         &mi355x,         &rtx_pro_6000};

}  // namespace gpus

}  // namespace kvplan
