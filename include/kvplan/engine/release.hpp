#pragma once

// Engine releases: the defaults of each vLLM release that change what fits. kvplan's rules follow
// vLLM's main branch; an older release differs from it in the defaults of this table only, each
// row naming where it changed. The newest release kvplan knows is the default and is named in every
// answer, so a figure says which vLLM it is for.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvplan {

/// A release of an engine: major.minor, and the patch where the engine's releases differ by it.
/// vLLM's rules change by release line (major.minor: patches are not told apart, and a patch
/// given is dropped: line()); SGLang numbers its releases 0.5.x, each a release of its own
/// (engine/sglang_release.hpp), so its patch is kept. Post releases (".post1") are not told apart.
struct EngineVersion {
    std::uint32_t major = 0;
    std::uint32_t minor = 0;
    std::uint32_t patch = 0;

    friend constexpr auto operator<=>(const EngineVersion&, const EngineVersion&) = default;

    /// The release line, major.minor, the patch dropped.
    [[nodiscard]] constexpr EngineVersion line() const noexcept { return {major, minor}; }

    /// "0.10", or "0.5.12" where the patch is not 0.
    [[nodiscard]] std::string text() const {
        std::string t = std::to_string(major) + "." + std::to_string(minor);
        if (patch != 0) t += "." + std::to_string(patch);
        return t;
    }
};

/// Parses "X.Y" or "X.Y.Z" (digits only, at most 4 each; a leading "v" is read too, and a trailing
/// ".postN" is read and dropped), or nullopt.
[[nodiscard]] constexpr std::optional<EngineVersion> parse_engine_version(
    std::string_view s) noexcept {
    if (!s.empty() && s.front() == 'v') s.remove_prefix(1);
    const auto number = [](std::string_view d) -> std::optional<std::uint32_t> {
        if (d.empty() || d.size() > 4) return std::nullopt;
        std::uint32_t v = 0;
        for (char c : d) {
            if (c < '0' || c > '9') return std::nullopt;
            v = v * 10 + static_cast<std::uint32_t>(c - '0');
        }
        return v;
    };
    if (const std::size_t post = s.find(".post"); post != std::string_view::npos) {
        if (!number(s.substr(post + 5))) return std::nullopt;
        s = s.substr(0, post);
    }
    std::uint32_t parts[3] = {0, 0, 0};
    std::size_t n = 0;
    while (true) {
        if (n == 3) return std::nullopt;
        const std::size_t dot = s.find('.');
        const auto v = number(s.substr(0, dot));
        if (!v) return std::nullopt;
        parts[n++] = *v;
        if (dot == std::string_view::npos) break;
        s.remove_prefix(dot + 1);
    }
    if (n < 2) return std::nullopt;
    return EngineVersion{parts[0], parts[1], parts[2]};
}

static_assert(parse_engine_version("0.10") == EngineVersion{0, 10});
static_assert(parse_engine_version("v0.5.12.post1") == EngineVersion{0, 5, 12});
static_assert(parse_engine_version("0.5.12")->line() == EngineVersion{0, 5});
static_assert(!parse_engine_version("0") && !parse_engine_version("0.5.12.1") &&
              !parse_engine_version("0.5.") && !parse_engine_version("0.5.12.post") &&
              !parse_engine_version("0.5rc1"));

/// How a vLLM release picks `vllm serve`'s max_num_batched_tokens and max_num_seqs for the GPU
/// (vllm/engine/arg_utils.py: _set_default_args_v1, later EngineArgs.get_batch_defaults, the
/// OPENAI_API_SERVER usage context). Either rule gives the release's larger_batch_tokens and 1,024
/// sequences to the GPUs it picks and 2,048 and 256 to the others; the profile run's forward is
/// that many tokens and its sampler that many logits rows, so the rule moves the activation peak
/// and the sequence cap.
enum class VllmBatchRule : std::uint8_t {
    /// "h100" or "h200" in the device's name (vLLM PR #12369, January 2025).
    h100_h200_by_name,
    /// 70 GiB or more of device memory, an A100 excepted (vLLM PR #17073 of 2025-04-23 picked
    /// by memory; PR #17885 of 2025-05-09 took the A100 back out).
    memory_70_gib_not_a100,
};

