// trace: what a request trace asks of the cache of one replica (kvplan::analyze_trace,
// kvplan/plan/trace.hpp), from typed arguments; the trace read by the library's load_trace.

#include <kvplan/plan/trace.hpp>
#include <utility>

#include "common.hpp"

namespace kvplan::python {

TraceOptions trace_options_of(py::handle h) {
    const std::string u = to_text(h, "time_unit");
    TraceOptions o;
    if (u == "s")
        o.numeric_time_unit = seconds;
    else if (u == "ms")
        o.numeric_time_unit = milliseconds;
    else if (u == "us")
        o.numeric_time_unit = microseconds;
    else
        usage("time_unit", "'s', 'ms' or 'us'", "'" + u + "'");
    return o;
}

namespace {

/// Nearest-rank percentiles and the maximum, as ints (tokens or bytes).
struct PyPercentiles {
    std::uint64_t p50 = 0, p95 = 0, p99 = 0, max = 0;
};

PyPercentiles percentiles(const Percentiles<std::uint64_t>& p) {
    return {p.p50, p.p95, p.p99, p.max};
}
PyPercentiles percentiles(const Percentiles<Bytes>& p) {
    return {p.p50.count(), p.p95.count(), p.p99.count(), p.max.count()};
}

struct PyTrace {
    std::shared_ptr<PyModel> model;
    std::shared_ptr<PyGpu> gpu;  ///< null: none given
    TraceAnswer a;
};

PyTrace trace_of(py::handle trace, py::handle model, py::handle gpu, const DeploymentArgs& x,
                 py::handle ttft_ms, py::handle tpot_ms, py::handle max_model_len,
                 py::handle time_unit) {
    // Every keyword read before any file, as the command line parses its flags.
    const ParallelConfig p = parallel_of(x);  // tp and pp: a trace is replayed on tp x pp
    const std::uint32_t gpus = gpu_count_of(x);
    const std::optional<KvFormat> kv = to_kv_choice(x.kv_dtype, "kv_dtype");
    std::optional<WeightOptions> weights = weights_of(x);
    Serving serving = serving_of(x);
    (void)resolve_serving(serving);  // a knob the engine cannot take
    // A drafter: analyze_trace's refusal, once the keywords are read.
    serving.speculation = speculation_of(x, serving.engine, {});
    const ServiceTimes times{.ttft = to_positive(ttft_ms, "ttft_ms") * milliseconds,
                             .tpot = to_positive(tpot_ms, "tpot_ms") * milliseconds};
    std::optional<std::uint64_t> mml;
    if (!max_model_len.is_none()) mml = to_tokens(max_model_len, "max_model_len");
    const TraceOptions topt = trace_options_of(time_unit);
    const std::string path = path_text(trace, "trace");
    if (gpus != 0 && gpu.is_none() && !serving.kv_memory_per_gpu)
        usage("gpus", "a gpu or kv_memory as well (the replicas deployed are sized on one)",
              "neither");

    std::shared_ptr<PyModel> m = as_model(model);
    std::shared_ptr<PyGpu> g;
    if (!gpu.is_none()) g = as_gpu(gpu);
    const TraceSizing s{.model = m->get(),
                        .gpu = g ? std::optional<GpuSpec>(g->spec) : std::nullopt,
                        .tp = p.tp,
                        .pp = p.pp,
                        .gpus = gpus,
                        .weights = std::move(weights),
                        .kv = kv,
                        .serving = std::move(serving),
                        .times = times,
                        .max_model_len = mml};
    const Trace t = load_trace(path, topt);
    TraceAnswer a = analyze_trace(t, s);
    return PyTrace{std::move(m), std::move(g), std::move(a)};
}

}  // namespace

void bind_trace(py::module_& m) {
    py::class_<PyPercentiles>(m, "Percentiles",
                              "Nearest-rank percentiles and the maximum (tokens or bytes).")
        .def_readonly("p50", &PyPercentiles::p50)
        .def_readonly("p95", &PyPercentiles::p95)
        .def_readonly("p99", &PyPercentiles::p99)
        .def_readonly("max", &PyPercentiles::max)
        .def("__repr__", [](const PyPercentiles& p) {
            return fmt::format("<kvplan.Percentiles p50 {}, p95 {}, p99 {}, max {}>",
                               grouped(p.p50), grouped(p.p95), grouped(p.p99), grouped(p.max));
        });

    py::class_<KvDistribution>(m, "TraceKv", "KV bytes per request at completion.")
        .def_property_readonly(
            "exact", [](const KvDistribution& d) { return percentiles(d.exact); },
            "kv_bytes_per_sequence of each request's prompt + output tokens.")
        .def_property_readonly(
            "paged", [](const KvDistribution& d) { return percentiles(d.paged); },
            "The blocks each request holds.")
        .def_property_readonly("mean_exact",
                               [](const KvDistribution& d) { return d.mean_exact.count(); })
        .def_property_readonly("mean_paged",
                               [](const KvDistribution& d) { return d.mean_paged.count(); });

    py::class_<TraceWaste>(m, "TraceWaste",
                           "KV bytes the requests use, hold in blocks, and would reserve "
                           "contiguously (max_model_len each), on a GPU of the busiest stage.")
        .def_readonly("requests", &TraceWaste::requests, "Requests summed.")
        .def_readonly("over_max_model_len", &TraceWaste::over_max_len,
                      "Requests longer than max_model_len, left out.")
        .def_property_readonly("used_bytes", [](const TraceWaste& w) { return w.used.count(); })
        .def_property_readonly("paged_bytes", [](const TraceWaste& w) { return w.paged.count(); })
        .def_property_readonly("contiguous_bytes",
                               [](const TraceWaste& w) { return w.contiguous.count(); })
        .def_property_readonly("paged_waste_fraction", &TraceWaste::paged_waste_fraction)
        .def_property_readonly("contiguous_waste_fraction", &TraceWaste::contiguous_waste_fraction);

    py::class_<TraceConcurrency>(m, "TraceConcurrency",
                                 "The concurrency the arrivals imply: Little's law and a replay.")
        .def_property_readonly("arrival_span_seconds",
                               [](const TraceConcurrency& c) { return c.arrival_span.in(seconds); })
        .def_readonly("rate_per_second", &TraceConcurrency::rate_per_s,
                      "(requests - 1) / arrival span.")
        .def_property_readonly(
            "mean_time_in_system_seconds",
            [](const TraceConcurrency& c) { return c.mean_time_in_system.in(seconds); },
            "ttft + mean output tokens x tpot.")
        .def_readonly("littles_law", &TraceConcurrency::littles_law,
                      "rate x mean time in system: mean requests in flight.")
        .def_readonly("peak_requests", &TraceConcurrency::peak_requests)
        .def_readonly("p95_requests", &TraceConcurrency::p95_requests)
        .def_readonly("mean_requests", &TraceConcurrency::mean_requests)
        .def_property_readonly("peak_kv_bytes",
                               [](const TraceConcurrency& c) { return c.peak_kv.count(); })
        .def_property_readonly("p95_kv_bytes",
                               [](const TraceConcurrency& c) { return c.p95_kv.count(); })
        .def_property_readonly("peak_at_seconds",
                               [](const TraceConcurrency& c) { return c.peak_at.in(seconds); });

    py::class_<TraceReplica>(m, "TraceReplica", "The replay on one replica shape.")
        .def_property_readonly("tp", [](const TraceReplica& r) { return r.parallel.tp; })
        .def_property_readonly("pp", [](const TraceReplica& r) { return r.parallel.pp; })
        .def_readonly("limiting_stage", &TraceReplica::limiting_stage)
        .def_property_readonly("kv_budget_bytes_per_gpu",
                               [](const TraceReplica& r) { return r.kv_budget.count(); })
        .def_property_readonly("peak_kv_bytes",
                               [](const TraceReplica& r) { return r.peak_kv.count(); })
        .def_property_readonly("p95_kv_bytes",
                               [](const TraceReplica& r) { return r.p95_kv.count(); })
        .def_readonly("peak_requests", &TraceReplica::peak_requests)
        .def_readonly("holds_peak", &TraceReplica::holds_peak)
        .def_readonly("holds_p95", &TraceReplica::holds_p95)
        .def_readonly("replicas_for_peak", &TraceReplica::replicas_for_peak,
                      "Replicas of this shape the peak needs (0: no KV budget).");

    py::class_<PyTrace>(m, "TraceAnswer", "What a request trace asks of a replica's cache.")
        .def_property_readonly("model", [](const PyTrace& t) { return t.model; })
        .def_property_readonly("gpu", [](const PyTrace& t) { return t.gpu; })
        .def_property_readonly("requests", [](const PyTrace& t) { return t.a.lengths.requests; })
        .def_property_readonly("prompt_tokens",
                               [](const PyTrace& t) { return percentiles(t.a.lengths.prompt); })
        .def_property_readonly("output_tokens",
                               [](const PyTrace& t) { return percentiles(t.a.lengths.output); })
        .def_property_readonly(
            "total_tokens", [](const PyTrace& t) { return percentiles(t.a.lengths.total); },
            "prompt + output tokens.")
        .def_property_readonly("mean_prompt_tokens",
                               [](const PyTrace& t) { return t.a.lengths.mean_prompt; })
        .def_property_readonly("mean_output_tokens",
                               [](const PyTrace& t) { return t.a.lengths.mean_output; })
        .def_property_readonly("mean_total_tokens",
                               [](const PyTrace& t) { return t.a.lengths.mean_total; })
        .def_property_readonly("max_model_len", [](const PyTrace& t) { return t.a.max_model_len; })
        .def_property_readonly("block_size", [](const PyTrace& t) { return t.a.block_size; })
        .def_property_readonly(
            "busiest_stage", [](const PyTrace& t) { return t.a.busiest_stage; },
            "The stage whose GPUs hold the most of a p99 request.")
        .def_property_readonly(
            "kv", [](const PyTrace& t) { return t.a.whole; }, "KV per request, the whole model.")
        .def_property_readonly(
            "kv_per_gpu", [](const PyTrace& t) { return t.a.per_gpu; },
            "KV per request on a GPU of the busiest stage.")
        .def_property_readonly("waste", [](const PyTrace& t) { return t.a.waste; })
        .def_property_readonly(
            "concurrency",
            [](const PyTrace& t) -> py::object {
                return t.a.concurrency ? py::cast(*t.a.concurrency) : py::none();
            },
            "None without arrival times, or with every arrival at one instant.")
        .def_property_readonly(
            "on_replica",
            [](const PyTrace& t) -> py::object {
                return t.a.on_replica ? py::cast(*t.a.on_replica) : py::none();
            },
            "The replay on the replica given (a gpu or kv_memory), or None.")
        .def_property_readonly(
            "smallest",
            [](const PyTrace& t) -> py::object {
                return t.a.smallest ? py::cast(*t.a.smallest) : py::none();
            },
            "The fewest GPUs holding the replay's peak, or None.")
        .def_property_readonly(
            "replicas_given",
            [](const PyTrace& t) -> py::object {
                return t.a.gpus_given != 0 ? py::object(py::int_(t.a.replicas_given))
                                           : py::object(py::none());
            },
            "The replicas of the GPUs deployed (gpus / (tp x pp)), or None without gpus.")
        .def_property_readonly(
            "given_holds_peak",
            [](const PyTrace& t) -> py::object {
                return t.a.given_holds_peak ? py::object(py::bool_(*t.a.given_holds_peak))
                                            : py::object(py::none());
            },
            "The replicas deployed hold the replay's peak, arrivals split evenly over them "
            "(None without gpus or a replay).")
        .def("__repr__", [](const PyTrace& t) {
            return fmt::format("<kvplan.TraceAnswer {} requests, p99 {} tokens, {}>",
                               grouped(t.a.lengths.requests), grouped(t.a.lengths.total.p99),
                               t.model->id);
        });

    const auto* trace_signature = new Signature(
        "trace", 3,
        {own("trace"), own("model"), own("gpu", py::none()),
         own("ttft_ms", py::float_(default_service_times.ttft.in(milliseconds))),
         own("tpot_ms", py::float_(default_service_times.tpot.in(milliseconds))),
         own("max_model_len", py::none()), own("time_unit", py::str("s"))},
        with_budget_keywords({"tp", "pp", "gpus", "kv_dtype", "weight_dtype", "expert_dtype",
                              "speculative_method", "num_speculative_tokens", "draft_model"}));
    m.def(
        "trace",
        [trace_signature](const py::args& args, const py::kwargs& kwargs) {
            const Call c(*trace_signature, args, kwargs);
            return trace_of(c["trace"], c["model"], c["gpu"], c.deployment(), c["ttft_ms"],
                            c["tpot_ms"], c["max_model_len"], c["time_unit"]);
        },
        trace_signature
            ->doc(
                R"(What a request trace (a CSV or JSON Lines file: prompt and output tokens, optionally arrival
times) asks of the cache of one replica, as kvplan trace gives it (kvplan::analyze_trace): a
kvplan.TraceAnswer. Each request stays ttft_ms + output tokens x tpot_ms; time_unit is the
unit of numeric arrival times. With a gpu (or kv_memory), the replay on the replica and the
smallest replica that holds its peak; gpus, the GPUs deployed (a multiple of tp x pp): whether
their replicas hold it.

Raises kvplan.InvalidInputError for a trace it cannot read, naming the file and the line.)")
            .c_str());
}

}  // namespace kvplan::python
