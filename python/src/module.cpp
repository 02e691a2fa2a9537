// The compiled half of the kvplan Python package (python/kvplan/ is the other half): the command
// line run in-process, which kvplan.fit() and its siblings call, and the library's classes for
// serving code (Model, Gpu, Deployment, ReplicaAnswer, Roofline, BlockPool), bound directly so that
// an evaluation pays no parse and no JSON.
//
// Every argument is checked here before it reaches the library: a broken precondition there ends
// the process (KVPLAN_EXPECTS), which a Python caller must never see. Bad values raise
// kvplan.UsageError ("field: expected X, found Y"), bad data kvplan.InvalidInputError and its
// subclasses, carrying the library's message.

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <kvplan/admission.hpp>
#include <kvplan/admission/engine_pools.hpp>
#include <kvplan/format.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/plain_decoder.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/roofline.hpp>
#include <kvplan/version.hpp>
#include <kvplan/weights.hpp>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "answer.hpp"
#include "app.hpp"
#include "context.hpp"
#include "flags.hpp"
#include "inputs.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"
#include "roofline_input.hpp"

namespace py = pybind11;

namespace {

using kvplan::Bytes;
using kvplan::cli::UsageError;

// ---------------------------------------------------------------------------------------------
// Where the bundled configs are: set once by kvplan/__init__.py (config_dir()).

std::filesystem::path& config_dir() {
    static std::filesystem::path dir{KVPLAN_CONFIG_DIR};
    return dir;
}

kvplan::cli::Context context() {
    kvplan::cli::Context ctx;
    ctx.config_dir = config_dir();
    return ctx;
}

// ---------------------------------------------------------------------------------------------
// Errors: kvplan's exceptions as the classes of kvplan/_errors.py.

void set_error(const char* cls, const char* message) {
    const py::object type = py::module_::import("kvplan._errors").attr(cls);
    // Messages may quote bytes read from a file: made valid UTF-8 as the CLI prints them.
    PyErr_SetObject(type.ptr(), py::str(kvplan::cli::utf8_escaped(message)).ptr());
}

void translate(std::exception_ptr p) {
    try {
        if (p) std::rethrow_exception(p);
    } catch (const UsageError& e) {
        set_error("UsageError", e.what());
    } catch (const kvplan::InvalidModel& e) {
        set_error("InvalidModelError", e.what());
    } catch (const kvplan::InvalidLayout& e) {
        set_error("InvalidLayoutError", e.what());
    } catch (const kvplan::OverflowError& e) {
        set_error("SizeOverflowError", e.what());
    } catch (const kvplan::Error& e) {
        set_error("InvalidInputError", e.what());
    }
}

/// "field: expected X, found Y", the shape of every kvplan message, as a kvplan.UsageError.
[[noreturn]] void usage(std::string_view field, std::string_view expected, std::string_view found) {
    throw UsageError(fmt::format("{}: expected {}, found {}", field, expected, found));
}

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")); }

[[noreturn]] void wrong_type(std::string_view field, std::string_view expected, py::handle found) {
    throw py::type_error(
        fmt::format("{}: expected {}, found {}", field, expected, type_name(found)));
}

/// A whole number >= `min`: an int (not a bool).
std::uint64_t to_count(py::handle h, std::string_view field, std::string_view unit,
                       std::uint64_t min = 1) {
    if (PyBool_Check(h.ptr()) || !PyLong_Check(h.ptr()))
        wrong_type(field, fmt::format("an int ({})", unit), h);
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    std::uint64_t n = 0;
    if (overflow > 0) {
        n = PyLong_AsUnsignedLongLong(h.ptr());
        if (PyErr_Occurred()) {
            PyErr_Clear();
            usage(field, fmt::format("at most 2^64 - 1 {}", unit), std::string(py::str(h)));
        }
    } else if (overflow < 0 || v < 0) {
        usage(field, fmt::format(">= {} {}", min, unit), std::string(py::str(h)));
    } else {
        n = static_cast<std::uint64_t>(v);
    }
    if (n < min) usage(field, fmt::format(">= {} {}", min, unit), std::to_string(n));
    return n;
}

/// A token count: an int, or a string as the CLI reads --context ("8k" = 8,000, "8K" = 8,192).
std::uint64_t to_tokens(py::handle h, std::string_view field) {
    if (PyUnicode_Check(h.ptr())) return kvplan::cli::parse_tokens(py::cast<std::string>(h), field);
    if (PyBool_Check(h.ptr()) || !PyLong_Check(h.ptr()))
        wrong_type(field, "an int or a token count such as '8k'", h);
    return to_count(h, field, "tokens");
}

/// A keyword argument as the CLI flag of the same name reads it: None is absent, an int or a
/// string as written, a float as Python writes it (the shortest text that reads back the same).
std::string flag_text(py::handle v, std::string_view field) {
    if (v.is_none()) return "";
    if (PyBool_Check(v.ptr())) wrong_type(field, "a number or a string", v);
    if (PyUnicode_Check(v.ptr())) {
        std::string s = py::cast<std::string>(v);
        if (s.empty()) usage(field, "a value", "''");
        return s;
    }
    if (PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr())) return py::str(v);
    wrong_type(field, "a number or a string", v);
}

/// A path or an id: str or os.PathLike.
std::string path_text(py::handle v, std::string_view field) {
    if (PyUnicode_Check(v.ptr())) return py::cast<std::string>(v);
    if (py::hasattr(v, "__fspath__")) {
        const py::object p = py::module_::import("os").attr("fspath")(v);
        if (PyUnicode_Check(p.ptr())) return py::cast<std::string>(p);
    }
    wrong_type(field, "an id or a path (str or os.PathLike)", v);
}

/// A CLI usage message with each flag it names ("--block-size: ...") as the keyword instead.
std::string keyword_message(const std::string& m) {
    std::string out;
    for (std::size_t i = 0; i < m.size();) {
        const bool flag = m.compare(i, 2, "--") == 0 && i + 2 < m.size() &&
                          std::isalpha(static_cast<unsigned char>(m[i + 2])) &&
                          (i == 0 || !std::isalnum(static_cast<unsigned char>(m[i - 1])));
        if (!flag) {
            out += m[i++];
            continue;
        }
        for (i += 2;
             i < m.size() && (std::isalnum(static_cast<unsigned char>(m[i])) || m[i] == '-'); ++i)
            out += m[i] == '-' ? '_' : m[i];
    }
    return out;
}

std::string grouped(std::uint64_t n) { return kvplan::cli::grouped(n); }

py::object optional_count(const std::optional<std::uint64_t>& v) {
    return v ? py::object(py::int_(*v)) : py::object(py::none());
}

// ---------------------------------------------------------------------------------------------
// Model and Gpu: resolved as --model and --gpu resolve.

struct PyModel {
    kvplan::cli::ResolvedModel rm;
    std::string arg;  ///< what the command line reads for it (an id or a path); "" when inline

    [[nodiscard]] const kvplan::Model& get() const { return rm.get(); }
};

struct PyGpu {
    kvplan::cli::ResolvedGpu rg;
};

kvplan::HfImportOptions import_options(const std::string& mamba, const std::string& ssm) {
    kvplan::cli::CommonOptions o;
    o.mamba_cache_dtype = mamba;
    o.mamba_ssm_cache_dtype = ssm;
    try {
        return kvplan::cli::import_options(o);
    } catch (const UsageError& e) {
        throw UsageError(keyword_message(e.what()));
    }
}

std::shared_ptr<PyModel> model_from(py::handle source, const std::string& mamba,
                                    const std::string& ssm) {
    const std::string arg = path_text(source, "source");
    const kvplan::cli::Context ctx = context();
    auto m = std::make_shared<PyModel>();
    m->rm = kvplan::cli::resolve_model(arg, ctx, "kvplan.Model", import_options(mamba, ssm));
    m->arg = arg;
    return m;
}

std::shared_ptr<PyModel> model_from_fields(const std::string& name, std::uint32_t layers,
                                           std::uint64_t hidden, std::uint32_t heads,
                                           std::uint32_t kv_heads, std::uint32_t head_dim,
                                           std::uint64_t vocab, std::uint64_t intermediate,
                                           std::uint32_t experts, std::uint32_t experts_per_tok,
                                           std::uint64_t moe_intermediate, std::uint64_t window,
                                           std::uint64_t max_position, bool tie) {
    if (name.size() > kvplan::ModelName::max_size)
        usage("name", fmt::format("at most {} characters", kvplan::ModelName::max_size),
              std::to_string(name.size()) + " characters");
    const kvplan::PlainDecoder p{.name = kvplan::ModelName(std::string_view(name)),
                                 .num_hidden_layers = layers,
                                 .hidden_size = hidden,
                                 .num_attention_heads = heads,
                                 .num_key_value_heads = kv_heads,
                                 .head_dim = head_dim,
                                 .vocab_size = vocab,
                                 .intermediate_size = intermediate,
                                 .num_experts = experts,
                                 .num_experts_per_tok = experts_per_tok,
                                 .moe_intermediate_size = moe_intermediate,
                                 .sliding_window = window,
                                 .max_position_embeddings = max_position,
                                 .tie_word_embeddings = tie};
    auto m = std::make_shared<PyModel>();
    m->rm.model = kvplan::plain_decoder(p);
    m->rm.id = name.empty() ? "inline model" : name;
    m->rm.source = "inline fields (kvplan.Model.from_fields)";
    return m;
}

std::shared_ptr<PyModel> as_model(py::handle h) {
    if (py::isinstance<PyModel>(h)) return py::cast<std::shared_ptr<PyModel>>(h);
    return model_from(h, "auto", "auto");
}

std::shared_ptr<PyGpu> gpu_from(py::handle source) {
    const std::string arg = path_text(source, "source");
    auto g = std::make_shared<PyGpu>();
    g->rg = kvplan::cli::resolve_gpu(arg, context(), "kvplan.Gpu");
    return g;
}

