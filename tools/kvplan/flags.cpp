#include "flags.hpp"

#include <fmt/format.h>

#include <kvplan/engine/checkpoint_kv.hpp>
#include <kvplan/engine/parallel.hpp>
#include <string_view>
#include <utility>

#include "parse.hpp"

namespace kvplan::cli {

std::optional<WeightOptions> weights_of(std::optional<WeightFormat> format,
                                        std::optional<WeightFormat> experts) {
    if (!format && !experts) return std::nullopt;
    WeightOptions w;
    if (format) w.format = *format;
    w.expert_format = experts;
    return w;
}

std::optional<WeightOptions> parse_weights(const CommonOptions& o) {
    return weights_of(o.weight_dtype.empty() ? std::nullopt : o.weight_dtype.front(),
                      o.expert_dtype);
}

Speculation parse_speculation(const CommonOptions& o, Engine engine) {
    // The values were read as CLI11 parsed them (options.cpp); what is left is how they combine.
    Speculation sp;
    if (!o.speculative_method) {
        if (o.num_speculative_tokens)
            usage_error("--num-speculative-tokens", "--speculative-method as well", "none given");
        if (!o.draft_model.empty())
            usage_error("--draft-model", "--speculative-method draft_model as well", "none given");
        return sp;
    }
    sp.method = *o.speculative_method;
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
        usage_error("--draft-model", "--speculative-method draft_model", name(sp.method));
    }
    const bool drafts = sp.method != DraftMethod::none;
    if (drafts && !o.num_speculative_tokens)
        usage_error("--num-speculative-tokens", "the tokens drafted per step with a drafter",
                    "none given");
    if (!drafts && o.num_speculative_tokens)
        usage_error("--num-speculative-tokens", "a --speculative-method that drafts", "none");
    if (drafts) sp.tokens = *o.num_speculative_tokens;
    return sp;
}

Serving parse_serving(const CommonOptions& o) {
    Serving s;
    s.engine = o.engine.value_or(Engine::vllm);
    if (o.block_size) s.block_size = *o.block_size;
    if (o.gpu_memory_utilization) {
        if (s.engine == Engine::ideal)
            usage_error("--gpu-memory-utilization",
                        "no fraction with --engine ideal, which gives the cache every byte but "
                        "the weights",
                        fmt::format("{}", *o.gpu_memory_utilization));
        s.memory_fraction = *o.gpu_memory_utilization;
    }
    s.engine_version = o.engine_version;
    s.kv_memory_per_gpu = o.kv_memory;
    s.max_sequences = o.max_num_seqs;
    s.max_num_batched_tokens = o.max_num_batched_tokens;
    if ((o.limit_mm_per_prompt || o.skip_mm_profiling) && s.engine != Engine::vllm)
        usage_error(o.limit_mm_per_prompt ? "--limit-mm-per-prompt" : "--skip-mm-profiling",
                    "--engine vllm (it is vLLM's flag)", std::string(name(s.engine)));
    if (const auto& mm = o.limit_mm_per_prompt) {
        // vLLM read image=N up to v0.9 (nullable_kvs; deprecated in PR #16789) and removed it in
        // v0.10 (PR #20969): a later release exits at argument parsing.
        if (mm->key_value && o.engine_version.value_or(vllm_newest_release) >= EngineVersion{0, 10})
            usage_error("--limit-mm-per-prompt",
                        fmt::format("{{\"image\": {}}}: vLLM v0.10 removed the image=N form "
                                    "(vllm/engine/arg_utils.py, PR #20969); v0.8 and v0.9 take "
                                    "it (--engine-version 0.9)",
                                    mm->images),
                        fmt::format("image={}", mm->images));
        s.reserve.encoder_cache.items_per_prompt = mm->images;
    }
    s.reserve.encoder_cache.skip_profiling = o.skip_mm_profiling;
    s.num_gpu_blocks = o.num_gpu_blocks_override;
    s.allow_long_context = o.allow_long_context;
    s.enforce_eager = o.enforce_eager;
    s.chunked_local_hybrid = o.chunked_local_hybrid;
    s.without_flashinfer = o.without_flashinfer;
    if (o.max_loras && s.engine == Engine::trtllm)
        usage_error("--max-loras",
                    "--engine vllm, sglang or ideal (TensorRT-LLM's LoRA cache is not modelled)",
                    std::string(name(s.engine)));
    if (o.fully_sharded_loras && s.engine == Engine::sglang)
        usage_error("--fully-sharded-loras", "--engine vllm (SGLang has no such option)",
                    std::string(name(s.engine)));
    if (o.max_loras) {
        LoraOptions& lora = s.reserve.lora;
        lora.max_loras = *o.max_loras;
        if (o.max_lora_rank) lora.max_lora_rank = *o.max_lora_rank;
        lora.fully_sharded = o.fully_sharded_loras;
        if (o.max_cpu_loras) {
            // Host memory only: checked as vLLM's LoRAConfig and SGLang's server_args check it.
            if (*o.max_cpu_loras < lora.max_loras)
                usage_error("--max-cpu-loras",
                            fmt::format("at least --max-loras ({})", lora.max_loras),
                            fmt::format("{}", *o.max_cpu_loras));
            lora.max_cpu_loras = *o.max_cpu_loras;
        }
        if (o.lora_target_modules) {
            // vLLM wraps every layer it supports whatever the adapters target: the flag would
            // change nothing there, so it is refused rather than ignored.
            if (s.engine != Engine::sglang)
                usage_error("--lora-target-modules",
                            "--engine sglang (vLLM allocates LoRA stacks on every layer it "
                            "supports, whatever the adapters target)",
                            std::string(name(s.engine)));
            lora.targets = *o.lora_target_modules;
        }
    } else if (o.max_lora_rank || o.fully_sharded_loras || o.max_cpu_loras ||
               o.lora_target_modules) {
        const char* flag = o.max_lora_rank         ? "--max-lora-rank"
                           : o.fully_sharded_loras ? "--fully-sharded-loras"
                           : o.max_cpu_loras       ? "--max-cpu-loras"
                                                   : "--lora-target-modules";
        usage_error(flag, "--max-loras as well (the adapter slots it describes)", "no --max-loras");
    }
    s.speculation = parse_speculation(o, s.engine);
    // A knob the engine cannot take (vLLM's block sizes, a vLLM switch under SGLang) is a usage
    // error too, in the library's words, named by the flag that set the field it names.
    try {
        (void)resolve_serving(s);
    } catch (const InvalidInput& e) {
        const std::string what = e.what();
        constexpr std::pair<std::string_view, std::string_view> flag_of_field[] = {
            {": block_size:", "--block-size"},
            {": memory_fraction:", "--gpu-memory-utilization"},
            {": max_sequences:", "--max-num-seqs"},
            {": max_num_batched_tokens:", "--max-num-batched-tokens"},
            {": speculation:", "--speculative-method"},
            {": engine_version:", "--engine-version"},
            {": without_flashinfer:", "--without-flashinfer"},
            {": chunked_local_hybrid:", "--chunked-local-hybrid"},
            {": enforce_eager:", "--enforce-eager"},
            {": num_gpu_blocks:", "--num-gpu-blocks-override"}};
        std::string_view flag = "--engine";
        for (const auto& [field, name] : flag_of_field)
            if (what.find(field) != std::string::npos) flag = name;
        throw UsageError(std::string(flag) + ": " + what);
    }
    return s;
}

