#pragma once

// DeciLM / Nemotron-NAS (Llama-3.3-Nemotron-Super-49B): a Llama whose layers each say, in
// block_configs, how many KV heads their attention has (or that it has none) and how wide their MLP
// is.

#include <cstdint>
#include <string>
#include <vector>

#include "../detail/checked.hpp"
#include "../json.hpp"
#include "../model.hpp"
#include "fields.hpp"

namespace kvplan {

namespace detail::hf {

/// vLLM's _ffn_mult_to_intermediate_size (nemotron_nas.py): int(2 x ffn_mult x hidden / 3),
/// rounded up to a multiple of 256. Computed in doubles in the order Python computes it; 0 when it
/// passes 32 bits.
[[nodiscard]] inline std::uint64_t deci_ffn_width(double ffn_mult, std::uint64_t hidden) {
    const double raw = 2.0 * ffn_mult * static_cast<double>(hidden) / 3.0;
    if (!(raw < 4294967296.0)) return 0;  // past 32 bits (or NaN): refused by the caller
    const auto width = static_cast<std::uint64_t>(raw);
    return (width + 255) / 256 * 256;
}

/// The layers of a DeciLM config into `c` (head_dim `head_dim`), its narrowest MLP width into
/// c.intermediate_size; returns the parameters that uniform layers do not describe: the wider
/// MLPs' extra columns, and the input norm of every layer that has attention (a layer whose
/// attention is a no-op has only its post-attention norm, DeciLMDecoderLayer).
[[nodiscard]] inline std::uint64_t read_deci(const JsonReader& r, std::uint32_t n,
                                             std::uint64_t heads, std::uint64_t head_dim,
                                             ModelConfig& c) {
    const Json& blocks = r.array("block_configs");
    if (blocks.size() != n)
        r.fail("block_configs", "one entry per layer (" + std::to_string(n) + ")",
               std::to_string(blocks.size()) + " entries");
    const std::uint64_t hidden = c.hidden_size;
    std::vector<std::uint64_t> widths;
    std::uint64_t attention_layers = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
        const JsonReader block(blocks[i], r.source(),
                               r.path(JsonReader::element("block_configs", i)));
        const JsonReader attn = block.object("attention");
        const JsonReader ffn = block.object("ffn");
        if (attn.optional_boolean("replace_with_linear").value_or(false))
            attn.fail("replace_with_linear",
                      "false (an attention replaced by a linear layer is not modelled)", "true");
        if (ffn.optional_boolean("replace_with_linear").value_or(false) ||
            ffn.optional_boolean("no_op").value_or(false))
            ffn.fail("no_op", "an MLP on every layer (a no-op or linear MLP is not modelled)",
                     "a block without one");
        if (attn.has("sparsify") || attn.has("window_length") || attn.has("num_sink_tokens"))
            attn.fail("window_length",
                      "null (windowed, sparse or sink attention blocks are not modelled)",
                      "a value");
        if (attn.optional_boolean("no_op").value_or(false)) {
            c.layers.append(mlp_only());
        } else {
            // DeciLMAttention: num_key_value_heads = heads / n_heads_in_group.
            const std::uint64_t group = attn.positive_integer("n_heads_in_group", u32_max);
            if (heads % group != 0)
                attn.fail("n_heads_in_group",
                          "a divisor of the " + std::to_string(heads) + " attention heads",
                          std::to_string(group));
            c.layers.append(full_attention(u32(heads / group), u32(head_dim)));
            ++attention_layers;
        }
        const double mult = ffn.positive_number("ffn_mult");
        widths.push_back(deci_ffn_width(mult, hidden));
        if (widths.back() == 0 || widths.back() > u32_max)
            ffn.fail("ffn_mult", "a multiplier giving a width of 1 to 2^32 - 1",
                     std::to_string(widths.back()));
    }
    std::uint64_t narrowest = widths.front();
    for (std::uint64_t w : widths) narrowest = w < narrowest ? w : narrowest;
    c.intermediate_size = narrowest;
    c.norms_per_layer = 1;  // post_attention_layernorm; input_layernorm counted below
    std::uint64_t extra = detail::mul(attention_layers, hidden, "DeciLM's input norms");
    // A gated MLP holds 3 x hidden x width parameters (gate, up, down).
    for (std::uint64_t w : widths)
        extra = detail::add(extra, detail::mul(3 * hidden, w - narrowest, "DeciLM's MLP widths"),
                            "DeciLM's MLP widths");
    return extra;
}

}  // namespace detail::hf

}  // namespace kvplan