std::shared_ptr<PyGpu> as_gpu(py::handle h) {
    if (py::isinstance<PyGpu>(h)) return py::cast<std::shared_ptr<PyGpu>>(h);
    return gpu_from(h);
}

kvplan::KvFormat kv_format(const std::string& text) {
    try {
        return kvplan::cli::parse_kv_dtype_flag(text, "kv_dtype");
    } catch (const UsageError& e) {
        throw UsageError(keyword_message(e.what()));
    }
}

// ---------------------------------------------------------------------------------------------
// Deployment, its answer and its roofline.

struct PyDeployment {
    std::shared_ptr<const PyModel> model;
    std::shared_ptr<const PyGpu> gpu;
    kvplan::cli::ReplicaFlags flags;
    kvplan::Deployment deployment;
    /// What no GPU or demand changes (the layout, each stage's weights and matmul shapes, the
    /// drafter), computed once: evaluate() pays only for what a demand changes.
    kvplan::PreparedLayout prepared;
    std::uint64_t default_context = 0;  ///< the model's limit
    std::string profile_path;           ///< profile=, as fit's notes name it
    std::optional<kvplan::CalibrationProfile> profile{};
    std::uint32_t replica_gpus = 1;  ///< GPUs of one replica (dp x tp x pp under vLLM's rules)
    std::uint32_t gpus = 1;          ///< every GPU deployed
    std::uint32_t replicas = 1;
};

/// evaluate() as Deployment.evaluate runs it: the longest contexts left out (searched when read).
constexpr kvplan::EvaluateOptions fast_options{.contexts = false};
/// The longest contexts alone.
constexpr kvplan::EvaluateOptions contexts_options{
    .contexts = true, .decode = false, .estimate = false};

struct PyAnswer {
    kvplan::ReplicaAnswer a;
    std::shared_ptr<const PyDeployment> dep;
    bool searched = false;

    /// The longest contexts, searched on first read (a binary search over the engine's cache).
    const kvplan::ReplicaAnswer& contexts() {
        if (!searched) {
            const kvplan::ReplicaAnswer s =
                kvplan::evaluate(dep->deployment, a.demand, contexts_options, dep->prepared);
            a.max_context = s.max_context;
            a.max_context_at_limit = s.max_context_at_limit;
            a.longest_single_context = s.longest_single_context;
            a.longest_at_limit = s.longest_at_limit;
            searched = true;
        }
        return a;
    }
};

/// A count keyword of the library's parallel layout (no CLI flag reads it): an int >= 1.
std::uint32_t layout_count(py::handle h, std::string_view field, std::string_view unit) {
    const std::uint64_t n = to_count(h, field, unit);
    if (n > 0xFFFF) usage(field, "at most 65,535", grouped(n));
    return static_cast<std::uint32_t>(n);
}

struct DeploymentArgs {
    py::handle model, gpu, tp, pp, dp, ep, dcp, gpus, kv_dtype, weight_dtype, expert_dtype, engine,
        block_size, gpu_memory_utilization, kv_memory, max_num_seqs, max_num_batched_tokens,
        num_gpu_blocks_override, speculative_method, num_speculative_tokens, draft_model, profile;
    bool allow_long_context = false;
};

std::shared_ptr<PyDeployment> deployment_from(const DeploymentArgs& x) {
    kvplan::cli::CommonOptions o;
    // The keywords read as the CLI reads the flags of the same names (one converter per kind).
    std::vector<std::pair<std::string, std::string>> given;
    const auto put = [&given](const char* flag, std::string text) {
        if (!text.empty()) given.emplace_back(flag, std::move(text));
    };
    put("--tp", flag_text(x.tp, "tp"));
    put("--pp", flag_text(x.pp, "pp"));
    put("--gpus", flag_text(x.gpus, "gpus"));
    put("--kv-dtype", flag_text(x.kv_dtype, "kv_dtype"));
    put("--weight-dtype", flag_text(x.weight_dtype, "weight_dtype"));
    put("--expert-dtype", flag_text(x.expert_dtype, "expert_dtype"));
    put("--engine", flag_text(x.engine, "engine"));
    put("--block-size", flag_text(x.block_size, "block_size"));
    put("--gpu-memory-utilization", flag_text(x.gpu_memory_utilization, "gpu_memory_utilization"));
    // An int is bytes; a string names its unit as --kv-memory does ("5.38GiB").
    put("--kv-memory", PyLong_Check(x.kv_memory.ptr()) && !PyBool_Check(x.kv_memory.ptr())
                           ? std::to_string(to_count(x.kv_memory, "kv_memory", "bytes")) + "B"
                           : flag_text(x.kv_memory, "kv_memory"));
    put("--max-num-seqs", flag_text(x.max_num_seqs, "max_num_seqs"));
    put("--max-num-batched-tokens", flag_text(x.max_num_batched_tokens, "max_num_batched_tokens"));
    put("--num-gpu-blocks-override",
        flag_text(x.num_gpu_blocks_override, "num_gpu_blocks_override"));
    put("--speculative-method", flag_text(x.speculative_method, "speculative_method"));
    put("--num-speculative-tokens", flag_text(x.num_speculative_tokens, "num_speculative_tokens"));
    try {
        kvplan::cli::read_options(
            o, kvplan::cli::opt_layout | kvplan::cli::opt_dtypes | kvplan::cli::opt_budget, given);
    } catch (const UsageError& e) {
        throw UsageError(keyword_message(e.what()));
    }
    o.allow_long_context = x.allow_long_context;
    if (!x.draft_model.is_none() && !py::isinstance<PyModel>(x.draft_model))
        o.draft_model = path_text(x.draft_model, "draft_model");
    else if (!x.draft_model.is_none())
        o.draft_model = "a kvplan.Model";  // given: parse_serving checks it goes with the method
    const std::string profile = x.profile.is_none() ? "" : path_text(x.profile, "profile");
    const std::uint32_t dp = layout_count(x.dp, "dp", "ranks");
    const std::uint32_t ep = layout_count(x.ep, "ep", "GPUs");
    const std::uint32_t dcp = layout_count(x.dcp, "dcp", "ranks");

    // Flags first, as the CLI parses them: a usage error before any file is read.
    kvplan::cli::ReplicaFlags flags;
    try {
        flags = kvplan::cli::parse_replica_flags(o);
    } catch (const UsageError& e) {
        throw UsageError(keyword_message(e.what()));
    }
    std::shared_ptr<const PyModel> m = as_model(x.model);
    std::shared_ptr<const PyGpu> g = as_gpu(x.gpu);
    if (flags.serving.speculation.method == kvplan::DraftMethod::draft_model)
        flags.serving.speculation.draft_model = as_model(x.draft_model)->get();
    const std::uint64_t limit = kvplan::context_limit(m->get().config()).tokens;
    kvplan::cli::ReplicaRequest in{m->rm, g->rg, flags, limit};
    if (!profile.empty()) {
        // As --profile: its measured reserve, and its estimate parameters when fitted on this GPU.
        in.profile = kvplan::load_profile(profile);
        in.profile_path = profile;
        const kvplan::WeightOptions w =
            in.flags.weights ? *in.flags.weights : kvplan::checkpoint_weights(m->get());
        kvplan::cli::use_profile(*in.profile, profile, g->rg.id,
                                 kvplan::matmul_compute(w, g->rg.spec), in.flags.serving);
    }
    kvplan::Deployment dep = in.deployment();
    dep.parallel.dp = dp;
    dep.parallel.ep = ep;
    dep.parallel.dcp = dcp;
    // Without gpus=, one replica: tp x pp, times dp under vLLM's rules.
    if (x.gpus.is_none()) dep.gpus = 0;
    // The layout checked (InvalidLayout) and prepared before any figure.
    kvplan::PreparedLayout prepared = kvplan::prepare_layout(dep);
    // What evaluate() refuses of the deployment itself (a GPU count, an engine knob, a GPU
    // without memory) raised now, at a demand that cannot fail.
    const kvplan::ReplicaAnswer check = kvplan::evaluate(
        dep, {.context = 1}, {.contexts = false, .decode = false, .estimate = false}, prepared);
    auto d = std::make_shared<PyDeployment>(PyDeployment{
        std::move(m), std::move(g), std::move(in.flags), std::move(dep), std::move(prepared), limit,
        std::move(in.profile_path), std::move(in.profile)});
    d->replica_gpus = check.replica_gpus;
    d->gpus = check.gpus;
    d->replicas = check.replicas;
    return d;
}

std::shared_ptr<PyDeployment> make_deployment(
    py::handle model, py::handle gpu, py::handle tp, py::handle pp, py::handle dp, py::handle ep,
    py::handle dcp, py::handle gpus, py::handle kv_dtype, py::handle weight_dtype,
    py::handle expert_dtype, py::handle engine, py::handle block_size,
    py::handle gpu_memory_utilization, py::handle kv_memory, py::handle max_num_seqs,
    py::handle max_num_batched_tokens, py::handle num_gpu_blocks_override, bool allow_long_context,
    py::handle speculative_method, py::handle num_speculative_tokens, py::handle draft_model,
    py::handle profile) {
    return deployment_from({.model = model,
                            .gpu = gpu,
                            .tp = tp,
                            .pp = pp,
                            .dp = dp,
                            .ep = ep,
                            .dcp = dcp,
                            .gpus = gpus,
                            .kv_dtype = kv_dtype,
                            .weight_dtype = weight_dtype,
                            .expert_dtype = expert_dtype,
                            .engine = engine,
                            .block_size = block_size,
                            .gpu_memory_utilization = gpu_memory_utilization,
                            .kv_memory = kv_memory,
                            .max_num_seqs = max_num_seqs,
                            .max_num_batched_tokens = max_num_batched_tokens,
                            .num_gpu_blocks_override = num_gpu_blocks_override,
                            .speculative_method = speculative_method,
                            .num_speculative_tokens = num_speculative_tokens,
                            .draft_model = draft_model,
                            .profile = profile,
                            .allow_long_context = allow_long_context});
}

