#pragma once

// What each engine gives the cache (engine_memory) and what it builds in it (engine_report), in the
// same terms for every engine. Two steps per engine:
//
//   memory   which memory the engine's fraction applies to, and what it subtracts after it
//            (engine_memory);
//   cache    how the engine cuts that memory into blocks or token slots and what it reports
//            (vllm_kv_cache, sglang_kv_pool, trtllm_kv_cache, ideal_kv_cache).
//
// The cache step takes the KV memory per GPU as an input, so a figure an engine printed at start-up
// ("Available KV cache memory: 6.51 GiB") reproduces what it then reported. Pipeline stages are
// never averaged: every engine takes the minimum over its ranks.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "../budget.hpp"
#include "../capacity.hpp"
#include "../detail/checked.hpp"
#include "../dtype.hpp"
#include "../gpu.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "allreduce_fusion.hpp"
#include "ideal.hpp"
#include "kind.hpp"
#include "nccl.hpp"
#include "sglang.hpp"
#include "startup.hpp"
#include "trtllm.hpp"
#include "vllm.hpp"

namespace kvplan {

/// Options of every profile, for the functions that take an Engine.
struct EngineOptions {
    VllmOptions vllm{};
    SglangOptions sglang{};
    TrtllmOptions trtllm{};
};

/// `o` with the profile accounting of vLLM release line `v` (engine/release.hpp): whether CUDA
/// graphs, memory in use outside PyTorch, the distributed groups' buffers, NCCL's NVLS buffers and
/// the logits gather's communicator are charged, the fusion workspace's rounding and where the
/// fusion runs, and how the tokens of the cache are reported. `o` unchanged for a release outside
/// the table.
[[nodiscard]] constexpr VllmOptions vllm_release_options(VllmOptions o, EngineVersion v) {
    const auto d = vllm_release_defaults(v);
    if (!d) return o;
    o.charge_cuda_graphs = d->charge_cuda_graphs;
    o.charge_non_torch_in_use = vllm_charges_non_torch_in_use(v);
    o.charge_comm_buffers = vllm_charges_comm_buffers(v);
    o.charge_nvls_buffers = vllm_profile_connects_nvls(v);
    o.charge_logits_gather_communicator = vllm_logits_gather_opens_torch_nccl(v);
    o.fusion_workspace = vllm_fusion_workspace_rounding(v);
    o.fusion_single_stage_only = vllm_fusion_needs_single_stage(v);
    if (d->tokens_per_group) o.token_report = VllmTokenReport::blocks_per_group;
    return o;
}

/// The KV memory an engine gives one GPU, term by term.
struct EngineMemory {
    Engine engine = Engine::ideal;
    Bytes memory_total{};  ///< the CUDA or HIP runtime's total
    double fraction =
        0.0;  ///< gpu_memory_utilization, mem_fraction_static or free_gpu_memory_fraction
    Bytes fraction_base{};   ///< what the fraction multiplies
    Bytes fraction_bytes{};  ///< fraction x base, rounded as the engine rounds it
    Bytes weights{};
    Bytes activation{};
    Bytes cuda_graphs{};
    Bytes cuda_context{};
    Bytes comm_buffers{};
    Bytes nccl_nvls{};  ///< NCCL's NVLS buffers vLLM's profile connects (engine/nccl.hpp)
    /// PyTorch's NCCL communicator vLLM's logits all-gather opens in the profile, through v0.22
    /// (engine/nccl.hpp, vllm_logits_gather_communicator_bytes)
    Bytes torch_nccl_communicator{};
    Bytes cublas_workspace{};  ///< PyTorch's cuBLAS workspace in vLLM's profile peak (reserve.hpp)
    /// FlashInfer's all-reduce fusion workspace vLLM's profile allocates (allreduce_fusion.hpp)
    Bytes fusion_workspace{};
    Bytes lora{};  ///< multi-LoRA adapter slots, allocated with the weights (budget/lora.hpp)
    Bytes encoder_cache{};     ///< a vision model's profiled encoder outputs (vLLM charges them)
    Bytes charged{};           ///< terms subtracted from fraction_bytes
    Bytes outside{};           ///< terms left to live outside fraction_bytes
    Bytes kv_memory{};         ///< fraction_bytes - charged (zero if negative)
    Bytes shortfall{};         ///< charged - fraction_bytes when the charged terms alone do not fit
    bool outside_fits = true;  ///< the outside terms fit in what the fraction leaves
};

/// The KV memory engine `e` gives a GPU of stage `stage` of `r`:
///   ideal   total - weights: every byte the driver reports but the weights goes to the cache,
///           no fraction, no reserve, so no engine gives more (an upper bound, not a prediction);
///   vllm    ceil(total x gpu_memory_utilization) - weights - activation peak - encoder outputs
///           [- CUDA graphs]
///           (vllm/v1/worker/gpu_worker.py, determine_available_memory; vllm/v1/worker/utils.py,
///           request_memory): the CUDA context and NCCL buffers exist before vLLM's memory snapshot
///           and must fit beside the fraction (releases through v0.10 charged the buffers,
///           v0.8 the context too: VllmOptions::charge_comm_buffers, charge_non_torch_in_use);
///           from v0.11 NCCL's NVLS buffers, which the profile's first large all-reduce connects,
///           are charged (vllm_profile_nvls_bytes), through v0.22 PyTorch's NCCL communicator
///           that the profile's logits all-gather opens (vllm_logits_gather_communicator_bytes),
///           and from v0.17 FlashInfer's all-reduce fusion workspace, built as the profile
///           compiles the model (vllm_profile_fusion_workspace_bytes); PyTorch's cuBLAS workspace,
///           taken at the profile's first GEMM, is in its torch peak (cublas_workspace_bytes);
///   sglang  mem_fraction_static x (memory free after distributed init) - weights
///           (model_runner_kv_cache_mixin.py): activations and graphs live in the rest;
///   trtllm  free_gpu_memory_fraction x (total - weights - activation peak - context, NCCL and
///           graphs), the memory free after the PyTorch backend's profiling run
///           (tensorrt_llm/_torch/pyexecutor/_util.py, KvCacheCreator).
namespace detail {

/// engine_memory with the stage's weights `weights` given.
[[nodiscard]] constexpr EngineMemory engine_memory_with(Engine e, const Replica& r, const Layout& l,
                                                        std::uint32_t stage, Bytes weights,
                                                        const BudgetOptions& b,
                                                        const EngineOptions& eo) {
    EngineMemory em;
    em.engine = e;
    em.memory_total = r.gpu.memory_total;
    // vLLM profiles a forward of its own max_num_batched_tokens.
    ReserveOptions ro = b.reserve;
    if (e == Engine::vllm && !ro.max_num_batched_tokens)
        ro.max_num_batched_tokens = eo.vllm.max_num_batched_tokens;
    if (e != Engine::vllm) profile_elsewhere(ro, r.gpu);
    const Reserve res = reserve_on_rank(r, l, stage, ro);
    em.weights = weights;
    em.activation = res.activation.bytes;
    em.cuda_graphs = res.cuda_graphs.bytes;
    em.cuda_context = res.cuda_context.bytes;
    em.comm_buffers = res.comm_buffers.bytes;
    // LoRA slots are allocated as the model loads: every engine counts them with the weights
    // (vLLM's "Model loading took"; SGLang's LoRA memory pool precedes its KV pool).
    em.lora = res.lora.bytes;
    // Only vLLM's profile run is known to hold encoder outputs (budget/reserve.hpp, encoder_cache).
    if (e == Engine::vllm) em.encoder_cache = res.encoder_cache.bytes;
    switch (e) {
        case Engine::ideal:
            em.fraction = 1.0;
            em.fraction_base = em.memory_total;
            em.fraction_bytes = em.memory_total;
            em.charged = em.weights + em.lora;
            break;
        case Engine::vllm: {
            em.fraction = b.utilization;
            em.fraction_base = em.memory_total;
            em.fraction_bytes = detail::scale_up(em.memory_total, b.utilization);
            // The v0.8 line charged the memory in use outside PyTorch after the profile, the
            // context and the communication buffers with it (vllm_charges_non_torch_in_use);
            // through v0.10 the buffers were charged alone (vllm_charges_comm_buffers).
            const bool context_charged = eo.vllm.charge_non_torch_in_use;
            const bool comm_charged = context_charged || eo.vllm.charge_comm_buffers;
            // A measured profile (calibrate.hpp, apply_profile) holds the non-torch increase,
            // NVLS's buffers with it; through v0.10 the communication buffers term holds them.
            em.nccl_nvls = vllm_profile_nvls_bytes(
                r.gpu, l.tp(),
                res.activation_model.element * detail::mul(res.activation_model.tokens,
                                                           r.model.config().hidden_size,
                                                           "the profile's all-reduce"),
                eo.vllm.charge_nvls_buffers && !comm_charged &&
                    res.activation.source == TermSource::modelled);
            // The logits all-gather's communicator, on the stage that computes the logits (the
            // last), is in the non-torch increase as NVLS's buffers are.
            em.torch_nccl_communicator = vllm_logits_gather_communicator_bytes(
                r.gpu, l.tp(),
                eo.vllm.charge_logits_gather_communicator && !comm_charged && stage + 1 == l.pp() &&
                    res.activation.source == TermSource::modelled);
            // A measured torch peak (a given activation) holds the workspace already.
            if (res.activation.source == TermSource::modelled) {
                em.cublas_workspace = cublas_workspace_bytes(r.gpu);
                // FlashInfer's fusion workspace is part of the non-torch increase, as NVLS's
                // buffers are.
                em.fusion_workspace = vllm_profile_fusion_workspace_bytes(
                    r.gpu, l.tp(), l.pp(), l.dp(), r.model.config().hidden_size,
                    res.activation_model.element, res.activation_model.tokens,
                    comm_charged ? FusionWorkspaceRounding::none : eo.vllm.fusion_workspace,
                    eo.vllm.fusion_single_stage_only);
            }
            em.charged = em.weights + em.lora + em.activation + em.encoder_cache + em.nccl_nvls +
                         em.torch_nccl_communicator + em.cublas_workspace + em.fusion_workspace +
                         (eo.vllm.charge_cuda_graphs ? em.cuda_graphs : Bytes{}) +
                         (context_charged ? em.cuda_context : Bytes{}) +
                         (comm_charged ? em.comm_buffers : Bytes{});
            em.outside = (context_charged ? Bytes{} : em.cuda_context) +
                         (comm_charged ? Bytes{} : em.comm_buffers) +
                         (eo.vllm.charge_cuda_graphs ? Bytes{} : em.cuda_graphs);
            break;
        }
        case Engine::sglang:
            // SGLang's own figures where the reserve's are not given: the context its free-memory
            // reading finds, and NCCL's buffers on PCIe nodes, which the reserve leaves out.
            if (res.cuda_context.source == TermSource::modelled)
                if (const auto ctx = sglang_cuda_context(r.gpu)) em.cuda_context = *ctx;
            if (res.comm_buffers.source == TermSource::modelled && em.comm_buffers.is_zero())
                em.comm_buffers = sglang_pcie_nccl_bytes(r.gpu, l.tp());
            // On ROCm, aiter's custom all-reduce at the release's max_size and the quick
            // all-reduce's buffer beside it; the reserve's term stands for RCCL's communicators.
            if (res.comm_buffers.source == TermSource::modelled)
                em.comm_buffers += sglang_aiter_all_reduce_bytes(r.gpu, l.tp(), eo.sglang.release) +
                                   sglang_rocm_quick_reduce_bytes(r.gpu, l.tp(), eo.sglang);
            em.fraction = eo.sglang.mem_fraction_static
                              ? *eo.sglang.mem_fraction_static
                              : sglang_default_fraction(r.gpu, l.tp(), l.pp(), eo.sglang, l.dp());
            em.fraction_base =
                detail::saturating_sub(em.memory_total, em.cuda_context + em.comm_buffers);
            // SGLang's heuristic goes negative when its reserve passes the GPU's memory (a small
            // GPU under dp attention): nothing is left for weights or cache.
            em.fraction_bytes = detail::scale_down(em.fraction_base, std::max(em.fraction, 0.0));
            em.charged = em.weights + em.lora;
            em.outside = em.activation + em.cuda_graphs;
            break;
        case Engine::trtllm:
            // The fraction is a float in TensorRT-LLM (0.9 is 0.899999976, as its logs print).
            em.fraction =
                static_cast<double>(static_cast<float>(eo.trtllm.free_gpu_memory_fraction));
            em.fraction_base = detail::saturating_sub(
                em.memory_total, em.weights + em.lora + em.activation + em.cuda_context +
                                     em.comm_buffers + em.cuda_graphs);
            em.fraction_bytes = detail::scale_down(em.fraction_base, em.fraction);
            break;
    }
    em.kv_memory = detail::saturating_sub(em.fraction_bytes, em.charged);
    em.shortfall = detail::saturating_sub(em.charged, em.fraction_bytes);
    // vLLM checks at start-up that the free memory covers total x utilization; SGLang's activations
    // and graphs live in (1 - fraction) of what was free; TensorRT-LLM needs the weights and the
    // profiled peak to fit at all.
    em.outside_fits =
        e == Engine::trtllm
            ? em.weights + em.lora + em.activation + em.cuda_context + em.comm_buffers +
                      em.cuda_graphs <=
                  em.memory_total
            : em.outside <=
                  detail::saturating_sub(e == Engine::sglang ? em.fraction_base : em.memory_total,
                                         em.fraction_bytes);
    return em;
}

}  // namespace detail

/// engine_memory_with the stage's weights as engine `e` holds them once loaded (loaded_weights).
[[nodiscard]] constexpr EngineMemory engine_memory(Engine e, const Replica& r, const Layout& l,
                                                   std::uint32_t stage, const BudgetOptions& b = {},
                                                   const EngineOptions& eo = {}) {
    const Bytes stored = weight_bytes_per_rank(r.model, l, stage, r.weights).total();
    return detail::engine_memory_with(
        e, r, l, stage,
        loaded_weights(e, gpu_family(r.gpu), r.model, l, stage, r.weights, stored, r.gpu.arch,
                       vllm_newest_release, eo.sglang.moe_runner_backend)
            .loaded,
        b, eo);
}

/// What one engine makes of a replica, in the same terms for every engine.
struct EngineCapacity {
    Engine engine = Engine::ideal;
    Bytes kv_memory{};  ///< per GPU of the limiting stage
    std::optional<std::uint64_t>
        tokens{};                  ///< the KV tokens the engine reports (nullopt: nothing grows)
    std::uint64_t context = 0;     ///< tokens per sequence the concurrency is for
    double max_concurrency = 0.0;  ///< sequences of `context` the engine logs (a ratio)
    /// Whole sequences of `context` the engine's scheduler holds at once in its cache (vLLM:
    /// vllm_admitted, past its null block and with windows that stop growing), before the cap.
    std::uint64_t admitted = 0;
    /// The engine's cap on sequences at once: vLLM's max_num_seqs, SGLang's max_running_requests,
    /// TensorRT-LLM's max_batch_size; 0: none (ideal).
    std::uint64_t sequence_cap = 0;
    bool starts = true;  ///< the engine accepts the configuration

