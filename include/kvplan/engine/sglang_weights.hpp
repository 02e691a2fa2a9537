#pragma once

// SGLang's weights as its MoE kernels hold them once loaded, beside vLLM's (loaded_weights in
// engine/startup.hpp dispatches here for Engine::sglang). SGLang's "Load weight end. ... mem
// usage=" is the memory the load took (model_runner.py, load_model: free memory before less
// after, both read after torch.cuda.empty_cache, so a transposed copy's old storage is not
// counted, but every tensor the layer still holds is).

#include <algorithm>
#include <array>
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

/// What PyTorch's CUDA caching allocator reserves beyond a tensor of `size` bytes
/// (c10/cuda/CUDACachingAllocator.cpp, get_allocation_size, the same allocator hipified on ROCm):
/// from 10 MiB (kMinLargeAlloc) a block gets a segment of its own, rounded up to 2 MiB
/// (kRoundLarge) after the 512-byte rounding every block gets; smaller ones share 2 MiB and
/// 20 MiB segments, whose last one's tail is not counted.
[[nodiscard]] constexpr Bytes torch_segment_slack(Bytes size) {
    if (size < 10 * MiB) return {};
    const std::uint64_t block = ceil_div(size.count(), 512) * 512;
    return Bytes::exactly(ceil_div(block, 2 * MiB.bytes) * (2 * MiB.bytes) - size.count());
}

}  // namespace detail

/// The memory PyTorch's caching allocator holds past the weights of a GPU of stage `stage` of `m`
/// under `l` in `w`: torch_segment_slack of every parameter as SGLang allocates them. SGLang's
/// "mem usage" of the load is cudaMemGetInfo's free memory before less after, each read after
/// torch.cuda.empty_cache (python/sglang/srt/utils.py, get_available_gpu_memory, at
/// 0094528c435a44bbcb5c8d755626d15a702b1423), which returns only wholly free segments: a
/// parameter's rounding stays. Its layers fuse the column-parallel projections that read the
/// same input into one parameter (QKVParallelLinear's q, k and v; MergedColumnParallelLinear's
/// gate and up: python/sglang/srt/layers/linear.py), and FusedMoE holds the GPU's experts as one
/// w13 and one w2 parameter (layers/moe/fused_moe_triton/layer.py); the other tensors are one
/// parameter each. Scales are separate parameters, in the small pools. QwQ-32B at tp 4: an 18 MiB
/// segment for qkv_proj's 17.5 MiB, 14 for o_proj's 12.5, 136 for gate_up_proj's 135, 68 for
/// down_proj's 67.5, 372 for each vocabulary table's 371.25: 3.5 MiB a layer, 225.5 MiB in all.
[[nodiscard]] constexpr Bytes sglang_allocator_slack(const Model& m, const Layout& l,
                                                     std::uint32_t stage, const WeightOptions& w) {
    const detail::RankParts parts = detail::rank_parts(l.placement());
    // The value bytes of a tensor on the rank: its scales are parameters of their own.
    const auto values = [&](const detail::WeightTensor& t) {
        const detail::RankSlice s = detail::rank_slice(t, detail::degree_of(parts, t.group));
        const std::uint64_t copies =
            t.group == ParamGroup::routed_experts ? parts.experts : t.copies;
        const WeightEncoding enc{.value_bits = detail::tensor_encoding(t, w).value_bits};
        return detail::encoded_bytes(enc, s.rows, s.cols, copies);
    };
    // Walks one layer's tensors, fusing consecutive column-parallel linear layers of one group
    // and one input width (biases, which the walk puts between them, are fused alike and small).
    const auto layer_slack = [&](auto&& walk) {
        Bytes slack{}, fused{};
        ParamGroup group = ParamGroup::other;
        std::uint64_t cols = 0;
        bool open = false;
        const auto close = [&] {
            if (open) slack += detail::torch_segment_slack(fused);
            fused = {};
            open = false;
        };
        walk([&](const detail::WeightTensor& t) {
            // The vision tower is a count of parameters, not its tensors.
            if (t.group == ParamGroup::vision) return;
            if (!t.linear) {
                slack += detail::torch_segment_slack(values(t));
                return;
            }
            const bool column = t.split == detail::TpSplit::column;
            if (!(column && open && t.group == group && t.cols == cols)) close();
            fused += values(t);
            open = true;
            group = t.group;
            cols = t.cols;
            if (!column) close();
        });
        close();
        return slack;
    };
    const Shard sh = l.stage(stage);
    std::array<std::uint32_t, detail::max_layer_classes> count{};
    std::array<std::uint32_t, detail::max_layer_classes> example{};
    const std::uint32_t end = std::min(sh.end_layer, m.num_layers());
    for (std::uint32_t i = sh.first_layer; i < end; ++i) {
        const std::uint32_t k = detail::layer_class(m, i);
        if (count[k]++ == 0) example[k] = i;
    }
    Bytes slack{};
    for (std::uint32_t k = 0; k < detail::max_layer_classes; ++k) {
        if (count[k] == 0) continue;
        slack += layer_slack([&](auto&& fn) { detail::for_each_class_tensor(m, example[k], fn); }) *
                 count[k];
    }
    const bool first = stage == 0;
    const bool last = stage + 1 == l.pp();
    slack += layer_slack(
        [&](auto&& fn) { detail::for_each_edge_tensor(m, first, last, last && !first, fn); });
    return slack;
}

