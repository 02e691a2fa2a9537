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

#include "../detail/checked.hpp"
#include "../error.hpp"
#include "../json.hpp"
#include "../model.hpp"
#include "../plain_decoder.hpp"
#include "../units.hpp"
#include "checkpoint.hpp"
#include "context_limit.hpp"
#include "deci.hpp"
#include "deepseek_v4.hpp"
#include "families.hpp"
#include "fields.hpp"
#include "import.hpp"
#include "kimi_linear.hpp"
#include "layer_kinds.hpp"
#include "minimax_m3.hpp"
#include "moe.hpp"
#include "options.hpp"
#include "quant_modules.hpp"
#include "recurrent.hpp"
#include "state_space.hpp"
#include "vision.hpp"

namespace kvplan {

namespace detail::hf {

/// A Model from `c`, its validation failures named after `source`.
[[nodiscard]] inline Model validated(const ModelConfig& c, std::string_view source) {
    try {
        return Model{c};
    } catch (const InvalidModel& e) {
        throw InvalidInput(std::string(source) + ": " + e.what());
    }
}

/// A config with neither model_type nor architectures, through plain_decoder_config.
[[nodiscard]] inline Model plain_from_json(const JsonReader& r, std::string_view name) {
    PlainDecoder p;
    p.name = name;
    p.num_hidden_layers = u32(size_field(r, {"num_hidden_layers"}, max_layers));
    p.hidden_size = size_field(r, {"hidden_size"}, ~0ULL);
    p.num_attention_heads = u32(size_field(r, {"num_attention_heads"}));
    p.num_key_value_heads =
        u32(r.optional_positive_integer("num_key_value_heads", u32_max).value_or(0));
    p.head_dim = u32(r.optional_positive_integer("head_dim", u32_max).value_or(0));
    p.vocab_size = r.positive_integer("vocab_size");
    p.intermediate_size = r.optional_positive_integer("intermediate_size").value_or(0);
    if (const auto k = r.first_present({"num_local_experts", "num_experts", "n_routed_experts"})) {
        p.num_experts = u32(r.positive_integer(*k, u32_max));
        p.num_experts_per_tok = u32(r.positive_integer("num_experts_per_tok", p.num_experts));
        p.moe_intermediate_size = r.optional_positive_integer("moe_intermediate_size").value_or(0);
    }
    p.sliding_window = r.optional_positive_integer("sliding_window").value_or(0);
    p.max_position_embeddings = r.optional_positive_integer("max_position_embeddings").value_or(0);
    p.tie_word_embeddings = r.optional_boolean("tie_word_embeddings").value_or(false);
    if (p.num_experts == 0 && p.intermediate_size == 0)
        r.fail("intermediate_size", "a positive integer (the MLP's width)",
               "nothing (the field is missing)");
    try {
        return plain_decoder(p);
    } catch (const InvalidModel& e) {
        throw InvalidInput(r.source() + ": " + e.what());
    }
}

/// The widths of `key`: one number, or one per layer that must all agree (Gemma-3n's
/// intermediate_size).
[[nodiscard]] inline std::uint64_t uniform_width(const JsonReader& r, std::string_view key) {
    const Json* v = r.find(key);
    if (v == nullptr || !v->is_array()) return r.positive_integer(key, ~0ULL);
    const std::vector<std::uint64_t> widths =
        r.optional_count_array(key).value_or(std::vector<std::uint64_t>{});
    if (widths.empty()) r.fail(key, "a width, or one per layer", "an empty array");
    for (std::size_t i = 0; i < widths.size(); ++i)
        if (widths[i] != widths[0] || widths[i] == 0)
            r.fail(JsonReader::element(key, i),
                   "the same width on every layer (" + std::to_string(widths[0]) +
                       "): kvplan sizes one dense MLP width",
                   std::to_string(widths[i]));
    return widths[0];
}

/// Gemma-3n's parameters beyond a Gemma-3 layer (transformers' Gemma3nTextModel): the per-layer
/// embedding table (vocab_size_per_layer_input x layers x hidden_size_per_layer_input) and its
/// projection and norm, AltUp's (altup_num_inputs - 1) input and output projections, and per
/// layer AltUp (output scale, correction and prediction coefficients, router and its norm),
/// Laurel (two rank-laurel_rank projections and a norm), the per-layer input gate and projection
/// and its norm. v_norm has no weights.
[[nodiscard]] inline std::uint64_t gemma3n_extras(const JsonReader& r, std::uint32_t n,
                                                  std::uint64_t hidden) {
    const std::uint64_t per_layer = r.positive_integer("hidden_size_per_layer_input", u32_max);
    const std::uint64_t per_layer_vocab = r.positive_integer("vocab_size_per_layer_input", u32_max);
    const std::uint64_t alt = r.positive_integer("altup_num_inputs", 64);
    const std::uint64_t rank = r.positive_integer("laurel_rank", u32_max);
    const std::uint64_t all = times(n, per_layer);
    const std::uint64_t layer =
        sum({hidden, times(alt, alt), times(alt, times(alt, alt)), times(hidden, alt), hidden,
             times(2, times(hidden, rank)), hidden, times(2, times(hidden, per_layer)), hidden});
    return sum({times(per_layer_vocab, all), times(hidden, all), per_layer,
                times(2, times(alt - 1, times(hidden, hidden))), times(n, layer)});
}

/// A parsed config.json as a Model, its checkpoint format read from quantization_config as a
/// whole (checkpoint_format); import_hf_json then reads it module by module.
[[nodiscard]] HfImport import_layers(const Json& root, std::string_view source,
                                     std::string_view name, const HfImportOptions& options) {
    const JsonReader top(root, std::string(source));
    const std::optional<JsonReader> text_config = top.optional_object("text_config");
    const JsonReader& r = text_config ? *text_config : top;
    std::vector<std::string> notes;
    const Family f = family_of(top, r, options.model_type, notes);
    if (f == Family::plain) return {plain_from_json(r, name.empty() ? source : name), notes};

    ModelConfig c;
    c.name = name.empty() ? source : name;

    const bool attention_free = f == Family::mamba || f == Family::mamba2;
    // Newer NemotronHConfig files (Nemotron-3 Ultra) give the layers as layers_block_type alone.
    const Json* block_types =
        f == Family::nemotron_h ? r.optional_array("layers_block_type") : nullptr;
    const std::uint32_t n = block_types != nullptr && !r.contains("num_hidden_layers")
                                ? u32(block_types->size())
                                : u32(size_field(r, {"num_hidden_layers", "n_layer"}, max_layers));
    const std::uint64_t heads =
        attention_free ? 0 : size_field(r, {"num_attention_heads", "n_head"});
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
    // The model_type SGLang's dtype rule reads (hf_text_config's, engine/load_dtype.hpp).
    c.checkpoint.gemma = r.optional_string("model_type")
                             .value_or(top.optional_string("model_type").value_or(""))
                             .rfind("gemma", 0) == 0;
    c.context_limit = context_limit_of(
        r, f == Family::gemma3 || f == Family::falcon ? c.max_position_embeddings : 0,
        f == Family::gemma3);

    // Families made of one mixer or one MLP per block.
    if (attention_free || f == Family::nemotron_h) {
        // MambaConfig and FalconMambaConfig leave tie_word_embeddings to PretrainedConfig (true);
        // Mamba2Config and NemotronHConfig default it to false.
        c.tie_embeddings = r.optional_boolean("tie_word_embeddings").value_or(f == Family::mamba);
        c.extra_params = read_state_space(r, f, n, c, options, notes);
        return {validated(c, source), notes};
    }

    if (f == Family::deepseek_v4) {
        // One KV head of head_dim, no biases, gated MLPs, RMSNorm: its own reader.
        c.tie_embeddings = r.optional_boolean("tie_word_embeddings").value_or(false);
        if (r.optional_boolean("attention_bias").value_or(false))
            r.fail("attention_bias", "false (DeepSeek-V4's projections have no biases)", "true");
        read_deepseek_v4(r, n, c);
        if (const auto mtp = r.optional_count("num_nextn_predict_layers", u32_max);
            mtp && *mtp > 0) {
            c.mtp_layers = static_cast<std::uint32_t>(*mtp);
            // vLLM's DeepSeek-V4 MTP loader (vllm/models/deepseek_v4/nvidia/mtp.py) gives each
            // draft layer the checkpoint's top-level head.weight and embed.weight.
            c.checkpoint.mtp_shares_embeddings = true;
            notes.push_back("num_nextn_predict_layers " + std::to_string(*mtp) +
                            ": the multi-token-prediction layers are not counted (vLLM loads "
                            "them only as a speculative draft: --speculative-method mtp)");
        }
        notes.push_back(
            "DeepSeek-V4: every layer keeps its last " + std::to_string(c.layers[0].window) +
            " latents; compress_ratios 4 and 128 add a compressed pool (with an indexer key at "
            "4) and the compressors' fp32 state; vLLM runs it only in fp8_ds_mla "
            "(--kv-cache-dtype fp8_ds_mla)");
        return {validated(c, source), notes};
    }

    if (f == Family::kimi_linear) {
        c.tie_embeddings = r.optional_boolean("tie_word_embeddings").value_or(false);
        c.extra_params = read_kimi_linear(r, n, c, options);
        notes.push_back(
            "Kimi Linear: the KDA layers keep a fixed state per sequence (short "
            "convolutions of q, k and v and a heads x head_dim x head_dim recurrent "
            "state); the MLA layers one latent per token");
        // Kimi-K3's wrapper: its MoonViT3d tower, counted apart.
        if (const auto vision = top.optional_object("vision_config")) {
            if (const auto v = kimi_k3_vision(*vision, hidden)) {
                c.vision_params = *v;
                notes.push_back("vision tower and projector: " + std::to_string(*v) +
                                " parameters, counted apart from the language model");
            } else {
                notes.push_back("vision_config: a vision tower kvplan does not count");
            }
        }
        return {validated(c, source), notes};
    }

    // Families.
    const bool gemma = f == Family::gemma || f == Family::gemma2 || f == Family::gemma3 ||
                       f == Family::gemma3n || f == Family::gemma4;
    const bool layer_norm = f == Family::falcon || f == Family::gpt_neox || f == Family::gptj;
    c.norm = layer_norm ? NormKind::layer : NormKind::rms;
    c.mlp = layer_norm ? MlpKind::plain : MlpKind::gated;
    // Llama-4's use_qk_norm is an L2 norm without weights; GLM-4.5's q_norm and k_norm have them.
    c.qk_norm = f == Family::qwen3 || f == Family::qwen3_moe || gated_delta_net_family(f) ||
                f == Family::gemma3 || f == Family::qwen3_vl || f == Family::qwen3_vl_moe ||
                f == Family::gemma3n || f == Family::gemma4 ||
                (f == Family::glm4_moe && r.optional_boolean("use_qk_norm").value_or(false));
    c.norms_per_layer = f == Family::gemma2 || f == Family::gemma3 || f == Family::gemma3n ? 4 : 2;
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
        // Checked here, where it is derived: the layers hold it in 32 bits.
        if (head_dim > u32_max)
            r.fail("hidden_size",
                   "at most " + std::to_string(u32_max) + " x the " + std::to_string(heads) +
                       " heads (hidden_size / heads is the head_dim, a 32-bit size)",
                   std::to_string(hidden));
    }
    // The share of a head RoPE rotates, at the top or in rope_parameters: vLLM's get_rope takes
    // int(head_size x partial_rotary_factor) (rotary_embedding/__init__.py); it sizes the cos/sin
    // table (engine/startup.hpp). A factor of 1 or more is the whole head.
    {
        std::optional<double> partial = r.optional_positive_number("partial_rotary_factor");
        if (!partial)
            if (const std::optional<JsonReader> rp = r.optional_object("rope_parameters"))
                partial = rp->optional_positive_number("partial_rotary_factor");
        if (partial && *partial < 1.0 && head_dim != 0)
            c.rotary_dim =
                u32(static_cast<std::uint64_t>(static_cast<double>(head_dim) * *partial));
    }
    // Gemma-3's rope tables (models/gemma3.py). Its context limit ignores the rope scaling, but
    // the global layers' get_rope takes it over max_position_embeddings, so linear x 8 builds
    // 1,048,576 positions; the sliding layers build their own, unscaled, with
    // rope_local_base_freq (10,000 by Gemma3TextConfig's default against rope_theta's
    // 1,000,000), a second table (engine/startup.hpp, vllm_rotary_table_bytes). Newer configs
    // give both under rope_parameters, keyed by layer type.
    if (f == Family::gemma3) {
        std::optional<JsonReader> global = r.optional_object("rope_scaling");
        if (!global)
            if (const std::optional<JsonReader> rp = r.optional_object("rope_parameters"))
                global = rp->has("full_attention") ? rp->optional_object("full_attention") : rp;
        c.rotary_positions = rotary_table_positions_of(global, c.max_position_embeddings);
        c.local_rotary_positions = c.max_position_embeddings;
    }
    // gpt-oss builds its yarn table in float32 whatever the model's dtype
    // (vllm/model_executor/models/gpt_oss.py, OAIAttention: get_rope(..., dtype=torch.float32)).
    if (f == Family::gpt_oss) c.rotary_table_element_bytes = 4;

