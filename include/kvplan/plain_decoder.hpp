#pragma once

// A model from a handful of plain numbers, as web KV calculators take them: a Llama-like decoder
// (gated MLP, RMSNorm, no biases) with optional grouped-query attention, an optional sliding window
// on every layer and optional mixture-of-experts MLPs. The fields are named after the Hugging Face
// config.json fields they mirror, and a message names the field it refuses. A config.json with
// only these fields and neither model_type nor architectures is read through this builder.

#include <cstdint>

#include "detail/message.hpp"
#include "error.hpp"
#include "model.hpp"

namespace kvplan {

/// The numbers that describe a plain decoder. Zero means "not given" where a default exists.
struct PlainDecoder {
    ModelName name{};
    std::uint32_t num_hidden_layers = 0;
    std::uint64_t hidden_size = 0;
    std::uint32_t num_attention_heads = 0;
    std::uint32_t num_key_value_heads = 0;  ///< 0: as many as the attention heads (MHA)
    std::uint32_t head_dim = 0;             ///< 0: hidden_size / num_attention_heads
    std::uint64_t vocab_size = 0;
    std::uint64_t intermediate_size = 0;      ///< the dense MLP's width
    std::uint32_t num_experts = 0;            ///< 0: dense
    std::uint32_t num_experts_per_tok = 0;    ///< with num_experts
    std::uint64_t moe_intermediate_size = 0;  ///< one expert's width; 0: intermediate_size
    std::uint64_t sliding_window = 0;         ///< 0: none; else every layer keeps this many tokens
    std::uint64_t max_position_embeddings = 0;
    bool tie_word_embeddings = false;
};

namespace detail {

template <class T>
[[noreturn]] constexpr void bad_plain(const PlainDecoder& p, const char* field,
                                      const Message& expected, T found) {
    throw_field_error<InvalidModel>(p.name.empty() ? text("model") : text("model '", p.name, "'"),
                                    field, expected, text(found));
}

}  // namespace detail

/// The ModelConfig of `p`; throws InvalidModel naming the PlainDecoder field that no model could
/// have (a compile error in a constant expression).
[[nodiscard]] constexpr ModelConfig plain_decoder_config(const PlainDecoder& p) {
    if (p.num_hidden_layers == 0 || p.num_hidden_layers > max_layers)
        detail::bad_plain(p, "num_hidden_layers", detail::text("1 to ", max_layers, " layers"),
                          p.num_hidden_layers);
    if (p.hidden_size == 0) detail::bad_plain(p, "hidden_size", detail::text("> 0"), 0);
    if (p.num_attention_heads == 0)
        detail::bad_plain(p, "num_attention_heads", detail::text("> 0"), 0);
    const std::uint32_t kv =
        p.num_key_value_heads != 0 ? p.num_key_value_heads : p.num_attention_heads;
    if (p.num_attention_heads % kv != 0)
        detail::bad_plain(
            p, "num_key_value_heads",
            detail::text("a divisor of the ", p.num_attention_heads, " attention heads"), kv);
    std::uint64_t head_dim = p.head_dim;
    if (head_dim == 0) {
        if (p.hidden_size % p.num_attention_heads != 0)
            detail::bad_plain(p, "hidden_size",
                              detail::text("a multiple of the ", p.num_attention_heads,
                                           " heads (no head_dim is given)"),
                              p.hidden_size);
        head_dim = p.hidden_size / p.num_attention_heads;
        if (head_dim > 0xFFFF'FFFFULL)
            detail::bad_plain(p, "head_dim", detail::text("at most 4294967295"), head_dim);
    }
    if (p.vocab_size == 0) detail::bad_plain(p, "vocab_size", detail::text("> 0"), 0);
    if (p.num_experts == 0 && p.intermediate_size == 0)
        detail::bad_plain(p, "intermediate_size", detail::text("> 0 (the MLP's width)"), 0);
    if (p.num_experts != 0 && (p.num_experts_per_tok == 0 || p.num_experts_per_tok > p.num_experts))
        detail::bad_plain(p, "num_experts_per_tok",
                          detail::text("1 to num_experts (", p.num_experts, ")"),
                          p.num_experts_per_tok);
    if (p.num_experts != 0 && p.moe_intermediate_size == 0 && p.intermediate_size == 0)
        detail::bad_plain(p, "moe_intermediate_size", detail::text("> 0 (one expert's width)"), 0);

    ModelConfig c;
    c.name = p.name;
    const auto h = static_cast<std::uint32_t>(head_dim);
    c.layers = LayerStack::uniform(
        p.num_hidden_layers,
        p.sliding_window != 0 ? sliding_window(kv, h, p.sliding_window) : full_attention(kv, h));
    c.num_heads = p.num_attention_heads;
    c.head_dim = h;
    c.hidden_size = p.hidden_size;
    c.intermediate_size = p.intermediate_size;
    c.vocab_size = p.vocab_size;
    c.max_position_embeddings = p.max_position_embeddings;
    c.tie_embeddings = p.tie_word_embeddings;
    if (p.num_experts != 0)
        c.moe = {.experts = p.num_experts,
                 .experts_per_token = p.num_experts_per_tok,
                 .expert_intermediate_size =
                     p.moe_intermediate_size != 0 ? p.moe_intermediate_size : p.intermediate_size};
    return c;
}

/// The validated Model of `p` (plain_decoder_config, then Model's own checks).
[[nodiscard]] constexpr Model plain_decoder(const PlainDecoder& p) {
    return Model{plain_decoder_config(p)};
}

}  // namespace kvplan
