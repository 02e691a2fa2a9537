// calibrate: a replica calibrated on what vLLM measured (kvplan::calibrate,
// kvplan/calibrate/replica.hpp), from a start-up log, `vllm bench serve` results, or both.

#include <fstream>
#include <kvplan/calibrate/bench_result.hpp>
#include <kvplan/calibrate/replica.hpp>
#include <kvplan/error.hpp>
#include <utility>

#include "common.hpp"

namespace kvplan::python {

namespace {

struct PyCalibration {
    CalibrationAnswer a;
    std::shared_ptr<PyModel> model;
    std::shared_ptr<PyGpu> gpu;  ///< null: the log's GPU
    std::vector<BenchResult> benches;
};

/// The log's part, with the answer it belongs to kept alive.
struct PyLogCalibration {
    std::shared_ptr<const PyCalibration> c;
    [[nodiscard]] const LogCalibration& get() const { return *c->a.log; }
};

/// The benchmarks' part.
struct PyBenchCalibration {
    std::shared_ptr<const PyCalibration> c;
    [[nodiscard]] const BenchCalibration& get() const { return *c->a.bench; }
};

/// One benchmark: what it measured, the estimates before and after.
struct PyBenchFigures {
    BenchFigures f;
    BenchResult measured;
    EstimateParams start, fitted;
};

/// One path, or a list (or tuple) of them.
std::vector<std::string> paths(py::handle h, std::string_view field) {
    std::vector<std::string> out;
    if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
        for (const py::handle p : py::reinterpret_borrow<py::sequence>(h))
            out.push_back(path_text(p, field));
        if (out.empty()) usage(field, "at least one file", "an empty list");
    } else {
        out.push_back(path_text(h, field));
    }
    return out;
}

std::shared_ptr<PyCalibration> calibrate_of(py::handle log, py::handle bench, py::handle model,
                                            py::handle gpu, const DeploymentArgs& x) {
    // Every keyword read before any file, as the command line parses its flags.
    const std::string log_path = log.is_none() ? std::string() : path_text(log, "log");
    const std::vector<std::string> bench_paths =
        bench.is_none() ? std::vector<std::string>{} : paths(bench, "bench");
    if (log_path.empty() && bench_paths.empty())
        usage("log", "a vLLM start-up log, bench= with a vllm bench serve result, or both",
              "neither");
    // What calibrate does not model, and what only a start-up log reads, is the library's
    // refusal (calibration_refusal), named as the keyword, as kvplan calibrate names the flag.
    using CO = CalibrationOption;
    const std::pair<CO, py::handle> keywords[] = {
        {CO::gpus, x.gpus},
        {CO::speculative_method, x.speculative_method},
        {CO::num_speculative_tokens, x.num_speculative_tokens},
        {CO::draft_model, x.draft_model},
        {CO::chunked_local_hybrid, x.chunked_local_hybrid},
        {CO::without_flashinfer, x.without_flashinfer},
        {CO::block_size, x.block_size},
        {CO::gpu_memory_utilization, x.gpu_memory_utilization},
        {CO::kv_memory, x.kv_memory},
        {CO::max_num_seqs, x.max_num_seqs},
        {CO::max_num_batched_tokens, x.max_num_batched_tokens},
        {CO::num_gpu_blocks_override, x.num_gpu_blocks_override},
        {CO::max_loras, x.max_loras},
        {CO::limit_mm_per_prompt, x.limit_mm_per_prompt}};
    CalibrationOptionsGiven given;
    for (const auto& [option, value] : keywords) given.set(option, !value.is_none());
    given.set(CO::allow_long_context, to_flag(x.allow_long_context, "allow_long_context"))
        .set(CO::enforce_eager, to_flag(x.enforce_eager, "enforce_eager"))
        .set(CO::skip_mm_profiling, to_flag(x.skip_mm_profiling, "skip_mm_profiling"));
    if (const std::optional<CalibrationRefusal> r = calibration_refusal(given, !log_path.empty())) {
        py::handle value = py::none();
        for (const auto& [option, v] : keywords)
            if (option == r->option) value = v;
        const bool flag = r->option == CO::allow_long_context || r->option == CO::enforce_eager ||
                          r->option == CO::skip_mm_profiling;
        usage(name(r->option), r->expected,
              log_path.empty() &&
                      static_cast<unsigned>(r->option) >= static_cast<unsigned>(CO::block_size)
                  ? std::string("bench= alone")
              : flag ? std::string("True")
                     : std::string(py::repr(value)));
    }
    const ParallelConfig parallel = parallel_of(x);
    const std::optional<KvFormat> kv = to_kv_choice(x.kv_dtype, "kv_dtype");
    std::optional<WeightOptions> weights = weights_of(x);
    // vLLM's knobs as the library resolves them (calibration reads vLLM's log and benchmark).
    const Serving serving_given = serving_of(x);
    const ResolvedServing serving = resolve_serving(serving_given);
    auto out = std::make_shared<PyCalibration>();
    out->model = as_model(model);
    if (!gpu.is_none()) out->gpu = as_gpu(gpu);
    if (!bench_paths.empty() && !out->gpu)
        usage("gpu",
              "the GPU the benchmark ran on (the estimate's fractions are of its bandwidth and "
              "FLOP/s)",
              "None");
    CalibrationRequest rq{.model = out->model->get(),
                          .gpu = out->gpu ? std::optional<GpuSpec>(out->gpu->spec) : std::nullopt,
                          .parallel = {.tp = parallel.tp, .pp = parallel.pp},
                          .kv = kv,
                          .weights = weights,
                          .budget = serving.budget,
                          .options = serving.options,
                          .block_size = serving.block_size,
                          .utilization_given = serving.fraction_given,
                          .log_source = log_path,
                          .model_id = out->model->id,
                          .gpu_id = out->gpu ? out->gpu->id : std::string(),
                          .engine_version = serving_given.engine_version,
                          .given = given};
    if (!log_path.empty()) rq.log = load_vllm_log(log_path);
    for (const std::string& b : bench_paths) rq.benches.push_back(read_vllm_bench_result(b));
    out->a = calibrate(rq);
    out->benches = std::move(rq.benches);
    return out;
}

py::object optional_bytes(const std::optional<Bytes>& b) {
    return b ? py::object(py::int_(b->count())) : py::object(py::none());
}

py::object logged_bytes(const std::optional<LoggedSize>& s) {
    return s ? py::object(py::int_(s->value.count())) : py::object(py::none());
}

template <class T>
py::object optional_value(const std::optional<T>& v) {
    return v ? py::cast(*v) : py::object(py::none());
}

std::string source_name(FigureSource s) { return std::string(name(s)); }

}  // namespace