    // MLP width.
    if (f == Family::gptj) {
        c.intermediate_size = r.optional_positive_integer("n_inner", ~0ULL)
                                  .value_or(detail::mul(4, hidden, "4 x hidden_size"));
    } else if (f == Family::falcon) {
        c.intermediate_size = r.optional_positive_integer("ffn_hidden_size", ~0ULL)
                                  .value_or(detail::mul(4, hidden, "4 x hidden_size"));
    } else if (f == Family::granite_hybrid) {
        // GraniteMoeHybrid's shared_mlp: the dense MLP of a dense model, the shared expert of an
        // MoE one.
        c.intermediate_size = r.positive_integer("shared_intermediate_size", ~0ULL);
    } else if (f == Family::deepseek || f == Family::qwen2_moe || f == Family::qwen3_moe ||
               f == Family::qwen3_next || f == Family::qwen3_5_moe || f == Family::qwen3_vl_moe) {
        c.intermediate_size = r.optional_positive_integer("intermediate_size", ~0ULL).value_or(0);
    } else if (f == Family::minimax_m2 || f == Family::deci) {
        // MiniMax-M2's intermediate_size is an expert's width and every layer routes; DeciLM's
        // widths are per layer (read_deci).
        c.intermediate_size = 0;
    } else if (f == Family::minimax_m3) {
        // MiniMax-M3's intermediate_size is an expert's width; its dense layers have their own.
        c.intermediate_size = r.positive_integer("dense_intermediate_size", ~0ULL);
    } else if (f == Family::llama4) {
        // Llama-4's dense layers are intermediate_size_mlp wide (Llama4TextConfig: 16384); its
        // intermediate_size is one expert's and the shared expert's width.
        c.intermediate_size =
            r.optional_positive_integer("intermediate_size_mlp", ~0ULL).value_or(16384);
    } else if (f == Family::gemma3n) {
        c.intermediate_size = uniform_width(r, "intermediate_size");
    } else {
        c.intermediate_size = r.positive_integer("intermediate_size", ~0ULL);
    }

