#pragma once

// SGLang's token pool: the default mem_fraction_static and how the pool is cut into token slots.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "../capacity.hpp"
#include "../detail/checked.hpp"
#include "../detail/enum_table.hpp"
#include "../dtype.hpp"
#include "../gpu.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "sglang_release.hpp"

namespace kvplan {

/// SGLang's MoE runner backend (--moe-runner-backend, ServerArgs.moe_runner_backend in
/// python/sglang/srt/server_args.py; its default "auto" lets each quantization method pick). kvplan
/// models the two that change the weights as loaded: "auto" (for MXFP4 experts, Triton's kernels
/// on Hopper and FlashInfer's on Blackwell: sglang_kernel_weights) and "marlin", the W4A16 Marlin
/// MoE DeepSeek-V4's Hopper recipes name.
enum class SglangMoeRunnerBackend : std::uint8_t {
    automatic,  ///< "auto", SGLang's default
    marlin,     ///< "marlin"
};

inline constexpr FixedArray<detail::EnumName<SglangMoeRunnerBackend>, 2>
    sglang_moe_runner_backend_names{{
        {SglangMoeRunnerBackend::automatic, "auto"},
        {SglangMoeRunnerBackend::marlin, "marlin"},
    }};

/// The command-line spelling (--moe-runner-backend).
[[nodiscard]] constexpr std::string_view name(SglangMoeRunnerBackend b) noexcept {
    return detail::enum_name(sglang_moe_runner_backend_names, b);
}

/// Parses a spelling (sglang_moe_runner_backend_names).
[[nodiscard]] constexpr std::optional<SglangMoeRunnerBackend> parse_sglang_moe_runner_backend(
    std::string_view s) noexcept {
    if (const auto b = detail::enum_parse(sglang_moe_runner_backend_names, s)) return *b;
    return std::nullopt;
}

/// SGLang's knobs that shape the token pool and the weights as loaded.
struct SglangOptions {
    std::optional<double> mem_fraction_static{};          ///< nullopt: SGLang's heuristic
    std::optional<std::uint64_t> chunked_prefill_size{};  ///< nullopt: by GPU memory
    std::optional<std::uint32_t> cuda_graph_max_bs{};     ///< nullopt: by GPU memory and tp
    std::uint32_t page_size = 1;  ///< tokens per page (ServerArgs.page_size; 1 by default)
    /// Separate pools for sliding and full layers (SWAKVPool); off, a sliding layer holds a full
    /// context like any other.
    bool hybrid_swa_pool = false;
    double swa_full_tokens_ratio = 0.8;  ///< SWA pool tokens per full-pool token (server_args.py)
    std::optional<std::uint64_t> max_total_tokens{};  ///< --max-total-tokens caps the pool
    /// --max-running-requests; nullopt: SGLang's default from the pool (sglang_max_running).
    std::optional<std::uint64_t> max_running_requests{};
    /// On ROCm, the quick all-reduce beside the custom one (sglang_rocm_quick_reduce_bytes), which
    /// SGLang's ROCm images start (ROCM_QUICK_REDUCE_QUANTIZATION=INT8); false where it does not
    /// start: the variable NONE or unset, or an image without the amdsmi package (below).
    bool rocm_quick_reduce = true;
    /// --moe-runner-backend: how the MoE layers hold their experts (sglang_kernel_weights).
    SglangMoeRunnerBackend moe_runner_backend = SglangMoeRunnerBackend::automatic;
    /// The SGLang release whose rules apply (engine/sglang_release.hpp): its default
    /// mem_fraction_static (sglang_default_fraction) and, on ROCm, its aiter's custom all-reduce
    /// (sglang_aiter_all_reduce_bytes).
    EngineVersion release = sglang_newest_release;
};

/// The CUDA context SGLang's free-memory reading finds taken on `gpu`, or nullopt where kvplan
/// has no figure (no SM count, or ROCm: the reserve's default stands). SGLang sizes its pool from
/// the memory free once its distributed groups exist ("Load weight begin. avail mem":
/// model_runner.py, init_torch_distributed), so the runtime's total less that is the context its
/// process holds plus the groups ("Init torch distributed ends. mem usage"). Under lazy module
/// loading (CUDA 11.7 on) the primary context grows with the SMs: cudaMemGetInfo's context took
/// 107 MiB on an RTX 4060 Ti (34 SMs) and 555 MiB on an RTX PRO 6000 Blackwell (188 SMs)
/// (llama.cpp PR #23604, May 2026, Linux), the line (623 + 224 x SMs) / 77 MiB through both.
/// On an H100 (132 SMs) that is 392 MiB = 0.38 GiB, and SGLang logged 78.81 of 79.19 GiB free
/// before its groups on four H100s (sglang issue #485, "Init torch begin. Avail mem=78.81 GB");
/// an L4 (58 SMs) gets 177 MiB. engine_memory charges it in place of the reserve's 700 MiB where
/// the reserve's context is not given.
[[nodiscard]] constexpr std::optional<Bytes> sglang_cuda_context(const GpuSpec& gpu) {
    if (gpu.compute_units == 0 || is_rocm(gpu.arch)) return std::nullopt;
    const Bytes line =
        detail::add(623, detail::mul(224, gpu.compute_units, "CUDA context"), "CUDA context") * MiB;
    return Bytes::exactly(line.count() / 77);
}

/// NCCL's buffers that SGLang's distributed groups hold before it reads the pool's base, on a
/// tensor-parallel group of `tp` GPUs `gpu` joined by PCIe alone, where the custom all-reduce is
/// off past two GPUs (custom_all_reduce.py) and the reserve charges no communication buffers:
/// zero elsewhere, or at tp 2 and below. SGLang sets NCCL_CUMEM_ENABLE=0
/// (python/sglang/srt/entrypoints/engine.py, _set_envs_and_config), so NCCL connects its rings
/// and trees at ncclCommInitRank (src/init.cc: runtimeConn needs cuMem), and two communicators
/// exist by then on the 0.4 line: pynccl's of the tensor-parallel group
/// (distributed/device_communicators/pynccl.py), and PyTorch's of the world group, which the
/// first collective on it creates: get_available_gpu_memory's all-reduce of the free memory, a
/// CUDA tensor there (python/sglang/srt/utils.py; later lines reduce it over the CPU group).
/// Each connects 2 channels on PCIe (the one ring the search finds, doubled: src/graph/
/// connect.cc, ncclTopoPostset), on which rank 0 receives from two peers (the ring's last rank
/// and its child in the tree's chain), each connection's buffers on the receiving GPU (P2P
/// transport without P2P read, which needs NVLink: src/transport/p2p.cc): SIMPLE's 4 MiB, LL128's
/// 120 x 640 x 8 x 8 B and LL's 8 x 512 x 8 x 16 B, 9.1875 MiB. 2 x 2 x 2 x 9.1875 = 73.5 MiB.
[[nodiscard]] constexpr Bytes sglang_pcie_nccl_bytes(const GpuSpec& gpu, std::uint32_t tp) {
    if (tp <= 2 || gpu.scale_up_bandwidth > BytesPerSecond{}) return {};
    constexpr std::uint64_t communicators = 2, channels = 2, receives = 2;
    const Bytes connection = 4 * MiB + Bytes::exactly(120 * 640 * 8 * 8 + 8 * 512 * 8 * 16);
    return connection * (communicators * channels * receives);
}

/// The IPC buffer of SGLang's quick all-reduce on ROCm, per GPU of a tensor-parallel group of `tp`
/// GPUs `gpu`, taken with the distributed groups, before SGLang reads the pool's base ("Init torch
/// distributed ends. mem usage="); zero where SGLang does not start it. Each GroupCoordinator with
/// the custom all-reduce, the tensor-parallel group's, builds a QuickAllReduce on HIP
/// (python/sglang/srt/distributed/parallel_state.py, GroupCoordinator.__init__, since SGLang PR
/// #6619), which starts on gfx94x and gfx95x (CDNA3, CDNA4: qr_rocm_arch_available), at 2, 4 or 8
/// GPUs of one node, fully connected over xGMI past two (is_full_nvlink), and only where
/// ROCM_QUICK_REDUCE_QUANTIZATION is not NONE (device_communicators/quick_all_reduce.py,
/// init_quick_all_reduce): SGLang's own default is NONE, but docker/rocm.Dockerfile, which builds
/// its ROCm images, sets ENV ROCM_QUICK_REDUCE_QUANTIZATION=INT8. Its maximum problem size
/// defaults to 2 GiB (ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB unset), and DeviceComms::init allocates
/// one uncached buffer of 2 x that for the data plus 2 x tp x kMaxNumBlocks (304 x 4) uint32
/// flags (sgl-kernel/csrc/allreduce/quick_all_reduce_hip.h, quick_all_reduce_base.h): 4 GiB and
/// 76 KiB at tp 8. is_full_nvlink queries the links through amdsmi, and where the image lacks it
/// the quick all-reduce fails to start with a warning: the rocm7.2 rocm/sgl-dev images until
/// SGLang PR #19091 (February 2026) installed amdsmi. GLM-5-FP8 on eight MI355Xs logs 3.81 GB in
/// its distributed groups on the image of 2026-02-18 and 7.81 GB on the image of 2026-02-25, the
/// same start: 4.00 GiB more.
[[nodiscard]] constexpr Bytes sglang_rocm_quick_reduce_bytes(const GpuSpec& gpu, std::uint32_t tp,
                                                             const SglangOptions& o = {}) {
    if (!o.rocm_quick_reduce || !is_rocm(gpu.arch)) return {};
    if (tp != 2 && tp != 4 && tp != 8) return {};
    if (tp > 2 && gpu.scale_up_bandwidth == BytesPerSecond{}) return {};
    constexpr std::uint64_t max_problem = std::uint64_t{1} << 31;  // 2 GiB
    constexpr std::uint64_t max_blocks = 304 * 4;                  // kMaxNumBlocks
    return Bytes::exactly(2 * max_problem + 2 * std::uint64_t{tp} * max_blocks * 4);
}

/// SGLang's default mem_fraction_static and the reserve it rests on, in MiB as SGLang computes it
/// (python/sglang/srt/server_args.py, _handle_gpu_memory_settings, since SGLang PR #10975).
struct SglangMemFraction {
    std::uint64_t gpu_memory_mib = 0;        ///< nvidia-smi memory.total, MiB
    std::uint64_t chunked_prefill_size = 0;  ///< tokens
    std::uint32_t cuda_graph_max_bs = 0;
    double constant_mib = 512.0;  ///< fixed metadata
    double prefill_mib = 0.0;     ///< max(chunked_prefill_size, 2048) x 1.5
    double cuda_graph_mib = 0.0;  ///< cuda_graph_max_bs x 2
    /// With --enable-dp-attention: cuda_graph_max_bs x dp x 3, and x 1.5 more past a batch of 300
    /// (reserve_for_graph_mb: "DP attention needs more padding").
    double dp_attention_mib = 0.0;
    double parallel_mib = 0.0;  ///< tp x pp / 8 x 1024
    double floor_mib = 0.0;     ///< 10 GiB on GPUs above 60 GiB, else 0
    double reserved_mib = 0.0;  ///< max(sum of the above, floor)
    double fraction = 0.0;      ///< round((gpu_mem - reserved) / gpu_mem, 3)
};

/// SGLang's default mem_fraction_static for `gpu` at tp x pp (and `dp` attention groups), with the
/// chunked-prefill size and CUDA-graph batch of its GPU-memory table unless `o` gives them.
[[nodiscard]] constexpr SglangMemFraction sglang_mem_fraction(const GpuSpec& gpu, std::uint32_t tp,
                                                              std::uint32_t pp,
                                                              const SglangOptions& o = {},
                                                              std::uint32_t dp = 1) {
    SglangMemFraction r;
    // SGLang reads nvidia-smi's memory.total (get_device_memory_capacity), which still counts the
    // memory the driver reserves; without that figure, the runtime's total stands in.
    r.gpu_memory_mib =
        (gpu.memory_driver.is_zero() ? gpu.memory_total : gpu.memory_driver).count() / MiB.bytes;
    const std::uint64_t g = r.gpu_memory_mib;
    // The table of _handle_gpu_memory_settings: (upper bound GiB, chunked prefill, graph bs for
    // tp < 4, graph bs for tp >= 4).
    std::uint64_t prefill = 16384;
    std::uint32_t bs = 512;
    if (g < 20 * 1024) {
        prefill = 2048;
        bs = 8;
    } else if (g < 35 * 1024) {
        prefill = 2048;
        bs = tp < 4 ? 24 : 80;
    } else if (g < 60 * 1024) {
        prefill = 4096;
        bs = tp < 4 ? 32 : 160;
    } else if (g < 160 * 1024) {
        prefill = 8192;
        bs = tp < 4 ? 256 : 512;
    }
    r.chunked_prefill_size = o.chunked_prefill_size.value_or(prefill);
    r.cuda_graph_max_bs = o.cuda_graph_max_bs.value_or(bs);
    r.prefill_mib =
        static_cast<double>(std::max<std::uint64_t>(r.chunked_prefill_size, 2048)) * 1.5;
    r.cuda_graph_mib = static_cast<double>(r.cuda_graph_max_bs) * 2.0;
    if (dp > 1) {
        // python/sglang/srt/arg_groups/memory_hook.py, reserve_for_graph_mb: the graph batch is
        // the full tp's, not divided by dp.
        const double bs_dp = static_cast<double>(r.cuda_graph_max_bs) * dp;
        r.dp_attention_mib = bs_dp * 3.0 + (r.cuda_graph_max_bs > 300 ? bs_dp * 1.5 : 0.0);
    }
    r.parallel_mib = static_cast<double>(tp) * static_cast<double>(pp) / 8.0 * 1024.0;
    r.floor_mib = g > 60 * 1024 ? 10.0 * 1024.0 : 0.0;
    r.reserved_mib = std::max(
        r.constant_mib + r.prefill_mib + r.cuda_graph_mib + r.dp_attention_mib + r.parallel_mib,
        r.floor_mib);
    const double x = (static_cast<double>(g) - r.reserved_mib) / static_cast<double>(g);
    r.fraction = static_cast<double>(static_cast<std::int64_t>(x * 1000.0 + 0.5)) / 1000.0;
    return r;
}

/// SGLang PR #7054's default mem_fraction_static and the reserve it rests on, in MiB as SGLang
/// computes it (python/sglang/srt/server_args.py, ServerArgs.__post_init__, "Set mem fraction
/// static", from 0.4.7.post1 through 0.5.2: SglangFractionRule::by_reserve).
struct SglangReserveFraction {
    std::uint64_t gpu_memory_mib = 0;  ///< nvidia-smi memory.total, MiB (as sglang_mem_fraction)
    double reserved_mib = 0.0;  ///< the reserve by GPU memory and tp x pp, 4 GiB more under DP
    double fraction = 0.0;      ///< round((gpu_mem - reserved) / gpu_mem, 3)
};

/// SGLang PR #7054's fraction for `gpu` at tp x pp, with DP attention where `dp` > 1 (as
/// sglang_mem_fraction reads it). With p = tp x pp and G the GPU's memory in MiB, the reserve is
/// (2.8 + p / 10) GiB below 35 GiB (T4, 4080; A10, L40, 4090), (9.5 + p / 2) GiB below 90 GiB
/// (A100, H100), (12 + p / 2) GiB below 160 GiB (H20, H200), else 32 GiB (B200, MI300), plus 4 GiB
/// with --enable-dp-attention; the fraction is (G - reserve) / G to three places. The chunked
/// prefill and graph batch do not enter it. Its 2 GiB more under speculative decoding is not
/// taken (resolve_serving refuses speculation under SGLang), nor the multimodal reduction
/// (adjust_mem_fraction_for_vlm, SGLang PR #6881), which no SGLang row models.
[[nodiscard]] constexpr SglangReserveFraction sglang_reserve_fraction(const GpuSpec& gpu,
                                                                      std::uint32_t tp,
                                                                      std::uint32_t pp,
                                                                      std::uint32_t dp = 1) {
    SglangReserveFraction r;
    r.gpu_memory_mib = sglang_mem_fraction(gpu, tp, pp, {}, 1).gpu_memory_mib;
    const std::uint64_t g = r.gpu_memory_mib;
    const double p = static_cast<double>(tp) * static_cast<double>(pp);
    const double gib = g < 35 * 1024    ? 2.8 + p / 10.0
                       : g < 90 * 1024  ? 9.5 + p / 2.0
                       : g < 160 * 1024 ? 12.0 + p / 2.0
                                        : 32.0;
    r.reserved_mib = gib * 1024.0 + (dp > 1 ? 4.0 * 1024.0 : 0.0);
    const double x = (static_cast<double>(g) - r.reserved_mib) / static_cast<double>(g);
    r.fraction = static_cast<double>(static_cast<std::int64_t>(x * 1000.0 + 0.5)) / 1000.0;
    return r;
}

/// SGLang's default mem_fraction_static for `gpu` at tp x pp (and `dp` attention groups) under
/// `o.release`'s rule (sglang_release_defaults): the 0.4 line's by tensor-parallel size
/// (sglang_tp_fraction) through 0.4.6, PR #7054's reserve (sglang_reserve_fraction) from 0.4.8 to
/// 0.5.2, the memory rule (sglang_mem_fraction) from 0.5.3. 0.4.7, whose tag and post release
/// differ, takes the memory rule here; resolve_serving (plan/deployment.hpp) refuses it unless a
/// fraction is given.
[[nodiscard]] constexpr double sglang_default_fraction(const GpuSpec& gpu, std::uint32_t tp,
                                                       std::uint32_t pp,
                                                       const SglangOptions& o = {},
                                                       std::uint32_t dp = 1) {
    const auto d = sglang_release_defaults(o.release);
    if (d && d->fraction == SglangFractionRule::by_tp) return sglang_tp_fraction(tp);
    if (d && d->fraction == SglangFractionRule::by_reserve)
        return sglang_reserve_fraction(gpu, tp, pp, dp).fraction;
    return sglang_mem_fraction(gpu, tp, pp, o, dp).fraction;
}

/// SGLang's token pool on a replica.
struct SglangKvPool {
    Bytes available{};  ///< pool memory per GPU: the "rest" after weights within the fraction
    std::uint32_t limiting_stage = 0;
    std::uint32_t layers = 0;  ///< layers in a cell on that stage
    Bytes cell_size{};         ///< bytes of one token over those layers (get_cell_size_per_token)
    std::uint64_t max_total_num_tokens = 0;  ///< "max_total_num_tokens=" (the full pool when split)
    std::uint64_t swa_tokens = 0;            ///< sliding pool tokens under hybrid_swa_pool, else 0
    std::uint32_t page_size = 1;
    Bytes k_size{};  ///< "KV Cache is allocated. ... K size:" (MLA: the latent, "KV size")
    Bytes v_size{};  ///< "V size:" (zero for MLA)
    bool mamba_state_ignored =
        false;  ///< constant-state layers are not in the pool (their pool is not modelled)
    Bytes largest_cell{};  ///< the largest cell over the pipeline stages (cell_size's if pp is 1)
};

/// SGLang's token pool for `m` under `l` with `available[stage]` bytes of pool memory per GPU
/// (profile_max_num_token in python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py,
/// formerly model_runner.py): tokens = available // cell_size, aligned down to the page, the least
/// over pipeline ranks.
[[nodiscard]] constexpr SglangKvPool sglang_kv_pool(const Model& m, KvFormat f, const Layout& l,
                                                    std::span<const Bytes> available,
                                                    const SglangOptions& o = {}) {
    KVPLAN_EXPECTS(available.size() == 1 || available.size() == l.pp());
    KVPLAN_EXPECTS(o.page_size >= 1);
    SglangKvPool p;
    p.page_size = o.page_size;
    p.available = available[0];
    p.max_total_num_tokens = std::numeric_limits<std::uint64_t>::max();
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const Shard sh = l.stage(st);
        Bytes cell{}, k_row{}, v_row{};
        std::uint32_t layers = 0, swa_layers = 0;
        // Layer by layer, grouped by spec: each spec's bytes computed once, times its layers
        // (evaluate() runs this on every call; the sums are exact either way).
        const auto count = detail::layers_per_spec(m, sh);
        for (std::uint32_t k = 0; k < m.layers().num_specs; ++k) {
            const std::uint64_t n = count[k];
            const CacheSpec& spec = m.layers().specs[k];
            if (n == 0) continue;
            if (spec.kind == CacheKind::constant_state) {
                p.mamba_state_ignored = true;
                continue;
            }
            if (spec.kind == CacheKind::shared || spec.kind == CacheKind::mlp_only) continue;
            const Bytes per_layer = layer_bytes_per_token(spec, f, sh.tp);
            cell += per_layer * n;
            if (spec.kind == CacheKind::mla_latent) {
                k_row += per_layer * n;
            } else {
                const std::uint64_t heads = kv_heads_per_rank(spec.kv_heads, sh.tp);
                k_row += vector_bytes(f, spec.k_head_dim) * heads * n;
                v_row += vector_bytes(f, spec.v_head_dim) * heads * n;
            }
            layers += static_cast<std::uint32_t>(n);
            swa_layers +=
                spec.kind == CacheKind::sliding_window ? static_cast<std::uint32_t>(n) : 0;
        }
        if (cell.is_zero()) continue;
        p.largest_cell = std::max(p.largest_cell, cell);
        const Bytes avail = available[available.size() == 1 ? 0 : st];
        std::uint64_t tokens = avail / cell;
        std::uint64_t swa = 0;
        if (o.hybrid_swa_pool && swa_layers > 0 && swa_layers < layers) {
            // set_num_tokens_hybrid_swa: the same bytes, split so the sliding pool has
            // swa_full_tokens_ratio tokens per full-pool token.
            const double total = static_cast<double>(tokens) * layers;
            const auto full = static_cast<std::uint64_t>(
                total / (o.swa_full_tokens_ratio * swa_layers + (layers - swa_layers)));
            swa = static_cast<std::uint64_t>(static_cast<double>(full) * o.swa_full_tokens_ratio);
            tokens = full;
            swa = swa / o.page_size * o.page_size;
        }
        tokens = tokens / o.page_size * o.page_size;
        if (o.max_total_tokens) tokens = std::min(tokens, *o.max_total_tokens);
        if (tokens < p.max_total_num_tokens) {
            p.max_total_num_tokens = tokens;
            p.swa_tokens = swa;
            p.limiting_stage = st;
            p.layers = layers;
            p.cell_size = cell;
            // MHATokenToKVPool / MLATokenToKVPool allocate size + page_size rows per layer (one
            // padded page for dummy writes).
            p.k_size = k_row * (tokens + o.page_size);
            p.v_size = v_row * (tokens + o.page_size);
        }
    }
    if (p.max_total_num_tokens == std::numeric_limits<std::uint64_t>::max())
        p.max_total_num_tokens = 0;
    return p;
}

