#pragma once

// A deployment as a design review states it: a model on GPUs of one type, how many and how they are
// split, the weight and KV formats, and how the engine serves it; and the demand it must meet. The
// one input of evaluate() (plan/evaluate.hpp), which every subcommand, the Python module and
// serving code call.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "../budget/replica.hpp"
#include "../budget/reserve.hpp"
#include "../detail/enum_table.hpp"
#include "../dtype.hpp"
#include "../engine/kind.hpp"
#include "../engine/load_dtype.hpp"
#include "../engine/nccl.hpp"
#include "../engine/parallel.hpp"
#include "../engine/release.hpp"
#include "../engine/report.hpp"
#include "../engine/served_kv.hpp"
#include "../engine/sglang_release.hpp"
#include "../engine/vllm_backend.hpp"
#include "../error.hpp"
#include "../gpu.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../roofline/estimate.hpp"
#include "../weights.hpp"
#include "speculation.hpp"

namespace kvplan {

/// How the engine serves: which engine, and the knobs its command line sets, by their common
/// meaning. Unset knobs take the engine's own default; each maps to the engine's flag.
struct Serving {
    Engine engine = Engine::vllm;
    /// Tokens per KV block: vLLM --block-size, SGLang --page-size, TensorRT-LLM tokens_per_block.
    std::optional<std::uint32_t> block_size{};
    /// vLLM --gpu-memory-utilization, SGLang --mem-fraction-static, TensorRT-LLM
    /// free_gpu_memory_fraction. The ideal profile has none.
    std::optional<double> memory_fraction{};
    /// Sequences at once: vLLM --max-num-seqs, SGLang --max-running-requests, TensorRT-LLM
    /// max_batch_size.
    std::optional<std::uint64_t> max_sequences{};
    /// Tokens of one step: vLLM --max-num-batched-tokens (and the forward its profile run sizes).
    std::optional<std::uint64_t> max_num_batched_tokens{};
    /// vLLM --num-gpu-blocks-override.
    std::optional<std::uint64_t> num_gpu_blocks{};
    /// The KV memory per GPU, replacing the computed one (the "Available KV cache memory" an engine
    /// logged).
    std::optional<Bytes> kv_memory_per_gpu{};
    /// Reserve terms known better than the model (a calibration profile).
    ReserveOptions reserve{};
    /// Serve contexts past the model's limit: vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, SGLang's
    /// SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1.
    bool allow_long_context = false;
    /// vLLM --enforce-eager: no torch.compile and no CUDA graphs, so the profile neither compiles
    /// the fusion passes (no FlashInfer all-reduce fusion workspace, engine/allreduce_fusion.hpp)
    /// nor captures graphs (CompilationConfig mode NONE, cudagraph_mode NONE; vllm/config/vllm.py).
    bool enforce_eager = false;
    /// Speculative decoding: its drafter's layers and weights, its speculative tokens
    /// (plan/speculation.hpp). Modelled for vLLM (and the ideal profile).
    Speculation speculation{};
    /// Every other knob of each engine's profile; the fields above win over it.
    EngineOptions tuning{};
    /// The engine's release whose defaults apply: vLLM's release line (engine/release.hpp; a
    /// patch given is dropped), or SGLang's release (engine/sglang_release.hpp); nullopt: the
    /// newest kvplan knows of the engine (vllm_newest_release, sglang_newest_release).
    std::optional<EngineVersion> engine_version{};
    /// vLLM's profile run samples without FlashInfer (true) or with it (false), whatever the
    /// release's default. Without it, vLLM's native top-k/top-p runs
    /// (vllm/v1/sample/ops/topk_topp_sampler.py, "FlashInfer is not available. Falling back to the
    /// PyTorch-native implementation"): PyTorch's sort of the logits through v0.16, as after a pip
    /// install of the v0.8 to v0.10 lines (vLLM issue #15158; vLLM's images install FlashInfer,
    /// and its CUDA wheel requires it only since PR #21389), Triton's pivot search from v0.17
    /// (VllmSampler::triton), which does not sort. With it, FlashInfer's kernel
    /// (VLLM_USE_FLASHINFER_SAMPLER=1 where the release turns it off). nullopt: the release's
    /// default (engine/release.hpp).
    std::optional<bool> without_flashinfer{};
    /// vLLM's hybrid KV-cache manager on (true) or off (false) for a model with chunked local
    /// attention (Llama-4), whatever the release's default: VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_
    /// HYBRID_KV_CACHE=1 or 0, read by VllmConfig.__post_init__ (vllm/config/vllm.py); off, every
    /// chunked layer is sized as full attention. nullopt: the release's default
    /// (VllmReleaseDefaults::chunked_local_hybrid).
    std::optional<bool> chunked_local_hybrid{};
    /// The latency estimate's achieved fractions and fixed costs on the GPU deployed (a
    /// calibration of it: kvplan calibrate --bench); nullopt: its family's defaults
    /// (default_params).
    std::optional<EstimateParams> estimate{};
};

/// vLLM's block sizes (vllm/config/cache.py, CacheConfig.block_size: BlockSize on CUDA).
inline constexpr std::uint32_t vllm_block_sizes[] = {1, 8, 16, 32, 64, 128, 256};

/// The engine's knobs resolved: its options, the budget's, and the block size it pages in.
struct ResolvedServing {
    Engine engine = Engine::vllm;
    EngineOptions options{};
    BudgetOptions budget{};
    std::uint32_t block_size = 1;
    bool block_size_given = false;
    bool fraction_given = false;
    DraftMethod draft_method = DraftMethod::none;        ///< speculative decoding's drafter
    std::uint32_t speculative_tokens = 0;                ///< tokens drafted per step
    EngineVersion engine_version = vllm_newest_release;  ///< vLLM's release whose defaults apply
    /// SGLang's release whose rules apply (engine/sglang_release.hpp); options.sglang.release too.
    EngineVersion sglang_release = sglang_newest_release;
    bool engine_version_given = false;  ///< the release (vLLM's or SGLang's) was given
    /// vLLM's profile sampler without FlashInfer (true) or with it (false) whatever the release's
    /// default (Serving::without_flashinfer); nullopt: the release's.
    std::optional<bool> without_flashinfer{};
    /// vLLM's hybrid manager for chunked local attention whatever the release's default
    /// (Serving::chunked_local_hybrid); nullopt: the release's.
    std::optional<bool> chunked_local_hybrid{};
    /// vLLM's --enforce-eager (Serving::enforce_eager): the command carries it.
    bool enforce_eager = false;
    /// vLLM's attention backend and the block size it forces (evaluate() sets it for the GPU and
    /// the model); nullopt: another engine, or a GPU of a family kvplan does not know.
    std::optional<VllmBackendChoice> backend{};
};

/// `s` for a GPU `gpu`. Throws InvalidInput for a knob the engine cannot take: a block size vLLM
/// refuses, a fraction outside (0, 1], a fraction for the ideal profile (which has none), zero
/// sequences or tokens, an engine version for another engine than vLLM or SGLang or outside its
/// table, an SGLang release whose default fraction kvplan does not model without a fraction.
[[nodiscard]] inline ResolvedServing resolve_serving(const Serving& s) {
    const auto refuse = [&](const char* field, const std::string& expected,
                            const std::string& found) {
        detail::throw_field_error<InvalidInput>(
            std::string("engine ") + std::string(name(s.engine)), field, expected, found);
    };
    ResolvedServing r;
    r.engine = s.engine;
    r.options = s.tuning;
    r.budget.reserve = s.reserve;
    r.budget.kv_memory_per_gpu = s.kv_memory_per_gpu;
    if (s.block_size) {
        const std::uint32_t b = *s.block_size;
        if (b == 0) refuse("block_size", ">= 1 token", "0");
        if (s.engine == Engine::vllm) {
            bool ok = false;
            for (std::uint32_t v : vllm_block_sizes) ok = ok || v == b;
            if (!ok)
                refuse(
                    "block_size",
                    "one of vLLM's block sizes 1, 8, 16, 32, 64, 128, 256 (vllm/config/cache.py)",
                    std::to_string(b));
        }
        r.block_size_given = true;
    }
    if (s.memory_fraction) {
        const double f = *s.memory_fraction;
        if (s.engine == Engine::ideal)
            refuse("memory_fraction",
                   "no fraction: the ideal profile gives the cache every byte but the weights",
                   std::to_string(f));
        if (!(f > 0.0 && f <= 1.0))
            refuse("memory_fraction", "a fraction in (0, 1]", std::to_string(f));
        r.fraction_given = true;
        r.budget.utilization = f;
        r.options.sglang.mem_fraction_static = f;
        r.options.trtllm.free_gpu_memory_fraction = f;
    }
    if (s.max_sequences) {
        if (*s.max_sequences == 0) refuse("max_sequences", ">= 1 sequence", "0");
        const std::uint64_t cap = *s.max_sequences;
        r.options.vllm.max_num_seqs =
            static_cast<std::uint32_t>(cap > 0xFFFF'FFFFULL ? 0xFFFF'FFFFULL : cap);
        r.options.sglang.max_running_requests = cap;
        r.options.trtllm.max_batch_size = cap;
        // vLLM's profile run samples one logits row per request it schedules, at most
        // max_num_seqs of them (vllm/v1/worker/gpu_model_runner.py, _dummy_run: num_reqs =
        // min(num_tokens, max_num_reqs)): the cap given sizes the sampler's peak too.
        if (s.engine == Engine::vllm)
            r.budget.reserve.profile_sequences = r.options.vllm.max_num_seqs;
    }
    if (s.max_num_batched_tokens) {
        if (*s.max_num_batched_tokens == 0) refuse("max_num_batched_tokens", ">= 1 token", "0");
        r.options.vllm.max_num_batched_tokens = *s.max_num_batched_tokens;
        r.budget.reserve.max_num_batched_tokens = *s.max_num_batched_tokens;
    }
    if (s.speculation.method != DraftMethod::none) {
        if (s.engine == Engine::sglang || s.engine == Engine::trtllm)
            refuse("speculation",
                   "vLLM or the ideal profile (speculative decoding is modelled as "
                   "vLLM allocates for it)",
                   std::string(name(s.engine)));
        r.options.vllm.num_speculative_tokens = s.speculation.tokens;
        r.draft_method = s.speculation.method;
        r.speculative_tokens = s.speculation.tokens;
    }
    if (s.engine_version && s.engine == Engine::sglang) {
        const EngineVersion v = *s.engine_version;
        const auto d = sglang_release_defaults(v);
        if (!d)
            refuse("engine_version",
                   "an SGLang release from " + sglang_oldest_release.text() + " to " +
                       sglang_newest_release.text(),
                   v.text());
        if (d->fraction == SglangFractionRule::ambiguous && !s.memory_fraction)
            refuse("engine_version",
                   "a memory fraction given with it (--gpu-memory-utilization, "
                   "memory_fraction: the mem_fraction_static= its server_args log), or 0.4.6 or "
                   "0.4.8: SGLang's v0.4.7 tag picks mem_fraction_static by tp and 0.4.7.post1 by "
                   "SGLang PR #7054's reserve, and kvplan reads both as 0.4.7",
                   v.text());
        r.sglang_release = v;
        r.engine_version_given = true;
        r.options.sglang.release = v;
    } else if (s.engine_version) {
        if (s.engine != Engine::vllm)
            refuse("engine_version",
                   "engine vllm or sglang (the release tables are vLLM's and SGLang's)",
                   s.engine_version->text());
        // vLLM's rules change by release line: a patch given is dropped.
        const EngineVersion line = s.engine_version->line();
        const auto d = vllm_release_defaults(line);
        if (!d)
            refuse("engine_version",
                   "a vLLM release from " + vllm_oldest_release.text() + " to " +
                       vllm_newest_release.text(),
                   s.engine_version->text());
        r.engine_version = line;
        r.engine_version_given = true;
        if (!s.memory_fraction) r.budget.utilization = d->gpu_memory_utilization;
        r.options.vllm = vllm_release_options(r.options.vllm, line);
    }
    if (s.enforce_eager) {
        if (s.engine != Engine::vllm)
            refuse("enforce_eager", "engine vllm (--enforce-eager is vLLM's)",
                   std::string(name(s.engine)));
        r.options.vllm.fusion_workspace = FusionWorkspaceRounding::none;
        if (!r.budget.reserve.cuda_graphs) r.budget.reserve.cuda_graphs = Bytes{};
        r.enforce_eager = true;
    }
    if (s.without_flashinfer) {
        if (s.engine != Engine::vllm)
            refuse("without_flashinfer", "engine vllm (the profile run's sampler is vLLM's)",
                   std::string(name(s.engine)));
        r.without_flashinfer = s.without_flashinfer;
    }
    if (s.chunked_local_hybrid) {
        if (s.engine != Engine::vllm)
            refuse("chunked_local_hybrid",
                   "engine vllm (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is vLLM's)",
                   std::string(name(s.engine)));
        r.chunked_local_hybrid = s.chunked_local_hybrid;
    }
    if (s.num_gpu_blocks) {
        if (s.engine != Engine::vllm)
            refuse("num_gpu_blocks", "vLLM (--num-gpu-blocks-override is its flag)",
                   std::string(name(s.engine)));
        r.options.vllm.num_gpu_blocks_override = *s.num_gpu_blocks;
    }
    switch (s.engine) {
        case Engine::ideal:
            r.block_size = s.block_size.value_or(1);
            break;
        case Engine::vllm:
            r.block_size = s.block_size.value_or(r.options.vllm.block_size);
            r.options.vllm.block_size = r.block_size;
            break;
        case Engine::sglang:
            r.block_size = s.block_size.value_or(r.options.sglang.page_size);
            r.options.sglang.page_size = r.block_size;
            break;
        case Engine::trtllm:
            r.block_size = s.block_size.value_or(r.options.trtllm.tokens_per_block);
            r.options.trtllm.tokens_per_block = r.block_size;
            break;
    }
    return r;
}

namespace detail {

/// vLLM's defaults that depend on the replica, applied to `s` (resolved for vLLM): the attention
/// backend and the block size it forces on the GPU's family (vllm_attention_backend); where the
/// hybrid manager is off for chunked local attention (the release's default, engine/release.hpp,
/// or Serving::chunked_local_hybrid), that manager off for a model with chunked layers; the
/// release's max_num_batched_tokens and max_num_seqs for the GPU (VllmReleaseDefaults::
/// batch_rule); and its profile run's sampler for the model (vllm_profile_sampler).
constexpr void vllm_model_defaults(ResolvedServing& s, const Replica& r) {
    s.backend = vllm_attention_backend(r.model, r.gpu, r.kv.dtype, r.parallel.dcp, s.block_size,
                                       r.parallel.tp, s.engine_version);
    if (s.backend) {
        s.block_size = s.backend->block_size;
        s.options.vllm.block_size = s.block_size;
    }
    // Without FlashInfer vLLM runs no all-reduce fusion pass (enable_allreduce_rms_fusion asks
    // has_flashinfer(), vllm/config/vllm.py), so its profile allocates no fusion workspace.
    if (s.without_flashinfer.value_or(false))
        s.options.vllm.fusion_workspace = FusionWorkspaceRounding::none;
    const auto d = vllm_release_defaults(s.engine_version);
    const bool hybrid = s.chunked_local_hybrid.value_or(!d || d->chunked_local_hybrid);
    if (!hybrid && r.model.layers().layers_of_kind(CacheKind::chunked_local))
        s.options.vllm.hybrid_kv_cache_manager = false;
    // The release's batch defaults where they differ from main's for this GPU (a v0.8 release on
    // an H20 or a B200 profiles 2,048 tokens and 256 sequences), unless given.
    if (d) {
        // A sampler given (FlashInfer installed or not) replaces the release's top-k/top-p path;
        // model runner V2's dummy batch asks for neither, so nothing replaces its plain sampling.
        const VllmSampler release = vllm_profile_sampler(r.model, *d);
        s.budget.reserve.sampler = release;
        // Without FlashInfer the native path is Triton's where the release has it, else the sort.
        if (s.without_flashinfer && release != VllmSampler::plain)
            s.budget.reserve.sampler =
                *s.without_flashinfer
                    ? (release == VllmSampler::triton ? VllmSampler::triton : VllmSampler::sorts)
                : release == VllmSampler::sorts || release == VllmSampler::triton
                    ? VllmSampler::flashinfer_logits
                    : release;
        const VllmBatchDefaults then = vllm_batch_defaults(r.gpu, *d);
        const VllmBatchDefaults now = vllm_batch_defaults(r.gpu);
        if (then.max_num_batched_tokens != now.max_num_batched_tokens &&
            !s.options.vllm.max_num_batched_tokens) {
            s.options.vllm.max_num_batched_tokens = then.max_num_batched_tokens;
            s.budget.reserve.max_num_batched_tokens = then.max_num_batched_tokens;
        }
        if (then.max_num_seqs != now.max_num_seqs && !s.options.vllm.max_num_seqs) {
            s.options.vllm.max_num_seqs = then.max_num_seqs;
            s.budget.reserve.profile_sequences = then.max_num_seqs;
        }
    }
}

}  // namespace detail

/// A model deployed on GPUs: one replica is the GPUs of its parallel layout (tp x pp, times dp
/// under vLLM's rules: replica_gpus); `gpus` GPUs make gpus / replica_gpus() replicas serving the
/// demand between them. `parallel` is read in the flags of `serving.engine` (evaluate() sets
/// parallel.rules from it).
struct Deployment {
    Model model;
    GpuSpec gpu{};
    ParallelConfig parallel{};
    std::uint32_t gpus = 0;                  ///< every GPU deployed; 0: one replica
    std::optional<WeightOptions> weights{};  ///< nullopt: the checkpoint's own format
    /// nullopt: what the serving engine's "auto" stores for the checkpoint (served_kv).
    std::optional<KvFormat> kv{};
    Serving serving{};

