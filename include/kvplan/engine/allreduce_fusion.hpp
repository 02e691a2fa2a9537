#pragma once

// FlashInfer's all-reduce + RMSNorm fusion workspace, which vLLM's profile run allocates on every
// GPU of a tensor-parallel group and charges to the KV budget. vLLM's AllReduceFusionPass
// (vllm/compilation/passes/fusion/allreduce_rms_fusion.py, on by default where
// enable_allreduce_rms_fusion holds: tp > 1, CUDA compute capability 9.0 or the 10.x family,
// FlashInfer installed; vllm/config/vllm.py) builds the workspace when torch.compile first runs,
// inside determine_available_memory's profile (vllm/v1/worker/gpu_worker.py), outside PyTorch's
// caching allocator: it lands in the profile's non-torch increase ("Initialized FlashInfer All
// Reduce workspace" between the worker's memory snapshot and "Memory profiling takes" in vLLM
// 0.19's logs).
//
// The workspace is three buffers (flashinfer/comm/trtllm_ar.py,
// trtllm_create_ipc_workspace_for_all_reduce_fusion): tp x tokens x hidden x 2 B, the flags of
// tp x 256 x 4 B, and Lamport buffers of 3 x tp x tokens x hidden x 2 B (4 B for an fp32 model),
// tokens = min(the pass's max size / (hidden x element), max_num_batched_tokens). How each
// buffer is rounded depends on the FlashInfer release vLLM pins:
//   - FlashInfer 0.6.0 to 0.6.9 (create_allreduce_fusion_workspace's TRT-LLM backend,
//     use_symm_dev_mem=True since FlashInfer PR #2239) allocate each buffer as a SymmDeviceMemory
//     (flashinfer/comm/mnnvl.py, _get_allocation_prop), whose size is rounded to the allocation
//     granularity and then to the multicast object's recommended granularity even though the
//     workspace asks for no multicast: 512 MiB on Hopper NVSwitch nodes (SGLang PR #18341's
//     FlashInfer log at tp 2 shows three buffers of 24, 2 and 68 MiB mapped 0x20000000 apart),
//     so the workspace is 1.5 GiB whatever the model;
//   - FlashInfer 0.6.10 to 0.6.15 allocate them from PyTorch's symmetric memory
//     (flashinfer/comm/torch_symmetric_memory.py; CUDASymmetricMemoryAllocator::alloc rounds to
//     the allocation granularity), and from 0.6.16 SymmDeviceMemory rounds to the multicast
//     granularity only where multicast is asked for (FlashInfer PR #3745): 2 MiB granules.

#include <algorithm>
#include <cstdint>

#include "../detail/checked.hpp"
#include "../gpu.hpp"
#include "../units.hpp"
#include "release.hpp"

