#pragma once

// NCCL's device buffers, as NCCL 2.22 to 2.28 size them with its defaults, and when vLLM's memory
// profile sees them. Since NCCL 2.22 a communicator whose memory NCCL allocates with cuMem
// connects an algorithm's buffers at the first collective that uses it (NCCL_RUNTIME_CONNECT, on
// by default; src/init.cc: runtimeConn = cuMemSupport && ncclParamRuntimeConnect()), not at
// ncclCommInitRank. Whatever a communicator first connects inside vLLM's profile run is part of
// the profile's non-torch increase, which vLLM charges to the KV budget (vllm/v1/worker/
// gpu_worker.py, determine_available_memory); what it connected before the memory snapshot is not.

#include <algorithm>
#include <cstdint>

#include "../gpu.hpp"
#include "../units.hpp"
#include "release.hpp"

namespace kvplan {

/// Slots of a connection's FIFO (src/include/device.h, NCCL_STEPS).
inline constexpr std::uint64_t nccl_steps = 8;

/// NVLS (NVLink SHARP) channels NCCL opens on GPU `g` within one NVLink domain
/// (src/transport/nvls.cc, ncclNvlsInit: NVLS_NCHANNELS_SM90 16; on Blackwell 24, and 32 when the
/// communicator spans nodes, which is not modelled), or 0 where NCCL builds no NVLS graph: before
/// Hopper, and without NVSwitches (src/graph/search.cc: no NVS node or compute capability below
/// 9.0).
[[nodiscard]] constexpr std::uint32_t nccl_nvls_channels(const GpuSpec& g) noexcept {
    // A scale-up fabric of more than two GPUs is a switched one (NVLink bridges join pairs).
    const bool switched = g.scale_up_bandwidth > BytesPerSecond{} && g.scale_up_domain() > 2;
    if (!switched) return 0;
    if (g.arch == GpuArch::hopper) return 16;
    if (g.arch == GpuArch::blackwell) return 24;
    return 0;
}

/// NCCL's NVLS buffers on each GPU of a communicator of `gpus` GPUs within one NVLink domain
/// (src/transport/nvls.cc, ncclNvlsBufferSetup): channels x 2 (reduce and broadcast) x the
/// chunk (NCCL_NVLS_CHUNKSIZE, 128 KiB) x nccl_steps per head, one head per GPU of the domain
/// (search.cc forces the single-node NVLS graph to pull from every GPU, up to
/// NCCL_MAX_NVLS_ARITY, 32). 256 MiB on eight H100s or H200s. Zero below two GPUs or without NVLS.
[[nodiscard]] constexpr Bytes nccl_nvls_buffer_bytes(const GpuSpec& g,
                                                     std::uint32_t gpus) noexcept {
    const std::uint32_t channels = nccl_nvls_channels(g);
    if (gpus < 2 || channels == 0) return Bytes{};
    const std::uint64_t heads = std::min<std::uint32_t>(gpus, 32);
    return 128 * KiB * (std::uint64_t{channels} * 2 * nccl_steps * heads);
}

/// Whether vLLM release line `v`'s profile run is the first to connect NCCL's NVLS buffers of its
/// tensor-parallel communicator, so they count in the charged non-torch increase:
///   - vLLM set NCCL_CUMEM_ENABLE=0 (vllm/env_override.py) until PR #24141 (September 2025), so
///     NCCL connected every algorithm at init; and until PR #25359 (v0.11) the snapshot preceded
///     the groups, so all their buffers were charged anyway (vllm_charges_comm_buffers);
///   - the communicator's first collective, pynccl's 4-byte warm-up all-reduce at init
///     (vllm/distributed/device_communicators/pynccl.py), runs Ring/LL, NCCL's lowest modelled
///     latency on one node (src/graph/tuning.cc: Ring 6.6 + 2 x 7 x 0.6 = 15.0 us at 8 GPUs,
///     Tree 15.2, NVLS 25), so the ring buffers are connected before the snapshot;
///   - the profile's all-reduces of max_num_batched_tokens x hidden x 2 bytes (256 MiB for
///     16,384 tokens at 8,192) pass the custom all-reduce's 8 MiB (custom_all_reduce.py) and
///     symmetric memory's 64 MiB at 8 Hopper GPUs (all_reduce_utils.py) and go to NCCL, whose model
///     gives NVLS the larger bandwidth there (tuning.cc: NVLS pipelines the reduce and the
///     broadcast, twice the per-channel figure at 0.85 efficiency on Hopper).
[[nodiscard]] constexpr bool vllm_profile_connects_nvls(EngineVersion v) noexcept {
    return !vllm_charges_comm_buffers(v);
}

/// The largest all-reduce vLLM's tensor-parallel group of `tp` GPUs `g` hands to something other
/// than NCCL: PyTorch's symmetric-memory all-reduce (VLLM_ALLREDUCE_USE_SYMM_MEM, on by default)
/// up to SYMM_MEM_ALL_REDUCE_MAX_SIZES at 2, 4, 6 and 8 GPUs (vllm/distributed/device_communicators
/// /all_reduce_utils.py: Hopper 64, 32, 64, 64 MiB; Blackwell's compute capability 10.0 8, 32,
/// 128, 128 MiB, kept for Blackwell Ultra too), else the custom all-reduce's 8 MiB
/// (custom_all_reduce.py, max_size). Anything larger goes to pynccl.
[[nodiscard]] constexpr Bytes vllm_all_reduce_below_nccl(const GpuSpec& g,
                                                         std::uint32_t tp) noexcept {
    const bool listed = tp == 2 || tp == 4 || tp == 6 || tp == 8;
    if (listed && g.arch == GpuArch::hopper) return tp == 4 ? 32 * MiB : 64 * MiB;
    if (listed && g.arch == GpuArch::blackwell)
        return tp == 2 ? 8 * MiB : tp == 4 ? 32 * MiB : 128 * MiB;
    return 8 * MiB;
}

/// NCCL's NVLS buffers vLLM's profile run adds to the charged non-torch increase on a GPU `g` of a
/// tensor-parallel group of `tp` GPUs whose profile all-reduces `all_reduce` bytes (tokens x
/// hidden size x element): nccl_nvls_buffer_bytes where the group lies within one NVLink domain and
/// the all-reduce passes vllm_all_reduce_below_nccl, so NCCL's first large collective connects
/// NVLS; zero across domains (multi-node NVLS is not modelled) or without `connects_nvls`, for a
/// release whose NCCL connected them before the snapshot (vllm_profile_connects_nvls).
[[nodiscard]] constexpr Bytes vllm_profile_nvls_bytes(const GpuSpec& g, std::uint32_t tp,
                                                      Bytes all_reduce,
                                                      bool connects_nvls = true) noexcept {
    if (!connects_nvls || tp < 2 || tp > g.scale_up_domain()) return Bytes{};
    if (all_reduce <= vllm_all_reduce_below_nccl(g, tp)) return Bytes{};
    return nccl_nvls_buffer_bytes(g, tp);
}

/// Whether vLLM release line `v`'s profile run creates a second NCCL communicator, PyTorch's own,
/// inside the charged window. At tp > 1 the V1 engine's LogitsProcessor gathers the sampler's
/// logits with GroupCoordinator.all_gather (vllm/model_executor/layers/logits_processor.py,
/// _gather_logits; vllm/platforms/interface.py, use_all_gather), which through v0.22 reaches
/// DeviceCommunicatorBase.all_gather, torch.distributed.all_gather_into_tensor on the group's
/// device group (vllm/distributed/device_communicators/base_device_communicator.py;
/// CudaCommunicator did not override all_gather), and PyTorch's ProcessGroupNCCL creates a group's
/// communicator at its first collective, the profile's dummy sampler run:
///   - before v0.11 the snapshot preceded the groups and the communication buffers were charged
///     as one term (vllm_charges_comm_buffers), so nothing is added here;
///   - vLLM PR #40996 (in review on 2026-06-03, after v0.22.0 was tagged on 2026-05-29) routes
///     CudaCommunicator.all_gather to pynccl, whose communicator and ring exist before the
///     snapshot; from the release that took it nothing is added. Whether and when it merged is not
///     known here: every release from v0.23 follows the PR.
[[nodiscard]] constexpr bool vllm_logits_gather_opens_torch_nccl(EngineVersion v) noexcept {
    return !vllm_charges_comm_buffers(v) && v <= EngineVersion{0, 22};
}

/// The buffers NCCL 2.27 and 2.28 give a peer-to-peer connection are a cuMem allocation rounded
/// up to CUDA_IPC_MIN (src/transport/p2p.cc, p2pSendSetup and p2pRecvSetup; 2 MiB), as every
/// ncclCudaCallocAsync of a cuMem communicator is to the allocation granularity
/// (src/include/alloc.h).
inline constexpr Bytes nccl_cumem_granularity = 2 * MiB;

/// `b` rounded up to nccl_cumem_granularity.
[[nodiscard]] constexpr Bytes nccl_cumem_rounded(Bytes b) noexcept {
    const std::uint64_t g = nccl_cumem_granularity.count();
    return Bytes::exactly((b.count() + g - 1) / g * g);
}

/// What PyTorch's NCCL communicator of the logits all-gather adds to vLLM's charged non-torch
/// increase on a GPU `g` of a tensor-parallel group of `tp` GPUs
/// (vllm_logits_gather_opens_torch_nccl says for which releases; `opens` false charges nothing).
/// Read in NCCL 2.27 and 2.28 for a Hopper node whose GPUs join an NVSwitch with 18 NVLinks each
/// (H100 SXM, H200, H20), 2 <= tp <= the node:
///   - its ring, which the gather connects at its first use (NCCL_RUNTIME_CONNECT; an all-gather
///     on one node runs Ring: PAT needs one GPU a node, CollNet a network, and tuning.cc's model
///     keeps NVLS off the logits' sizes): 24 channels (src/graph/search.cc finds 6 ring channels
///     at 60 GB/s within 18 x 20.6 GB/s of NVLink; ncclTopoDupChannels doubles them to 12 and
///     src/graph/connect.cc, ncclTopoPostset, to 24, the '24 coll channels' NCCL logs on eight
///     H100s), each a send side, the 4 MiB SIMPLE buffer behind a 4 KiB header, and a receive
///     side, LL128's 120 x 640 x 8 steps x 8 B = 4,915,200 B and LL's 8 x 512 x 8 x 16 B =
///     524,288 B behind their 4 KiB header, each side rounded up to 2 MiB (src/transport/p2p.cc):
///     6 + 6 MiB a channel, 288 MiB;
///   - the communicator's own init, ncclCommInitRank, which PyTorch runs at that first collective,
///     inside the window: each of its device allocations is a cuMem allocation of its own rounded
///     to 2 MiB (src/init.cc, src/include/alloc.h): the device communicator and its rank map (2),
///     3 for each of the 32 channels it initialises (src/channel.cc, initChannel), 1 for each of
///     the 16 NVLS channels and 1 for the NVLS credits (src/transport/nvls.cc, ncclNvlsSetup),
///     115 x 2 MiB = 230 MiB.
/// 518 MiB. Zero at tp 1, across nodes, and on GPUs whose channel counts are not derived here (PCIe
/// and NVLink-pair GPUs, Hopper with fewer NVLinks, Ampere, Blackwell): not charged there.
[[nodiscard]] constexpr Bytes vllm_logits_gather_communicator_bytes(const GpuSpec& g,
                                                                    std::uint32_t tp,
                                                                    bool opens = true) noexcept {
    if (!opens || tp < 2 || tp > g.gpus_per_node || tp > g.scale_up_domain()) return Bytes{};
    // 18 NVLinks of 25 GB/s a direction: 450 GB/s.
    const bool hopper_nvswitch = g.arch == GpuArch::hopper && nccl_nvls_channels(g) != 0 &&
                                 g.scale_up_bandwidth >= 450 * GB_per_s;
    if (!hopper_nvswitch) return Bytes{};
    constexpr std::uint64_t ring_channels = 24;
    constexpr Bytes header = 4 * KiB;
    constexpr Bytes send = nccl_cumem_rounded(header + 4 * MiB);
    constexpr Bytes recv = nccl_cumem_rounded(header + Bytes::exactly(120 * 640 * nccl_steps * 8) +
                                              Bytes::exactly(8 * 512 * nccl_steps * 16));
    constexpr std::uint64_t init_allocations = 2 + 3 * 32 + 16 + 1;
    return (send + recv) * ring_channels + nccl_cumem_granularity * init_allocations;
}

static_assert(vllm_profile_connects_nvls({0, 11}) && !vllm_profile_connects_nvls({0, 10}));
// 16 channels x 2 x 8 steps x 128 KiB = 32 MiB a head: 8 heads 256 MiB, 4 heads 128 MiB;
// Blackwell's 24 channels 384 MiB at 8; none on an NVLink pair (H100 NVL) or before Hopper (A100).
static_assert(nccl_nvls_buffer_bytes(gpus::h100_sxm, 8) == 256 * MiB &&
              nccl_nvls_buffer_bytes(gpus::h200_sxm, 8) == 256 * MiB);
static_assert(nccl_nvls_buffer_bytes(gpus::h100_sxm, 4) == 128 * MiB);
static_assert(nccl_nvls_buffer_bytes(gpus::b200, 8) == 384 * MiB);
static_assert(nccl_nvls_buffer_bytes(gpus::h100_sxm, 1).is_zero() &&
              nccl_nvls_buffer_bytes(gpus::h100_nvl, 2).is_zero() &&
              nccl_nvls_buffer_bytes(gpus::a100_sxm4_80gb, 8).is_zero());
// Llama-3-70B's profile at tp 4 on H100s: 16,384 tokens x 8,192 x 2 B = 256 MiB, past symmetric
// memory's 32 MiB at 4 Hopper GPUs, so NCCL connects NVLS's 4 heads x 32 MiB; 2,048 tokens of a
// 4,096-wide model (16 MiB) stay below it.
static_assert(vllm_profile_nvls_bytes(gpus::h100_sxm, 4, 256 * MiB) == 128 * MiB);
static_assert(vllm_profile_nvls_bytes(gpus::h100_sxm, 4, 16 * MiB).is_zero() &&
              vllm_profile_nvls_bytes(gpus::h100_sxm, 4, 256 * MiB, false).is_zero() &&
              vllm_profile_nvls_bytes(gpus::h100_sxm, 16, 256 * MiB).is_zero());

// Ring: (6 + 6 MiB) x 24 = 288 MiB; init: 115 x 2 MiB = 230 MiB; 518 MiB = 543,162,368 B on eight
// H100s or H200s and at tp 2; nothing at tp 1, on an NVLink pair, an A100 or a B200.
static_assert(vllm_logits_gather_communicator_bytes(gpus::h100_sxm, 8) == 518 * MiB &&
              vllm_logits_gather_communicator_bytes(gpus::h200_sxm, 2) == 518 * MiB);
static_assert(vllm_logits_gather_communicator_bytes(gpus::h100_sxm, 1).is_zero() &&
              vllm_logits_gather_communicator_bytes(gpus::h100_sxm, 16).is_zero() &&
              vllm_logits_gather_communicator_bytes(gpus::h100_nvl, 2).is_zero() &&
              vllm_logits_gather_communicator_bytes(gpus::a100_sxm4_80gb, 8).is_zero() &&
              vllm_logits_gather_communicator_bytes(gpus::b200, 8).is_zero() &&
              vllm_logits_gather_communicator_bytes(gpus::h100_sxm, 8, false).is_zero());
static_assert(!vllm_logits_gather_opens_torch_nccl({0, 10}) &&
              vllm_logits_gather_opens_torch_nccl({0, 11}) &&
              vllm_logits_gather_opens_torch_nccl({0, 22}) &&
              !vllm_logits_gather_opens_torch_nccl({0, 23}));

}  // namespace kvplan
