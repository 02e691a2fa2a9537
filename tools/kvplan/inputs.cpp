#include "inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <kvplan/detail/nearest.hpp>
#include <kvplan/error.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plain_decoder.hpp>
#include <kvplan/presets.hpp>
#include <string>

#include "parse.hpp"
#include "replica.hpp"

namespace kvplan::cli {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

const Model* find_preset(std::string_view id) {
    for (const Model* m : presets::all)
        if (lower(std::string_view(m->name())) == lower(id)) return m;
    return nullptr;
}

}  // namespace

std::string bundled_source(const Context& ctx, const std::filesystem::path& file) {
    std::error_code ec;
    const fs::path rel = fs::relative(file, ctx.config_dir, ec);
    return "bundled " + (ec || rel.empty() ? file : rel).generic_string();
}

HfImportOptions import_options(const CommonOptions& o) {
    // vLLM's MambaDType spellings, and ours; "auto" keeps the importer's default.
    const auto bytes_of = [](const std::string& text, std::string_view flag) -> std::uint32_t {
        const std::string t = lower(text);
        if (t == "auto") return 0;
        if (t == "float32" || t == "fp32") return 4;
        if (t == "float16" || t == "fp16" || t == "bfloat16" || t == "bf16") return 2;
        usage_error(flag, "auto, bfloat16, float16 or float32", text);
    };
    HfImportOptions import;
    if (const std::uint32_t b = bytes_of(o.mamba_cache_dtype, "--mamba-cache-dtype"); b != 0)
        import.state_element_bytes = b;
    import.ssm_state_element_bytes = bytes_of(o.mamba_ssm_cache_dtype, "--mamba-ssm-cache-dtype");
    import.model_type = o.model_type;
    return import;
}

