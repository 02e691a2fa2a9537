// Deployment, its answer and kvplan.fit: the keywords straight into the library's Deployment and
// Demand, one kvplan::evaluate per call.

#include <kvplan/budget/lora.hpp>
#include <kvplan/engine/checkpoint_kv.hpp>
#include <kvplan/plan/check.hpp>
#include <kvplan/plan/commands.hpp>
#include <kvplan/roofline/step_cost.hpp>
#include <memory>
#include <utility>

#include "common.hpp"

namespace kvplan::python {

const ReplicaAnswer& PyAnswer::contexts() {
    if (!searched) {
        const ReplicaAnswer s =
            dep->engine
                ? evaluate(dep->deployment, a.demand, contexts_options, dep->prepared, *dep->engine)
                : evaluate(dep->deployment, a.demand, contexts_options, dep->prepared);
        a.max_context = s.max_context;
        a.max_context_at_limit = s.max_context_at_limit;
        a.longest_single_context = s.longest_single_context;
        a.longest_at_limit = s.longest_at_limit;
        searched = true;
    }
    return a;
}

namespace {

/// A count keyword of the parallel layout: an int in [1, 65,536].
std::uint32_t layout_count(py::handle h, std::string_view field, std::string_view unit) {
    return to_u32(h, field, unit, 1U << 16);
}

}  // namespace

Speculation speculation_of(const DeploymentArgs& x, Engine engine, const HfImportOptions& import) {
    Speculation sp;
    if (x.speculative_method.is_none()) {
        if (!x.num_speculative_tokens.is_none())
            usage("num_speculative_tokens", "speculative_method as well", "none given");
        if (!x.draft_model.is_none())
            usage("draft_model", "speculative_method='draft_model' as well", "none given");
        return sp;
    }
    const std::string method = to_text(x.speculative_method, "speculative_method");
    const auto m = parse_draft_method(method);
    if (!m)
        usage("speculative_method", "none, ngram, eagle, eagle3, mtp or draft_model",
              "'" + method + "'");
    sp.method = *m;
    if (sp.method != DraftMethod::none && (engine == Engine::sglang || engine == Engine::trtllm))
        usage("speculative_method",
              "engine 'vllm' or 'ideal' (speculative decoding is modelled as vLLM allocates for "
              "it)",
              std::string(name(engine)));
    if (sp.method == DraftMethod::draft_model) {
        if (x.draft_model.is_none())
            usage("draft_model", "a draft model with speculative_method='draft_model'",
                  "none given");
    } else if (!x.draft_model.is_none()) {
        usage("draft_model", "speculative_method='draft_model'", method);
    }
    const bool drafts = sp.method != DraftMethod::none;
    if (drafts && x.num_speculative_tokens.is_none())
        usage("num_speculative_tokens", "the tokens drafted per step with a drafter", "none given");
    if (!drafts && !x.num_speculative_tokens.is_none())
        usage("num_speculative_tokens", "a speculative_method that drafts", "none");
    if (drafts)
        sp.tokens = to_u32(x.num_speculative_tokens, "num_speculative_tokens", "tokens", 64);
    if (sp.method == DraftMethod::draft_model)
        sp.draft_model = as_model(x.draft_model, import)->get();
    return sp;
}

ParallelConfig parallel_of(const DeploymentArgs& x) {
    ParallelConfig p{.tp = layout_count(x.tp, "tp", "GPUs"),
                     .pp = layout_count(x.pp, "pp", "stages"),
                     .dp = layout_count(x.dp, "dp", "ranks"),
                     .ep = layout_count(x.ep, "ep", "GPUs"),
                     .dcp = layout_count(x.dcp, "dcp", "ranks")};
    if (!x.redundant_experts.is_none())
        p.redundant_experts =
            to_u32(x.redundant_experts, "redundant_experts", "experts", 1U << 16, 0);
    return p;
}

std::uint32_t gpu_count_of(const DeploymentArgs& x) {
    return x.gpus.is_none() ? 0 : layout_count(x.gpus, "gpus", "GPUs");
}

std::optional<WeightOptions> weights_of(const DeploymentArgs& x) {
    if (x.weight_dtype.is_none() && x.expert_dtype.is_none()) return std::nullopt;
    WeightOptions w;
    if (!x.weight_dtype.is_none()) w.format = to_weight_format(x.weight_dtype, "weight_dtype");
    if (!x.expert_dtype.is_none())
        w.expert_format = to_weight_format(x.expert_dtype, "expert_dtype");
    return w;
}

namespace {

/// limit_mm_per_prompt: images per prompt, an int >= 0 or vLLM's JSON as a dict, {"image": N}
/// (of the modalities, images alone are modelled).
std::uint32_t mm_images(py::handle h) {
    constexpr std::string_view field = "limit_mm_per_prompt";
    if (py::isinstance<py::dict>(h)) {
        const auto d = py::reinterpret_borrow<py::dict>(h);
        if (d.size() != 1 || !d.contains("image"))
            usage(field, "images per prompt: an int or {'image': N}", std::string(py::repr(h)));
        return to_u32(d["image"], field, "images", 0xFFFF'FFFFU, 0);
    }
    return to_u32(h, field, "images", 0xFFFF'FFFFU, 0);
}

/// The LoRA keywords, checked as the command line checks their flags (tools/kvplan/flags.cpp).
void lora_of(const DeploymentArgs& x, Serving& s) {
    if (!x.max_loras.is_none() && s.engine == Engine::trtllm)
        usage("max_loras",
              "engine 'vllm', 'sglang' or 'ideal' (TensorRT-LLM's LoRA cache is not modelled)",
              std::string(name(s.engine)));
    const bool fully_sharded = to_flag(x.fully_sharded_loras, "fully_sharded_loras");
    if (fully_sharded && s.engine == Engine::sglang)
        usage("fully_sharded_loras", "engine 'vllm' (SGLang has no such option)",
              std::string(name(s.engine)));
    if (x.max_loras.is_none()) {
        const char* given = !x.max_lora_rank.is_none()         ? "max_lora_rank"
                            : fully_sharded                    ? "fully_sharded_loras"
                            : !x.max_cpu_loras.is_none()       ? "max_cpu_loras"
                            : !x.lora_target_modules.is_none() ? "lora_target_modules"
                                                               : nullptr;
        if (given) usage(given, "max_loras as well (the adapter slots it describes)", "None");
        return;
    }
    LoraOptions& lora = s.reserve.lora;
    lora.max_loras = to_u32(x.max_loras, "max_loras", "adapters", 1U << 16);
    if (!x.max_lora_rank.is_none())
        lora.max_lora_rank = to_u32(x.max_lora_rank, "max_lora_rank", "", 1U << 16);
    lora.fully_sharded = fully_sharded;
    if (!x.max_cpu_loras.is_none()) {
        // Host memory only: checked as vLLM's LoRAConfig and SGLang's server_args check it.
        const std::uint32_t cpu = to_u32(x.max_cpu_loras, "max_cpu_loras", "adapters", 1U << 16);
        if (cpu < lora.max_loras)
            usage("max_cpu_loras", fmt::format("at least max_loras ({})", lora.max_loras),
                  std::to_string(cpu));
        lora.max_cpu_loras = cpu;
    }
    if (!x.lora_target_modules.is_none()) {
        // vLLM wraps every layer it supports whatever the adapters target: refused there
        // rather than ignored.
        if (s.engine != Engine::sglang)
            usage("lora_target_modules",
                  "engine 'sglang' (vLLM allocates LoRA stacks on every layer it supports, "
                  "whatever the adapters target)",
                  std::string(name(s.engine)));
        const std::string text = to_text(x.lora_target_modules, "lora_target_modules");
        try {
            lora.targets = lora_targets("lora_target_modules", text);  // the library's reading
        } catch (const InvalidInput& e) {
            throw UsageError(e.what());
        }
    }
}

}  // namespace

Serving serving_of(const DeploymentArgs& x) {
    Serving s;
    if (!x.engine.is_none()) s.engine = to_engine(x.engine, "engine");
    if (!x.block_size.is_none())
        s.block_size = to_u32(x.block_size, "block_size", "tokens", 1U << 20);
    if (!x.gpu_memory_utilization.is_none()) {
        if (s.engine == Engine::ideal)
            usage("gpu_memory_utilization",
                  "no fraction with engine 'ideal', which gives the cache every byte but the "
                  "weights",
                  std::string(py::repr(x.gpu_memory_utilization)));
        s.memory_fraction = to_fraction(x.gpu_memory_utilization, "gpu_memory_utilization");
    }
    if (!x.engine_version.is_none()) {
        const std::string v = to_text(x.engine_version, "engine_version");
        s.engine_version = parse_engine_version(v);
        if (!s.engine_version)
            usage("engine_version", "a release as X.Y or X.Y.Z ('0.10', '0.5.12')", "'" + v + "'");
    }
    if (!x.kv_memory.is_none()) s.kv_memory_per_gpu = to_size(x.kv_memory, "kv_memory");
    if (!x.max_num_seqs.is_none())
        s.max_sequences = to_count(x.max_num_seqs, "max_num_seqs", "sequences");
    if (!x.max_num_batched_tokens.is_none())
        s.max_num_batched_tokens =
            to_count(x.max_num_batched_tokens, "max_num_batched_tokens", "tokens");
    if (!x.num_gpu_blocks_override.is_none()) {
        if (s.engine != Engine::vllm)
            usage("num_gpu_blocks_override", "engine 'vllm' (it is vLLM's flag)",
                  std::string(name(s.engine)));
        s.num_gpu_blocks =
            to_count(x.num_gpu_blocks_override, "num_gpu_blocks_override", "blocks", 2);
    }
    const bool skip_mm = to_flag(x.skip_mm_profiling, "skip_mm_profiling");
    if ((!x.limit_mm_per_prompt.is_none() || skip_mm) && s.engine != Engine::vllm)
        usage(!x.limit_mm_per_prompt.is_none() ? "limit_mm_per_prompt" : "skip_mm_profiling",
              "engine 'vllm' (it is vLLM's flag)", std::string(name(s.engine)));
    if (!x.limit_mm_per_prompt.is_none())
        s.reserve.encoder_cache.items_per_prompt = mm_images(x.limit_mm_per_prompt);
    s.reserve.encoder_cache.skip_profiling = skip_mm;
    lora_of(x, s);
    s.allow_long_context = to_flag(x.allow_long_context, "allow_long_context");
    s.enforce_eager = to_flag(x.enforce_eager, "enforce_eager");
    s.chunked_local_hybrid = to_switch(x.chunked_local_hybrid, "chunked_local_hybrid");
    s.without_flashinfer = to_switch(x.without_flashinfer, "without_flashinfer");
    return s;
}

Deployment deployment_of(const DeploymentArgs& x, std::shared_ptr<PyModel>& model,
                         std::shared_ptr<PyGpu>& gpu, std::string& profile_path) {
    // Every keyword first, as the command line parses its flags: a usage error before any file
    // is read.
    const ParallelConfig parallel = parallel_of(x);
    const std::uint32_t gpus = gpu_count_of(x);
    // None: what the engine's "auto" stores for the checkpoint, which the library resolves.
    std::optional<KvFormat> kv = to_kv_choice(x.kv_dtype, "kv_dtype");
    std::optional<WeightOptions> weights = weights_of(x);
    Serving serving = serving_of(x);
    profile_path = x.profile.is_none() ? "" : path_text(x.profile, "profile");
    // A knob the engine cannot take (vLLM's block sizes, a release outside its table) before any
    // file is read; the library's InvalidInputError names it.
    (void)resolve_serving(serving);
    model = as_model(x.model);
    serving.speculation = speculation_of(x, serving.engine, {});
    gpu = as_gpu(x.gpu);
    Deployment d{.model = model->get(),
                 .gpu = gpu->spec,
                 .parallel = parallel,
                 .gpus = gpus,
                 .weights = std::move(weights),
                 .kv = kv,
                 .serving = std::move(serving)};
    if (!profile_path.empty()) {
        const CalibrationProfile p = load_profile(profile_path);
        const WeightOptions w = d.served_weights();
        d.serving = apply_profile(p, std::move(d.serving), profile_path, gpu->id,
                                  matmul_compute(w, gpu->spec));
    }
    return d;
}

namespace {

/// The answer at `demand`: the decode bound from the prepared costs where there are some.
std::unique_ptr<PyAnswer> answer_at(const std::shared_ptr<PyDeployment>& d, const Demand& demand) {
    const EvaluateOptions& o = d->decode_costs ? prepared_options : fast_options;
    auto out = std::make_unique<PyAnswer>(
        std::in_place,
        [&] {
            return d->engine ? evaluate(d->deployment, demand, o, d->prepared, *d->engine)
                             : evaluate(d->deployment, demand, o, d->prepared);
        },
        d);
    if (!d->decode_costs) return out;
    // What evaluate() sets with options.decode, from the same costs, batch and context.
    out->a.decode = decode_point(*d->decode_costs, out->a.concurrency_per_replica, demand.context);
    return out;
}

/// A deployment and what it prepares once, its counts left for its first answer to set.
std::shared_ptr<PyDeployment> prepared_deployment(const DeploymentArgs& x) {
    std::shared_ptr<PyModel> model;
    std::shared_ptr<PyGpu> gpu;
    std::string profile_path;
    Deployment d = deployment_of(x, model, gpu, profile_path);
    const std::uint64_t limit = context_limit(model->get().config()).tokens;
    // The layout checked (InvalidLayout) and prepared before any figure.
    PreparedLayout prepared = prepare_layout(d);
    return std::make_shared<PyDeployment>(PyDeployment{std::move(model), std::move(gpu),
                                                       std::move(d), std::move(prepared), limit,
                                                       std::move(profile_path)});
}

void set_counts(PyDeployment& d, const ReplicaAnswer& a) {
    d.replica_gpus = a.replica_gpus;
    d.gpus = a.gpus;
    d.replicas = a.replicas;
}

}  // namespace

std::optional<DecodeCosts> prepare_decode(const Deployment& d, const PreparedLayout& prepared) {
    // As evaluate() has it: the GPU's figures judged on the replica evaluated (its cache as the
    // engine stores it), the costs of the model's own step (a drafter's layers left out).
    const Replica r = detail::prepared_replica(d, prepared);
    const RooflineOptions o = fast_options.roofline;
    const bool has_figures = r.gpu.memory_bandwidth > BytesPerSecond{} &&
                             r.gpu.dense(*with_compute(o, r).compute).has_value();
    if (!has_figures) return std::nullopt;
    try {
        if (!prepared.step)
            return detail::decode_costs_with(r, prepared.layout, prepared.stage_weights,
                                             prepared.matmul, o);
        const PreparedStep& own = *prepared.step;
        const Replica plain{.model = d.model,
                            .gpu = d.gpu,
                            .parallel = own.parallel,
                            .weights = prepared.weights,
                            .kv = d.kv_format()};
        return detail::decode_costs_with(plain, own.layout, own.stage_weights, own.matmul, o);
    } catch (const Error&) {
        return std::nullopt;  // evaluate() raises it, at the demand that asks
    }
}

std::shared_ptr<PyDeployment> deployment_from(const DeploymentArgs& x) {
    std::shared_ptr<PyDeployment> d = prepared_deployment(x);
    // Kept for every evaluation; kvplan.fit, which evaluates once, leaves them to evaluate().
    d->decode_costs = prepare_decode(d->deployment, d->prepared);
    // What evaluate() refuses of the deployment itself (a GPU count, an engine knob, a GPU
    // without memory) raised now, at a demand that cannot fail.
    set_counts(*d, evaluate(d->deployment, {.context = 1}, budget_options, d->prepared));
    d->engine = prepare_engine(d->deployment, d->prepared);
    return d;
}

Demand demand_of(std::uint64_t default_context, py::handle context, py::handle concurrency,
                 py::handle prompt_tokens, py::handle output_tokens,
                 py::handle shared_prefix_tokens, py::handle prefix_hit_rate,
                 py::handle length_spread, py::handle num_prompts, py::handle fixed_lengths) {
    Demand demand;
    if (prompt_tokens.is_none() != output_tokens.is_none())
        usage(prompt_tokens.is_none() ? "prompt_tokens" : "output_tokens",
              fmt::format("a token count beside {} (the latency estimate needs both parts of a "
                          "request)",
                          prompt_tokens.is_none() ? "output_tokens" : "prompt_tokens"),
              "None");
    // The request's length is the library's sum (TokenSplit::tokens: an overflow is its error).
    std::optional<std::uint64_t> request;
    if (!prompt_tokens.is_none()) {
        demand.prompt_tokens = to_tokens(prompt_tokens, "prompt_tokens");
        demand.output_tokens = to_tokens(output_tokens, "output_tokens");
        request = TokenSplit{*demand.prompt_tokens, *demand.output_tokens}.tokens();
    }
    // context: else the split's sum, else the model's limit.
    if (!context.is_none()) {
        demand.context = to_tokens(context, "context");
        if (request && demand.context < *request)
            usage("context",
                  fmt::format("at least prompt_tokens + output_tokens = {} tokens", *request),
                  grouped(demand.context));
    } else {
        demand.context = request.value_or(default_context);
    }
    demand.concurrency = to_count(concurrency, "concurrency", "sequences");
    // Past the context or the prompt: the library's InvalidInputError.
    if (!shared_prefix_tokens.is_none())
        demand.shared_prefix_tokens = to_tokens(shared_prefix_tokens, "shared_prefix_tokens");
    if (!prefix_hit_rate.is_none()) {
        // As kvplan fit --prefix-hit-rate: a share of every prompt, in whole tokens.
        const double rate = to_share(prefix_hit_rate, "prefix_hit_rate");
        if (!shared_prefix_tokens.is_none())
            usage("prefix_hit_rate", "shared_prefix_tokens or prefix_hit_rate, not both", "both");
        if (!demand.prompt_tokens)
            usage("prefix_hit_rate", "prompt_tokens as well (the rate is a share of each prompt)",
                  "None");
        demand.shared_prefix_tokens = shared_prefix_of_hit_rate(demand, rate, "prefix_hit_rate");
    }
    // As --length-spread, --num-prompts and --fixed-lengths: the run the estimate times, with the
    // split it shapes.
    if (!length_spread.is_none())
        demand.run.length_spread = to_share(length_spread, "length_spread");
    if (!num_prompts.is_none())
        demand.run.requests = to_count(num_prompts, "num_prompts", "requests");
    demand.run.fixed_lengths = to_flag(fixed_lengths, "fixed_lengths");
    if (demand.run.given() && !demand.prompt_tokens)
        usage(!num_prompts.is_none()            ? "num_prompts"
              : demand.run.length_spread != 0.0 ? "length_spread"
                                                : "fixed_lengths",
              "prompt_tokens and output_tokens as well (the load the estimate runs)", "None");
    // Fixed lengths with a spread: the library's refusal, a UsageError as the CLI's exit 2.
    try {
        check_run_lengths(demand.run, "");
    } catch (const InvalidInput& e) {
        throw UsageError(e.what());
    }
    return demand;
}

namespace {

/// The KV tiers the keywords name, as kvplan fit's --host-kv (or vLLM's --kv-offloading-size, a
/// number of GiB), --nvme-kv and --remote-kv read them: each a size per replica.
TierSizes tiers_of(py::handle host, py::handle offloading, py::handle nvme, py::handle remote) {
    TierSizes t;
    if (!host.is_none() && !offloading.is_none())
        usage("kv_offloading_size", "host_kv or kv_offloading_size, not both (the same memory)",
              "both");
    if (!host.is_none()) t.host = to_size(host, "host_kv");
    if (!offloading.is_none()) {
        // vLLM's own: GiB as a number (vllm/config/cache.py, CacheConfig.kv_offloading_size),
        // read as --kv-offloading-size reads it.
        const double gib = to_positive(offloading, "kv_offloading_size");
        t.host = to_size(py::str(fmt::format("{}GiB", gib)), "kv_offloading_size");
    }
    if (!nvme.is_none()) t.nvme = to_size(nvme, "nvme_kv");
    if (!remote.is_none()) t.remote = to_size(remote, "remote_kv");
    return t;
}

/// The tiers' figures beside the answer (kvplan::kv_tiers), refused as kvplan fit refuses them.
void attach_tiers(PyAnswer& out, const TierSizes& t) {
    if (!t.host && !t.nvme && !t.remote) return;
    const ReplicaAnswer& a = out.a;
    if (const auto problem = tier_problem(a, t))
        usage(problem->tier == Tier::host   ? "host_kv"
              : problem->tier == Tier::nvme ? "nvme_kv"
                                            : "remote_kv",
              problem->expected, problem->found);
    out.tiers = t;
    out.tier_answer = kv_tiers(a, t);
}

// The answer is built where Python keeps it: returned by value, pybind11 would move it (some 13 KB)
// into a fresh allocation, and building it with new as an aggregate zeroes it first; each cost
// an eighth of an evaluation's instructions.
std::unique_ptr<PyAnswer> evaluate_demand(const std::shared_ptr<PyDeployment>& d,
                                          py::handle context, py::handle concurrency,
                                          py::handle prompt_tokens, py::handle output_tokens,
                                          py::handle shared_prefix_tokens,
                                          py::handle prefix_hit_rate, py::handle host_kv,
                                          py::handle kv_offloading_size, py::handle nvme_kv,
                                          py::handle remote_kv, py::handle length_spread,
                                          py::handle num_prompts, py::handle fixed_lengths) {
    const Demand demand =
        demand_of(d->default_context, context, concurrency, prompt_tokens, output_tokens,
                  shared_prefix_tokens, prefix_hit_rate, length_spread, num_prompts, fixed_lengths);
    const TierSizes tiers = tiers_of(host_kv, kv_offloading_size, nvme_kv, remote_kv);
    std::unique_ptr<PyAnswer> out = answer_at(d, demand);
    attach_tiers(*out, tiers);
    return out;
}

/// kvplan.fit: a deployment from the keywords and its answer at one demand, in one call. The
/// demand is read before the deployment is built, and the deployment is not checked at a second
/// demand: one evaluate.
std::unique_ptr<PyAnswer> fit(const DeploymentArgs& x, py::handle context, py::handle concurrency,
                              py::handle prompt_tokens, py::handle output_tokens,
                              py::handle shared_prefix_tokens, py::handle prefix_hit_rate,
                              const TierSizes& tiers, py::handle length_spread,
                              py::handle num_prompts, py::handle fixed_lengths) {
    std::shared_ptr<PyDeployment> d = prepared_deployment(x);
    const Demand demand =
        demand_of(d->default_context, context, concurrency, prompt_tokens, output_tokens,
                  shared_prefix_tokens, prefix_hit_rate, length_spread, num_prompts, fixed_lengths);
    std::unique_ptr<PyAnswer> out = answer_at(d, demand);
    set_counts(*d, out->a);
    attach_tiers(*out, tiers);
    return out;
}

/// A second figure of the latency estimate, or None without one.
py::object estimate_seconds(const ReplicaAnswer& a, Seconds LatencyEstimate::*f) {
    if (!a.estimate) return py::none();
    return py::float_(((*a.estimate).*f).in(seconds));
}

py::object optional_count(const std::optional<std::uint64_t>& v) {
    return v ? py::object(py::int_(*v)) : py::object(py::none());
}

std::string seconds_text(Seconds t) { return fmt::format("{}", t); }

std::string deployment_repr(const PyDeployment& d) {
    const Deployment& x = d.deployment;
    const ParallelConfig& p = x.parallel;
    std::string s =
        fmt::format("<kvplan.Deployment {} on {} x {} (", d.model->id, d.gpus, d.gpu->id);
    if (p.dp > 1) s += fmt::format("dp {} x ", p.dp);
    s += fmt::format("tp {} x pp {}", p.tp, p.pp);
    if (p.ep > 1) s += fmt::format(", ep {}", p.ep);
    if (p.dcp > 1) s += fmt::format(", dcp {}", p.dcp);
    if (d.replicas > 1) s += fmt::format(", {} replicas", d.replicas);
    s += fmt::format("), KV {}, {}>", name(x.kv_format().dtype), name(x.serving.engine));
    return s;
}

std::string answer_repr(const PyAnswer& x) {
    const ReplicaAnswer& a = x.a;
    if (!a.starts())
        return fmt::format("<kvplan.ReplicaAnswer does not start: {}>", name(a.refusal));
    return fmt::format("<kvplan.ReplicaAnswer {}: {} x {} tokens on {} x {}, max_concurrency {}>",
                       a.fits() ? "fits" : "does not fit", grouped(a.demand.concurrency),
                       grouped(a.demand.context), a.gpus, x.dep->gpu->id,
                       grouped(a.total_max_concurrency));
}

}  // namespace

namespace docs {

constexpr const char* deployment_doc = R"(A model served on GPUs, prepared for many evaluations.

model and gpu are kvplan.Model and kvplan.Gpu objects, or what their constructors take.
Every keyword is the kvplan fit flag of the same name and reads its value the same way (None:
the flag's default); dp, ep and dcp are the library's parallel layout, read in the engine's
flags (the command line's plan searches them). The keywords (kvplan.fit takes them all; the
other functions the ones of their subcommand):

)";

constexpr const char* deployment_doc_end = R"(
Construction checks the deployment (the layout, the engine's knobs) and computes once what
no GPU or demand changes: the layout, each stage's weights and matmul shapes, the drafter.
Then evaluate(context, concurrency) answers in microseconds, with the figures kvplan.fit
gives.

Raises kvplan.UsageError for a value a flag would refuse (naming the keyword),
kvplan.InvalidLayoutError for a layout the model cannot take, kvplan.InvalidInputError for a
knob the engine cannot take.)";

constexpr const char* evaluate_doc =
    R"(evaluate($self, /, context=None, concurrency=1, *, prompt_tokens=None, output_tokens=None,
         shared_prefix_tokens=None, prefix_hit_rate=None, host_kv=None, kv_offloading_size=None,
         nvme_kv=None, remote_kv=None, length_spread=None, num_prompts=None, fixed_lengths=False)
--

The replica's answer for a demand: a kvplan.ReplicaAnswer.

context: tokens per sequence (prompt and output together), an int or a count as
  --context reads it ("8k" = 8,000, "8K" = 8,192); None: prompt_tokens + output_tokens
  when given, else the model's context limit.
concurrency: sequences held at once over every replica.
prompt_tokens, output_tokens: every request's prompt and output (both or neither), as
  --prompt-tokens and --output-tokens: the answer then carries the latency estimate at each
  replica's load (estimate, itl_estimate_seconds, ttft_estimate_seconds...) beside the bound.
shared_prefix_tokens: the prompt prefix every request starts with (a system prompt), as
  --shared-prefix: its full blocks are held once, and the answer's max_concurrency counts it
  (max_concurrency_without_sharing, shared_prefix_blocks_saved... say what it changed).
prefix_hit_rate: the shared prefix as a share of prompt_tokens (0 to 1), as --prefix-hit-rate:
  that share of each prompt, in whole tokens, instead of shared_prefix_tokens.
host_kv, nvme_kv, remote_kv: KV tiers beside the GPUs, a size per replica each, as kvplan
  fit's --host-kv (host DRAM over each GPU's PCIe), --nvme-kv (one PCIe Gen4 x4 drive) and
  --remote-kv (RDMA, InfiniBand NDR a NIC per GPU); kv_offloading_size: vLLM's flag, host
  DRAM in GiB as a number (host_kv's memory, in the vLLM command). The answer's kv_tiers
  gives what each holds and one sequence coming back against recomputing it.
length_spread: each request's lengths drawn uniformly within +-spread of prompt_tokens and
  output_tokens (0 to 1), as --length-spread (vllm bench serve --random-range-ratio r: r;
  sglang.bench_serving's default: 1).
num_prompts: the run's requests, its clients all started at once, as --num-prompts: the
  estimate times that run (the first wave's wait, the last requests' drain), not the steady
  state alone.
fixed_lengths: every request exactly prompt_tokens in and output_tokens out, as
  --fixed-lengths (sglang.bench_serving --random-range-ratio 1, vllm bench serve's default
  range ratio 0, a fixed-length dataset): the clients stay in step. Refused with a nonzero
  length_spread (kvplan.UsageError).

Every figure is kvplan.fit's for the same inputs. max_context and longest_single_context
are searched on first read (a binary search over the engine's cache).

Raises kvplan.UsageError for a context or concurrency below 1, one of prompt_tokens and
output_tokens without the other, or a context shorter than the two.)";

constexpr const char* answer_doc =
    R"(Every figure of a deployment under a demand, as kvplan fit gives it.

Attributes carry the names of kvplan fit's JSON keys (bytes as ints, seconds as floats), and
a few more: fits, refusal, verdict, heading, notes, gpu_memory_bytes, fraction_bytes,
weight_bytes_per_gpu (as loaded), weight_bytes_checkpoint_per_gpu, activation_bytes,
cuda_graph_bytes, cuda_context_bytes, comm_buffer_bytes, kv_budget_bytes_per_gpu,
kv_bytes_per_sequence_per_gpu, kv_bytes_needed_per_gpu, headroom_bytes_per_gpu, shortfall_bytes_per_gpu,
kv_tokens_capacity, num_gpu_blocks, max_concurrency, max_concurrency_ratio, sequence_cap,
admitted_sequences, total_max_concurrency, max_context, longest_single_context,
estimated_max_model_len, context_limit_tokens, tpot_seconds, and decode (a DecodePoint); with
a shared prefix, shared_prefix_tokens, shared_prefix_blocks, shared_prefix_blocks_saved,
shared_prefix_bytes_saved, max_concurrency_without_sharing, shared_prefix_concurrency_added.

Where fit's JSON leaves a key out, the attribute is None: fraction_bytes with kv_memory,
the reserve terms under the ideal engine, num_gpu_blocks outside vLLM, tpot_seconds when
the GPU lacks the roofline's figures. Both headroom and shortfall are given (one is 0).)";

constexpr const char* fit_doc =
    R"(Does a workload fit a replica? kvplan fit in one call: a kvplan.ReplicaAnswer.

model and gpu are kvplan.Model and kvplan.Gpu objects or what their constructors take (a
bundled id is read once and kept, so naming it again costs a look-up); every other keyword
is kvplan.Deployment's and kvplan.Deployment.evaluate's. The figures are kvplan fit's.

Example:

>>> kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k",
...            concurrency=48).max_concurrency
61

Raises kvplan.UsageError for a keyword's value it cannot take, kvplan.InvalidLayoutError
for a layout the model cannot take, kvplan.InvalidInputError for an unknown model or GPU or
a knob the engine cannot take.)";

}  // namespace docs

void bind_deployment(py::module_& m) {
    using namespace docs;
    // Deployment ---------------------------------------------------------------------------
    const std::vector<std::string_view> every = every_deployment_keyword();
    // Leaked: the bound functions use them for the module's life.
    const auto* init_signature =
        new Signature("Deployment.__init__", 2, {deploy("model"), deploy("gpu")}, every, true);
    const std::string class_doc =
        std::string(deployment_doc) + keyword_docs(every) + deployment_doc_end;
    py::class_<PyDeployment, std::shared_ptr<PyDeployment>>(m, "Deployment", class_doc.c_str())
        .def(py::init([init_signature](const py::args& args, const py::kwargs& kwargs) {
                 return deployment_from(Call(*init_signature, args, kwargs).deployment());
             }),
             init_signature->doc("Checks and prepares the deployment (see the class).").c_str())
        .def("evaluate", &evaluate_demand, py::arg("context") = py::none(),
             py::arg("concurrency") = 1, py::kw_only(), py::arg("prompt_tokens") = py::none(),
             py::arg("output_tokens") = py::none(), py::arg("shared_prefix_tokens") = py::none(),
             py::arg("prefix_hit_rate") = py::none(), py::arg("host_kv") = py::none(),
             py::arg("kv_offloading_size") = py::none(), py::arg("nvme_kv") = py::none(),
             py::arg("remote_kv") = py::none(), py::arg("length_spread") = py::none(),
             py::arg("num_prompts") = py::none(), py::arg("fixed_lengths") = false, evaluate_doc)
        .def("roofline", &make_roofline, py::arg("compute_dtype") = py::none(),
             "roofline($self, /, compute_dtype=None)\n--\n\nThe decode and prefill bounds of "
             "this deployment, matmuls in `compute_dtype` (None: the type its weights run in, "
             "as kvplan roofline without --compute-dtype): a kvplan.Roofline.")
        .def("block_pool", &engine_pool, py::arg("context") = py::none(), py::kw_only(),
             py::arg("policy") = "engine",
             R"(block_pool($self, /, context=None, *, policy='engine')
--

The block pool the engine builds for sequences of `context` tokens (vLLM's
max_model_len; None: the model's limit): a kvplan.BlockPool. vLLM and SGLang only.
Raises kvplan.InvalidInputError when the engine does not start.)")
        .def_property_readonly("model", [](const PyDeployment& d) { return d.model; })
        .def_property_readonly("gpu", [](const PyDeployment& d) { return d.gpu; })
        .def_property_readonly("tp", [](const PyDeployment& d) { return d.deployment.parallel.tp; })
        .def_property_readonly("pp", [](const PyDeployment& d) { return d.deployment.parallel.pp; })
        .def_property_readonly(
            "dp", [](const PyDeployment& d) { return d.deployment.parallel.dp; },
            "Attention data-parallel ranks, in the engine's flags.")
        .def_property_readonly(
            "ep", [](const PyDeployment& d) { return d.deployment.parallel.ep; },
            "GPUs the routed experts spread over (1: none).")
        .def_property_readonly(
            "dcp", [](const PyDeployment& d) { return d.deployment.parallel.dcp; },
            "Ranks each sequence's tokens split over (vLLM's decode context parallelism).")
        .def_property_readonly(
            "replica_gpus", [](const PyDeployment& d) { return d.replica_gpus; },
            "GPUs of one replica: tp x pp, times dp under vLLM's rules.")
        .def_property_readonly(
            "gpus", [](const PyDeployment& d) { return d.gpus; }, "Every GPU deployed.")
        .def_property_readonly(
            "replicas", [](const PyDeployment& d) { return d.replicas; }, "gpus / replica_gpus.")
        .def_property_readonly(
            "speculative_method",
            [](const PyDeployment& d) -> py::object {
                const DraftMethod m = d.deployment.serving.speculation.method;
                if (m == DraftMethod::none) return py::none();
                return py::str(name(m));
            },
            "vLLM's speculative_config method, or None.")
        .def_property_readonly(
            "kv_dtype", [](const PyDeployment& d) { return name(d.deployment.kv_format().dtype); })
        .def_property_readonly(
            "engine",
            [](const PyDeployment& d) { return std::string(name(d.deployment.serving.engine)); })
        .def_property_readonly(
            "context_limit_tokens", [](const PyDeployment& d) { return d.default_context; },
            "The model's limit, the context evaluate() takes by default.")
        .def("__repr__", &deployment_repr);

    const auto* fit_signature =
        new Signature("fit", 2,
                      {deploy("model"), deploy("gpu"), own("context", py::none()),
                       own("concurrency", py::int_(1)), own("prompt_tokens", py::none()),
                       own("output_tokens", py::none()), own("shared_prefix_tokens", py::none()),
                       own("prefix_hit_rate", py::none()), own("host_kv", py::none()),
                       own("kv_offloading_size", py::none()), own("nvme_kv", py::none()),
                       own("remote_kv", py::none()), own("length_spread", py::none()),
                       own("num_prompts", py::none()), own("fixed_lengths", py::bool_(false))},
                      every);
    m.def(
        "fit",
        [fit_signature](const py::args& args, const py::kwargs& kwargs) {
            const Call c(*fit_signature, args, kwargs);
            return fit(
                c.deployment(), c["context"], c["concurrency"], c["prompt_tokens"],
                c["output_tokens"], c["shared_prefix_tokens"], c["prefix_hit_rate"],
                tiers_of(c["host_kv"], c["kv_offloading_size"], c["nvme_kv"], c["remote_kv"]),
                c["length_spread"], c["num_prompts"], c["fixed_lengths"]);
        },
        fit_signature->doc(fit_doc).c_str());

    // ReplicaAnswer ------------------------------------------------------------------------
    using A = PyAnswer;
    const auto mem = [](const A& x) -> const EngineMemory& { return x.a.memory(); };
    const auto reserve = [mem](const A& x, Bytes EngineMemory::*f) -> py::object {
        if (x.a.serving.engine == Engine::ideal) return py::none();
        return py::int_(((mem(x)).*f).count());
    };
    py::class_<A>(m, "ReplicaAnswer", answer_doc)
        .def_property_readonly(
            "fits", [](const A& x) { return x.a.fits(); },
            "The engine starts and every replica together holds the demand.")
        .def_property_readonly(
            "starts", [](const A& x) { return x.a.starts(); },
            "The engine accepts the configuration.")
        .def_property_readonly(
            "refusal", [](const A& x) { return std::string(name(x.a.refusal)); },
            "Why the engine does not start: none, context_limit, kv_dtype, quantization_block, "
            "weights, outside_fraction, request or cache.")
        .def_property_readonly(
            "refusal_reason", [](const A& x) { return detail::check::refusal_reason(x.a); },
            "Why the engine does not start, in a sentence ('' when it starts).")
        .def(
            "serve_command",
            [](const A& x, py::handle model) {
                if (!x.a.starts())
                    throw InvalidInput(detail::text(
                        "serve_command: expected an engine that starts, found ", name(x.a.refusal),
                        " (", detail::check::refusal_reason(x.a), ")"));
                CommandOptions o;
                if (!model.is_none()) o.model = to_text(model, "model");
                o.kv_offloading = x.tiers.host;  // vLLM's --kv-offloading-size, with host_kv
                return serve_command(x.a, o).line();
            },
            py::arg("model") = py::none(),
            "serve_command($self, /, model=None)\n--\n\nThe command line that starts the engine "
            "as this answer sized it (vLLM, SGLang or TensorRT-LLM; the head node's when the "
            "replica spans nodes; TensorRT-LLM's may name extra_llm_api_options.yaml, whose "
            "content extra_llm_api_options() gives); model: what the engine loads (None: the "
            "config's name). Raises kvplan.InvalidInputError for the ideal profile.")
        .def(
            "extra_llm_api_options",
            [](const A& x) {
                if (!x.a.starts())
                    throw InvalidInput(detail::text(
                        "extra_llm_api_options: expected an engine that starts, found ",
                        name(x.a.refusal), " (", detail::check::refusal_reason(x.a), ")"));
                return serve_command(x.a).extra_options;
            },
            "extra_llm_api_options($self, /)\n--\n\nThe YAML of the file TensorRT-LLM's "
            "serve_command() names with --extra_llm_api_options (extra_llm_api_options.yaml: one "
            "flow mapping, what trtllm-serve has no flag for, as kvplan fit prints it); '' when "
            "the command names no file (vLLM and SGLang always). Raises kvplan.InvalidInputError "
            "as serve_command() does.")
        .def_property_readonly(
            "kv_tiers",
            [](const A& x) {
                py::list out;
                if (!x.tier_answer) return out;
                const TierAnswer& t = *x.tier_answer;
                constexpr const char* tier_names[] = {"host", "nvme", "remote"};
                const auto optional_float = [](const auto& v) -> py::object {
                    return v ? py::object(py::float_(v.value())) : py::object(py::none());
                };
                for (std::uint32_t i = 0; i < t.num_tiers; ++i) {
                    const TierFigures& f = t.tiers[i];
                    out.append(py::dict(
                        py::arg("tier") = tier_names[static_cast<int>(f.tier)],
                        py::arg("size_bytes") = f.size.count(), py::arg("sequences") = f.sequences,
                        py::arg("link") = std::string(f.back.link.name),
                        py::arg("link_bytes_per_second") = f.back.link.bandwidth.in(B_per_s),
                        py::arg("back_seconds") = f.back.time.in(seconds),
                        py::arg("recompute_seconds") =
                            t.recompute ? py::object(py::float_(t.recompute->in(seconds)))
                                        : py::object(py::none()),
                        py::arg("back_over_recompute") = optional_float(f.versus_recompute)));
                }
                return out;
            },
            "With host_kv, nvme_kv or remote_kv: each tier as kvplan fit's kv_tiers rows (tier, "
            "size_bytes, sequences of the context it holds, link, link_bytes_per_second, "
            "back_seconds for one sequence, recompute_seconds, back_over_recompute); else [].")
        .def_property_readonly("context_tokens", [](const A& x) { return x.a.demand.context; })
        .def_property_readonly("concurrency", [](const A& x) { return x.a.demand.concurrency; })
        .def_property_readonly("gpus", [](const A& x) { return x.a.gpus; })
        .def_property_readonly("replicas", [](const A& x) { return x.a.replicas; })
        .def_property_readonly("concurrency_per_replica",
                               [](const A& x) { return x.a.concurrency_per_replica; })
        .def_property_readonly(
            "block_size", [](const A& x) { return x.a.serving.block_size; },
            "Tokens per KV block the engine pages in.")
        .def_property_readonly(
            "engine_version",
            [](const A& x) -> py::object {
                if (x.a.serving.engine == Engine::sglang)
                    return py::str(x.a.serving.sglang_release.text());
                if (x.a.serving.engine != Engine::vllm) return py::none();
                return py::str(x.a.serving.engine_version.text());
            },
            "The vLLM or SGLang release whose defaults apply (None for other engines).")
        .def_property_readonly(
            "gpu_memory_utilization",
            [](const A& x) -> py::object {
                if (x.a.serving.engine != Engine::vllm) return py::none();
                return py::float_(x.a.serving.budget.utilization);
            },
            "The fraction of GPU memory vLLM takes (None for other engines).")
        .def_property_readonly(
            "attention_backend",
            [](const A& x) -> py::object {
                if (x.a.serving.engine != Engine::vllm || !x.a.serving.backend) return py::none();
                return py::str(std::string(name(x.a.serving.backend->backend)));
            },
            "vLLM's attention backend for this model on this GPU (None where not chosen).")
        .def_property_readonly("limiting_stage", [](const A& x) { return x.a.limiting_stage; })
        .def_property_readonly("gpu_memory_bytes",
                               [mem](const A& x) { return mem(x).memory_total.count(); })
        .def_property_readonly("fraction_bytes",
                               [mem](const A& x) -> py::object {
                                   if (x.a.kv_given) return py::none();
                                   return py::int_(mem(x).fraction_bytes.count());
                               })
        .def_property_readonly("weight_bytes_per_gpu",
                               [mem](const A& x) { return mem(x).weights.count(); })
        .def_property_readonly("weight_bytes_checkpoint_per_gpu",
                               [](const A& x) { return x.a.weights_checkpoint_per_gpu.count(); })
        .def_property_readonly(
            "activation_bytes",
            [reserve](const A& x) { return reserve(x, &EngineMemory::activation); })
        .def_property_readonly(
            "cuda_graph_bytes",
            [reserve](const A& x) { return reserve(x, &EngineMemory::cuda_graphs); })
        .def_property_readonly(
            "cuda_context_bytes",
            [reserve](const A& x) { return reserve(x, &EngineMemory::cuda_context); })
        .def_property_readonly(
            "comm_buffer_bytes",
            [reserve](const A& x) { return reserve(x, &EngineMemory::comm_buffers); })
        .def_property_readonly(
            "nccl_nvls_bytes",
            [reserve](const A& x) { return reserve(x, &EngineMemory::nccl_nvls); })
        .def_property_readonly(
            "torch_nccl_communicator_bytes",
            [reserve](const A& x) { return reserve(x, &EngineMemory::torch_nccl_communicator); })
        .def_property_readonly(
            "fusion_workspace_bytes",
            [reserve](const A& x) { return reserve(x, &EngineMemory::fusion_workspace); })
        .def_property_readonly(
            "cublas_workspace_bytes",
            [reserve](const A& x) { return reserve(x, &EngineMemory::cublas_workspace); })
        .def_property_readonly(
            "encoder_cache_bytes",
            [reserve](const A& x) { return reserve(x, &EngineMemory::encoder_cache); })
        .def_property_readonly("lora_bytes",
                               [reserve](const A& x) { return reserve(x, &EngineMemory::lora); })
        .def_property_readonly("kv_budget_bytes_per_gpu",
                               [](const A& x) { return x.a.kv_budget.count(); })
        .def_property_readonly("kv_bytes_per_sequence_per_gpu",
                               [](const A& x) { return x.a.kv_per_sequence.count(); })
        .def_property_readonly("kv_bytes_needed_per_gpu",
                               [](const A& x) { return x.a.kv_needed.count(); })
        .def_property_readonly("headroom_bytes_per_gpu",
                               [](const A& x) { return x.a.headroom.count(); })
        .def_property_readonly("shortfall_bytes_per_gpu",
                               [](const A& x) { return x.a.shortfall.count(); })
        .def_property_readonly(
            "kv_tokens_capacity", [](const A& x) { return optional_count(x.a.kv_tokens); },
            "The engine's KV token figure; None: nothing grows with the context.")
        .def_property_readonly(
            "num_gpu_blocks",
            [](const A& x) -> py::object {
                if (x.a.serving.engine != Engine::vllm || !x.a.report.vllm.refused.empty())
                    return py::none();
                return py::int_(x.a.report.vllm.num_blocks);
            })
        .def_property_readonly(
            "max_concurrency", [](const A& x) { return x.a.max_concurrency; },
            "Sequences of the context each replica holds at once.")
        .def_property_readonly(
            "max_concurrency_ratio", [](const A& x) { return x.a.max_concurrency_ratio; },
            "The engine's logged figure (vLLM's \"X.XXx\").")
        .def_property_readonly("sequence_cap",
                               [](const A& x) -> py::object {
                                   if (x.a.sequence_cap == 0) return py::none();
                                   return py::int_(x.a.sequence_cap);
                               })
        .def_property_readonly("admitted_sequences", [](const A& x) { return x.a.admitted; })
        .def_property_readonly("shared_prefix_tokens",
                               [](const A& x) { return x.a.demand.shared_prefix_tokens; })
        .def_property_readonly(
            "shared_prefix_blocks", [](const A& x) { return x.a.shared_prefix_blocks; },
            "Full blocks of the shared prefix in a sequence's table, held once.")
        .def_property_readonly(
            "shared_prefix_blocks_saved", [](const A& x) { return x.a.shared_prefix_blocks_saved; },
            "Blocks per GPU the sequences running would hold again without sharing.")
        .def_property_readonly(
            "shared_prefix_bytes_saved",
            [](const A& x) { return x.a.shared_prefix_bytes_saved.count(); },
            "Their bytes per GPU.")
        .def_property_readonly(
            "max_concurrency_without_sharing",
            [](const A& x) { return x.a.max_concurrency_without_sharing; },
            "max_concurrency with every sequence holding the shared prefix itself.")
        .def_property_readonly(
            "shared_prefix_concurrency_added",
            [](const A& x) { return x.a.shared_prefix_concurrency_added(); },
            "Sequences per replica the shared prefix adds.")
        .def_property_readonly("total_max_concurrency",
                               [](const A& x) { return x.a.total_max_concurrency; })
        .def_property_readonly(
            "max_context", [](A& x) { return optional_count(x.contexts().max_context); },
            "The longest context each replica's share of the concurrency can reach; None: any.")
        .def_property_readonly(
            "longest_single_context",
            [](A& x) { return optional_count(x.contexts().longest_single_context); },
            "The longest context one sequence alone can reach; None: any.")
        .def_property_readonly(
            "estimated_max_model_len",
            [](const A& x) { return optional_count(x.a.estimated_max_model_len); })
        .def_property_readonly("context_limit_tokens", [](const A& x) { return x.a.limit.tokens; })
        .def_property_readonly(
            "tpot_seconds",
            [](const A& x) -> py::object {
                if (!x.a.decode) return py::none();
                return py::float_(x.a.decode->tpot.in(seconds));
            },
            "The decode TPOT lower bound at each replica's load; None without the GPU's figures.")
        .def_property_readonly(
            "decode",
            [](const A& x) -> py::object {
                if (!x.a.decode) return py::none();
                return py::cast(PyDecodePoint{*x.a.decode});
            },
            "The decode bound at each replica's load (a kvplan.DecodePoint), or None.")
        .def_property_readonly("kv_bytes_per_token",
                               [](const A& x) { return x.a.kv_per_token.count(); })
        .def_property_readonly("kv_bytes_per_token_per_gpu",
                               [](const A& x) { return x.a.kv_per_token_per_gpu.count(); })
        .def_property_readonly(
            "weight_bytes", [](const A& x) { return x.a.weights.total().count(); },
            "The whole model's weights as stored.")
        .def_property_readonly(
            "drafter_layers", [](const A& x) { return x.a.drafter_layers; },
            "Layers a speculative drafter adds to the KV cache.")
        .def_property_readonly(
            "drafter_kv_bytes_per_token",
            [](const A& x) { return x.a.drafter_kv_per_token.count(); },
            "The drafter layers' KV per token, whole model.")
        .def_property_readonly(
            "drafter_weight_bytes", [](const A& x) { return x.a.drafter_weights.count(); },
            "A separate draft model's weights, whole (0 for a drafter of the model's own shape).")
        // The parallel layout resolved.
        .def_property_readonly("replica_gpus", [](const A& x) { return x.a.replica_gpus; })
        .def_property_readonly(
            "nodes", [](const A& x) { return x.a.nodes; },
            "Nodes one replica spans (the GPU's gpus_per_node).")
        .def_property_readonly(
            "dp_ranks", [](const A& x) { return x.a.dp_ranks; },
            "Attention data-parallel ranks of a replica, each its own scheduler and cache.")
        .def_property_readonly("concurrency_per_dp_rank",
                               [](const A& x) { return x.a.concurrency_per_dp_rank; })
        .def_property_readonly(
            "dp_rank_max_concurrency", [](const A& x) { return x.a.dp_rank_max_concurrency; },
            "max_concurrency of one dp rank (equal to it when dp_ranks is 1).")
        .def_property_readonly(
            "placement",
            [](const A& x) {
                const Placement& p = x.a.placement;
                return py::dict(
                    py::arg("gpus") = p.gpus, py::arg("attention_tp") = p.attention_tp,
                    py::arg("attention_dp") = p.attention_dp, py::arg("dcp") = p.dcp,
                    py::arg("dense_mlp_tp") = p.dense_mlp_tp,
                    py::arg("shared_expert_tp") = p.shared_expert_tp,
                    py::arg("embedding_tp") = p.embedding_tp, py::arg("lm_head_tp") = p.lm_head_tp,
                    py::arg("expert_ep") = p.expert_ep, py::arg("expert_tp") = p.expert_tp,
                    py::arg("physical_experts") = p.physical_experts,
                    py::arg("experts_per_gpu") = p.experts_per_gpu,
                    py::arg("experts_least") = p.experts_least);
            },
            "What each GPU of a stage holds: the degree each part of a layer is split over.")
        // The latency estimate, with prompt_tokens and output_tokens: fit's keys.
        .def_property_readonly("prompt_tokens",
                               [](const A& x) { return optional_count(x.a.demand.prompt_tokens); })
        .def_property_readonly("output_tokens",
                               [](const A& x) { return optional_count(x.a.demand.output_tokens); })
        .def_property_readonly(
            "estimate_basis",
            [](const A& x) -> py::object {
                if (!x.a.demand.prompt_tokens) return py::none();
                return py::str(name(x.a.estimate_basis));
            },
            "Where the estimate's parameters came from (family_fitted, family_borrowed, "
            "given), or why there is none (does_not_start, no_gpu_figures, unknown_family); "
            "None without prompt_tokens.")
        .def_property_readonly(
            "estimate",
            [](const A& x) -> py::object {
                if (!x.a.estimate) return py::none();
                return py::cast(PyEstimate{*x.a.estimate, x.a.estimate_params});
            },
            "The latency estimate at each replica's load (a kvplan.LatencyEstimate), or None.")
        .def_property_readonly(
            "itl_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &LatencyEstimate::itl); })
        .def_property_readonly(
            "tpot_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &LatencyEstimate::tpot); })
        .def_property_readonly(
            "itl_bound_seconds",
            [](const A& x) { return estimate_seconds(x.a, &LatencyEstimate::itl_bound); })
        .def_property_readonly(
            "ttft_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &LatencyEstimate::ttft); })
        .def_property_readonly(
            "ttft_prefill_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &LatencyEstimate::ttft_prefill); })
        .def_property_readonly(
            "ttft_in_flight_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &LatencyEstimate::ttft_in_flight); })
        .def_property_readonly(
            "ttft_queue_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &LatencyEstimate::ttft_queue); })
        .def_property_readonly(
            "ttft_first_wave_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &LatencyEstimate::ttft_first_wave); },
            "Of the TTFT of a run of num_prompts requests: C / N of what its first C requests, "
            "sent at once, wait beyond the steady state's (0 without num_prompts).")
        .def_property_readonly(
            "ttft_bound_seconds",
            [](const A& x) { return estimate_seconds(x.a, &LatencyEstimate::ttft_bound); })
        .def_property_readonly("tokens_per_second_estimate",
                               [](const A& x) -> py::object {
                                   if (!x.a.estimate) return py::none();
                                   return py::float_(x.a.estimate->tokens_per_s);
                               })
        .def_property_readonly("tokens_per_second_per_gpu_estimate",
                               [](const A& x) -> py::object {
                                   if (!x.a.estimate) return py::none();
                                   return py::float_(x.a.estimate->tokens_per_s_per_gpu);
                               })
        .def_property_readonly(
            "tokens_per_second_bound",
            [](const A& x) -> py::object {
                if (!x.a.estimate) return py::none();
                return py::float_(x.a.estimate->tokens_per_s_bound);
            },
            "The most output tokens/s the replica can give at the load (the decode bound's rate "
            "at the clients' sequences, the prompts' compute at peak), beside the estimate.")
        .def_property_readonly("estimate_running_sequences",
                               [](const A& x) -> py::object {
                                   if (!x.a.estimate) return py::none();
                                   return py::int_(x.a.estimate->running);
                               })
        .def_property_readonly("estimate_waiting_requests",
                               [](const A& x) -> py::object {
                                   if (!x.a.estimate) return py::none();
                                   return py::int_(x.a.estimate->waiting);
                               })
        .def_property_readonly("estimate_bandwidth_fraction",
                               [](const A& x) -> py::object {
                                   if (!x.a.estimate) return py::none();
                                   return py::float_(x.a.estimate_params.bandwidth);
                               })
        .def_property_readonly("estimate_compute_fraction",
                               [](const A& x) -> py::object {
                                   if (!x.a.estimate) return py::none();
                                   return py::float_(x.a.estimate_params.compute);
                               })
        .def_property_readonly(
            "estimate_layer_overhead_seconds",
            [](const A& x) -> py::object {
                if (!x.a.estimate) return py::none();
                return py::float_(x.a.estimate_params.layer_overhead.in(seconds));
            })
        .def_property_readonly(
            "estimate_all_reduce_latency_seconds",
            [](const A& x) -> py::object {
                if (!x.a.estimate) return py::none();
                return py::float_(x.a.estimate_params.all_reduce_latency.in(seconds));
            })
        .def("__bool__", [](const A& x) { return x.a.fits(); })
        .def("__repr__", &answer_repr);

    // LatencyEstimate ----------------------------------------------------------------------
    py::class_<PyEstimate>(m, "LatencyEstimate",
                           R"(The latency estimate of a replica's load, beside its bound.

A closed loop of `concurrency` clients per replica, every request of the demand's prompt and
output tokens; at most `running` of them run at once (the answer's max_concurrency), the others
wait and their wait is in the TTFT. Steps are the roofline's terms at the fractions of peak
the GPU family's published measurements give (or a calibration profile's). What a benchmark
such as vllm bench serve should measure; the *_bound figures are what no step beats.)")
        .def_property_readonly(
            "concurrency", [](const PyEstimate& x) { return x.e.concurrency; },
            "Clients per replica.")
        .def_property_readonly(
            "running", [](const PyEstimate& x) { return x.e.running; },
            "Sequences decoding at once.")
        .def_property_readonly(
            "waiting", [](const PyEstimate& x) { return x.e.waiting; }, "Requests in the queue.")
        .def_property_readonly("running_cap", [](const PyEstimate& x) { return x.e.running_cap; })
        .def_property_readonly(
            "token_budget", [](const PyEstimate& x) { return x.e.token_budget; },
            "Tokens of one step (max_num_batched_tokens).")
        .def_property_readonly(
            "chunk", [](const PyEstimate& x) { return x.e.chunk; }, "Prefill tokens per chunk.")
        .def_property_readonly(
            "chunks", [](const PyEstimate& x) { return x.e.chunks; }, "Chunks per prompt.")
        .def_property_readonly("mean_context", [](const PyEstimate& x) { return x.e.mean_context; })
        .def_property_readonly("mixed_share", [](const PyEstimate& x) { return x.e.mixed_share; })
        .def_property_readonly(
            "itl_seconds", [](const PyEstimate& x) { return x.e.itl.in(seconds); },
            "Mean inter-token latency.")
        .def_property_readonly(
            "tpot_seconds", [](const PyEstimate& x) { return x.e.tpot.in(seconds); },
            "Time per output token after the first.")
        .def_property_readonly(
            "ttft_seconds", [](const PyEstimate& x) { return x.e.ttft.in(seconds); },
            "Prefill (after the prompts ahead) + the step in flight + the wait for a slot.")
        .def_property_readonly("ttft_prefill_seconds",
                               [](const PyEstimate& x) { return x.e.ttft_prefill.in(seconds); })
        .def_property_readonly("ttft_in_flight_seconds",
                               [](const PyEstimate& x) { return x.e.ttft_in_flight.in(seconds); })
        .def_property_readonly("ttft_queue_seconds",
                               [](const PyEstimate& x) { return x.e.ttft_queue.in(seconds); })
        .def_property_readonly(
            "request_seconds", [](const PyEstimate& x) { return x.e.request.in(seconds); },
            "A request's time once admitted.")
        .def_property_readonly(
            "itl_bound_seconds", [](const PyEstimate& x) { return x.e.itl_bound.in(seconds); },
            "The decode bound at the running sequences of the prompt's tokens.")
        .def_property_readonly(
            "ttft_bound_seconds", [](const PyEstimate& x) { return x.e.ttft_bound.in(seconds); },
            "The prefill bound of one prompt alone.")
        .def_property_readonly("tokens_per_second",
                               [](const PyEstimate& x) { return x.e.tokens_per_s; })
        .def_property_readonly(
            "tokens_per_second_bound", [](const PyEstimate& x) { return x.e.tokens_per_s_bound; },
            "The most output tokens/s the replica can give at the load.")
        .def_property_readonly(
            "ttft_first_wave_seconds",
            [](const PyEstimate& x) { return x.e.ttft_first_wave.in(seconds); },
            "Of the TTFT of a run of N requests: C / N of its first wave's extra wait.")
        .def_property_readonly("tokens_per_second_per_gpu",
                               [](const PyEstimate& x) { return x.e.tokens_per_s_per_gpu; })
        .def_property_readonly("bandwidth_fraction",
                               [](const PyEstimate& x) { return x.params.bandwidth; })
        .def_property_readonly("compute_fraction",
                               [](const PyEstimate& x) { return x.params.compute; })
        .def_property_readonly(
            "layer_overhead_seconds",
            [](const PyEstimate& x) { return x.params.layer_overhead.in(seconds); })
        .def_property_readonly(
            "all_reduce_latency_seconds",
            [](const PyEstimate& x) { return x.params.all_reduce_latency.in(seconds); })
        .def("__repr__", [](const PyEstimate& x) {
            return fmt::format(
                "<kvplan.LatencyEstimate {} running, {} waiting: ITL {}, TTFT {}, {:.1f} tokens/s>",
                grouped(x.e.running), grouped(x.e.waiting), seconds_text(x.e.itl),
                seconds_text(x.e.ttft), x.e.tokens_per_s);
        });
}

}  // namespace kvplan::python