    // Biases and norms per layer.
    std::uint64_t extra = 0;
    switch (f) {
        case Family::llama:
        case Family::deci: {
            // vLLM's LlamaDecoderLayer also takes `bias` (InternLM).
            const bool b = r.optional_boolean("attention_bias").value_or(false) ||
                           r.optional_boolean("bias").value_or(false);
            c.attention_bias = b ? AttentionBias::qkvo : AttentionBias::none;
            c.mlp_bias = r.optional_boolean("mlp_bias").value_or(false);
            break;
        }
        case Family::qwen2:
        case Family::qwen2_moe:
        case Family::qwen2_5_vl:
            c.attention_bias = AttentionBias::qkv;
            break;  // fixed in Qwen2
        case Family::mimo_v2_flash:
        case Family::glm4_moe:
            // vLLM's MiMoV2Attention (mimo_v2_flash.py) as Glm4MoeAttention (glm4_moe.py): qkv_proj
            // takes attention_bias, o_proj none.
            c.attention_bias = r.optional_boolean("attention_bias").value_or(false)
                                   ? AttentionBias::qkv
                                   : AttentionBias::none;
            break;
        case Family::qwen3:
        case Family::qwen3_moe:
        case Family::qwen3_next:
        case Family::qwen3_5:
        case Family::qwen3_5_moe:
        case Family::minimax_m2:
        case Family::qwen3_vl:
        case Family::qwen3_vl_moe:
        case Family::gemma:
        case Family::gemma2:
        case Family::gemma3:
        case Family::gemma3n:
        case Family::gemma4:
        case Family::llama4:
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
        // DeepSeek-V3.2's lightning indexer caches a key of index_head_dim per token beside the
        // latent (vLLM's DeepseekV32IndexerCache, deepseek_v2.py); index_topk marks V3.2.
        std::uint64_t index_dim = 0;
        if (r.has("index_topk") || r.has("index_head_dim")) {
            index_dim = r.positive_integer("index_head_dim", u32_max);
            c.mla.index_n_heads = u32(r.positive_integer("index_n_heads", u32_max));
        }
        const CacheSpec indexed = mla_latent(u32(kv_lora), u32(rope), u32(index_dim));
        const auto indexers = r.optional_string_array("indexer_types");
        if (!indexers || index_dim == 0) {
            c.layers = LayerStack::uniform(n, indexed);
        } else {
            // GLM-5.2's indexer_types: a "full" layer runs its own indexer; a "shared" layer
            // reuses the top-k of the last full one and holds neither the indexer's weights nor
            // its key cache.
            if (indexers->size() != n)
                r.fail("indexer_types", "one entry per layer (" + std::to_string(n) + ")",
                       std::to_string(indexers->size()) + " entries");
            for (std::uint32_t i = 0; i < n; ++i) {
                const std::string& t = (*indexers)[i];
                if (t != "full" && (t != "shared" || i == 0))
                    r.fail(JsonReader::element("indexer_types", i),
                           i == 0 ? "\"full\" (the first layer has no indexer to share)"
                                  : "\"full\" or \"shared\"",
                           "\"" + t + "\"");
                c.layers.append(t == "full" ? indexed : mla_latent(u32(kv_lora), u32(rope)));
            }
        }
    } else if (f == Family::deci) {
        extra += read_deci(r, n, heads, head_dim, c);
        c.head_dim = u32(head_dim);
    } else if (f == Family::minimax_m3) {
        read_minimax_m3_layers(r, n, kv_heads, head_dim, c);
    } else {
        std::vector<LayerKind> kinds = layer_kinds(r, f, n);
        if (f == Family::gemma3n) {
            // Gemma3nTextConfig: the last num_kv_shared_layers layers read the cache of the last
            // earlier layer of their type and add none (vLLM's gemma3n.py gives them a
            // kv_sharing_target_layer_name, so get_kv_cache_spec skips them).
            const std::uint64_t shared =
                r.optional_count("num_kv_shared_layers", u32_max).value_or(0);
            if (shared >= n)
                r.fail("num_kv_shared_layers", "fewer than the " + std::to_string(n) + " layers",
                       std::to_string(shared));
            for (std::uint32_t i = n - u32(shared); i < n; ++i) kinds[i] = LayerKind::shared;
        }
        const bool any_sliding = std::count(kinds.begin(), kinds.end(), LayerKind::sliding) > 0;
        const std::uint64_t window = any_sliding ? window_of(r, f) : 0;
        const bool any_chunked = std::count(kinds.begin(), kinds.end(), LayerKind::chunked) > 0;
        const std::uint64_t chunk =
            any_chunked ? r.positive_integer("attention_chunk_size", ~0ULL) : 0;
        CacheSpec full = full_attention(u32(kv_heads), u32(head_dim));
        CacheSpec sliding = sliding_window(u32(kv_heads), u32(head_dim), window);
        if (f == Family::mimo_v2_flash) {
            // MiMoV2Attention: both kinds of layer have their own KV heads and K and V head
            // sizes (v_head_dim, swa_num_key_value_heads, swa_head_dim, swa_v_head_dim); vLLM
            // caches V at its own size (FlashAttentionDiffKVBackend). The query heads must agree:
            // kvplan sizes one query projection.
            full.v_head_dim = u32(r.positive_integer("v_head_dim", u32_max));
            const std::uint64_t swa_heads = r.positive_integer("swa_num_attention_heads", u32_max);
            if (swa_heads != heads)
                r.fail("swa_num_attention_heads",
                       "num_attention_heads (" + std::to_string(heads) + ")",
                       std::to_string(swa_heads));
            const std::uint64_t swa_kv = r.positive_integer("swa_num_key_value_heads", u32_max);
            if (heads % swa_kv != 0)
                r.fail("swa_num_key_value_heads",
                       "a divisor of the " + std::to_string(heads) + " attention heads",
                       std::to_string(swa_kv));
            const std::uint64_t swa_dim = r.positive_integer("swa_head_dim", u32_max);
            if (swa_dim != head_dim)
                r.fail("swa_head_dim", "head_dim (" + std::to_string(head_dim) + ")",
                       std::to_string(swa_dim));
            sliding.kv_heads = u32(swa_kv);
            sliding.v_head_dim = u32(r.positive_integer("swa_v_head_dim", u32_max));
            // Learned attention sinks, one per query head, where the config adds them.
            const auto count = [&](LayerKind k) {
                return static_cast<std::uint64_t>(std::count(kinds.begin(), kinds.end(), k));
            };
            if (r.optional_boolean("add_swa_attention_sink_bias").value_or(false))
                extra += count(LayerKind::sliding) * heads;
            if (r.optional_boolean("add_full_attention_sink_bias").value_or(false))
                extra += count(LayerKind::full) * heads;
        }
        if (f == Family::gemma4) {
            // Gemma4DecoderLayer (gemma4.py): full layers have heads of global_head_dim and,
            // with attention_k_eq_v, num_global_key_value_heads KV heads whose V is K. vLLM
            // loads K's weights into V's slot of qkv_proj and caches V like any other layer, so
            // both the cache and the weights in memory hold V (the checkpoint has no v_proj).
            const bool k_eq_v = r.optional_boolean("attention_k_eq_v").value_or(false);
            const std::uint64_t global_dim =
                r.optional_positive_integer("global_head_dim", u32_max).value_or(head_dim);
            const std::uint64_t global_kv =
                k_eq_v ? r.optional_positive_integer("num_global_key_value_heads", u32_max)
                             .value_or(kv_heads)
                       : kv_heads;
            if (heads % global_kv != 0)
                r.fail("num_global_key_value_heads",
                       "a divisor of the " + std::to_string(heads) + " attention heads",
                       std::to_string(global_kv));
            full = full_attention(u32(global_kv), u32(global_dim));
        }
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
        for (LayerKind k : kinds) {
            switch (k) {
                case LayerKind::full:
                    c.layers.append(full);
                    break;
                case LayerKind::sliding:
                    c.layers.append(sliding);
                    break;
                case LayerKind::linear:
                    c.layers.append(linear);
                    break;
                case LayerKind::chunked:
                    c.layers.append(chunked_local(u32(kv_heads), u32(head_dim), chunk));
                    break;
                case LayerKind::shared:
                    c.layers.append(shared_cache(u32(kv_heads), u32(head_dim)));
                    break;
                case LayerKind::mlp:
                    c.layers.append(mlp_only());
                    break;
            }
        }
        c.head_dim = u32(head_dim);
        if (gated_delta_net_family(f) && r.optional_boolean("attn_output_gate").value_or(true)) {
            // Gated attention: q_proj also produces an output gate per head, doubling its width.
            const std::uint64_t full_layers =
                static_cast<std::uint64_t>(std::count(kinds.begin(), kinds.end(), LayerKind::full));
            extra = detail::add(
                extra,
                detail::mul(detail::mul(full_layers, hidden, "the output gate's weights"),
                            detail::mul(heads, head_dim, "the output gate's weights"),
                            "the output gate's weights"),
                "the output gate's weights");
        }
    }

