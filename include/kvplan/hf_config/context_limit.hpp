#pragma once

// The longest sequence a config.json allows, derived as vLLM derives it (vllm/config/model.py,
// _get_and_verify_max_len, over derive_max_model_len_and_key in
// vllm/transformers_utils/model_arch_config_convertor.py):
//
//   1. the least of the length keys present in the text config: max_position_embeddings,
//      n_positions, max_seq_len, seq_length, model_max_length, max_target_positions,
//      max_sequence_length, max_seq_length, seq_len; model_max_length, when present, overrides
//      the least (Command-R);
//   2. none present: the config class's own default where it has one (Gemma-3: 131,072; Falcon:
//      2,048), else the 2,048 tokens vLLM assumes;
//   3. rope scaling (rope_scaling or rope_parameters; its type under rope_type or type) multiplies
//      it by its factor, except for the llama3, longrope and su types, which extend the trained
//      length themselves; yarn starts from original_max_position_embeddings. Gemma-3 models are
//      left as they are.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "../json.hpp"
#include "../model.hpp"

namespace kvplan::detail::hf {

/// The keys vLLM reads for the length, in its order.
inline constexpr std::array<const char*, 9> length_keys{"max_position_embeddings",
                                                        "n_positions",
                                                        "max_seq_len",
                                                        "seq_length",
                                                        "model_max_length",
                                                        "max_target_positions",
                                                        "max_sequence_length",
                                                        "max_seq_length",
                                                        "seq_len"};

/// The rope types whose factor does not multiply the length.
inline constexpr std::array<std::string_view, 3> rope_types_not_scaling{"su", "longrope", "llama3"};

/// `r` is the text config (or the file); `class_default` is the length its config class supplies
/// when the file holds no key (0: none); `gemma3` skips rope scaling.
[[nodiscard]] inline ContextLimit context_limit_of(const JsonReader& r, std::uint64_t class_default,
                                                   bool gemma3) {
    ContextLimit c;
    c.tokens = 0;
    for (const char* key : length_keys) {
        const auto v = r.optional_positive_integer(key, ~0ULL);
        if (!v) continue;
        if (c.tokens == 0 || *v < c.tokens) {
            c.tokens = *v;
            c.field = key;
        }
    }
    if (const auto mml = r.optional_positive_integer("model_max_length", ~0ULL)) {
        c.tokens = *mml;
        c.field = "model_max_length";
    }
    if (c.tokens == 0) {
        c.tokens = class_default != 0 ? class_default : vllm_default_max_model_len;
        c.field = class_default != 0 ? "max_position_embeddings (the config class's default)"
                                     : "none (vLLM assumes 2048)";
    }
    c.field_tokens = c.tokens;
    if (gemma3) return c;
    std::optional<JsonReader> rope = r.optional_object("rope_scaling");
    if (!rope) rope = r.optional_object("rope_parameters");
    if (!rope) return c;
    std::string type = rope->optional_string("rope_type").value_or("");
    if (type.empty()) type = rope->optional_string("type").value_or("");
    for (std::string_view t : rope_types_not_scaling)
        if (type == t) return c;
    const std::optional<double> factor = rope->optional_positive_number("factor");
    if (!factor) return c;
    double base = static_cast<double>(c.tokens);
    if (type == "yarn") {
        const auto original =
            rope->optional_positive_integer("original_max_position_embeddings", ~0ULL);
        if (!original)
            rope->fail("original_max_position_embeddings",
                       "the trained length yarn scales (vLLM reads it)",
                       "nothing (the field is missing)");
        base = static_cast<double>(*original);
        c.field = "rope_scaling.original_max_position_embeddings";
        c.field_tokens = *original;
    }
    const double scaled = base * *factor;
    if (!(scaled >= 1.0) || scaled >= 18446744073709549568.0)
        rope->fail("factor", "a factor that keeps the length below 2^64 tokens",
                   std::to_string(*factor));
    c.tokens = static_cast<std::uint64_t>(scaled);  // vLLM truncates: int(derived_max_model_len)
    c.rope_factor = *factor;
    // The type as a literal the model can hold.
    c.rope_type = type == "yarn"      ? "yarn"
                  : type == "linear"  ? "linear"
                  : type == "dynamic" ? "dynamic"
                  : type == "default" ? "default"
                                      : "other";
    return c;
}

/// The positions of the cos/sin table vLLM's get_rope builds for the rope parameters `rope` over
/// `max_position` (vllm/model_executor/layers/rotary_embedding/): linear and dynamic scaling
/// build max_position x factor (linear_scaling_rope.py, dynamic_ntk_scaling_rope.py,
/// _compute_cos_sin_cache: torch.arange of it, so rounded up), yarn ceil(original x factor)
/// (yarn_scaling_rope.py, given original_max_position_embeddings by get_rope); llama3, longrope
/// and the default rope keep max_position.
[[nodiscard]] inline std::uint64_t rotary_table_positions_of(const std::optional<JsonReader>& rope,
                                                             std::uint64_t max_position) {
    if (!rope) return max_position;
    std::string type = rope->optional_string("rope_type").value_or("");
    if (type.empty()) type = rope->optional_string("type").value_or("");
    if (type != "linear" && type != "dynamic" && type != "yarn") return max_position;
    const std::optional<double> factor = rope->optional_positive_number("factor");
    if (!factor) return max_position;
    double base = static_cast<double>(max_position);
    if (type == "yarn")
        if (const auto original =
                rope->optional_positive_integer("original_max_position_embeddings", ~0ULL))
            base = static_cast<double>(*original);
    const double scaled = std::ceil(base * *factor);
    if (!(scaled >= 1.0) || scaled >= 18446744073709549568.0)
        rope->fail("factor", "a factor that keeps the rotary table below 2^64 positions",
                   std::to_string(*factor));
    return static_cast<std::uint64_t>(scaled);
}

}  // namespace kvplan::detail::hf