    /// The parallel layout in the rules of the serving engine.
    [[nodiscard]] constexpr ParallelConfig parallel_config() const noexcept {
        ParallelConfig p = parallel;
        p.rules = parallel_rules(serving.engine);
        return p;
    }
    /// GPUs in one replica: tp x pp, times dp under vLLM's rules (kvplan::replica_gpus).
    [[nodiscard]] constexpr std::uint32_t replica_gpus() const noexcept {
        return static_cast<std::uint32_t>(kvplan::replica_gpus(parallel_config()));
    }
    /// The weights it serves: those given, else its checkpoint's as its engine loads them
    /// (kvplan::served_weights).
    [[nodiscard]] constexpr WeightOptions served_weights() const {
        return kvplan::served_weights(model, weights, serving.engine, serving.engine_version);
    }
    /// The KV format it stores: the one given, else what its engine's "auto" stores for the
    /// checkpoint at its release (kvplan::served_kv), and where it came from.
    [[nodiscard]] constexpr ServedKv served_kv() const {
        return kvplan::served_kv(model, kv, serving.engine, serving.engine_version);
    }
    /// served_kv()'s format.
    [[nodiscard]] constexpr KvFormat kv_format() const { return served_kv().format; }
};

/// Where the weight format came from.
enum class WeightSource : std::uint8_t {
    checkpoint,  ///< the config's quantization_config or torch_dtype
    assumed,     ///< the config says neither: bf16 assumed
    given,       ///< chosen by the caller (--weight-dtype)
    /// the checkpoint's float32 weights in the 16 bits the engine's dtype "auto" loads them in
    /// (engine_load_weights)
    downcast,
};

/// Each source's spelling.
inline constexpr FixedArray<detail::EnumName<WeightSource>, 4> weight_source_names{{
    {WeightSource::checkpoint, "checkpoint"},
    {WeightSource::assumed, "assumed"},
    {WeightSource::given, "given"},
    {WeightSource::downcast, "downcast"},
}};

[[nodiscard]] constexpr const char* name(WeightSource s) noexcept {
    return detail::enum_name(weight_source_names, s);
}

/// How a benchmark run of the closed loop draws and counts its requests, as the latency estimate's
/// Load takes them: `length_spread`, each request's lengths drawn uniformly within +-spread of
/// the prompt and output tokens (vllm bench serve --random-range-ratio r: r; sglang.bench_serving
/// at its default range ratio 0: 1), Load::length_spread; `requests`, the run's requests, all
/// its clients started at once (--num-prompts at --request-rate inf), Load::requests;
/// `fixed_lengths`, every request exactly the prompt and output tokens (sglang.bench_serving
/// --random-range-ratio 1, vllm bench serve's random dataset at its default range ratio 0, a
/// fixed-length dataset; with --ignore-eos), Load::fixed_lengths, which keeps the clients in step
/// (a wave a cycle on SGLang); it takes no spread. All unset: the closed loop's steady state at
/// those means, lengths not stated.
struct RunShape {
    double length_spread = 0.0;
    std::optional<std::uint64_t> requests{};
    bool fixed_lengths = false;
    [[nodiscard]] constexpr bool given() const noexcept {
        return length_spread != 0.0 || requests.has_value() || fixed_lengths;
    }
};

/// What a deployment must serve: sequences of `context` tokens (prompt and output together, the
/// length a review sizes for), `concurrency` of them at once over every replica. With both
/// `prompt_tokens` and `output_tokens` the requests are a closed loop of that many clients, every
/// request of that prompt and output (at most the context together), and evaluate() gives the
/// latency estimate beside the bound; without them, the bound alone. Neither is derived from the
/// context: a split nobody stated would be a guess. With `shared_prefix_tokens`, every request
/// starts with the same prompt prefix of that many tokens (a system prompt), which the engine's
/// prefix cache (vLLM's and SGLang's prefix caching, TensorRT-LLM's KV cache reuse) holds once.
struct Demand {
    std::uint64_t context = 0;
    std::uint64_t concurrency = 1;
    std::optional<std::uint64_t> prompt_tokens{};  ///< I: prompt tokens of a request
    std::optional<std::uint64_t> output_tokens{};  ///< O: output tokens, the first one included
    /// Tokens of the prompt prefix every request shares; 0: none. At most the context, and at most
    /// prompt_tokens when the split is given.
    std::uint64_t shared_prefix_tokens = 0;
    /// The run the estimate times: drawn lengths and a request count; only with the split.
    RunShape run{};
};

/// A request's prompt and output.
struct TokenSplit {
    std::uint64_t prompt = 0;
    std::uint64_t output = 0;
    /// The whole request: prompt + output tokens. Throws OverflowError past 64 bits.
    [[nodiscard]] constexpr std::uint64_t tokens() const {
        return detail::add(prompt, output, "prompt_tokens + output_tokens");
    }
};

/// The context a demand sizes for: `context` when stated; else, with a prompt / output split, the
/// two together (requests sized at their own length); else the model's context limit
/// (context_limit: max_position_embeddings, or the window of a sliding-window-only model).
/// Throws SizeOverflow when the split's sum passes 64 bits.
[[nodiscard]] constexpr std::uint64_t demand_context(const ModelConfig& m,
                                                     std::optional<std::uint64_t> context,
                                                     std::optional<std::uint64_t> prompt_tokens,
                                                     std::optional<std::uint64_t> output_tokens) {
    if (context) return *context;
    if (prompt_tokens && output_tokens) return TokenSplit{*prompt_tokens, *output_tokens}.tokens();
    return context_limit(m).tokens;
}

/// The split of `d`'s requests, or nullopt when it states none. Throws InvalidInput naming
/// `where` when only one part is given, a part is zero, or the two pass the context.
[[nodiscard]] inline std::optional<TokenSplit> token_split(const Demand& d, detail::TextRef where) {
    if (!d.prompt_tokens && !d.output_tokens) return std::nullopt;
    if (!d.prompt_tokens || !d.output_tokens)
        detail::throw_field_error<InvalidInput>(
            where, d.prompt_tokens ? "output_tokens" : "prompt_tokens",
            "both prompt_tokens and output_tokens (the estimate needs the split)", "only one");
    if (*d.prompt_tokens == 0)
        detail::throw_field_error<InvalidInput>(where, "prompt_tokens", ">= 1 token", "0");
    if (*d.output_tokens == 0)
        detail::throw_field_error<InvalidInput>(where, "output_tokens", ">= 1 token", "0");
    const TokenSplit split{*d.prompt_tokens, *d.output_tokens};
    const std::uint64_t sum = split.tokens();
    if (sum > d.context)
        detail::throw_field_error<InvalidInput>(
            where, "prompt_tokens + output_tokens",
            detail::text("at most the context, ", d.context, " tokens"),
            detail::text(sum, " tokens"));
    return split;
}

/// Throws InvalidInput naming `where` when `run` fixes the lengths and draws them too (a nonzero
/// length_spread with fixed_lengths): every request exactly the prompt and output tokens has no
/// spread (Load::fixed_lengths, Load::length_spread).
inline void check_run_lengths(const RunShape& run, detail::TextRef where) {
    if (run.fixed_lengths && run.length_spread != 0.0)
        detail::throw_field_error<InvalidInput>(
            where, "length_spread",
            "0 with fixed_lengths (every request exactly prompt_tokens and output_tokens)",
            std::to_string(run.length_spread));
}

/// Throws InvalidInput naming `where` when `d`'s run shape is out of range (a spread outside
/// [0, 1], no request, fixed lengths with a spread) or given without the split it shapes.
inline void check_run_shape(const Demand& d, detail::TextRef where) {
    if (!d.run.given()) return;
    if (!(d.run.length_spread >= 0.0 && d.run.length_spread <= 1.0))
        detail::throw_field_error<InvalidInput>(where, "length_spread", "a fraction in [0, 1]",
                                                std::to_string(d.run.length_spread));
    check_run_lengths(d.run, where);
    if (d.run.requests && *d.run.requests == 0)
        detail::throw_field_error<InvalidInput>(where, "num_prompts", ">= 1 request", "0");
    if (!d.prompt_tokens || !d.output_tokens)
        detail::throw_field_error<InvalidInput>(
            where,
            d.run.requests               ? "num_prompts"
            : d.run.length_spread != 0.0 ? "length_spread"
                                         : "fixed_lengths",
            "prompt_tokens and output_tokens as well (the load the estimate runs)", "no split");
}

/// The shared prefix a prefix-cache hit rate stands for, for memory: when a share `rate` of every
/// prompt is found in the cache, those tokens are held once, as a prefix of floor(rate x
/// prompt_tokens) tokens would be (rounded down: the cache shares whole blocks, and
/// paged_shared_prefix counts only those). A rate is a share of the prompt, so `d` must state
/// prompt_tokens. Throws InvalidInput naming `where` for a rate outside [0, 1] or no prompt.
[[nodiscard]] inline std::uint64_t shared_prefix_of_hit_rate(const Demand& d, double rate,
                                                             detail::TextRef where) {
    if (!(rate >= 0.0 && rate <= 1.0))
        detail::throw_field_error<InvalidInput>(
            where, "prefix_hit_rate", "a share of the prompt from 0 to 1", std::to_string(rate));
    if (!d.prompt_tokens)
        detail::throw_field_error<InvalidInput>(
            where, "prefix_hit_rate", "prompt_tokens as well (the rate is a share of the prompt)",
            "no prompt_tokens");
    // A decimal rate is not exact in binary (0.29 x 100 is 28.999999999999996): a product within
    // a billionth of a whole number is that number, anything else rounds down.
    const double tokens = rate * static_cast<double>(*d.prompt_tokens);
    const double whole = std::round(tokens);
    return static_cast<std::uint64_t>(
        std::abs(tokens - whole) <= 1e-9 * std::max(1.0, tokens) ? whole : std::floor(tokens));
}

/// Throws InvalidInput naming `where` when `d`'s shared prefix passes its context, or its prompt
/// when the split is given (the prefix is part of every prompt).
inline void check_shared_prefix(const Demand& d, detail::TextRef where) {
    if (d.shared_prefix_tokens > d.context)
        detail::throw_field_error<InvalidInput>(
            where, "shared_prefix_tokens",
            detail::text("at most the context, ", d.context, " tokens"),
            detail::text(d.shared_prefix_tokens, " tokens"));
    if (d.prompt_tokens && d.shared_prefix_tokens > *d.prompt_tokens)
        detail::throw_field_error<InvalidInput>(
            where, "shared_prefix_tokens",
            detail::text("at most the prompt, ", *d.prompt_tokens, " tokens"),
            detail::text(d.shared_prefix_tokens, " tokens"));
}

}  // namespace kvplan
