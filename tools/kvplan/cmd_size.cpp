// kvplan size: KV bytes per token, per sequence and in total, for the whole model and per rank:
// the flags parsed, one call to kvplan::size (plan/size.hpp), its answer rendered.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <kvplan/format.hpp>
#include <kvplan/plan/size.hpp>
#include <memory>

#include "commands.hpp"
#include "explain.hpp"
#include "flags.hpp"
#include "inputs.hpp"
#include "parse.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

void run_size(const CommonOptions& o, Context& ctx) {
    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    const Model& m = rm.get();
    const LayoutInput li = parse_layout(o);
    (void)make_layout(m, li);  // the layout checked before the other flags
    SizeRequest req;
    if (o.context)
        req.context = *o.context;
    else if (m.config().max_position_embeddings == 0 && m.config().context_limit.tokens == 0)
        usage_error("--context", "a context length (the model states no max_position_embeddings)",
                    "");
    req.concurrency = o.concurrency.value_or(1);
    if (o.block_size) req.block_size = *o.block_size;
    req.weights = parse_weights(o);
    // No engine is named: an unset KV dtype is vLLM's newest release's "auto" (SizeRequest).
    const SizeAnswer s = size(m, kv_flag(o), ParallelConfig{.tp = li.tp, .pp = li.pp}, req);
    const KvFormat f = s.kv;
    const ServedKv kv{s.kv, s.kv_source};
    const std::uint64_t context = s.context, concurrency = s.concurrency;

    Report r;
    r.command = "size";
    r.heading = fmt::format("{}: KV cache in {}, tp {} x pp {}, {} tokens x {} sequence{}",
                            display_name(rm), name(f.dtype), li.tp, li.pp, grouped(context),
                            grouped(concurrency), concurrency == 1 ? "" : "s");
    r.inputs = {{"model", cell_text(rm.id)},
                {"model_source", cell_text(rm.source)},
                {"kv_dtype", cell_text(std::string(name(f.dtype)))},
                {"tp", cell_count(li.tp, "")},
                {"pp", cell_count(li.pp, "")},
                {"context_tokens", cell_count(context, "tokens")},
                {"concurrency", cell_count(concurrency, "sequences")}};

    r.figures.push_back({"kv_bytes_per_token", "KV per token, whole model", cell(s.per_token),
                         cell_exact(s.per_token), explain_per_token(rm, kv, s.whole)});
    r.figures.push_back({"kv_bytes_per_token_per_gpu", "KV per token, per GPU",
                         cell(s.per_token_per_gpu), cell_exact(s.per_token_per_gpu),
                         explain_per_token(rm, kv, s.per_token_rank, li)});
    r.figures.push_back({"kv_bytes_per_sequence", "KV per sequence, whole model",
                         cell(s.per_sequence), cell_exact(s.per_sequence),
                         explain_per_sequence(rm, kv, s.whole)});
    r.figures.push_back({"kv_bytes_per_sequence_per_gpu", "KV per sequence, per GPU",
                         cell(s.per_sequence_per_gpu), cell_exact(s.per_sequence_per_gpu),
                         explain_per_sequence(rm, kv, s.per_sequence_rank, li)});
    r.figures.push_back(
        {"kv_bytes_total",
         "KV for all sequences, whole model",
         cell(s.total),
         cell_exact(s.total),
         {"kv_bytes_per_sequence x concurrency",
          {fmt::format("kv_bytes_per_sequence = {} B", grouped(s.per_sequence.count())),
           fmt::format("concurrency = {} sequences (--concurrency)", grouped(concurrency))}}});
    r.figures.push_back(
        {"kv_bytes_total_per_gpu",
         "KV for all sequences, per GPU",
         cell(s.total_per_gpu),
         cell_exact(s.total_per_gpu),
         {"kv_bytes_per_sequence_per_gpu x concurrency",
          {fmt::format("kv_bytes_per_sequence_per_gpu = {} B",
                       grouped(s.per_sequence_per_gpu.count())),
           fmt::format("concurrency = {} sequences (--concurrency)", grouped(concurrency))}}});
    if (s.paged_per_gpu) {
        const PagedUse& paged = *s.paged_per_gpu;
        r.figures.push_back(
            {"kv_bytes_per_sequence_paged_per_gpu",
             "KV per sequence in blocks, per GPU",
             cell(paged.reserved),
             cell_exact(paged.reserved),
             {"sum over layers of ceil(tokens kept / block_size) x block_size x bytes per token",
              {fmt::format("block_size = {} tokens (--block-size)", req.block_size),
               fmt::format("{} blocks, {} B unused in the last block of each layer", paged.blocks,
                           grouped(paged.waste().count()))}}});
    }
    append_weight_figures(r, rm, s);
    r.tables.push_back(layer_table(s));
    if (li.pp > 1) r.tables.push_back(stage_table(s));
    if (s.replicated_kv_heads)
        r.notes.push_back(fmt::format(
            "tp {} exceeds the {} KV heads: each rank holds one replicated head, so the "
            "cache per GPU does not shrink past tp {}",
            li.tp, *s.replicated_kv_heads, *s.replicated_kv_heads));
    if (li.replicas > 1)
        r.notes.push_back(
            fmt::format("{} GPUs hold {} replicas of tp {} x pp {}; figures are per "
                        "replica",
                        li.gpus, li.replicas, li.tp, li.pp));
    // As fit says it: a format the checkpoint does not state (or states in a way kvplan does not
    // model) is an assumption the reader should see without --explain.
    if (s.weights_from_checkpoint && !rm.get().config().checkpoint.known) {
        const std::string why = rm.get().config().checkpoint.source;
        r.notes.push_back(fmt::format("weights sized as bf16 ({}); --weight-dtype sets them",
                                      why.empty() ? "the model states no format" : why));
    }
    for (const std::string& n : rm.notes) r.notes.push_back(display_name(rm) + ": " + n);
    if (auto note = checkpoint_kv_note(m, Engine::vllm, kv, false))
        r.notes.push_back(display_name(rm) + ": " + *note);
    render(r, o.format, o.explain, *ctx.out);
}

}  // namespace

void register_size(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CommonOptions>();
    CLI::App* sub = app.add_subcommand(
        "size", "KV bytes per token, per sequence and in total, whole model and per GPU");
    add_options(*sub, *o, opt_model | opt_layout | opt_dtypes | opt_workload | opt_output);
    sub->callback([o, &ctx] { run_size(*o, ctx); });
}

}  // namespace kvplan::cli
