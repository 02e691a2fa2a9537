// size, plan and disagg: the library's sizing and searches (kvplan/kv_bytes.hpp,
// kvplan/plan/search.hpp, kvplan/plan/disaggregated.hpp) from typed arguments.

#include <kvplan/fleet.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/layout.hpp>
#include <kvplan/plan/compare.hpp>
#include <kvplan/plan/disaggregated.hpp>
#include <kvplan/plan/fleet.hpp>
#include <kvplan/plan/search.hpp>
#include <kvplan/plan/size.hpp>
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

/// The serving keywords of the searches (plan, disagg): the engine and its knobs, as Python gave
/// them.
struct SearchKnobs {
    py::handle engine, engine_version, block_size, gpu_memory_utilization, max_num_seqs,
        max_num_batched_tokens, kv_memory, num_gpu_blocks_override, chunked_local_hybrid,
        without_flashinfer;
    bool allow_long_context = false, enforce_eager = false;
};

/// The serving knobs plan and disagg take, read as kvplan.fit reads them.
Serving search_serving(const SearchKnobs& k) {
    const py::handle none{Py_None};  // borrowed: no reference given back
    DeploymentArgs x{none,
                     none,
                     none,
                     none,
                     none,
                     none,
                     none,
                     none,
                     none,
                     none,
                     none,
                     k.engine,
                     k.engine_version,
                     k.block_size,
                     k.gpu_memory_utilization,
                     k.kv_memory,
                     k.max_num_seqs,
                     k.max_num_batched_tokens,
                     k.num_gpu_blocks_override,
                     none,
                     none,
                     none,
                     none,
                     k.allow_long_context,
                     k.chunked_local_hybrid,
                     k.without_flashinfer,
                     k.enforce_eager};
    Serving s = serving_of(x);
    // A knob the engine cannot take, before the search: the library's InvalidInputError.
    (void)resolve_serving(s);
    return s;
}

struct PyCandidate {
    std::string gpu;
    ReplicaAnswer answer;
    std::shared_ptr<PyDeployment> dep;
};

/// A candidate's answer with the deployment it states, so that it reads as evaluate()'s.
PyCandidate candidate_of(const PlanCandidate& c, const std::shared_ptr<PyModel>& model,
                         const std::vector<std::shared_ptr<PyGpu>>& gpus, const SearchSpace& space,
                         const Serving& serving) {
    Deployment dep{.model = model->get(),
                   .gpu = gpus[c.gpu]->spec,
                   .parallel = c.answer.replica.parallel,
                   .gpus = 0,
                   .weights = space.weights[c.weights],
                   .kv = space.kv_formats[c.kv],
                   .serving = serving};
    PreparedLayout prepared = prepare_layout(dep);
    auto d = std::make_shared<PyDeployment>(
        PyDeployment{model, gpus[c.gpu], std::move(dep), std::move(prepared), c.answer.limit.tokens,
                     "", c.answer.replica_gpus, c.answer.gpus, c.answer.replicas});
    return PyCandidate{gpus[c.gpu]->id, c.answer, std::move(d)};
}

struct PyPlan {
    std::vector<PyCandidate> fits, nearest_misses;
    std::optional<PyCandidate> refused;
    std::size_t searched = 0, fitting = 0, layouts = 0;
    bool complete = true;
};