namespace {

/// The model --layers, --hidden-size ... describe (kvplan/plain_decoder.hpp).
ResolvedModel inline_model(const InlineModel& m) {
    const auto count = [](const std::string& text, std::string_view flag) -> std::uint64_t {
        return text.empty() ? 0 : parse_count(text, flag);
    };
    const auto u32 = [&](const std::string& text, std::string_view flag) {
        const std::uint64_t v = count(text, flag);
        if (v > 0xFFFF'FFFFULL) usage_error(flag, "at most 4294967295", text);
        return static_cast<std::uint32_t>(v);
    };
    PlainDecoder p;
    p.name = "inline";
    p.num_hidden_layers = u32(m.layers, "--layers");
    p.hidden_size = count(m.hidden_size, "--hidden-size");
    p.num_attention_heads = u32(m.heads, "--heads");
    p.num_key_value_heads = u32(m.kv_heads, "--kv-heads");
    p.head_dim = u32(m.head_dim, "--head-dim");
    p.vocab_size = count(m.vocab, "--vocab");
    p.intermediate_size = count(m.intermediate_size, "--intermediate-size");
    p.num_experts = u32(m.experts, "--experts");
    p.num_experts_per_tok = u32(m.experts_per_token, "--experts-per-token");
    p.moe_intermediate_size = count(m.expert_intermediate_size, "--expert-intermediate-size");
    p.sliding_window = count(m.window, "--window");
    p.max_position_embeddings =
        m.max_position_embeddings.empty()
            ? 0
            : parse_tokens(m.max_position_embeddings, "--max-position-embeddings");
    // A size that is missing or impossible is the flag's error, exit 2.
    for (const auto& [flag, value] : std::initializer_list<std::pair<const char*, std::uint64_t>>{
             {"--layers", p.num_hidden_layers},
             {"--hidden-size", p.hidden_size},
             {"--heads", p.num_attention_heads},
             {"--vocab", p.vocab_size}})
        if (value == 0) usage_error(flag, "a whole number >= 1 (the model's sizes need it)", "");
    try {
        ResolvedModel r{"inline", "the inline sizes (--layers, --hidden-size ...)",
                        Model{plain_decoder_config(p)}};
        r.notes.push_back("a plain decoder from its sizes: full attention" +
                          std::string(p.sliding_window != 0 ? " in a sliding window" : "") +
                          ", a gated MLP, RMS norms, no biases; weights bf16");
        return r;
    } catch (const InvalidModel& e) {
        // The model's own check names the config field; say which flag sets it.
        throw UsageError(std::string("model sizes: ") + e.what() +
                         " (--layers --hidden-size --heads --kv-heads --head-dim --vocab "
                         "--intermediate-size --experts --experts-per-token --window)");
    }
}

}  // namespace

ResolvedModel resolve_model_flags(const CommonOptions& o, const Context& ctx,
                                  const HfImportOptions& import) {
    const bool sized = o.inline_model.given();
    if (sized && !o.model.empty())
        usage_error("--model", "either a model or its sizes (--layers ...), not both", o.model);
    if (sized && !o.model_type.empty())
        usage_error("--model-type", "a config.json to import (--model), not inline sizes",
                    o.model_type);
    if (sized) return inline_model(o.inline_model);
    if (o.model.empty())
        usage_error("--model", "a model id, a config.json, or the model's sizes (--layers ...)",
                    "");
    return resolve_model(o.model, ctx, "--model", import);
}

ResolvedModel resolve_model(const std::string& arg, const Context& ctx, std::string_view flag,
                            const HfImportOptions& import) {
    if (arg.empty()) usage_error(flag, "a model id or a path to a config.json", arg);
    std::error_code ec;
    const fs::path p{arg};
    // A path that exists wins; then a bundled config.json; then a built-in preset.
    if (fs::exists(p, ec) || p.extension() == ".json" || arg.find('/') != std::string::npos) {
        fs::path file = p;
        if (fs::is_directory(file, ec)) file /= "config.json";
        HfImport m = import_hf_config(p, import);
        return {arg, file.string(), std::move(m.model), std::move(m.notes)};
    }
    if (const auto file = find_bundled_model(ctx.config_dir, arg)) {
        HfImport m = import_bundled_model(ctx.config_dir, arg, import);
        return {arg, bundled_source(ctx, *file), std::move(m.model), std::move(m.notes)};
    }
    if (const Model* m = find_preset(arg))
        return {arg, "built-in preset " + std::string(m->name()) + " (kvplan/presets.hpp)", *m};
    // The ids listed stop at 600 characters (messages are cut at 1023, and what was found must
    // show); with a near id the list gives way to it.
    std::string ids;
    std::vector<std::string> known;
    std::size_t more = 0;
    for (const ModelListing& l : bundled_models(ctx)) {
        if (ids.size() <= 600)
            ids += (ids.empty() ? "" : ", ") + l.id;
        else
            ++more;
        known.push_back(l.id);
    }
    if (more != 0) ids += " and " + std::to_string(more) + " more (kvplan list models)";
    const std::string near = detail::did_you_mean(arg, known);
    detail::throw_field_error<InvalidInput>(std::string(flag), "model",
                                            "a bundled model id (" +
                                                (near.empty() ? ids : "kvplan list models") +
                                                ") or a path to a config.json",
                                            "'" + arg + "'" + near);
}

std::vector<ModelListing> bundled_models(const Context& ctx) {
    std::vector<ModelListing> out;
    for (const std::string& id : bundled_model_ids(ctx.config_dir))
        out.push_back({id, bundled_source(ctx, models_dir(ctx.config_dir) / (id + ".json"))});
    for (const Model* m : presets::all) {
        const std::string id = lower(std::string_view(m->name()));
        if (!find_bundled_model(ctx.config_dir, id)) out.push_back({id, "built-in preset"});
    }
    return out;
}

LayoutInput parse_layout(const CommonOptions& o) {
    // Each degree was read as CLI11 parsed it (options.cpp: 1 to 65536); what is left is how they
    // combine.
    LayoutInput l;
    constexpr std::uint64_t max_ranks = 1U << 16;
    l.tp = o.tp.value_or(1);
    l.pp = o.pp.value_or(1);
    l.dp = o.dp.value_or(1);
    l.dcp = o.dcp.value_or(1);
    if (o.enable_expert_parallel && o.ep)
        usage_error("--enable-expert-parallel",
                    "either it (vLLM: the experts over every dp x tp GPU) or --ep N", "both");
    l.ep = o.enable_expert_parallel ? l.dp * l.tp : o.ep.value_or(1);
    if (o.redundant_experts) l.redundant_experts = *o.redundant_experts;
    // The GPUs a replica takes are the engine's rule (engine/parallel.hpp).
    const std::uint64_t per_replica =
        replica_gpus(o.engine.value_or(Engine::vllm), l.tp, l.pp, l.dp);
    const bool dp_adds_gpus = per_replica != std::uint64_t{l.tp} * l.pp;
    if (per_replica > max_ranks)
        usage_error(dp_adds_gpus ? "--dp" : "--tp", "a replica of at most 65536 GPUs",
                    std::to_string(per_replica));
    if (!o.gpus) {
        l.gpus = static_cast<std::uint32_t>(per_replica);
    } else {
        const std::uint32_t g = *o.gpus;
        if (g % per_replica != 0)
            usage_error(
                "--gpus",
                fmt::format("a multiple of {} = {} (each replica takes that many GPUs)",
                            dp_adds_gpus && l.dp > 1 ? "dp x tp x pp" : "tp x pp", per_replica),
                std::to_string(g));
        l.gpus = g;
    }
    l.replicas = static_cast<std::uint32_t>(l.gpus / per_replica);
    return l;
}

Layout make_layout(const Model& m, const LayoutInput& l) {
    ParallelConfig p;
    p.tp = l.tp;
    p.pp = l.pp;
    return Layout(m, p);
}

std::string served_model(const ResolvedModel& m, const Context& ctx) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path given(m.id);
    if (fs::is_directory(given, ec)) return m.id;
    if (fs::is_regular_file(given, ec))
        return given.has_parent_path() ? given.parent_path().string() : std::string(".");
    // The bundled table's rows read "| id | repo | ...".
    std::ifstream table(ctx.config_dir / "models" / "README.md");
    const std::string row = "| " + m.id + " | ";
    for (std::string line; std::getline(table, line);)
        if (line.rfind(row, 0) == 0) {
            const std::size_t end = line.find(" |", row.size());
            if (end != std::string::npos) return line.substr(row.size(), end - row.size());
        }
    return m.id;
}

std::string display_name(const ResolvedModel& m) {
    return m.get().name().empty() ? m.id : std::string(m.get().name());
}

}  // namespace kvplan::cli