/// The top-k/top-p path of vLLM's profile run, by what it holds beside the logits and their fp32
/// copy. The V1 model runner's dummy sampler asks top-k = vocabulary - 1 and top-p = 0.9 of every
/// row (vllm/v1/worker/gpu_model_runner.py, _dummy_sampler_run), so the release's top-k/top-p
/// path runs over max_num_seqs rows at the whole vocabulary (vllm/v1/sample/ops/
/// topk_topp_sampler.py); model runner V2 asks neither (engine_sampler_bytes_per_logit, budget/
/// reserve.hpp, counts each).
enum class VllmSampler : std::uint8_t {
    /// FlashInfer from probabilities: the fp32 softmax (4 B a value) handed to
    /// top_k_top_p_sampling_from_probs, FlashInfer's API before 0.2.3 (v0.8).
    flashinfer_probs,
    /// FlashInfer from logits: top_k_top_p_sampling_from_logits masks an fp32 copy
    /// (top_k_mask_logits, 4 B) and takes its softmax (4 B) before sampling (vLLM PR #15777
    /// adapted to FlashInfer 0.2.3's API).
    flashinfer_logits,
    /// PyTorch's top-k/top-p: a sort of the fp32 logits (32 B).
    sorts,
    /// Triton's top-k/top-p (vLLM PR #33538, vllm/v1/sample/ops/topk_topp_triton.py): the pivot
    /// search masks the logits in place, so what stays beside them is forward_native's fp32
    /// softmax and random_sample's fp32 exponential noise (topk_topp_sampler.py), 8 B, and its
    /// [programs, vocabulary] outlier buffer, one fp32 row per SM (triton_sampler_buffer_bytes,
    /// budget/reserve.hpp).
    triton,
    /// Model runner V2 (vllm/v1/worker/gpu/model_runner.py, _dummy_sampler_run): its dummy batch
    /// asks no top-k or top-p, so the Gumbel sampling of the fp32 copy adds nothing (0 B).
    plain,
};

/// The defaults of one vLLM release line that change capacity (the rows of vllm_releases).
struct VllmReleaseDefaults {
    EngineVersion since{};  ///< the first release line with these defaults
    /// --gpu-memory-utilization unset (vllm/config/cache.py, CacheConfig.gpu_memory_utilization).
    double gpu_memory_utilization = 0.92;
    /// CUDA graph memory estimated before the KV pool and charged to it
    /// (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, vllm/v1/worker/gpu_worker.py); before, graphs
    /// were captured after the pool and had to fit in the (1 - utilization) headroom.
    bool charge_cuda_graphs = true;
    /// The hybrid KV-cache manager for chunked local attention (Llama-4):
    /// VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE's default (vllm/envs.py, read in
    /// vllm/config/vllm.py); off, every chunked layer is allocated as full attention.
    bool chunked_local_hybrid = true;
    /// "GPU KV cache size: N tokens" printed as num_blocks // num_groups x block size
    /// (VllmTokenReport::blocks_per_group, vllm/v1/core/kv_cache_utils.py, _report_kv_cache_config)
    /// rather than max_concurrency x max_model_len (vLLM PR #40694). The two differ for a model of
    /// several KV-cache groups (gpt-oss-120b at tp 4: 2,640,080 against 4,194,634 tokens for 45.32
    /// GiB).
    bool tokens_per_group = false;
    /// The V1 model runner's top-k/top-p path in the profile run: FlashInfer's kernel or a sort
    /// (VLLM_USE_FLASHINFER_SAMPLER's default, vllm/envs.py, read in
    /// vllm/v1/sample/ops/topk_topp_sampler.py).
    VllmSampler sampler = VllmSampler::flashinfer_logits;
    /// Model runner V2 runs every dense model (no routed experts, no state-space layers) by
    /// default (vllm/config/vllm.py, use_v2_model_runner), whose profile samples plainly
    /// (VllmSampler::plain); MoE and hybrid models keep the V1 runner.
    bool dense_runner_v2 = true;
    /// max_num_batched_tokens on the GPUs batch_rule picks (vllm/engine/arg_utils.py,
    /// get_batch_defaults, OPENAI_API_SERVER): 16,384 since vLLM PR #51726, 8,192 before.
    std::uint64_t larger_batch_tokens = 16384;
    /// Which GPUs get the larger batch defaults.
    VllmBatchRule batch_rule = VllmBatchRule::memory_70_gib_not_a100;
};

