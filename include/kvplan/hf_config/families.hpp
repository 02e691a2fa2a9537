#pragma once

// The model families the import maps, by transformers' model_type and by architectures[0].

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../json.hpp"

namespace kvplan {

namespace detail::hf {

enum class Family : std::uint8_t {
    llama,
    mistral,
    mixtral,
    phi3,
    qwen2,
    qwen2_moe,
    qwen3,
    qwen3_moe,
    qwen3_next,
    gemma,
    gemma2,
    gemma3,
    deepseek,
    falcon,
    gpt_neox,
    gptj,
    gpt_oss,
    granite_hybrid,
    jamba,
    llama4,
    glm4_moe,
    qwen2_5_vl,
    qwen3_vl,
    qwen3_vl_moe,
    gemma3n,
    nemotron_h,
    mamba,
    mamba2,
    qwen3_5,        ///< Qwen3.5 dense: Qwen3-Next's layers with a dense MLP
    qwen3_5_moe,    ///< Qwen3.5 MoE: Qwen3-Next's layers, in a vision-language wrapper
    minimax_m2,     ///< MiniMax-M2: GQA, MoE on every layer, q/k norms over all heads
    mimo_v2_flash,  ///< MiMo-V2-Flash: full and sliding layers with their own KV heads
    deci,           ///< DeciLM / Nemotron-NAS: a block_configs entry per layer
    gemma4,         ///< Gemma 4: per-layer-type KV heads and head size, MoE beside the MLP
    deepseek_v4,    ///< DeepSeek-V4: sliding latents beside compressed pools, hyper-connections
    kimi_linear,    ///< Kimi Linear: KDA recurrent layers beside MLA, DeepSeek-V3's MoE
    minimax_m3,     ///< MiniMax-M3: GQA, an indexer key beside K and V on its block-sparse layers
    plain,          ///< no model_type nor architectures: the plain decoder of plain_decoder.hpp
};

struct NamedFamily {
    std::string_view name;
    Family family;
};

// transformers' model_type values this importer maps: the one table that names a Family (its
// first entry) and parses one. Where it follows vLLM, the vLLM model file is named.
inline constexpr std::array model_types{
    NamedFamily{"llama", Family::llama},
    NamedFamily{"mistral", Family::mistral},
    NamedFamily{"mixtral", Family::mixtral},
    NamedFamily{"phi3", Family::phi3},
    NamedFamily{"qwen2", Family::qwen2},
    NamedFamily{"qwen2_moe", Family::qwen2_moe},
    NamedFamily{"qwen3", Family::qwen3},
    NamedFamily{"qwen3_moe", Family::qwen3_moe},
    NamedFamily{"qwen3_next", Family::qwen3_next},
    NamedFamily{"gemma", Family::gemma},
    NamedFamily{"gemma2", Family::gemma2},
    NamedFamily{"gemma3", Family::gemma3},
    NamedFamily{"gemma3_text", Family::gemma3},
    NamedFamily{"deepseek_v3", Family::deepseek},
    NamedFamily{"deepseek_v2", Family::deepseek},
    NamedFamily{"deepseek_v32", Family::deepseek},  // deepseek_v2.py, with the V3.2 indexer
    NamedFamily{"falcon", Family::falcon},
    NamedFamily{"RefinedWeb", Family::falcon},
    NamedFamily{"RefinedWebModel", Family::falcon},
    NamedFamily{"gpt_neox", Family::gpt_neox},
    NamedFamily{"gptj", Family::gptj},
    NamedFamily{"gpt_oss", Family::gpt_oss},
    NamedFamily{"granitemoehybrid", Family::granite_hybrid},
    NamedFamily{"jamba", Family::jamba},
    NamedFamily{"llama4", Family::llama4},  // llama4.py
    NamedFamily{"llama4_text", Family::llama4},
    NamedFamily{"glm4_moe", Family::glm4_moe},      // glm4_moe.py
    NamedFamily{"qwen2_5_vl", Family::qwen2_5_vl},  // qwen2_5_vl.py
    NamedFamily{"qwen2_5_vl_text", Family::qwen2_5_vl},
    NamedFamily{"qwen3_vl", Family::qwen3_vl},  // qwen3_vl.py
    NamedFamily{"qwen3_vl_text", Family::qwen3_vl},
    NamedFamily{"qwen3_vl_moe", Family::qwen3_vl_moe},  // qwen3_vl_moe.py
    NamedFamily{"qwen3_vl_moe_text", Family::qwen3_vl_moe},
    NamedFamily{"gemma3n", Family::gemma3n},  // gemma3n.py
    NamedFamily{"gemma3n_text", Family::gemma3n},
    NamedFamily{"nemotron_h", Family::nemotron_h},  // nemotron_h.py
    NamedFamily{"mamba", Family::mamba},            // mamba.py
    NamedFamily{"falcon_mamba", Family::mamba},
    NamedFamily{"mamba2", Family::mamba2},    // mamba2.py
    NamedFamily{"qwen3_5", Family::qwen3_5},  // qwen3_5.py
    NamedFamily{"qwen3_5_text", Family::qwen3_5},
    NamedFamily{"qwen3_5_moe", Family::qwen3_5_moe},
    NamedFamily{"qwen3_5_moe_text", Family::qwen3_5_moe},
    NamedFamily{"minimax_m2", Family::minimax_m2},        // minimax_m2.py
    NamedFamily{"mimo_v2_flash", Family::mimo_v2_flash},  // mimo_v2_flash.py
    NamedFamily{"nemotron-nas", Family::deci},            // nemotron_nas.py
    NamedFamily{"gemma4", Family::gemma4},                // gemma4.py
    NamedFamily{"gemma4_text", Family::gemma4},
    NamedFamily{"deepseek_v4", Family::deepseek_v4},  // deepseek_v4.py
    NamedFamily{"kimi_linear", Family::kimi_linear},  // kimi_linear.py
    NamedFamily{"kimi_k3", Family::kimi_linear},      // SGLang's kimi_k3.py: Kimi Linear, wrapped
    NamedFamily{"minimax_m3", Family::minimax_m3},    // vllm/models/minimax_m3/nvidia/model.py
    NamedFamily{"minimax_m3_text", Family::minimax_m3},
    NamedFamily{"minimax_m3_vl", Family::minimax_m3},
    NamedFamily{"glm_moe_dsa", Family::deepseek},  // a name only: GLM-5 is DeepSeek-V3.2
    NamedFamily{"mimo", Family::qwen2},            // a name only: mimo.py is Qwen2 with MTP layers
};

// The architectures[0] class names, for files without a model_type kvplan maps.
inline constexpr std::array architectures{
    NamedFamily{"LlamaForCausalLM", Family::llama},
    NamedFamily{"MistralForCausalLM", Family::mistral},
    NamedFamily{"MixtralForCausalLM", Family::mixtral},
    NamedFamily{"Phi3ForCausalLM", Family::phi3},
    NamedFamily{"Qwen2ForCausalLM", Family::qwen2},
    NamedFamily{"Qwen2MoeForCausalLM", Family::qwen2_moe},
    NamedFamily{"Qwen3ForCausalLM", Family::qwen3},
    NamedFamily{"Qwen3MoeForCausalLM", Family::qwen3_moe},
    NamedFamily{"Qwen3NextForCausalLM", Family::qwen3_next},
    NamedFamily{"GemmaForCausalLM", Family::gemma},
    NamedFamily{"Gemma2ForCausalLM", Family::gemma2},
    NamedFamily{"Gemma3ForCausalLM", Family::gemma3},
    NamedFamily{"Gemma3ForConditionalGeneration", Family::gemma3},
    NamedFamily{"DeepseekV2ForCausalLM", Family::deepseek},
    NamedFamily{"DeepseekV3ForCausalLM", Family::deepseek},
    NamedFamily{"DeepseekV32ForCausalLM", Family::deepseek},
    NamedFamily{"FalconForCausalLM", Family::falcon},
    NamedFamily{"RWForCausalLM", Family::falcon},
    NamedFamily{"GPTNeoXForCausalLM", Family::gpt_neox},
    NamedFamily{"GPTJForCausalLM", Family::gptj},
    NamedFamily{"GptOssForCausalLM", Family::gpt_oss},
    NamedFamily{"GraniteMoeHybridForCausalLM", Family::granite_hybrid},
    NamedFamily{"JambaForCausalLM", Family::jamba},
    NamedFamily{"Llama4ForConditionalGeneration", Family::llama4},
    NamedFamily{"Llama4ForCausalLM", Family::llama4},
    NamedFamily{"Glm4MoeForCausalLM", Family::glm4_moe},
    NamedFamily{"Qwen2_5_VLForConditionalGeneration", Family::qwen2_5_vl},
    NamedFamily{"Qwen3VLForConditionalGeneration", Family::qwen3_vl},
    NamedFamily{"Qwen3VLMoeForConditionalGeneration", Family::qwen3_vl_moe},
    NamedFamily{"Gemma3nForConditionalGeneration", Family::gemma3n},
    NamedFamily{"Gemma3nForCausalLM", Family::gemma3n},
    NamedFamily{"NemotronHForCausalLM", Family::nemotron_h},
    NamedFamily{"MambaForCausalLM", Family::mamba},
    NamedFamily{"FalconMambaForCausalLM", Family::mamba},
    NamedFamily{"Mamba2ForCausalLM", Family::mamba2},
    NamedFamily{"Qwen3_5ForConditionalGeneration", Family::qwen3_5},
    NamedFamily{"Qwen3_5ForCausalLM", Family::qwen3_5},
    NamedFamily{"Qwen3_5MoeForConditionalGeneration", Family::qwen3_5_moe},
    NamedFamily{"Qwen3_5MoeForCausalLM", Family::qwen3_5_moe},
    NamedFamily{"MiniMaxM2ForCausalLM", Family::minimax_m2},
    NamedFamily{"MiMoV2FlashForCausalLM", Family::mimo_v2_flash},
    NamedFamily{"DeciLMForCausalLM", Family::deci},
    NamedFamily{"Gemma4ForConditionalGeneration", Family::gemma4},
    NamedFamily{"Gemma4ForCausalLM", Family::gemma4},
    NamedFamily{"GlmMoeDsaForCausalLM", Family::deepseek},
    NamedFamily{"DeepseekV4ForCausalLM", Family::deepseek_v4},
    NamedFamily{"KimiLinearForCausalLM", Family::kimi_linear},
    NamedFamily{"KimiK3ForConditionalGeneration", Family::kimi_linear},
    NamedFamily{"MiniMaxM3ForCausalLM", Family::minimax_m3},
    NamedFamily{"MiniMaxM3SparseForCausalLM", Family::minimax_m3},
    NamedFamily{"MiniMaxM3SparseForConditionalGeneration", Family::minimax_m3},
    NamedFamily{"MiMoForCausalLM", Family::qwen2},
};

// model_type values of encoder-decoder models: refused by name, their cross-attention cache (a
// second cache of the encoder's output, per sequence) being outside what kvplan sizes.
inline constexpr std::array<std::string_view, 22> encoder_decoder_types{
    "t5",
    "mt5",
    "umt5",
    "longt5",
    "switch_transformers",
    "t5gemma",
    "bart",
    "mbart",
    "plbart",
    "marian",
    "pegasus",
    "pegasus_x",
    "led",
    "bigbird_pegasus",
    "prophetnet",
    "m2m_100",
    "nllb_moe",
    "blenderbot",
    "whisper",
    "fsmt",
    "speech_to_text",
    "seamless_m4t",
};

template <std::size_t N>
[[nodiscard]] inline std::string list_names(const std::array<NamedFamily, N>& names) {
    std::string s;
    for (const NamedFamily& n : names) s += (s.empty() ? "" : ", ") + std::string(n.name);
    return s;
}

template <std::size_t N>
[[nodiscard]] inline std::optional<Family> lookup(const std::array<NamedFamily, N>& names,
                                                  std::string_view s) {
    for (const NamedFamily& n : names)
        if (n.name == s) return n.family;
    return std::nullopt;
}

/// The name of `f`: its first model_type in the table ("plain decoder" for Family::plain).
[[nodiscard]] inline std::string_view name(Family f) {
    for (const NamedFamily& n : model_types)
        if (n.family == f) return n.name;
    return "plain decoder";
}

/// The family of a config: a forced model_type (HfImportOptions::model_type) first; then
/// model_type (a nested text_config's first, then the file's); a model_type kvplan does not map
/// falls back to architectures[0], with a note; neither given means a plain decoder, with a note.
/// Encoder-decoder models are refused, naming the field that says so.
[[nodiscard]] inline Family family_of(const JsonReader& top, const JsonReader& text,
                                      std::string_view forced, std::vector<std::string>& notes) {
    const std::string expected = "a supported model_type (" + list_names(model_types) + ")";
    const bool nested = &text != &top;
    const std::optional<std::string> text_type =
        nested ? text.optional_string("model_type") : std::nullopt;
    const std::optional<std::string> top_type = top.optional_string("model_type");
    const std::optional<std::vector<std::string>> archs =
        top.optional_string_array("architectures");
    const std::string file_type = text_type ? *text_type : top_type ? *top_type : "";

    if (!forced.empty()) {
        const auto f = lookup(model_types, forced);
        if (!f)
            detail::throw_field_error<InvalidInput>(top.source(), "model_type (forced)", expected,
                                                    "\"" + std::string(forced) + "\"");
        notes.push_back("model_type forced to \"" + std::string(forced) + "\"" +
                        (file_type.empty() ? std::string(" (the file names none)")
                                           : " (the file says \"" + file_type + "\")"));
        return *f;
    }

    const char* const encdec =
        "a decoder-only model (kvplan sizes the self-attention cache; the cross-attention cache "
        "of an encoder-decoder model such as T5, BART or Whisper is not modelled)";
    if (top.optional_boolean("is_encoder_decoder").value_or(false))
        top.fail("is_encoder_decoder", encdec, "true");
    for (std::string_view t : encoder_decoder_types)
        if (top_type && *top_type == t) top.fail("model_type", encdec, "\"" + *top_type + "\"");

    if (text_type)
        if (const auto f = lookup(model_types, *text_type)) return *f;
    if (top_type)
        if (const auto f = lookup(model_types, *top_type)) return *f;
    // A wrapper (Kimi-K2.5's kimi_k25) whose text_config names its own architecture.
    const std::optional<std::vector<std::string>> text_archs =
        nested ? text.optional_string_array("architectures") : std::nullopt;
    if (text_archs && !text_archs->empty()) {
        if (const auto f = lookup(architectures, text_archs->front())) {
            notes.push_back("model_type \"" + file_type +
                            "\" is not one kvplan maps; imported by text_config.architectures[0] "
                            "\"" +
                            text_archs->front() + "\" as model_type \"" + std::string(name(*f)) +
                            "\"");
            return *f;
        }
    }
    const bool has_arch = archs && !archs->empty();
    if (has_arch) {
        if (const auto f = lookup(architectures, archs->front())) {
            if (!file_type.empty())
                notes.push_back("model_type \"" + file_type +
                                "\" is not one kvplan maps; imported by architectures[0] \"" +
                                archs->front() + "\" as model_type \"" + std::string(name(*f)) +
                                "\"");
            return *f;
        }
    }
    if (text_type) text.fail("model_type", expected, "\"" + *text_type + "\"");
    if (top_type) top.fail("model_type", expected, "\"" + *top_type + "\"");
    if (has_arch)
        top.fail("architectures[0]", "a supported architecture (" + list_names(architectures) + ")",
                 "\"" + archs->front() + "\"");
    notes.push_back(
        "neither model_type nor architectures is given: read as a plain decoder (Llama-like: "
        "gated MLP, RMSNorm, no biases)");
    return Family::plain;
}

}  // namespace detail::hf

}  // namespace kvplan
