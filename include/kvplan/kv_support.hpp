#pragma once

// Which KV-cache element types a GPU architecture can hold, engine by engine: a KV dtype is
// refused (with the reason) on hardware that has no kernels for it, before any figure is
// computed from it.
//
//   nvfp4 and nvfp4_4over6 (e2m1, an e4m3 scale per 16): Blackwell only. vLLM accepts
//     --kv-cache-dtype nvfp4 (vllm/config/cache.py, CacheDType) since April 2026, with kernels for
//     Blackwell's FP4 tensor cores; no earlier NVIDIA part and no AMD part has them. vLLM's
//     kernels are SM 10.x's: its TRTLLM attention backend accepts nvfp4 only where
//     is_device_capability_family(100) holds ("--kv-cache-dtype nvfp4 requires the SM100
//     trtllm-gen FlashInfer path"), so on SM 12.x, the RTX PRO 6000, it refuses (vLLM issues
//     #43562 and #49011). A GPU whose compute capability is stated is told apart by it.
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

/// kv_dtype_refusal for GPU `g`, by its compute capability where it is stated and the engine
/// decides by it, else by its architecture: vLLM's NVFP4 KV cache needs SM 10.x
/// (is_device_capability_family(100)); TensorRT-LLM's FP8 KV cache SM 8.9 or later.
[[nodiscard]] inline std::optional<std::string_view> kv_dtype_refusal(KvDtype d, const GpuSpec& g,
                                                                      Engine e) noexcept {
    const ComputeCapability& c = g.capability;
    if (c.isa == ComputeCapability::Isa::sm) {
        if ((d == KvDtype::nvfp4 || d == KvDtype::nvfp4_4over6) && e == Engine::vllm &&
            !c.sm_family(10))
            return "vLLM's NVFP4 KV cache needs compute capability 10.x (its SM100 trtllm-gen "
                   "FlashInfer path: TRTLLMBackend.supports_kv_cache_dtype, "
                   "is_device_capability_family(100))";
        const bool fp8 = d == KvDtype::fp8_e4m3 || d == KvDtype::fp8_e5m2 ||
                         d == KvDtype::fp8_ds_mla || d == KvDtype::fp8_per_token_head;
        if (fp8 && e == Engine::trtllm && !c.sm_at_least(8, 9))
            return "TensorRT-LLM's FP8 KV cache needs FP8 in hardware (compute capability 8.9 "
                   "or later)";
    }
    return kv_dtype_refusal(d, g.arch, e);
}

}  // namespace kvplan