/// The oldest vLLM release line kvplan models: v0.8, the first with the v1 engine on by default
/// (VLLM_USE_V1=1; v0.10 removed the v0 engine). kvplan models the v1 engine only.
inline constexpr EngineVersion vllm_oldest_release{0, 8};
/// The newest vLLM release line kvplan knows; its defaults are those of vLLM's main branch that
/// kvplan's rules follow.
inline constexpr EngineVersion vllm_newest_release{0, 30};
/// The vLLM release line whose defaults apply: the one given, else the newest kvplan knows.
[[nodiscard]] constexpr EngineVersion vllm_release_or_newest(
    const std::optional<EngineVersion>& given) noexcept {
    return given.value_or(vllm_newest_release);
}

/// Where vLLM's defaults changed, oldest first; a release takes the last row at or before it.
///   v0.8   the v1 engine by default: gpu_memory_utilization 0.9; graphs not charged; no hybrid
///          KV-cache manager, so chunked local attention is allocated as full attention (the
///          manager came in v0.9.2, which kvplan, telling no patches apart, counts as v0.9); the
///          larger batch defaults for an H100 or H200 by name only (PR #12369; PR #17073 reached
///          v0.8.5 at the line's end, counted from v0.9); FlashInfer samples the fp32 softmax
///          (flashinfer_sample took probabilities until PR #15777 moved it to FlashInfer 0.2.3's
///          top_k_top_p_sampling_from_logits, merged in May 2025 and counted from v0.9).
///   v0.9   the larger batch defaults for 70 GiB or more but not an A100 (PRs #17073 and #17885,
///          both in v0.9.0), as on main; FlashInfer samples from the logits; the rest as v0.8.
///   v0.10  gpu_memory_utilization 0.9 (CacheConfig, as since v0.1); graphs not charged; the hybrid
///          manager off for chunked local attention (PR #21761, 2025-07-28, merged after v0.10.0
///          and in v0.10.1: VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE default 0; on in
///          v0.9.2 and v0.10.0 by PR #19351).
///   v0.11  the profile's sampler sorts the logits: PR #26859 (2025-10-15, after v0.11.0) turned
///          the FlashInfer sampler off by default; before, it ran wherever FlashInfer was
///          installed, as in vLLM's images (v0.8 to v0.10 are modelled so). The Triton top-k/top-p
///          kernel of v0.17 to v0.19 is its own row.
///   v0.13  the hybrid manager on again for chunked local attention (PR #29627 set the variable's
///          default to 1; the release is taken from the PR's place in the history, late 2025).
///   v0.17  the profile's top-k/top-p runs Triton's pivot search instead of the sort where Triton
///          is installed (vLLM PR #33538, opened 2026-02-02, in the line after v0.16): 8 B beside
///          the logits rather than 32. llm-d-planner's sweep (accuracy/accuracy_report.md, its
///          "vLLM Version Sensitivity") measured Qwen3-14B's profile peak on an H100 fall from
///          5.64 GiB under v0.16.0 to 2.23 GiB under v0.17.0, as the two rules give (5.6 and 2.1).
///   v0.20  gpu_memory_utilization 0.92 (vllm/config/cache.py; 0.9 through the v0.1x releases);
///          the FlashInfer sampler on by default again (PR #40376, merged 2026-04-20, taken here
///          from v0.20 as PR #40694 is).
///   v0.21  CUDA graph memory estimated and charged to the KV budget
///          (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default on).
///   v0.25  model runner V2 by default for every dense model (PR #44443, merged July 2026; the
///          v0.25.0 release notes list it beside PR #47361's removal of PagedAttention): a dense
///          model's profile samples without top-k/top-p. Its extension to MoE and hybrid models
///          (PR #46646, closed for #53183 on 2026-08-27) is in no release kvplan can cite.
///   v0.28  max_num_batched_tokens 16,384 on the GPUs the batch rule picks (PR #51726, opened
///          2026-08-10: "Update default _max_num_batched_tokens from 8192 to 16384"); v0.27.1
///          was current on 2026-08-23 and builds past v0.28.0 ran by 2026-08-26, and a v0.30.0
///          `vllm serve` on B200s logs "max_num_batched_tokens=16384" with the flag unset; the
///          release is taken as the first line tagged after the PR, v0.28.
///   block size: not a row. vLLM pages in 16 tokens on CUDA in every release modelled
///          (CacheConfig.block_size; CudaPlatformBase.check_and_update_config sets 16 where it is
///          unset), and the attention backends' forcing (engine/vllm_backend.hpp) is taken from
///          main for every release.
///   tokens_per_group: through the v0.19 line "GPU KV cache size" is num_blocks // num_groups x
///          block size (a v0.10.1.1 log of gpt-oss-120b at tp 4 prints 2,640,144 tokens for 45.32
///          GiB, and that rule gives 2,640,080 from the rounded GiB figure); vLLM PR #40694
///          (opened after v0.19.1's release candidates of April 2026) made it max_concurrency x
///          max_model_len, taken here from v0.20.
inline constexpr VllmReleaseDefaults vllm_releases[] = {
    {.since = {0, 8},
     .gpu_memory_utilization = 0.9,
     .charge_cuda_graphs = false,
     .chunked_local_hybrid = false,
     .tokens_per_group = true,
     .sampler = VllmSampler::flashinfer_probs,
     .dense_runner_v2 = false,
     .larger_batch_tokens = 8192,
     .batch_rule = VllmBatchRule::h100_h200_by_name},
    {.since = {0, 9},
     .gpu_memory_utilization = 0.9,
     .charge_cuda_graphs = false,
     .chunked_local_hybrid = false,
     .tokens_per_group = true,
     .dense_runner_v2 = false,
     .larger_batch_tokens = 8192},
    {.since = {0, 10},
     .gpu_memory_utilization = 0.9,
     .charge_cuda_graphs = false,
     .chunked_local_hybrid = false,
     .tokens_per_group = true,
     .dense_runner_v2 = false,
     .larger_batch_tokens = 8192},
    {.since = {0, 11},
     .gpu_memory_utilization = 0.9,
     .charge_cuda_graphs = false,
     .chunked_local_hybrid = false,
     .tokens_per_group = true,
     .sampler = VllmSampler::sorts,
     .dense_runner_v2 = false,
     .larger_batch_tokens = 8192},
    {.since = {0, 13},
     .gpu_memory_utilization = 0.9,
     .charge_cuda_graphs = false,
     .chunked_local_hybrid = true,
     .tokens_per_group = true,
     .sampler = VllmSampler::sorts,
     .dense_runner_v2 = false,
     .larger_batch_tokens = 8192},
    {.since = {0, 17},
     .gpu_memory_utilization = 0.9,
     .charge_cuda_graphs = false,
     .chunked_local_hybrid = true,
     .tokens_per_group = true,
     .sampler = VllmSampler::triton,
     .dense_runner_v2 = false,
     .larger_batch_tokens = 8192},
    {.since = {0, 20},
     .gpu_memory_utilization = 0.92,
     .charge_cuda_graphs = false,
     .chunked_local_hybrid = true,
     .dense_runner_v2 = false,
     .larger_batch_tokens = 8192},
    {.since = {0, 21},
     .gpu_memory_utilization = 0.92,
     .charge_cuda_graphs = true,
     .chunked_local_hybrid = true,
     .dense_runner_v2 = false,
     .larger_batch_tokens = 8192},
    {.since = {0, 25},
     .gpu_memory_utilization = 0.92,
     .charge_cuda_graphs = true,
     .chunked_local_hybrid = true,
     .larger_batch_tokens = 8192},
    {.since = {0, 28}, .gpu_memory_utilization = 0.92},
};