kvplan::Demand demand_of(const PyDeployment& d, py::handle context, py::handle concurrency,
                         py::handle prompt_tokens = py::none(),
                         py::handle output_tokens = py::none(),
                         py::handle shared_prefix_tokens = py::none()) {
    kvplan::Demand demand;
    if (prompt_tokens.is_none() != output_tokens.is_none())
        usage(prompt_tokens.is_none() ? "prompt_tokens" : "output_tokens",
              fmt::format("a token count beside {} (the latency estimate needs both parts of a "
                          "request)",
                          prompt_tokens.is_none() ? "output_tokens" : "prompt_tokens"),
              "None");
    if (!prompt_tokens.is_none()) {
        demand.prompt_tokens = to_tokens(prompt_tokens, "prompt_tokens");
        demand.output_tokens = to_tokens(output_tokens, "output_tokens");
    }
    // As --context: else the split's sum, else the model's limit.
    if (!context.is_none()) {
        demand.context = to_tokens(context, "context");
        if (demand.prompt_tokens && demand.context < *demand.prompt_tokens + *demand.output_tokens)
            usage("context",
                  fmt::format("at least prompt_tokens + output_tokens = {} tokens",
                              *demand.prompt_tokens + *demand.output_tokens),
                  grouped(demand.context));
    } else {
        demand.context = demand.prompt_tokens ? *demand.prompt_tokens + *demand.output_tokens
                                              : d.default_context;
    }
    demand.concurrency = to_count(concurrency, "concurrency", "sequences");
    // As --shared-prefix; past the context or the prompt, the library's InvalidInputError.
    if (!shared_prefix_tokens.is_none())
        demand.shared_prefix_tokens = to_tokens(shared_prefix_tokens, "shared_prefix_tokens");
    return demand;
}

PyAnswer evaluate(const std::shared_ptr<const PyDeployment>& d, py::handle context,
                  py::handle concurrency, py::handle prompt_tokens, py::handle output_tokens,
                  py::handle shared_prefix_tokens) {
    return PyAnswer{kvplan::evaluate(d->deployment,
                                     demand_of(*d, context, concurrency, prompt_tokens,
                                               output_tokens, shared_prefix_tokens),
                                     fast_options, d->prepared),
                    d};
}

/// A second figure of the latency estimate, or None without one.
py::object estimate_seconds(const kvplan::ReplicaAnswer& a,
                            kvplan::Seconds kvplan::LatencyEstimate::*f) {
    if (!a.estimate) return py::none();
    return py::float_(((*a.estimate).*f).in(kvplan::seconds));
}

struct PyEstimate {
    kvplan::LatencyEstimate e;
    kvplan::EstimateParams params;
};

struct PyDecodePoint {
    kvplan::DecodePoint p;
};

struct PyDecodeBound {
    kvplan::DecodeBound d;
};

struct PyPrefill {
    kvplan::PrefillBound p;
};

struct PyRoofline {
    std::shared_ptr<const PyDeployment> dep;
    kvplan::Replica replica;
    kvplan::RooflineOptions options;
    kvplan::DecodeCosts costs;
};

std::shared_ptr<PyRoofline> make_roofline(const std::shared_ptr<const PyDeployment>& d,
                                          const std::optional<std::string>& compute_dtype) {
    kvplan::RooflineOptions ro;
    try {
        if (compute_dtype) ro.compute = kvplan::cli::compute_dtype_flag(*compute_dtype);
    } catch (const UsageError& e) {
        throw UsageError(keyword_message(e.what()));
    }
    // The replica as kvplan roofline evaluates it (its layout resolved in the engine's rules).
    const kvplan::Replica r =
        kvplan::evaluate(d->deployment, {.context = 1},
                         {.contexts = false, .decode = false, .estimate = false}, d->prepared)
            .replica;
    ro = kvplan::with_compute(ro, r);  // the weights' own type unless compute_dtype says otherwise
    return std::make_shared<PyRoofline>(PyRoofline{d, r, ro, kvplan::decode_costs(r, ro)});
}

// ---------------------------------------------------------------------------------------------
// Block pools: the library's BlockPool with per-request objects that keep what they point to.

struct PyPrefix {
    kvplan::SharedPrefix p;
    std::uint64_t pool = 0;  ///< the pool whose blocks it holds while held
};

struct PyPool;

struct PyRequest {
    kvplan::RequestBlocks r;
    std::uint64_t pool = 0;  ///< the pool that admitted it
    py::object prefix;       ///< keeps the SharedPrefix that r.prefix points to alive
};

struct PyPool {
    kvplan::BlockPool pool;
    std::uint64_t id;

    static std::uint64_t next_id() {
        static std::atomic<std::uint64_t> n{0};
        return ++n;
    }
    explicit PyPool(const kvplan::BlockPoolSpec& s, kvplan::AdmitPolicy p)
        : pool(s, p), id(next_id()) {}
};

struct PyAdmission {
    kvplan::AdmitResult res;
    py::object request;  ///< a Request when admitted, else None
};

kvplan::AdmitPolicy policy_of(const std::string& s) {
    if (s == "engine") return kvplan::AdmitPolicy::engine;
    if (s == "no_preemption") return kvplan::AdmitPolicy::no_preemption;
    usage("policy", "'engine' or 'no_preemption'", "'" + s + "'");
}

const char* policy_name(kvplan::AdmitPolicy p) {
    return p == kvplan::AdmitPolicy::engine ? "engine" : "no_preemption";
}

kvplan::BlockGroupKind group_kind_of(const std::string& s) {
    for (const auto& e : kvplan::block_group_kind_names)
        if (s == e.name) return e.value;
    usage("kind", "'full', 'sliding_window', 'chunked_local' or 'state'", "'" + s + "'");
}

