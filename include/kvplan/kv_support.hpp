#pragma once

// Which KV-cache element types a GPU architecture can hold, engine by engine: a KV dtype is
// refused (with the reason) on hardware that has no kernels for it, before any figure is
// computed from it.
//
//   nvfp4 and nvfp4_4over6 (e2m1, an e4m3 scale per 16): Blackwell only. vLLM accepts
//     --kv-cache-dtype nvfp4 (vllm/config/cache.py, CacheDType) since April 2026, with kernels for
//     Blackwell's FP4 tensor cores; no earlier NVIDIA part and no AMD part has them. (vLLM's
//     kernels are SM 10.x's: on SM 12.x, the RTX PRO 6000, vLLM issues #43562 and #49011 report
//     it failing; kvplan's architectures do not tell the two apart.)
//   mxfp4 (e2m1, an e8m0 scale per 32): FP4 hardware with OCP microscaling, Blackwell or CDNA4
//     (MI350X, MI355X). CDNA3 (MI300X, MI325X) has no FP4 at all.
//   fp8 (e4m3, e5m2, fp8_ds_mla, fp8_per_token_head): every engine stores it on Hopper, Ada,
//     Blackwell, CDNA3 and CDNA4. On Ampere vLLM and SGLang store fp8 and attend in 16 bits
//     (vLLM: "CUDA 11.8+ supports fp8 (=fp8_e4m3) and fp8_e5m2", vllm/config/cache.py), but
//     TensorRT-LLM's FP8 KV cache needs FP8 conversion in hardware, SM 8.9 (Ada) or later.
//   Everything else (16- and 32-bit, int8, int4): no architecture rule here.

#include <optional>
#include <string_view>

#include "dtype.hpp"
#include "engine/kind.hpp"
#include "gpu.hpp"

namespace kvplan {

/// Why architecture `a` cannot hold a KV cache of `d` under engine `e`, or nullopt when it can
/// (or when the architecture is not stated: GpuArch::unknown is never refused).
[[nodiscard]] constexpr std::optional<std::string_view> kv_dtype_refusal(KvDtype d, GpuArch a,
                                                                         Engine e) noexcept {
    if (a == GpuArch::unknown) return std::nullopt;
    switch (d) {
        case KvDtype::nvfp4:
        case KvDtype::nvfp4_4over6:
            if (a != GpuArch::blackwell)
                return "an NVFP4 KV cache needs Blackwell's FP4 tensor cores (vLLM "
                       "--kv-cache-dtype nvfp4)";
            return std::nullopt;
        case KvDtype::mxfp4:
            if (a != GpuArch::blackwell && a != GpuArch::cdna4)
                return "an MXFP4 KV cache needs FP4 hardware with microscaling (Blackwell, "
                       "CDNA4)";
            return std::nullopt;
        case KvDtype::fp8_e4m3:
        case KvDtype::fp8_e5m2:
        case KvDtype::fp8_ds_mla:
        case KvDtype::fp8_per_token_head:
            if (a == GpuArch::ampere && e == Engine::trtllm)
                return "TensorRT-LLM's FP8 KV cache needs FP8 in hardware (Ada, SM 8.9, or "
                       "later)";
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

}  // namespace kvplan
