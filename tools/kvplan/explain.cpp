#include "explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kvplan/weights.hpp>

#include "answer.hpp"
#include "flags.hpp"
#include "parse.hpp"

namespace kvplan::cli {

std::string kv_dtype_label(const Model& m, KvSource s, Engine e) {
    if (s != KvSource::checkpoint) return "(--kv-dtype)";
    return fmt::format("(the checkpoint's {}, which {}'s auto follows; --kv-dtype sets it)",
                       checkpoint_kv_field(m.config().checkpoint), name(e));
}

std::string describe_format(KvFormat f) {
    std::string s = fmt::format("{}: {} bits per value", name(f.dtype), bits(f.dtype));
    switch (f.scaling.granularity) {
        case ScaleGranularity::per_tensor:
            s += ", no per-token scales";
            break;
        case ScaleGranularity::per_token_head:
            s += fmt::format(" + one {}-bit scale per token per head (K and V each)",
                             f.scaling.scale_bits);
            break;
        case ScaleGranularity::per_group:
            s += fmt::format(" + one {}-bit scale per {} values", f.scaling.scale_bits,
                             f.scaling.group_size);
            break;
    }
    return s;
}

namespace {

std::string describe_term(const SizeTerm& t, KvFormat f, std::uint32_t tp) {
    const CacheSpec& sp = t.spec;
    switch (sp.kind) {
        case CacheKind::full_attention:
        case CacheKind::sliding_window:
        case CacheKind::chunked_local: {
            std::string s = fmt::format(
                "{} KV head{}{} x (K {} + V {} values) -> {} B + {} B per head", t.kv_heads,
                t.kv_heads == 1 ? "" : "s",
                tp > 1 ? fmt::format(" per rank (of {} at tp {})", sp.kv_heads, tp) : "",
                sp.k_head_dim, sp.v_head_dim, grouped(t.k_bytes.count()),
                grouped(t.v_bytes.count()));
            if (sp.kind == CacheKind::sliding_window)
                s += fmt::format(", window {} tokens", grouped(sp.window));
            if (sp.kind == CacheKind::chunked_local)
                s += fmt::format(", chunks of {} tokens (at most one held)", grouped(sp.window));
            if (sp.index_head_dim != 0)
                s += fmt::format(
                    " + the sparse indexer's key of index_head_dim {} bf16 values -> {} B, the "
                    "same on every TP rank",
                    sp.index_head_dim, grouped(t.indexer_bytes.count()));
            return s;
        }
        case CacheKind::mla_latent: {
            std::string s =
                fmt::format("one latent of kv_lora_rank {} + qk_rope_head_dim {} values{} -> {} B",
                            sp.kv_lora_rank, sp.qk_rope_head_dim,
                            f.dtype == KvDtype::fp8_ds_mla ? " (the RoPE part in bf16)" : "",
                            grouped(t.latent_bytes.count()));
            if (sp.index_head_dim != 0)
                s += fmt::format(
                    " + the sparse indexer's key of index_head_dim {} fp8 values with a 32-bit "
                    "scale per 128 -> {} B",
                    sp.index_head_dim, grouped(t.indexer_bytes.count()));
            return s + ", the same on every TP rank";
        }
        case CacheKind::constant_state:
            return fmt::format("a fixed state of {} B per sequence (whole model, split over TP)",
                               grouped(sp.state_bytes.count()));
        case CacheKind::shared:
            return "reads another layer's cache: no bytes of its own";
        case CacheKind::mlp_only:
            return "no attention or state, an MLP only: no bytes";
    }
    return "";
}

std::vector<std::string> common_inputs(const ResolvedModel& rm, const ServedKv& kv,
                                       const SizeBreakdown& b,
                                       const std::optional<LayoutInput>& li) {
    std::vector<std::string> in;
    in.push_back("model: " + rm.source);
    // A size names no engine: vLLM's "auto" (SizeRequest).
    in.push_back("kv dtype " + describe_format(kv.format) + " " +
                 kv_dtype_label(rm.get(), kv.source, Engine::vllm));
    if (li)
        in.push_back(fmt::format("rank: tp {} (--tp), layers {}..{} of stage {} of pp {} (--pp)",
                                 li->tp, b.first_layer, b.last_layer, b.stage, li->pp));
    return in;
}

}  // namespace

Explanation explain_per_token(const ResolvedModel& rm, const ServedKv& kv, const SizeBreakdown& b,
                              std::optional<LayoutInput> layout) {
    Explanation e;
    e.formula =
        "sum over layers of bytes one token adds: KV heads x (K bytes + V bytes) for attention "
        "layers (sliding ones too), one latent (and an indexer key) for MLA layers, nothing for "
        "constant-state layers";
    e.inputs = common_inputs(rm, kv, b, layout);
    if (layout && layout->pp > 1)
        e.inputs.push_back("the figure is the largest over pipeline stages");
    for (const SizeTerm& t : b.terms)
        e.inputs.push_back(
            fmt::format("{} {} layer{}: {}; {} x {} B = {} B", t.layers, name(t.spec.kind),
                        t.layers == 1 ? "" : "s", describe_term(t, kv.format, b.shard.tp), t.layers,
                        grouped(t.per_token.count()), grouped(t.layers_per_token.count())));
    return e;
}

Explanation explain_per_sequence(const ResolvedModel& rm, const ServedKv& kv,
                                 const SizeBreakdown& b, std::optional<LayoutInput> layout) {
    Explanation e;
    e.formula =
        "sum over layers of bytes per token x tokens kept (min(tokens, window) for sliding "
        "layers) + fixed state";
    e.inputs = common_inputs(rm, kv, b, layout);
    e.inputs.push_back(fmt::format("tokens = {} (--context)", grouped(b.tokens)));
    for (const SizeTerm& t : b.terms)
        e.inputs.push_back(fmt::format(
            "{} {} layer{}: {} B per token x {} tokens kept{} = {} B each, {} B in all", t.layers,
            name(t.spec.kind), t.layers == 1 ? "" : "s", grouped(t.per_token.count()),
            grouped(t.tokens_kept),
            t.state.is_zero() ? "" : fmt::format(" + {} B state", grouped(t.state.count())),
            grouped(t.per_sequence.count()), grouped(t.layers_per_sequence.count())));
    return e;
}

Table layer_table(const SizeAnswer& a) {
    const std::uint32_t tp = a.parallel.tp;
    Table t;
    t.key = "layers";
    t.title = "Layers";
    t.columns = {{"kind", "kind"},
                 {"layers", "layers"},
                 {"kv_heads", "KV heads"},
                 {"k_head_dim", "K dim"},
                 {"v_head_dim", "V dim"},
                 {"window_tokens", "window"},
                 {"bytes_per_token_per_layer", "per token per layer"},
                 {"bytes_per_token_per_layer_per_gpu", "per GPU (tp " + std::to_string(tp) + ")"}};
    // Mamba and linear-attention layers grow by nothing per token; what they hold is a fixed state
    // per sequence, shown beside (only for models that have such layers).
    bool has_state = false;
    for (const LayerKindSize& k : a.layer_kinds)
        has_state = has_state || (k.spec.kind == CacheKind::constant_state && k.layers > 0);
    if (has_state) {
        t.columns.push_back({"state_bytes_per_sequence_per_layer", "state per sequence per layer"});
        t.columns.push_back({"state_bytes_per_sequence_per_layer_per_gpu",
                             "per GPU (tp " + std::to_string(tp) + ")"});
    }
    for (const LayerKindSize& k : a.layer_kinds) {
        const CacheSpec& sp = k.spec;
        const bool attn = sp.kind == CacheKind::full_attention ||
                          sp.kind == CacheKind::sliding_window ||
                          sp.kind == CacheKind::chunked_local;
        const bool mla = sp.kind == CacheKind::mla_latent;
        t.rows.push_back(
            {cell_text(std::string(name(sp.kind))), cell_count(k.layers, ""),
             attn ? cell_count(sp.kv_heads, "") : cell_null(),
             attn  ? cell_count(sp.k_head_dim, "")
             : mla ? cell_count(std::uint64_t{sp.kv_lora_rank} + sp.qk_rope_head_dim, "")
                   : cell_null(),
             attn ? cell_count(sp.v_head_dim, "") : cell_null(),
             sp.kind == CacheKind::sliding_window || sp.kind == CacheKind::chunked_local
                 ? cell_count(sp.window, "tokens")
                 : cell_null(),
             cell_exact(k.per_token), cell_exact(k.per_token_per_gpu)});
        if (has_state) {
            t.rows.back().push_back(cell_exact(k.state));
            t.rows.back().push_back(cell_exact(k.state_per_gpu));
        }
    }
    return t;
}

Table stage_table(const SizeAnswer& a) {
    Table t;
    t.key = "stages";
    t.title = "Pipeline stages (per GPU of each stage)";
    t.columns = {{"stage", "stage"},
                 {"first_layer", "first layer"},
                 {"layers", "layers"},
                 {"kv_bytes_per_token_per_gpu", "per token"},
                 {"kv_bytes_per_sequence_per_gpu", "per sequence"}};
    for (std::size_t st = 0; st < a.stages.size(); ++st) {
        const StageSize& s = a.stages[st];
        t.rows.push_back({cell_count(st, ""), cell_count(s.first_layer, ""),
                          cell_count(s.layers, ""), cell(s.per_token), cell(s.per_sequence)});
    }
    return t;
}

void append_weight_figures(Report& r, const ResolvedModel& rm, const SizeAnswer& a) {
    const Model& m = rm.get();
    const WeightBytes& whole = a.weight_bytes;
    const std::string fmt_in = fmt::format(
        "weight format {} for the blocks' linear layers{}; embedding, LM head, norms and router "
        "16-bit",
        describe_weights(a.weights),
        a.weights_from_checkpoint
            ? fmt::format(" (the checkpoint's: {})", m.config().checkpoint.source)
            : " (--weight-dtype)");
    r.figures.push_back(
        {"weight_bytes",
         "Weights, whole model",
         cell(whole.total()),
         cell_exact(whole.total()),
         {"sum over tensors of rows x cols x bits per weight / 8, scales included",
          {"model: " + rm.source, fmt::format("{} parameters", grouped(a.params)), fmt_in,
           fmt::format(
               "attention {} B, MLP {} B, routed experts {} B, embedding {} B, LM head {} B",
               grouped(whole.attention.count()), grouped(whole.dense_mlp.count()),
               grouped(whole.routed_experts.count()), grouped(whole.embedding.count()),
               grouped(whole.lm_head.count()))}}});
    r.figures.push_back(
        {"weight_bytes_per_gpu",
         "Weights, fullest GPU",
         cell(a.weight_bytes_per_gpu),
         cell_exact(a.weight_bytes_per_gpu),
         {"the largest over ranks of the tensors (or tensor slices) each rank holds",
          {fmt::format("tp {}: column-parallel matrices split their rows, row-parallel ones their "
                       "columns, vocabulary padded to 64 (vLLM's linear.py)",
                       a.parallel.tp),
           fmt::format("pp {}: the first stage holds the embedding, the last the LM head",
                       a.parallel.pp),
           fmt_in}}});
    r.inputs.push_back({"weight_dtype", cell_text(std::string(name(a.weights.format)))});
    r.inputs.push_back({"params", cell_count(a.params, "")});
}

}  // namespace kvplan::cli
