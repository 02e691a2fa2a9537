#pragma once

// The prefill lower bound: a prompt's FLOPs (the quadratic attention term included), the weights it
// reads and the KV it writes.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../budget/replica.hpp"
#include "../detail/checked.hpp"
#include "../gpu_family.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "step_cost.hpp"

namespace kvplan {

namespace detail {

/// The LM head's FLOPs a step of `prefill_tokens` prompt tokens (a rank's) does not do when the
/// step holds `sampled` prompts: the engines multiply the LM head only at the positions they sample
/// from, the last scheduled token of each request in the step (a chunk's last when the prompt goes
/// on), not at every prompt token. vLLM's gpu_model_runner.py computes the logits of
/// hidden_states[logits_indices], logits_indices = query_start_loc[1:] - 1 (vllm/v1/worker/);
/// SGLang's LogitsProcessor keeps an extend batch's last position of each sequence,
/// cumsum(extend_seq_lens) - 1, unless input logprobs are asked for
/// (python/sglang/srt/layers/logits_processor.py, _get_pruned_states); TensorRT-LLM gathers a
/// context's logits only with gather_context_logits, off by default. The decodes' rows are all
/// sampled: each is its request's one token.
[[nodiscard]] constexpr Flops unsampled_head_flops(const RankMatmulParams& p, double prefill_tokens,
                                                   double sampled) noexcept {
    return Flops::in_base(2.0 * p.head * std::max(0.0, prefill_tokens - sampled));
}

/// The tensor-core type the attention kernel multiplies in on `r`: bf16 (query and softmax in 16
/// bits, whatever the GEMMs' type), but fp8 where vLLM runs FlashAttention 3 over an e4m3 KV
/// cache. vLLM's FlashAttentionImpl.forward (vllm/v1/attention/backends/flash_attn.py) views an
/// fp8 cache as float8_e4m3fn, quantizes the query to it (ops.scaled_fp8_quant with the layer's
/// q_scale) and passes q/k/v descales to flash_attn_varlen_func, whose FA3 kernel then multiplies
/// QK^T and PV on the fp8 tensor cores; an fp8 cache is refused there unless
/// flash_attn_supports_fp8() (FA3, which vLLM builds for Hopper alone). FlashAttention is vLLM's
/// first backend on Hopper for multi-head and grouped-query attention up to 256-wide heads;
/// multi-head latent attention runs its own backends, left at bf16 here. Only beside GEMMs of that
/// type (`gemm`): the bound times every FLOP at the GEMMs' peak, and attention faster than it
/// would take the estimate below the bound.
[[nodiscard]] constexpr ComputeDtype attention_compute(const Replica& r,
                                                       ComputeDtype gemm) noexcept {
    if (gemm != ComputeDtype::fp8 || r.parallel.rules != ParallelRules::vllm ||
        r.kv != KvDtype::fp8_e4m3 || gpu_family(r.gpu) != GpuFamily::hopper ||
        !r.gpu.dense(ComputeDtype::fp8))
        return ComputeDtype::bf16;
    const LayerStack& L = r.model.layers();
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        const CacheSpec& s = L.specs[k];
        if (s.kind == CacheKind::mla_latent || s.k_head_dim > 256 || s.v_head_dim > 256)
            return ComputeDtype::bf16;
    }
    return ComputeDtype::fp8;
}

}  // namespace detail

/// A prefill's lower bound: `prompts` prompts of `prompt_tokens` each in one forward.
struct PrefillBound {
    std::uint64_t prompts = 0;
    std::uint64_t prompt_tokens = 0;
    std::array<StageStep, max_pipeline_stages> stages{};  ///< kv_read holds the KV written
    std::uint32_t num_stages = 0;
    std::uint32_t limiting_stage = 0;
    /// The slowest stage: the bound on time to first token. (Chunked prefill can overlap stages,
    /// so only the slowest stage, not their sum, is a bound.)
    Seconds ttft{};
    Bound bound = Bound::memory;
    AllReduce all_reduce{};
    AllToAll all_to_all{};  ///< expert parallelism's dispatch and combine; not in the bound
    /// Prompts of the busiest attention data-parallel rank: ceil(prompts / dp).
    std::uint64_t dp_rank_prompts = 0;
    std::optional<Seconds> ttft_estimate{};
    /// The stages in use.
    [[nodiscard]] constexpr std::span<const StageStep> stage_steps() const noexcept {
        return {stages.data(), num_stages};
    }
};

/// The prefill lower bound of `r`: FLOPs (the quadratic attention term included, the LM head at
/// each prompt's last token) and weight reads (experts touched by every prompt token) and the KV
/// written. Under attention data parallelism the
/// prompts spread over the dp ranks, the busiest taking ceil(prompts / dp) of them.
[[nodiscard]] constexpr PrefillBound prefill_bound(const Replica& r, std::uint64_t prompt_tokens,
                                                   std::uint64_t prompts = 1,
                                                   const RooflineOptions& options = {}) {
    KVPLAN_EXPECTS(prompt_tokens >= 1 && prompts >= 1);
    const RooflineOptions o = with_compute(options, r);
    detail::check_roofline(r, o);
    const Layout l = r.layout();
    PrefillBound p;
    p.prompts = prompts;
    p.prompt_tokens = prompt_tokens;
    p.num_stages = l.pp();
    const std::uint64_t tokens = detail::mul(prompts, prompt_tokens, "a token count");
    p.dp_rank_prompts = detail::own_sequences(l, prompts);
    const std::uint64_t own = p.dp_rank_prompts * prompt_tokens;
    for (std::uint32_t s = 0; s < l.pp(); ++s) {
        StageStep& st = p.stages[s];
        st.stage = s;
        const Shard sh = l.stage(s);
        const detail::WeightRead w = detail::weight_read(r, l, s, tokens);
        st.weights_resident = w.resident;
        st.weights_read = w.read;
        st.experts_resident = w.experts;
        st.experts_touched = w.experts_touched;
        st.kv_read = kv_bytes_per_sequence(r.model, r.kv, prompt_tokens, sh) * p.dp_rank_prompts;
        const detail::RankMatmulParams mp = detail::rank_matmul_params(r.model, l, s);
        // The LM head at each prompt's last token only (unsampled_head_flops).
        st.matmul_flops = detail::matmul_flops(mp, own, tokens) -
                          detail::unsampled_head_flops(mp, static_cast<double>(own),
                                                       static_cast<double>(p.dp_rank_prompts));
        st.attention_flops =
            Flops::in_base(detail::prefill_attention_flops(r.model, sh, prompt_tokens) *
                           static_cast<double>(p.dp_rank_prompts));
        detail::finish_stage(st, r.gpu, o);
        if (st.time() > p.stages[p.limiting_stage].time()) p.limiting_stage = s;
    }
    const StageStep& lim = p.stages[p.limiting_stage];
    p.ttft = lim.time();
    p.bound = lim.bound();
    p.all_reduce = detail::all_reduce(r, l, own, o);
    p.all_to_all = detail::all_to_all(r, l, own);
    if (o.efficiency) {
        Seconds worst{};
        for (std::uint32_t s = 0; s < l.pp(); ++s) worst = std::max(worst, *p.stages[s].estimate);
        p.ttft_estimate = worst;
    }
    return p;
}

}  // namespace kvplan