    if (f == Family::gemma3n) extra += gemma3n_extras(r, n, hidden);
    if (f == Family::gemma4) {
        // The per-layer-embedding variants (E2B, E4B: hidden_size_per_layer_input, KV-shared
        // layers, double-wide MLPs) are not modelled.
        if (r.optional_count("hidden_size_per_layer_input").value_or(0) != 0)
            r.fail("hidden_size_per_layer_input",
                   "0 (Gemma 4's per-layer embeddings are not modelled)",
                   std::to_string(*r.optional_count("hidden_size_per_layer_input")));
        if (r.optional_count("num_kv_shared_layers", u32_max).value_or(0) != 0)
            r.fail("num_kv_shared_layers", "0 (Gemma 4's KV-shared layers are not modelled)",
                   std::to_string(*r.optional_count("num_kv_shared_layers", u32_max)));
        // Four norms a layer (input, post-attention, pre- and post-feedforward) and a
        // layer_scalar each, held in the checkpoint.
        c.norms_per_layer = 4;
        extra += n;
        if (r.optional_boolean("enable_moe_block").value_or(false)) {
            // The MoE block runs beside the dense MLP: kvplan's shared expert of
            // intermediate_size. Gemma4Router's scale (hidden) and Gemma4MoE's per_expert_scale
            // (experts), and three more norms (post_feedforward_layernorm_1 and _2,
            // pre_feedforward_layernorm_2) per layer.
            MoeShape& m = c.moe;
            m.experts = u32(r.positive_integer("num_experts", u32_max));
            m.experts_per_token = u32(r.positive_integer("top_k_experts", m.experts));
            m.expert_intermediate_size = r.positive_integer("moe_intermediate_size", ~0ULL);
            m.shared_experts = 1;
            m.shared_intermediate_size = c.intermediate_size;
            c.norms_per_layer = 7;
            extra += std::uint64_t{n} * (hidden + m.experts);
        }
    }
    if (f == Family::minimax_m2) {
        // MiniMaxM2Attention (minimax_m2.py): every layer is full attention, and with
        // qk_norm_type "per_layer" q_norm and k_norm span all the heads (heads x head_dim and
        // kv_heads x head_dim weights), not one head.
        if (const auto types = r.optional_count_array("attn_type_list"))
            for (std::size_t i = 0; i < types->size(); ++i)
                if ((*types)[i] != 1)
                    r.fail(JsonReader::element("attn_type_list", i),
                           "1 (softmax attention) on every layer", std::to_string((*types)[i]));
        if (r.optional_boolean("use_qk_norm").value_or(false)) {
            const std::string type = r.optional_string("qk_norm_type").value_or("per_layer");
            if (type != "per_layer") r.fail("qk_norm_type", "\"per_layer\"", "\"" + type + "\"");
            extra += std::uint64_t{n} * (heads + kv_heads) * head_dim;
        }
    }

