#pragma once

// The definitions of hf_config/import.hpp's functions, compiled in the one translation unit that
// defines KVPLAN_HF_CONFIG_IMPLEMENTATION before including <kvplan/hf_config.hpp>: mapping a
// config is long code over nlohmann_json, and compiling it once rather than in every file that
// loads a model is what keeps <kvplan/hf_config.hpp> cheap to include (bench/compile_cost.sh).

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../json.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "checkpoint.hpp"
#include "context_limit.hpp"
#include "families.hpp"
#include "fields.hpp"
#include "import.hpp"
#include "layer_kinds.hpp"
#include "moe.hpp"
#include "options.hpp"
#include "recurrent.hpp"

namespace kvplan {

/// Maps a parsed Hugging Face config.json to a Model. `source` names the document in messages (a
/// file name); `name` becomes the model's name (the source if empty). Throws InvalidInput naming
/// the source, the JSON path, the expected and the found on anything it cannot map.
[[nodiscard]] Model model_from_hf_json(const Json& root, std::string_view source,
                                       std::string_view name, const HfImportOptions& options) {
    using namespace detail::hf;
    const JsonReader top(root, std::string(source));
    const std::optional<JsonReader> text_config = top.optional_object("text_config");
    const JsonReader& r = text_config ? *text_config : top;
    const Family f = family_of(top, r);

    ModelConfig c;
    c.name = name.empty() ? source : name;

    const std::uint32_t n = u32(size_field(r, {"num_hidden_layers", "n_layer"}, max_layers));
    const std::uint64_t heads = size_field(r, {"num_attention_heads", "n_head"});
    const std::uint64_t hidden = size_field(r, {"hidden_size", "n_embd"}, ~0ULL);
    c.num_heads = u32(heads);
    c.hidden_size = hidden;
    if (f == Family::gemma3 && !r.contains("vocab_size"))
        c.vocab_size = 262'208;  // Gemma3TextConfig's default, which the published files rely on
    else
        c.vocab_size = r.positive_integer("vocab_size");

    // Context length: the trained one, or the class default where published configs omit it.
    if (const auto k = r.first_present(
            {"max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"}))
        c.max_position_embeddings = r.positive_integer(*k, ~0ULL);
    else if (f == Family::gemma3)
        c.max_position_embeddings = 131'072;
    else if (f == Family::falcon)
        c.max_position_embeddings = 2048;
    c.checkpoint = checkpoint_format(top, r);
    c.context_limit = context_limit_of(
        r, f == Family::gemma3 || f == Family::falcon ? c.max_position_embeddings : 0,
        f == Family::gemma3);

    // Families.
    const bool gemma = f == Family::gemma || f == Family::gemma2 || f == Family::gemma3;
    const bool layer_norm = f == Family::falcon || f == Family::gpt_neox || f == Family::gptj;
    c.norm = layer_norm ? NormKind::layer : NormKind::rms;
    c.mlp = layer_norm ? MlpKind::plain : MlpKind::gated;
    c.qk_norm = f == Family::qwen3 || f == Family::qwen3_moe || f == Family::qwen3_next ||
                f == Family::gemma3;
    c.norms_per_layer = f == Family::gemma2 || f == Family::gemma3 ? 4 : 2;
    const bool tie_default = gemma || f == Family::falcon;
    c.tie_embeddings =
        r.optional_boolean("tie_word_embeddings")
            .value_or(top.optional_boolean("tie_word_embeddings").value_or(tie_default));

    // KV heads and head_dim.
    std::uint64_t kv_heads = heads;
    std::string kv_key = "num_key_value_heads";
    if (f == Family::falcon) {
        const bool new_arch = r.optional_boolean("new_decoder_architecture").value_or(false);
        if (new_arch) {
            const auto k = r.first_present({"num_kv_heads", "n_head_kv"});
            kv_key = k ? std::string(*k) : "num_kv_heads";
            kv_heads = k ? r.positive_integer(*k, u32_max) : heads;  // FalconConfig: None -> heads
        } else if (r.optional_boolean("multi_query").value_or(true)) {
            kv_heads = 1;
        }
    } else if (f == Family::gemma3 && !r.has("num_key_value_heads")) {
        r.fail("num_key_value_heads", "a positive integer (Gemma-3's class default is not MHA)",
               "nothing (the field is missing)");
    } else if (f != Family::gpt_neox && f != Family::gptj && f != Family::deepseek) {
        if (const auto kv = r.optional_positive_integer("num_key_value_heads", u32_max))
            kv_heads = *kv;
    }
    if (f != Family::deepseek && heads % kv_heads != 0)
        r.fail(kv_key, "a divisor of the " + std::to_string(heads) + " attention heads",
               std::to_string(kv_heads));

    std::uint64_t head_dim = 0;
    if (const auto hd = r.optional_positive_integer("head_dim", u32_max)) {
        head_dim = *hd;
    } else if (gemma) {
        r.fail("head_dim", "a positive integer (Gemma's head_dim is not hidden / heads)",
               "nothing (the field is missing)");
    } else if (f != Family::deepseek) {
        if (hidden % heads != 0)
            r.fail("hidden_size",
                   "a multiple of the " + std::to_string(heads) + " heads (no head_dim is given)",
                   std::to_string(hidden));
        head_dim = hidden / heads;
    }

    // MLP width.
    if (f == Family::gptj) {
        c.intermediate_size = r.optional_positive_integer("n_inner", ~0ULL).value_or(4 * hidden);
    } else if (f == Family::falcon) {
        c.intermediate_size =
            r.optional_positive_integer("ffn_hidden_size", ~0ULL).value_or(4 * hidden);
    } else if (f == Family::granite_hybrid) {
        // GraniteMoeHybrid's shared_mlp: the dense MLP of a dense model, the shared expert of an
        // MoE one.
        c.intermediate_size = r.positive_integer("shared_intermediate_size", ~0ULL);
    } else if (f == Family::deepseek || f == Family::qwen2_moe || f == Family::qwen3_moe ||
               f == Family::qwen3_next) {
        c.intermediate_size = r.optional_positive_integer("intermediate_size", ~0ULL).value_or(0);
    } else {
        c.intermediate_size = r.positive_integer("intermediate_size", ~0ULL);
    }

    // Biases and norms per layer.
    std::uint64_t extra = 0;
    switch (f) {
        case Family::llama: {
            // vLLM's LlamaDecoderLayer also takes `bias` (InternLM).
            const bool b = r.optional_boolean("attention_bias").value_or(false) ||
                           r.optional_boolean("bias").value_or(false);
            c.attention_bias = b ? AttentionBias::qkvo : AttentionBias::none;
            c.mlp_bias = r.optional_boolean("mlp_bias").value_or(false);
            break;
        }
        case Family::qwen2:
        case Family::qwen2_moe:
            c.attention_bias = AttentionBias::qkv;
            break;  // fixed in Qwen2
        case Family::qwen3:
        case Family::qwen3_moe:
        case Family::qwen3_next:
        case Family::gemma:
        case Family::gemma2:
        case Family::gemma3:
        case Family::granite_hybrid:
            c.attention_bias = r.optional_boolean("attention_bias").value_or(false)
                                   ? AttentionBias::qkvo
                                   : AttentionBias::none;
            break;
        case Family::deepseek:
            if (r.optional_boolean("attention_bias").value_or(false))
                r.fail("attention_bias", "false (biases on MLA projections are not modelled)",
                       "true");
            break;
        case Family::falcon: {
            const bool b = r.optional_boolean("bias").value_or(false);
            c.attention_bias = b ? AttentionBias::qkvo : AttentionBias::none;
            c.mlp_bias = b;
            // Falcon-40B's new architecture norms attention and MLP inputs apart (ln_attn,
            // ln_mlp); the 7B's parallel block has one input_layernorm.
            if (r.optional_boolean("new_decoder_architecture").value_or(false))
                c.norms_per_layer =
                    u32(r.optional_positive_integer("num_ln_in_parallel_attn", 8).value_or(2));
            else
                c.norms_per_layer = r.optional_boolean("parallel_attn").value_or(true) ? 1 : 2;
            break;
        }
        case Family::gpt_neox:
            c.attention_bias = r.optional_boolean("attention_bias").value_or(true)
                                   ? AttentionBias::qkvo
                                   : AttentionBias::none;
            c.mlp_bias = true;
            break;
        case Family::gptj:
            c.mlp_bias = true;      // fc_in and fc_out
            c.norms_per_layer = 1;  // ln_1 only: attention and MLP read it in parallel
            extra += c.vocab_size;  // lm_head has a bias
            break;
        case Family::gpt_oss:
            c.attention_bias = r.optional_boolean("attention_bias").value_or(true)
                                   ? AttentionBias::qkvo
                                   : AttentionBias::none;
            c.mlp_bias = true;                  // the experts' gate_up and down biases
            extra += std::uint64_t{n} * heads;  // attention sinks
            break;
        default:
            break;
    }

    // Layers.
    if (f == Family::deepseek) {
        const std::uint64_t kv_lora = r.positive_integer("kv_lora_rank", u32_max);
        const std::uint64_t rope = r.positive_integer("qk_rope_head_dim", u32_max);
        const std::uint64_t nope = r.positive_integer("qk_nope_head_dim", u32_max);
        if (!r.contains("q_lora_rank"))
            r.fail("q_lora_rank", "a rank, or null for direct query projection",
                   "nothing (the field is missing)");
        c.mla = {
            .q_lora_rank = u32(r.optional_positive_integer("q_lora_rank", u32_max).value_or(0)),
            .qk_nope_head_dim = u32(nope),
            .v_head_dim = u32(r.positive_integer("v_head_dim", u32_max))};
        // Each fits 32 bits; their sum, the query head dimension, must too (never a wrap).
        if (nope + rope > u32_max)
            r.fail("qk_rope_head_dim",
                   "qk_nope_head_dim + qk_rope_head_dim at most " + std::to_string(u32_max),
                   std::to_string(nope + rope));
        c.head_dim = u32(nope + rope);
        c.layers = LayerStack::uniform(n, mla_latent(u32(kv_lora), u32(rope)));
    } else {
        const std::vector<LayerKind> kinds = layer_kinds(r, f, n);
        const bool any_sliding = std::count(kinds.begin(), kinds.end(), LayerKind::sliding) > 0;
        const std::uint64_t window = any_sliding ? window_of(r, f) : 0;
        CacheSpec linear{};
        if (std::count(kinds.begin(), kinds.end(), LayerKind::linear) > 0) {
            const RecurrentShape shape = f == Family::granite_hybrid ? mamba2_layer(r, hidden)
                                         : f == Family::jamba        ? mamba1_layer(r, hidden)
                                                                     : gated_delta_net(r, hidden);
            // The whole layer's state; kv_bytes.hpp's layer_state_bytes splits it evenly over TP
            // ranks. That is vLLM's sharding for Gated DeltaNet and Mamba-1 (every dimension
            // split is a multiple of tp) and for Mamba-2 when tp divides mamba_n_groups. When it
            // does not, vLLM (mamba_utils.py, extra_groups_for_head_shards) replicates the groups
            // up to tp, so each rank keeps (K - 1) x 2N x (groups added) / tp values more than
            // this even split: 384 of 536,960 (0.07%) on a Granite-4.0-H-Small rank at tp 2.
            // Not modelled.
            linear = constant_state(Bytes::exactly(state_bytes(shape, options)));
            extra += detail::mul(shape.mixer_params,
                                 static_cast<std::uint64_t>(
                                     std::count(kinds.begin(), kinds.end(), LayerKind::linear)),
                                 "the recurrent mixers' parameters");
        }
        const CacheSpec full = full_attention(u32(kv_heads), u32(head_dim));
        const CacheSpec slide = sliding_window(u32(kv_heads), u32(head_dim), window);
        for (LayerKind k : kinds)
            c.layers.append(k == LayerKind::full ? full : k == LayerKind::sliding ? slide : linear);
        c.head_dim = u32(head_dim);
        if (f == Family::qwen3_next) {
            // Gated attention: q_proj also produces an output gate per head, doubling its width.
            const std::uint64_t full_layers =
                static_cast<std::uint64_t>(std::count(kinds.begin(), kinds.end(), LayerKind::full));
            extra += full_layers * hidden * heads * head_dim;
        }
    }

    const bool moe_family = f == Family::mixtral || f == Family::qwen2_moe ||
                            f == Family::qwen3_moe || f == Family::qwen3_next ||
                            f == Family::deepseek || f == Family::gpt_oss ||
                            f == Family::granite_hybrid || f == Family::jamba;
    if (moe_family) read_moe(r, f, c, extra);
    c.extra_params = extra;

    try {
        return Model{c};
    } catch (const InvalidModel& e) {
        throw InvalidInput(std::string(source) + ": " + e.what());
    }
}

/// Loads a config.json, or the config.json inside a model folder. The model is named after the
/// folder (for .../Llama-3-8B/config.json) or the file's stem. Throws InvalidInput on anything it
/// cannot read or map.
[[nodiscard]] Model load_hf_config(const std::filesystem::path& file_or_folder,
                                   const HfImportOptions& options) {
    std::filesystem::path file = file_or_folder;
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) file /= "config.json";
    std::string name = file.stem().string();
    if (name == "config" && file.has_parent_path() && file.parent_path().has_filename())
        name = file.parent_path().filename().string();
    return model_from_hf_json(read_json_file(file), file.string(), name, options);
}