// Read beside the other flags of a replica (inputs.hpp declares them): following a
// replica's flags visits one file.
HfImportOptions import_options(const CommonOptions& o) {
    // The state types were read as CLI11 parsed them (0: auto, the importer's default).
    HfImportOptions import;
    if (o.mamba_cache_bytes != 0) import.state_element_bytes = o.mamba_cache_bytes;
    import.ssm_state_element_bytes = o.mamba_ssm_cache_bytes;
    import.model_type = o.model_type;
    return import;
}

LayoutInput parse_layout(const CommonOptions& o) {
    // Each degree was read as CLI11 parsed it (options.cpp: 1 to 65536); what is left is how they
    // combine.
    LayoutInput l;
    constexpr std::uint64_t max_ranks = 1U << 16;
    l.tp = o.tp.value_or(1);
    l.pp = o.pp.value_or(1);
    l.dp = o.dp.value_or(1);
    l.dcp = o.dcp.value_or(1);
    if (o.enable_expert_parallel && o.ep)
        usage_error("--enable-expert-parallel",
                    "either it (vLLM: the experts over every dp x tp GPU) or --ep N", "both");
    if (o.enable_expert_parallel) {
        const std::uint64_t ep = vllm_expert_parallel_size(l.dp, l.tp);
        if (ep > max_ranks)
            usage_error("--enable-expert-parallel", "experts over at most 65536 GPUs (dp x tp)",
                        std::to_string(ep));
        l.ep = static_cast<std::uint32_t>(ep);
    } else {
        l.ep = o.ep.value_or(1);
    }
    if (o.redundant_experts) l.redundant_experts = *o.redundant_experts;
    // The GPUs a replica takes are the engine's rule (engine/parallel.hpp).
    const std::uint64_t per_replica =
        replica_gpus(o.engine.value_or(Engine::vllm), l.tp, l.pp, l.dp);
    const bool dp_adds_gpus = per_replica != std::uint64_t{l.tp} * l.pp;
    if (per_replica > max_ranks)
        usage_error(dp_adds_gpus ? "--dp" : "--tp", "a replica of at most 65536 GPUs",
                    std::to_string(per_replica));
    if (!o.gpus) {
        l.gpus = static_cast<std::uint32_t>(per_replica);
    } else {
        const std::uint32_t g = *o.gpus;
        if (replica_count(g, per_replica) == 0)
            usage_error(
                "--gpus",
                fmt::format("a multiple of {} = {} (each replica takes that many GPUs)",
                            dp_adds_gpus && l.dp > 1 ? "dp x tp x pp" : "tp x pp", per_replica),
                std::to_string(g));
        l.gpus = g;
    }
    l.replicas = static_cast<std::uint32_t>(replica_count(l.gpus, per_replica));
    return l;
}

