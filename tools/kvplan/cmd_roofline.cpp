// kvplan roofline: decode and prefill lower bounds; comma lists sweep batch x context.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>

#include <kvplan/format.hpp>
#include <kvplan/roofline.hpp>

#include "commands.hpp"
#include "plot.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"
#include "roofline_input.hpp"

namespace kvplan::cli {

ComputeDtype compute_dtype_flag(const std::string& text) {
    if (text.empty()) return ComputeDtype::bf16;
    if (const auto d = parse_compute_dtype(text)) return *d;
    usage_error("--compute-dtype", "tf32, bf16, fp16, fp8, int8 or fp4", text);
}

std::vector<RooflinePoint> roofline_points(const Replica& r, const std::vector<std::uint64_t>& batches,
                                           const std::vector<std::uint64_t>& contexts,
                                           const RooflineOptions& ro) {
    std::vector<RooflinePoint> out;
    for (std::uint64_t c : contexts)
        for (std::uint64_t b : batches) {
            RooflinePoint p{b, c, decode_bound(r, b, c, ro), prefill_bound(r, c, 1, ro)};
            out.push_back(std::move(p));
        }
    return out;
}

namespace {

struct RooflineOptionsCli {
    CommonOptions common;
    std::string compute_dtype;
    std::string plot;  ///< --plot FILE.svg
};

void run_roofline(const RooflineOptionsCli& oc, Context& ctx) {
    const CommonOptions& o = oc.common;
    const std::vector<std::uint64_t> batches =
        o.batch.empty() ? std::vector<std::uint64_t>{1}
                        : parse_list(o.batch, "--batch", [](std::string_view s, std::string_view f) {
                              return parse_count(s, f);
                          });
    std::vector<std::uint64_t> contexts;
    if (!o.context.empty()) contexts = parse_list(o.context, "--context", parse_tokens);
    RooflineOptions ro;
    ro.compute = compute_dtype_flag(oc.compute_dtype);
    CommonOptions single = o;
    single.context = contexts.empty() ? "" : std::to_string(contexts.front());
    single.batch.clear();
    const ReplicaInput in = read_replica_input(single, ctx);
    if (contexts.empty()) contexts.push_back(in.context);
    const Replica r = in.replica();
    const std::vector<RooflinePoint> points = roofline_points(r, batches, contexts, ro);

    Report rep;
    rep.command = "roofline";
    rep.heading = fmt::format("{} on {} x {} (tp {} x pp {}): decode and prefill lower bounds at "
                              "peak {} and {} dense {}",
                              display_name(in.model), r.gpus(), in.gpu.id, in.layout.tp,
                              in.layout.pp, fmt::format("{}", in.gpu.spec.memory_bandwidth),
                              fmt::format("{}", roofline_peak(in.gpu.spec, ro.compute)),
                              name(ro.compute));
    rep.inputs = {{"model", cell_text(in.model.id)},
                  {"gpu", cell_text(in.gpu.id)},
                  {"tp", cell_count(in.layout.tp, "")},
                  {"pp", cell_count(in.layout.pp, "")},
                  {"kv_dtype", cell_text(std::string(name(in.kv.dtype)))},
                  {"weight_dtype", cell_text(std::string(name(in.weights.format)))},
                  {"compute_dtype", cell_text(std::string(name(ro.compute)))},
                  {"memory_bandwidth_bytes_per_s", cell(in.gpu.spec.memory_bandwidth)},
                  {"peak_flops_per_s", cell(roofline_peak(in.gpu.spec, ro.compute))}};
    if (points.size() == 1) append_roofline_figures(rep, points.front(), in, ro);
    rep.tables.push_back(roofline_table(points));
    rep.tables.back().in_text = points.size() > 1;
    rep.csv_table = 0;
    rep.notes.push_back("bounds at peak figures: no real step is faster; all-reduce time is shown "
                        "apart and not added");
    render(rep, parse_format(o.format), o.explain, *ctx.out);
    if (!oc.plot.empty())
        write_roofline_plot(oc.plot, r, contexts.front(),
                            o.batch.empty() ? std::nullopt : std::optional(batches.front()), ro,
                            fmt::format("{} on {} x {}: time per output token against batch",
                                        display_name(in.model), r.gpus(), in.gpu.id));
}

}  // namespace

FlopsPerSecond roofline_peak(const GpuSpec& g, ComputeDtype d) {
    return g.dense(d).value_or(FlopsPerSecond{});
}

Table roofline_table(const std::vector<RooflinePoint>& points) {
    Table t;
    t.key = "points";
    t.title = "Decode step and prefill, per (batch, context)";
    t.columns = {{"batch", "batch"},
                 {"context_tokens", "context"},
                 {"decode_step_seconds", "decode step"},
                 {"tpot_seconds", "TPOT"},
                 {"tokens_per_second", "tokens/s"},
                 {"tokens_per_second_per_gpu", "tokens/s/GPU"},
                 {"bytes_per_step", "bytes/step/GPU"},
                 {"flops_per_step", "FLOPs/step/GPU"},
                 {"bound", "bound"},
                 {"prefill_seconds", "prefill (1 prompt)"},
                 {"prefill_bound", "prefill bound"}};
    for (const RooflinePoint& p : points) {
        const StageStep& st = p.decode.stages[p.decode.limiting_stage];
        const StageStep& pst = p.prefill.stages[p.prefill.limiting_stage];
        (void)pst;
        t.rows.push_back({cell_count(p.batch, ""), cell_count(p.context, ""), cell(p.decode.step),
                          cell(p.decode.tpot), cell_number(p.decode.tokens_per_s, "tokens/s", 1),
                          cell_number(p.decode.tokens_per_s_per_gpu, "tokens/s", 1),
                          cell(st.bytes()), cell(st.flops()),
                          cell_text(std::string(name(p.decode.bound))), cell(p.prefill.ttft),
                          cell_text(std::string(name(p.prefill.bound)))});
    }
    return t;
}

void append_roofline_figures(Report& rep, const RooflinePoint& p, const ReplicaInput& in,
                             const RooflineOptions& ro) {
    const DecodeBound& d = p.decode;
    const StageStep& st = d.stages[d.limiting_stage];
    const std::string bw_src = in.gpu.source + ": memory_bandwidth.TB_per_s";
    const std::string fl_src =
        in.gpu.source + ": dense_tflops." + std::string(name(ro.compute));
    const std::string stage = in.layout.pp > 1 ? fmt::format(" (stage {})", d.limiting_stage) : "";
    rep.figures.push_back(
        {"decode_step_seconds", "decode step (lower bound)", cell(d.step), {},
         {"max(bytes read / peak bandwidth, FLOPs / peak FLOP/s) on the slowest rank" + stage,
          {fmt::format("memory time {} = {} B / {} ({})", fmt::format("{}", st.memory_time),
                       grouped(st.bytes().count()), fmt::format("{}", in.gpu.spec.memory_bandwidth),
                       bw_src),
           fmt::format("compute time {} = {:.4g} FLOP / {} ({})", fmt::format("{}", st.compute_time),
                       st.flops().in(FLOP), fmt::format("{}", roofline_peak(in.gpu.spec, ro.compute)),
                       fl_src)}}});
    rep.figures.push_back({"tpot_seconds", "time per output token", cell(d.tpot), {},
                           {"sum of the stages' step bounds: a token passes every stage", {}}});
    rep.figures.push_back({"tokens_per_second", "throughput (replica)",
                           cell_number(d.tokens_per_s, "tokens/s", 1), {},
                           {"batch / decode step", {fmt::format("batch = {} (--batch)", p.batch)}}});
    rep.figures.push_back({"tokens_per_second_per_gpu", "throughput per GPU",
                           cell_number(d.tokens_per_s_per_gpu, "tokens/s", 1), {},
                           {"tokens_per_second / GPUs", {}}});
    rep.figures.push_back(
        {"bytes_per_step", "bytes read per step per GPU", cell(st.bytes()), cell_exact(st.bytes()),
         {"weights read + KV read on the slowest rank",
          {fmt::format("weights read {} B (of {} B resident; the embedding table is not read)",
                       grouped(st.weights_read.count()), grouped(st.weights_resident.count())),
           fmt::format("KV read {} B: {} sequences of {} tokens", grouped(st.kv_read.count()),
                       p.batch, grouped(p.context))}}});
    rep.figures.push_back({"flops_per_step", "FLOPs per step per GPU", cell(st.flops()), {},
                           {"2 x matmul parameters used x batch + attention",
                            {fmt::format("matmul {}, attention {}", fmt::format("{}", st.matmul_flops),
                                         fmt::format("{}", st.attention_flops))}}});
    rep.figures.push_back({"bound", "bound by", cell_text(std::string(name(d.bound))), {},
                           {"compute when FLOPs / peak exceeds bytes / bandwidth", {}}});
    rep.figures.push_back({"all_reduce_seconds", "TP all-reduce per step (not added)",
                           cell(d.all_reduce.per_step), {},
                           {"2 all-reduces per layer of batch x hidden x 2 B over the scale-up link",
                            {fmt::format("link {}", fmt::format("{}", d.all_reduce.link))}}});
    rep.figures.push_back({"prefill_seconds", fmt::format("prefill of {} tokens", grouped(p.context)),
                           cell(p.prefill.ttft), {},
                           {"max(weights + KV written / bandwidth, FLOPs incl. causal attention / "
                            "peak) on the slowest stage",
                            {}}});
    rep.figures.push_back({"prefill_bound", "prefill bound by",
                           cell_text(std::string(name(p.prefill.bound))), {}, {}});
}

void register_roofline(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<RooflineOptionsCli>();
    CLI::App* sub = app.add_subcommand(
        "roofline",
        "Decode and prefill lower bounds; comma lists sweep (--batch 1,8,32 --context 1k,8k)");
    add_options(*sub, o->common,
                opt_model | opt_gpu | opt_layout | opt_dtypes | opt_workload | opt_output);
    sub->add_option("--compute-dtype", o->compute_dtype,
                    "Tensor-core type the matmuls run in: tf32 bf16 fp16 fp8 int8 fp4 (default bf16)");
    sub->get_option("--model")->required();
    sub->add_option("--plot", o->plot,
                    "Write the TPOT bound against batch (with the memory and compute lines) as an "
                    "SVG chart, at the first --context, the first --batch marked");
    sub->get_option("--gpu")->required();
    sub->callback([o, &ctx] { run_roofline(*o, ctx); });
}

}  // namespace kvplan::cli
