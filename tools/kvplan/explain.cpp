#include "explain.hpp"

#include <fmt/format.h>

#include <kvplan/kv_bytes.hpp>
#include <kvplan/weights.hpp>

#include "flags.hpp"
#include "parse.hpp"

namespace kvplan::cli {

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

std::uint32_t layers_in_shard(const Model& m, std::uint32_t spec, const Shard& s) {
    std::uint32_t n = 0;
    const std::uint32_t end = std::min(s.end_layer, m.num_layers());
    for (std::uint32_t i = s.first_layer; i < end; ++i) n += m.layers().spec_of_layer[i] == spec;
    return n;
}

std::string describe_spec(const CacheSpec& sp, KvFormat f, std::uint32_t tp) {
    switch (sp.kind) {
        case CacheKind::full_attention:
        case CacheKind::sliding_window:
        case CacheKind::chunked_local: {
            const std::uint32_t heads = kv_heads_per_rank(sp.kv_heads, tp);
            std::string s = fmt::format(
                "{} KV head{}{} x (K {} + V {} values) -> {} B + {} B per head", heads,
                heads == 1 ? "" : "s",
                tp > 1 ? fmt::format(" per rank (of {} at tp {})", sp.kv_heads, tp) : "",
                sp.k_head_dim, sp.v_head_dim, vector_bytes(f, sp.k_head_dim).count(),
                vector_bytes(f, sp.v_head_dim).count());
            if (sp.kind == CacheKind::sliding_window)
                s += fmt::format(", window {} tokens", grouped(sp.window));
            if (sp.kind == CacheKind::chunked_local)
                s += fmt::format(", chunks of {} tokens (at most one held)", grouped(sp.window));
            return s;
        }
        case CacheKind::mla_latent:
            return fmt::format(
                "one latent of kv_lora_rank {} + qk_rope_head_dim {} values -> {} B, "
                "the same on every TP rank",
                sp.kv_lora_rank, sp.qk_rope_head_dim,
                vector_bytes(f, std::uint64_t{sp.kv_lora_rank} + sp.qk_rope_head_dim).count());
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

std::vector<std::string> common_inputs(const ResolvedModel& rm, KvFormat f, const Shard& s,
                                       const std::optional<LayoutInput>& li) {
    std::vector<std::string> in;
    in.push_back("model: " + rm.source);
    in.push_back("kv dtype " + describe_format(f) + " (--kv-dtype)");
    if (li)
        in.push_back(fmt::format("rank: tp {} (--tp), layers {}..{} of stage 0 of pp {} (--pp)",
                                 li->tp, s.first_layer,
                                 std::min(s.end_layer, rm.get().num_layers()) - 1, li->pp));
    return in;
}

}  // namespace

Explanation explain_per_token(const ResolvedModel& rm, KvFormat f, const Shard& shard,
                              std::optional<LayoutInput> layout) {
    const Model& m = rm.get();
    Explanation e;
    e.formula =
        "sum over layers of bytes one token adds: KV heads x (K bytes + V bytes) for attention "
        "layers (sliding ones too), one latent for MLA layers, nothing for constant-state layers";
    e.inputs = common_inputs(rm, f, shard, layout);
    if (layout && layout->pp > 1)
        e.inputs.push_back("the figure is the largest over pipeline stages");
    for (std::uint32_t k = 0; k < m.layers().num_specs; ++k) {
        const CacheSpec& sp = m.layers().specs[k];
        const std::uint32_t n = layers_in_shard(m, k, shard);
        if (n == 0) continue;
        const Bytes each = layer_bytes_per_token(sp, f, shard.tp);
        e.inputs.push_back(fmt::format("{} {} layer{}: {}; {} x {} B = {} B", n, name(sp.kind),
                                       n == 1 ? "" : "s", describe_spec(sp, f, shard.tp), n,
                                       grouped(each.count()), grouped((each * n).count())));
    }
    return e;
}

Explanation explain_per_sequence(const ResolvedModel& rm, KvFormat f, std::uint64_t tokens,
                                 const Shard& shard, std::optional<LayoutInput> layout) {
    const Model& m = rm.get();
    Explanation e;
    e.formula =
        "sum over layers of bytes per token x tokens kept (min(tokens, window) for sliding "
        "layers) + fixed state";
    e.inputs = common_inputs(rm, f, shard, layout);
    e.inputs.push_back(fmt::format("tokens = {} (--context)", grouped(tokens)));
    for (std::uint32_t k = 0; k < m.layers().num_specs; ++k) {
        const CacheSpec& sp = m.layers().specs[k];
        const std::uint32_t n = layers_in_shard(m, k, shard);
        if (n == 0) continue;
        const Bytes each = layer_bytes_per_sequence(sp, f, tokens, shard.tp);
        e.inputs.push_back(fmt::format(
            "{} {} layer{}: {} B per token x {} tokens kept{} = {} B "
            "each, {} B in all",
            n, name(sp.kind), n == 1 ? "" : "s",
            grouped(layer_bytes_per_token(sp, f, shard.tp).count()),
            grouped(tokens_kept(sp, tokens)),
            layer_state_bytes(sp, shard.tp).is_zero()
                ? ""
                : fmt::format(" + {} B state", grouped(layer_state_bytes(sp, shard.tp).count())),
            grouped(each.count()), grouped((each * n).count())));
    }
    return e;
}

Table layer_table(const ResolvedModel& rm, KvFormat f, std::uint32_t tp) {
    const Model& m = rm.get();
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
    const bool has_state = m.layers().layers_of_kind(CacheKind::constant_state) > 0;
    if (has_state) {
        t.columns.push_back({"state_bytes_per_sequence_per_layer", "state per sequence per layer"});
        t.columns.push_back({"state_bytes_per_sequence_per_layer_per_gpu",
                             "per GPU (tp " + std::to_string(tp) + ")"});
    }
    for (std::uint32_t k = 0; k < m.layers().num_specs; ++k) {
        const CacheSpec& sp = m.layers().specs[k];
        const bool attn = sp.kind == CacheKind::full_attention ||
                          sp.kind == CacheKind::sliding_window ||
                          sp.kind == CacheKind::chunked_local;
        const bool mla = sp.kind == CacheKind::mla_latent;
        t.rows.push_back(
            {cell_text(std::string(name(sp.kind))), cell_count(m.layers().layers_with_spec(k), ""),
             attn ? cell_count(sp.kv_heads, "") : cell_null(),
             attn  ? cell_count(sp.k_head_dim, "")
             : mla ? cell_count(std::uint64_t{sp.kv_lora_rank} + sp.qk_rope_head_dim, "")
                   : cell_null(),
             attn ? cell_count(sp.v_head_dim, "") : cell_null(),
             sp.kind == CacheKind::sliding_window || sp.kind == CacheKind::chunked_local
                 ? cell_count(sp.window, "tokens")
                 : cell_null(),
             cell_exact(layer_bytes_per_token(sp, f, 1)),
             cell_exact(layer_bytes_per_token(sp, f, tp))});
        if (has_state) {
            t.rows.back().push_back(cell_exact(layer_state_bytes(sp, 1)));
            t.rows.back().push_back(cell_exact(layer_state_bytes(sp, tp)));
        }
    }
    return t;
}

Table stage_table(const ResolvedModel& rm, KvFormat f, const Layout& layout, std::uint64_t tokens) {
    const Model& m = rm.get();
    Table t;
    t.key = "stages";
    t.title = "Pipeline stages (per GPU of each stage)";
    t.columns = {{"stage", "stage"},
                 {"first_layer", "first layer"},
                 {"layers", "layers"},
                 {"kv_bytes_per_token_per_gpu", "per token"},
                 {"kv_bytes_per_sequence_per_gpu", "per sequence"}};
    for (std::uint32_t st = 0; st < layout.pp(); ++st) {
        const Shard s = layout.stage(st);
        const std::uint32_t end = std::min(s.end_layer, m.num_layers());
        t.rows.push_back({cell_count(st, ""), cell_count(s.first_layer, ""),
                          cell_count(end - s.first_layer, ""), cell(kv_bytes_per_token(m, f, s)),
                          cell(kv_bytes_per_sequence(m, f, tokens, s))});
    }
    return t;
}

WeightOptions weight_options(const CommonOptions& o, const Model& m) {
    if (const auto w = parse_weights(o)) return *w;
    return checkpoint_weights(m);
}

void append_weight_figures(Report& r, const ResolvedModel& rm, const CommonOptions& o,
                           const LayoutInput& li) {
    const Model& m = rm.get();
    const WeightOptions w = weight_options(o, m);
    const Layout layout = make_layout(m, li);
    const WeightBytes whole = weight_bytes(m, w);
    const Bytes per_gpu = max_weight_bytes_per_rank(m, layout, w);
    const std::uint64_t params = total_params(m);
    const std::string fmt_in = fmt::format(
        "weight format {} for the blocks' linear layers{}; embedding, LM head, norms and router "
        "16-bit",
        describe_weights(w),
        o.weight_dtype.empty() && o.expert_dtype.empty()
            ? fmt::format(" (the checkpoint's: {})", m.config().checkpoint.source)
            : " (--weight-dtype)");
    r.figures.push_back(
        {"weight_bytes",
         "Weights, whole model",
         cell(whole.total()),
         cell_exact(whole.total()),
         {"sum over tensors of rows x cols x bits per weight / 8, scales included",
          {"model: " + rm.source, fmt::format("{} parameters", grouped(params)), fmt_in,
           fmt::format(
               "attention {} B, MLP {} B, routed experts {} B, embedding {} B, LM head {} B",
               grouped(whole.attention.count()), grouped(whole.dense_mlp.count()),
               grouped(whole.routed_experts.count()), grouped(whole.embedding.count()),
               grouped(whole.lm_head.count()))}}});
    r.figures.push_back(
        {"weight_bytes_per_gpu",
         "Weights, fullest GPU",
         cell(per_gpu),
         cell_exact(per_gpu),
         {"the largest over ranks of the tensors (or tensor slices) each rank holds",
          {fmt::format("tp {}: column-parallel matrices split their rows, row-parallel ones their "
                       "columns, vocabulary padded to 64 (vLLM's linear.py)",
                       li.tp),
           fmt::format("pp {}: the first stage holds the embedding, the last the LM head", li.pp),
           fmt_in}}});
    r.inputs.push_back({"weight_dtype", cell_text(std::string(name(w.format)))});
    r.inputs.push_back({"params", cell_count(params, "")});
}

}  // namespace kvplan::cli