/// The folder of bundled model configs: `config_dir`/models when it exists, else `config_dir`.
[[nodiscard]] std::filesystem::path models_dir(const std::filesystem::path& config_dir) {
    std::error_code ec;
    const std::filesystem::path sub = config_dir / "models";
    return std::filesystem::is_directory(sub, ec) ? sub : config_dir;
}

/// The ids of the bundled models (file names without .json, sorted).
[[nodiscard]] std::vector<std::string> bundled_model_ids(const std::filesystem::path& config_dir) {
    std::vector<std::string> ids;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(models_dir(config_dir), ec))
        if (e.is_regular_file() && e.path().extension() == ".json")
            ids.push_back(e.path().stem().string());
    std::sort(ids.begin(), ids.end());
    return ids;
}

/// The file of bundled model `id` (case-insensitive: "Llama-3-70B" finds llama-3-70b.json).
[[nodiscard]] std::optional<std::filesystem::path> find_bundled_model(
    const std::filesystem::path& config_dir, std::string_view id) {
    const std::string want = detail::lower_ascii(id);
    for (const std::string& have : bundled_model_ids(config_dir))
        if (detail::lower_ascii(have) == want) return models_dir(config_dir) / (have + ".json");
    return std::nullopt;
}

/// Loads bundled model `id`, named by its id. Throws InvalidInput listing the bundled ids when
/// there is no such model.
[[nodiscard]] Model load_bundled_model(const std::filesystem::path& config_dir, std::string_view id,
                                       const HfImportOptions& options) {
    const auto file = find_bundled_model(config_dir, id);
    if (!file) {
        // Appended piece by piece: GCC 12 at -O2 warns falsely (-Wrestrict, GCC bug 105651) on
        // "literal" + std::string temporaries here.
        std::string expected = "a bundled model id (";
        bool first = true;
        for (const std::string& s : bundled_model_ids(config_dir)) {
            if (!first) expected += ", ";
            expected += s;
            first = false;
        }
        expected += ") or a config path";
        std::string found = "\"";
        found.append(id).append("\"");
        detail::throw_field_error<InvalidInput>(models_dir(config_dir).string(), "model", expected,
                                                found);
    }
    return model_from_hf_json(read_json_file(*file), file->string(), file->stem().string(),
                              options);
}

/// A model named by a path (a config.json or a folder holding one) or a bundled id: a path that
/// exists wins.
[[nodiscard]] Model resolve_model(const std::filesystem::path& config_dir,
                                  std::string_view path_or_id, const HfImportOptions& options) {
    std::error_code ec;
    const std::filesystem::path p{std::string(path_or_id)};
    if (std::filesystem::exists(p, ec)) return load_hf_config(p, options);
    return load_bundled_model(config_dir, path_or_id, options);
}

}  // namespace kvplan