/// The rotary embedding's cos/sin table SGLang holds on every GPU of `m`: the positions and
/// rotary dimensions vLLM's table has (vllm_rotary_table_bytes: get_rope keeps one per key in
/// _ROPE_DICT, so one table a GPU), in fp32 on CUDA and in the model dtype elsewhere.
/// RotaryEmbedding.__init__ converts the table to the model dtype only off CUDA ("cache needs to
/// be in FP32 for numerical stability": python/sglang/srt/layers/rotary_embedding.py since SGLang
/// PR #3169, January 2025, as at 00a66ebe136b90479f9ccf9fc4f3d1c08251981c, through the 0.5 line;
/// rotary_embedding/base.py on main, where XPU keeps fp32 too); its subclasses (YaRN, Llama 3,
/// DeepSeek scaling) build their table in the same constructor. A forward that falls back to
/// another kernel casts it afterwards, once the pool is sized. Llama-3.1-8B on CUDA: 131,072 x 128
/// x 4 B = 64 MiB, twice vLLM's.
[[nodiscard]] constexpr Bytes sglang_rotary_table_bytes(const Model& m, bool cuda) {
    return detail::rotary_table_bytes(m, cuda ? 4 : 2);
}

/// The weights SGLang holds on a GPU of stage `stage` of `m` under `l` once loaded, given what the
/// checkpoint puts there (`stored`), the GPU's family and its architecture (ROCm: CDNA 3 or 4). Two
/// MoE formats differ from the checkpoint:
///   MXFP4 experts (gpt-oss; python/sglang/srt/layers/quantization/mxfp4.py, Mxfp4MoEMethod):
///     Hopper     the Triton kernels (moe_runner_backend triton_kernel, server_args.py): the
///                intermediate width per rank rounded up to 64, the swizzled scales a second copy
///                beside w13_weight_scale and w2_weight_scale (both stay on the layer) in
///                triton_kernels' layouts (mxfp4_triton_hopper_expert_bytes), the expert
///                biases fp32;
///     Blackwell  FlashInfer's TRT-LLM MXFP4 MoE (flashinfer_mxfp4, the default on SM 10.x):
///                intermediate and hidden rounded up to 256, biases fp32, scales shuffled in place;
///     others     not modelled (as stored).
///   kvplan applies this to any MXFP4 experts under the default moe_runner_backend ("auto").
///   Under --moe-runner-backend marlin (as DeepSeek-V4's Hopper recipes start), on any CUDA GPU:
///     prepare_moe_mxfp4_layer_for_marlin (python/sglang/srt/layers/quantization/
///     marlin_utils_fp4.py, at 05c279f2dbd0fcfd60308fa51693e831bb431b43) pads the intermediate
///     width per rank to 64 (to 128 where hidden is not a multiple of 128), repacks the weights at
///     4 bits (gptq_marlin_repack) and registers its permuted scales as float8_e8m0fnu, 1 B per
///     32 weights, as w13_weight_scale and w2_weight_scale; the gate/up bias is padded in the
///     model dtype. A checkpoint whose loader named its scales w13/w2_weight_scale (Mxfp4Config,
///     gpt-oss) has them replaced; a block-FP8 checkpoint with MXFP4 experts (DeepSeek-V4:
///     Fp8Config names them w13_weight_scale_inv and w2_weight_scale_inv) keeps the loader's
///     tensors on the layer beside Marlin's, and its loader makes them float32 containers (SGLang
///     PR #30272): 4 B for every 32 unpadded weights, 1 bit a weight. SGLang PR #29797 ("drop stale
///     mxfp4 marlin scales after repack") deletes them; it was open when kvplan read it, so no
///     release drops them yet and kvplan charges them under this option whatever the release.
///   Symmetric INT4 experts (compressed-tensors pack-quantized W4A16, Kimi-K2's) on ROCm:
///     CompressedTensorsWNA16TritonMoE (compressed_tensors/schemes/
///     compressed_tensors_wNa16_moe.py) transposes the packed weights and scales in place and
///     keeps create_weights' int32 index tensors, 8 x (hidden + intermediate per rank) + 16 bytes
///     an expert (int4_triton_index_bytes); on CUDA the Marlin path empties them.
/// Block-FP8 (Fp8MoEMethod, quantization/fp8.py) and the dense formats load as stored. A given
/// override of the weights is kept. What the load also takes beside the tensors is added by
/// sglang_loaded_weights.
[[nodiscard]] constexpr LoadedWeights sglang_kernel_weights(
    std::optional<GpuFamily> family, const Model& m, const Layout& l, std::uint32_t stage,
    const WeightOptions& w, Bytes stored, GpuArch arch, SglangMoeRunnerBackend moe = {}) {
    LoadedWeights lw;
    lw.stored = lw.loaded = stored;
    const ModelConfig& c = m.config();
    const WeightFormat experts = w.expert_format ? *w.expert_format : w.format;
    if (c.moe.experts == 0 || w.override_params != 0 || !w.override_bytes.is_zero()) return lw;
    const bool rocm = family == GpuFamily::cdna3 || is_rocm(arch);
    const bool marlin =
        moe == SglangMoeRunnerBackend::marlin && experts == WeightFormat::mxfp4 && family && !rocm;
    const bool mxfp4 = experts == WeightFormat::mxfp4 && family &&
                       (*family == GpuFamily::hopper || *family == GpuFamily::blackwell);
    const bool int4_rocm = experts == WeightFormat::int4 && !w.layout.int4_zero_points && rocm;
    if (!marlin && !mxfp4 && !int4_rocm) return lw;
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
    if (marlin) {
        lw.kernel = WeightKernel::mxfp4_marlin;
        lw.padded_intermediate = round_up(lw.intermediate, lw.hidden % 128 == 0 ? 64 : 128);
        lw.padded_hidden = lw.hidden;
        const Bytes before = detail::mxfp4_expert_bytes(lw.intermediate, lw.hidden);
        Bytes after = detail::mxfp4_expert_bytes(lw.padded_intermediate, lw.hidden);
        // The loader's float32 scale containers, kept beside Marlin's (the block-FP8 loader's).
        if (w.format == WeightFormat::fp8)
            after += detail::mxfp4_expert_scale_bytes(lw.intermediate, lw.hidden) * 4;
        if (c.mlp_bias) {
            // gate/up's bias padded with the weights, down's not; both in the model dtype.
            after += Bytes::exactly(2 * (2 * lw.padded_intermediate + lw.hidden));
            after -= Bytes::exactly(2 * (2 * lw.intermediate + lw.hidden));
        }
        if (after > before) lw.loaded += (after - before) * lw.experts;
        return lw;
    }
    const bool hopper = *family == GpuFamily::hopper;
    lw.kernel = hopper ? WeightKernel::mxfp4_triton : WeightKernel::mxfp4_flashinfer;
    lw.padded_intermediate = round_up(lw.intermediate, hopper ? 64 : 256);
    lw.padded_hidden = hopper ? lw.hidden : round_up(lw.hidden, 256);
    const Bytes before = detail::mxfp4_expert_bytes(lw.intermediate, lw.hidden);
    Bytes after = detail::mxfp4_expert_bytes(lw.padded_intermediate, lw.padded_hidden);
    if (hopper)
        after = detail::mxfp4_triton_hopper_expert_bytes(lw.padded_intermediate, lw.hidden) +
                detail::mxfp4_expert_scale_bytes(lw.padded_intermediate, lw.hidden);
    if (c.mlp_bias) {
        // create_weights makes bf16 biases at the padded widths; both kernels keep them fp32.
        after += Bytes::exactly(4 * (2 * lw.padded_intermediate + lw.padded_hidden));
        after -= Bytes::exactly(2 * (2 * lw.intermediate + lw.hidden));
    }
    if (after > before) lw.loaded += (after - before) * lw.experts;
    return lw;
}