namespace kvplan {

/// The largest all-reduce input vLLM's pass fuses on GPU `g` at `tp` GPUs
/// (FI_ALLREDUCE_FUSION_MAX_SIZE_MB, vllm/compilation/passes/fusion/allreduce_rms_fusion.py at
/// 889b02f9: compute capability 9.0 {2: 64, 4: 2, 8: 0.5} MB, 10.x {2: 64, 4: 32, 8: 1} MB),
/// or zero where the pass is off: another tp, or a GPU neither Hopper nor Blackwell's 10.x.
[[nodiscard]] constexpr Bytes vllm_fusion_max_size(const GpuSpec& g, std::uint32_t tp) noexcept {
    const ComputeCapability c = g.capability;
    const bool stated = c.isa == ComputeCapability::Isa::sm;
    const bool hopper = stated ? c.major == 9 && c.minor == 0 : g.arch == GpuArch::hopper;
    const bool blackwell = stated ? c.major == 10 : g.arch == GpuArch::blackwell;
    if (hopper) return tp == 2 ? 64 * MiB : tp == 4 ? 2 * MiB : tp == 8 ? 512 * KiB : Bytes{};
    if (blackwell) return tp == 2 ? 64 * MiB : tp == 4 ? 32 * MiB : tp == 8 ? 1 * MiB : Bytes{};
    return Bytes{};
}

/// The multicast object's recommended granularity (cuMulticastGetGranularity,
/// CU_MULTICAST_GRANULARITY_RECOMMENDED) on a GPU `g` of a switched NVLink fabric: 512 MiB on
/// Hopper, from the SGLang log above and llm-d-planner's vLLM 0.19 H100 logs (the same 2.07 to
/// 2.21 GiB of non-torch increase for hidden sizes 2,048 to 8,192 at tp 2 and tp 4); zero where
/// no figure is known or multicast is absent.
///
/// No public source gives Blackwell's (B200, B300, GB200): the CUDA driver API documents the
/// query, not its value (a bind must be a multiple of the minimum granularity and should be of
/// the recommended one, cuMulticastBindMem); FlashInfer's SymmDeviceMemory, NCCL's
/// ncclMemAlloc and PyTorch's symmetric memory each ask the driver at run time and print nothing;
/// and no published vLLM 0.17 to 0.21 or SGLang start-up log on Blackwell maps the workspace's
/// buffers or isolates its non-torch increase. Its fusion workspace is charged at the 2 MiB
/// rounding alone there, a lower bound (fusion_workspace_is_lower_bound).
[[nodiscard]] constexpr Bytes multicast_recommended_granularity(const GpuSpec& g) noexcept {
    const bool switched = g.scale_up_bandwidth > BytesPerSecond{} && g.scale_up_domain() > 2;
    return switched && g.arch == GpuArch::hopper ? 512 * MiB : Bytes{};
}

/// One workspace buffer of `bytes` as allocated under `rounding` on GPU `g`: with FlashInfer's
/// 2,048-byte signal pad (SIGNAL_PAD_SIZE, flashinfer/comm/mnnvl.py; PyTorch's symmetric memory
/// adds its own pad, also within the granule) rounded to 2 MiB, then, for the multicast rounding,
/// to the multicast granularity; where that granularity is not known, the 2 MiB rounding alone
/// (a lower bound).
[[nodiscard]] constexpr Bytes fusion_buffer_allocation(Bytes bytes,
                                                       FusionWorkspaceRounding rounding,
                                                       const GpuSpec& g) {
    const auto round_up = [](Bytes n, Bytes granule) {
        return granule * ((n.count() + granule.count() - 1) / granule.count());
    };
    Bytes n = round_up(bytes + 2048 * B, 2 * MiB);
    if (rounding == FusionWorkspaceRounding::multicast)
        if (const Bytes mc = multicast_recommended_granularity(g); !mc.is_zero())
            n = round_up(n, mc);
    return n;
}

/// Whether the fusion workspace charged under `rounding` on GPU `g` is a lower bound rather than
/// the engine's figure: FlashInfer 0.6.0 to 0.6.9 round each buffer to the multicast granularity,
/// which is known for no GPU but Hopper (multicast_recommended_granularity), so elsewhere on a
/// switched fabric (Blackwell) only the 2 MiB allocation granularity is charged.
[[nodiscard]] constexpr bool fusion_workspace_is_lower_bound(FusionWorkspaceRounding rounding,
                                                             const GpuSpec& g) noexcept {
    const bool switched = g.scale_up_bandwidth > BytesPerSecond{} && g.scale_up_domain() > 2;
    return rounding == FusionWorkspaceRounding::multicast && switched &&
           multicast_recommended_granularity(g).is_zero();
}

/// FlashInfer's fusion workspace on each GPU of a tensor-parallel group of `tp` GPUs `g`, for a
/// model of `hidden` and activations of `element` bytes, at `max_batched_tokens`: its three
/// buffers as `rounding` allocates them; zero where the pass is off (vllm_fusion_max_size) or
/// `rounding` is none, and under the multicast rounding on a GPU without multicast, where
/// SymmDeviceMemory refuses ("Device does not support multicasting").
[[nodiscard]] constexpr Bytes flashinfer_fusion_workspace_bytes(const GpuSpec& g, std::uint32_t tp,
                                                                std::uint64_t hidden, Bytes element,
                                                                std::uint64_t max_batched_tokens,
                                                                FusionWorkspaceRounding rounding) {
    const Bytes max_size = vllm_fusion_max_size(g, tp);
    if (rounding == FusionWorkspaceRounding::none || max_size.is_zero() || hidden == 0 ||
        element.is_zero())
        return Bytes{};
    const bool switched = g.scale_up_bandwidth > BytesPerSecond{} && g.scale_up_domain() > 2;
    if (rounding == FusionWorkspaceRounding::multicast && !switched) return Bytes{};
    const std::uint64_t tokens = std::min(max_size / (element * hidden), max_batched_tokens);
    // The group's rows: every rank's tokens x hidden.
    const std::uint64_t cells =
        detail::mul(detail::mul(tp, tokens, "the fusion's rows"), hidden, "the fusion's rows");
    const Bytes buffer = (2 * B) * cells;
    const Bytes flags = (4 * B) * (std::uint64_t{tp} * 256);
    const Bytes lamport = (element.count() == 4 ? 4 * B : 2 * B) * detail::mul(3, cells, "Lamport");
    return fusion_buffer_allocation(buffer, rounding, g) +
           fusion_buffer_allocation(flags, rounding, g) +
           fusion_buffer_allocation(lamport, rounding, g);
}

/// The workspace vLLM's profile adds to the charged non-torch increase on a GPU of a layout of
/// `tp` x `pp` x `dp`: flashinfer_fusion_workspace_bytes within one NVLink domain (the TRT-LLM
/// backend's IPC buffers are single-node), none where the release turns the fusion off under
/// pipeline or data parallelism (vllm_fusion_needs_single_stage).
[[nodiscard]] constexpr Bytes vllm_profile_fusion_workspace_bytes(
    const GpuSpec& g, std::uint32_t tp, std::uint32_t pp, std::uint32_t dp, std::uint64_t hidden,
    Bytes element, std::uint64_t max_batched_tokens, FusionWorkspaceRounding rounding,
    bool single_stage_only) {
    if (tp < 2 || tp > std::max(g.scale_up_domain(), g.gpus_per_node)) return Bytes{};
    if (single_stage_only && (pp > 1 || dp > 1)) return Bytes{};
    return flashinfer_fusion_workspace_bytes(g, tp, hidden, element, max_batched_tokens, rounding);
}

// Llama-3.1-8B at tp 2 on H100s under v0.19: 64 MiB / (4,096 x 2 B) = 8,192 tokens; buffers of
// 128 MiB, 2 KiB and 384 MiB, each 512 MiB once rounded: 1.5 GiB. Under FlashInfer 0.6.10 and
// later: 130 + 2 + 386 MiB.
static_assert(flashinfer_fusion_workspace_bytes(gpus::h100_sxm, 2, 4096, 2 * B, 8192,
                                                FusionWorkspaceRounding::multicast) == 1536 * MiB);
static_assert(flashinfer_fusion_workspace_bytes(gpus::h100_sxm, 2, 4096, 2 * B, 8192,
                                                FusionWorkspaceRounding::allocation) == 518 * MiB);
// Llama-3-70B at tp 4: 2 MiB / (8,192 x 2 B) = 128 tokens; 8 MiB, 4 KiB and 24 MiB: 10 + 2 + 26.
static_assert(flashinfer_fusion_workspace_bytes(gpus::h100_sxm, 4, 8192, 2 * B, 16384,
                                                FusionWorkspaceRounding::allocation) == 38 * MiB);
// A B200 under the multicast rounding: its granularity unknown, each buffer rounded to 2 MiB, a
// lower bound (130 + 2 + 386 MiB for the model above); exact on Hopper and under FlashInfer 0.6.10.
static_assert(flashinfer_fusion_workspace_bytes(gpus::b200, 2, 4096, 2 * B, 8192,
                                                FusionWorkspaceRounding::multicast) == 518 * MiB);
static_assert(fusion_workspace_is_lower_bound(FusionWorkspaceRounding::multicast, gpus::b200) &&
              !fusion_workspace_is_lower_bound(FusionWorkspaceRounding::multicast,
                                               gpus::h100_sxm) &&
              !fusion_workspace_is_lower_bound(FusionWorkspaceRounding::allocation, gpus::b200));
// No pass at tp 3 or on an A100; no multicast on an NVLink pair (H100 NVL).
static_assert(flashinfer_fusion_workspace_bytes(gpus::h100_sxm, 3, 4096, 2 * B, 8192,
                                                FusionWorkspaceRounding::multicast)
                  .is_zero() &&
              flashinfer_fusion_workspace_bytes(gpus::a100_sxm4_80gb, 2, 4096, 2 * B, 8192,
                                                FusionWorkspaceRounding::allocation)
                  .is_zero() &&
              flashinfer_fusion_workspace_bytes(gpus::h100_nvl, 2, 4096, 2 * B, 8192,
                                                FusionWorkspaceRounding::multicast)
                  .is_zero());

}  // namespace kvplan