namespace detail {
/// The row of an engine's release table (oldest first, each row from its `since` on) that
/// release `v` runs under; `v` is at least the first row's.
template <class Row, std::size_t N>
[[nodiscard]] constexpr Row release_row(const Row (&table)[N], EngineVersion v) noexcept {
    Row d = table[0];
    for (const Row& r : table)
        if (r.since <= v) d = r;
    return d;
}
}  // namespace detail

/// The defaults of vLLM release line `v`, or nullopt outside vllm_oldest_release ..
/// vllm_newest_release.
[[nodiscard]] constexpr std::optional<VllmReleaseDefaults> vllm_release_defaults(
    EngineVersion v) noexcept {
    if (v < vllm_oldest_release || v > vllm_newest_release) return std::nullopt;
    return detail::release_row(vllm_releases, v);
}

/// Whether vLLM release line `v` charges every byte in use outside PyTorch's allocator after the
/// profile run to the KV budget (VllmOptions::charge_non_torch_in_use). The v1 worker of the v0.8
/// line (vllm/v1/worker/gpu_worker.py, determine_available_memory) added to the profile's torch
/// peak the device's used memory (total - free) less PyTorch's current allocation: the CUDA context
/// and communication buffers with it. vLLM PR #19312 (June 2025, in v0.9.2, which kvplan counts as
/// v0.9) took the memory_profiling of the v0 worker instead, which charges only what the profile
/// adds past the snapshot taken once the context exists.
[[nodiscard]] constexpr bool vllm_charges_non_torch_in_use(EngineVersion v) noexcept {
    return v < EngineVersion{0, 9};
}

