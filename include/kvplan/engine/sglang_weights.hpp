#pragma once

// SGLang's weights as its MoE kernels hold them once loaded, beside vLLM's (loaded_weights in
// engine/startup.hpp dispatches here for Engine::sglang). SGLang's "Load weight end. ... mem
// usage=" is the memory the load took (model_runner.py, load_model: free memory before less
// after, both read after torch.cuda.empty_cache, so a transposed copy's old storage is not
// counted, but every tensor the layer still holds is).

#include <cstdint>
#include <optional>

#include "../detail/checked.hpp"
#include "../gpu.hpp"
#include "../gpu_family.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "../weights.hpp"
#include "startup.hpp"

namespace kvplan {

namespace detail {

/// The Triton W4A16 MoE's int32 index tensors of one expert: CompressedTensorsWNA16MoE's
/// create_weights registers w13_weight_g_idx and w13_g_idx_sort_indices (hidden each) and
/// w2_weight_g_idx and w2_g_idx_sort_indices (the intermediate width per rank each), and
/// w13_weight_shape and w2_weight_shape (2 floats each). The Marlin path replaces the index
/// tensors with empty ones where the checkpoint has no activation order; the Triton path keeps them
/// whole.
[[nodiscard]] constexpr Bytes int4_triton_index_bytes(std::uint64_t intermediate,
                                                      std::uint64_t hidden) {
    return Bytes::exactly(
        add(mul(4 * 2, add(hidden, intermediate, "g_idx"), "g_idx"), 2 * 2 * 4, "g_idx"));
}

}  // namespace detail

/// The weights SGLang holds on a GPU of stage `stage` of `m` under `l` once loaded, given what the
/// checkpoint puts there (`stored`), the GPU's family and its architecture (ROCm: CDNA 3 or 4). Two
/// MoE formats differ from the checkpoint:
///   MXFP4 experts (gpt-oss; python/sglang/srt/layers/quantization/mxfp4.py, Mxfp4MoEMethod):
///     Hopper     the Triton kernels (moe_runner_backend triton_kernel, server_args.py): the
///                intermediate width per rank rounded up to 64, the swizzled scales a second copy
///                beside w13_weight_scale and w2_weight_scale (both stay on the layer), the expert
///                biases fp32;
///     Blackwell  FlashInfer's TRT-LLM MXFP4 MoE (flashinfer_mxfp4, the default on SM 10.x):
///                intermediate and hidden rounded up to 256, biases fp32, scales shuffled in place;
///     others     not modelled (as stored).
///   kvplan applies this to any MXFP4 experts, as the default moe_runner_backend picks; a start
///   that names another backend (--moe-runner-backend marlin, as DeepSeek-V4's Hopper recipes
///   do) is not modelled.
///   Symmetric INT4 experts (compressed-tensors pack-quantized W4A16, Kimi-K2's) on ROCm:
///     CompressedTensorsWNA16TritonMoE (compressed_tensors/schemes/
///     compressed_tensors_wNa16_moe.py) transposes the packed weights and scales in place and
///     keeps create_weights' int32 index tensors, 8 x (hidden + intermediate per rank) + 16 bytes
///     an expert (int4_triton_index_bytes); on CUDA the Marlin path empties them.
/// Block-FP8 (Fp8MoEMethod, quantization/fp8.py) and the dense formats load as stored. A given
/// override of the weights is kept.
[[nodiscard]] constexpr LoadedWeights sglang_loaded_weights(std::optional<GpuFamily> family,
                                                            const Model& m, const Layout& l,
                                                            std::uint32_t stage,
                                                            const WeightOptions& w, Bytes stored,
                                                            GpuArch arch) {
    LoadedWeights lw;
    lw.stored = lw.loaded = stored;
    const ModelConfig& c = m.config();
    const WeightFormat experts = w.expert_format ? *w.expert_format : w.format;
    if (c.moe.experts == 0 || w.override_params != 0 || !w.override_bytes.is_zero()) return lw;
    const bool mxfp4 = experts == WeightFormat::mxfp4 && family &&
                       (*family == GpuFamily::hopper || *family == GpuFamily::blackwell);
    const bool rocm =
        family == GpuFamily::cdna3 || arch == GpuArch::cdna3 || arch == GpuArch::cdna4;
    const bool int4_rocm = experts == WeightFormat::int4 && !w.layout.int4_zero_points && rocm;
    if (!mxfp4 && !int4_rocm) return lw;
    detail::set_rank_experts(lw, m, l, stage);
    if (int4_rocm) {
        lw.kernel = WeightKernel::int4_triton_rocm;
        lw.padded_intermediate = lw.intermediate;
        lw.padded_hidden = lw.hidden;
        lw.loaded += detail::int4_triton_index_bytes(lw.intermediate, lw.hidden) * lw.experts;
        return lw;
    }
    const auto round_up = [](std::uint64_t x, std::uint64_t to) {
        return detail::ceil_div(x, to) * to;
    };
    const bool hopper = *family == GpuFamily::hopper;
    lw.kernel = hopper ? WeightKernel::mxfp4_triton : WeightKernel::mxfp4_flashinfer;
    lw.padded_intermediate = round_up(lw.intermediate, hopper ? 64 : 256);
    lw.padded_hidden = hopper ? lw.hidden : round_up(lw.hidden, 256);
    const Bytes before = detail::mxfp4_expert_bytes(lw.intermediate, lw.hidden);
    Bytes after = detail::mxfp4_expert_bytes(lw.padded_intermediate, lw.padded_hidden);
    if (hopper) after += detail::mxfp4_expert_scale_bytes(lw.padded_intermediate, lw.padded_hidden);
    if (c.mlp_bias) {
        // create_weights makes bf16 biases at the padded widths; both kernels keep them fp32.
        after += Bytes::exactly(4 * (2 * lw.padded_intermediate + lw.padded_hidden));
        after -= Bytes::exactly(2 * (2 * lw.intermediate + lw.hidden));
    }
    if (after > before) lw.loaded += (after - before) * lw.experts;
    return lw;
}

}  // namespace kvplan
