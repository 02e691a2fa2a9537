// kvplan roofline: decode and prefill lower bounds; comma lists sweep batch x context.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <kvplan/format.hpp>
#include <kvplan/roofline.hpp>
#include <memory>

#include "answer.hpp"
#include "commands.hpp"
#include "parse.hpp"
#include "plot.hpp"
#include "replica.hpp"
#include "report.hpp"
#include "roofline_input.hpp"
#include "typed_option.hpp"

namespace kvplan::cli {

std::optional<ComputeDtype> compute_dtype_flag(const std::string& text) {
    if (text.empty()) return std::nullopt;
    if (const auto d = parse_compute_dtype(text)) return *d;
    usage_error("--compute-dtype", "tf32, bf16, fp16, fp8, int8 or fp4", text);
}

std::vector<RooflinePoint> roofline_points(const Deployment& d,
                                           const std::vector<std::uint64_t>& batches,
                                           const std::vector<std::uint64_t>& contexts,
                                           const RooflineOptions& ro,
                                           std::optional<TokenSplit> split, const RunShape& run) {
    std::vector<RooflinePoint> out;
    EvaluateOptions eo;
    eo.contexts = false;
    eo.decode = false;
    eo.roofline = ro;
    for (std::uint64_t c : contexts) {
        // Whether the cache holds the batch: evaluate's answer at (context, batch).
        const ReplicaAnswer at = evaluate(d, {.context = c, .concurrency = 1}, eo);
        const Replica& r = at.replica;
        const DecodeCosts costs = decode_costs(r, ro);
        const PrefillBound prefill = prefill_bound(r, c, 1, ro);
        for (std::uint64_t b : batches) {
            RooflinePoint p{b, c, decode_bound(costs, b, c), prefill};
            p.cache_holds = at.max_concurrency;
            p.refusal = at.refusal;
            p.fits = at.starts() && at.max_concurrency >= b;
            // The estimate: a closed loop of `b` clients of the split, sized at `c` tokens.
            if (split)
                p.answer = evaluate(d,
                                    {.context = c,
                                     .concurrency = b,
                                     .prompt_tokens = split->prompt,
                                     .output_tokens = split->output,
                                     .run = run},
                                    eo);
            out.push_back(std::move(p));
        }
    }
    return out;
}

namespace {

struct RooflineOptionsCli {
    CommonOptions common;
    std::vector<std::uint64_t> batches;   ///< --batch: empty when not given
    std::vector<std::uint64_t> contexts;  ///< --context: empty when not given
    std::optional<ComputeDtype> compute_dtype;
    std::string plot;  ///< --plot FILE.svg
};

void run_roofline(const RooflineOptionsCli& oc, Context& ctx) {
    const CommonOptions& o = oc.common;
    const std::vector<std::uint64_t> batches =
        oc.batches.empty() ? std::vector<std::uint64_t>{1} : oc.batches;
    std::vector<std::uint64_t> contexts = oc.contexts;
    RooflineOptions ro;
    ro.compute = oc.compute_dtype;
    // With a split, every context sizes requests of prompt + output tokens at least.
    const TokenSplitFlags split_flags = parse_token_split(o);
    for (std::uint64_t c : contexts) check_context_holds_split(c, split_flags);
    const std::optional<TokenSplit> split =
        split_flags.given() ? std::optional(TokenSplit{*split_flags.prompt, *split_flags.output})
                            : std::nullopt;
    const RunShape run = parse_run_shape(o, split_flags);
    CommonOptions single = o;
    if (!contexts.empty()) single.context = contexts.front();
    const ReplicaRequest in = read_replica(single, ctx, ro.compute);
    if (contexts.empty()) contexts.push_back(in.demand.context);
    const Deployment& d = in.deployment;
    const Replica r =
        evaluate(d, {.context = contexts.front()}, {.contexts = false, .decode = false}).replica;
    ro = with_compute(ro, r);  // the weights' own type unless --compute-dtype says otherwise
    const std::vector<RooflinePoint> points = roofline_points(d, batches, contexts, ro, split, run);

    Report rep;
    rep.command = "roofline";
    rep.heading = fmt::format(
        "{} on {} x {} ({}): decode and prefill lower bounds at peak {} "
        "and {} dense {}",
        display_name(in.model), r.gpus(), in.gpu.id, layout_text(r.parallel),
        fmt::format("{}", in.gpu.spec.memory_bandwidth),
        fmt::format("{}", roofline_peak(in.gpu.spec, *ro.compute)), name(*ro.compute));
    rep.inputs = {{"model", cell_text(in.model.id)},
                  {"gpu", cell_text(in.gpu.id)},
                  {"tp", cell_count(r.parallel.tp, "")},
                  {"pp", cell_count(r.parallel.pp, "")},
                  {"dp", cell_count(r.parallel.dp, "")},
                  {"ep", cell_count(r.parallel.ep, "")},
                  {"dcp", cell_count(r.parallel.dcp, "")},
                  {"kv_dtype", cell_text(name(r.kv.dtype))},
                  {"weight_dtype", cell_text(name(r.weights.format))},
                  {"engine", cell_text(std::string(name(in.deployment.serving.engine)))},
                  {"compute_dtype", cell_text(std::string(name(*ro.compute)))},
                  {"memory_bandwidth_bytes_per_s", cell(in.gpu.spec.memory_bandwidth)},
                  {"peak_flops_per_s", cell(roofline_peak(in.gpu.spec, *ro.compute))}};
    if (split) {
        rep.inputs.push_back({"prompt_tokens", cell_count(split->prompt, "tokens")});
        rep.inputs.push_back({"output_tokens", cell_count(split->output, "tokens")});
        append_run_shape_inputs(rep, run);
    }
    if (points.size() == 1) {
        const RooflinePoint& p = points.front();
        if (!p.fits) {
            rep.verdict = p.refusal != Refusal::none
                              ? fmt::format(
                                    "DOES NOT START at {} tokens ({}): the bound below is "
                                    "for a replica that could not serve it",
                                    grouped(p.context), refusal_key(p.refusal))
                              : fmt::format(
                                    "DOES NOT FIT: the cache holds {} sequences of {} "
                                    "tokens, not a batch of {}; the bound below is for a "
                                    "batch it cannot hold",
                                    grouped(p.cache_holds), grouped(p.context), grouped(p.batch));
            if (p.answer && p.answer->estimate)
                *rep.verdict += fmt::format("; the estimate runs {} at once and queues the rest",
                                            grouped(p.answer->estimate->running));
        }
        append_roofline_figures(rep, p, in, r, ro);
        if (p.answer) append_estimate_figures(rep, *p.answer, in.profile_path);
    }
    append_model_notes(rep, in.model);
    rep.tables.push_back(roofline_table(points));
    rep.tables.back().in_text = points.size() > 1;
    rep.csv_table = 0;
    rep.notes.push_back(
        "bounds at peak figures: no real step is faster; all-reduce time is shown "
        "apart and not added");
    for (const RooflinePoint& p : points)
        if (!p.fits) {
            rep.notes.push_back(
                "a row whose cache does not hold its batch is marked: its bound "
                "assumes memory the replica does not have");
            break;
        }
    if (r.parallel.pp > 1)
        rep.notes.push_back(
            "pipeline stages run min(batch, pp) micro-batches, as vLLM keeps pp "
            "batches in flight: TPOT spans every stage, throughput is batch / "
            "TPOT");
    if (split) {
        const std::string use =
            "roofline's own figures are the bound at batch sequences of the context (a request's "
            "last step); the estimate is the mean step of --batch clients, beside its bound at the "
            "same load";
        if (points.size() == 1) {
            append_estimate_notes(rep, *points.front().answer, in.profile_path, use);
        } else {
            rep.notes.push_back(
                "latency: the estimate (what a benchmark should measure) beside "
                "the roofline bound; " +
                use);
            const ReplicaAnswer& a = *points.front().answer;
            if (a.estimate)
                rep.notes.push_back(fmt::format(
                    "the estimate assumes a closed loop of --batch clients, every request {} "
                    "tokens in and {} out{}{}, at most the KV wall running at once, prefill as "
                    "{} schedules it; estimate parameters: {}",
                    grouped(split->prompt), grouped(split->output),
                    run.length_spread != 0.0
                        ? fmt::format(" (drawn within +-{:.0f} %)", 100.0 * run.length_spread)
                    : run.fixed_lengths ? std::string(" (fixed lengths)")
                                        : std::string(),
                    run.requests ? fmt::format(", a run of {} requests", grouped(*run.requests))
                                 : std::string(),
                    display_name(a.serving.engine),
                    estimate_basis_text(a.estimate_basis, a.gpu_family, a.estimate_params,
                                        in.profile_path)));
            for (const RooflinePoint& p : points)
                if (!p.answer->estimate) {
                    rep.notes.push_back(no_estimate_text(*p.answer) + " (rows marked)");
                    break;
                }
        }
    }
    render(rep, o.format, o.explain, *ctx.out);
    if (!oc.plot.empty())
        write_roofline_plot(oc.plot, d, contexts.front(),
                            oc.batches.empty() ? std::nullopt : std::optional(batches.front()), ro,
                            fmt::format("{} on {} x {} (tp {} x pp {})", display_name(in.model),
                                        r.gpus(), in.gpu.id, r.parallel.tp, r.parallel.pp));
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
                 {"prefill_bound", "prefill bound"},
                 {"fits", "cache holds it"},
                 {"kv_wall_sequences", "KV wall"}};
    for (const RooflinePoint& p : points) {
        const StageStep& st = p.decode.stages[p.decode.limiting_stage];
        const StageStep& pst = p.prefill.stages[p.prefill.limiting_stage];
        (void)pst;
        t.rows.push_back(
            {cell_count(p.batch, ""), cell_count(p.context, ""), cell(p.decode.step),
             cell(p.decode.tpot), cell_number(p.decode.tokens_per_s, "tokens/s", 1),
             cell_number(p.decode.tokens_per_s_per_gpu, "tokens/s", 1), cell(st.bytes()),
             cell(st.flops()), cell_text(std::string(name(p.decode.bound))), cell(p.prefill.ttft),
             cell_text(std::string(name(p.prefill.bound))), cell_bool(p.fits, "yes", "NO"),
             p.refusal == Refusal::none ? cell_count(p.cache_holds, "")
                                        : cell_null(refusal_key(p.refusal))});
    }
    // The estimate's columns, beside the bound's.
    if (points.empty() || !points.front().answer) return t;
    t.columns.insert(t.columns.end(),
                     {{"running_sequences", "running"},
                      {"tpot_estimate_seconds", "TPOT est."},
                      {"itl_estimate_seconds", "ITL est.", false},
                      {"itl_bound_seconds", "ITL bound"},
                      {"ttft_estimate_seconds", "TTFT est."},
                      {"ttft_bound_seconds", "TTFT bound"},
                      {"tokens_per_second_estimate", "tokens/s est."},
                      {"tokens_per_second_per_gpu_estimate", "tokens/s/GPU est."}});
    for (std::size_t i = 0; i < points.size(); ++i) {
        const std::optional<LatencyEstimate>& e = points[i].answer->estimate;
        std::vector<Cell>& row = t.rows[i];
        if (!e) {
            const Cell none = cell_null(name(points[i].answer->estimate_basis));
            row.insert(row.end(), 8, none);
            continue;
        }
        row.insert(row.end(),
                   {cell_count(e->running, ""), cell(e->tpot), cell(e->itl), cell(e->itl_bound),
                    cell(e->ttft), cell(e->ttft_bound), cell_number(e->tokens_per_s, "tokens/s", 1),
                    cell_number(e->tokens_per_s_per_gpu, "tokens/s", 1)});
    }
    return t;
}

void append_roofline_figures(Report& rep, const RooflinePoint& p, const ReplicaRequest& in,
                             const Replica& r, const RooflineOptions& ro) {
    const DecodeBound& d = p.decode;
    const StageStep& st = d.stages[d.limiting_stage];
    const std::string bw_src = in.gpu.source + ": memory_bandwidth.TB_per_s";
    const std::string fl_src = in.gpu.source + ": dense_tflops." + std::string(name(*ro.compute));
    const std::string stage = r.parallel.pp > 1 ? fmt::format(" (stage {})", d.limiting_stage) : "";
    rep.figures.push_back(
        {"decode_step_seconds",
         "decode step (lower bound)",
         cell(d.step),
         {},
         {"max(bytes read / peak bandwidth, FLOPs / peak FLOP/s) on the slowest rank" + stage,
          {fmt::format("memory time {} = {} B / {} ({})", fmt::format("{}", st.memory_time),
                       grouped(st.bytes().count()), fmt::format("{}", in.gpu.spec.memory_bandwidth),
                       bw_src),
           fmt::format("compute time {} = {:.4g} FLOP / {} ({})",
                       fmt::format("{}", st.compute_time), st.flops().in(FLOP),
                       fmt::format("{}", roofline_peak(in.gpu.spec, *ro.compute)), fl_src)}}});
    rep.figures.push_back(
        {"tpot_seconds",
         "time per output token",
         cell(d.tpot),
         {},
         {"max(a micro-batch's pass through every stage, a stage's cycle through every "
          "micro-batch)",
          {fmt::format("{} micro-batch{} of at most {} sequences", d.micro_batches,
                       d.micro_batches == 1 ? "" : "es", grouped(d.micro_batch))}}});
    rep.figures.push_back({"tokens_per_second",
                           "throughput (replica)",
                           cell_number(d.tokens_per_s, "tokens/s", 1),
                           {},
                           {"batch / TPOT", {fmt::format("batch = {} (--batch)", p.batch)}}});
    rep.figures.push_back({"tokens_per_second_per_gpu",
                           "throughput per GPU",
                           cell_number(d.tokens_per_s_per_gpu, "tokens/s", 1),
                           {},
                           {"tokens_per_second / GPUs", {}}});
    rep.figures.push_back(
        {"bytes_per_step",
         "bytes read per step per GPU",
         cell(st.bytes()),
         cell_exact(st.bytes()),
         {"weights read + KV read on the slowest rank",
          {fmt::format("weights read {} B (of {} B resident; the embedding table is not read)",
                       grouped(st.weights_read.count()), grouped(st.weights_resident.count())),
           fmt::format("KV read {} B: {} sequences of {} tokens", grouped(st.kv_read.count()),
                       p.batch, grouped(p.context))}}});
    rep.figures.push_back(
        {"flops_per_step",
         "FLOPs per step per GPU",
         cell(st.flops()),
         {},
         {"2 x matmul parameters used x batch + attention",
          {fmt::format("matmul {}, attention {}", fmt::format("{}", st.matmul_flops),
                       fmt::format("{}", st.attention_flops))}}});
    rep.figures.push_back({"bound",
                           "bound by",
                           cell_text(std::string(name(d.bound))),
                           {},
                           {"compute when FLOPs / peak exceeds bytes / bandwidth", {}}});
    rep.figures.push_back(
        {"all_reduce_seconds",
         "TP all-reduce per step (not added)",
         cell(d.all_reduce.per_step),
         {},
         {"2 all-reduces per layer of batch x hidden x 2 B over the scale-up link",
          {fmt::format("link {}", fmt::format("{}", d.all_reduce.link))}}});
    if (d.all_to_all.applies)
        rep.figures.push_back(
            {"all_to_all_seconds",
             "expert all-to-all per step (not added)",
             d.all_to_all.network_unknown ? cell_null("unknown: no node-to-node figure")
                                          : cell(d.all_to_all.per_step),
             {},
             {"dispatch + combine of each MoE layer: tokens x messages x message, to the GPUs "
              "the experts spread over, in the node by the scale-up link and across nodes by the "
              "network",
              {fmt::format(
                   "{} tokens a GPU dispatches x {} messages each ({}), over {} GPUs ({} "
                   "in the node); {} MoE layers",
                   grouped(d.all_to_all.tokens), fmt::format("{:.2f}", d.all_to_all.destinations),
                   d.all_to_all.per_gpu ? fmt::format("one per GPU holding any of its {} experts",
                                                      d.all_to_all.experts_per_token)
                                        : "one per selected expert",
                   d.all_to_all.group, d.all_to_all.group_in_node, d.all_to_all.moe_layers),
               fmt::format("dispatch {} and combine {} per layer",
                           fmt::format("{}", d.all_to_all.dispatch),
                           fmt::format("{}", d.all_to_all.combine))}}});
    rep.figures.push_back({"prefill_seconds",
                           fmt::format("prefill of {} tokens", grouped(p.context)),
                           cell(p.prefill.ttft),
                           {},
                           {"max(weights + KV written / bandwidth, FLOPs incl. causal attention / "
                            "peak) on the slowest stage",
                            {}}});
    rep.figures.push_back({"prefill_bound",
                           "prefill bound by",
                           cell_text(std::string(name(p.prefill.bound))),
                           {},
                           {}});
    // The same prefill with an unfused attention kernel: the N x N scores cross HBM.
    const PrefillAttention pa = prefill_attention(r, p.context, 1, ro);
    rep.figures.push_back(
        {"prefill_bytes",
         "prefill HBM traffic per GPU, fused attention",
         cell(pa.fused_bytes),
         cell_exact(pa.fused_bytes),
         {"weights read + KV written on the slowest stage: the scores stay on chip", {}}});
    rep.figures.push_back(
        {"prefill_unfused_bytes",
         "prefill HBM traffic per GPU, unfused attention",
         cell(pa.unfused_bytes),
         cell_exact(pa.unfused_bytes),
         {"the fused traffic + 4 x N^2 x heads x attention layers x 2 B (S = QK^T and the "
          "softmax P, each written and read)",
          {fmt::format("scores {} B at N = {}",
                       grouped(pa.score_bytes[pa.unfused_limiting_stage].count()),
                       grouped(p.context))}}});
    rep.figures.push_back(
        {"prefill_unfused_seconds",
         "prefill bound, unfused attention",
         cell(pa.unfused_ttft),
         {},
         {"max(unfused bytes / peak bandwidth, FLOPs / peak) on the slowest stage",
          {fmt::format("bound by {}", name(pa.unfused_bound))}}});
    rep.figures.push_back(
        {"fits",
         "the cache holds the batch",
         cell_bool(p.fits),
         {},
         {"evaluate() at the batch and context: the engine starts and holds it", {}}});
    rep.figures.push_back(
        {"kv_wall_sequences",
         fmt::format("KV wall at {} tokens", grouped(p.context)),
         cell_count(p.cache_holds, "sequences"),
         {},
         {"the batch at which the engine's cache is full for this context (fit's max "
          "concurrency)",
          {}}});
}

void register_roofline(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<RooflineOptionsCli>();
    CLI::App* sub = app.add_subcommand(
        "roofline",
        "Decode and prefill lower bounds; comma lists sweep (--batch 1,8,32 --context 1k,8k)");
    add_options(*sub, o->common,
                opt_model | opt_gpu | opt_layout | opt_parallel | opt_dtypes | opt_budget |
                    opt_lengths | opt_run | opt_profile | opt_output);
    typed(
        *sub, "-c,--context", o->contexts,
        [](std::string_view text, std::string_view flag) {
            return parse_list(text, flag, parse_tokens);
        },
        "Tokens per sequence, comma list to sweep (1k,8k); default: the model's limit");
    typed(
        *sub, "-b,--batch,--concurrency", o->batches,
        [](std::string_view text, std::string_view flag) {
            return parse_list(text, flag, parse_whole);
        },
        "Sequences decoding at once, comma list to sweep (1,8,32); with "
        "--prompt-tokens and --output-tokens, the clients of the load the estimate "
        "serves (those the cache does not hold wait)");
    typed(
        *sub, "--compute-dtype", o->compute_dtype,
        [](std::string_view text, std::string_view) {
            return compute_dtype_flag(std::string(text));
        },
        "Tensor-core type the matmuls run in: tf32 bf16 fp16 fp8 int8 fp4 (default: the "
        "weights' own where the GPU has a peak for it and vLLM multiplies in it, as "
        "fp8 W8A8; else bf16)");
    sub->add_option("--plot", o->plot,
                    "Write an SVG chart at the first --context: tokens/s against batch (the KV "
                    "wall and the compute knee marked, the first --batch too), TPOT against "
                    "context, and prefill traffic and TTFT with and without fused attention");
    sub->get_option("--gpu")->required();
    sub->callback([o, &ctx] { run_roofline(*o, ctx); });
}

}  // namespace kvplan::cli