TokenSplitFlags parse_token_split(const CommonOptions& o) {
    TokenSplitFlags t;
    if (o.prompt_tokens.has_value() != o.output_tokens.has_value()) {
        const bool prompt = !o.prompt_tokens;
        usage_error(prompt ? "--prompt-tokens" : "--output-tokens",
                    fmt::format("a token count beside {} (the latency estimate needs both parts "
                                "of a request)",
                                prompt ? "--output-tokens" : "--prompt-tokens"),
                    "none");
    }
    t.prompt = o.prompt_tokens;
    t.output = o.output_tokens;
    return t;
}

void check_context_holds_split(std::uint64_t context, const TokenSplitFlags& split) {
    if (split.given() && context < split.sum())
        usage_error(
            "--context",
            fmt::format("at least --prompt-tokens + --output-tokens = {} tokens", split.sum()),
            std::to_string(context));
}

RunShape parse_run_shape(const CommonOptions& o, const TokenSplitFlags& split) {
    const RunShape run{.length_spread = o.length_spread.value_or(0.0),
                       .requests = o.num_prompts,
                       .fixed_lengths = o.fixed_lengths};
    if ((o.length_spread || o.num_prompts || o.fixed_lengths) && !split.given())
        usage_error(o.num_prompts     ? "--num-prompts"
                    : o.length_spread ? "--length-spread"
                                      : "--fixed-lengths",
                    "--prompt-tokens and --output-tokens as well (the load the estimate runs)",
                    "no --prompt-tokens");
    // Fixed lengths with a spread: the library's refusal, a usage error (exit 2) naming the flag.
    try {
        check_run_lengths(run, "--fixed-lengths");
    } catch (const InvalidInput& e) {
        throw UsageError(e.what());
    }
    return run;
}

std::uint64_t shared_prefix_flag(const CommonOptions& o, std::optional<std::uint64_t> prompt) {
    if (!o.prefix_hit_rate) return o.shared_prefix.value_or(0);
    if (o.shared_prefix)
        usage_error("--prefix-hit-rate", "--shared-prefix or --prefix-hit-rate, not both", "both");
    if (!prompt)
        usage_error("--prefix-hit-rate",
                    "--prompt-tokens as well (the rate is a share of each prompt)",
                    "no --prompt-tokens");
    return shared_prefix_of_hit_rate(Demand{.prompt_tokens = prompt}, *o.prefix_hit_rate,
                                     "--prefix-hit-rate");
}

std::optional<KvFormat> kv_flag(const CommonOptions& o) {
    if (!o.kv_dtype_given) return std::nullopt;
    return KvFormat(o.kv_dtype.front());
}

std::vector<std::optional<KvFormat>> kv_flags(const CommonOptions& o) {
    if (!o.kv_dtype_given) return {std::nullopt};
    std::vector<std::optional<KvFormat>> out;
    for (const KvDtype d : o.kv_dtype) out.emplace_back(KvFormat(d));
    return out;
}

std::optional<std::string> checkpoint_kv_note(const Model& m, Engine e, const ServedKv& kv,
                                              bool engine_named) {
    if (kv.source != KvSource::checkpoint) return std::nullopt;
    return fmt::format(
        "KV cache in {}: the checkpoint's {}, which {}'s default KV dtype follows ({}--kv-dtype "
        "bf16 for a 16-bit cache)",
        name(kv.format.dtype), checkpoint_kv_field(m.config().checkpoint), name(e),
        engine_named ? ""
                     : fmt::format("no engine named: vLLM {}'s; ", vllm_newest_release.text()));
}

ReplicaFlags parse_replica_flags(const CommonOptions& o) {
    ReplicaFlags f;
    f.layout = parse_layout(o);
    f.kv = kv_flag(o);
    f.weights = parse_weights(o);
    f.serving = parse_serving(o);
    f.context = o.context;
    f.concurrency = o.concurrency.value_or(1);
    f.split = parse_token_split(o);
    if (f.context) check_context_holds_split(*f.context, f.split);
    f.shared_prefix = shared_prefix_flag(o, f.split.prompt);
    f.run = parse_run_shape(o, f.split);
    f.import = import_options(o);
    return f;
}