void bind_calibrate(py::module_& m) {
    using L = PyLogCalibration;
    py::class_<L>(m, "LogCalibration",
                  R"(The start-up log's part of a calibration: the non-KV reserve vLLM measured
(ceil(memory x utilization) - weights - available KV memory) beside the modelled one, and the
log's own cache figures reproduced from the measured memory (kvplan::LogCalibration).)")
        .def_property_readonly(
            "memory_total_bytes", [](const L& x) { return x.get().fit.memory_total.count(); },
            "The GPU's memory: the gpu= spec's, else the log's total_gpu_memory.")
        .def_property_readonly(
            "memory_total_source",
            [](const L& x) { return source_name(x.get().fit.memory_total_source); },
            "Where it came from: 'gpu_spec' (the gpu= spec's memory total) or 'log' (the log's "
            "figure).")
        .def_property_readonly("gpu_memory_utilization",
                               [](const L& x) { return x.get().fit.utilization; })
        .def_property_readonly(
            "utilization_source",
            [](const L& x) { return source_name(x.get().fit.utilization_source); })
        .def_property_readonly(
            "usable_bytes", [](const L& x) { return x.get().fit.usable.count(); },
            "ceil(memory_total_bytes x gpu_memory_utilization), vLLM's requested memory.")
        .def_property_readonly(
            "weights_bytes", [](const L& x) { return x.get().fit.weights.count(); },
            "The weights the fit used: the log's, else the modelled ones.")
        .def_property_readonly("weights_source",
                               [](const L& x) { return source_name(x.get().fit.weights_source); })
        .def_property_readonly(
            "available_kv_bytes", [](const L& x) { return x.get().fit.available_kv.count(); },
            "The logged KV memory: the middle of the interval its printed digits allow.")
        .def_property_readonly("available_kv_lo_bytes",
                               [](const L& x) { return x.get().fit.available_lo.count(); })
        .def_property_readonly("available_kv_hi_bytes",
                               [](const L& x) { return x.get().fit.available_hi.count(); })
        .def_property_readonly(
            "blocks", [](const L& x) { return optional_value(x.get().fit.blocks); },
            "The block count that narrowed the interval, or None.")
        .def_property_readonly(
            "blocks_agree", [](const L& x) { return x.get().fit.blocks_agree; },
            "The log's block count and its printed KV memory overlap for this model.")
        .def_property_readonly(
            "consistent", [](const L& x) { return x.get().fit.consistent; },
            "The weights and the KV memory fit in usable_bytes.")
        .def_property_readonly(
            "started", [](const L& x) { return x.get().fit.started; },
            "False: a failed start, its KV memory logged below zero.")
        .def_property_readonly(
            "kv_shortfall_bytes", [](const L& x) { return x.get().fit.kv_shortfall.count(); },
            "A failed start: how far below zero the KV memory was; else 0.")
        .def_property_readonly(
            "reserve_bytes", [](const L& x) { return x.get().fit.reserve.count(); },
            "The measured non-KV reserve: usable - weights - available KV (+ the shortfall).")
        .def_property_readonly(
            "cuda_graph_bytes", [](const L& x) { return optional_bytes(x.get().fit.cuda_graphs); },
            "The CUDA graphs' part of the reserve, when logged.")
        .def_property_readonly(
            "modelled_weights_bytes",
            [](const L& x) { return x.get().inputs.weights.value_or(Bytes{}).count(); },
            "The weights as modelled, as vLLM holds them once loaded.")
        .def_property_readonly(
            "modelled_reserve_bytes", [](const L& x) { return x.get().modelled_reserve.count(); },
            "The modelled reserve: the profile run's activation peak, plus the CUDA graphs where "
            "this vLLM charges them.")
        .def_property_readonly(
            "reserve_error_percent", [](const L& x) { return x.get().reserve_error.percent; },
            "The modelled reserve against the measured one, in percent of the measured (None: "
            "nothing measured).")
        .def_property_readonly(
            "kv_error_percent", [](const L& x) { return x.get().kv_error.percent; },
            "The modelled KV memory against the log's available KV memory, in percent.")
        .def_property_readonly("modelled_activation_bytes",
                               [](const L& x) { return x.get().modelled.activation.count(); })
        .def_property_readonly("modelled_cuda_graph_bytes",
                               [](const L& x) { return x.get().modelled.cuda_graphs.count(); })
        .def_property_readonly(
            "graphs_charged", [](const L& x) { return x.get().graphs_charged; },
            "The log's vLLM charges CUDA graphs to the reserve (v0.21+).")
        .def_property_readonly(
            "modelled_kv_bytes", [](const L& x) { return x.get().modelled.kv_memory.count(); },
            "The KV memory as modelled at the fit's memory and utilization.")
        .def_property_readonly(
            "logged_weights_bytes", [](const L& x) { return logged_bytes(x.get().facts.weights); },
            "The log's weight line, or None.")
        .def_property_readonly(
            "max_model_len", [](const L& x) { return optional_value(x.get().facts.max_model_len); })
        .def_property_readonly("logged_gpu_blocks",
                               [](const L& x) { return optional_value(x.get().facts.gpu_blocks); })
        .def_property_readonly(
            "reproduced_gpu_blocks",
            [](const L& x) -> py::object {
                const auto& r = x.get().reproduced;
                return r ? py::object(py::int_(r->num_blocks)) : py::object(py::none());
            },
            "The blocks the model makes of the measured KV memory, or None.")
        .def_property_readonly(
            "logged_kv_cache_tokens",
            [](const L& x) { return optional_value(x.get().facts.kv_cache_tokens); })
        .def_property_readonly("reproduced_kv_cache_tokens",
                               [](const L& x) -> py::object {
                                   const auto& r = x.get().reproduced;
                                   return r ? py::object(py::int_(r->kv_cache_tokens))
                                            : py::object(py::none());
                               })
        .def_property_readonly(
            "logged_max_concurrency",
            [](const L& x) { return optional_value(x.get().facts.max_concurrency); })
        .def_property_readonly("reproduced_max_concurrency", [](const L& x) -> py::object {
            const auto& r = x.get().reproduced;
            return r ? py::object(py::float_(r->max_concurrency)) : py::object(py::none());
        });

    py::class_<PyBenchFigures>(m, "BenchFigures",
                               "One benchmark: its load, what it measured, and the latency "
                               "estimate before and after calibration.")
        .def_property_readonly(
            "source", [](const PyBenchFigures& x) { return x.measured.source; },
            "The benchmark's file.")
        .def_property_readonly(
            "concurrency", [](const PyBenchFigures& x) { return x.f.observation.load.concurrency; },
            "Requests in flight: max_concurrency, or every prompt of a burst.")
        .def_property_readonly(
            "burst",
            [](const PyBenchFigures& x) { return x.f.observation.load.kind == LoadKind::burst; },
            "Whether the benchmark was a burst: every prompt sent at once (an infinite rate, no "
            "max_concurrency below num_prompts), each served once.")
        .def_property_readonly(
            "prompt_tokens",
            [](const PyBenchFigures& x) { return x.f.observation.load.prompt_tokens; },
            "Mean prompt tokens: total input tokens / completed requests.")
        .def_property_readonly(
            "output_tokens",
            [](const PyBenchFigures& x) { return x.f.observation.load.output_tokens; })
        .def_property_readonly(
            "measured_tpot_seconds",
            [](const PyBenchFigures& x) { return x.measured.tpot.mean.in(seconds); })
        .def_property_readonly(
            "measured_ttft_seconds",
            [](const PyBenchFigures& x) { return x.measured.ttft.mean.in(seconds); })
        .def_property_readonly(
            "tpot_error", [](const PyBenchFigures& x) { return x.f.tpot_error; },
            "The calibrated TPOT estimate against the measured mean, in percent (None: none "
            "measured).")
        .def_property_readonly(
            "tpot_error_before", [](const PyBenchFigures& x) { return x.f.tpot_error_before; },
            "The same with the starting parameters.")
        .def_property_readonly(
            "ttft_error", [](const PyBenchFigures& x) { return x.f.ttft_error; },
            "The calibrated TTFT estimate against the measured mean, in percent.")
        .def_property_readonly(
            "ttft_error_before", [](const PyBenchFigures& x) { return x.f.ttft_error_before; },
            "The same with the starting parameters.")
        .def_property_readonly(
            "before",
            [](const PyBenchFigures& x) {
                return PyEstimate{x.f.before, x.start};
            },
            "The kvplan.LatencyEstimate with the starting parameters.")
        .def_property_readonly(
            "after",
            [](const PyBenchFigures& x) {
                return PyEstimate{x.f.after, x.fitted};
            },
            "The kvplan.LatencyEstimate with the fitted ones.");

    using C = PyBenchCalibration;
    py::class_<C>(m, "BenchCalibration",
                  R"(The benchmarks' part of a calibration: the latency estimate's parameters fitted
on the measured TPOT and TTFT (one benchmark: the bandwidth and compute fractions; several, at
different loads: the fixed per-layer and all-reduce times too), kvplan::BenchCalibration.)")
        .def_property_readonly(
            "compute_dtype", [](const C& x) { return std::string(name(x.get().compute)); },
            "The peak the compute fraction is of (the matmuls' type).")
        .def_property_readonly(
            "start_family",
            [](const C& x) -> py::object {
                const auto& f = x.get().start_family;
                return f ? py::object(py::str(std::string(name(*f)))) : py::object(py::none());
            },
            "The GPU family whose defaults the fit started from, or None (the generic start).")
        .def_property_readonly("start_bandwidth_fraction",
                               [](const C& x) { return x.get().start.bandwidth; })
        .def_property_readonly("start_compute_fraction",
                               [](const C& x) { return x.get().start.compute; })
        .def_property_readonly("bandwidth_fraction",
                               [](const C& x) { return x.get().fit.params.bandwidth; })
        .def_property_readonly("compute_fraction",
                               [](const C& x) { return x.get().fit.params.compute; })
        .def_property_readonly(
            "layer_overhead_seconds",
            [](const C& x) { return x.get().fit.params.layer_overhead.in(seconds); })
        .def_property_readonly(
            "all_reduce_latency_seconds",
            [](const C& x) { return x.get().fit.params.all_reduce_latency.in(seconds); })
        .def_property_readonly(
            "rms_log_error", [](const C& x) { return x.get().fit.rms_log_error; },
            "The fit's rms of ln(estimate / measured).")
        .def_property_readonly(
            "fitted_figures", [](const C& x) { return x.get().fit.figures; },
            "Measured figures in the fit's objective.")
        .def_property_readonly(
            "ttft_used", [](const C& x) { return x.get().ttft_used; },
            "One benchmark: its TTFT was fitted (not where the estimate's queue holds requests).")
        .def_property_readonly(
            "median_tpot_error", [](const C& x) { return x.get().median_tpot_error; },
            "Median |estimate / measured - 1| of the TPOT, calibrated, in percent.")
        .def_property_readonly(
            "median_tpot_error_before", [](const C& x) { return x.get().median_tpot_error_before; },
            "The same with the starting parameters.")
        .def_property_readonly(
            "figures",
            [](const C& x) {
                std::vector<PyBenchFigures> out;
                const BenchCalibration& b = x.get();
                for (std::size_t i = 0; i < b.figures.size(); ++i)
                    out.push_back(
                        PyBenchFigures{b.figures[i], x.c->benches[i], b.start, b.fit.params});
                return out;
            },
            "Each benchmark's kvplan.BenchFigures, in order.");

    using K = PyCalibration;
    py::class_<K, std::shared_ptr<K>>(m, "Calibration",
                                      "A replica calibrated on what vLLM measured, as kvplan "
                                      "calibrate gives it (kvplan::calibrate).")
        .def_property_readonly(
            "model", [](const K& x) { return x.model; }, "The kvplan.Model.")
        .def_property_readonly(
            "gpu", [](const K& x) { return x.gpu; }, "The kvplan.Gpu, or None (the log's GPU).")
        .def_property_readonly(
            "weight_dtype", [](const K& x) { return std::string(name(x.a.weights.format)); },
            "The weights' format: weight_dtype=, else the checkpoint's.")
        .def_property_readonly(
            "engine_version", [](const K& x) { return x.a.release.release.text(); },
            "The vLLM release whose rules applied (\"0.19\").")
        .def_property_readonly(
            "engine_version_source",
            [](const K& x) { return std::string(name(x.a.release.source)); },
            "Where it came from: \"log\" (the banner), \"given\" (engine_version=) or \"newest\".")
        .def_property_readonly(
            "log",
            [](const std::shared_ptr<K>& x) -> py::object {
                return x->a.log ? py::cast(PyLogCalibration{x}) : py::none();
            },
            "The start-up log's kvplan.LogCalibration, or None.")
        .def_property_readonly(
            "bench",
            [](const std::shared_ptr<K>& x) -> py::object {
                return x->a.bench ? py::cast(PyBenchCalibration{x}) : py::none();
            },
            "The benchmarks' kvplan.BenchCalibration, or None.")
        .def_property_readonly(
            "profile_json", [](const K& x) { return profile_json(x.a.profile); },
            "The profile (JSON) that kvplan.fit(profile=...) and the command line's --profile "
            "read.")
        .def(
            "write_profile",
            [](const K& x, py::handle path) {
                const std::string file = path_text(path, "path");
                std::ofstream out(file, std::ios::binary);
                out << profile_json(x.a.profile);
                out.close();  // a full disk shows only when the buffer is written out
                if (!out)
                    detail::throw_field_error<InvalidInput>(file, "file", "a writable file",
                                                            "none");
            },
            py::arg("path"),
            R"(write_profile($self, /, path)
--

Writes profile_json to path.)")
        .def("__repr__", [](const K& x) {
            return fmt::format(
                "<kvplan.Calibration {} on {}{}{}>", x.model->id,
                x.gpu ? x.gpu->id : std::string("the log's GPU"), x.a.log ? ", a start-up log" : "",
                x.a.bench ? fmt::format(", {} benchmark{}", x.a.bench->figures.size(),
                                        x.a.bench->figures.size() == 1 ? "" : "s")
                          : std::string());
        });

    const auto* calibrate_signature = new Signature(
        "calibrate", 1,
        {own("log", py::none()), own("bench", py::none()), deploy("model"),
         deploy("gpu", py::none())},
        {"tp", "pp", "kv_dtype", "weight_dtype", "block_size", "gpu_memory_utilization",
         "kv_memory", "max_num_seqs", "max_num_batched_tokens", "enforce_eager", "engine_version",
         // Taken as kvplan calibrate takes the flags: the expert format, vLLM's block count, the
         // LoRA slots and a vision model's encoder outputs move the modelled figures; the rest is
         // refused (calibration_refusal) rather than ignored.
         "gpus", "expert_dtype", "num_gpu_blocks_override", "allow_long_context",
         "chunked_local_hybrid", "without_flashinfer", "max_loras", "max_lora_rank",
         "fully_sharded_loras", "max_cpu_loras", "limit_mm_per_prompt", "skip_mm_profiling",
         "speculative_method", "num_speculative_tokens", "draft_model"});
    m.def(
        "calibrate",
        [calibrate_signature](const py::args& args, const py::kwargs& kwargs) {
            const Call c(*calibrate_signature, args, kwargs);
            const DeploymentArgs x = c.deployment();
            return calibrate_of(c["log"], c["bench"], x.model, x.gpu, x);
        },
        calibrate_signature
            ->doc(
                R"(A replica under vLLM calibrated on what vLLM measured, as kvplan calibrate gives it
(kvplan::calibrate): a kvplan.Calibration. log: a vLLM start-up log (V0 or V1), whose
non-KV reserve is measured and set beside the modelled one; bench: a `vllm bench serve
--save-result` JSON of this replica, or a list of them at several loads, to which the latency
estimate is fitted (gpu= then names the GPU it ran on). Either or both. The knobs that shape
the cache and its reserve (block_size ... enforce_eager, num_gpu_blocks_override, the LoRA slots,
limit_mm_per_prompt, skip_mm_profiling) are read only with a log; what calibrate does not model
(gpus, speculative decoding, allow_long_context, chunked_local_hybrid, without_flashinfer) raises
kvplan.UsageError naming the keyword, as kvplan calibrate refuses the flag. The vLLM release whose rules
apply (weights as loaded, KV dtype, profile accounting) is the one the log's banner names, else
engine_version ("0.13", as --engine-version), else the newest kvplan knows: Calibration.
engine_version and engine_version_source say which.

Example:

>>> c = kvplan.calibrate("tests/data/logs/vllm-v0-llama-3.1-8b-rtx3090-20k.log",
...                      model="llama-3-8b")
>>> c.log.reserve_bytes, c.log.modelled_reserve_bytes
(2598158258, 406716416)
>>> c.write_profile("rtx3090.json")  # then kvplan.fit(..., profile="rtx3090.json")

Raises kvplan.InvalidInputError for a log or benchmark that cannot be read or lacks a figure
the fit needs.)")
            .c_str());
}

}  // namespace kvplan::python
