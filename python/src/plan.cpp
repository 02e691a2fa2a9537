// size, plan and disagg: the library's sizing and searches (kvplan/kv_bytes.hpp,
// kvplan/plan/search.hpp, kvplan/plan/disaggregated.hpp) from typed arguments.

#include <kvplan/fleet.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/layout.hpp>
#include <kvplan/plan/compare.hpp>
#include <kvplan/plan/disaggregated.hpp>
#include <kvplan/plan/fleet.hpp>
#include <kvplan/plan/review.hpp>
#include <kvplan/plan/search.hpp>
#include <kvplan/plan/size.hpp>
#include <kvplan/price_file.hpp>
#include <kvplan/transfer.hpp>
#include <limits>
#include <utility>

#include "common.hpp"

namespace kvplan::python {

namespace {

// ---------------------------------------------------------------------------------------------
// size: KV bytes per token, per sequence and in total, for the whole model and per GPU.

PySize size_of(py::handle model, py::handle context, py::handle concurrency, py::handle kv_dtype,
               py::handle tp, py::handle pp) {
    const std::optional<KvFormat> kv = to_kv_choice(kv_dtype, "kv_dtype");
    const ParallelConfig p{.tp = to_u32(tp, "tp", "GPUs", 1U << 16),
                           .pp = to_u32(pp, "pp", "stages", 1U << 16)};
    SizeRequest r;
    r.concurrency = to_count(concurrency, "concurrency", "sequences");
    if (!context.is_none()) r.context = to_tokens(context, "context");
    std::shared_ptr<PyModel> m = as_model(model);
    // No engine named: an unset KV dtype is vLLM's newest release's "auto" (SizeRequest).
    SizeAnswer a = size(m->get(), kv, p, r);  // InvalidLayout, Overflow
    return PySize{std::move(m), std::move(a)};
}

// ---------------------------------------------------------------------------------------------
// plan: the replicas of a search space that hold a demand.

/// One GPU, or a list of them; None: every bundled GPU.
std::vector<std::shared_ptr<PyGpu>> gpu_list(py::handle h) {
    std::vector<std::shared_ptr<PyGpu>> out;
    if (h.is_none()) {
        for (const py::handle id : py::module_::import("kvplan").attr("Gpu").attr("bundled")())
            out.push_back(as_gpu(id));
        return out;
    }
    if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
        const py::sequence seq = py::reinterpret_borrow<py::sequence>(h);
        if (seq.size() == 0) usage("gpu", "at least one GPU", "an empty list");
        for (const py::handle g : seq) out.push_back(as_gpu(g));
        return out;
    }
    out.push_back(as_gpu(h));
    return out;
}

/// One KV dtype, or a list of them; None: {nullopt}, the engine's "auto" for the checkpoint.
std::vector<std::optional<KvFormat>> kv_list(py::handle h) {
    std::vector<std::optional<KvFormat>> out;
    if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
        const py::sequence seq = py::reinterpret_borrow<py::sequence>(h);
        if (seq.size() == 0) usage("kv_dtype", "at least one KV dtype", "an empty list");
        for (const py::handle k : seq) out.push_back(to_kv_format(k, "kv_dtype"));
        return out;
    }
    out.push_back(to_kv_choice(h, "kv_dtype"));
    return out;
}

/// The serving knobs plan and disagg take, read as kvplan.fit reads them.
Serving search_serving(const DeploymentArgs& x) {
    Serving s = serving_of(x);
    // A knob the engine cannot take, before the search: the library's InvalidInputError.
    (void)resolve_serving(s);
    return s;
}

/// What plan and disagg search: up to max_gpus GPUs a replica and max_tp a tensor-parallel
/// group, each KV dtype and the weight format given.
SearchSpace search_space(const Call& c, const DeploymentArgs& x) {
    SearchSpace space;
    space.max_gpus = to_u32(c["max_gpus"], "max_gpus", "GPUs", 64);
    space.max_tp = to_u32(c["max_tp"], "max_tp", "GPUs", 64);
    space.kv_formats = kv_list(x.kv_dtype);
    // The weights' format with the experts' (expert_dtype), as --weight-dtype and --expert-dtype.
    if (std::optional<WeightOptions> w = weights_of(x)) space.weights = {std::move(w)};
    return space;
}

/// profile=: one GPU's calibration over a search's serving, as kvplan plan and kvplan disagg apply
/// --profile (its reserve, its estimate's parameters; the compute fraction of the peak the first
/// weight format runs at).
Serving with_profile(Serving serving, const DeploymentArgs& x, py::handle gpu, const Model& m,
                     const SearchSpace& space, const std::vector<std::shared_ptr<PyGpu>>& gpus) {
    if (x.profile.is_none()) return serving;
    const std::string path = path_text(x.profile, "profile");
    if (gpus.size() != 1)
        usage("gpu", "one GPU beside profile (a calibration is of one GPU)",
              gpu.is_none() ? std::string("every bundled GPU") : std::string(py::repr(gpu)));
    const WeightOptions w =
        served_weights(m, space.weights.front(), serving.engine, serving.engine_version);
    return apply_profile(load_profile(path), std::move(serving), path, gpus.front()->id,
                         matmul_compute(w, gpus.front()->spec));
}

/// The deployment keywords of disagg's search (plan takes redundant_experts beside them): the
/// budget's; the layout and the GPUs are what it searches.
const std::vector<std::string_view> search_keywords =
    with_budget_keywords({"kv_dtype", "weight_dtype", "profile"});

/// disagg's: the search's, the experts' format, and the speculative keywords it refuses as
/// plan_disaggregated does.
const std::vector<std::string_view> disagg_keywords =
    with_budget_keywords({"kv_dtype", "weight_dtype", "expert_dtype", "speculative_method",
                          "num_speculative_tokens", "draft_model", "profile"});

struct PyCandidate {
    std::string gpu;
    ReplicaAnswer answer;
    std::shared_ptr<PyDeployment> dep;
    std::optional<double> dollars_per_gpu_hour{};        ///< with prices=
    std::optional<double> dollars_per_million_tokens{};  ///< with prices=, output tokens
};

/// A candidate's answer with the deployment it states, so that it reads as evaluate()'s.
PyCandidate candidate_of(const PlanCandidate& c, const std::shared_ptr<PyModel>& model,
                         const std::vector<std::shared_ptr<PyGpu>>& gpus, const SearchSpace& space,
                         const Serving& serving) {
    // The layout as searched (a drafter's layers are not counted in its stages twice).
    Deployment dep = candidate_deployment(model->get(), space, serving, c);
    PreparedLayout prepared = prepare_layout(dep);
    auto d = std::make_shared<PyDeployment>(
        PyDeployment{model, gpus[c.gpu], std::move(dep), std::move(prepared), c.answer.limit.tokens,
                     "", c.answer.replica_gpus, c.answer.gpus, c.answer.replicas});
    return PyCandidate{gpus[c.gpu]->id, c.answer, std::move(d)};
}

struct PyPlan {
    std::vector<PyCandidate> fits, nearest_misses, pareto;
    std::optional<PyCandidate> refused;
    std::size_t searched = 0, fitting = 0, layouts = 0;
    bool complete = true;
    std::string ranking;
    std::optional<ReviewAnswer> review;  ///< the counts of what a review left out
};