void read_draft_model(ReplicaFlags& flags, const CommonOptions& o, const Context& ctx) {
    if (flags.serving.speculation.method == DraftMethod::draft_model)
        flags.serving.speculation.draft_model =
            resolve_model(o.draft_model, ctx, "--draft-model", flags.import).get();
}

void refuse_speculation_flags(const CommonOptions& o, std::string_view why) {
    const std::string expected = fmt::format("no speculative decoding ({})", why);
    if (o.speculative_method)
        usage_error("--speculative-method", expected, name(*o.speculative_method));
    if (o.num_speculative_tokens)
        usage_error("--num-speculative-tokens", expected,
                    std::to_string(*o.num_speculative_tokens));
    if (!o.draft_model.empty()) usage_error("--draft-model", expected, o.draft_model);
}

ReplicaRequest read_replica(const CommonOptions& o, const Context& ctx,
                            std::optional<ComputeDtype> compute) {
    // Flags first, so that a usage error is reported before any file is read.
    ReplicaFlags flags = parse_replica_flags(o);
    if (o.gpu.empty() && !flags.serving.kv_memory_per_gpu)
        usage_error("--gpu", "a GPU id or spec path (kvplan list gpus)", "");
    ResolvedModel model = resolve_model_flags(o, ctx, flags.import);
    read_draft_model(flags, o, ctx);
    ResolvedGpu gpu = resolve_gpu(o.gpu, ctx);
    Deployment d{.model = model.get(),
                 .gpu = gpu.spec,
                 .parallel = flags.layout.parallel(),
                 .gpus = flags.layout.gpus,
                 .weights = flags.weights,
                 .kv = flags.kv,
                 .serving = std::move(flags.serving)};
    if (auto note = checkpoint_kv_note(d.model, d.serving.engine, d.served_kv()))
        model.notes.push_back(std::move(*note));
    (void)Layout(d.model, d.parallel_config());  // InvalidLayout first
    // Requests of a stated split are sized at their own length unless --context says otherwise.
    const Demand demand{.context = demand_context(d.model.config(), flags.context,
                                                  flags.split.prompt, flags.split.output),
                        .concurrency = flags.concurrency,
                        .prompt_tokens = flags.split.prompt,
                        .output_tokens = flags.split.output,
                        .shared_prefix_tokens = flags.shared_prefix,
                        .run = flags.run};
    std::optional<CalibrationProfile> profile = read_profile_flag(o);
    if (profile) {
        const WeightOptions w = d.served_weights();
        d.serving = apply_profile(*profile, std::move(d.serving), o.profile, gpu.id,
                                  compute.value_or(matmul_compute(w, gpu.spec)));
    }
    std::string profile_path = profile ? o.profile : std::string();
    return {std::move(model), std::move(gpu),     std::move(d),
            demand,           std::move(profile), std::move(profile_path)};
}

void refuse_budget_flags_without_gpu(const CommonOptions& o) {
    const std::pair<const char*, bool> budget_flags[] = {
        {"--concurrency", o.concurrency.has_value()},
        {"--engine", o.engine.has_value()},
        {"--block-size", o.block_size.has_value()},
        {"--gpu-memory-utilization", o.gpu_memory_utilization.has_value()},
        {"--engine-version", o.engine_version.has_value()},
        {"--kv-memory", o.kv_memory.has_value()},
        {"--max-num-seqs", o.max_num_seqs.has_value()},
        {"--max-num-batched-tokens", o.max_num_batched_tokens.has_value()},
        {"--num-gpu-blocks-override", o.num_gpu_blocks_override.has_value()},
        {"--allow-long-context", o.allow_long_context},
        {"--enforce-eager", o.enforce_eager},
        {"--chunked-local-hybrid", o.chunked_local_hybrid.has_value()},
        {"--without-flashinfer", o.without_flashinfer.has_value()},
        {"--limit-mm-per-prompt", o.limit_mm_per_prompt.has_value()},
        {"--skip-mm-profiling", o.skip_mm_profiling},
        {"--speculative-method", o.speculative_method.has_value()},
        {"--num-speculative-tokens", o.num_speculative_tokens.has_value()},
        {"--draft-model", !o.draft_model.empty()},
        {"--shared-prefix", o.shared_prefix.has_value()},
        {"--gpus", o.gpus.has_value()}};
    for (const auto& [flag, given] : budget_flags)
        if (given)
            usage_error(flag, "--gpu as well (it shapes the budget, which needs a GPU)",
                        "no --gpu");
}

}  // namespace kvplan::cli
