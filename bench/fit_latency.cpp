// Fits the latency estimate's defaults on tests/data/latency_measurements.json and reports how
// close the bundled defaults come to every published measurement.
//
//   kvplan_fit_latency                  the fitted parameters (as the source of
//                                       default_family_params and default_engine_params spells
//                                       them) and the errors of the bundled defaults per set
//   kvplan_fit_latency --write-docs F   also rewrites the generated part of F (docs/accuracy.md)
//   kvplan_fit_latency --fitted         the errors and rows with the parameters just fitted
//
// Deterministic: the same table gives the same output (tests/support/latency_fit.hpp).

#include <cstdio>
#include <fstream>
#include <kvplan/hf_config.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "latency_fit.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

std::string format(const char* f, auto... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, f, args...);
    return buf;
}

std::string engine_name(ParallelRules e) {
    return e == ParallelRules::trtllm   ? "TensorRT-LLM"
           : e == ParallelRules::sglang ? "SGLang"
                                        : "vLLM";
}

/// The summary table: median and p90 error per set and metric.
std::string summary(const std::vector<MeasuredRow>& rows, const std::vector<LatencyEstimate>& est) {
    std::string out =
        "| set | metric | rows | median error | p90 error |\n|---|---|---:|---:|---:|\n";
    for (std::string_view set : {"fit", "held_out", "external"})
        for (Metric m : all_metrics) {
            const ErrorSummary s = summarize(rows, est, set, m);
            if (s.count == 0) continue;
            out += format("| %s | %s | %zu | %.1f %% | %.1f %% |\n", std::string(set).c_str(),
                          std::string(name(m)).c_str(), s.count, 100.0 * s.median, 100.0 * s.p90);
        }
    return out;
}

/// Median error per engine and per GPU family, on the held-out and external rows.
std::string breakdown(const std::vector<MeasuredRow>& rows,
                      const std::vector<LatencyEstimate>& est) {
    std::string out =
        "| rows | held-out TPOT | TTFT | throughput | external TPOT | TTFT | throughput |\n"
        "|---|--:|--:|--:|--:|--:|--:|\n";
    // A line with no serving figure (a family measured only in static batches) is left out.
    const auto line = [&](const std::string& label, auto keep) {
        std::string cells;
        bool any = false;
        for (std::string_view set : {"held_out", "external"})
            for (Metric m : {Metric::tpot, Metric::ttft, Metric::throughput}) {
                const ErrorSummary s = summarize(rows, est, set, m, keep);
                any = any || s.count > 0;
                cells += s.count == 0 ? std::string("| ")
                                      : format("| %.0f %% (%zu) ", 100.0 * s.median, s.count);
            }
        if (any) out += "| " + label + " " + cells + "|\n";
    };
    for (ParallelRules e : {ParallelRules::vllm, ParallelRules::sglang, ParallelRules::trtllm})
        line(engine_name(e),
             [e](const MeasuredRow& r) { return r.obs.replica.parallel.rules == e; });
    for (GpuFamily f : all_gpu_families)
        line(std::string(name(f)), [f](const MeasuredRow& r) { return r.family == f; });
    return out;
}

std::string cell(const std::optional<double>& meas, double b, double e, bool rate) {
    if (!meas) return "| | | | ";
    const char* f = rate ? "| %.0f | %.0f | %.0f | %+.0f %% " : "| %.1f | %.1f | %.1f | %+.0f %% ";
    return format(f, *meas, b, e, 100.0 * (e / *meas - 1.0));
}

/// Every row: measured, bound and estimate of TPOT (or a batch's e2e), TTFT and throughput.
std::string row_table(const std::vector<MeasuredRow>& rows,
                      const std::vector<LatencyEstimate>& est) {
    std::string out =
        "| set | model | GPU | engine | GPUs | in / out | load | TPOT or e2e ms | bound | "
        "est. | err. | TTFT ms | bound | est. | err. | tokens/s | bound | est. | err. |\n"
        "|---|---|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        "---:|\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const MeasuredRow& r = rows[i];
        const LatencyEstimate& e = est[i];
        const bool serving = r.obs.load.kind != LoadKind::static_batch;
        const bool burst = r.obs.load.kind == LoadKind::burst;
        out += format("| %s%s | %s | %s | %s | %u | %llu / %llu | %s %llu ", r.set.c_str(),
                      r.doubtful ? " (doubtful)" : "", r.model_name.c_str(),
                      std::string(r.obs.replica.gpu.name).c_str(),
                      engine_name(r.obs.replica.parallel.rules).c_str(),
                      static_cast<unsigned>(r.obs.replica.gpus()),
                      static_cast<unsigned long long>(r.obs.load.prompt_tokens),
                      static_cast<unsigned long long>(r.obs.load.output_tokens),
                      burst     ? "burst"
                      : serving ? "C"
                                : "batch",
                      static_cast<unsigned long long>(r.obs.load.concurrency));
        const Metric first = serving ? Metric::tpot : Metric::e2e;
        out += cell(measured(r, first), bound(e, first), estimated(e, first), false);
        out += cell(measured(r, Metric::ttft), bound(e, Metric::ttft), estimated(e, Metric::ttft),
                    false);
        out += cell(measured(r, Metric::throughput), bound(e, Metric::throughput),
                    estimated(e, Metric::throughput), true);
        out += "|\n";
    }
    return out;
}

