#pragma once

// Families whose blocks are one mixer or one MLP each, not a mixer followed by an MLP:
//   Mamba and Falcon-Mamba (model_type mamba, falcon_mamba; vLLM's mamba.py): every block is
//     RMSNorm -> Mamba-1 mixer; no attention, no MLP; one final norm.
//   Mamba-2 and Codestral Mamba (mamba2; vLLM's mamba2.py): RMSNorm -> Mamba-2 mixer.
//   Nemotron-H (nemotron_h; vLLM's nemotron_h.py): hybrid_override_pattern names each block: "M"
//     a Mamba-2 mixer, "*" attention, "-" an MLP (up and down, squared ReLU), "E" a mixture of
//     experts of such MLPs with a router (and its e_score_correction_bias) and shared experts;
//     each block has one RMSNorm.
// They cache nothing per token but in attention blocks: a Mamba block keeps its conv and SSM state
// per sequence (MambaStateShapeCalculator, as for Granite-4.0-H and Jamba), an MLP block nothing.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../detail/checked.hpp"
#include "../json.hpp"
#include "../model.hpp"
#include "families.hpp"
#include "fields.hpp"
#include "options.hpp"
#include "recurrent.hpp"

namespace kvplan {

namespace detail::hf {

/// The layers, mixers and MLPs of a Mamba, Mamba-2 or Nemotron-H config into `c` (hidden_size,
/// vocabulary and embeddings already read). Returns the mixers' parameters (extra_params).
inline std::uint64_t read_state_space(const JsonReader& r, Family f, std::uint32_t n,
                                      ModelConfig& c, const HfImportOptions& options,
                                      std::vector<std::string>& notes) {
    const std::uint64_t hidden = c.hidden_size;
    c.mlp_layers = MlpLayers::mlp_only;
    c.norms_per_layer = 1;
    c.norm = NormKind::rms;
    c.mlp = MlpKind::plain;

    if (f == Family::mamba || f == Family::mamba2) {
        const RecurrentShape shape = f == Family::mamba ? mamba1_layer(r, hidden, plain_mamba1)
                                                        : mamba2_layer(r, hidden, plain_mamba2);
        c.layers =
            LayerStack::uniform(n, constant_state(Bytes::exactly(state_bytes(shape, options))));
        return detail::mul(shape.mixer_params, n, "the recurrent mixers' parameters");
    }

    // Nemotron-H.
    // The layers: hybrid_override_pattern, one character per block, or (newer NemotronHConfig
    // files: Nemotron-3 Ultra, Nemotron-3.5) layers_block_type, one name per block, which
    // NemotronHConfig maps to the same characters.
    std::string pattern;
    if (const auto types = r.optional_string_array("layers_block_type")) {
        for (std::size_t i = 0; i < types->size(); ++i) {
            const std::string& t = (*types)[i];
            const char ch = t == "mamba"       ? 'M'
                            : t == "attention" ? '*'
                            : t == "mlp"       ? '-'
                            : t == "moe"       ? 'E'
                                               : '\0';
            if (ch == '\0')
                r.fail(JsonReader::element("layers_block_type", i),
                       "\"mamba\", \"attention\", \"mlp\" or \"moe\"", "\"" + t + "\"");
            pattern += ch;
        }
        if (r.has("hybrid_override_pattern") && r.string("hybrid_override_pattern") != pattern)
            r.fail("hybrid_override_pattern",
                   "the blocks layers_block_type lists (\"" + pattern + "\")",
                   "\"" + r.string("hybrid_override_pattern") + "\"");
        if (pattern.size() != n)
            r.fail("layers_block_type", "one entry per layer (" + std::to_string(n) + ")",
                   std::to_string(pattern.size()) + " entries");
    } else {
        pattern = r.string("hybrid_override_pattern");
        if (pattern.size() != n)
            r.fail("hybrid_override_pattern", "one character per layer (" + std::to_string(n) + ")",
                   std::to_string(pattern.size()) + " characters");
    }
    const bool dense_mlp = pattern.find('-') != std::string::npos;
    const bool moe_mlp = pattern.find('E') != std::string::npos;
    if (dense_mlp && moe_mlp)
        r.fail("hybrid_override_pattern",
               "MLP blocks all dense (\"-\") or all mixtures of experts (\"E\"), as kvplan sizes "
               "one MLP shape",
               "both");
    const std::uint64_t heads = c.num_heads;
    std::uint64_t head_dim = 0;
    if (pattern.find('*') != std::string::npos) {
        const auto hd = r.first_present({"head_dim", "attention_head_dim"});
        head_dim = hd ? r.positive_integer(*hd, u32_max) : hidden / heads;
    }
    const std::uint64_t kv_heads =
        r.optional_positive_integer("num_key_value_heads", u32_max).value_or(heads);
    if (heads == 0 || heads % kv_heads != 0)
        r.fail("num_key_value_heads",
               "a divisor of the " + std::to_string(heads) + " attention heads",
               std::to_string(kv_heads));
    CacheSpec mamba{};
    std::uint64_t mixers = 0;
    if (pattern.find('M') != std::string::npos) {
        // vLLM keeps Nemotron-H's SSM state in the config's mamba_ssm_cache_dtype, float32 when
        // it has none, unless --mamba-ssm-cache-dtype says otherwise
        // (NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype,
        // vllm/model_executor/models/config.py).
        HfImportOptions o = options;
        if (o.ssm_state_element_bytes == 0) {
            const std::string dtype =
                r.optional_string("mamba_ssm_cache_dtype").value_or("float32");
            o.ssm_state_element_bytes = dtype == "float32"                          ? 4
                                        : dtype == "float16" || dtype == "bfloat16" ? 2
                                                                                    : 0;
            if (o.ssm_state_element_bytes == 0)
                r.fail("mamba_ssm_cache_dtype", "\"float32\", \"bfloat16\" or \"float16\"",
                       "\"" + dtype + "\"");
            notes.push_back("SSM state in " + dtype + " (" +
                            std::to_string(o.ssm_state_element_bytes) +
                            " B per value), as vLLM keeps Nemotron-H's by default");
        }
        const RecurrentShape shape = mamba2_layer(r, hidden, nemotron_mamba2);
        mamba = constant_state(Bytes::exactly(state_bytes(shape, o)));
        mixers =
            detail::mul(shape.mixer_params,
                        static_cast<std::uint64_t>(std::count(pattern.begin(), pattern.end(), 'M')),
                        "the recurrent mixers' parameters");
    }
    for (std::uint32_t i = 0; i < n; ++i) {
        switch (pattern[i]) {
            case 'M':
                c.layers.append(mamba);
                break;
            case '*':
                c.layers.append(full_attention(u32(kv_heads), u32(head_dim)));
                break;
            case '-':
            case 'E':
                c.layers.append(mlp_only());
                break;
            default:
                r.fail("hybrid_override_pattern[" + std::to_string(i) + "]",
                       "\"M\" (Mamba-2), \"*\" (attention), \"-\" (MLP) or \"E\" (MoE)",
                       std::string("\"") + pattern[i] + "\"");
        }
    }
    c.head_dim = u32(head_dim);
    c.attention_bias = r.optional_boolean("attention_bias").value_or(false) ? AttentionBias::qkvo
                                                                            : AttentionBias::none;
    c.mlp_bias = r.optional_boolean("mlp_bias").value_or(false);
    if (dense_mlp) c.intermediate_size = r.positive_integer("intermediate_size", ~0ULL);
    if (moe_mlp) {
        MoeShape& m = c.moe;
        m.experts = u32(r.positive_integer("n_routed_experts", u32_max));
        m.experts_per_token = u32(r.positive_integer("num_experts_per_tok", m.experts));
        m.expert_intermediate_size = r.positive_integer("moe_intermediate_size", ~0ULL);
        m.shared_experts = u32(r.optional_count("n_shared_experts", u32_max).value_or(0));
        if (m.shared_experts != 0)
            m.shared_intermediate_size =
                detail::mul(r.positive_integer("moe_shared_expert_intermediate_size", ~0ULL),
                            m.shared_experts, "a shared expert width");
        m.router_bias = true;  // NemotronHTopkRouter's e_score_correction_bias
        // LatentMoE (Nemotron-3-Super): the experts work in moe_latent_size features.
        m.latent_size = r.optional_positive_integer("moe_latent_size", hidden).value_or(0);
    }
    return mixers;
}

}  // namespace detail::hf

}  // namespace kvplan
