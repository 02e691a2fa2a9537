#include "inputs.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <kvplan/detail/nearest.hpp>
#include <kvplan/error.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plain_decoder.hpp>
#include <kvplan/presets.hpp>
#include <string>

#include "parse.hpp"

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

namespace {

/// The model --layers, --hidden-size ... describe (kvplan/plain_decoder.hpp).
ResolvedModel inline_model(const InlineModel& m) {
    // The sizes were read as CLI11 parsed them (options.cpp); 0 is a size not given.
    PlainDecoder p;
    p.name = "inline";
    p.num_hidden_layers = m.layers.value_or(0);
    p.hidden_size = m.hidden_size.value_or(0);
    p.num_attention_heads = m.heads.value_or(0);
    p.num_key_value_heads = m.kv_heads.value_or(0);
    p.head_dim = m.head_dim.value_or(0);
    p.vocab_size = m.vocab.value_or(0);
    p.intermediate_size = m.intermediate_size.value_or(0);
    p.num_experts = m.experts.value_or(0);
    p.num_experts_per_tok = m.experts_per_token.value_or(0);
    p.moe_intermediate_size = m.expert_intermediate_size.value_or(0);
    p.sliding_window = m.window.value_or(0);
    p.max_position_embeddings = m.max_position_embeddings.value_or(0);
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

void refuse_flags_the_model_ignores(const CommonOptions& o, const ResolvedModel& rm) {
    const Model& m = rm.get();
    // vLLM's --expert-dtype has no counterpart; kvplan's sets the routed experts' format, which a
    // dense model does not have.
    if (o.expert_dtype && m.config().moe.experts == 0)
        usage_error("--expert-dtype",
                    "a model with routed experts (" + rm.id + " is dense: --weight-dtype sets it)",
                    name(*o.expert_dtype));
    // vLLM's mamba_cache_dtype and mamba_ssm_cache_dtype shape the state of its Mamba-like layers
    // (vllm/config/cache.py); a model without recurrent-state layers has none.
    if ((o.mamba_cache_bytes != 0 || o.mamba_ssm_cache_bytes != 0) &&
        m.layers().layers_of_kind(CacheKind::constant_state) == 0)
        usage_error(o.mamba_cache_bytes != 0 ? "--mamba-cache-dtype" : "--mamba-ssm-cache-dtype",
                    "a model with Mamba or other recurrent-state layers (" + rm.id +
                        " has none: its cache is --kv-dtype's)",
                    "set");
}

ResolvedModel resolve_model_flags(const CommonOptions& o, const Context& ctx,
                                  const HfImportOptions& import) {
    const bool sized = o.inline_model.given();
    if (sized && !o.model.empty())
        usage_error("--model", "either a model or its sizes (--layers ...), not both", o.model);
    if (sized && !o.model_type.empty())
        usage_error("--model-type", "a config.json to import (--model), not inline sizes",
                    o.model_type);
    if (!sized && o.model.empty())
        usage_error("--model", "a model id, a config.json, or the model's sizes (--layers ...)",
                    "");
    ResolvedModel rm =
        sized ? inline_model(o.inline_model) : resolve_model(o.model, ctx, "--model", import);
    refuse_flags_the_model_ignores(o, rm);
    return rm;
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
    // The bundled table's rows read "| id | repo (a note) | ...": the repo is the cell's first
    // word, the one whose weights the config describes; a note after it is for readers.
    std::ifstream table(ctx.config_dir / "models" / "README.md");
    const std::string row = "| " + m.id + " | ";
    for (std::string line; std::getline(table, line);)
        if (line.rfind(row, 0) == 0) {
            const std::size_t end = line.find_first_of(" |", row.size());
            if (end != std::string::npos && end > row.size())
                return line.substr(row.size(), end - row.size());
        }
    return m.id;
}

ResolvedGpu resolve_gpu(const std::string& arg, const Context& ctx, std::string_view flag) {
    if (arg.empty()) usage_error(flag, "a GPU id or a path to a GPU spec JSON", arg);
    std::error_code ec;
    const fs::path p{arg};
    if (p.extension() == ".json" || fs::is_regular_file(p, ec)) {
        const GpuSpecFile f = load_gpu_spec(p);  // a missing file throws InvalidInput naming it
        return {std::string(f.spec.id), f.file.string(), f.spec, f.aliases, f.memory_basis};
    }
    // An id is its file's name: read that one file rather than every spec (a CLI call stays a
    // few milliseconds). Aliases need the whole folder.
    const std::string id = lower(arg);
    const fs::path direct = ctx.config_dir / "gpus" / (id + ".json");
    if (id.find('/') == std::string::npos && fs::is_regular_file(direct, ec)) {
        const GpuSpecFile f = load_gpu_spec(direct);
        return {std::string(f.spec.id), bundled_source(ctx, f.file), f.spec, f.aliases,
                f.memory_basis};
    }
    const GpuRegistry reg = GpuRegistry::load(ctx.config_dir);
    if (const GpuSpecFile* f = reg.find_file(arg))
        return {std::string(f->spec.id), bundled_source(ctx, f->file), f->spec, f->aliases,
                f->memory_basis};
    std::string known;
    for (const std::string& id : reg.ids()) known += (known.empty() ? "" : ", ") + id;
    // With a near name the list gives way to it: messages are cut at 1023 characters.
    const std::string near = detail::did_you_mean(arg, reg.names());
    detail::throw_field_error<InvalidInput>(std::string(flag), "gpu",
                                            "a bundled GPU id or alias (" +
                                                (near.empty() ? known : "kvplan list gpus") +
                                                ") or a path to a spec JSON",
                                            "'" + arg + "'" + near);
}

std::vector<ResolvedGpu> bundled_gpus(const Context& ctx) {
    const GpuRegistry reg = GpuRegistry::load(ctx.config_dir);
    std::vector<ResolvedGpu> out;
    for (const std::string& id : reg.ids()) {
        const GpuSpecFile* f = reg.find_file(id);
        out.push_back({id, bundled_source(ctx, f->file), f->spec, f->aliases, f->memory_basis});
    }
    return out;
}

std::vector<ResolvedGpu> resolve_gpu_list(const std::string& flag, const Context& ctx) {
    if (flag.empty()) return bundled_gpus(ctx);
    std::vector<ResolvedGpu> out;
    for (const std::string& g : split_list(flag, "--gpu")) out.push_back(resolve_gpu(g, ctx));
    return out;
}

std::optional<CalibrationProfile> read_profile_flag(const CommonOptions& o) {
    if (o.profile.empty()) return std::nullopt;
    return load_profile(o.profile);
}

std::string display_name(const ResolvedModel& m) {
    return m.get().name().empty() ? m.id : std::string(m.get().name());
}

}  // namespace kvplan::cli