std::shared_ptr<PyPool> make_pool(py::handle num_blocks, py::handle block_size, py::handle groups,
                                  bool null_block, py::handle max_model_len,
                                  py::handle watermark_blocks, bool full_sequence_must_fit,
                                  const std::string& policy) {
    kvplan::BlockPoolSpec s;
    s.num_blocks = to_count(num_blocks, "num_blocks", "blocks");
    s.null_block = null_block;
    s.max_model_len = to_count(max_model_len, "max_model_len", "tokens", 0);
    s.watermark_blocks = to_count(watermark_blocks, "watermark_blocks", "blocks", 0);
    s.full_sequence_must_fit = full_sequence_must_fit;
    if (groups.is_none()) {
        const std::uint64_t b =
            block_size.is_none() ? 16 : to_count(block_size, "block_size", "tokens");
        if (b > 0xFFFF'FFFFULL) usage("block_size", "at most 4294967295 tokens", std::to_string(b));
        s.groups[0].block_size = static_cast<std::uint32_t>(b);
        s.num_groups = 1;
    } else {
        if (!block_size.is_none())
            usage("block_size", "no block_size beside groups (each group has its own)",
                  std::string(py::str(block_size)));
        if (!py::isinstance<py::sequence>(groups) || PyUnicode_Check(groups.ptr()))
            wrong_type("groups", "a list of kvplan.BlockGroup", groups);
        const py::sequence seq = py::reinterpret_borrow<py::sequence>(groups);
        if (seq.size() == 0 || seq.size() > kvplan::max_block_groups)
            usage("groups", "1 to 8 BlockGroup", std::to_string(seq.size()));
        for (std::size_t i = 0; i < seq.size(); ++i) {
            if (!py::isinstance<kvplan::BlockGroup>(seq[i]))
                wrong_type(fmt::format("groups[{}]", i), "a kvplan.BlockGroup", seq[i]);
            s.groups[i] = py::cast<kvplan::BlockGroup>(seq[i]);
        }
        s.num_groups = static_cast<std::uint32_t>(seq.size());
    }
    return std::make_shared<PyPool>(s, policy_of(policy));  // validate(): InvalidInput
}

PyAdmission admit(PyPool& self, py::handle prompt_h, py::handle max_new_h, py::handle prefix_h,
                  py::handle chunk_h) {
    const kvplan::BlockPoolSpec& s = self.pool.spec();
    const std::uint64_t prompt = to_count(prompt_h, "prompt", "tokens");
    const std::uint64_t max_new = to_count(max_new_h, "max_new", "tokens");
    const std::uint64_t chunk = to_count(chunk_h, "chunk", "tokens", 0);
    kvplan::AdmitOptions o{.prefix = nullptr, .chunk = chunk};
    PyPrefix* px = nullptr;
    if (!prefix_h.is_none()) {
        if (!py::isinstance<PyPrefix>(prefix_h)) wrong_type("prefix", "a kvplan.Prefix", prefix_h);
        px = &py::cast<PyPrefix&>(prefix_h);
        const std::uint64_t pt = px->p.tokens;
        if (pt >= prompt)
            usage("prefix", fmt::format("fewer tokens than the prompt's {}", grouped(prompt)),
                  fmt::format("{} tokens", grouped(pt)));
        for (std::uint32_t i = 0; i < s.num_groups; ++i)
            if (s.groups[i].kind != kvplan::BlockGroupKind::state &&
                pt % s.groups[i].block_size != 0)
                usage("prefix",
                      fmt::format("a multiple of every group's block size ({} tokens)",
                                  s.groups[i].block_size),
                      fmt::format("{} tokens", grouped(pt)));
        const bool held = px->p.holders > 0;
        if (held && px->pool != self.id)
            usage("prefix", "a prefix of this pool (another pool's requests hold it)",
                  "another pool's");
        // A prefix not yet in the cache is computed by the request's first step.
        const std::uint64_t first = chunk == 0 || chunk > prompt ? prompt : chunk;
        if (!held && !px->p.cached && first < pt)
            usage("chunk",
                  fmt::format("at least the prefix's {} tokens: a prefix not yet cached is "
                              "computed by the first step",
                              grouped(pt)),
                  grouped(first));
        o.prefix = &px->p;
    }
    auto req = std::make_unique<PyRequest>();
    PyAdmission out{self.pool.admit(req->r, prompt, max_new, o), py::none()};
    if (out.res) {
        req->pool = self.id;
        if (px != nullptr) {
            req->prefix = py::reinterpret_borrow<py::object>(prefix_h);
            px->pool = self.id;
        }
        out.request = py::cast(std::move(req));
    }
    return out;
}

void check_request(const PyPool& self, const PyRequest& q) {
    if (!q.r.running)
        usage("request", "a running request",
              q.pool == 0 ? "one never admitted" : "a released one");
    if (q.pool != self.id) usage("request", "a request of this pool", "another pool's");
}

kvplan::GrowResult grow(PyPool& self, PyRequest& q, py::handle n_h) {
    check_request(self, q);
    const kvplan::RequestBlocks& r = q.r;
    const std::uint64_t n = to_count(n_h, "n", "tokens");
    const std::uint64_t room = r.prompt + r.max_new - 1 - r.tokens;
    if (n > room)
        usage("n",
              fmt::format("at most the {} tokens left of prompt + max_new - 1 ({} + {} - 1, {} "
                          "computed)",
                          grouped(room), grouped(r.prompt), grouped(r.max_new), grouped(r.tokens)),
              grouped(n));
    if (self.pool.policy() == kvplan::AdmitPolicy::no_preemption) {
        // The steps the reservation counted: the admission's chunk until the prompt is in, then
        // one token.
        const std::uint64_t from = r.tokens;
        const std::uint64_t want =
            from < r.prompt ? (r.prompt - from < r.chunk ? r.prompt : from + r.chunk) - from : 1;
        if (n != want)
            usage("n",
                  fmt::format("{} under no_preemption (the steps its reservation counted: the "
                              "chunk until the prompt is in, then one token)",
                              grouped(want)),
                  grouped(n));
    }
    return self.pool.grow(q.r, n);
}

std::uint64_t release(PyPool& self, PyRequest& q) {
    check_request(self, q);
    const std::uint64_t freed = self.pool.release(q.r);
    q.prefix = py::object();
    return freed;
}

std::shared_ptr<PyPool> engine_pool(const std::shared_ptr<const PyDeployment>& d,
                                    py::handle context, const std::string& policy) {
    const kvplan::AdmitPolicy p = policy_of(policy);
    const kvplan::ReplicaAnswer a = kvplan::evaluate(
        d->deployment, demand_of(*d, context, py::int_(1)), fast_options, d->prepared);
    if (!a.starts())
        throw kvplan::InvalidInput(
            kvplan::detail::text("block_pool: expected an engine that starts, found ",
                                 name(a.refusal), " (", kvplan::cli::refusal_text(a), ")"));
    switch (a.serving.engine) {
        case kvplan::Engine::vllm:
            return std::make_shared<PyPool>(
                kvplan::vllm_block_pool(a.report.vllm, a.serving.options.vllm), p);
        case kvplan::Engine::sglang:
            if (a.report.sglang.swa_tokens != 0)
                usage("block_pool", "an SGLang pool without a separate sliding-window pool",
                      "a hybrid SWA pool");
            return std::make_shared<PyPool>(kvplan::sglang_block_pool(a.report.sglang), p);
        default:
            usage("engine", "vllm or sglang (the engines whose block pool kvplan models)",
                  std::string(name(a.serving.engine)));
    }
}

// ---------------------------------------------------------------------------------------------
// Printing.

std::string bytes_text(Bytes b) { return fmt::format("{}", b); }

std::string seconds_text(kvplan::Seconds t) { return fmt::format("{}", t); }

std::string model_repr(const PyModel& m) {
    const kvplan::Model& x = m.get();
    return fmt::format("<kvplan.Model '{}': {}, {} layers, limit {} tokens ({})>", m.rm.id,
                       x.name().empty() ? m.rm.id : std::string(x.name()), x.num_layers(),
                       grouped(kvplan::context_limit(x.config()).tokens), m.rm.source);
}

std::string gpu_repr(const PyGpu& g) {
    return fmt::format("<kvplan.Gpu '{}': {}, {}, {} ({})>", g.rg.id, std::string(g.rg.spec.name),
                       bytes_text(g.rg.spec.memory_total),
                       fmt::format("{}", g.rg.spec.memory_bandwidth), g.rg.source);
}

std::string deployment_repr(const PyDeployment& d) {
    const kvplan::Deployment& x = d.deployment;
    const kvplan::ParallelConfig& p = x.parallel;
    std::string s =
        fmt::format("<kvplan.Deployment {} on {} x {} (", d.model->rm.id, d.gpus, d.gpu->rg.id);
    if (p.dp > 1) s += fmt::format("dp {} x ", p.dp);
    s += fmt::format("tp {} x pp {}", p.tp, p.pp);
    if (p.ep > 1) s += fmt::format(", ep {}", p.ep);
    if (p.dcp > 1) s += fmt::format(", dcp {}", p.dcp);
    if (d.replicas > 1) s += fmt::format(", {} replicas", d.replicas);
    s += fmt::format("), KV {}, {}>", name(x.kv.dtype), name(x.serving.engine));
    return s;
}

std::string answer_repr(PyAnswer& a) {
    return fmt::format("<kvplan.ReplicaAnswer {}>", kvplan::cli::verdict_line(a.a, a.dep->gpu->rg));
}

std::string point_repr(const kvplan::DecodePoint& p) {
    return fmt::format(
        "<kvplan.DecodePoint batch {} x {} tokens: TPOT {}, {:.1f} tokens/s, {}-bound>",
        grouped(p.batch), grouped(p.context), seconds_text(p.tpot), p.tokens_per_s, name(p.bound));
}

// ---------------------------------------------------------------------------------------------
// Docstrings.

constexpr const char* module_doc =
    R"(The compiled half of kvplan: use the kvplan package instead.)";

constexpr const char* model_doc = R"(A model, resolved as kvplan's --model resolves it.

source is a bundled id ("llama-3-70b", see Model.bundled()), a built-in preset, or a path
(str or os.PathLike) to a Hugging Face config.json or to a folder holding one. The two
keywords are vLLM's flags for the state of Mamba and linear-attention layers.
Model.from_fields(...) builds a plain decoder from its config.json numbers instead.

Raises kvplan.InvalidInputError for an unknown id (with the nearest one) or a file that
cannot be read, parsed or mapped, and kvplan.InvalidModelError for numbers no model has.)";

constexpr const char* gpu_doc = R"(A GPU, resolved as kvplan's --gpu resolves it.

source is a bundled id or alias ("h100-sxm", "h100"; see Gpu.bundled()) or a path to a GPU
spec JSON (configs/gpus/README.md). Raises kvplan.InvalidInputError for an unknown id (with
the nearest one) or a bad spec file.)";

constexpr const char* deployment_doc = R"(A model served on GPUs, prepared for many evaluations.

model and gpu are kvplan.Model and kvplan.Gpu objects, or what their constructors take.
Every keyword is the kvplan fit flag of the same name and reads its value the same way
(kv_memory: an int of bytes or a string naming its unit, "5.38GiB"; None: the flag's
default; draft_model: a kvplan.Model or what its constructor takes; profile: a path to a
calibration profile, as --profile). gpus is every GPU deployed, a multiple of a replica's
GPUs: gpus / replica_gpus replicas share the concurrency.

dp, ep and dcp are the library's parallel layout, read in the engine's flags (the command
line's plan searches them): dp attention data-parallel ranks (vLLM --data-parallel-size, a
replica of dp x tp x pp GPUs; SGLang --dp-size with --enable-dp-attention, within the tp
GPUs), ep the GPUs the routed experts spread over (vLLM --enable-expert-parallel: dp x tp),
dcp the ranks a sequence's tokens split over (vLLM --decode-context-parallel-size).

Construction checks the deployment (the layout, the engine's knobs) and computes once what
no GPU or demand changes: the layout, each stage's weights and matmul shapes, the drafter.
Then evaluate(context, concurrency) answers in microseconds, with the figures kvplan.fit
gives.

Raises kvplan.UsageError for a value a flag would refuse (naming the keyword),
kvplan.InvalidLayoutError for a layout the model cannot take, kvplan.InvalidInputError for a
knob the engine cannot take.)";

constexpr const char* evaluate_doc =
    R"(evaluate($self, /, context=None, concurrency=1, *, prompt_tokens=None, output_tokens=None,
         shared_prefix_tokens=None)
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

constexpr const char* roofline_doc = R"(The decode and prefill lower bounds of a deployment.

Deployment.roofline(compute_dtype=None) prepares the costs that depend on neither batch
nor context; point(), decode() and prefill() then cost little. The figures are kvplan
roofline's for the same inputs: bounds at peak bandwidth and FLOP/s, no real step is faster.)";

constexpr const char* pool_doc = R"(A block pool that admits requests as vLLM's scheduler does.

One pool of num_blocks blocks (the null block included), shared by its KV-cache groups:
one full-attention group of block_size tokens (default 16), or the kvplan.BlockGroup list
given. Deployment.block_pool() gives the pool the engine builds for a deployment.

A scheduler calls admit() for a waiting request, grow() for each later step and
release() when it finishes or is preempted. policy "engine" admits as vLLM does (a grow
may find the pool dry; vLLM then preempts); "no_preemption" reserves each running
request's peak so that no grow fails.)";

}  // namespace