void print_fit(const DefaultsFit& f) {
    std::printf("Fitted per GPU family (fit rows only):\n");
    for (GpuFamily fam : all_gpu_families) {
        const auto i = static_cast<std::size_t>(fam);
        if (!f.family[i]) {
            std::printf("  %-9s %zu fit rows, too few figures: borrowed\n",
                        std::string(name(fam)).c_str(), f.rows[i]);
            continue;
        }
        const EstimateParams& p = f.family[i]->params;
        std::printf(
            "  %-9s {.bandwidth = %.2f, .compute = %.2f, .attention = %.2f, "
            ".experts = %.2f, .layer_overhead = %.1f us, "
            ".all_reduce_latency = %.1f us, .uncompiled_layer_scale = %.2f, "
            ".trtllm_layer_scale = %.2f, "
            ".trtllm_engine_layer_scale = %.2f, .expert_tile_rows = %.0f, .eager_mixer = %.0f us}  "
            "rows %zu, figures %zu, rms log error %.3f\n",
            std::string(name(fam)).c_str(), p.bandwidth, p.compute, p.attention, p.experts,
            p.layer_overhead.in(microseconds), p.all_reduce_latency.in(microseconds),
            p.uncompiled_layer_scale, p.trtllm_layer_scale, p.trtllm_engine_layer_scale,
            p.expert_tile_rows, p.eager_mixer.in(microseconds), f.rows[i], f.family[i]->figures,
            f.family[i]->rms_log_error);
        const EstimateParams& d = default_params(fam).params;
        if (!(std::abs(d.bandwidth - p.bandwidth) < 1e-9 &&
              std::abs(d.compute - p.compute) < 1e-9 &&
              std::abs(d.attention - p.attention) < 1e-9 &&
              std::abs(d.experts - p.experts) < 1e-9 &&
              std::abs((d.layer_overhead - p.layer_overhead).in(microseconds)) < 1e-6 &&
              std::abs((d.all_reduce_latency - p.all_reduce_latency).in(microseconds)) < 1e-6 &&
              std::abs(d.uncompiled_layer_scale - p.uncompiled_layer_scale) < 1e-9 &&
              std::abs(d.trtllm_layer_scale - p.trtllm_layer_scale) < 1e-9 &&
              std::abs(d.trtllm_engine_layer_scale - p.trtllm_engine_layer_scale) < 1e-9 &&
              std::abs(d.expert_tile_rows - p.expert_tile_rows) < 1e-9 &&
              std::abs((d.eager_mixer - p.eager_mixer).in(microseconds)) < 1e-6))
            std::printf("            (the bundled default differs: update estimate.hpp)\n");
    }
    std::printf("Fitted request overhead per engine (TTFT of fit rows, nobody waiting):\n");
    for (ParallelRules e : {ParallelRules::vllm, ParallelRules::sglang, ParallelRules::trtllm}) {
        const auto i = static_cast<std::size_t>(e);
        if (eager_prefill(e)) {
            if (!f.engine_launch[i]) {
                std::printf("  %-12s no TTFT rows\n", engine_name(e).c_str());
                continue;
            }
            std::printf(
                "  %-12s %.1f us per projection of an eager prefill  (%zu TTFT figures; "
                "bundled %.1f us)\n",
                engine_name(e).c_str(), f.engine_launch[i]->in(microseconds), f.engine_rows[i],
                default_params(e).eager_launch.in(microseconds));
            continue;
        }
        if (!f.engine[i]) {
            std::printf("  %-12s no TTFT rows\n", engine_name(e).c_str());
            continue;
        }
        std::printf("  %-12s %.1f ms  (%zu TTFT figures; bundled %.1f ms)\n",
                    engine_name(e).c_str(), f.engine[i]->in(milliseconds), f.engine_rows[i],
                    default_params(e).request_overhead.in(milliseconds));
    }
}

int write_docs(const std::string& path, const std::string& generated) {
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return 3;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    std::string doc = ss.str();
    const std::string begin = "<!-- fit_latency: begin -->\n", end = "<!-- fit_latency: end -->";
    const auto b = doc.find(begin), e = doc.find(end);
    if (b == std::string::npos || e == std::string::npos || e < b) {
        std::fprintf(stderr, "%s: no '<!-- fit_latency: begin -->' ... 'end -->' section\n",
                     path.c_str());
        return 3;
    }
    doc = doc.substr(0, b + begin.size()) + generated + doc.substr(e);
    std::ofstream(path) << doc;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<MeasuredRow> rows = latency_table();
    const DefaultsFit f = fit_defaults(rows);
    print_fit(f);
    // --fitted: the errors and rows with the parameters just fitted instead of the bundled ones.
    const bool fitted = argc >= 2 && std::string(argv[1]) == "--fitted";
    std::vector<LatencyEstimate> est;
    for (const MeasuredRow& r : rows)
        est.push_back(
            fitted ? estimate_latency(r.obs.replica, r.obs.load, params_of(r, f), r.obs.options)
                   : estimate_with_defaults(r));
    if (fitted) {
        std::printf("\nErrors with the fitted parameters:\n%s\n%s\n%s", summary(rows, est).c_str(),
                    breakdown(rows, est).c_str(), row_table(rows, est).c_str());
        return 0;
    }
    const std::string s = summary(rows, est);
    std::printf("\nErrors of the bundled defaults (|estimate / measured - 1|):\n%s\n%s", s.c_str(),
                breakdown(rows, est).c_str());
    if (argc == 3 && std::string(argv[1]) == "--write-docs") {
        const std::string generated =
            "Generated by `kvplan_fit_latency --write-docs docs/accuracy.md` "
            "(bench/fit_latency.cpp) "
            "from tests/data/latency_measurements.json with the bundled defaults.\n\n" +
            s + "\nMedian error (rows) per engine and per GPU family:\n\n" + breakdown(rows, est) +
            "\n" + row_table(rows, est);
        return write_docs(argv[2], generated);
    }
    if (argc != 1) {
        std::fprintf(stderr,
                     "usage: kvplan_fit_latency [--fitted | --write-docs docs/accuracy.md]\n");
        return 2;
    }
    return 0;
}