struct PyDisagg {
    DisaggPlan p;
    std::vector<std::shared_ptr<PyGpu>> gpus;
};

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
    (void)resolve_serving(rq.serving);  // a knob the engine cannot take
    if (!context.is_none()) rq.context = to_tokens(context, "context");
    rq.concurrency = to_count(concurrency, "concurrency", "sequences");
    if (!shared_prefix_tokens.is_none())
        rq.shared_prefix_tokens = to_tokens(shared_prefix_tokens, "shared_prefix_tokens");
    std::vector<std::optional<KvFormat>> kvs;
    for (const py::handle k : one_or_many(x.kv_dtype, "kv_dtype"))
        kvs.push_back(to_kv_choice(k, "kv_dtype"));
    std::vector<std::optional<WeightOptions>> weights;
    for (const py::handle w : one_or_many(x.weight_dtype, "weight_dtype")) {
        if (w.is_none()) {
            weights.emplace_back();
        } else {
            weights.emplace_back(WeightOptions{});
            weights.back()->format = to_weight_format(w, "weight_dtype");
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
    m.def(
        "compare",
        [](py::handle model, py::handle gpu, py::handle context, py::handle concurrency,
           py::handle shared_prefix_tokens, py::handle kv_dtype, py::handle weight_dtype,
           py::handle tp, py::handle pp, py::handle dp, py::handle ep, py::handle dcp,
           py::handle gpus, py::handle engine, py::handle engine_version, py::handle block_size,
           py::handle gpu_memory_utilization, py::handle kv_memory, py::handle max_num_seqs,
           py::handle max_num_batched_tokens, py::handle num_gpu_blocks_override,
           bool allow_long_context, bool enforce_eager) {
            const py::handle none{Py_None};  // borrowed: no reference given back
            return compare_of(model, gpu, context, concurrency, shared_prefix_tokens,
                              DeploymentArgs{.model = none,
                                             .gpu = none,
                                             .tp = tp,
                                             .pp = pp,
                                             .dp = dp,
                                             .ep = ep,
                                             .dcp = dcp,
                                             .gpus = gpus,
                                             .kv_dtype = kv_dtype,
                                             .weight_dtype = weight_dtype,
                                             .expert_dtype = none,
                                             .engine = engine,
                                             .engine_version = engine_version,
                                             .block_size = block_size,
                                             .gpu_memory_utilization = gpu_memory_utilization,
                                             .kv_memory = kv_memory,
                                             .max_num_seqs = max_num_seqs,
                                             .max_num_batched_tokens = max_num_batched_tokens,
                                             .num_gpu_blocks_override = num_gpu_blocks_override,
                                             .speculative_method = none,
                                             .num_speculative_tokens = none,
                                             .draft_model = none,
                                             .profile = none,
                                             .allow_long_context = allow_long_context,
                                             .enforce_eager = enforce_eager});
        },
        py::arg("model"), py::arg("gpu") = py::none(), py::kw_only(),
        py::arg("context") = py::none(), py::arg("concurrency") = 1,
        py::arg("shared_prefix_tokens") = py::none(), py::arg("kv_dtype") = py::none(),
        py::arg("weight_dtype") = py::none(), py::arg("tp") = 1, py::arg("pp") = 1,
        py::arg("dp") = 1, py::arg("ep") = 1, py::arg("dcp") = 1, py::arg("gpus") = py::none(),
        py::arg("engine") = "vllm", py::arg("engine_version") = py::none(),
        py::arg("block_size") = py::none(), py::arg("gpu_memory_utilization") = py::none(),
        py::arg("kv_memory") = py::none(), py::arg("max_num_seqs") = py::none(),
        py::arg("max_num_batched_tokens") = py::none(),
        py::arg("num_gpu_blocks_override") = py::none(), py::arg("allow_long_context") = false,
        py::arg("enforce_eager") = false,
        R"(compare(model, gpu=None, *, context=None, concurrency=1, shared_prefix_tokens=None, kv_dtype=None, weight_dtype=None, tp=1, pp=1, dp=1, ep=1, dcp=1, gpus=None, engine='vllm', engine_version=None, block_size=None, gpu_memory_utilization=None, kv_memory=None, max_num_seqs=None, max_num_batched_tokens=None, num_gpu_blocks_override=None, allow_long_context=False, enforce_eager=False)
--

Several configurations side by side, as kvplan compare gives them (kvplan::compare): a list
of kvplan.CompareRow, one per model x GPU x KV dtype x weight format in that order. model,
gpu, kv_dtype and weight_dtype each take one value or a list; gpu=None sizes only (no
budget). The other keywords are kvplan.fit's, shared by every row; context None: each
model's context limit.

Example:

>>> [r.answer.max_concurrency for r in kvplan.compare(
...     "llama-3-70b", "h100-sxm", tp=4, context="8k", kv_dtype=["bf16", "fp8"])]
[62, 125]

Raises kvplan.InvalidLayoutError for a layout a model cannot take.)");

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
        .def_property_readonly("searched", [](const PyPlan& p) { return p.searched; })
        .def_property_readonly("fitting", [](const PyPlan& p) { return p.fitting; })
        .def_property_readonly("layouts", [](const PyPlan& p) { return p.layouts; })
        .def_property_readonly("complete", [](const PyPlan& p) { return p.complete; })
        .def("__repr__", [](const PyPlan& p) {
            return fmt::format("<kvplan.PlanAnswer {} candidates searched, {} fit>", p.searched,
                               p.fitting);
        });
    m.def(
        "plan",
        [](py::handle model, py::handle gpu, py::handle context, py::handle concurrency,
           py::handle prompt_tokens, py::handle output_tokens, py::handle shared_prefix_tokens,
           py::handle kv_dtype, py::handle weight_dtype, py::handle max_gpus, py::handle max_tp,
           bool any_layout, bool dp, bool ep, bool dcp, py::handle rank, py::handle top,
           py::handle engine, py::handle engine_version, py::handle block_size,
           py::handle gpu_memory_utilization, py::handle max_num_seqs,
           py::handle max_num_batched_tokens, bool enforce_eager, py::handle kv_memory,
           py::handle num_gpu_blocks_override, bool allow_long_context,
           py::handle chunked_local_hybrid, py::handle without_flashinfer) {
            SearchSpace space;
            space.max_gpus = to_u32(max_gpus, "max_gpus", "GPUs", 64);
            space.max_tp = to_u32(max_tp, "max_tp", "GPUs", 64);
            space.data_parallel = dp;
            space.expert_parallel = ep;
            space.context_parallel = dcp;
            space.layouts = any_layout ? LayoutRule::any : LayoutRule::whole_nodes;
            space.kv_formats = kv_list(kv_dtype);
            if (!weight_dtype.is_none())
                space.weights = {
                    WeightOptions{.format = to_weight_format(weight_dtype, "weight_dtype")}};
            space.keep = to_count(top, "top", "candidates");
            const bool split = !prompt_tokens.is_none() || !output_tokens.is_none();
            const std::string r =
                rank.is_none() ? (split ? "estimate" : "gpus") : to_text(rank, "rank");
            if (r != "gpus" && r != "fastest" && r != "estimate")
                usage("rank",
                      "'estimate' (the most output tokens/s per GPU by the latency estimate), "
                      "'gpus' (fewest GPUs first) or 'fastest' (the lowest TPOT bound first)",
                      "'" + r + "'");
            if (r == "estimate" && !split)
                usage("rank",
                      "prompt_tokens and output_tokens beside 'estimate' (the load the estimate "
                      "serves)",
                      "'estimate'");
            const Serving serving = search_serving(
                {engine, engine_version, block_size, gpu_memory_utilization, max_num_seqs,
                 max_num_batched_tokens, kv_memory, num_gpu_blocks_override, chunked_local_hybrid,
                 without_flashinfer, allow_long_context, enforce_eager});
            const std::shared_ptr<PyModel> pm = as_model(model);
            const Demand demand =
                demand_of(context_limit(pm->get().config()).tokens, context, concurrency,
                          prompt_tokens, output_tokens, shared_prefix_tokens);
            const std::vector<std::shared_ptr<PyGpu>> gpus = gpu_list(gpu);
            for (const auto& g : gpus) space.gpus.push_back(g->spec);
            const PlanAnswer a = plan_replicas(pm->get(), space, serving, demand,
                                               r == "fastest"    ? Ranking::fastest
                                               : r == "estimate" ? Ranking::estimate
                                                                 : Ranking::fewest_gpus);
            PyPlan out;
            for (const PlanCandidate& c : a.fits)
                out.fits.push_back(candidate_of(c, pm, gpus, space, serving));
            for (const PlanCandidate& c : a.nearest_misses)
                out.nearest_misses.push_back(candidate_of(c, pm, gpus, space, serving));
            if (a.refused) out.refused = candidate_of(*a.refused, pm, gpus, space, serving);
            out.searched = a.searched;
            out.fitting = a.fitting;
            out.layouts = a.layouts;
            out.complete = a.complete;
            return out;
        },
        py::arg("model"), py::arg("gpu") = py::none(), py::kw_only(),
        py::arg("context") = py::none(), py::arg("concurrency") = 1,
        py::arg("prompt_tokens") = py::none(), py::arg("output_tokens") = py::none(),
        py::arg("shared_prefix_tokens") = py::none(), py::arg("kv_dtype") = py::none(),
        py::arg("weight_dtype") = py::none(), py::arg("max_gpus") = 8, py::arg("max_tp") = 8,
        py::arg("any_layout") = false, py::arg("dp") = true, py::arg("ep") = true,
        py::arg("dcp") = true, py::arg("rank") = py::none(), py::arg("top") = 50,
        py::arg("engine") = "vllm", py::arg("engine_version") = py::none(),
        py::arg("block_size") = py::none(), py::arg("gpu_memory_utilization") = py::none(),
        py::arg("max_num_seqs") = py::none(), py::arg("max_num_batched_tokens") = py::none(),
        py::arg("enforce_eager") = false, py::arg("kv_memory") = py::none(),
        py::arg("num_gpu_blocks_override") = py::none(), py::arg("allow_long_context") = false,
        py::arg("chunked_local_hybrid") = py::none(), py::arg("without_flashinfer") = py::none(),
        R"(plan(model, gpu=None, *, context=None, concurrency=1, prompt_tokens=None, output_tokens=None, shared_prefix_tokens=None, kv_dtype=None, weight_dtype=None, max_gpus=8, max_tp=8, any_layout=False, dp=True, ep=True, dcp=True, rank=None, top=50, engine='vllm', engine_version=None, block_size=None, gpu_memory_utilization=None, max_num_seqs=None, max_num_batched_tokens=None, enforce_eager=False, kv_memory=None, num_gpu_blocks_override=None, allow_long_context=False, chunked_local_hybrid=None, without_flashinfer=None)
--

The replicas that hold `concurrency` sequences of `context` tokens, as kvplan plan searches
them: a kvplan.PlanAnswer. gpu: a GPU, a list of them (in order of preference) or None
(every bundled GPU); kv_dtype: one KV dtype or a list. The search tries tp, pp, and for
mixture-of-experts models dp and ep (dp=False, ep=False, dcp=False leave them out), up to
max_gpus GPUs a replica and max_tp GPUs a tensor-parallel group, in the layouts people deploy
(whole nodes) unless any_layout. rank: 'gpus' (fewest GPUs first), 'fastest' (the lowest TPOT
bound) or 'estimate' (the most output tokens/s per GPU; the default with prompt_tokens and
output_tokens). top: how many fits are kept with their answers.

Example:

>>> kvplan.plan(model="llama-3-70b", gpu=["h100-sxm", "h200-sxm"], context="8k",
...             concurrency=64).found
True

Raises kvplan.UsageError for a keyword's value it cannot take and kvplan.InvalidInputError
for an unknown model or GPU or a knob the engine cannot take.)");

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
            "note", [](const PyDisagg& d) { return d.p.note; }, "Why a plan is missing.")
        .def("__repr__", [](const PyDisagg& d) {
            return fmt::format("<kvplan.DisaggPlan {} GPUs disaggregated, {} aggregated>", d.p.gpus,
                               d.p.aggregated ? d.p.aggregated->gpus : 0U);
        });
    m.def(
        "disagg",
        [](py::handle model, py::handle gpu, py::handle rate, py::handle prompt_tokens,
           py::handle output_tokens, py::handle ttft_ms, py::handle tpot_ms, py::handle latency,
           py::handle kv_dtype, py::handle weight_dtype, py::handle max_gpus, py::handle max_tp,
           py::handle engine, py::handle engine_version, py::handle block_size,
           py::handle gpu_memory_utilization, py::handle max_num_batched_tokens, bool enforce_eager,
           py::handle max_num_seqs, py::handle kv_memory, py::handle num_gpu_blocks_override,
           bool allow_long_context, py::handle chunked_local_hybrid,
           py::handle without_flashinfer) {
            const std::string lat = to_text(latency, "latency");
            if (lat != "estimate" && lat != "bound")
                usage("latency",
                      "'estimate' (the GPU family's fitted fractions and fixed costs) or 'bound' "
                      "(peak figures: a lower bound on the GPUs)",
                      "'" + lat + "'");
            const DisaggDemand demand{.rate = to_positive(rate, "rate"),
                                      .prompt_tokens = to_tokens(prompt_tokens, "prompt_tokens"),
                                      .output_tokens = to_tokens(output_tokens, "output_tokens"),
                                      .ttft = to_positive(ttft_ms, "ttft_ms") * milliseconds,
                                      .tpot = to_positive(tpot_ms, "tpot_ms") * milliseconds};
            SearchSpace space;
            space.max_gpus = to_u32(max_gpus, "max_gpus", "GPUs", 64);
            space.max_tp = to_u32(max_tp, "max_tp", "GPUs", 64);
            space.kv_formats = kv_list(kv_dtype);
            if (!weight_dtype.is_none())
                space.weights = {
                    WeightOptions{.format = to_weight_format(weight_dtype, "weight_dtype")}};
            const py::handle none{Py_None};  // borrowed: no reference given back
            const Serving serving = search_serving(
                {engine, engine_version, block_size, gpu_memory_utilization, max_num_seqs,
                 max_num_batched_tokens, kv_memory, num_gpu_blocks_override, chunked_local_hybrid,
                 without_flashinfer, allow_long_context, enforce_eager});
            const std::shared_ptr<PyModel> pm = as_model(model);
            PyDisagg out;
            out.gpus = gpu_list(gpu);
            for (const auto& g : out.gpus) space.gpus.push_back(g->spec);
            DisaggOptions o;
            o.latency = lat == "bound" ? LatencyModel::bound : LatencyModel::estimate;
            out.p = plan_disaggregated(pm->get(), space, serving, demand, o);
            return out;
        },
        py::arg("model"), py::arg("gpu") = py::none(), py::kw_only(), py::arg("rate"),
        py::arg("prompt_tokens"), py::arg("output_tokens"), py::arg("ttft_ms"), py::arg("tpot_ms"),
        py::arg("latency") = "estimate", py::arg("kv_dtype") = py::none(),
        py::arg("weight_dtype") = py::none(), py::arg("max_gpus") = 8, py::arg("max_tp") = 8,
        py::arg("engine") = "vllm", py::arg("engine_version") = py::none(),
        py::arg("block_size") = py::none(), py::arg("gpu_memory_utilization") = py::none(),
        py::arg("max_num_batched_tokens") = py::none(), py::arg("enforce_eager") = false,
        py::arg("max_num_seqs") = py::none(), py::arg("kv_memory") = py::none(),
        py::arg("num_gpu_blocks_override") = py::none(), py::arg("allow_long_context") = false,
        py::arg("chunked_local_hybrid") = py::none(), py::arg("without_flashinfer") = py::none(),
        R"(disagg(model, gpu=None, *, rate, prompt_tokens, output_tokens, ttft_ms, tpot_ms, latency='estimate', kv_dtype=None, weight_dtype=None, max_gpus=8, max_tp=8, engine='vllm', engine_version=None, block_size=None, gpu_memory_utilization=None, max_num_batched_tokens=None, enforce_eager=False, max_num_seqs=None, kv_memory=None, num_gpu_blocks_override=None, allow_long_context=False, chunked_local_hybrid=None, without_flashinfer=None)
--

Prefill and decode pools for `rate` requests per second of prompt_tokens + output_tokens
under TTFT and TPOT targets (milliseconds), beside the aggregated plan, as kvplan disagg
plans them (the link between the pools: InfiniBand NDR, a NIC per GPU): a kvplan.DisaggPlan.
latency: 'estimate' (the GPU family's fitted parameters) or 'bound' (peak figures).)");

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
        .def("__repr__", [](const PyFleet& f) {
            return fmt::format("<kvplan.FleetAnswer {} replicas of {} x {}, batch {} ({})>",
                               f.a.plan.replicas, f.a.replica_gpus, f.gpu->id, f.a.plan.batch,
                               name(f.a.plan.binding));
        });
    m.def(
        "fleet",
        [](py::handle model, py::handle gpu, py::handle rate, py::handle tpot_ms,
           py::handle prompt_tokens, py::handle output_tokens, py::handle ttft_ms,
           py::handle shared_prefix_tokens, py::handle size_by, py::handle percentile,
           py::handle efficiency, py::handle tp, py::handle pp, py::handle kv_dtype,
           py::handle weight_dtype, py::handle expert_dtype, py::handle engine,
           py::handle engine_version, py::handle block_size, py::handle gpu_memory_utilization,
           py::handle max_num_seqs, py::handle max_num_batched_tokens, bool enforce_eager,
           py::handle kv_memory, py::handle num_gpu_blocks_override, bool allow_long_context,
           py::handle chunked_local_hybrid, py::handle without_flashinfer) {
            struct {
                LengthDistribution lengths{};
                double rate_per_s = 0;
                Seconds tpot_target{};
                std::optional<Seconds> ttft_target{};
                std::uint64_t shared_prefix_tokens = 0;
                FleetSizeBy size_by = FleetSizeBy::estimate;
                double size_at_percentile = 95;
                double efficiency = 1.0;
            } q;
            q.rate_per_s = to_positive(rate, "rate");
            q.tpot_target = to_positive(tpot_ms, "tpot_ms") * milliseconds;
            if (!ttft_ms.is_none()) q.ttft_target = to_positive(ttft_ms, "ttft_ms") * milliseconds;
            const std::string by = to_text(size_by, "size_by");
            if (by != "estimate" && by != "bound")
                usage("size_by",
                      "'estimate' (the latency estimate) or 'bound' (the roofline bound / "
                      "efficiency)",
                      "'" + by + "'");
            q.size_by = by == "estimate" ? FleetSizeBy::estimate : FleetSizeBy::bound;
            q.size_at_percentile = to_positive(percentile, "percentile");
            if (!efficiency.is_none()) {
                if (q.size_by == FleetSizeBy::estimate)
                    usage("efficiency", "size_by='bound' beside it", "size_by='estimate'");
                q.efficiency = to_fraction(efficiency, "efficiency");
            }
            q.lengths =
                LengthDistribution::from_percentiles(quantiles(prompt_tokens, "prompt_tokens"),
                                                     quantiles(output_tokens, "output_tokens"));
            if (!shared_prefix_tokens.is_none())
                q.shared_prefix_tokens = to_tokens(shared_prefix_tokens, "shared_prefix_tokens");
            check_shared_prefix(q.lengths, q.shared_prefix_tokens);
            const py::int_ one_int(1);
            const py::handle none{Py_None}, one = one_int;
            std::shared_ptr<PyModel> pm;
            std::shared_ptr<PyGpu> pg;
            std::string profile;
            DeploymentArgs x{model,
                             gpu,
                             tp,
                             pp,
                             one,
                             one,
                             one,
                             none,
                             kv_dtype,
                             weight_dtype,
                             expert_dtype,
                             engine,
                             engine_version,
                             block_size,
                             gpu_memory_utilization,
                             none,
                             max_num_seqs,
                             max_num_batched_tokens,
                             none,
                             none,
                             none,
                             none,
                             none,
                             false};
            x.kv_memory = kv_memory;
            x.num_gpu_blocks_override = num_gpu_blocks_override;
            x.allow_long_context = allow_long_context;
            x.chunked_local_hybrid = chunked_local_hybrid;
            x.without_flashinfer = without_flashinfer;
            x.enforce_eager = enforce_eager;
            Deployment d = deployment_of(x, pm, pg, profile);
            return PyFleet{plan_fleet(FleetRequest{.deployment = std::move(d),
                                                   .lengths = q.lengths,
                                                   .rate_per_s = q.rate_per_s,
                                                   .tpot_target = q.tpot_target,
                                                   .ttft_target = q.ttft_target,
                                                   .shared_prefix_tokens = q.shared_prefix_tokens,
                                                   .size_by = q.size_by,
                                                   .size_at_percentile = q.size_at_percentile,
                                                   .efficiency = q.efficiency}),
                           pg};
        },
        py::arg("model"), py::arg("gpu"), py::kw_only(), py::arg("rate"), py::arg("tpot_ms"),
        py::arg("prompt_tokens"), py::arg("output_tokens"), py::arg("ttft_ms") = py::none(),
        py::arg("shared_prefix_tokens") = py::none(), py::arg("size_by") = "estimate",
        py::arg("percentile") = 95, py::arg("efficiency") = py::none(), py::arg("tp") = 1,
        py::arg("pp") = 1, py::arg("kv_dtype") = py::none(), py::arg("weight_dtype") = py::none(),
        py::arg("expert_dtype") = py::none(), py::arg("engine") = "vllm",
        py::arg("engine_version") = py::none(), py::arg("block_size") = py::none(),
        py::arg("gpu_memory_utilization") = py::none(), py::arg("max_num_seqs") = py::none(),
        py::arg("max_num_batched_tokens") = py::none(), py::arg("enforce_eager") = false,
        py::arg("kv_memory") = py::none(), py::arg("num_gpu_blocks_override") = py::none(),
        py::arg("allow_long_context") = false, py::arg("chunked_local_hybrid") = py::none(),
        py::arg("without_flashinfer") = py::none(),
        R"(fleet(model, gpu, *, rate, tpot_ms, prompt_tokens, output_tokens, ttft_ms=None, shared_prefix_tokens=None, size_by='estimate', percentile=95, efficiency=None, tp=1, pp=1, kv_dtype=None, weight_dtype=None, expert_dtype=None, engine='vllm', engine_version=None, block_size=None, gpu_memory_utilization=None, max_num_seqs=None, max_num_batched_tokens=None, enforce_eager=False, kv_memory=None, num_gpu_blocks_override=None, allow_long_context=False, chunked_local_hybrid=None, without_flashinfer=None)
--

The replicas of tp x pp that serve `rate` requests per second under a TPOT target (and a
TTFT target), as kvplan fleet sizes them (kvplan::plan_fleet): a kvplan.FleetAnswer.
prompt_tokens and output_tokens: an int (every request that long) or percentiles
("50:1000,95:4000"); the KV is sized at `percentile`; size_by 'estimate' times steps by the
latency estimate, 'bound' by the roofline bound / efficiency.)");
}

}  // namespace kvplan::python