PYBIND11_MODULE(_kvplan, m) {
    m.doc() = module_doc;
    // Each docstring starts with its Python signature ("name($self, /, ...)" and "--"), which
    // help() and inspect.signature read, instead of pybind11's C++ types.
    py::options options;
    options.disable_function_signatures();
    py::register_exception_translator(&translate);
    m.attr("version") = kvplan::version_string;
    m.attr("source_config_dir") = KVPLAN_CONFIG_DIR;

    m.def("set_config_dir", [](const std::string& dir) { config_dir() = dir; });
    m.def("get_config_dir", [] { return config_dir().string(); });

    m.def(
        "run",
        [](const std::vector<std::string>& args) {
            std::ostringstream out, err;
            int code = 0;
            {
                py::gil_scoped_release release;
                code = kvplan::cli::run(args, out, err, config_dir());
            }
            return py::make_tuple(code, py::bytes(out.str()), py::bytes(err.str()));
        },
        py::arg("args"),
        "run(args)\n--\n\nRuns the kvplan command line: (exit code, stdout, stderr).");

    m.def("describe", [] {
        py::list commands;
        for (const kvplan::cli::CommandInfo& c : kvplan::cli::describe()) {
            py::list flags;
            for (const kvplan::cli::FlagInfo& f : c.flags)
                flags.append(py::dict(
                    py::arg("name") = f.name, py::arg("names") = f.names,
                    py::arg("description") = f.description, py::arg("default") = f.default_value,
                    py::arg("positional") = f.positional, py::arg("takes_value") = f.takes_value,
                    py::arg("required") = f.required));
            commands.append(py::dict(py::arg("name") = c.name,
                                     py::arg("description") = c.description,
                                     py::arg("flags") = flags));
        }
        return commands;
    });

    // Model --------------------------------------------------------------------------------
    py::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model", model_doc)
        .def(py::init(&model_from), py::arg("source"), py::kw_only(),
             py::arg("mamba_cache_dtype") = "auto", py::arg("mamba_ssm_cache_dtype") = "auto",
             "__init__(self, /, source, *, mamba_cache_dtype='auto', "
             "mamba_ssm_cache_dtype='auto')\n--\n\nThe model `source` names: a bundled id, a "
             "preset, or a path to a config.json or its folder.")
        .def_static(
            "from_fields", &model_from_fields, py::kw_only(), py::arg("name") = "",
            py::arg("num_hidden_layers"), py::arg("hidden_size"), py::arg("num_attention_heads"),
            py::arg("num_key_value_heads") = 0, py::arg("head_dim") = 0, py::arg("vocab_size"),
            py::arg("intermediate_size") = 0, py::arg("num_experts") = 0,
            py::arg("num_experts_per_tok") = 0, py::arg("moe_intermediate_size") = 0,
            py::arg("sliding_window") = 0, py::arg("max_position_embeddings") = 0,
            py::arg("tie_word_embeddings") = false,
            R"(from_fields(*, name='', num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads=0, head_dim=0, vocab_size, intermediate_size=0, num_experts=0, num_experts_per_tok=0, moe_intermediate_size=0, sliding_window=0, max_position_embeddings=0, tie_word_embeddings=False)
--

A plain decoder from the config.json fields it mirrors.

A Llama-like decoder (gated MLP, RMSNorm, no biases) with optional grouped-query attention
(num_key_value_heads, 0: as many as the attention heads), an optional sliding window on
every layer and optional mixture-of-experts MLPs (num_experts, num_experts_per_tok,
moe_intermediate_size). head_dim 0: hidden_size / num_attention_heads.
Raises kvplan.InvalidModelError naming the field no model could have.)")
        .def_static(
            "bundled",
            [] {
                std::vector<std::string> ids;
                for (const auto& l : kvplan::cli::bundled_models(context())) ids.push_back(l.id);
                return ids;
            },
            "bundled()\n--\n\nThe ids of the bundled models and built-in presets.")
        .def_property_readonly(
            "id", [](const PyModel& m) { return m.rm.id; },
            "What it was resolved from: a bundled id or a path (the name for an inline model).")
        .def_property_readonly(
            "source", [](const PyModel& m) { return m.rm.source; },
            "Where its numbers come from: a file, a built-in preset, inline fields.")
        .def_property_readonly(
            "name", [](const PyModel& m) { return std::string(m.get().name()); },
            "The model's name, as its config states it.")
        .def_property_readonly(
            "num_layers", [](const PyModel& m) { return m.get().num_layers(); }, "Layers.")
        .def_property_readonly("hidden_size",
                               [](const PyModel& m) { return m.get().config().hidden_size; })
        .def_property_readonly("num_attention_heads",
                               [](const PyModel& m) { return m.get().config().num_heads; })
        .def_property_readonly("vocab_size",
                               [](const PyModel& m) { return m.get().config().vocab_size; })
        .def_property_readonly(
            "context_limit_tokens",
            [](const PyModel& m) { return kvplan::context_limit(m.get().config()).tokens; },
            "The longest context the model takes (vLLM's max_model_len rule, rope scaling "
            "applied).")
        .def_property_readonly(
            "num_params", [](const PyModel& m) { return kvplan::total_params(m.get()); },
            "Parameters of every tensor, tied embeddings once.")
        .def(
            "kv_bytes_per_token",
            [](const PyModel& m, const std::string& kv_dtype) {
                return kvplan::kv_bytes_per_token(m.get(), kv_format(kv_dtype)).count();
            },
            py::arg("kv_dtype") = "bf16",
            "kv_bytes_per_token($self, /, kv_dtype='bf16')\n--\n\nKV bytes one token takes over "
            "the whole model (kvplan size's kv_bytes_per_token).")
        .def(
            "kv_bytes_per_sequence",
            [](const PyModel& m, py::handle context, const std::string& kv_dtype) {
                return kvplan::kv_bytes_per_sequence(m.get(), kv_format(kv_dtype),
                                                     to_tokens(context, "context"))
                    .count();
            },
            py::arg("context"), py::arg("kv_dtype") = "bf16",
            "kv_bytes_per_sequence($self, /, context, kv_dtype='bf16')\n--\n\nKV bytes of one "
            "sequence of `context` tokens, windows and fixed state included "
            "(kvplan size's kv_bytes_per_sequence).")
        .def("__repr__", &model_repr);

    // Gpu ----------------------------------------------------------------------------------
    py::class_<PyGpu, std::shared_ptr<PyGpu>>(m, "Gpu", gpu_doc)
        .def(py::init(&gpu_from), py::arg("source"),
             "__init__(self, /, source)\n--\n\nThe GPU `source` names: a bundled id or alias, "
             "or a path to a spec JSON.")
        .def_static(
            "bundled",
            [] {
                std::vector<std::string> ids;
                for (const auto& g : kvplan::cli::bundled_gpus(context())) ids.push_back(g.id);
                return ids;
            },
            "bundled()\n--\n\nThe ids of the bundled GPUs.")
        .def_property_readonly(
            "id", [](const PyGpu& g) { return g.rg.id; }, "The canonical id.")
        .def_property_readonly(
            "name", [](const PyGpu& g) { return std::string(g.rg.spec.name); },
            "The vendor's product name.")
        .def_property_readonly(
            "source", [](const PyGpu& g) { return g.rg.source; }, "The spec file.")
        .def_property_readonly("aliases", [](const PyGpu& g) { return g.rg.aliases; })
        .def_property_readonly(
            "memory_bytes", [](const PyGpu& g) { return g.rg.spec.memory_total.count(); },
            "Memory as the CUDA runtime reports its total, in bytes: where every budget starts.")
        .def_property_readonly(
            "memory_bytes_stated", [](const PyGpu& g) { return g.rg.spec.memory_stated.count(); },
            "The vendor's figure, read in SI units (80 GB = 80e9 bytes), as `kvplan list gpus` "
            "names it.")
        .def_property_readonly(
            "memory_stated_bytes", [](const PyGpu& g) { return g.rg.spec.memory_stated.count(); },
            "The earlier name of memory_bytes_stated.")
        .def_property_readonly(
            "memory_bandwidth_bytes_per_s",
            [](const PyGpu& g) { return g.rg.spec.memory_bandwidth.in(kvplan::B_per_s); },
            "Peak memory bandwidth, bytes per second.")
        .def(
            "dense_flops_per_s",
            [](const PyGpu& g, const std::string& compute_dtype) -> py::object {
                kvplan::ComputeDtype d{};
                try {
                    d = kvplan::cli::compute_dtype_flag(compute_dtype)
                            .value_or(kvplan::ComputeDtype::bf16);
                } catch (const UsageError& e) {
                    throw UsageError(keyword_message(e.what()));
                }
                const auto f = g.rg.spec.dense(d);
                return f ? py::object(py::float_(f->in(kvplan::FLOP_per_s))) : py::none();
            },
            py::arg("compute_dtype") = "bf16",
            "dense_flops_per_s($self, /, compute_dtype='bf16')\n--\n\nPeak dense tensor FLOP/s in "
            "a compute type, or None when the GPU has none.")
        .def("__repr__", &gpu_repr);

    // Deployment ---------------------------------------------------------------------------
    py::class_<PyDeployment, std::shared_ptr<PyDeployment>>(m, "Deployment", deployment_doc)
        .def(py::init(&make_deployment), py::arg("model"), py::arg("gpu"), py::kw_only(),
             py::arg("tp") = 1, py::arg("pp") = 1, py::arg("dp") = 1, py::arg("ep") = 1,
             py::arg("dcp") = 1, py::arg("gpus") = py::none(), py::arg("kv_dtype") = "bf16",
             py::arg("weight_dtype") = py::none(), py::arg("expert_dtype") = py::none(),
             py::arg("engine") = "vllm", py::arg("block_size") = py::none(),
             py::arg("gpu_memory_utilization") = py::none(), py::arg("kv_memory") = py::none(),
             py::arg("max_num_seqs") = py::none(), py::arg("max_num_batched_tokens") = py::none(),
             py::arg("num_gpu_blocks_override") = py::none(), py::arg("allow_long_context") = false,
             py::arg("speculative_method") = py::none(),
             py::arg("num_speculative_tokens") = py::none(), py::arg("draft_model") = py::none(),
             py::arg("profile") = py::none(),
             "__init__(self, /, model, gpu, *, tp=1, pp=1, dp=1, ep=1, dcp=1, gpus=None, "
             "kv_dtype='bf16', weight_dtype=None, expert_dtype=None, engine='vllm', "
             "block_size=None, gpu_memory_utilization=None, kv_memory=None, max_num_seqs=None, "
             "max_num_batched_tokens=None, num_gpu_blocks_override=None, "
             "allow_long_context=False, speculative_method=None, num_speculative_tokens=None, "
             "draft_model=None, profile=None)\n--\n\nChecks and prepares the deployment (see "
             "the class).")
        .def("evaluate", &evaluate, py::arg("context") = py::none(), py::arg("concurrency") = 1,
             py::kw_only(), py::arg("prompt_tokens") = py::none(),
             py::arg("output_tokens") = py::none(), py::arg("shared_prefix_tokens") = py::none(),
             evaluate_doc)
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
                const kvplan::DraftMethod m = d.deployment.serving.speculation.method;
                if (m == kvplan::DraftMethod::none) return py::none();
                return py::str(name(m));
            },
            "vLLM's speculative_config method, or None.")
        .def_property_readonly("kv_dtype",
                               [](const PyDeployment& d) { return name(d.deployment.kv.dtype); })
        .def_property_readonly(
            "engine",
            [](const PyDeployment& d) { return std::string(name(d.deployment.serving.engine)); })
        .def_property_readonly(
            "context_limit_tokens", [](const PyDeployment& d) { return d.default_context; },
            "The model's limit, the context evaluate() takes by default.")
        .def("__repr__", &deployment_repr);

    // ReplicaAnswer ------------------------------------------------------------------------
    using A = PyAnswer;
    const auto mem = [](const A& x) -> const kvplan::EngineMemory& { return x.a.memory(); };
    const auto reserve = [mem](const A& x, Bytes kvplan::EngineMemory::*f) -> py::object {
        if (x.a.serving.engine == kvplan::Engine::ideal) return py::none();
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
            "Why the engine does not start: none, context_limit, weights, outside_fraction, "
            "request or cache.")
        .def_property_readonly(
            "verdict", [](const A& x) { return kvplan::cli::verdict_line(x.a, x.dep->gpu->rg); },
            "The verdict line, as kvplan fit prints it.")
        .def_property_readonly(
            "heading",
            [](const A& x) { return kvplan::cli::answer_heading(x.a, x.dep->model->rm); },
            "What was evaluated, in a line: model, formats, engine, blocks, context limit.")
        .def_property_readonly(
            "notes",
            [](const A& x) {
                kvplan::cli::Report rep;
                kvplan::cli::append_model_notes(rep, x.dep->model->rm);
                kvplan::cli::append_answer_notes(rep, x.a);
                kvplan::cli::append_estimate_notes(
                    rep, x.a, x.dep->profile_path,
                    "fit's verdict is about memory and uses neither");
                if (x.a.starts())
                    kvplan::cli::append_serve_commands(
                        rep, x.dep->deployment, x.a.demand,
                        kvplan::cli::served_model(x.dep->model->rm, context()));
                kvplan::cli::append_profile_notes(rep, x.dep->profile, x.dep->profile_path,
                                                  x.dep->model->rm.id);
                return rep.notes;
            },
            "What a reader needs beside the figures, as kvplan fit's notes.")
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
                if (x.a.serving.engine != kvplan::Engine::vllm) return py::none();
                return py::str(x.a.serving.engine_version.text());
            },
            "The vLLM release whose defaults apply (None for other engines).")
        .def_property_readonly(
            "gpu_memory_utilization",
            [](const A& x) -> py::object {
                if (x.a.serving.engine != kvplan::Engine::vllm) return py::none();
                return py::float_(x.a.serving.budget.utilization);
            },
            "The fraction of GPU memory vLLM takes (None for other engines).")
        .def_property_readonly(
            "attention_backend",
            [](const A& x) -> py::object {
                if (x.a.serving.engine != kvplan::Engine::vllm || !x.a.serving.backend)
                    return py::none();
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
            [reserve](const A& x) { return reserve(x, &kvplan::EngineMemory::activation); })
        .def_property_readonly(
            "cuda_graph_bytes",
            [reserve](const A& x) { return reserve(x, &kvplan::EngineMemory::cuda_graphs); })
        .def_property_readonly(
            "cuda_context_bytes",
            [reserve](const A& x) { return reserve(x, &kvplan::EngineMemory::cuda_context); })
        .def_property_readonly(
            "comm_buffer_bytes",
            [reserve](const A& x) { return reserve(x, &kvplan::EngineMemory::comm_buffers); })
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
                if (x.a.serving.engine != kvplan::Engine::vllm || !x.a.report.vllm.refused.empty())
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
                return py::float_(x.a.decode->tpot.in(kvplan::seconds));
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
                const kvplan::Placement& p = x.a.placement;
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
            [](const A& x) { return estimate_seconds(x.a, &kvplan::LatencyEstimate::itl); })
        .def_property_readonly(
            "tpot_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &kvplan::LatencyEstimate::tpot); })
        .def_property_readonly(
            "itl_bound_seconds",
            [](const A& x) { return estimate_seconds(x.a, &kvplan::LatencyEstimate::itl_bound); })
        .def_property_readonly(
            "ttft_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &kvplan::LatencyEstimate::ttft); })
        .def_property_readonly("ttft_prefill_estimate_seconds",
                               [](const A& x) {
                                   return estimate_seconds(x.a,
                                                           &kvplan::LatencyEstimate::ttft_prefill);
                               })
        .def_property_readonly("ttft_in_flight_estimate_seconds",
                               [](const A& x) {
                                   return estimate_seconds(
                                       x.a, &kvplan::LatencyEstimate::ttft_in_flight);
                               })
        .def_property_readonly(
            "ttft_queue_estimate_seconds",
            [](const A& x) { return estimate_seconds(x.a, &kvplan::LatencyEstimate::ttft_queue); })
        .def_property_readonly(
            "ttft_bound_seconds",
            [](const A& x) { return estimate_seconds(x.a, &kvplan::LatencyEstimate::ttft_bound); })
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
                return py::float_(x.a.estimate_params.layer_overhead.in(kvplan::seconds));
            })
        .def_property_readonly(
            "estimate_all_reduce_latency_seconds",
            [](const A& x) -> py::object {
                if (!x.a.estimate) return py::none();
                return py::float_(x.a.estimate_params.all_reduce_latency.in(kvplan::seconds));
            })
        .def("__bool__", [](const A& x) { return x.a.fits(); })
        .def("__repr__", &answer_repr);

    // Roofline -----------------------------------------------------------------------------
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
            "itl_seconds", [](const PyEstimate& x) { return x.e.itl.in(kvplan::seconds); },
            "Mean inter-token latency.")
        .def_property_readonly(
            "tpot_seconds", [](const PyEstimate& x) { return x.e.tpot.in(kvplan::seconds); },
            "Time per output token after the first.")
        .def_property_readonly(
            "ttft_seconds", [](const PyEstimate& x) { return x.e.ttft.in(kvplan::seconds); },
            "Prefill + half a step in flight + the queue.")
        .def_property_readonly(
            "ttft_prefill_seconds",
            [](const PyEstimate& x) { return x.e.ttft_prefill.in(kvplan::seconds); })
        .def_property_readonly(
            "ttft_in_flight_seconds",
            [](const PyEstimate& x) { return x.e.ttft_in_flight.in(kvplan::seconds); })
        .def_property_readonly(
            "ttft_queue_seconds",
            [](const PyEstimate& x) { return x.e.ttft_queue.in(kvplan::seconds); })
        .def_property_readonly(
            "request_seconds", [](const PyEstimate& x) { return x.e.request.in(kvplan::seconds); },
            "A request's time once admitted.")
        .def_property_readonly(
            "itl_bound_seconds",
            [](const PyEstimate& x) { return x.e.itl_bound.in(kvplan::seconds); },
            "The decode bound at the running sequences of the prompt's tokens.")
        .def_property_readonly(
            "ttft_bound_seconds",
            [](const PyEstimate& x) { return x.e.ttft_bound.in(kvplan::seconds); },
            "The prefill bound of one prompt alone.")
        .def_property_readonly("tokens_per_second",
                               [](const PyEstimate& x) { return x.e.tokens_per_s; })
        .def_property_readonly("tokens_per_second_per_gpu",
                               [](const PyEstimate& x) { return x.e.tokens_per_s_per_gpu; })
        .def_property_readonly("bandwidth_fraction",
                               [](const PyEstimate& x) { return x.params.bandwidth; })
        .def_property_readonly("compute_fraction",
                               [](const PyEstimate& x) { return x.params.compute; })
        .def_property_readonly(
            "layer_overhead_seconds",
            [](const PyEstimate& x) { return x.params.layer_overhead.in(kvplan::seconds); })
        .def_property_readonly(
            "all_reduce_latency_seconds",
            [](const PyEstimate& x) { return x.params.all_reduce_latency.in(kvplan::seconds); })
        .def("__repr__", [](const PyEstimate& x) {
            return fmt::format(
                "<kvplan.LatencyEstimate {} running, {} waiting: ITL {}, TTFT {}, {:.1f} tokens/s>",
                grouped(x.e.running), grouped(x.e.waiting), seconds_text(x.e.itl),
                seconds_text(x.e.ttft), x.e.tokens_per_s);
        });

    py::class_<PyDecodePoint>(m, "DecodePoint",
                              "A decode step's lower bound at a batch and context, as kvplan "
                              "roofline's points give it.")
        .def_property_readonly("batch", [](const PyDecodePoint& p) { return p.p.batch; })
        .def_property_readonly("context_tokens", [](const PyDecodePoint& p) { return p.p.context; })
        .def_property_readonly("decode_step_seconds",
                               [](const PyDecodePoint& p) { return p.p.step.in(kvplan::seconds); })
        .def_property_readonly("tpot_seconds",
                               [](const PyDecodePoint& p) { return p.p.tpot.in(kvplan::seconds); })
        .def_property_readonly("tokens_per_second",
                               [](const PyDecodePoint& p) { return p.p.tokens_per_s; })
        .def_property_readonly("tokens_per_second_per_gpu",
                               [](const PyDecodePoint& p) { return p.p.tokens_per_s_per_gpu; })
        .def_property_readonly(
            "bound", [](const PyDecodePoint& p) { return std::string(name(p.p.bound)); },
            "\"memory\" or \"compute\".")
        .def("__repr__", [](const PyDecodePoint& p) { return point_repr(p.p); });

    py::class_<PyDecodeBound>(m, "DecodeBound",
                              "A decode step's lower bound with its limiting stage's bytes and "
                              "FLOPs, as kvplan roofline gives one point.")
        .def_property_readonly("batch", [](const PyDecodeBound& b) { return b.d.batch; })
        .def_property_readonly("context_tokens",
                               [](const PyDecodeBound& b) { return b.d.longest_context; })
        .def_property_readonly("decode_step_seconds",
                               [](const PyDecodeBound& b) { return b.d.step.in(kvplan::seconds); })
        .def_property_readonly("tpot_seconds",
                               [](const PyDecodeBound& b) { return b.d.tpot.in(kvplan::seconds); })
        .def_property_readonly("tokens_per_second",
                               [](const PyDecodeBound& b) { return b.d.tokens_per_s; })
        .def_property_readonly("tokens_per_second_per_gpu",
                               [](const PyDecodeBound& b) { return b.d.tokens_per_s_per_gpu; })
        .def_property_readonly(
            "bytes_per_step",
            [](const PyDecodeBound& b) { return b.d.stages[b.d.limiting_stage].bytes().count(); },
            "Bytes read per step per GPU of the slowest stage: weights and KV.")
        .def_property_readonly(
            "flops_per_step",
            [](const PyDecodeBound& b) {
                return b.d.stages[b.d.limiting_stage].flops().in(kvplan::FLOP);
            },
            "FLOPs per step per GPU of the slowest stage.")
        .def_property_readonly("bound",
                               [](const PyDecodeBound& b) { return std::string(name(b.d.bound)); })
        .def_property_readonly(
            "all_reduce_seconds",
            [](const PyDecodeBound& b) { return b.d.all_reduce.per_step.in(kvplan::seconds); },
            "The tensor-parallel all-reduce time of a step (not in the bound).")
        .def_property_readonly("limiting_stage",
                               [](const PyDecodeBound& b) { return b.d.limiting_stage; })
        .def_property_readonly("micro_batches",
                               [](const PyDecodeBound& b) { return b.d.micro_batches; })
        .def("__repr__", [](const PyDecodeBound& b) { return point_repr(kvplan::point_of(b.d)); });

    py::class_<PyPrefill>(m, "PrefillBound", "A prefill's lower bound (time to first token).")
        .def_property_readonly("prompt_tokens",
                               [](const PyPrefill& p) { return p.p.prompt_tokens; })
        .def_property_readonly("prompts", [](const PyPrefill& p) { return p.p.prompts; })
        .def_property_readonly("prefill_seconds",
                               [](const PyPrefill& p) { return p.p.ttft.in(kvplan::seconds); })
        .def_property_readonly("prefill_bound",
                               [](const PyPrefill& p) { return std::string(name(p.p.bound)); })
        .def("__repr__", [](const PyPrefill& p) {
            return fmt::format("<kvplan.PrefillBound {} x {} tokens: {}, {}-bound>", p.p.prompts,
                               grouped(p.p.prompt_tokens), seconds_text(p.p.ttft), name(p.p.bound));
        });

    const auto roofline_context = [](const PyRoofline& r, py::handle context) {
        return context.is_none() ? r.dep->default_context : to_tokens(context, "context");
    };
    py::class_<PyRoofline, std::shared_ptr<PyRoofline>>(m, "Roofline", roofline_doc)
        .def(
            "point",
            [roofline_context](const PyRoofline& r, py::handle batch, py::handle context) {
                return PyDecodePoint{kvplan::decode_point(
                    r.costs, to_count(batch, "batch", "sequences"), roofline_context(r, context))};
            },
            py::arg("batch"), py::arg("context") = py::none(),
            "point($self, /, batch, context=None)\n--\n\nThe decode bound of `batch` sequences of "
            "`context` tokens (None: the model's "
            "limit): a kvplan.DecodePoint, the fastest way to ask.")
        .def(
            "decode",
            [roofline_context](const PyRoofline& r, py::handle batch, py::handle context) {
                return PyDecodeBound{kvplan::decode_bound(
                    r.costs, to_count(batch, "batch", "sequences"), roofline_context(r, context))};
            },
            py::arg("batch"), py::arg("context") = py::none(),
            "decode($self, /, batch, context=None)\n--\n\nThe decode bound with its bytes and "
            "FLOPs per step: a kvplan.DecodeBound.")
        .def(
            "prefill",
            [roofline_context](const PyRoofline& r, py::handle context, py::handle prompts) {
                return PyPrefill{kvplan::prefill_bound(r.replica, roofline_context(r, context),
                                                       to_count(prompts, "prompts", "prompts"),
                                                       r.options)};
            },
            py::arg("context") = py::none(), py::arg("prompts") = 1,
            "prefill($self, /, context=None, prompts=1)\n--\n\nThe prefill bound of `prompts` "
            "prompts of `context` tokens: a kvplan.PrefillBound.")
        .def(
            "compute_bound_batch",
            [roofline_context](const PyRoofline& r, py::handle context, py::handle max_batch) {
                return optional_count(
                    kvplan::compute_bound_batch(r.replica, roofline_context(r, context), r.options,
                                                to_count(max_batch, "max_batch", "sequences")));
            },
            py::arg("context") = py::none(), py::arg("max_batch") = 1ULL << 20,
            "compute_bound_batch($self, /, context=None, max_batch=1048576)\n--\n\nThe smallest "
            "batch whose decode step is compute-bound, or None when memory still "
            "bounds it at max_batch.")
        .def_property_readonly(
            "compute_dtype",
            [](const PyRoofline& r) { return std::string(name(*r.options.compute)); })
        .def("__repr__", [](const PyRoofline& r) {
            return fmt::format("<kvplan.Roofline of {} in {}>", deployment_repr(*r.dep),
                               name(*r.options.compute));
        });

    // Block pools --------------------------------------------------------------------------
    py::class_<kvplan::BlockGroup>(
        m, "BlockGroup",
        R"(KV-cache groups of one kind in a block pool, as vLLM's managers hold them.

kind: "full" (every block until the request ends), "sliding_window" or "chunked_local"
(only the blocks the window or chunk of `span` tokens reaches), or "state" (a Mamba or
linear-attention state: one block). count: groups of this kind, each its own table.
admission_cap: the most blocks vLLM's whole-prompt check counts for one windowed table.
align: a state in vLLM's "align" mode (prefix caching).)")
        .def(py::init([](const std::string& kind, py::handle count, py::handle block_size,
                         py::handle span, py::handle admission_cap, bool align) {
                 kvplan::BlockGroup g;
                 g.kind = group_kind_of(kind);
                 const std::uint64_t c = to_count(count, "count", "groups");
                 const std::uint64_t b = to_count(block_size, "block_size", "tokens");
                 if (c > 0xFFFF'FFFFULL) usage("count", "at most 4294967295", std::to_string(c));
                 if (b > 0xFFFF'FFFFULL)
                     usage("block_size", "at most 4294967295 tokens", std::to_string(b));
                 g.count = static_cast<std::uint32_t>(c);
                 g.block_size = static_cast<std::uint32_t>(b);
                 g.span = to_count(span, "span", "tokens", 0);
                 g.admission_cap = to_count(admission_cap, "admission_cap", "blocks", 0);
                 g.align = align;
                 return g;
             }),
             py::arg("kind") = "full", py::arg("count") = 1, py::arg("block_size") = 16,
             py::arg("span") = 0, py::arg("admission_cap") = 0, py::arg("align") = false,
             "__init__(self, /, kind='full', count=1, block_size=16, span=0, admission_cap=0, "
             "align=False)\n--\n\nA group of `count` tables of `kind` (see the class).")
        .def_property_readonly(
            "kind", [](const kvplan::BlockGroup& g) { return std::string(name(g.kind)); })
        .def_readonly("count", &kvplan::BlockGroup::count)
        .def_readonly("block_size", &kvplan::BlockGroup::block_size)
        .def_readonly("span", &kvplan::BlockGroup::span)
        .def_readonly("admission_cap", &kvplan::BlockGroup::admission_cap)
        .def_readonly("align", &kvplan::BlockGroup::align)
        .def("__repr__", [](const kvplan::BlockGroup& g) {
            std::string s = fmt::format("kvplan.BlockGroup(kind='{}', count={}, block_size={}",
                                        name(g.kind), g.count, g.block_size);
            if (g.span != 0) s += fmt::format(", span={}", g.span);
            if (g.admission_cap != 0) s += fmt::format(", admission_cap={}", g.admission_cap);
            if (g.align) s += ", align=True";
            return s + ")";
        });

    py::class_<PyPrefix>(m, "Prefix",
                         R"(A prompt prefix that requests share through prefix caching.

`tokens` is a multiple of every group's block size. Its full-attention blocks
are held once while any request that uses it runs. Pass it to BlockPool.admit(prefix=...);
set `cached = False` when the engine evicts it.)")
        .def(py::init([](py::handle tokens) {
                 return PyPrefix{
                     kvplan::SharedPrefix{.tokens = to_count(tokens, "tokens", "tokens")}};
             }),
             py::arg("tokens"), "__init__(self, /, tokens)\n--\n\nA prefix of `tokens` tokens.")
        .def_property_readonly("tokens", [](const PyPrefix& p) { return p.p.tokens; })
        .def_property_readonly(
            "holders", [](const PyPrefix& p) { return p.p.holders; },
            "Running requests that use it.")
        .def_property_readonly(
            "blocks", [](const PyPrefix& p) { return p.p.blocks; }, "Blocks it holds while held.")
        .def_property(
            "cached", [](const PyPrefix& p) { return p.p.cached; },
            [](PyPrefix& p, bool cached) { p.p.cached = cached; },
            "Its blocks are in the cache: a request that finds it computes only the rest of "
            "its prompt.")
        .def("__repr__", [](const PyPrefix& p) {
            return fmt::format("<kvplan.Prefix {} tokens, {} holders, {} blocks{}>",
                               grouped(p.p.tokens), p.p.holders, grouped(p.p.blocks),
                               p.p.cached ? ", cached" : "");
        });

    py::class_<PyRequest>(m, "Request",
                          "One request's share of a block pool, from BlockPool.admit(): pass it "
                          "to grow() and release().")
        .def_property_readonly("prompt", [](const PyRequest& q) { return q.r.prompt; })
        .def_property_readonly("max_new", [](const PyRequest& q) { return q.r.max_new; })
        .def_property_readonly(
            "tokens", [](const PyRequest& q) { return q.r.tokens; },
            "Tokens with a slot after its last step.")
        .def_property_readonly("chunk", [](const PyRequest& q) { return q.r.chunk; })
        .def_property_readonly(
            "blocks", [](const PyRequest& q) { return q.r.blocks(); },
            "Blocks it holds, its shared prefix's excluded.")
        .def_property_readonly(
            "committed", [](const PyRequest& q) { return q.r.committed; },
            "Blocks reserved for it (no_preemption).")
        .def_property_readonly("running", [](const PyRequest& q) { return q.r.running; })
        .def_property_readonly("prefix", [](const PyRequest& q) { return q.prefix; })
        .def("__repr__", [](const PyRequest& q) {
            return fmt::format("<kvplan.Request {} + {} tokens, {} computed, {} blocks{}>",
                               grouped(q.r.prompt), grouped(q.r.max_new), grouped(q.r.tokens),
                               grouped(q.r.blocks()), q.r.running ? "" : ", released");
        });

    py::class_<PyAdmission>(m, "Admission",
                            "What BlockPool.admit decided: true when admitted, with the Request.")
        .def_property_readonly(
            "status",
            [](const PyAdmission& a) {
                switch (a.res.status) {
                    case kvplan::AdmitStatus::admitted:
                        return "admitted";
                    case kvplan::AdmitStatus::wait:
                        return "wait";
                    case kvplan::AdmitStatus::never:
                        return "never";
                }
                return "wait";
            },
            "\"admitted\"; \"wait\": it fits once running requests free "
            "blocks; \"never\": not even in an empty pool.")
        .def_property_readonly(
            "blocks", [](const PyAdmission& a) { return a.res.blocks; },
            "Admitted: blocks taken; else blocks asked for.")
        .def_property_readonly(
            "available", [](const PyAdmission& a) { return a.res.available; },
            "Blocks the ask was compared with.")
        .def_property_readonly("request", [](const PyAdmission& a) { return a.request; })
        .def("__bool__", [](const PyAdmission& a) { return static_cast<bool>(a.res); })
        .def("__repr__", [](const PyAdmission& a) {
            const char* s = a.res.status == kvplan::AdmitStatus::admitted ? "admitted"
                            : a.res.status == kvplan::AdmitStatus::wait   ? "wait"
                                                                          : "never";
            return fmt::format("<kvplan.Admission {}: {} blocks, {} available>", s,
                               grouped(a.res.blocks), grouped(a.res.available));
        });

    py::class_<kvplan::GrowResult>(m, "Growth", "What BlockPool.grow did: true when grown.")
        .def_readonly("grown", &kvplan::GrowResult::grown)
        .def_readonly("taken", &kvplan::GrowResult::taken,
                      "Grown: blocks taken; else blocks the step asked for.")
        .def_readonly("freed", &kvplan::GrowResult::freed,
                      "Blocks the window let go, returned to the pool either way.")
        .def("__bool__", [](const kvplan::GrowResult& g) { return g.grown; })
        .def("__repr__", [](const kvplan::GrowResult& g) {
            return fmt::format("<kvplan.Growth {}: {} taken, {} freed>",
                               g.grown ? "grown" : "not grown", g.taken, g.freed);
        });

    py::class_<kvplan::RequestNeed>(m, "RequestNeed",
                                    "The blocks one request takes in an otherwise empty pool.")
        .def_readonly("gate", &kvplan::RequestNeed::gate,
                      "vLLM's whole-prompt check before its first step (0: off).")
        .def_readonly("admission", &kvplan::RequestNeed::admission, "Blocks its first step takes.")
        .def_readonly("peak", &kvplan::RequestNeed::peak, "The most it holds at any step.")
        .def_readonly("steady", &kvplan::RequestNeed::steady,
                      "The most it holds while decoding (0: it never decodes).")
        .def("__repr__", [](const kvplan::RequestNeed& n) {
            return fmt::format("<kvplan.RequestNeed gate {}, admission {}, peak {}, steady {}>",
                               n.gate, n.admission, n.peak, n.steady);
        });

    py::class_<PyPool, std::shared_ptr<PyPool>>(m, "BlockPool", pool_doc)
        .def(py::init(&make_pool), py::arg("num_blocks"), py::arg("block_size") = py::none(),
             py::kw_only(), py::arg("groups") = py::none(), py::arg("null_block") = true,
             py::arg("max_model_len") = 0, py::arg("watermark_blocks") = 0,
             py::arg("full_sequence_must_fit") = true, py::arg("policy") = "engine",
             "__init__(self, /, num_blocks, block_size=None, *, groups=None, null_block=True, "
             "max_model_len=0, watermark_blocks=0, full_sequence_must_fit=True, "
             "policy='engine')\n--\n\nA pool with every usable block free (see the class).")
        .def("admit", &admit, py::arg("prompt"), py::arg("max_new"), py::kw_only(),
             py::arg("prefix") = py::none(), py::arg("chunk") = 0,
             R"(admit($self, /, prompt, max_new, *, prefix=None, chunk=0)
--

Admits a waiting request of `prompt` tokens that may generate `max_new`, and runs
its first step (`chunk` prompt tokens after the prefix hit; 0: all of them).
Returns a kvplan.Admission: true with .request when admitted; .status "wait" when it fits
once running requests free blocks, "never" when it cannot run even alone.)")
        .def("grow", &grow, py::arg("request"), py::arg("n") = 1,
             R"(grow($self, /, request, n=1)
--

Runs a later step of `request` that computes `n` more tokens (the next prefill
chunk, or 1 when decoding). Returns a kvplan.Growth, false when the pool is dry (vLLM then
preempts a request: release() it and admit it again later).)")
        .def("release", &release, py::arg("request"),
             "release($self, /, request)\n--\n\nReturns every block `request` holds (finished or "
             "preempted); the blocks freed.")
        .def(
            "need",
            [](const PyPool& p, py::handle prompt_h, py::handle max_new_h, py::handle cached_h,
               py::handle chunk_h) {
                const std::uint64_t prompt = to_count(prompt_h, "prompt", "tokens");
                const std::uint64_t max_new = to_count(max_new_h, "max_new", "tokens");
                const std::uint64_t cached = to_count(cached_h, "cached", "tokens", 0);
                const std::uint64_t chunk = to_count(chunk_h, "chunk", "tokens", 0);
                if (cached >= prompt)
                    usage("cached", fmt::format("fewer tokens than the prompt's {}", prompt),
                          std::to_string(cached));
                return kvplan::request_need(p.pool.spec(), prompt, max_new, cached, chunk);
            },
            py::arg("prompt"), py::arg("max_new"), py::kw_only(), py::arg("cached") = 0,
            py::arg("chunk") = 0,
            "need($self, /, prompt, max_new, *, cached=0, chunk=0)\n--\n\nThe blocks a request "
            "takes in an empty pool of this spec: a kvplan.RequestNeed.")
        .def(
            "concurrent_requests",
            [](const PyPool& p, py::handle prompt_h, py::handle max_new_h) {
                return kvplan::concurrent_requests(p.pool.spec(),
                                                   to_count(prompt_h, "prompt", "tokens"),
                                                   to_count(max_new_h, "max_new", "tokens"));
            },
            py::arg("prompt"), py::arg("max_new"),
            "concurrent_requests($self, /, prompt, max_new)\n--\n\nRequests of one shape the pool "
            "runs at once under no_preemption.")
        .def_property_readonly("free_blocks", [](const PyPool& p) { return p.pool.free_blocks(); })
        .def_property_readonly("used_blocks", [](const PyPool& p) { return p.pool.used_blocks(); })
        .def_property_readonly("committed_blocks",
                               [](const PyPool& p) { return p.pool.committed_blocks(); })
        .def_property_readonly(
            "running", [](const PyPool& p) { return p.pool.running(); },
            "Requests admitted and not released.")
        .def_property_readonly("num_blocks",
                               [](const PyPool& p) { return p.pool.spec().num_blocks; })
        .def_property_readonly("usable_blocks",
                               [](const PyPool& p) { return p.pool.spec().usable_blocks(); })
        .def_property_readonly("max_model_len",
                               [](const PyPool& p) { return p.pool.spec().max_model_len; })
        .def_property_readonly("policy",
                               [](const PyPool& p) { return policy_name(p.pool.policy()); })
        .def_property_readonly("groups",
                               [](const PyPool& p) {
                                   const kvplan::BlockPoolSpec& s = p.pool.spec();
                                   return std::vector<kvplan::BlockGroup>(
                                       s.groups.begin(), s.groups.begin() + s.num_groups);
                               })
        .def("__repr__", [](const PyPool& p) {
            return fmt::format("<kvplan.BlockPool {} blocks, {} free, {} running, {}>",
                               grouped(p.pool.spec().num_blocks), grouped(p.pool.free_blocks()),
                               p.pool.running(), policy_name(p.pool.policy()));
        });
}