/// plan's keywords beside the library's review (plan_review_problem words its refusals).
constexpr PlanReviewSpelling plan_keywords{.ranking = "rank",
                                           .prices = "prices",
                                           .ttft = "ttft_ms",
                                           .tpot = "tpot_ms",
                                           .pareto = "pareto",
                                           .prompt_tokens = "prompt_tokens",
                                           .output_tokens = "output_tokens"};

struct PyDisagg {
    DisaggPlan p;
    std::vector<std::shared_ptr<PyGpu>> gpus;
    DisaggDemand demand;
    std::string link;                     ///< the link's name
    std::optional<LengthsAt> from_trace;  ///< the lengths read off a trace
};

/// percentile=: 50, 95, 99 or 'max' (or their strings), as kvplan disagg --percentile.
LengthPercentile length_percentile_of(py::handle h) {
    std::string text;
    if (py::isinstance<py::int_>(h) && !py::isinstance<py::bool_>(h))
        text = std::to_string(h.cast<long long>());
    else if (py::isinstance<py::str>(h))
        text = h.cast<std::string>();
    else
        wrong_type("percentile", "50, 95, 99 or 'max'", h);
    if (const auto p = parse_length_percentile(text)) return *p;
    usage("percentile", "50, 95, 99 or 'max'", std::string(py::repr(h)));
}

/// link=: the library's spelling (parse_disagg_link), as kvplan disagg --link.
DisaggLink disagg_link_of(py::handle h) {
    const std::string text = to_text(h, "link");
    if (const auto l = parse_disagg_link(text)) return *l;
    usage("link", disagg_link_expected, "'" + text + "'");
}

struct PyPool {
    std::string pool, gpu;
    ReplicaAnswer answer;
    std::uint64_t sequences = 0;
    std::uint32_t replicas = 0, gpus = 0;
    std::optional<Seconds> ttft{}, tpot{};
};

py::object optional_seconds(const std::optional<Seconds>& t) {
    return t ? py::object(py::float_(t->in(seconds))) : py::object(py::none());
}

// ---------------------------------------------------------------------------------------------
// fleet: the replicas an arrival rate needs under latency targets (kvplan::plan_fleet).

/// Lengths as --prompt-tokens reads them for fleet: an int (every request that long) or
/// "50:1000,95:4000" (percentile:tokens), read by the library's parse_quantile_points.
std::vector<QuantilePoint> quantiles(py::handle h, std::string_view field) {
    if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr()))
        return parse_quantile_points(std::to_string(to_count(h, field, "tokens")), field);
    return parse_quantile_points(to_text(h, field), field);
}

struct PyFleet {
    FleetAnswer a;
    std::shared_ptr<PyGpu> gpu;
};

// ---------------------------------------------------------------------------------------------
// compare: several models, GPUs, KV dtypes and weight formats side by side (kvplan::compare).

/// A value or a list (or tuple) of them, as handles; an empty list is refused.
std::vector<py::handle> one_or_many(py::handle h, std::string_view field) {
    std::vector<py::handle> out;
    if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
        for (const py::handle x : py::reinterpret_borrow<py::sequence>(h)) out.push_back(x);
        if (out.empty()) usage(field, "at least one value", "an empty list");
    } else {
        out.push_back(h);
    }
    return out;
}

/// One case compared: its model, GPU (null: sizes only), its sizes and, with a GPU, its answer.
struct PyCompareRow {
    PySize size;
    std::shared_ptr<PyGpu> gpu;
    std::optional<PyAnswer> answer;
};

std::vector<PyCompareRow> compare_of(py::handle model, py::handle gpu, py::handle context,
                                     py::handle concurrency, py::handle shared_prefix_tokens,
                                     const DeploymentArgs& x) {
    // Every keyword read before any file, as the command line parses its flags.
    CompareRequest rq{
        .parallel = parallel_of(x), .gpus = gpu_count_of(x), .serving = serving_of(x)};
    // Speculative decoding as the command line reads it (a draft model read with it), shared by
    // every row.
    rq.serving.speculation = speculation_of(x, rq.serving.engine, {});
    (void)resolve_serving(rq.serving);  // a knob the engine cannot take
    if (!context.is_none()) rq.context = to_tokens(context, "context");
    rq.concurrency = to_count(concurrency, "concurrency", "sequences");
    if (!shared_prefix_tokens.is_none())
        rq.shared_prefix_tokens = to_tokens(shared_prefix_tokens, "shared_prefix_tokens");
    std::vector<std::optional<KvFormat>> kvs;
    for (const py::handle k : one_or_many(x.kv_dtype, "kv_dtype"))
        kvs.push_back(to_kv_choice(k, "kv_dtype"));
    // Each weight format with the experts' (expert_dtype), as kvplan compare pairs them.
    std::optional<WeightFormat> experts;
    if (!x.expert_dtype.is_none()) experts = to_weight_format(x.expert_dtype, "expert_dtype");
    std::vector<std::optional<WeightOptions>> weights;
    for (const py::handle w : one_or_many(x.weight_dtype, "weight_dtype")) {
        if (w.is_none() && !experts) {
            weights.emplace_back();
        } else {
            weights.emplace_back(WeightOptions{});
            if (!w.is_none()) weights.back()->format = to_weight_format(w, "weight_dtype");
            weights.back()->expert_format = experts;
        }
    }
    std::vector<std::shared_ptr<PyModel>> models;
    for (const py::handle m : one_or_many(model, "model")) models.push_back(as_model(m));
    std::vector<std::shared_ptr<PyGpu>> gpus;
    if (!gpu.is_none()) gpus = gpu_list(gpu);
    if (gpus.empty() && (rq.serving.memory_fraction || rq.serving.kv_memory_per_gpu))
        usage(rq.serving.kv_memory_per_gpu ? "kv_memory" : "gpu_memory_utilization",
              "a gpu as well (sizes alone have no budget)", "gpu=None");
    // Cases in the command line's order: model, GPU, KV dtype, weight format.
    std::vector<CompareCase> cases;
    std::vector<std::pair<std::shared_ptr<PyModel>, std::shared_ptr<PyGpu>>> of;
    const std::size_t gpu_rows = std::max<std::size_t>(gpus.size(), 1);
    for (const auto& m : models)
        for (std::size_t g = 0; g < gpu_rows; ++g)
            for (const std::optional<KvFormat>& kv : kvs)
                for (const auto& w : weights) {
                    CompareCase c{.model = m->get(), .kv = kv, .weights = w};
                    if (!gpus.empty()) c.gpu = gpus[g]->spec;
                    cases.push_back(std::move(c));
                    of.emplace_back(m, gpus.empty() ? nullptr : gpus[g]);
                }
    std::vector<CompareRow> rows = compare(cases, rq);
    std::vector<PyCompareRow> out;
    out.reserve(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        CompareRow& r = rows[i];
        PyCompareRow row{.size = PySize{of[i].first, std::move(r.size)},
                         .gpu = of[i].second,
                         .answer = std::nullopt};
        if (r.replica) {
            // The row's deployment, prepared, so that its answer reads as kvplan.fit's does.
            PreparedLayout prepared = prepare_layout(*r.deployment);
            const std::uint64_t limit = context_limit(r.deployment->model.config()).tokens;
            auto dep = std::make_shared<PyDeployment>(PyDeployment{
                of[i].first, of[i].second, std::move(*r.deployment), std::move(prepared), limit, "",
                r.replica->replica_gpus, r.replica->gpus, r.replica->replicas});
            // compare() searched the longest contexts already.
            row.answer = PyAnswer{std::move(*r.replica), std::move(dep), true};
        }
        out.push_back(std::move(row));
    }
    return out;
}