    /// Sequences at once: what the cache admits, within the cap.
    [[nodiscard]] constexpr std::uint64_t max_sequences() const noexcept {
        return sequence_cap == 0 ? admitted : std::min(admitted, sequence_cap);
    }
    /// Whether the cap, not the cache, sets max_sequences().
    [[nodiscard]] constexpr bool capped() const noexcept {
        return sequence_cap != 0 && sequence_cap < admitted;
    }
};

/// Every figure of one engine on a replica: the memory per stage, the cache, and the summary.
struct EngineReport {
    EngineCapacity summary{};
    std::array<EngineMemory, max_pipeline_stages> memory{};  ///< per stage (when computed)
    std::uint32_t num_stages = 0;
    VllmKvCache vllm{};
    SglangKvPool sglang{};
    TrtllmKvCache trtllm{};
    IdealKvCache ideal{};
    /// The memory of the stages in use.
    [[nodiscard]] constexpr std::span<const EngineMemory> stage_memory() const noexcept {
        return {memory.data(), num_stages};
    }
};

namespace detail {

/// Sequences of `context` tokens `kv` holds per stage at their exact bytes, the fixed state of
/// Mamba and linear-attention layers included: the most an engine whose state pool kvplan does not
/// model (SGLang's, TensorRT-LLM's) can hold beside its token pool.
[[nodiscard]] constexpr std::uint64_t exact_sequences(const Replica& r, const Layout& l,
                                                      std::span<const Bytes> kv,
                                                      std::uint64_t context) {
    std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const Bytes per_seq = kv_bytes_per_sequence(r.model, r.kv, context, l.stage(st));
        if (per_seq.is_zero()) continue;
        least = std::min(least, kv[kv.size() == 1 ? 0 : st] / per_seq);
    }
    return least;
}

/// The cache step of `e` given the KV memory per stage.
constexpr void engine_cache(EngineReport& rep, Engine e, const Replica& r, const Layout& l,
                            std::span<const Bytes> kv, std::uint64_t context,
                            const BudgetOptions& b, const EngineOptions& eo) {
    EngineCapacity& s = rep.summary;
    s.engine = e;
    s.context = context;
    switch (e) {
        case Engine::ideal: {
            rep.ideal = ideal_kv_cache(r.model, r.kv, l, kv);
            s.kv_memory = rep.ideal.available;
            s.tokens = rep.ideal.tokens;
            double best = std::numeric_limits<double>::infinity();
            for (std::uint32_t st = 0; st < l.pp(); ++st) {
                const Bytes per_seq = kv_bytes_per_sequence(r.model, r.kv, context, l.stage(st));
                if (per_seq.is_zero()) continue;
                best = std::min(best, static_cast<double>(kv[kv.size() == 1 ? 0 : st].count()) /
                                          static_cast<double>(per_seq.count()));
            }
            s.max_concurrency = best;
            s.admitted = std::isfinite(best) ? static_cast<std::uint64_t>(best) : 0;
            break;
        }
        case Engine::vllm: {
            VllmOptions o = eo.vllm;
            if (o.max_model_len == 0) o.max_model_len = context;
            if (!o.max_num_batched_tokens)
                o.max_num_batched_tokens = b.reserve.max_num_batched_tokens.value_or(
                    vllm_batch_defaults(r.gpu).max_num_batched_tokens);
            rep.vllm = vllm_kv_cache(r.model, r.kv, l, kv, o);
            s.kv_memory = rep.vllm.available;
            s.tokens = rep.vllm.kv_cache_tokens;
            s.context = rep.vllm.max_model_len;
            s.max_concurrency = rep.vllm.max_concurrency;
            s.admitted = rep.vllm.admitted;
            s.sequence_cap = o.max_num_seqs.value_or(vllm_batch_defaults(r.gpu).max_num_seqs);
            s.starts = rep.vllm.enough_memory && rep.vllm.refused.empty();
            break;
        }
        case Engine::sglang: {
            rep.sglang = sglang_kv_pool(r.model, r.kv, l, kv, eo.sglang);
            s.kv_memory = rep.sglang.available;
            s.tokens = rep.sglang.max_total_num_tokens;
            s.max_concurrency = sglang_max_concurrency(r.model, rep.sglang, context);
            s.admitted = static_cast<std::uint64_t>(s.max_concurrency);
            if (rep.sglang.mamba_state_ignored)
                s.admitted = std::min(s.admitted, exact_sequences(r, l, kv, context));
            // --max-running-requests is shared among the dp attention groups: each takes X // dp
            // (python/sglang/srt/mem_cache/kv_cache_configurator.py, resolve_max_num_reqs).
            SglangOptions so = eo.sglang;
            if (so.max_running_requests && l.dp() > 1) *so.max_running_requests /= l.dp();
            s.sequence_cap =
                std::max<std::uint64_t>(sglang_max_running(rep.sglang, context, so), 1);
            s.starts = rep.sglang.max_total_num_tokens > 0;
            break;
        }
        case Engine::trtllm: {
            TrtllmOptions o = eo.trtllm;
            if (o.max_seq_len == 0) o.max_seq_len = context;
            rep.trtllm = trtllm_kv_cache(r.model, r.kv, l, kv, o);
            s.kv_memory = rep.trtllm.available;
            std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
            for (std::uint32_t k = 0; k < rep.trtllm.num_pools; ++k)
                least = std::min(least, rep.trtllm.pools[k].tokens);
            s.tokens = rep.trtllm.num_pools == 0 ? 0 : least;
            s.max_concurrency = trtllm_max_concurrency(rep.trtllm, context);
            s.admitted = std::isfinite(s.max_concurrency)
                             ? static_cast<std::uint64_t>(s.max_concurrency)
                             : 0;
            if (rep.trtllm.mamba_state_ignored)
                s.admitted = std::min(s.admitted, exact_sequences(r, l, kv, context));
            s.sequence_cap = o.max_batch_size;
            // When one sequence of max_seq_len does not fit, TensorRT-LLM lowers max_seq_len and
            // the windows to what the pool holds and starts; it raises only under
            // fail_fast_on_attention_window_too_large, off by default
            // (tensorrt_llm/_torch/pyexecutor/resource_manager.py,
            // _validate_and_adjust_attention_windows). Longer requests are refused as they come.
            s.starts = rep.trtllm.num_pools > 0 && *s.tokens > 0;
            break;
        }
    }
}

}  // namespace detail

