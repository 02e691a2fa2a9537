#pragma once

// The non-KV reserve of a rank, modelled term by term: the CUDA context, the activation peak of
// vLLM's profile run (a forward over max_num_batched_tokens, then the sampler over the logits at
// the vocabulary size), CUDA graphs and communication buffers. Every term has a documented default
// and can be replaced by a figure.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../detail/checked.hpp"
#include "../detail/scale.hpp"
#include "../engine/release.hpp"
#include "../error.hpp"
#include "../gpu.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "../weights.hpp"
#include "lora.hpp"
#include "replica.hpp"

namespace kvplan {

// Defaults of the reserve, each with the figure it rests on.

/// vLLM's default batch limits for `vllm serve` on a GPU.
struct VllmBatchDefaults {
    std::uint64_t max_num_batched_tokens = 0;  ///< tokens in one forward (the profile run's size)
    std::uint32_t max_num_seqs = 0;  ///< sequences at once (the profile run's logits rows)
};

/// vLLM's defaults for `vllm serve` under release `r` (engine/release.hpp, VllmBatchRule;
/// vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults): r.larger_batch_tokens and 1,024
/// sequences on the GPUs its rule picks, else 2,048 and 256. vLLM reads the device's name
/// lower-cased; kvplan reads the spec's id and name.
[[nodiscard]] constexpr VllmBatchDefaults vllm_batch_defaults(
    const GpuSpec& g, const VllmReleaseDefaults& r) noexcept {
    const auto named = [&](std::string_view lower, std::string_view upper) {
        return std::string_view(g.id).find(lower) != std::string_view::npos ||
               std::string_view(g.name).find(upper) != std::string_view::npos;
    };
    const bool larger = r.batch_rule == VllmBatchRule::h100_h200_by_name
                            ? named("h100", "H100") || named("h200", "H200")
                            : g.memory_total >= 70 * GiB && !named("a100", "A100");
    if (larger) return {r.larger_batch_tokens, 1024};
    return {2048, 256};
}

/// vLLM's defaults on its main branch (the newest release): 16,384 tokens and 1,024 sequences on
/// GPUs of 70 GiB or more that are not A100s, else 2,048 and 256.
[[nodiscard]] constexpr VllmBatchDefaults vllm_batch_defaults(const GpuSpec& g) noexcept {
    return vllm_batch_defaults(g, *vllm_release_defaults(vllm_newest_release));
}

/// A CUDA context, created by the first CUDA call of the process: "~700+MB" depending on the CUDA
/// version and device, 723 MiB measured (discuss.pytorch.org/t/81330 and /t/73021). Lazy module
/// loading (CUDA 11.7+) makes it smaller: override when measured.
inline constexpr Bytes default_cuda_context = 700 * MiB;
/// Memory per captured batch size of CUDA graphs: SGLang reserves cuda_graph_max_bs x 2 MiB
/// (python/sglang/srt/server_args.py, mem_fraction_static heuristic); vLLM logs 0.36-0.65 GiB for
/// small and mid-size models ("Estimated CUDA graph memory", vllm PR #21489).
inline constexpr Bytes cuda_graph_bytes_per_batch = 2 * MiB;
/// PyTorch's cuBLAS workspace on GPU `g`, which vLLM's profile run takes into its torch peak:
/// PyTorch allocates it from its caching allocator at the first GEMM on a stream
/// (aten/src/ATen/cuda/CublasHandlePool.cpp, getNewWorkspace, with the cuBLASLt workspace unified
/// into it), and vLLM's first GEMM is the profile's forward, after the memory snapshot.
/// parseChosenWorkspaceSize's default, CUBLAS_WORKSPACE_CONFIG unset: 4,096 KiB x 8 = 32 MiB on
/// Hopper (compute capability 9, PyTorch PR #91564, in PyTorch 2.0 and every PyTorch a modelled
/// vLLM release pins: v0.8 pins torch 2.6, main 2.13) and Blackwell (10 and 12, PR #175344 of
/// February 2026: a vLLM release pinning an older PyTorch took 8.125 MiB there, which kvplan,
/// taking main's PyTorch for every release, does not tell apart); ":4096:2:16:8", 4,096 KiB x 2 +
/// 16 KiB x 8 = 8.125 MiB, on earlier architectures. ROCm's hipBLAS and hipBLASLt workspaces
/// (32 or 128 MiB and 76 MiB in the same file) are not charged: which one vLLM's first GEMM takes
/// on ROCm is not derived. Zero where the architecture is not stated.
[[nodiscard]] constexpr Bytes cublas_workspace_bytes(const GpuSpec& g) noexcept {
    switch (g.arch) {
        case GpuArch::hopper:
        case GpuArch::blackwell:
            return 32 * MiB;
        case GpuArch::ampere:
        case GpuArch::ada:
            return 2 * (4096 * KiB) + 8 * (16 * KiB);
        case GpuArch::unknown:
        case GpuArch::cdna3:
        case GpuArch::cdna4:
            return Bytes{};
    }
    return Bytes{};
}
static_assert(cublas_workspace_bytes({.arch = GpuArch::ampere}).count() == 8'519'680);
/// The largest captured batch SGLang uses on 60-160 GiB GPUs below tp 4 (server_args.py).
inline constexpr std::uint32_t default_cuda_graph_max_batch = 256;
/// Communication buffers per GPU of a multi-GPU replica: SGLang reserves tp x pp / 8 GiB per GPU
/// (server_args.py: reserved_mem += tp_size * pp_size / 8 * 1024 MiB), i.e. 128 MiB per rank of
/// the replica. A single GPU needs none.
inline constexpr Bytes comm_buffer_bytes_per_rank = 128 * MiB;
/// vLLM's current default gpu_memory_utilization (vllm/config/cache.py, CacheConfig: 0.92; it was
/// 0.9 up to the v0.1x releases).
inline constexpr double default_gpu_memory_utilization = 0.92;

/// vLLM's --limit-mm-per-prompt for a modality not named (vllm/config/multimodal.py,
/// MultiModalConfig.get_limit_per_prompt: 999 items).
inline constexpr std::uint32_t default_mm_items_per_prompt = 999;

/// The encoder outputs of a model with a vision tower (ModelConfig::vision_params != 0), as vLLM's
/// profile run holds them (vllm/v1/worker/gpu_model_runner.py, profile_run): it runs the vision
/// tower over as many dummy images as the encoder budget holds and keeps their outputs in its
/// encoder_cache, tensors of the language model's hidden size (Qwen3-VL's with its deepstack
/// features beside: ModelConfig::mm_embedding_width), through the LM's dummy forward. The
/// tower's own activations are freed before that forward and are not charged.
struct EncoderCacheOptions {
    /// vLLM's --skip-mm-profiling: the dummy encoder run is skipped, nothing is charged.
    bool skip_profiling = false;
    /// vLLM's --limit-mm-per-prompt for images: 0 serves text only (no encoder cache); nullopt:
    /// default_mm_items_per_prompt.
    std::optional<std::uint32_t> items_per_prompt{};
    /// Encoder output tokens of one image; nullopt: the config's (Gemma 3's mm_tokens_per_image),
    /// else one image filling the encoder budget.
    std::optional<std::uint64_t> tokens_per_item{};
};

/// Knobs of the non-KV reserve. Each term is modelled unless a figure is given for it.
struct ReserveOptions {
    /// Tokens of the profiled forward; nullopt: vLLM's default for the GPU (vllm_batch_defaults).
    std::optional<std::uint64_t> max_num_batched_tokens{};
    /// Sequences of the profiled forward, one logits row each; nullopt: vLLM's max_num_seqs
    /// default.
    std::optional<std::uint32_t> profile_sequences{};
    /// The profile run's top-k/top-p path (engine/release.hpp, VllmSampler); nullopt: main's for
    /// the model (vllm_profile_sampler).
    std::optional<VllmSampler> sampler{};
    std::uint32_t cuda_graph_max_batch = default_cuda_graph_max_batch;
    std::optional<Bytes> cuda_context{};  ///< replaces default_cuda_context
    std::optional<Bytes> activation{};    ///< replaces the modelled activation peak
    std::optional<Bytes> cuda_graphs{};   ///< replaces cuda_graph_max_batch x 2 MiB
    std::optional<Bytes> comm_buffers{};  ///< replaces ranks x 128 MiB
    EncoderCacheOptions encoder_cache{};  ///< the encoder outputs of a model with a vision tower
    LoraOptions lora{};                   ///< multi-LoRA adapter slots (off by default)
};

/// Where a reserve term's figure came from.
enum class TermSource : std::uint8_t { modelled, given };

/// One term of the reserve and where it came from.
struct ReserveTerm {
    Bytes bytes{};
    TermSource source = TermSource::modelled;
};

/// Bytes per logits value that a sorting sampler of vLLM's profile run adds to the logits and
/// their fp32 copy. The run samples every row with top-k = vocabulary - 1 and top-p = 0.9
/// (vllm/v1/worker/gpu_model_runner.py, _dummy_sampler_run). PyTorch's path
/// (vllm/v1/sample/ops/topk_topp_sampler.py, apply_top_k_top_p) sorts the fp32 logits: the sorted
/// values (4) and int64 indices (8), and, while the sort runs, PyTorch's segmented radix sort holds
/// an int64 index per value (8) and CUB's alternate key and value buffers (4 + 8); the masks and
/// the scatter that follow take less (28 bytes in all against the sort's 38).
inline constexpr std::uint64_t sorting_sampler_bytes_per_logit = 32;

/// Bytes per logits value that sampler `s` of vLLM's profile run adds to the logits and their
/// fp32 copy (VllmSampler): FlashInfer's top_k_top_p_sampling_from_logits holds a masked fp32
/// copy (top_k_mask_logits allocates it like the logits) and its fp32 softmax together (flashinfer
/// /sampling.py, filter_apply_order "top_k_first"), 8; before FlashInfer 0.2.3 vLLM handed it the
/// fp32 softmax alone, 4; a sort, sorting_sampler_bytes_per_logit; Triton's in-place masking, the
/// fp32 softmax and the exponential noise random_sample draws like it, 8; model runner V2's dummy
/// batch asks no top-k/top-p and its Gumbel kernel samples the fp32 copy in place, 0.
[[nodiscard]] constexpr std::uint64_t engine_sampler_bytes_per_logit(VllmSampler s) noexcept {
    switch (s) {
        case VllmSampler::flashinfer_probs:
            return 4;
        case VllmSampler::flashinfer_logits:
        case VllmSampler::triton:
            return 8;
        case VllmSampler::sorts:
            return sorting_sampler_bytes_per_logit;
        case VllmSampler::plain:
            return 0;
    }
    return 0;
}

/// The buffer Triton's top-k/top-p keeps beside the logits (VllmSampler::triton, v0.17 to v0.19:
/// vllm/v1/sample/ops/topk_topp_triton.py, apply_top_k_top_p_triton, vLLM PR #33538). The kernel
/// runs one program per row up to the GPU's compute units, and each program gathers the row's
/// outliers for the top-k pivot search into an fp32 row of the vocabulary: min(next power of two
/// of min(units, rows), units) rows of vocab x 4 B, cached per device (_TRITON_BUFFER_CACHE), so
/// it is still held when the softmax and the noise are allocated. The profile asks top-k of every
/// row (k = vocabulary - 1 < vocabulary), so the kernel takes that path. Zero for the other
/// samplers, without rows, or where the GPU's compute units are not stated (GpuSpec).
[[nodiscard]] constexpr Bytes triton_sampler_buffer_bytes(VllmSampler s, std::uint64_t rows,
                                                          std::uint64_t vocab,
                                                          std::uint32_t compute_units) {
    if (s != VllmSampler::triton || rows == 0 || compute_units == 0) return Bytes{};
    const std::uint64_t programs = std::min<std::uint64_t>(compute_units, rows);
    std::uint64_t buffer_rows = 1;
    while (buffer_rows < programs) buffer_rows *= 2;
    buffer_rows = std::min<std::uint64_t>(buffer_rows, compute_units);
    return Bytes::exactly(4) * detail::mul(buffer_rows, vocab, "the top-k/top-p buffer");
}

/// The sampler of release `r`'s profile run for model `m`: model runner V2's plain sampling for a
/// dense model (no routed experts, no state-space layers) where the release runs those on it
/// (vllm/config/vllm.py, _is_default_v2_model_runner_model: MoE, hybrid and attention-free models
/// keep the V1 runner outside a list of architectures kvplan does not model), else the release's
/// V1 path.
[[nodiscard]] constexpr VllmSampler vllm_profile_sampler(const Model& m,
                                                         const VllmReleaseDefaults& r) noexcept {
    const bool dense =
        m.config().moe.experts == 0 && m.layers().layers_of_kind(CacheKind::constant_state) == 0;
    return r.dense_runner_v2 && dense ? VllmSampler::plain : r.sampler;
}

/// The activation peak of vLLM's profile run on one rank, as its "torch peak memory increase"
/// measures it (vllm/v1/worker/gpu_model_runner.py, profile_run): the forward over `tokens`
/// tokens (the residual stream plus the larger of a layer's attention and MLP intermediates for
/// every token) and, on the last stage, the sampling that follows it: the forward's output hidden
/// states, the logits of one sampled token per profile sequence and their fp32 copy, and what the
/// sampler holds beside them (engine_sampler_bytes_per_logit). The two run one after the other,
/// so the peak is the larger: the forward alone where the sampler sorts, the forward with the
/// logits otherwise (their sum is within 1.5 % of the peaks vLLM measured in issue #10517, where
/// the sampling is the smaller).
struct ActivationPeak {
    std::uint64_t tokens = 0;              ///< max_num_batched_tokens
    Bytes element{};                       ///< bytes per activation value (2: bf16/fp16, 4: fp32)
    std::uint64_t residual_elements = 0;   ///< per token: hidden_states and residual
    std::uint64_t attention_elements = 0;  ///< per token: q, k, v and the attention output
    std::uint64_t mlp_elements = 0;  ///< per token: gate/up output and its activation (MoE: the
                                     ///< fused kernel's workspaces)
    Bytes per_token{};               ///< (residual + max(attention, mlp)) x element
    Bytes hidden{};                  ///< tokens x per_token
    std::uint64_t logits_rows = 0;   ///< min(tokens, profile sequences) on the last stage, else 0
    std::uint64_t vocab = 0;
    Bytes logits{};  ///< rows x vocab x (element + 4): the LM head output and its fp32 copy
    VllmSampler sampler_kind = VllmSampler::plain;  ///< the top-k/top-p path (engine/release.hpp)
    Bytes output{};          ///< tokens x hidden_size x element, the forward's output (last stage)
    Bytes sampler{};         ///< rows x vocab x engine_sampler_bytes_per_logit(sampler_kind)
    Bytes sampler_buffer{};  ///< triton_sampler_buffer_bytes (Triton's top-k/top-p only)
    /// The sampling's peak: output + logits + sampler + its buffer (zero off the last stage).
    [[nodiscard]] constexpr Bytes sampling() const {
        return output + logits + sampler + sampler_buffer;
    }
    [[nodiscard]] constexpr Bytes total() const {
        return std::max(sampler_kind == VllmSampler::sorts ? hidden : hidden + logits, sampling());
    }
};

/// The encoder outputs vLLM's profile run keeps on a rank (EncoderCacheOptions).
struct EncoderCache {
    std::uint64_t budget = 0;           ///< max(max_num_batched_tokens, tokens_per_item)
    std::uint64_t tokens_per_item = 0;  ///< encoder output tokens of one image
    std::uint64_t items = 0;            ///< dummy images profiled
    std::uint64_t hidden = 0;           ///< values a token (ModelConfig::mm_embedding_width)
    Bytes element{};                    ///< bytes per value (the model's dtype)
    Bytes bytes{};                      ///< items x tokens_per_item x hidden x element
};

/// The encoder outputs of vLLM's profile run on a rank of stage `stage` (the first holds the vision
/// tower and the embeddings). vllm/v1/core/encoder_cache_manager.py (compute_mm_encoder_budget):
/// the encoder budget is max(max_num_batched_tokens, the largest item's tokens);
/// vllm/v1/worker/utils.py (MultiModalBudget.get_max_items): the profile runs
/// max(1, min(budget / tokens_per_item, max_num_seqs x items per prompt)) items. The bound of
/// max_model_len / tokens_per_item items per prompt is not applied: it binds only for an image
/// near the context's size. Throws InvalidInput naming the model when `o` sets images per prompt
/// or skips the profiling for a model without a vision tower: they would change nothing.
[[nodiscard]] constexpr EncoderCache encoder_cache(const Model& m, std::uint32_t stage,
                                                   std::uint64_t max_num_batched_tokens,
                                                   std::uint32_t max_num_seqs,
                                                   const EncoderCacheOptions& o,
                                                   const WeightOptions& w = {}) {
    const ModelConfig& c = m.config();
    EncoderCache e;
    // A text-only model has no encoder outputs to charge: a knob of them is refused, as a
    // drafter's layers are on a model without them (plan/speculation.hpp), never ignored.
    if (c.vision_params == 0 && (o.items_per_prompt || o.skip_profiling))
        detail::throw_field_error<InvalidInput>(
            detail::model_where(c), "vision_params",
            "a vision tower (images per prompt and the profile run's dummy images are its "
            "encoder's: --limit-mm-per-prompt, --skip-mm-profiling)",
            "none (a text-only model)");
    const std::uint32_t per_prompt = o.items_per_prompt.value_or(default_mm_items_per_prompt);
    if (c.vision_params == 0 || stage != 0 || o.skip_profiling || per_prompt == 0) return e;
    const std::uint64_t given = o.tokens_per_item.value_or(c.mm_tokens_per_item);
    e.tokens_per_item = given != 0 ? given : max_num_batched_tokens;
    e.budget = std::max(max_num_batched_tokens, e.tokens_per_item);
    const std::uint64_t by_requests = detail::mul(max_num_seqs, per_prompt, "the profiled items");
    e.items = std::max<std::uint64_t>(1, std::min(e.budget / e.tokens_per_item, by_requests));
    e.hidden = c.mm_embedding_width != 0 ? c.mm_embedding_width : c.hidden_size;
    e.element = Bytes::exactly(w.format == WeightFormat::fp32 ? 4 : 2);
    e.bytes =
        e.element * detail::mul(detail::mul(e.items, e.tokens_per_item, "the encoder outputs"),
                                e.hidden, "the encoder outputs");
    return e;
}

/// The non-KV reserve of one rank, term by term.
struct Reserve {
    ReserveTerm cuda_context{};
    ReserveTerm activation{};
    ActivationPeak
        activation_model{};  ///< the modelled peak (shown even when a figure replaces it)
    ReserveTerm cuda_graphs{};
    ReserveTerm comm_buffers{};
    EncoderCache encoder_cache{};  ///< zero for a model without a vision tower
    ReserveTerm lora{};  ///< multi-LoRA adapter slots (lora_bytes_on_rank), 0 without LoRA
    [[nodiscard]] constexpr Bytes total() const {
        return cuda_context.bytes + activation.bytes + cuda_graphs.bytes + comm_buffers.bytes +
               lora.bytes + encoder_cache.bytes;
    }
};

namespace detail {

/// Per-token activation values of one layer's attention on a rank of TP degree `tp`.
[[nodiscard]] constexpr std::uint64_t attention_activation_elements(const Model& m,
                                                                    const CacheSpec& s,
                                                                    std::uint32_t tp) {
    const ModelConfig& c = m.config();
    const std::uint64_t heads = c.num_heads / tp;
    const std::uint64_t qd = m.query_head_dim();
    switch (s.kind) {
        case CacheKind::full_attention:
        case CacheKind::sliding_window:
        case CacheKind::chunked_local:
            return heads * s.k_head_dim +  // queries are as wide as the layer's keys
                   std::uint64_t{kv_heads_per_rank(s.kv_heads, tp)} *
                       (s.k_head_dim + s.v_head_dim) +
                   heads * s.v_head_dim;
        case CacheKind::mla_latent: {
            const std::uint64_t nope = c.mla.qk_nope_head_dim, v = c.mla.v_head_dim;
            return heads * (nope + s.qk_rope_head_dim) + s.kv_lora_rank + s.qk_rope_head_dim +
                   heads * (nope + v) + heads * v;
        }
        case CacheKind::shared:
            return heads * qd * 2;
        case CacheKind::constant_state:
            return 0;  // the mixer's shape is not in the config
        case CacheKind::mlp_only:
            return 0;  // no mixer
    }
    return 0;
}

/// Per-token activation values of one layer's MLP on a rank: the up projections' outputs and the
/// activation's output alive together; for MoE, the fused kernel's workspaces and the shared
/// experts. vLLM's fused MoE (vllm/model_executor/layers/fused_moe/fused_moe.py,
/// TritonExperts.workspace_shapes) allocates for M tokens (M, k, max(N / 2, H)) and
/// (M, k, max(N, H)) values and an (M, H) output, N being a rank's gate/up rows (2 x the expert
/// width per rank, gated): an expert split thin still takes k x 2 x H values a token.
///
/// A dense MLP split over ranks ends in an all-reduce that is out of place (vLLM PR #10121, in
/// v0.6.5, before every release kvplan models: vllm/distributed/parallel_state.py,
/// GroupCoordinator.all_reduce; pynccl.py allocates the output): while it runs, the activation
/// (the down projection's input), the rank's partial sum and the reduced sum live together, I / tp
/// + 2 x H values beside the residual stream (the residual and the caller's normed input), more
/// than the gate/up peak of 3 x I / tp where H > I / tp (Llama-3-70B at tp 4 and beyond).
[[nodiscard]] constexpr std::uint64_t mlp_activation_elements(const Model& m, std::uint32_t layer,
                                                              const RankParts& p) {
    const ModelConfig& c = m.config();
    const std::uint64_t per_width = c.mlp == MlpKind::gated ? 3 : 2;
    if (!m.has_mlp(layer)) return 0;
    if (!c.moe.is_moe_layer(layer)) {
        const std::uint64_t down_input = ceil_div(c.intermediate_size, p.dense_mlp);
        const std::uint64_t up = per_width * down_input;
        return p.dense_mlp > 1 ? std::max(up, down_input + 2 * std::uint64_t{c.hidden_size}) : up;
    }
    const std::uint64_t n = (per_width - 1) * ceil_div(c.moe.expert_intermediate_size, p.expert_tp);
    const std::uint64_t h = c.hidden_size;
    const std::uint64_t routed =
        std::uint64_t{c.moe.experts_per_token} * (std::max(n / 2, h) + std::max(n, h)) + h;
    return routed + per_width * ceil_div(shared_expert_width(c.moe), p.shared_experts);
}

}  // namespace detail

/// The activation peak of vLLM's profile run over `tokens` tokens on a rank of stage `stage`; the
/// sampling (min(tokens, profile_sequences) logits rows) counts only on the last stage, which
/// holds the LM head. Every rank of a TP group gathers the logits at the whole vocabulary and
/// samples them (vllm/model_executor/layers/logits_processor.py). `compute_units` are the GPU's
/// (GpuSpec::compute_units, 0: not stated), which size Triton's top-k/top-p buffer.
[[nodiscard]] constexpr ActivationPeak activation_peak(const Model& m, const Layout& l,
                                                       std::uint32_t stage, std::uint64_t tokens,
                                                       std::uint32_t profile_sequences,
                                                       const WeightOptions& w = {},
                                                       VllmSampler sampler = VllmSampler::plain,
                                                       std::uint32_t compute_units = 0) {
    const Shard s = l.stage(stage);
    const ModelConfig& c = m.config();
    const detail::RankParts parts = detail::rank_parts(l.placement());
    ActivationPeak a;
    a.tokens = tokens;
    a.element = Bytes::exactly(w.format == WeightFormat::fp32 ? 4 : 2);
    a.residual_elements = 2 * c.hidden_size;
    for (std::uint32_t i = s.first_layer; i < detail::shard_end(m, s); ++i) {
        a.attention_elements = std::max(a.attention_elements,
                                        detail::attention_activation_elements(m, m.layer(i), s.tp));
        a.mlp_elements = std::max(a.mlp_elements, detail::mlp_activation_elements(m, i, parts));
    }
    a.per_token =
        a.element * (a.residual_elements + std::max(a.attention_elements, a.mlp_elements));
    a.hidden = a.per_token * tokens;
    if (stage + 1 == l.pp()) {
        a.logits_rows = std::min<std::uint64_t>(tokens, profile_sequences);
        a.vocab = c.vocab_size;
        const std::uint64_t values = detail::mul(a.logits_rows, a.vocab, "the logits");
        a.logits = Bytes::exactly(a.element.count() + 4) * values;
        a.sampler_kind = sampler;
        a.output = a.element * detail::mul(tokens, c.hidden_size, "the forward's output");
        a.sampler = Bytes::exactly(engine_sampler_bytes_per_logit(sampler)) * values;
        a.sampler_buffer =
            triton_sampler_buffer_bytes(sampler, a.logits_rows, a.vocab, compute_units);
    }
    return a;
}

namespace detail {

/// The profile run of an engine other than vLLM, modelled on vLLM's as it was before v0.28
/// (8,192 tokens on the GPUs of 70 GiB or more, 2,048 on the others, engine/release.hpp) with no
/// top-k/top-p pass: TensorRT-LLM's and SGLang's own profile sizes are not modelled apart, and
/// vLLM's later default of 16,384 tokens is vLLM's alone.
constexpr void profile_elsewhere(ReserveOptions& ro, const GpuSpec& g) {
    if (!ro.max_num_batched_tokens)
        ro.max_num_batched_tokens =
            vllm_batch_defaults(g, *vllm_release_defaults({0, 27})).max_num_batched_tokens;
    if (!ro.sampler) ro.sampler = VllmSampler::plain;
}

}  // namespace detail

/// The non-KV reserve of a rank of stage `stage` of `r`, modelled or as given in `o`.
[[nodiscard]] constexpr Reserve reserve_on_rank(const Replica& r, const Layout& l,
                                                std::uint32_t stage, const ReserveOptions& o = {}) {
    Reserve res;
    const VllmBatchDefaults d = vllm_batch_defaults(r.gpu);
    res.activation_model = activation_peak(
        r.model, l, stage, o.max_num_batched_tokens.value_or(d.max_num_batched_tokens),
        o.profile_sequences.value_or(d.max_num_seqs), r.weights,
        o.sampler.value_or(
            vllm_profile_sampler(r.model, *vllm_release_defaults(vllm_newest_release))),
        r.gpu.compute_units);
    const auto term = [](const std::optional<Bytes>& given, Bytes modelled) {
        return given ? ReserveTerm{*given, TermSource::given}
                     : ReserveTerm{modelled, TermSource::modelled};
    };
    res.cuda_context = term(o.cuda_context, default_cuda_context);
    res.activation = term(o.activation, res.activation_model.total());
    res.cuda_graphs = term(o.cuda_graphs, cuda_graph_bytes_per_batch * o.cuda_graph_max_batch);
    // The custom all-reduce's IPC buffers need GPUs that reach each other over a fabric: between
    // more than two PCIe-only GPUs vLLM and SGLang turn it off ("Custom allreduce is disabled
    // because it's not supported on more than two PCIe-only GPUs": custom_all_reduce.py in
    // vllm/distributed/device_communicators and python/sglang/srt/distributed/
    // device_communicators), and NCCL's own buffers are within the CUDA context's allowance.
    const bool custom_all_reduce = r.gpu.scale_up_bandwidth > BytesPerSecond{} || l.tp() <= 2;
    res.comm_buffers =
        term(o.comm_buffers,
             l.ranks() > 1 && custom_all_reduce ? comm_buffer_bytes_per_rank * l.ranks() : Bytes{});
    res.encoder_cache =
        encoder_cache(r.model, stage, o.max_num_batched_tokens.value_or(d.max_num_batched_tokens),
                      o.profile_sequences.value_or(d.max_num_seqs), o.encoder_cache, r.weights);
    res.lora = {lora_bytes_on_rank(r.model, l, stage, o.lora, r.weights), TermSource::modelled};
    return res;
}

}  // namespace kvplan