/// SGLang's token pool with the same pool memory on every GPU.
[[nodiscard]] constexpr SglangKvPool sglang_kv_pool(const Model& m, KvFormat f, const Layout& l,
                                                    Bytes available, const SglangOptions& o = {}) {
    return sglang_kv_pool(m, f, l, std::span<const Bytes>(&available, 1), o);
}

/// SGLang's cap on requests running at once (python/sglang/srt/mem_cache/kv_cache_configurator.py,
/// KVCacheConfigurator.resolve_max_num_reqs): unset, the pool's tokens T per context_len tokens
/// times 512, kept within [2,048, 4,096], and never above T / 2; set, the user's figure, never
/// above T / 2.
[[nodiscard]] constexpr std::uint64_t sglang_max_running(const SglangKvPool& p,
                                                         std::uint64_t context_len,
                                                         const SglangOptions& o = {}) {
    const std::uint64_t half = p.max_total_num_tokens / 2;
    if (o.max_running_requests) return std::min(*o.max_running_requests, half);
    const double per_context = context_len == 0 ? 0.0
                                                : static_cast<double>(p.max_total_num_tokens) /
                                                      static_cast<double>(context_len) * 512.0;
    const double clamped = std::min(std::max(per_context, 2048.0), 4096.0);
    return std::min(static_cast<std::uint64_t>(clamped), half);
}

/// Sequences of `context` tokens SGLang's pool holds at once (its pages, and under a hybrid SWA
/// pool the window in the sliding pool), as a ratio.
[[nodiscard]] constexpr double sglang_max_concurrency(const Model& m, const SglangKvPool& p,
                                                      std::uint64_t context) {
    KVPLAN_EXPECTS(context >= 1);
    const std::uint64_t per_seq = detail::ceil_div(context, p.page_size) * p.page_size;
    double c = static_cast<double>(p.max_total_num_tokens) / static_cast<double>(per_seq);
    if (p.swa_tokens != 0) {
        const std::uint64_t w = std::min(context, largest_window(m));
        const std::uint64_t swa_per_seq = detail::ceil_div(w, p.page_size) * p.page_size;
        c = std::min(c, static_cast<double>(p.swa_tokens) / static_cast<double>(swa_per_seq));
    }
    return c;
}

}  // namespace kvplan