namespace detail {

/// The cache step of engine_report_with, into `rep` whose memory per stage is set: no context
/// changes that memory, so a deployment asked about many demands computes it once.
constexpr void engine_report_cache(EngineReport& rep, Engine e, const Replica& r, const Layout& l,
                                   std::uint64_t context, const BudgetOptions& b,
                                   const EngineOptions& eo) {
    KVPLAN_EXPECTS(context >= 1);
    std::array<Bytes, max_pipeline_stages> kv{};
    bool fits = true;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        kv[st] = b.kv_memory_per_gpu ? *b.kv_memory_per_gpu : rep.memory[st].kv_memory;
        fits = fits && (b.kv_memory_per_gpu ||
                        (rep.memory[st].shortfall.is_zero() && rep.memory[st].outside_fits));
    }
    engine_cache(rep, e, r, l, std::span<const Bytes>(kv.data(), l.pp()), context, b, eo);
    rep.summary.starts = rep.summary.starts && fits;
}

/// engine_report of `r` under its layout `l`, given its weights per stage.
[[nodiscard]] constexpr EngineReport engine_report_with(Engine e, const Replica& r, const Layout& l,
                                                        const StageWeights& w,
                                                        std::uint64_t context,
                                                        const BudgetOptions& b,
                                                        const EngineOptions& eo) {
    KVPLAN_EXPECTS(context >= 1);
    EngineReport rep;
    rep.num_stages = l.pp();
    for (std::uint32_t st = 0; st < l.pp(); ++st)
        rep.memory[st] = engine_memory_with(e, r, l, st, w[st].total(), b, eo);
    engine_report_cache(rep, e, r, l, context, b, eo);
    return rep;
}

}  // namespace detail

/// Engine `e` on replica `r` for sequences of `context` tokens (vLLM's max_model_len and
/// TensorRT-LLM's max_seq_len unless set in `eo`): the KV memory it gives each stage
/// (engine_memory), or `b.kv_memory_per_gpu` when given, and the cache it builds in it. Under
/// attention data parallelism the figures are one dp rank's (each has its own cache). The weights
/// are those vLLM release line `vllm_release` loads (loaded_stage_weights); its profile accounting
/// is the caller's, in `eo` (vllm_release_options).
[[nodiscard]] constexpr EngineReport engine_report(
    Engine e, const Replica& r, std::uint64_t context, const BudgetOptions& b = {},
    const EngineOptions& eo = {}, EngineVersion vllm_release = vllm_newest_release) {
    const Layout l = r.layout();
    return detail::engine_report_with(
        e, r, l,
        loaded_stage_weights(e, r.gpu, r.model, l, r.weights,
                             weight_bytes_per_stage(r.model, l, r.weights), vllm_release,
                             eo.sglang.moe_runner_backend),
        context, b, eo);
}

}  // namespace kvplan
