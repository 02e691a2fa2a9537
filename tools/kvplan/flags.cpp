#include "flags.hpp"

#include <fmt/format.h>

#include "parse.hpp"

namespace kvplan::cli {

namespace {

WeightFormat weight_format_flag(const std::string& text, std::string_view flag) {
    if (const auto f = parse_weight_format(text)) return *f;
    usage_error(flag, "a weight format (fp32, bf16, fp16, fp8, int8, int4, mxfp4, nvfp4)", text);
}

std::optional<std::uint64_t> optional_count(const std::string& text, std::string_view flag) {
    if (text.empty()) return std::nullopt;
    return parse_count(text, flag);
}

}  // namespace

std::optional<WeightOptions> parse_weights(const CommonOptions& o) {
    if (o.weight_dtype.empty() && o.expert_dtype.empty()) return std::nullopt;
    WeightOptions w;
    if (!o.weight_dtype.empty()) w.format = weight_format_flag(o.weight_dtype, "--weight-dtype");
    if (!o.expert_dtype.empty())
        w.expert_format = weight_format_flag(o.expert_dtype, "--expert-dtype");
    return w;
}

Speculation parse_speculation(const CommonOptions& o, Engine engine) {
    Speculation sp;
    if (o.speculative_method.empty()) {
        if (!o.num_speculative_tokens.empty())
            usage_error("--num-speculative-tokens", "--speculative-method as well", "none given");
        if (!o.draft_model.empty())
            usage_error("--draft-model", "--speculative-method draft_model as well", "none given");
        return sp;
    }
    const auto m = parse_draft_method(o.speculative_method);
    if (!m)
        throw UsageError(
            "--speculative-method: expected none, ngram, eagle, eagle3, mtp or draft_model, "
            "found '" +
            o.speculative_method + "'" +
            detail::did_you_mean(o.speculative_method,
                                 {"none", "ngram", "eagle", "eagle3", "mtp", "draft_model"}));
    sp.method = *m;
    if (sp.method != DraftMethod::none && (engine == Engine::sglang || engine == Engine::trtllm))
        usage_error("--speculative-method",
                    "--engine vllm or ideal (speculative decoding is modelled as vLLM allocates "
                    "for it)",
                    std::string(name(engine)));
    if (sp.method == DraftMethod::draft_model) {
        if (o.draft_model.empty())
            usage_error("--draft-model", "a draft model with --speculative-method draft_model",
                        "none given");
    } else if (!o.draft_model.empty()) {
        usage_error("--draft-model", "--speculative-method draft_model", o.speculative_method);
    }
    const bool drafts = sp.method != DraftMethod::none;
    if (drafts && o.num_speculative_tokens.empty())
        usage_error("--num-speculative-tokens", "the tokens drafted per step with a drafter",
                    "none given");
    if (!drafts && !o.num_speculative_tokens.empty())
        usage_error("--num-speculative-tokens", "a --speculative-method that drafts", "none");
    if (drafts) {
        const std::uint64_t t = parse_count(o.num_speculative_tokens, "--num-speculative-tokens");
        if (t > 64) usage_error("--num-speculative-tokens", "at most 64", o.num_speculative_tokens);
        sp.tokens = static_cast<std::uint32_t>(t);
    }
    return sp;
}

Serving parse_serving(const CommonOptions& o) {
    Serving s;
    s.engine = parse_engine_flag(o.engine);
    if (!o.block_size.empty()) {
        const std::uint64_t b = parse_count(o.block_size, "--block-size");
        if (b > (1U << 20)) usage_error("--block-size", "at most 1048576 tokens", o.block_size);
        s.block_size = static_cast<std::uint32_t>(b);
    }
    if (!o.gpu_memory_utilization.empty()) {
        if (s.engine == Engine::ideal)
            usage_error("--gpu-memory-utilization",
                        "no fraction with --engine ideal, which gives the cache every byte but "
                        "the weights",
                        o.gpu_memory_utilization);
        s.memory_fraction = parse_fraction(o.gpu_memory_utilization, "--gpu-memory-utilization");
    }
    if (!o.engine_version.empty()) {
        s.engine_version = parse_engine_version(o.engine_version);
        if (!s.engine_version)
            usage_error("--engine-version", "a release as X.Y (0.10)", o.engine_version);
    }
    if (!o.kv_memory.empty()) s.kv_memory_per_gpu = parse_size(o.kv_memory, "--kv-memory");
    s.max_sequences = optional_count(o.max_num_seqs, "--max-num-seqs");
    s.max_num_batched_tokens = optional_count(o.max_num_batched_tokens, "--max-num-batched-tokens");
    if (!o.num_gpu_blocks_override.empty()) {
        if (s.engine != Engine::vllm)
            usage_error("--num-gpu-blocks-override", "--engine vllm (it is vLLM's flag)",
                        std::string(name(s.engine)));
        s.num_gpu_blocks = parse_count(o.num_gpu_blocks_override, "--num-gpu-blocks-override", 2);
    }
    s.allow_long_context = o.allow_long_context;
    s.speculation = parse_speculation(o, s.engine);
    // A knob the engine cannot take (vLLM's block sizes) is a usage error too.
    try {
        (void)resolve_serving(s);
    } catch (const InvalidInput& e) {
        const std::string what = e.what();
        throw UsageError((what.find("engine_version") != std::string::npos ? "--engine-version: "
                                                                           : "--block-size: ") +
                         what);
    }
    return s;
}

TokenSplitFlags parse_token_split(const CommonOptions& o) {
    TokenSplitFlags t;
    if (o.prompt_tokens.empty() != o.output_tokens.empty()) {
        const bool prompt = o.prompt_tokens.empty();
        usage_error(prompt ? "--prompt-tokens" : "--output-tokens",
                    fmt::format("a token count beside {} (the latency estimate needs both parts "
                                "of a request)",
                                prompt ? "--output-tokens" : "--prompt-tokens"),
                    "none");
    }
    if (o.prompt_tokens.empty()) return t;
    t.prompt = parse_tokens(o.prompt_tokens, "--prompt-tokens");
    t.output = parse_tokens(o.output_tokens, "--output-tokens");
    return t;
}

void check_context_holds_split(std::uint64_t context, const TokenSplitFlags& split,
                               const std::string& context_text) {
    if (split.given() && context < split.sum())
        usage_error(
            "--context",
            fmt::format("at least --prompt-tokens + --output-tokens = {} tokens", split.sum()),
            context_text);
}

std::optional<CalibrationProfile> read_profile_flag(const CommonOptions& o) {
    if (o.profile.empty()) return std::nullopt;
    return load_profile(o.profile);
}

void use_profile(const CalibrationProfile& p, const std::string& path, const std::string& gpu_id,
                 ComputeDtype compute, Serving& s) {
    if (p.has_reserve) {
        // A calibrated reserve (kvplan calibrate) replaces the modelled activation and graphs.
        BudgetOptions b;
        b.reserve = s.reserve;
        if (s.memory_fraction) b.utilization = *s.memory_fraction;
        b = apply_profile(p, b, s.memory_fraction.has_value());
        s.reserve = b.reserve;
        if (!s.memory_fraction && s.engine != Engine::ideal) s.memory_fraction = b.utilization;
    }
    s.estimate = profile_estimate(p, path, gpu_id, compute);
}

std::optional<EstimateParams> profile_estimate(const CalibrationProfile& p, const std::string& path,
                                               const std::string& gpu_id, ComputeDtype compute) {
    if (!p.estimate) return std::nullopt;
    if (!p.gpu.empty() && p.gpu != gpu_id)
        detail::throw_field_error<InvalidInput>(
            path, "gpu",
            fmt::format("{} (--gpu): the estimate's fractions are of the GPU they were fitted on",
                        gpu_id),
            fmt::format("'{}'", p.gpu));
    if (p.estimate_compute != compute)
        detail::throw_field_error<InvalidInput>(
            path, "estimate_compute_dtype",
            fmt::format("{}, the compute type this estimate runs at: the compute fraction is of "
                        "that type's peak (roofline --compute-dtype sets another)",
                        name(compute)),
            fmt::format("'{}'", name(p.estimate_compute)));
    return p.estimate;
}

ReplicaFlags parse_replica_flags(const CommonOptions& o) {
    ReplicaFlags f;
    f.layout = parse_layout(o);
    f.kv = parse_kv_dtype_flag(o.kv_dtype, "--kv-dtype");
    f.weights = parse_weights(o);
    f.serving = parse_serving(o);
    if (!o.context.empty()) f.context = parse_tokens(o.context, "--context");
    if (!o.concurrency.empty()) f.concurrency = parse_count(o.concurrency, "--concurrency");
    f.split = parse_token_split(o);
    if (f.context) check_context_holds_split(*f.context, f.split, o.context);
    if (!o.shared_prefix.empty())
        f.shared_prefix = parse_tokens(o.shared_prefix, "--shared-prefix");
    f.import = import_options(o);
    return f;
}

Deployment ReplicaRequest::deployment() const {
    return Deployment{.model = model.get(),
                      .gpu = gpu.spec,
                      .parallel = flags.layout.parallel(),
                      .gpus = flags.layout.gpus,
                      .weights = flags.weights,
                      .kv = flags.kv,
                      .serving = flags.serving};
}

ReplicaRequest read_replica(const CommonOptions& o, const Context& ctx,
                            std::optional<ComputeDtype> compute) {
    // Flags first, so that a usage error is reported before any file is read.
    ReplicaFlags flags = parse_replica_flags(o);
    if (o.gpu.empty() && !flags.serving.kv_memory_per_gpu)
        usage_error("--gpu", "a GPU id or spec path (kvplan list gpus)", "");
    ResolvedModel model = resolve_model_flags(o, ctx, flags.import);
    if (flags.serving.speculation.method == DraftMethod::draft_model)
        flags.serving.speculation.draft_model =
            resolve_model(o.draft_model, ctx, "--draft-model", flags.import).get();
    ResolvedGpu gpu = resolve_gpu(o.gpu, ctx);
    // Requests of a stated split are sized at their own length unless --context says otherwise.
    const std::uint64_t context =
        demand_context(model.get().config(), flags.context, flags.split.prompt, flags.split.output);
    ReplicaRequest r{std::move(model), std::move(gpu), std::move(flags), context};
    (void)Layout(r.model.get(), r.deployment().parallel_config());  // InvalidLayout first
    r.profile = read_profile_flag(o);
    if (r.profile) {
        r.profile_path = o.profile;
        const Deployment d = r.deployment();
        const WeightOptions w = d.weights ? *d.weights : checkpoint_weights(d.model);
        use_profile(*r.profile, r.profile_path, r.gpu.id,
                    compute.value_or(matmul_compute(w, r.gpu.spec)), r.flags.serving);
    }
    return r;
}

void refuse_budget_flags_without_gpu(const CommonOptions& o) {
    const std::pair<const char*, bool> budget_flags[] = {
        {"--concurrency", !o.concurrency.empty()},
        {"--engine", !o.engine.empty()},
        {"--block-size", !o.block_size.empty()},
        {"--gpu-memory-utilization", !o.gpu_memory_utilization.empty()},
        {"--engine-version", !o.engine_version.empty()},
        {"--kv-memory", !o.kv_memory.empty()},
        {"--max-num-seqs", !o.max_num_seqs.empty()},
        {"--max-num-batched-tokens", !o.max_num_batched_tokens.empty()},
        {"--num-gpu-blocks-override", !o.num_gpu_blocks_override.empty()},
        {"--allow-long-context", o.allow_long_context},
        {"--speculative-method", !o.speculative_method.empty()},
        {"--num-speculative-tokens", !o.num_speculative_tokens.empty()},
        {"--draft-model", !o.draft_model.empty()},
        {"--shared-prefix", !o.shared_prefix.empty()},
        {"--gpus", !o.gpus.empty()}};
    for (const auto& [flag, given] : budget_flags)
        if (given)
            usage_error(flag, "--gpu as well (it shapes the budget, which needs a GPU)",
                        "no --gpu");
}

std::string describe_weights(const WeightOptions& w) {
    std::string s = name(w.format);
    if (w.format == WeightFormat::fp8 && w.layout.fp8_block != 0)
        s += fmt::format(" ({} x {} blocks)", w.layout.fp8_block, w.layout.fp8_block);
    if (w.format == WeightFormat::int4 && w.layout.group_size != 0 &&
        w.layout.group_size != 0xFFFF'FFFFU)
        s += fmt::format(" (groups of {})", w.layout.group_size);
    if (w.expert_format && *w.expert_format != w.format)
        s += fmt::format(", experts {}", name(*w.expert_format));
    if (w.attention_format && *w.attention_format != w.format)
        s += fmt::format(", attention {}", name(*w.attention_format));
    const auto part = [&](const std::optional<WeightFormat>& f, const char* what) {
        if (f) s += fmt::format(", {} {}", what, name(*f));
    };
    part(w.attention_output_format, "attention output");
    part(w.shared_expert_format, "shared experts");
    part(w.dense_mlp_format, "dense MLP");
    part(w.mixer_format, "mixers");
    part(w.lm_head_format, "LM head");
    return s;
}

}  // namespace kvplan::cli