    const bool moe_family =
        f == Family::mixtral || f == Family::qwen2_moe || f == Family::qwen3_moe ||
        f == Family::qwen3_next || f == Family::deepseek || f == Family::gpt_oss ||
        f == Family::granite_hybrid || f == Family::jamba || f == Family::llama4 ||
        f == Family::glm4_moe || f == Family::qwen3_vl_moe || f == Family::qwen3_5_moe ||
        f == Family::minimax_m2 || f == Family::mimo_v2_flash || f == Family::minimax_m3;
    if (moe_family) read_moe(r, f, c, extra);
    c.extra_params = extra;

    // A multimodal wrapper's vision tower, counted apart.
    if (const auto vision = top.optional_object("vision_config")) {
        const std::optional<std::uint64_t> v =
            f == Family::minimax_m3
                ? minimax_m3_vision(
                      *vision, hidden,
                      top.optional_positive_integer("projector_hidden_size", u32_max).value_or(0))
                : vision_params(*vision, f, hidden);
        if (v) {
            c.vision_params = *v;
            // Gemma 3's mm_tokens_per_image; Gemma 4's vision_soft_tokens_per_image (vLLM's
            // gemma4_mm.py puts that many image tokens between BOI and EOI).
            if (const auto t = top.optional_count("mm_tokens_per_image", u32_max))
                c.mm_tokens_per_item = *t;
            else if (const auto g = top.optional_count("vision_soft_tokens_per_image", u32_max))
                c.mm_tokens_per_item = *g;
            else if (f == Family::qwen2_5_vl || f == Family::qwen3_vl ||
                     f == Family::qwen3_vl_moe || f == Family::qwen3_5 ||
                     f == Family::qwen3_5_moe) {
                // The largest image vLLM profiles (qwen2_vl.py, get_image_size_with_most_features:
                // the processor's max_pixels, else size.longest_edge) holds max_pixels /
                // (patch x merge)^2 tokens. The published preprocessor_config.json files say
                // max_pixels 12,845,056 (Qwen2.5-VL) and longest_edge 16,777,216 (Qwen3-VL,
                // Qwen3.5): 16,384 tokens either way.
                const std::uint64_t pixels = f == Family::qwen2_5_vl ? 12'845'056 : 16'777'216;
                const std::uint64_t side =
                    vision->positive_integer("patch_size", 65'536) *
                    vision->optional_positive_integer("spatial_merge_size", 64).value_or(2);
                c.mm_tokens_per_item = std::max<std::uint64_t>(1, pixels / (side * side));
            }
            if (f == Family::qwen3_vl || f == Family::qwen3_vl_moe || f == Family::qwen3_5 ||
                f == Family::qwen3_5_moe) {
                // Qwen3_VisionTransformer's output token: the merger's out_hidden_size values
                // and as many again per deepstack merger (ModelConfig::mm_embedding_width).
                const std::uint64_t deepstack =
                    vision->optional_count_array("deepstack_visual_indexes")
                        .value_or(std::vector<std::uint64_t>{})
                        .size();
                c.mm_embedding_width =
                    detail::mul(vision->positive_integer("out_hidden_size", u32_max), 1 + deepstack,
                                "vision_config.out_hidden_size x (1 + deepstack mergers)");
            }
            notes.push_back("vision tower and projector: " + std::to_string(*v) +
                            " parameters, counted apart from the language model");
        } else {
            notes.push_back("vision_config: the vision tower of model_type \"" +
                            std::string(detail::hf::name(f)) + "\" is not counted");
        }
    }
    if (const auto mtp = r.optional_count("num_nextn_predict_layers", u32_max); mtp && *mtp > 0) {
        c.mtp_layers = static_cast<std::uint32_t>(*mtp);
        // MiMo's MTP layers (vLLM's mimo_mtp.py: token_layernorm, hidden_layernorm, input_proj,
        // a Qwen2 decoder layer, final_layernorm under model.mtp_layers) take the model's own
        // model.embed_tokens and lm_head: the checkpoint stores no copies of them, unlike
        // DeepSeek-V3's.
        if (r.optional_string("model_type").value_or("") == "mimo")
            c.checkpoint.mtp_shares_embeddings = true;
        notes.push_back("num_nextn_predict_layers " + std::to_string(*mtp) +
                        ": the multi-token-prediction layers are not counted (vLLM loads them "
                        "only as a speculative draft: --speculative-method mtp)");
    } else if (const auto q = r.optional_count("mtp_num_hidden_layers", u32_max);
               gated_delta_net_family(f) && q && *q > 0 && c.layers.num_layers != 0 &&
               c.layers[c.layers.num_layers - 1].kind == CacheKind::full_attention) {
        // Qwen3.5's MTP (vLLM's qwen3_5_mtp.py): full-attention decoder layers like its last,
        // using the model's embedding and head unless mtp_use_dedicated_embeddings.
        c.mtp_layers = static_cast<std::uint32_t>(*q);
        c.mtp_projection_split = true;  // fc: a ColumnParallelLinear
        c.checkpoint.mtp_shares_embeddings =
            !r.optional_boolean("mtp_use_dedicated_embeddings").value_or(false);
        notes.push_back("mtp_num_hidden_layers " + std::to_string(*q) +
                        ": the multi-token-prediction layers are not counted (vLLM loads them "
                        "only as a speculative draft: --speculative-method mtp)");
    } else if (f == Family::mimo_v2_flash && c.layers.num_layers != 0) {
        // MiMo-V2-Flash's config names no MTP layers, but its checkpoint holds three,
        // model.mtp.layers.{0,1,2} (the MiMo-V2-Flash example of llm-compressor,
        // examples/multimodal_vision/mimo2_flash_w8a8.py: "The checkpoint also ships 3 MTP blocks";
        // vLLM's mimo_v2_mtp.py: "MiMo-V2 checkpoints contain multiple MTP layers, but vLLM
        // currently supports only the first layer"). Each (vLLM's MiMoV2MTPLayer, SGLang's
        // mimo_v2_flash_nextn.py alike): enorm, hnorm, eh_proj 2 hidden -> hidden, a
        // sliding-window attention of the swa_* shape with its sinks where
        // add_swa_attention_sink_bias, a dense MLP of intermediate_size, final_layernorm; the
        // model's embedding and head are shared. vLLM's MiMoV2Model.load_weights skips every
        // "mtp" tensor: the model loads without them unless drafting.
        constexpr std::uint32_t mimo_v2_flash_mtp_layers = 3;
        c.mtp_layers = mimo_v2_flash_mtp_layers;
        c.mtp_draft_layers = 1;  // vLLM's and SGLang's MiMoV2MTP build one layer
        for (std::uint32_t k = 0; k < c.layers.num_specs; ++k)
            if (c.layers.specs[k].kind == CacheKind::sliding_window) c.mtp_spec = c.layers.specs[k];
        c.moe.dense_from = c.layers.num_layers;
        c.checkpoint.mtp_shares_embeddings = true;
        if (r.optional_boolean("add_swa_attention_sink_bias").value_or(false))
            c.mtp_layer_extra_params = r.positive_integer("swa_num_attention_heads", u32_max);
        notes.push_back(
            "the checkpoint's 3 multi-token-prediction layers (model.mtp.layers) are not counted "
            "(vLLM loads them only as a speculative draft, one layer: --speculative-method mtp)");
    }
    return {validated(c, source), notes};
}

}  // namespace detail::hf

/// Maps a parsed Hugging Face config.json to a Model, with notes on what the import assumed.
[[nodiscard]] HfImport import_hf_json(const Json& root, std::string_view source,
                                      std::string_view name, const HfImportOptions& options) {
    HfImport out = detail::hf::import_layers(root, source, name, options);
    const JsonReader top(root, std::string(source));
    if (!quantization_section(top)) return out;
    // Where the quantization names modules, the format of each part of each layer.
    ModelConfig c = out.model.config();
    c.checkpoint = detail::hf::checkpoint_format_by_module(top, out.model, c.checkpoint, out.notes);
    out.model = detail::hf::validated(c, source);
    return out;
}

/// Maps a parsed Hugging Face config.json to a Model (import_hf_json without its notes).
[[nodiscard]] Model model_from_hf_json(const Json& root, std::string_view source,
                                       std::string_view name, const HfImportOptions& options) {
    return import_hf_json(root, source, name, options).model;
}

/// Loads a config.json, or the config.json inside a model folder. The model is named after the
/// folder (for .../Llama-3-8B/config.json) or the file's stem. Throws InvalidInput on anything it
/// cannot read or map.
[[nodiscard]] HfImport import_hf_config(const std::filesystem::path& file_or_folder,
                                        const HfImportOptions& options) {
    std::filesystem::path file = file_or_folder;
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) file /= "config.json";
    std::string name = file.stem().string();
    if (name == "config" && file.has_parent_path() && file.parent_path().has_filename())
        name = file.parent_path().filename().string();
    Json root = read_json_file(file, JsonNumbers::python, max_config_json_bytes);
    // A ModelOpt checkpoint keeps its quantization in hf_quant_config.json beside config.json;
    // config.json's own quantization_config wins when both are there, as vLLM's get_quant_config
    // (model_executor/model_loader/weight_utils.py) reads them.
    const std::filesystem::path quant = file.parent_path() / "hf_quant_config.json";
    std::vector<std::string> notes;
    if (root.is_object() && !quantization_section(JsonReader(root, file.string())) &&
        std::filesystem::is_regular_file(quant, ec)) {
        const Json q = read_json_file(quant, JsonNumbers::python, max_config_json_bytes);
        const JsonReader qr(q, quant.string());
        const JsonReader section = qr.object("quantization");
        // Its fields' types checked here, so that a bad one is named in this file.
        (void)section.optional_string("quant_algo");
        (void)section.optional_positive_integer("group_size");
        (void)section.optional_string_array("exclude_modules");
        (void)section.optional_object("quantized_layers");
        Json merged = section.json();
        merged["quant_method"] = "modelopt";
        root["quantization_config"] = std::move(merged);
        notes.push_back("quantization read from " + quant.filename().string() +
                        " beside config.json");
    }
    HfImport out = import_hf_json(root, file.string(), name, options);
    out.notes.insert(out.notes.begin(), notes.begin(), notes.end());
    return out;
}

