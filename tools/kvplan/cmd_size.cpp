// kvplan size: KV bytes per token, per sequence and in total, for the whole model and per rank.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <kvplan/format.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/paging.hpp>
#include <memory>

#include "commands.hpp"
#include "explain.hpp"
#include "inputs.hpp"
#include "parse.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

struct SizeFigures {
    Bytes per_token, per_token_rank, per_sequence, per_sequence_rank, total, total_rank;
    std::uint32_t busiest = 0;
};

void run_size(const CommonOptions& o, Context& ctx) {
    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    const Model& m = rm.get();
    const KvFormat f = parse_kv_dtype_flag(o.kv_dtype, "--kv-dtype");
    const LayoutInput li = parse_layout(o);
    const Layout layout = make_layout(m, li);
    std::uint64_t context = 0;
    if (o.context)
        context = *o.context;
    else if (m.config().max_position_embeddings != 0)
        context = m.config().max_position_embeddings;
    else
        usage_error("--context", "a context length (the model states no max_position_embeddings)",
                    "");
    const std::uint64_t concurrency = o.concurrency.value_or(1);
    const std::uint32_t block = o.block_size.value_or(1);

    SizeFigures s;
    s.per_token = kv_bytes_per_token(m, f);
    s.per_sequence = kv_bytes_per_sequence(m, f, context);
    s.total = s.per_sequence * concurrency;
    s.busiest = busiest_stage(m, f, layout, context);
    const Shard rank = layout.stage(s.busiest);
    // Per token the busiest stage may differ from the one at this context when windows cap some
    // layers; report each figure's own maximum over stages.
    for (std::uint32_t st = 0; st < layout.pp(); ++st)
        s.per_token_rank = std::max(s.per_token_rank, kv_bytes_per_token(m, f, layout.stage(st)));
    s.per_sequence_rank = kv_bytes_per_sequence(m, f, context, rank);
    s.total_rank = s.per_sequence_rank * concurrency;

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

    const Explanation per_token_how = explain_per_token(rm, f, Shard{});
    const Explanation per_token_rank_how = explain_per_token(rm, f, layout.stage(0), li);
    r.figures.push_back({"kv_bytes_per_token", "KV per token, whole model", cell(s.per_token),
                         cell_exact(s.per_token), per_token_how});
    r.figures.push_back({"kv_bytes_per_token_per_gpu", "KV per token, per GPU",
                         cell(s.per_token_rank), cell_exact(s.per_token_rank), per_token_rank_how});
    r.figures.push_back({"kv_bytes_per_sequence", "KV per sequence, whole model",
                         cell(s.per_sequence), cell_exact(s.per_sequence),
                         explain_per_sequence(rm, f, context, Shard{})});
    r.figures.push_back({"kv_bytes_per_sequence_per_gpu", "KV per sequence, per GPU",
                         cell(s.per_sequence_rank), cell_exact(s.per_sequence_rank),
                         explain_per_sequence(rm, f, context, rank, li)});
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
         cell(s.total_rank),
         cell_exact(s.total_rank),
         {"kv_bytes_per_sequence_per_gpu x concurrency",
          {fmt::format("kv_bytes_per_sequence_per_gpu = {} B",
                       grouped(s.per_sequence_rank.count())),
           fmt::format("concurrency = {} sequences (--concurrency)", grouped(concurrency))}}});
    if (block > 1) {
        const PagedUse paged = paged_sequence(m, f, context, block, rank);
        r.figures.push_back(
            {"kv_bytes_per_sequence_paged_per_gpu",
             "KV per sequence in blocks, per GPU",
             cell(paged.reserved),
             cell_exact(paged.reserved),
             {"sum over layers of ceil(tokens kept / block_size) x block_size x bytes per token",
              {fmt::format("block_size = {} tokens (--block-size)", block),
               fmt::format("{} blocks, {} B unused in the last block of each layer", paged.blocks,
                           grouped(paged.waste().count()))}}});
    }
    append_weight_figures(r, rm, o, li);
    r.tables.push_back(layer_table(rm, f, li.tp));
    if (li.pp > 1) r.tables.push_back(stage_table(rm, f, layout, context));
    if (li.tp > 1)
        for (std::uint32_t i = 0; i < m.layers().num_specs; ++i) {
            const CacheSpec& sp = m.layers().specs[i];
            if ((sp.kind == CacheKind::full_attention || sp.kind == CacheKind::sliding_window ||
                 sp.kind == CacheKind::chunked_local) &&
                li.tp > sp.kv_heads) {
                r.notes.push_back(fmt::format(
                    "tp {} exceeds the {} KV heads: each rank holds one replicated head, so the "
                    "cache per GPU does not shrink past tp {}",
                    li.tp, sp.kv_heads, sp.kv_heads));
                break;
            }
        }
    if (li.replicas > 1)
        r.notes.push_back(
            fmt::format("{} GPUs hold {} replicas of tp {} x pp {}; figures are per "
                        "replica",
                        li.gpus, li.replicas, li.tp, li.pp));
    for (const std::string& n : rm.notes) r.notes.push_back(display_name(rm) + ": " + n);
    render(r, parse_format(o.format), o.explain, *ctx.out);
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
