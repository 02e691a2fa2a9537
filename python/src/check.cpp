// check and diff: a model judged against a policy file (kvplan::check_policy, plan/check.hpp),
// the changed config.json fields traced to the outcomes they move
// (kvplan::attribute_config_changes, policy/attribution.hpp); and two revisions of a config side
// by side (kvplan::json_field_changes, kvplan::size, kvplan::evaluate).

#include <cctype>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/json.hpp>
#include <kvplan/plan/check.hpp>
#include <kvplan/plan/size.hpp>
#include <kvplan/policy.hpp>
#include <kvplan/policy/attribution.hpp>
#include <utility>

#include "common.hpp"

namespace kvplan::python {

namespace {

namespace fs = std::filesystem;

/// A model as an argument or a policy names it, and the config.json behind it.
struct ModelInput {
    std::shared_ptr<PyModel> model;
    std::optional<fs::path> file{};  ///< its config.json, bundled ones included; none for a preset
    bool given_as_path = false;      ///< a path, not a bundled id: a file of the repository judged
};

ModelInput read_model(py::handle h) {
    ModelInput in{as_model(h)};
    if (!py::isinstance<py::str>(h) && !py::hasattr(h, "__fspath__")) return in;  // a kvplan.Model
    const std::string arg = path_text(h, "model");
    std::error_code ec;
    fs::path p{arg};
    if (fs::is_directory(p, ec)) p /= "config.json";
    if (fs::is_regular_file(p, ec)) {
        in.file = p;
        in.given_as_path = true;
    } else if (const auto bundled = find_bundled_model(config_dir(), arg)) {
        in.file = *bundled;
    }
    return in;
}

/// A JSON value as the command line prints it, or None where the field is absent.
py::object json_text(const std::optional<Json>& v) {
    return v ? py::object(py::str(v->dump())) : py::object(py::none());
}

/// A changed config.json field: check's attribution, or diff's plain change (no line, no moves).
struct PyConfigChange {
    std::string path;
    std::optional<Json> before, after;
    std::optional<std::uint32_t> line;
    std::vector<std::size_t> moves;  ///< the outcomes reverting it alone changes
};

struct PyOutcome {
    CheckOutcome o;
    const Requirement* q;
    const PolicyReplica* r;
    std::shared_ptr<const void> keep;  ///< the answer holding the policy
};

struct PyCheck {
    Policy policy;
    CheckResult result;
    std::shared_ptr<PyModel> model, baseline;
    std::vector<std::shared_ptr<PyGpu>> gpus;
    std::optional<ConfigAttribution> attribution;
};

/// What a policy names at `field`: a bundled id as written, else a file inside its folder.
std::string policy_gpu(const Policy& p, const PolicyReplica& r) {
    std::string lower = r.gpu;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::error_code ec;
    // A bundled id names its own file (configs/gpus/<id>.json): only an alias, a path or a typo
    // needs every spec's names.
    std::vector<std::string> names{r.gpu};
    if (lower.find('/') != std::string::npos || lower.find('\\') != std::string::npos ||
        !fs::is_regular_file(config_dir() / "gpus" / (lower + ".json"), ec))
        names = GpuRegistry::load(config_dir()).names();
    return policy_reference(p, r.path + ".gpu", r.gpu, names);
}

std::shared_ptr<PyCheck> check_of(py::handle policy, py::handle model, py::handle baseline) {
    auto out = std::make_shared<PyCheck>();
    out->policy = load_policy(path_text(policy, "policy"));
    const Policy& p = out->policy;
    ModelInput m;
    if (model.is_none()) {
        if (!p.model)
            usage("model", "a model (the policy names none: add \"model\" or model=)", "None");
        // A bundled id, else a path inside the policy's folder.
        std::vector<std::string> ids;
        for (const py::handle id : py::module_::import("kvplan").attr("Model").attr("bundled")())
            ids.push_back(py::cast<std::string>(id));
        m = read_model(py::str(policy_reference(p, "model", *p.model, ids, "config.json")));
    } else {
        m = read_model(model);
    }
    std::vector<GpuSpec> specs;
    for (const PolicyReplica& r : p.replicas) {
        out->gpus.push_back(as_gpu(py::str(policy_gpu(p, r))));
        specs.push_back(out->gpus.back()->spec);
    }
    std::optional<ModelInput> base;
    if (!baseline.is_none()) base = read_model(baseline);
    out->model = m.model;
    if (base) out->baseline = base->model;
    out->result = check_policy(p, m.model->get(), specs, base ? &base->model->get() : nullptr);
    // The changed fields traced to the outcomes they move: a model given as a config.json path
    // against a baseline with a config.json.
    if (base && m.given_as_path && m.file && base->file) {
        const Json now = read_json_file(*m.file, JsonNumbers::python, max_config_json_bytes);
        const Json before = read_json_file(*base->file, JsonNumbers::python, max_config_json_bytes);
        const std::string text = detail::read_input_text(*m.file, config_json_limit);
        const std::string source = m.file->string();
        const std::string model_name(m.model->get().name());
        out->attribution = attribute_config_changes({.config = &now,
                                                     .config_text = text,
                                                     .source = source,
                                                     .model_name = model_name,
                                                     .baseline = &before},
                                                    p, specs, base->model->get(), out->result);
    }
    return out;
}

std::vector<PyConfigChange> attributed(const ConfigAttribution& a) {
    std::vector<PyConfigChange> out;
    for (const ConfigChange& c : a.changes) {
        PyConfigChange x{c.path, c.before, c.after, c.line, {}};
        for (std::size_t i = 0; i < c.moves.size(); ++i)
            if (c.moves[i]) x.moves.push_back(i);
        out.push_back(std::move(x));
    }
    return out;
}

/// A figure in its unit: an int where it is a count, seconds for a TPOT, inf when unbounded.
py::object figure_value(const std::optional<FigureValue>& v) {
    if (!v) return py::none();
    if (v->unbounded || v->figure == CheckFigure::tpot) return py::float_(v->value());
    return py::int_(v->count);
}

// ---------------------------------------------------------------------------------------------
// diff

struct PyDiff {
    std::shared_ptr<PyModel> old_model, new_model;
    std::vector<PyConfigChange> changes;
    PySize old_size, new_size;
    Bytes old_weights, new_weights;
    std::optional<PyAnswer> old_answer, new_answer;
};

/// The config.json behind a model argument, if it is a file (a preset or a kvplan.Model has none).
std::optional<fs::path> config_file(py::handle h) {
    if (!py::isinstance<py::str>(h) && !py::hasattr(h, "__fspath__")) return std::nullopt;
    const std::string arg = path_text(h, "model");
    std::error_code ec;
    fs::path p{arg};
    if (fs::is_directory(p, ec)) p /= "config.json";
    if (fs::is_regular_file(p, ec)) return p;
    return find_bundled_model(config_dir(), arg);
}

PyDiff diff_of(py::handle old_model, py::handle new_model, py::handle context,
               py::handle concurrency, const DeploymentArgs& x) {
    // Every keyword read before any file.
    const ParallelConfig parallel = parallel_of(x);
    const std::uint32_t gpus = gpu_count_of(x);
    const std::optional<KvFormat> kv = to_kv_choice(x.kv_dtype, "kv_dtype");
    std::optional<WeightOptions> weights = weights_of(x);
    Serving serving = serving_of(x);
    (void)resolve_serving(serving);
    const std::uint64_t sequences = to_count(concurrency, "concurrency", "sequences");
    std::optional<std::uint64_t> tokens;
    if (!context.is_none()) tokens = to_tokens(context, "context");
    if (x.gpu.is_none()) {
        if (!x.gpu_memory_utilization.is_none() || !x.kv_memory.is_none())
            usage(x.kv_memory.is_none() ? "gpu_memory_utilization" : "kv_memory",
                  "a gpu as well (diff shows per-GPU figures only with a GPU)", "gpu=None");
        if (parallel.tp != 1 || parallel.pp != 1)
            usage(parallel.tp != 1 ? "tp" : "pp",
                  "a gpu as well (diff shows per-GPU figures only with a GPU)", "gpu=None");
        for (const auto& [given, field] :
             {std::pair{x.speculative_method, "speculative_method"},
              std::pair{x.num_speculative_tokens, "num_speculative_tokens"},
              std::pair{x.draft_model, "draft_model"}})
            if (!given.is_none())
                usage(field, "a gpu as well (it shapes the budget, which needs a GPU)", "gpu=None");
    }
    // Speculative decoding as kvplan diff reads it: each revision's replica holds the drafter
    // (its layers' KV and weights, evaluate()), a draft model read with it.
    serving.speculation = speculation_of(x, serving.engine, {});
    PyDiff d;
    d.old_model = as_model(old_model);
    d.new_model = as_model(new_model);
    const Model& a = d.old_model->get();
    const Model& b = d.new_model->get();
    // Both at the old revision's limit, unless a context is given.
    const std::uint64_t at = tokens ? *tokens : context_limit(a.config()).tokens;
    const auto fa = config_file(old_model), fb = config_file(new_model);
    if (fa && fb) {
        const Json ja = read_json_file(*fa, JsonNumbers::python);
        const Json jb = read_json_file(*fb, JsonNumbers::python);
        for (const JsonFieldChange& c : json_field_changes(ja, jb)) {
            PyConfigChange change{};
            for (const std::string& k : c.steps)
                change.path += (change.path.empty() ? "" : ".") + k;
            if (c.before != nullptr) change.before = *c.before;
            if (c.after != nullptr) change.after = *c.after;
            d.changes.push_back(std::move(change));
        }
    }
    // Each model's KV dtype as its deployment stores it: kv_dtype, else the engine's "auto" for
    // that checkpoint (served_kv).
    const SizeRequest rq{.context = at,
                         .concurrency = sequences,
                         .weights = weights,
                         .engine = serving.engine,
                         .engine_version = serving.engine_version};
    // The sizes of the whole model: tp and pp split the cache only on a GPU.
    d.old_size = PySize{d.old_model, size(a, kv, {}, rq)};
    d.new_size = PySize{d.new_model, size(b, kv, {}, rq)};
    d.old_weights = d.old_size.a.weight_bytes.total();
    d.new_weights = d.new_size.a.weight_bytes.total();
    if (!x.gpu.is_none()) {
        const std::shared_ptr<PyGpu> gpu = as_gpu(x.gpu);
        const Demand demand{.context = at, .concurrency = sequences};
        const auto answer = [&](const std::shared_ptr<PyModel>& m) {
            Deployment dep{.model = m->get(),
                           .gpu = gpu->spec,
                           .parallel = parallel,
                           .gpus = gpus,
                           .weights = weights,
                           .kv = kv,
                           .serving = serving};
            PreparedLayout prepared = prepare_layout(dep);
            // The longest contexts searched too, as kvplan diff's evaluate() does.
            ReplicaAnswer full = evaluate(dep, demand, EvaluateOptions{}, prepared);
            const std::uint64_t limit = context_limit(m->get().config()).tokens;
            auto held = std::make_shared<PyDeployment>(
                PyDeployment{m, gpu, std::move(dep), std::move(prepared), limit, "",
                             full.replica_gpus, full.gpus, full.replicas});
            return PyAnswer{std::move(full), std::move(held), true};
        };
        d.old_answer = answer(d.old_model);
        d.new_answer = answer(d.new_model);
    }
    return d;
}

}  // namespace

void bind_check(py::module_& m) {
    py::class_<PyConfigChange>(m, "ConfigChange", "A config.json field that changed.")
        .def_property_readonly(
            "path", [](const PyConfigChange& c) { return c.path; },
            "Its path, key by key: 'text_config.num_key_value_heads'.")
        .def_property_readonly(
            "before", [](const PyConfigChange& c) { return json_text(c.before); },
            "The old value as JSON text, or None where the field is new.")
        .def_property_readonly(
            "after", [](const PyConfigChange& c) { return json_text(c.after); },
            "The new value as JSON text, or None where it was removed.")
        .def_property_readonly(
            "line", [](const PyConfigChange& c) { return c.line; },
            "check: its line in the model's config.json (a removed key: its parent's); diff: None.")
        .def_property_readonly(
            "moves", [](const PyConfigChange& c) { return c.moves; },
            "check: the indices of the outcomes that reverting this field alone changes.")
        .def("__repr__", [](const PyConfigChange& c) {
            return fmt::format("<kvplan.ConfigChange {}: {} -> {}>", c.path,
                               c.before ? c.before->dump() : "(absent)",
                               c.after ? c.after->dump() : "(absent)");
        });

    py::class_<PyOutcome>(m, "CheckOutcome", "One requirement of a policy on one replica.")
        .def_property_readonly(
            "requirement", [](const PyOutcome& x) { return x.q->name; }, "The requirement's name.")
        .def_property_readonly(
            "kind", [](const PyOutcome& x) { return std::string(name(x.q->kind)); },
            "min_concurrency, max_tpot, max_kv_bytes_per_token, max_weights_per_gpu, "
            "min_context or max_regression.")
        .def_property_readonly(
            "replica", [](const PyOutcome& x) { return x.r->name; }, "The replica's name.")
        .def_property_readonly(
            "status", [](const PyOutcome& x) { return std::string(name(x.o.status)); },
            "passed, failed or skipped (a max_regression without a baseline).")
        .def_property_readonly(
            "figure", [](const PyOutcome& x) { return std::string(name(x.o.figure)); },
            "The figure read: max_concurrency, max_context, tpot, kv_bytes_per_token or "
            "weights_per_gpu.")
        .def_property_readonly(
            "unit", [](const PyOutcome& x) { return std::string(unit_name(x.o.figure)); })
        .def_property_readonly(
            "measured", [](const PyOutcome& x) { return figure_value(x.o.measured); },
            "The model's figure in unit (seconds for a TPOT; inf: any context), or None.")
        .def_property_readonly(
            "baseline", [](const PyOutcome& x) { return figure_value(x.o.baseline); },
            "The baseline's figure, or None.")
        .def_property_readonly(
            "change_percent",
            [](const PyOutcome& x) -> py::object {
                return x.o.change_percent ? py::object(py::float_(*x.o.change_percent))
                                          : py::object(py::none());
            },
            "(measured - baseline) / baseline x 100, when both are bounded and the baseline "
            "is not 0.")
        .def_property_readonly(
            "reason", [](const PyOutcome& x) { return x.o.reason; },
            "Why it failed or was skipped when the figures alone do not say; else ''.")
        .def_property_readonly(
            "path", [](const PyOutcome& x) { return x.q->path; },
            "The requirement's JSON path in the policy file.")
        .def_property_readonly(
            "line", [](const PyOutcome& x) { return x.q->line; },
            "The requirement's line in the policy file.")
        .def_property_readonly("replica_path", [](const PyOutcome& x) { return x.r->path; })
        .def("__bool__", [](const PyOutcome& x) { return x.o.status != CheckStatus::failed; })
        .def("__repr__", [](const PyOutcome& x) {
            return fmt::format("<kvplan.CheckOutcome {} on {}: {}>", x.q->name, x.r->name,
                               name(x.o.status));
        });

    using K = PyCheck;
    py::class_<K, std::shared_ptr<K>>(m, "CheckAnswer",
                                      "A policy judged, as kvplan check gives it "
                                      "(kvplan::check_policy).")
        .def_property_readonly(
            "passed", [](const K& x) { return x.result.passed(); },
            "No requirement failed on any replica (skipped ones do not fail).")
        .def_property_readonly("failed", [](const K& x) { return x.result.failed; })
        .def_property_readonly("skipped", [](const K& x) { return x.result.skipped; })
        .def_property_readonly(
            "outcomes",
            [](const std::shared_ptr<K>& x) {
                std::vector<PyOutcome> out;
                for (const CheckOutcome& o : x->result.outcomes)
                    out.push_back(PyOutcome{o, &x->policy.requirements[o.requirement],
                                            &x->policy.replicas[o.replica], x});
                return out;
            },
            "Each requirement on each replica, requirement by requirement: kvplan.CheckOutcome.")
        .def_property_readonly(
            "model", [](const K& x) { return x.model; }, "The kvplan.Model judged.")
        .def_property_readonly(
            "baseline", [](const K& x) { return x.baseline; }, "The baseline's, or None.")
        .def_property_readonly(
            "gpus", [](const K& x) { return x.gpus; }, "Each replica's kvplan.Gpu.")
        .def_property_readonly(
            "policy", [](const K& x) { return x.policy.source; }, "The policy file.")
        .def_property_readonly(
            "config_changes",
            [](const K& x) -> py::object {
                if (!x.attribution) return py::none();
                return py::cast(attributed(*x.attribution));
            },
            "A model given as a config.json path against a baseline config.json: its changed "
            "fields (kvplan.ConfigChange), each with the outcomes it moves; else None. Empty "
            "when too many fields changed to trace each.")
        .def_property_readonly(
            "changed_fields",
            [](const K& x) -> py::object {
                return x.attribution ? py::object(py::int_(x.attribution->fields))
                                     : py::object(py::none());
            },
            "How many fields of the config.json changed (traced or not).")
        .def("__bool__", [](const K& x) { return x.result.passed(); })
        .def("__repr__", [](const K& x) {
            return fmt::format("<kvplan.CheckAnswer {}: {} outcomes, {} failed, {} skipped>",
                               x.result.passed() ? "PASS" : "FAIL", x.result.outcomes.size(),
                               x.result.failed, x.result.skipped);
        });

    m.def("check", &check_of, py::arg("policy"), py::kw_only(), py::arg("model") = py::none(),
          py::arg("baseline") = py::none(),
          R"(check(policy, *, model=None, baseline=None)
--

A model judged against a policy file (JSON, schema kvplan-policy/1), as kvplan check judges
it (kvplan::check_policy): a kvplan.CheckAnswer, true when no requirement failed. model: a
bundled id, a config.json path or folder, or a kvplan.Model (None: the policy's own);
baseline: the previous revision, for the max_regression requirements and, both given as
config.json files, the changed fields traced to the outcomes they move.

Example:

>>> kvplan.check("examples/ci/policy.json").passed
True

Raises kvplan.InvalidInputError for a policy that cannot be read or names what is not there.)");

    using D = PyDiff;
    py::class_<D>(m, "DiffAnswer",
                  "Two revisions of a config side by side, as kvplan diff gives them.")
        .def_property_readonly("old_model", [](const D& d) { return d.old_model; })
        .def_property_readonly("new_model", [](const D& d) { return d.new_model; })
        .def_property_readonly(
            "config_changes", [](const D& d) { return d.changes; },
            "The config.json fields that changed (kvplan.ConfigChange); empty when either is "
            "not a file.")
        .def_property_readonly(
            "old_size", [](const D& d) { return d.old_size; },
            "The old revision's kvplan.Size, whole model, at the context compared.")
        .def_property_readonly("new_size", [](const D& d) { return d.new_size; })
        .def_property_readonly(
            "context_tokens", [](const D& d) { return d.old_size.a.context; },
            "The context compared: as asked, else the old revision's limit.")
        .def_property_readonly(
            "old_weight_bytes", [](const D& d) { return d.old_weights.count(); },
            "The old revision's weights, in weight_dtype or its checkpoint's format.")
        .def_property_readonly("new_weight_bytes", [](const D& d) { return d.new_weights.count(); })
        .def_property_readonly(
            "old_answer",
            [](const D& d) -> py::object {
                return d.old_answer ? py::cast(*d.old_answer) : py::none();
            },
            "With a gpu, the old revision's kvplan.ReplicaAnswer; else None.")
        .def_property_readonly("new_answer",
                               [](const D& d) -> py::object {
                                   return d.new_answer ? py::cast(*d.new_answer) : py::none();
                               })
        .def("__repr__", [](const D& d) {
            return fmt::format("<kvplan.DiffAnswer {} -> {}: KV per token {} -> {} B>",
                               d.old_model->id, d.new_model->id,
                               grouped(d.old_size.a.per_token.count()),
                               grouped(d.new_size.a.per_token.count()));
        });

    const auto* diff_signature = new Signature(
        "diff", 3,
        {own("old"), own("new"), deploy("gpu", py::none()), own("context", py::none()),
         own("concurrency", py::int_(1))},
        with_budget_keywords({"tp", "pp", "gpus", "kv_dtype", "weight_dtype", "expert_dtype",
                              "speculative_method", "num_speculative_tokens", "draft_model"}));
    m.def(
        "diff",
        [diff_signature](const py::args& args, const py::kwargs& kwargs) {
            const Call c(*diff_signature, args, kwargs);
            return diff_of(c["old"], c["new"], c["context"], c["concurrency"], c.deployment());
        },
        diff_signature
            ->doc(
                R"(Two revisions of a config.json, as kvplan diff compares them: the fields that changed, each
revision's KV bytes and weights (kvplan.Size) at one context (None: the old revision's
limit), and with a gpu each one's kvplan.ReplicaAnswer at the demand. old and new: bundled
ids, config.json paths or folders, or kvplan.Model.

Example:

>>> d = kvplan.diff("examples/ci/pr/base/our-70b", "examples/ci/pr/our-70b")
>>> d.old_size.kv_bytes_per_token, d.new_size.kv_bytes_per_token
(327680, 655360)

Raises kvplan.UsageError for a layout, a budget or speculative decoding without a gpu.)")
            .c_str());
}

}  // namespace kvplan::python