/// weight_dtype of plan: one format or a list of them (None: the checkpoint's own), each with
/// expert_dtype's experts, as kvplan plan --weight-dtype A,B --expert-dtype E.
std::vector<std::optional<WeightOptions>> plan_weights(const DeploymentArgs& x) {
    std::vector<std::optional<WeightFormat>> formats;
    for (const py::handle w : one_or_many(x.weight_dtype, "weight_dtype"))
        formats.push_back(w.is_none() ? std::nullopt
                                      : std::optional(to_weight_format(w, "weight_dtype")));
    std::optional<WeightFormat> experts;
    if (!x.expert_dtype.is_none()) experts = to_weight_format(x.expert_dtype, "expert_dtype");
    return searched_weights(formats, experts);
}

}  // namespace

void bind_plan(py::module_& m) {
    // size ---------------------------------------------------------------------------------
    py::class_<PySize>(m, "Size", "KV bytes of a model, as kvplan size gives them (kvplan::size).")
        .def_property_readonly(
            "model", [](const PySize& s) { return s.model; }, "The kvplan.Model sized.")
        .def_property_readonly("kv_dtype", [](const PySize& s) { return name(s.a.kv.dtype); })
        .def_property_readonly("tp", [](const PySize& s) { return s.a.parallel.tp; })
        .def_property_readonly("pp", [](const PySize& s) { return s.a.parallel.pp; })
        .def_property_readonly(
            "context_tokens", [](const PySize& s) { return s.a.context; },
            "Tokens per sequence: as asked, or the model's context limit.")
        .def_property_readonly("concurrency", [](const PySize& s) { return s.a.concurrency; })
        .def_property_readonly(
            "kv_bytes_per_token", [](const PySize& s) { return s.a.per_token.count(); },
            "KV bytes one token takes over the whole model.")
        .def_property_readonly(
            "kv_bytes_per_token_per_gpu",
            [](const PySize& s) { return s.a.per_token_per_gpu.count(); },
            "KV bytes one token takes on a GPU, the largest over stages.")
        .def_property_readonly(
            "kv_bytes_per_sequence", [](const PySize& s) { return s.a.per_sequence.count(); },
            "KV bytes of one sequence of context_tokens, windows and fixed state included.")
        .def_property_readonly(
            "kv_bytes_per_sequence_per_gpu",
            [](const PySize& s) { return s.a.per_sequence_per_gpu.count(); },
            "KV bytes of one sequence on a GPU of the busiest stage.")
        .def_property_readonly(
            "kv_bytes_total", [](const PySize& s) { return s.a.total.count(); },
            "kv_bytes_per_sequence x concurrency.")
        .def_property_readonly(
            "kv_bytes_total_per_gpu", [](const PySize& s) { return s.a.total_per_gpu.count(); },
            "kv_bytes_per_sequence_per_gpu x concurrency.")
        .def_property_readonly(
            "busiest_stage", [](const PySize& s) { return s.a.busiest_stage; },
            "The pipeline stage of kv_bytes_per_sequence_per_gpu.")
        .def_property_readonly(
            "weight_bytes", [](const PySize& s) { return s.a.weight_bytes.total().count(); },
            "The whole model's weights as stored.")
        .def_property_readonly(
            "weight_bytes_per_gpu",
            [](const PySize& s) { return s.a.weight_bytes_per_gpu.count(); },
            "The weights of the fullest rank.")
        .def("__repr__", [](const PySize& s) {
            return fmt::format("<kvplan.Size {}: {} B per token, {} B per sequence of {} tokens>",
                               s.model->id, grouped(s.a.per_token.count()),
                               grouped(s.a.per_sequence.count()), grouped(s.a.context));
        });
    m.def("size", &size_of, py::arg("model"), py::kw_only(), py::arg("context") = py::none(),
          py::arg("concurrency") = 1, py::arg("kv_dtype") = py::none(), py::arg("tp") = 1,
          py::arg("pp") = 1,
          R"(size(model, *, context=None, concurrency=1, kv_dtype=None, tp=1, pp=1)
--

KV bytes per token, per sequence and in total, for the whole model and per GPU, and the
weights, as kvplan size gives them (kvplan::size): a kvplan.Size. context: tokens per
sequence (an int or '32k'; None: the model's context limit).

Example:

>>> kvplan.size(model="llama-3-70b", context=8192).kv_bytes_per_sequence
2684354560

Raises kvplan.InvalidLayoutError for a tp or pp the model cannot take.)");

    // compare ------------------------------------------------------------------------------
    py::class_<PyCompareRow>(m, "CompareRow",
                             "One configuration compared: its sizes and, with a GPU, its answer.")
        .def_property_readonly(
            "model", [](const PyCompareRow& r) { return r.size.model; }, "The kvplan.Model.")
        .def_property_readonly(
            "gpu", [](const PyCompareRow& r) { return r.gpu; }, "The kvplan.Gpu, or None.")
        .def_property_readonly(
            "size", [](const PyCompareRow& r) { return r.size; },
            "Its kvplan.Size on tp x pp, at the context compared.")
        .def_property_readonly(
            "answer",
            [](const PyCompareRow& r) -> py::object {
                return r.answer ? py::cast(*r.answer) : py::none();
            },
            "With a GPU, its kvplan.ReplicaAnswer (max_context searched); else None.")
        .def("__repr__", [](const PyCompareRow& r) {
            return fmt::format("<kvplan.CompareRow {}{}{}, KV {}>", r.size.model->id,
                               r.gpu ? " on " : "", r.gpu ? r.gpu->id : "",
                               name(r.size.a.kv.dtype));
        });
    const auto* compare_signature =
        new Signature("compare", 2,
                      {own("model"), own("gpu", py::none()), own("context", py::none()),
                       own("concurrency", py::int_(1)), own("shared_prefix_tokens", py::none())},
                      with_budget_keywords({"tp", "pp", "dp", "ep", "dcp", "gpus", "kv_dtype",
                                            "weight_dtype", "expert_dtype", "speculative_method",
                                            "num_speculative_tokens", "draft_model"}));
    m.def(
        "compare",
        [compare_signature](const py::args& args, const py::kwargs& kwargs) {
            const Call c(*compare_signature, args, kwargs);
            return compare_of(c["model"], c["gpu"], c["context"], c["concurrency"],
                              c["shared_prefix_tokens"], c.deployment());
        },
        compare_signature
            ->doc(
                R"(Several configurations side by side, as kvplan compare gives them (kvplan::compare): a list
of kvplan.CompareRow, one per model x GPU x KV dtype x weight format in that order. model,
gpu, kv_dtype and weight_dtype each take one value or a list; gpu=None sizes only (no
budget). The other keywords are kvplan.fit's, shared by every row; context None: each
model's context limit.

Example:

>>> [r.answer.max_concurrency for r in kvplan.compare(
...     "llama-3-70b", "h100-sxm", tp=4, context="8k", kv_dtype=["bf16", "fp8"])]
[62, 125]

Raises kvplan.InvalidLayoutError for a layout a model cannot take.)")
            .c_str());

    // plan ---------------------------------------------------------------------------------
    py::class_<PyCandidate>(m, "PlanCandidate", "One replica a search evaluated.")
        .def_property_readonly(
            "gpu", [](const PyCandidate& c) { return c.gpu; }, "The GPU's id.")
        .def_property_readonly("tp",
                               [](const PyCandidate& c) { return c.answer.replica.parallel.tp; })
        .def_property_readonly("pp",
                               [](const PyCandidate& c) { return c.answer.replica.parallel.pp; })
        .def_property_readonly("dp",
                               [](const PyCandidate& c) { return c.answer.replica.parallel.dp; })
        .def_property_readonly("ep",
                               [](const PyCandidate& c) { return c.answer.replica.parallel.ep; })
        .def_property_readonly("dcp",
                               [](const PyCandidate& c) { return c.answer.replica.parallel.dcp; })
        .def_property_readonly("gpus", [](const PyCandidate& c) { return c.answer.replica_gpus; })
        .def_property_readonly("kv_dtype",
                               [](const PyCandidate& c) { return name(c.answer.replica.kv.dtype); })
        .def_property_readonly(
            "deployment", [](const PyCandidate& c) { return c.dep; },
            "The candidate as a kvplan.Deployment, to evaluate at other demands.")
        .def_property_readonly(
            "answer",
            [](const PyCandidate& c) {
                return PyAnswer{c.answer, c.dep};
            },
            "Its kvplan.ReplicaAnswer at the demand searched for.")
        .def_readonly("dollars_per_gpu_hour", &PyCandidate::dollars_per_gpu_hour,
                      "With prices: its GPU's US$ per GPU-hour, or None when the file has none.")
        .def_readonly("dollars_per_million_output_tokens", &PyCandidate::dollars_per_million_tokens,
                      "With prices: US$ per million output tokens, the GPU-hour's price over the "
                      "output tokens its GPU serves in an hour by the latency estimate; else None.")
        .def("__repr__", [](const PyCandidate& c) {
            const ParallelConfig& p = c.answer.replica.parallel;
            return fmt::format(
                "<kvplan.PlanCandidate {} x {} (tp {} x pp {}, dp {}, ep {}, dcp {}), KV {}, "
                "max_concurrency {}>",
                c.answer.replica_gpus, c.gpu, p.tp, p.pp, p.dp, p.ep, p.dcp,
                name(c.answer.replica.kv.dtype), grouped(c.answer.max_concurrency));
        });
    py::class_<PyPlan>(m, "PlanAnswer", "The replicas of a search that hold a demand, ranked.")
        .def_property_readonly(
            "found", [](const PyPlan& p) { return !p.fits.empty(); },
            "Some replica holds the demand.")
        .def_property_readonly(
            "fits", [](const PyPlan& p) { return p.fits; },
            "The replicas that hold the demand, best first (kvplan.PlanCandidate).")
        .def_property_readonly(
            "best",
            [](const PyPlan& p) -> py::object {
                return p.fits.empty() ? py::none() : py::cast(p.fits.front());
            },
            "The first of fits, or None.")
        .def_property_readonly(
            "nearest_misses", [](const PyPlan& p) { return p.nearest_misses; },
            "Replicas that start but hold less, the most sequences first.")
        .def_property_readonly(
            "refused",
            [](const PyPlan& p) -> py::object {
                return p.refused ? py::cast(*p.refused) : py::none();
            },
            "When no replica starts: the one nearest to starting (the least memory a GPU lacks, "
            "then the most GPUs), whose refusal says what stops them all.")
        .def_property_readonly(
            "pareto", [](const PyPlan& p) { return p.pareto; },
            "With pareto=True: the candidates (of those meeting the targets) not dominated on "
            "output tokens/s per GPU and TPOT by their estimates, the lowest TPOT first; else [].")
        .def_property_readonly(
            "ranking", [](const PyPlan& p) { return p.ranking; },
            "How fits is ordered: 'gpus', 'fastest', 'estimate' or 'cost'.")
        .def_property_readonly(
            "over_ttft", [](const PyPlan& p) { return p.review ? p.review->over_ttft : 0; },
            "Fits left out because their TTFT estimate misses ttft_ms.")
        .def_property_readonly(
            "over_tpot", [](const PyPlan& p) { return p.review ? p.review->over_tpot : 0; },
            "Fits left out because their TPOT estimate misses tpot_ms (TTFT met).")
        .def_property_readonly(
            "without_estimate",
            [](const PyPlan& p) { return p.review ? p.review->without_estimate : 0; },
            "Fits left out of a review (targets, prices or cost) for want of a latency estimate.")
        .def_property_readonly(
            "without_price", [](const PyPlan& p) { return p.review ? p.review->without_price : 0; },
            "Fits left out of rank='cost' because the price file has no price for their GPU.")
        .def_property_readonly("searched", [](const PyPlan& p) { return p.searched; })
        .def_property_readonly("fitting", [](const PyPlan& p) { return p.fitting; })
        .def_property_readonly("layouts", [](const PyPlan& p) { return p.layouts; })
        .def_property_readonly("complete", [](const PyPlan& p) { return p.complete; })
        .def("__repr__", [](const PyPlan& p) {
            return fmt::format("<kvplan.PlanAnswer {} candidates searched, {} fit>", p.searched,
                               p.fitting);
        });
    const auto* plan_signature =
        new Signature("plan", 2,
                      {own("model"),
                       own("gpu", py::none()),
                       own("context", py::none()),
                       own("concurrency", py::int_(1)),
                       own("prompt_tokens", py::none()),
                       own("output_tokens", py::none()),
                       own("shared_prefix_tokens", py::none()),
                       own("max_gpus", py::int_(8)),
                       own("max_tp", py::int_(8)),
                       own("any_layout", py::bool_(false)),
                       own("dp", py::bool_(true)),
                       own("ep", py::bool_(true)),
                       own("dcp", py::bool_(true)),
                       own("rank", py::none()),
                       own("top", py::int_(50)),
                       own("prefix_hit_rate", py::none()),
                       own("length_spread", py::none()),
                       own("num_prompts", py::none()),
                       own("fixed_lengths", py::bool_(false)),
                       own("prices", py::none()),
                       own("ttft_ms", py::none()),
                       own("tpot_ms", py::none()),
                       own("pareto", py::bool_(false))},
                      with_budget_keywords({"kv_dtype", "weight_dtype", "expert_dtype",
                                            "speculative_method", "num_speculative_tokens",
                                            "draft_model", "profile", "redundant_experts"}));
    m.def(
        "plan",
        [plan_signature](const py::args& args, const py::kwargs& kwargs) {
            const Call c(*plan_signature, args, kwargs);
            const DeploymentArgs x = c.deployment();
            const py::handle prompt_tokens = c["prompt_tokens"], output_tokens = c["output_tokens"];
            // The weight formats are plan's own (a list, with the experts'): plan_weights below.
            DeploymentArgs bounds = x;
            bounds.weight_dtype = py::none();
            SearchSpace space = search_space(c, bounds);
            space.data_parallel = to_flag(c["dp"], "dp");
            space.expert_parallel = to_flag(c["ep"], "ep");
            space.context_parallel = to_flag(c["dcp"], "dcp");
            space.layouts =
                to_flag(c["any_layout"], "any_layout") ? LayoutRule::any : LayoutRule::whole_nodes;
            space.keep = to_count(c["top"], "top", "candidates");
            // EPLB's copies in the expert-parallel layouts, as kvplan plan --redundant-experts.
            if (!x.redundant_experts.is_none())
                space.redundant_experts =
                    to_u32(x.redundant_experts, "redundant_experts", "experts", 1U << 16, 0);
            // What the plan asks beyond the search; the library says what it cannot take, in
            // the keywords' words, before any file is read.
            PlanReview asked;
            const py::handle rank = c["rank"], prices = c["prices"], ttft_ms = c["ttft_ms"],
                             tpot_ms = c["tpot_ms"];
            if (!rank.is_none()) {
                const std::string r = to_text(rank, "rank");
                asked.ranking = detail::enum_parse(plan_ranking_names, detail::TextRef(r));
                if (!asked.ranking)
                    usage("rank",
                          "'estimate' (the most output tokens/s per GPU by the latency estimate), "
                          "'cost' (the fewest $ per million output tokens, with prices), 'gpus' "
                          "(fewest GPUs first) or 'fastest' (the lowest TPOT bound first)",
                          "'" + r + "'");
            }
            if (!ttft_ms.is_none())
                asked.targets.ttft = to_positive(ttft_ms, "ttft_ms") * milliseconds;
            if (!tpot_ms.is_none())
                asked.targets.tpot = to_positive(tpot_ms, "tpot_ms") * milliseconds;
            const std::string price_file = prices.is_none() ? "" : path_text(prices, "prices");
            if (!prices.is_none()) asked.prices = PriceTable{};  // read once the keywords agree
            asked.pareto = to_flag(c["pareto"], "pareto");
            {
                Demand load;
                if (!prompt_tokens.is_none()) load.prompt_tokens = 1;
                if (!output_tokens.is_none()) load.output_tokens = 1;
                if (const auto bad = plan_review_problem(asked, load, plan_keywords)) {
                    using F = PlanReviewField;
                    const py::handle given = bad->field == F::ranking  ? rank
                                             : bad->field == F::prices ? prices
                                             : bad->field == F::ttft   ? ttft_ms
                                             : bad->field == F::tpot   ? tpot_ms
                                                                       : c["pareto"];
                    usage(plan_keywords(bad->field), bad->expected,
                          given.is_none() ? fmt::format("'{}'", name(asked.ranking_for(load)))
                                          : std::string(py::repr(given)));
                }
            }
            space.weights = plan_weights(x);
            Serving serving = search_serving(x);
            const std::shared_ptr<PyModel> pm = as_model(c["model"]);
            // Speculative decoding as kvplan.fit reads it (a draft model read with it).
            serving.speculation = speculation_of(x, serving.engine, {});
            const Demand demand = demand_of(
                context_limit(pm->get().config()).tokens, c["context"], c["concurrency"],
                prompt_tokens, output_tokens, c["shared_prefix_tokens"], c["prefix_hit_rate"],
                c["length_spread"], c["num_prompts"], c["fixed_lengths"]);
            const std::vector<std::shared_ptr<PyGpu>> gpus = gpu_list(c["gpu"]);
            for (const auto& g : gpus) space.gpus.push_back(g->spec);
            serving = with_profile(std::move(serving), x, c["gpu"], pm->get(), space, gpus);
            if (asked.prices) asked.prices = load_price_table(price_file);
            const std::size_t top = space.keep;
            const ReviewedPlan plan = review_plan(pm->get(), space, serving, demand, asked);
            const PlanAnswer& a = plan.search;
            PyPlan out;
            // The fits in the plan's order (the review's when it ranks one), the first top, and
            // the front; each read as evaluate()'s answer, with its price.
            const auto ranked = [&](std::size_t i) {
                PyCandidate one = candidate_of(plan.at(i), pm, gpus, space, serving);
                one.dollars_per_gpu_hour = plan.order.ranked[i].dollars_per_gpu_hour;
                one.dollars_per_million_tokens = plan.order.ranked[i].dollars_per_million_tokens;
                return one;
            };
            for (std::size_t i = 0; i < plan.order.ranked.size() && i < top; ++i)
                out.fits.push_back(ranked(i));
            for (const std::size_t i : plan.pareto) out.pareto.push_back(ranked(i));
            for (const PlanCandidate& c : a.nearest_misses)
                out.nearest_misses.push_back(candidate_of(c, pm, gpus, space, serving));
            if (a.refused) out.refused = candidate_of(*a.refused, pm, gpus, space, serving);
            out.ranking = name(plan.ranking);
            if (plan.reviewed) out.review = plan.order;
            out.searched = a.searched;
            out.fitting = a.fitting;
            out.layouts = a.layouts;
            out.complete = a.complete;
            return out;
        },
        plan_signature
            ->doc(
                R"(The replicas that hold `concurrency` sequences of `context` tokens, as kvplan plan searches
them: a kvplan.PlanAnswer. gpu: a GPU, a list of them (in order of preference) or None
(every bundled GPU); kv_dtype: one KV dtype or a list. The search tries tp, pp, and for
mixture-of-experts models dp and ep (dp=False, ep=False, dcp=False leave them out), up to
max_gpus GPUs a replica and max_tp GPUs a tensor-parallel group, in the layouts people deploy
(whole nodes) unless any_layout. rank: 'gpus' (fewest GPUs first), 'fastest' (the lowest TPOT
bound), 'estimate' (the most output tokens/s per GPU; the default with prompt_tokens and
output_tokens) or 'cost' (the fewest US$ per million output tokens, with prices). top: how many
fits are kept with their answers. weight_dtype: one format or a list, each with expert_dtype's
experts; speculative_method, num_speculative_tokens and draft_model as kvplan.fit takes them.

With prompt_tokens and output_tokens (the load the latency estimate serves), as kvplan plan's
--prices, --ttft-ms, --tpot-ms and --pareto: prices, a price file (US$ per GPU-hour by GPU id,
configs/prices/example.json), prices each fit (dollars_per_million_output_tokens); ttft_ms and
tpot_ms leave out the fits whose estimates pass them (over_ttft, over_tpot count them), ranked
by the estimate or by cost; pareto=True lists the fits not dominated on output tokens/s per GPU
and TPOT (pareto).

Example:

>>> kvplan.plan(model="llama-3-70b", gpu=["h100-sxm", "h200-sxm"], context="8k",
...             concurrency=64).found
True

Raises kvplan.UsageError for a keyword's value it cannot take and kvplan.InvalidInputError
for an unknown model or GPU or a knob the engine cannot take.)")
            .c_str());

    // disagg -------------------------------------------------------------------------------
    py::class_<PyPool>(m, "DisaggPool", "One pool of a disaggregated plan, or the aggregated one.")
        .def_readonly("pool", &PyPool::pool, "'prefill', 'decode' or 'aggregated'.")
        .def_readonly("gpu", &PyPool::gpu, "The GPU's id.")
        .def_property_readonly("tp", [](const PyPool& p) { return p.answer.replica.parallel.tp; })
        .def_property_readonly("pp", [](const PyPool& p) { return p.answer.replica.parallel.pp; })
        .def_property_readonly("dp", [](const PyPool& p) { return p.answer.replica.parallel.dp; })
        .def_property_readonly("ep", [](const PyPool& p) { return p.answer.replica.parallel.ep; })
        .def_property_readonly("dcp", [](const PyPool& p) { return p.answer.replica.parallel.dcp; })
        .def_property_readonly("kv_dtype",
                               [](const PyPool& p) { return name(p.answer.replica.kv.dtype); })
        .def_readonly("sequences_per_replica", &PyPool::sequences,
                      "Prefill: prompts at once (its dp ranks); decode: the batch at the TPOT "
                      "target; aggregated: requests at once meeting both targets.")
        .def_readonly("replicas", &PyPool::replicas)
        .def_readonly("gpus", &PyPool::gpus)
        .def_property_readonly(
            "ttft_seconds", [](const PyPool& p) { return optional_seconds(p.ttft); },
            "Prefill and aggregated pools: the TTFT at the rate (None for decode).")
        .def_property_readonly(
            "tpot_seconds", [](const PyPool& p) { return optional_seconds(p.tpot); },
            "Decode and aggregated pools: the TPOT (None for prefill).")
        .def("__repr__", [](const PyPool& p) {
            return fmt::format("<kvplan.DisaggPool {}: {} x {} GPUs of {}>", p.pool, p.replicas,
                               p.answer.replica_gpus, p.gpu);
        });
    py::class_<PyDisagg>(m, "DisaggPlan",
                         R"(A disaggregated plan (a prefill pool and a decode pool) beside the
aggregated one for the same targets, as kvplan disagg gives it, its figures named by kvplan
disagg's JSON keys.)")
        .def_property_readonly(
            "disaggregated_gpus", [](const PyDisagg& d) { return d.p.gpus; },
            "GPUs of the disaggregated plan, prefill and decode (0: none).")
        .def_property_readonly(
            "aggregated_gpus",
            [](const PyDisagg& d) -> py::object {
                return d.p.aggregated ? py::int_(d.p.aggregated->gpus) : py::object(py::none());
            },
            "GPUs of the aggregated plan, or None.")
        .def_property_readonly(
            "disaggregated_smaller", [](const PyDisagg& d) { return d.p.disaggregated_smaller; },
            "Both plans exist and the disaggregated one needs fewer GPUs.")
        .def_property_readonly(
            "kv_transfer_bytes_per_gpu",
            [](const PyDisagg& d) -> py::object {
                if (d.p.gpus == 0) return py::none();
                return py::int_(d.p.transfer.bytes_per_rank.count());
            },
            "The prompt KV one request moves, on the decode GPU holding the most of it.")
        .def_property_readonly(
            "kv_transfer_seconds",
            [](const PyDisagg& d) -> py::object {
                if (d.p.gpus == 0) return py::none();
                return py::float_(d.p.transfer.time.in(seconds));
            },
            "Its transfer over the link, added to TTFT.")
        .def_property_readonly(
            "pools",
            [](const PyDisagg& d) {
                std::vector<PyPool> out;
                if (d.p.prefill) {
                    const PrefillPool& x = *d.p.prefill;
                    out.push_back({"prefill",
                                   d.gpus[x.candidate.gpu]->id,
                                   x.candidate.answer,
                                   x.servers_per_replica,
                                   x.replicas,
                                   x.gpus,
                                   x.ttft,
                                   {}});
                }
                if (d.p.decode) {
                    const DecodePool& x = *d.p.decode;
                    out.push_back({"decode",
                                   d.gpus[x.candidate.gpu]->id,
                                   x.candidate.answer,
                                   x.batch,
                                   x.replicas,
                                   x.gpus,
                                   {},
                                   x.tpot});
                }
                if (d.p.aggregated) {
                    const AggregatedPool& x = *d.p.aggregated;
                    out.push_back({"aggregated", d.gpus[x.candidate.gpu]->id, x.candidate.answer,
                                   x.concurrency, x.replicas, x.gpus, x.ttft, x.tpot});
                }
                return out;
            },
            "The prefill, decode and aggregated pools that exist (kvplan.DisaggPool).")
        .def_property_readonly(
            "prompt_tokens", [](const PyDisagg& d) { return d.demand.prompt_tokens; },
            "The prompt length sized for: prompt_tokens, or the trace's at the percentile.")
        .def_property_readonly(
            "output_tokens", [](const PyDisagg& d) { return d.demand.output_tokens; },
            "The output length sized for: output_tokens, or the trace's at the percentile.")
        .def_property_readonly(
            "trace_requests",
            [](const PyDisagg& d) -> py::object {
                if (!d.from_trace) return py::none();
                return py::int_(d.from_trace->requests);
            },
            "The trace's requests (None without a trace).")
        .def_property_readonly(
            "link", [](const PyDisagg& d) { return d.link; },
            "The link the prompt's KV crosses, by name.")
        .def_property_readonly(
            "note", [](const PyDisagg& d) { return d.p.note; }, "Why a plan is missing.")
        .def("__repr__", [](const PyDisagg& d) {
            return fmt::format("<kvplan.DisaggPlan {} GPUs disaggregated, {} aggregated>", d.p.gpus,
                               d.p.aggregated ? d.p.aggregated->gpus : 0U);
        });
    const auto* disagg_signature = new Signature(
        "disagg", 2,
        {own("model"), own("gpu", py::none()), own("rate"), own("prompt_tokens", py::none()),
         own("output_tokens", py::none()), own("ttft_ms"), own("tpot_ms"), own("trace", py::none()),
         own("percentile", py::none()), own("time_unit", py::none()),
         own("link", py::str("ib-ndr")), own("latency", py::str("estimate")),
         own("max_gpus", py::int_(8)), own("max_tp", py::int_(8))},
        disagg_keywords);
    m.def(
        "disagg",
        [disagg_signature](const py::args& args, const py::kwargs& kwargs) {
            const Call c(*disagg_signature, args, kwargs);
            const DeploymentArgs x = c.deployment();
            const std::string lat = to_text(c["latency"], "latency");
            if (lat != "estimate" && lat != "bound")
                usage("latency",
                      "'estimate' (the GPU family's fitted fractions and fixed costs) or 'bound' "
                      "(peak figures: a lower bound on the GPUs)",
                      "'" + lat + "'");
            PyDisagg out;
            DisaggDemand& demand = out.demand;
            demand.rate = to_positive(c["rate"], "rate");
            demand.ttft = to_positive(c["ttft_ms"], "ttft_ms") * milliseconds;
            demand.tpot = to_positive(c["tpot_ms"], "tpot_ms") * milliseconds;
            DisaggOptions o;
            o.link = disagg_link_of(c["link"]);
            o.latency = lat == "bound" ? LatencyModel::bound : LatencyModel::estimate;
            // The lengths: the numbers given, or a trace's at a percentile (lengths_at), as
            // kvplan disagg reads --prompt-tokens / --output-tokens or --trace.
            const py::handle trace = c["trace"], percentile = c["percentile"],
                             time_unit = c["time_unit"], prompt = c["prompt_tokens"],
                             output = c["output_tokens"];
            if (trace.is_none()) {
                if (prompt.is_none() || output.is_none())
                    usage("prompt_tokens", "prompt_tokens and output_tokens, or trace",
                          prompt.is_none() && output.is_none() ? "neither"
                          : prompt.is_none()                   ? "output_tokens alone"
                                                               : "prompt_tokens alone");
                if (!percentile.is_none())
                    usage("percentile", "trace as well (a percentile of its lengths)",
                          "trace=None");
                if (!time_unit.is_none())
                    usage("time_unit", "trace as well (the unit of its arrival times)",
                          "trace=None");
                demand.prompt_tokens = to_tokens(prompt, "prompt_tokens");
                demand.output_tokens = to_tokens(output, "output_tokens");
            } else if (!prompt.is_none() || !output.is_none()) {
                usage("trace", "a trace or prompt_tokens and output_tokens, not both", "both");
            }
            const LengthPercentile at =
                percentile.is_none() ? LengthPercentile::p95 : length_percentile_of(percentile);
            SearchSpace space = search_space(c, x);
            Serving serving = search_serving(x);
            serving.speculation = speculation_of(x, serving.engine, {});
            if (!trace.is_none()) {
                const TraceOptions t =
                    time_unit.is_none() ? TraceOptions{} : trace_options_of(time_unit);
                out.from_trace =
                    lengths_at(trace_lengths(load_trace(path_text(trace, "trace"), t)), at);
                demand.prompt_tokens = out.from_trace->prompt_tokens;
                demand.output_tokens = out.from_trace->output_tokens;
            }
            const std::shared_ptr<PyModel> pm = as_model(c["model"]);
            out.gpus = gpu_list(c["gpu"]);
            for (const auto& g : out.gpus) space.gpus.push_back(g->spec);
            if (!x.profile.is_none()) {
                serving = with_profile(std::move(serving), x, c["gpu"], pm->get(), space, out.gpus);
                o.params = serving.estimate;
            }
            out.p = plan_disaggregated(pm->get(), space, serving, demand, o);
            out.link = out.p.gpus != 0 ? out.p.transfer.link.name
                       : o.link.node   ? node_link_name
                                       : o.link.link.name;
            return out;
        },
        disagg_signature
            ->doc(
                R"(Prefill and decode pools for `rate` requests per second of prompt_tokens + output_tokens
under TTFT and TPOT targets (milliseconds), beside the aggregated plan, as kvplan disagg
plans them: a kvplan.DisaggPlan. Instead of prompt_tokens and output_tokens, trace: a request
trace's lengths (CSV or JSON Lines, time_unit the unit of its numeric arrival times), each at
its `percentile` (50, 95, 99 or 'max'; default 95). link: between the pools, per GPU: 'ib-ndr'
(InfiniBand NDR, 50 GB/s), 'ib-hdr' (25 GB/s), 'node' (the GPU spec's node-to-node figure) or
a bandwidth such as '25GB/s'. latency: 'estimate' (the GPU family's fitted parameters) or
'bound' (peak figures). Speculative decoding raises kvplan.InvalidInputError: the pools are
sized without a drafter.)")
            .c_str());

    // fleet --------------------------------------------------------------------------------
    py::class_<PyFleet>(m, "FleetAnswer",
                        "The fleet an arrival rate needs, as kvplan fleet sizes it "
                        "(kvplan::plan_fleet): its figures named by kvplan fleet's JSON keys.")
        .def_property_readonly(
            "feasible", [](const PyFleet& f) { return f.a.plan.feasible; },
            "Some batch >= 1 meets every target.")
        .def_property_readonly(
            "replicas", [](const PyFleet& f) { return f.a.plan.replicas; },
            "ceil(in flight / batch); 0 when no batch meets the targets.")
        .def_property_readonly("gpus", [](const PyFleet& f) { return f.a.gpus; })
        .def_property_readonly("replica_gpus", [](const PyFleet& f) { return f.a.replica_gpus; })
        .def_property_readonly(
            "batch", [](const PyFleet& f) { return f.a.plan.batch; },
            "Sequences per replica: the smallest of what the KV budget, the TPOT and TTFT "
            "targets and the engine's cap allow.")
        .def_property_readonly(
            "binding", [](const PyFleet& f) { return std::string(name(f.a.plan.binding)); },
            "What sets the batch: kv_budget, tpot, max_batch or ttft.")
        .def_property_readonly("batch_kv", [](const PyFleet& f) { return f.a.plan.batch_kv; })
        .def_property_readonly(
            "batch_kv_overflow",
            [](const PyFleet& f) -> py::object {
                const auto& b = f.a.plan.batch_kv_overflow;
                return b ? py::object(py::int_(*b)) : py::object(py::none());
            },
            "With epsilon: the largest batch whose KV passes the budget with probability at "
            "most epsilon (a Chernoff bound over the lengths); else None.")
        .def_property_readonly("batch_tpot", [](const PyFleet& f) { return f.a.plan.batch_tpot; })
        .def_property_readonly("batch_ttft", [](const PyFleet& f) { return f.a.plan.batch_ttft; })
        .def_property_readonly(
            "tpot_seconds", [](const PyFleet& f) { return f.a.plan.tpot_at_batch.in(seconds); },
            "The TPOT at the batch.")
        .def_property_readonly(
            "ttft_seconds", [](const PyFleet& f) { return f.a.ttft().in(seconds); },
            "The TTFT target, else the TTFT at the batch.")
        .def_property_readonly(
            "in_flight", [](const PyFleet& f) { return f.a.plan.in_flight; },
            "Requests in the system: rate x time in system.")
        .def_property_readonly("kv_budget_bytes_per_gpu",
                               [](const PyFleet& f) { return f.a.kv_budget_per_gpu.count(); })
        .def_property_readonly("limiting_stage",
                               [](const PyFleet& f) { return f.a.limiting_stage; })
        .def_property_readonly(
            "gpus_given",
            [](const PyFleet& f) -> py::object {
                return f.a.gpus_given != 0 ? py::object(py::int_(f.a.gpus_given))
                                           : py::object(py::none());
            },
            "The GPUs deployed (gpus=), or None.")
        .def_property_readonly(
            "replicas_given",
            [](const PyFleet& f) -> py::object {
                return f.a.gpus_given != 0 ? py::object(py::int_(f.a.replicas_given))
                                           : py::object(py::none());
            },
            "Their replicas, gpus / (tp x pp), or None.")
        .def_property_readonly(
            "given_serves",
            [](const PyFleet& f) -> py::object {
                return f.a.gpus_given != 0 ? py::object(py::bool_(f.a.given_serves))
                                           : py::object(py::none());
            },
            "The replicas deployed serve the rate (None without gpus).")
        .def_property_readonly(
            "rate_given_serves",
            [](const PyFleet& f) -> py::object {
                return f.a.gpus_given != 0 && f.a.plan.feasible
                           ? py::object(py::float_(f.a.rate_given_serves))
                           : py::object(py::none());
            },
            "Requests a second the replicas deployed serve: replicas x batch / time in system "
            "(None without gpus or a feasible batch).")
        .def("__repr__", [](const PyFleet& f) {
            return fmt::format("<kvplan.FleetAnswer {} replicas of {} x {}, batch {} ({})>",
                               f.a.plan.replicas, f.a.replica_gpus, f.gpu->id, f.a.plan.batch,
                               name(f.a.plan.binding));
        });
    const auto* fleet_signature =
        new Signature("fleet", 2,
                      {deploy("model"), deploy("gpu"), own("rate"), own("tpot_ms"),
                       own("prompt_tokens", py::none()), own("output_tokens", py::none()),
                       own("trace", py::none()), own("time_unit", py::none()),
                       own("ttft_ms", py::none()), own("shared_prefix_tokens", py::none()),
                       own("size_by", py::str("estimate")), own("percentile", py::int_(95)),
                       own("efficiency", py::none()), own("epsilon", py::none())},
                      with_budget_keywords({"tp", "pp", "gpus", "kv_dtype", "weight_dtype",
                                            "expert_dtype", "speculative_method",
                                            "num_speculative_tokens", "draft_model", "profile"}));
    m.def(
        "fleet",
        [fleet_signature](const py::args& args, const py::kwargs& kwargs) {
            const Call c(*fleet_signature, args, kwargs);
            const py::handle ttft_ms = c["ttft_ms"], efficiency = c["efficiency"],
                             shared_prefix_tokens = c["shared_prefix_tokens"],
                             epsilon = c["epsilon"];
            struct {
                LengthDistribution lengths{};
                double rate_per_s = 0;
                Seconds tpot_target{};
                std::optional<Seconds> ttft_target{};
                std::uint64_t shared_prefix_tokens = 0;
                FleetSizeBy size_by = FleetSizeBy::estimate;
                double size_at_percentile = 95;
                double efficiency = 1.0;
                double epsilon = 0;
            } q;
            q.rate_per_s = to_positive(c["rate"], "rate");
            q.tpot_target = to_positive(c["tpot_ms"], "tpot_ms") * milliseconds;
            if (!ttft_ms.is_none()) q.ttft_target = to_positive(ttft_ms, "ttft_ms") * milliseconds;
            const std::string by = to_text(c["size_by"], "size_by");
            if (by != "estimate" && by != "bound")
                usage("size_by",
                      "'estimate' (the latency estimate) or 'bound' (the roofline bound / "
                      "efficiency)",
                      "'" + by + "'");
            q.size_by = by == "estimate" ? FleetSizeBy::estimate : FleetSizeBy::bound;
            q.size_at_percentile = to_positive(c["percentile"], "percentile");
            if (!efficiency.is_none()) {
                if (q.size_by == FleetSizeBy::estimate)
                    usage("efficiency", "size_by='bound' beside it", "size_by='estimate'");
                q.efficiency = to_fraction(efficiency, "efficiency");
            }
            if (!epsilon.is_none()) {
                // As --epsilon: a probability in (0, 1).
                q.epsilon = to_positive(epsilon, "epsilon");
                if (q.epsilon >= 1)
                    usage("epsilon", "a probability in (0, 1)", std::string(py::repr(epsilon)));
            }
            // The lengths: a trace's (kvplan::load_trace) or percentiles, as kvplan fleet reads
            // --trace and --prompt-tokens / --output-tokens.
            const py::handle trace = c["trace"], time_unit = c["time_unit"],
                             prompt = c["prompt_tokens"], output = c["output_tokens"];
            if (trace.is_none() && (prompt.is_none() || output.is_none()))
                usage("trace", "a trace, or both prompt_tokens and output_tokens",
                      prompt.is_none() && output.is_none() ? "neither"
                      : prompt.is_none()                   ? "output_tokens alone"
                                                           : "prompt_tokens alone");
            if (!trace.is_none() && (!prompt.is_none() || !output.is_none()))
                usage("trace", "a trace or prompt_tokens and output_tokens, not both", "both");
            if (!time_unit.is_none() && trace.is_none())
                usage("time_unit", "trace as well (the unit of its arrival times)", "trace=None");
            if (!trace.is_none()) {
                const TraceOptions o =
                    time_unit.is_none() ? TraceOptions{} : trace_options_of(time_unit);
                q.lengths =
                    LengthDistribution::from_trace(load_trace(path_text(trace, "trace"), o));
            } else {
                q.lengths = LengthDistribution::from_percentiles(
                    quantiles(prompt, "prompt_tokens"), quantiles(output, "output_tokens"));
            }
            if (!shared_prefix_tokens.is_none())
                q.shared_prefix_tokens = to_tokens(shared_prefix_tokens, "shared_prefix_tokens");
            check_shared_prefix(q.lengths, q.shared_prefix_tokens);
            std::shared_ptr<PyModel> pm;
            std::shared_ptr<PyGpu> pg;
            std::string profile;
            const DeploymentArgs x = c.deployment();
            Deployment d = deployment_of(x, pm, pg, profile);
            return PyFleet{plan_fleet(FleetRequest{.deployment = std::move(d),
                                                   .lengths = q.lengths,
                                                   .rate_per_s = q.rate_per_s,
                                                   .tpot_target = q.tpot_target,
                                                   .ttft_target = q.ttft_target,
                                                   .shared_prefix_tokens = q.shared_prefix_tokens,
                                                   .size_by = q.size_by,
                                                   .size_at_percentile = q.size_at_percentile,
                                                   .epsilon = q.epsilon,
                                                   .efficiency = q.efficiency}),
                           pg};
        },
        fleet_signature
            ->doc(
                R"(The replicas of tp x pp that serve `rate` requests per second under a TPOT target (and a
TTFT target), as kvplan fleet sizes them (kvplan::plan_fleet): a kvplan.FleetAnswer. gpus:
the GPUs deployed, a multiple of tp x pp: whether their replicas serve the rate, and the rate
they serve.
prompt_tokens and output_tokens: an int (every request that long) or percentiles
("50:1000,95:4000"), or instead trace: a request trace's lengths (a CSV or JSON Lines file, as
kvplan trace reads it; time_unit the unit of its numeric arrival times); the KV is sized at `percentile`; size_by 'estimate' times steps by the
latency estimate, 'bound' by the roofline bound / efficiency; epsilon (a probability in
(0, 1)), as --epsilon: the KV batch is the largest whose KV passes the budget with at most
that probability, instead of every request at `percentile`.)")
            .c_str());
}

}  // namespace kvplan::python