[[nodiscard]] Model load_hf_config(const std::filesystem::path& file_or_folder,
                                   const HfImportOptions& options) {
    return import_hf_config(file_or_folder, options).model;
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
    // Bundled file names are lower case: try the name itself before listing the folder, which
    // costs more than the rest of a `kvplan fit` call. Only a plain name is tried as a path.
    const bool plain =
        !want.empty() && want[0] != '.' && std::all_of(want.begin(), want.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                   c == '.';
        });
    std::error_code ec;
    if (std::filesystem::path file = models_dir(config_dir) / (want + ".json");
        plain && std::filesystem::is_regular_file(file, ec))
        return file;
    for (const std::string& have : bundled_model_ids(config_dir))
        if (detail::lower_ascii(have) == want) return models_dir(config_dir) / (have + ".json");
    return std::nullopt;
}

/// Loads bundled model `id`, named by its id. Throws InvalidInput listing the bundled ids when
/// there is no such model.
[[nodiscard]] HfImport import_bundled_model(const std::filesystem::path& config_dir,
                                            std::string_view id, const HfImportOptions& options) {
    const auto file = find_bundled_model(config_dir, id);
    if (!file) {
        // Appended piece by piece: GCC 12 at -O2 warns falsely (-Wrestrict, GCC bug 105651) on
        // "literal" + std::string temporaries here.
        // The list stops at 600 characters, so that the one-line message (detail::Message holds
        // 1,023) keeps what was found.
        std::string expected = "a bundled model id (";
        bool first = true;
        std::size_t left = 0;
        for (const std::string& s : bundled_model_ids(config_dir)) {
            if (expected.size() > 600) {
                ++left;
                continue;
            }
            if (!first) expected += ", ";
            expected += s;
            first = false;
        }
        if (left != 0) expected.append(" and ").append(std::to_string(left)).append(" more");
        expected += ") or a config path";
        std::string found = "\"";
        found.append(id).append("\"");
        detail::throw_field_error<InvalidInput>(models_dir(config_dir).string(), "model", expected,
                                                found);
    }
    return import_hf_json(read_json_file(*file, JsonNumbers::python, max_config_json_bytes),
                          file->string(), file->stem().string(), options);
}

[[nodiscard]] Model load_bundled_model(const std::filesystem::path& config_dir, std::string_view id,
                                       const HfImportOptions& options) {
    return import_bundled_model(config_dir, id, options).model;
}

/// A model named by a path (a config.json or a folder holding one) or a bundled id: a path that
/// exists wins.
[[nodiscard]] HfImport import_model(const std::filesystem::path& config_dir,
                                    std::string_view path_or_id, const HfImportOptions& options) {
    std::error_code ec;
    const std::filesystem::path p{std::string(path_or_id)};
    if (std::filesystem::exists(p, ec)) return import_hf_config(p, options);
    return import_bundled_model(config_dir, path_or_id, options);
}

[[nodiscard]] Model resolve_model(const std::filesystem::path& config_dir,
                                  std::string_view path_or_id, const HfImportOptions& options) {
    return import_model(config_dir, path_or_id, options).model;
}

}  // namespace kvplan
