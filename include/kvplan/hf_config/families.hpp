#pragma once

// The model families the import maps, by transformers' model_type and by architectures[0].

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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
};

struct NamedFamily {
    std::string_view name;
    Family family;
};

// transformers' model_type values this importer maps.
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
    NamedFamily{"deepseek_v2", Family::deepseek},
    NamedFamily{"deepseek_v3", Family::deepseek},
    NamedFamily{"falcon", Family::falcon},
    NamedFamily{"RefinedWeb", Family::falcon},
    NamedFamily{"RefinedWebModel", Family::falcon},
    NamedFamily{"gpt_neox", Family::gpt_neox},
    NamedFamily{"gptj", Family::gptj},
    NamedFamily{"gpt_oss", Family::gpt_oss},
    NamedFamily{"granitemoehybrid", Family::granite_hybrid},
    NamedFamily{"jamba", Family::jamba},
};

// The architectures[0] class names, for files without model_type.
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
    NamedFamily{"FalconForCausalLM", Family::falcon},
    NamedFamily{"RWForCausalLM", Family::falcon},
    NamedFamily{"GPTNeoXForCausalLM", Family::gpt_neox},
    NamedFamily{"GPTJForCausalLM", Family::gptj},
    NamedFamily{"GptOssForCausalLM", Family::gpt_oss},
    NamedFamily{"GraniteMoeHybridForCausalLM", Family::granite_hybrid},
    NamedFamily{"JambaForCausalLM", Family::jamba},
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

/// The family from model_type (a nested text_config's first, then the file's), else from
/// architectures[0].
[[nodiscard]] inline Family family_of(const JsonReader& top, const JsonReader& text) {
    const bool nested = &text != &top;
    const std::optional<std::string> text_type =
        nested ? text.optional_string("model_type") : std::nullopt;
    const std::optional<std::string> top_type = top.optional_string("model_type");
    if (text_type)
        if (const auto f = lookup(model_types, *text_type)) return *f;
    if (top_type)
        if (const auto f = lookup(model_types, *top_type)) return *f;
    const std::string expected = "a supported model_type (" + list_names(model_types) + ")";
    if (text_type) text.fail("model_type", expected, "\"" + *text_type + "\"");
    if (top_type) top.fail("model_type", expected, "\"" + *top_type + "\"");
    if (const auto archs = top.optional_string_array("architectures"); archs && !archs->empty()) {
        if (const auto f = lookup(architectures, archs->front())) return *f;
        top.fail("architectures[0]", "a supported architecture (" + list_names(architectures) + ")",
                 "\"" + archs->front() + "\"");
    }
    top.fail("model_type", expected, "nothing (neither model_type nor architectures is given)");
}

}  // namespace detail::hf

}  // namespace kvplan
