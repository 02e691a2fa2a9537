#pragma once

// GPU specs for the planning tests, built from the datasheet figures (the JSON files under
// configs/gpus/ hold the same figures with their sources), so the tests do not depend on JSON.

#include <kvplan/gpu.hpp>
#include <kvplan/units.hpp>

namespace kvplan::testing {

/// NVIDIA A100-SXM4-80GB: "80GB", the driver reports 81,920 MiB; 2,039 GB/s of HBM2e; 312 TFLOP/s
/// dense BF16 (624 with sparsity, halved); NVLink 3 600 GB/s both ways = 300 GB/s one way; PCIe
/// Gen4 x16, 32 GB/s one way (NVIDIA A100 datasheet; configs/gpus/a100-sxm4-80gb.json).
inline GpuSpec a100_sxm4_80gb() {
    GpuSpec g;
    g.id = "a100-sxm4-80gb";
    g.name = "NVIDIA A100 SXM4 80GB";
    g.memory_stated = 80 * GB;
    g.memory_total = 81'920 * MiB;
    g.memory_bandwidth = 2.039 * TB_per_s;
    g.set_dense(ComputeDtype::bf16, 312.0 * TFLOP_per_s);
    g.set_dense(ComputeDtype::fp16, 312.0 * TFLOP_per_s);
    g.scale_up_bandwidth = 300.0 * GB_per_s;
    g.pcie_bandwidth = 32.0 * GB_per_s;
    return g;
}

/// NVIDIA H100-SXM5-80GB: "80GB", the driver reports 81,559 MiB; 3.35 TB/s of HBM3; 989.4 TFLOP/s
/// dense BF16 and 1,978.9 dense FP8 (H100 whitepaper, table 1); NVLink 4 900 GB/s both ways = 450
/// GB/s one way; PCIe Gen5 x16, 64 GB/s one way (configs/gpus/h100-sxm.json).
inline GpuSpec h100_sxm() {
    GpuSpec g;
    g.id = "h100-sxm";
    g.name = "NVIDIA H100 SXM5 80GB";
    g.memory_stated = 80 * GB;
    g.memory_total = 81'559 * MiB;
    g.memory_bandwidth = 3.35 * TB_per_s;
    g.set_dense(ComputeDtype::bf16, 989.4 * TFLOP_per_s);
    g.set_dense(ComputeDtype::fp16, 989.4 * TFLOP_per_s);
    g.set_dense(ComputeDtype::fp8, 1978.9 * TFLOP_per_s);
    g.scale_up_bandwidth = 450.0 * GB_per_s;
    g.pcie_bandwidth = 64.0 * GB_per_s;
    return g;
}

}  // namespace kvplan::testing
