// kvplan diff OLD NEW: two revisions of a config.json. What changed in the file, what changed in
// the model kvplan maps it to, and the effect on bytes per token, capacity and the decode bound.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <kvplan/change.hpp>
#include <kvplan/format.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/json.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/roofline.hpp>
#include <kvplan/weights.hpp>
#include <memory>

#include "answer.hpp"
#include "commands.hpp"
#include "explain.hpp"
#include "flags.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

namespace fs = std::filesystem;

struct DiffOptions {
    std::string old_model, new_model;
    CommonOptions common;
};

/// The config.json behind a --model argument, if it is a file (a preset has none).
std::optional<fs::path> config_file(const std::string& arg, const Context& ctx) {
    std::error_code ec;
    fs::path p{arg};
    if (fs::is_directory(p, ec)) p /= "config.json";
    if (fs::is_regular_file(p, ec)) return p;
    return find_bundled_model(ctx.config_dir, arg);
}

/// What kvplan's model says of each field that sizes the cache, for old and new.
void model_rows(Table& t, const Model& a, const Model& b) {
    const auto add = [&](const std::string& field, std::uint64_t x, std::uint64_t y) {
        if (x != y) t.rows.push_back({cell_text(field), cell_count(x, ""), cell_count(y, "")});
    };
    const ModelConfig& ca = a.config();
    const ModelConfig& cb = b.config();
    add("num_layers", a.num_layers(), b.num_layers());
    add("num_heads", ca.num_heads, cb.num_heads);
    add("hidden_size", ca.hidden_size, cb.hidden_size);
    add("intermediate_size", ca.intermediate_size, cb.intermediate_size);
    add("vocab_size", ca.vocab_size, cb.vocab_size);
    add("max_position_embeddings", ca.max_position_embeddings, cb.max_position_embeddings);
    add("moe.experts", ca.moe.experts, cb.moe.experts);
    add("moe.experts_per_token", ca.moe.experts_per_token, cb.moe.experts_per_token);
    for (CacheKind k : {CacheKind::full_attention, CacheKind::sliding_window, CacheKind::mla_latent,
                        CacheKind::constant_state})
        add(std::string("layers of kind ") + std::string(name(k)), a.layers().layers_of_kind(k),
            b.layers().layers_of_kind(k));
    const auto first_attn = [](const Model& m) -> const CacheSpec* {
        for (std::uint32_t i = 0; i < m.layers().num_specs; ++i)
            if (m.layers().specs[i].kv_heads != 0) return &m.layers().specs[i];
        return nullptr;
    };
    const CacheSpec* sa = first_attn(a);
    const CacheSpec* sb = first_attn(b);
    if (sa && sb) {
        add("kv_heads", sa->kv_heads, sb->kv_heads);
        add("k_head_dim", sa->k_head_dim, sb->k_head_dim);
        add("v_head_dim", sa->v_head_dim, sb->v_head_dim);
        add("sliding window (tokens)", largest_window(a), largest_window(b));
    }
}

/// The change column: change_percent's figure, or what stands for it when the old one is 0.
Cell change(double before, double after) {
    const std::optional<double> pct = change_percent(before, after);
    if (!pct) return cell_null(after == 0 ? "0 %" : "new");
    return {fmt::format("{:+.1f} %", *pct), *pct};
}