/// Whether vLLM release line `v` charges the communication buffers its distributed groups allocate
/// (NCCL's, the custom all-reduce's IPC buffers) to the KV budget. Through the v0.10 line the
/// worker took its memory snapshot before init_worker_distributed_environment, so they were part
/// of the profile's non-torch increase (vllm/v1/worker/gpu_worker.py, init_device); vLLM PR #25359
/// (merged 2025-09-23, before v0.11.0) initialises the groups first.
[[nodiscard]] constexpr bool vllm_charges_comm_buffers(EngineVersion v) noexcept {
    return v < EngineVersion{0, 11};
}

/// Whether vLLM release line `v` spreads data-parallel ranks over several nodes from `vllm serve`:
/// the head node's with --data-parallel-size-local and --data-parallel-address (its API server and
/// its local ranks), each other node's with --headless and --data-parallel-start-rank (its ranks
/// alone, joining the head's handshake; vllm/entrypoints/cli/serve.py, run_headless). vLLM PR
/// #15977 ("[V1] DP scale-out (2/N): Decouple engine process management and comms", opened
/// 2025-04-03: "There is a new `--headless` option for `vllm serve` to run on secondary nodes", its
/// examples giving these four flags) brought them; the v0.9.0 release notes (2025-05-15) list it
/// under "DP: Decouple engine process management and comms (#15977)". Before, vLLM's data
/// parallelism over nodes was the offline example's VLLM_DP_* environment
/// (examples/offline_inference/data_parallel.py, v0.8.x), no `vllm serve` command. vLLM PR #21238
/// ("Internal Load Balancing Per Node", opened 2025-07-20) added an API server on every node
/// (--data-parallel-hybrid-lb); kvplan's commands do not use it, and its release is not pinned.
[[nodiscard]] constexpr bool vllm_multinode_data_parallel(EngineVersion v) noexcept {
    return v >= EngineVersion{0, 9};
}