/// The memory SGLang's load takes on a GPU of stage `stage` of `m` under `l` ("Load weight end.
/// ... mem usage="): the tensors as its kernels hold them under MoE runner backend `moe`
/// (sglang_kernel_weights), the rotary
/// cos/sin table (sglang_rotary_table_bytes, fp32 but on ROCm, where CDNA 3 or 4 is the sign),
/// and the caching allocator's rounding of each parameter (sglang_allocator_slack). A given
/// override of the weights is what the log printed, and is kept.
[[nodiscard]] constexpr LoadedWeights sglang_loaded_weights(
    std::optional<GpuFamily> family, const Model& m, const Layout& l, std::uint32_t stage,
    const WeightOptions& w, Bytes stored, GpuArch arch, SglangMoeRunnerBackend moe) {
    LoadedWeights lw = sglang_kernel_weights(family, m, l, stage, w, stored, arch, moe);
    if (w.override_params != 0 || !w.override_bytes.is_zero()) return lw;
    const bool rocm = family == GpuFamily::cdna3 || is_rocm(arch);
    lw.rotary_table = sglang_rotary_table_bytes(m, !rocm);
    lw.allocator_slack = sglang_allocator_slack(m, l, stage, w);
    lw.loaded += lw.rotary_table + lw.allocator_slack;
    return lw;
}

}  // namespace kvplan