void run_diff(const DiffOptions& d, Context& ctx) {
    const CommonOptions& o = d.common;
    // Every flag once, before any file is read.
    ReplicaFlags flags = parse_replica_flags(o);
    const ResolvedModel a = resolve_model(d.old_model, ctx, "OLD", flags.import);
    const ResolvedModel b = resolve_model(d.new_model, ctx, "NEW", flags.import);
    refuse_flags_the_model_ignores(o, a);
    refuse_flags_the_model_ignores(o, b);
    const std::uint64_t context =
        flags.context ? *flags.context : context_limit(a.get().config()).tokens;
    const WeightOptions wa = flags.weights ? *flags.weights : checkpoint_weights(a.get());
    const WeightOptions wb = flags.weights ? *flags.weights : checkpoint_weights(b.get());
    // Each model's KV dtype as its engine's "auto" resolves it for that checkpoint, or --kv-dtype
    // (served_kv). With a GPU, the figures are evaluate's: the cache in the layout the engine
    // stores it in on that GPU's attention backend (DeepSeek-V3.2's fp8 as fp8_ds_mla on Hopper,
    // plain on Blackwell's FlashInfer sparse MLA or ROCm), the same figure fit and plan show.
    // Without one no backend is known, so the table shows the dtype before that layout, and says
    // so.
    const Serving& sv = flags.serving;
    const ServedKv ka = served_kv(a.get(), flags.kv, sv.engine, sv.engine_version);
    const ServedKv kb = served_kv(b.get(), flags.kv, sv.engine, sv.engine_version);
    std::optional<ResolvedGpu> gpu;
    std::optional<ReplicaAnswer> xa, xb;
    if (!o.gpu.empty()) {
        // Speculative decoding: each revision's replica holds the drafter (its layers' KV and
        // weights, evaluate()); a draft model is read once for both.
        read_draft_model(flags, o, ctx);
        gpu = resolve_gpu(o.gpu, ctx);
        const auto answer = [&](const ResolvedModel& m) {
            return evaluate(Deployment{.model = m.get(),
                                       .gpu = gpu->spec,
                                       .parallel = {.tp = flags.layout.tp, .pp = flags.layout.pp},
                                       .gpus = flags.layout.gpus,
                                       .weights = flags.weights,
                                       .kv = flags.kv,
                                       .serving = flags.serving},
                            {.context = context, .concurrency = flags.concurrency});
        };
        xa = answer(a);
        xb = answer(b);
    }
    const KvFormat kv_a = xa ? xa->replica.kv : ka.format;
    const KvFormat kv_b = xb ? xb->replica.kv : kb.format;
    // Per token and per sequence of each model's replica: evaluate's figure with a GPU.
    const Model& ma = xa ? xa->replica.model : a.get();
    const Model& mb = xb ? xb->replica.model : b.get();
    const Bytes pa = xa ? xa->kv_per_token : kv_bytes_per_token(ma, kv_a);
    const Bytes pb = xb ? xb->kv_per_token : kv_bytes_per_token(mb, kv_b);

    Report rep;
    rep.command = "diff";
    rep.inputs = {{"old", cell_text(a.id)},
                  {"new", cell_text(b.id)},
                  {"kv_dtype", cell_text(kv_a == kv_b ? std::string(name(kv_a.dtype))
                                                      : fmt::format("{} -> {}", name(kv_a.dtype),
                                                                    name(kv_b.dtype)))},
                  {"kv_layout", cell_text(gpu ? "the engine's, on the GPU's attention backend"
                                              : "not applied: the dtype before the engine's "
                                                "layout (add --gpu)")},
                  {"context_tokens", cell_count(context, "tokens")}};

    Table file;
    file.key = "config_changes";
    file.title = "config.json fields that changed";
    file.columns = {{"field", "field"}, {"old", "old"}, {"new", "new"}};
    const auto fa = config_file(d.old_model, ctx), fb = config_file(d.new_model, ctx);
    if (fa && fb) {
        const kvplan::Json ja = read_json_file(*fa, JsonNumbers::python);
        const kvplan::Json jb = read_json_file(*fb, JsonNumbers::python);
        const auto shown = [](const kvplan::Json* v) {
            return v == nullptr ? std::string("(absent)") : v->dump();
        };
        for (const JsonFieldChange& c : json_field_changes(ja, jb)) {
            std::string field;
            for (const std::string& k : c.steps) field += (field.empty() ? "" : ".") + k;
            file.rows.push_back(
                {cell_text(field), cell_text(shown(c.before)), cell_text(shown(c.after))});
        }
    }
    Table model;
    model.key = "model_changes";
    model.title = "What kvplan's model of it changed";
    model.columns = {{"field", "field"}, {"old", "old"}, {"new", "new"}};
    model_rows(model, a.get(), b.get());

    Table eff;
    eff.key = "effects";
    eff.title =
        gpu ? "Effect" : "Effect (KV in the dtype before the engine's layout: --gpu applies it)";
    eff.columns = {
        {"figure", "figure"}, {"old", "old"}, {"new", "new"}, {"change_percent", "change"}};
    const auto bytes_row = [&](const char* key, Bytes x, Bytes y) {
        eff.rows.push_back(
            {cell_text(key), cell_exact(x), cell_exact(y),
             change(static_cast<double>(x.count()), static_cast<double>(y.count()))});
    };
    bytes_row("kv_bytes_per_token", pa, pb);
    bytes_row("kv_bytes_per_sequence", kv_bytes_per_sequence(ma, kv_a, context),
              kv_bytes_per_sequence(mb, kv_b, context));
    bytes_row("weight_bytes", weight_bytes(a.get(), wa).total(), weight_bytes(b.get(), wb).total());
    if (xa && xb) {
        bytes_row("kv_budget_bytes_per_gpu", xa->kv_budget, xb->kv_budget);
        eff.rows.push_back({cell_text("max_concurrency"), cell_count(xa->max_concurrency, ""),
                            cell_count(xb->max_concurrency, ""),
                            change(static_cast<double>(xa->max_concurrency),
                                   static_cast<double>(xb->max_concurrency))});
        if (xa->decode && xb->decode) {
            eff.rows.push_back(
                {cell_text("tpot_seconds"), cell(xa->decode->tpot), cell(xb->decode->tpot),
                 change(xa->decode->tpot.in(seconds), xb->decode->tpot.in(seconds))});
            eff.rows.push_back({cell_text("bound"), cell_text(std::string(name(xa->decode->bound))),
                                cell_text(std::string(name(xb->decode->bound))), cell_null("")});
        }
        eff.rows.push_back({cell_text("verdict"), cell_text(std::string(name(xa->verdict))),
                            cell_text(std::string(name(xb->verdict))), cell_null("")});
        if (xa->refusal != Refusal::none || xb->refusal != Refusal::none)
            eff.rows.push_back({cell_text("refusal"), cell_text(refusal_key(xa->refusal)),
                                cell_text(refusal_key(xb->refusal)), cell_null("")});
        rep.inputs.push_back({"gpu", cell_text(gpu->id)});
        rep.inputs.push_back({"concurrency", cell_count(flags.concurrency, "sequences")});
    } else {
        refuse_budget_flags_without_gpu(o);
        if (o.tp || o.pp)
            usage_error(o.tp ? "--tp" : "--pp",
                        "--gpu as well (diff shows per-GPU figures only with a GPU)", "no --gpu");
    }
    rep.heading =
        fmt::format("{} -> {}: KV per token {} -> {} ({})", a.id, b.id, fmt::format("{}", pa),
                    fmt::format("{}", pb),
                    change(static_cast<double>(pa.count()), static_cast<double>(pb.count())).text);
    rep.figures.push_back({"changed",
                           "changed",
                           cell_bool(!file.rows.empty() || !model.rows.empty()),
                           {},
                           {},
                           false});
    rep.tables.push_back(std::move(file));
    rep.tables.push_back(std::move(model));
    rep.tables.push_back(std::move(eff));
    rep.csv_table = 2;
    for (const auto& [rm, kv] : {std::pair{&a, ka}, std::pair{&b, kb}})
        if (auto note = checkpoint_kv_note(rm->get(), sv.engine, kv))
            rep.notes.push_back(rm->id + ": " + *note);
    // Without a GPU, say where vLLM's layout would change the figure (vllm_stored_kv).
    if (!gpu && sv.engine == Engine::vllm)
        for (const auto& [rm, kv] : {std::pair{&a, kv_a}, std::pair{&b, kv_b}})
            if (vllm_stored_kv(rm->get(), kv, VllmAttentionBackend::flashmla_sparse) != kv)
                rep.notes.push_back(fmt::format(
                    "{}: vLLM stores this {} cache as {} on FLASHMLA_SPARSE (Hopper), as asked on "
                    "other backends: --gpu gives the figure of the GPU's",
                    rm->id, name(kv.dtype),
                    name(vllm_stored_kv(rm->get(), kv, VllmAttentionBackend::flashmla_sparse)
                             .dtype)));
    if (o.gpu.empty())
        rep.notes.push_back(
            "add --gpu (and --tp, --concurrency) for capacity and the decode bound");
    render(rep, o.format, o.explain, *ctx.out);
}

}  // namespace

void register_diff(CLI::App& app, Context& ctx) {
    auto d = std::make_shared<DiffOptions>();
    CLI::App* sub = app.add_subcommand(
        "diff",
        "Two config.json revisions: what changed, and its effect on bytes per token, "
        "capacity and the decode bound");
    sub->add_option("OLD", d->old_model, "The previous config (a path or a bundled id)")
        ->required();
    sub->add_option("NEW", d->new_model, "The new config (a path or a bundled id)")->required();
    add_options(*sub, d->common,
                opt_gpu | opt_layout | opt_dtypes | opt_workload | opt_budget | opt_output);
    sub->callback([d, &ctx] { run_diff(*d, ctx); });
}

}  // namespace kvplan::cli