/// Whether vLLM release line `v` runs one engine over several nodes without Ray: `vllm serve` on
/// every node with --nnodes, --node-rank and --master-addr, the nodes after the first --headless
/// (vLLM PR #23691, the multiprocessing executor across nodes: ParallelConfig nnodes, node_rank,
/// master_addr, vllm/config/parallel.py). The PR was merged in mid-November 2025, after v0.11.0
/// (2025-10-02): v0.11.1 and v0.11.2 carry its check, refusing a world larger than the node's
/// GPUs without --nnodes or --distributed-executor-backend ray (vLLM issue #29447, NVIDIA-NeMo
/// Skills issue #1059, and the Ray fix of vLLM PR #28873 of 2025-11-17). kvplan, telling no
/// patches apart, counts it from v0.12. Before, such an engine ran on a Ray cluster: `ray start
/// --head` on the first node, `ray start --address=...` on the others, and `vllm serve ...
/// --distributed-executor-backend ray` on the first node alone (docs/serving/
/// parallelism_scaling.md, "Running vLLM on a Ray cluster").
[[nodiscard]] constexpr bool vllm_multinode_without_ray(EngineVersion v) noexcept {
    return v >= EngineVersion{0, 12};
}

/// Whether vLLM release line `v` bundles a triton_kernels whose Hopper value layout pads an MXFP4
/// weight's rows and bytes per row to multiples of 64 before swizzling (Triton PR #8677, "pad
/// tensors in HopperValue layout", November 2025: HopperMXValueLayout.swizzle_data's
/// SWIZZLE_ALIGN_M = SWIZZLE_ALIGN_K = 64; engine/startup.hpp, mxfp4_triton_hopper_expert_bytes).
/// vLLM copies triton_kernels into vllm/third_party at the tag of the Triton its PyTorch pins
/// (cmake/external_projects/triton_kernels.cmake): v3.5.0, then v3.5.1, with PyTorch 2.9 (vLLM PR
/// #27370 of October 2025), a layout without the pre-pad; v3.6.0, which carries it, with PyTorch
/// 2.10 and 2.11 (vLLM issue #29283 planned the move with PyTorch 2.10; vLLM 0.19.0 runs PyTorch
/// 2.10 and Triton 3.6.0, vLLM issue #39664; PR #48155 moved on to Triton 3.7.1 in July 2026).
/// The January 2026 image (v0.13) still holds the v3.5 layout: its gpt-oss-20b and gpt-oss-120b
/// loads agree with it within 0.2 %, where the pre-pad would add 0.20 and 1.19 GiB. Counted from
/// v0.14, the next line; no record from v0.14 to v0.18 tells the release apart. Triton PR #10428
/// (May 2026) pads the packed dimension to 256 instead, which no vLLM release kvplan can cite
/// bundles; kvplan keeps 64 for every release from v0.14.
[[nodiscard]] constexpr bool vllm_triton_values_padded_to_64(EngineVersion v) noexcept {
    return v >= EngineVersion{0, 14};
}

/// How the FlashInfer build a vLLM release pins rounds the fusion workspace's buffers.
enum class FusionWorkspaceRounding : std::uint8_t {
    /// No workspace is modelled: a release before v0.17, or vLLM without FlashInfer.
    none,
    /// Each buffer rounded to the multicast object's recommended granularity (FlashInfer 0.6.0 to
    /// 0.6.9, SymmDeviceMemory).
    multicast,
    /// Each buffer plus its signal pad rounded to 2 MiB, the allocation granularity (FlashInfer
    /// from 0.6.10).
    allocation,
};

/// The rounding of vLLM release line `v`'s fusion workspace:
///   before v0.17  not modelled: the pass took its workspace from
///                 trtllm_create_ipc_workspace_for_all_reduce_fusion's cudaMalloc IPC buffers
///                 until vLLM PR #33985 (merged February 2026, after v0.16's branch) moved it to
///                 FlashInfer's unified create_allreduce_fusion_workspace;
///   v0.17-v0.21   multicast: vLLM pinned FlashInfer 0.6.4 to 0.6.8.post1 (PR #36021 asked
///                 0.6.4 -> 0.6.6; PR #41458 says "We are currently on 0.6.8" on 2026-05-01;
///                 v0.21.0 of 2026-05-15 bumped no FlashInfer);
///   from v0.22    allocation: PR #41711 pinned FlashInfer 0.6.11.post2, later 0.6.14
///                 (PR #47669) and 0.6.18.post1 (v0.30.0's image, requirements/cuda.txt).
[[nodiscard]] constexpr FusionWorkspaceRounding vllm_fusion_workspace_rounding(
    EngineVersion v) noexcept {
    if (v < EngineVersion{0, 17}) return FusionWorkspaceRounding::none;
    if (v < EngineVersion{0, 22}) return FusionWorkspaceRounding::multicast;
    return FusionWorkspaceRounding::allocation;
}

/// Whether vLLM release line `v` turns the fusion off under pipeline or data parallelism:
/// enable_allreduce_rms_fusion required pp 1 and dp 1 (vllm/config/vllm.py, vLLM issues #35426
/// and #34458) until PR #41458 (May 2026, with FlashInfer 0.6.8's fix) took the guard out; the
/// guard is taken for the whole multicast line and lifted with it.
[[nodiscard]] constexpr bool vllm_fusion_needs_single_stage(EngineVersion v) noexcept {
    return vllm_fusion_workspace_rounding(v) == FusionWorkspaceRounding::multicast;
}

static_assert(vllm_fusion_workspace_rounding({0, 16}) == FusionWorkspaceRounding::none &&
              vllm_fusion_workspace_rounding({0, 17}) == FusionWorkspaceRounding::multicast &&
              vllm_fusion_workspace_rounding({0, 21}) == FusionWorkspaceRounding::multicast &&
              vllm_fusion_workspace_rounding({0, 22}) == FusionWorkspaceRounding::allocation);
static_assert(!vllm_triton_values_padded_to_64({0, 13}) &&
              vllm_triton_values_padded_to_64({0, 14}));
static_assert(vllm_charges_non_torch_in_use({0, 8}) && !vllm_charges_non_torch_in_use({0, 9}));
static_assert(vllm_charges_comm_buffers({0, 10}) && !vllm_charges_comm_buffers({0, 11}));
static_assert(!vllm_multinode_without_ray({0, 11}) && vllm_multinode_without_ray({0, 12}));
static_assert(vllm_release_defaults({0, 10})->gpu_memory_utilization == 0.9);
static_assert(vllm_release_defaults(vllm_newest_release)->gpu_memory_utilization == 0.92);
static_assert(vllm_release_defaults({0, 9})->gpu_memory_utilization == 0.9);
static_assert(vllm_release_defaults({0, 19})->tokens_per_group &&
              !vllm_release_defaults({0, 20})->tokens_per_group);
static_assert(vllm_release_defaults({0, 8})->sampler == VllmSampler::flashinfer_probs &&
              vllm_release_defaults({0, 10})->sampler == VllmSampler::flashinfer_logits &&
              vllm_release_defaults({0, 11})->sampler == VllmSampler::sorts &&
              vllm_release_defaults({0, 16})->sampler == VllmSampler::sorts &&
              vllm_release_defaults({0, 17})->sampler == VllmSampler::triton &&
              vllm_release_defaults({0, 19})->sampler == VllmSampler::triton &&
              vllm_release_defaults({0, 20})->sampler == VllmSampler::flashinfer_logits);
static_assert(!vllm_release_defaults({0, 24})->dense_runner_v2 &&
              vllm_release_defaults({0, 25})->dense_runner_v2);
static_assert(vllm_release_defaults({0, 27})->larger_batch_tokens == 8192 &&
              vllm_release_defaults({0, 28})->larger_batch_tokens == 16384 &&
              vllm_release_defaults(vllm_newest_release)->larger_batch_tokens == 16384);
static_assert(vllm_release_defaults({0, 8})->batch_rule == VllmBatchRule::h100_h200_by_name &&
              vllm_release_defaults({0, 9})->batch_rule == VllmBatchRule::memory_70_gib_not_a100 &&
              vllm_release_defaults(vllm_newest_release)->batch_rule ==
                  VllmBatchRule::memory_70_gib_not_a100);
static_assert(!vllm_release_defaults({0, 7}) && !vllm_release_defaults({1, 0}));

}  // namespace kvplan
