#pragma once

// What each layer of a config is (full, sliding or linear attention), and the sliding window.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../json.hpp"
#include "families.hpp"
#include "fields.hpp"

namespace kvplan {

namespace detail::hf {

/// What one layer is, before it becomes a CacheSpec.
enum class LayerKind : std::uint8_t {
    full,     ///< full attention
    sliding,  ///< sliding-window attention
    linear,   ///< a recurrent layer: linear attention or Mamba
    chunked,  ///< chunked local attention (Llama-4)
    shared,   ///< reads an earlier layer's cache (Gemma-3n's KV-shared layers)
    mlp,      ///< no mixer, an MLP only (Nemotron-H)
};

/// Whether `f` is made of Qwen3-Next's layers: Gated DeltaNet and gated full attention.
[[nodiscard]] inline bool gated_delta_net_family(Family f) {
    return f == Family::qwen3_next || f == Family::qwen3_5 || f == Family::qwen3_5_moe;
}

/// The per-layer kinds from layer_types, or from the family's own rule.
[[nodiscard]] inline std::vector<LayerKind> layer_kinds(const JsonReader& r, Family f,
                                                        std::uint32_t n) {
    std::vector<LayerKind> kinds(n, LayerKind::full);
    const bool qwen = f == Family::qwen2 || f == Family::qwen2_moe || f == Family::qwen3 ||
                      f == Family::qwen3_moe || gated_delta_net_family(f) ||
                      f == Family::qwen2_5_vl || f == Family::qwen3_vl || f == Family::qwen3_vl_moe;
    const bool windows_on = r.optional_boolean("use_sliding_window").value_or(!qwen);

    if (f == Family::granite_hybrid) {
        // GraniteMoeHybridConfig.layer_types: "mamba" or "attention" per layer. It decides what
        // every layer caches, so it is required.
        const auto types = r.optional_string_array("layer_types");
        if (!types)
            r.fail("layer_types", "\"mamba\" or \"attention\" for each layer",
                   "nothing (the field is missing)");
        if (types->size() != n)
            r.fail("layer_types", "one entry per layer (" + std::to_string(n) + ")",
                   std::to_string(types->size()) + " entries");
        for (std::uint32_t i = 0; i < n; ++i) {
            const std::string& t = (*types)[i];
            if (t == "mamba")
                kinds[i] = LayerKind::linear;
            else if (t != "attention")
                r.fail(JsonReader::element("layer_types", i), "\"mamba\" or \"attention\"",
                       "\"" + t + "\"");
        }
        return kinds;
    }
    if (f == Family::llama4) {
        // vLLM's Llama4Attention (llama4.py): a layer with RoPE (no_rope_layers[i] == 1) attends
        // within chunks of attention_chunk_size when the field is set; a NoPE layer attends to
        // everything. Without no_rope_layers, Llama4TextConfig makes every
        // no_rope_layer_interval-th layer NoPE (default 4).
        const bool chunked = r.has("attention_chunk_size");
        std::vector<std::uint64_t> rope(n, 1);
        if (const auto list = r.optional_count_array("no_rope_layers")) {
            if (list->size() != n)
                r.fail("no_rope_layers", "one entry per layer (" + std::to_string(n) + ")",
                       std::to_string(list->size()) + " entries");
            rope = *list;
        } else {
            const std::uint64_t every =
                r.optional_positive_integer("no_rope_layer_interval", u32_max).value_or(4);
            for (std::uint32_t i = 0; i < n; ++i) rope[i] = (i + 1) % every != 0 ? 1 : 0;
        }
        for (std::uint32_t i = 0; i < n; ++i) {
            if (rope[i] > 1)
                r.fail(JsonReader::element("no_rope_layers", i), "0 (NoPE) or 1 (RoPE)",
                       std::to_string(rope[i]));
            if (rope[i] == 1 && chunked) kinds[i] = LayerKind::chunked;
        }
        return kinds;
    }
    if (f == Family::mimo_v2_flash) {
        // MiMoV2FlashDecoderLayer.is_compressed_softmax_layer (mimo_v2_flash.py): layer i is
        // sliding-window attention when hybrid_layer_pattern[i] == 1, full attention when 0.
        const auto pattern = r.optional_count_array("hybrid_layer_pattern");
        if (!pattern)
            r.fail("hybrid_layer_pattern", "0 (full) or 1 (sliding window) for each layer",
                   "nothing (the field is missing)");
        if (pattern->size() != n)
            r.fail("hybrid_layer_pattern", "one entry per layer (" + std::to_string(n) + ")",
                   std::to_string(pattern->size()) + " entries");
        for (std::uint32_t i = 0; i < n; ++i) {
            if ((*pattern)[i] > 1)
                r.fail(JsonReader::element("hybrid_layer_pattern", i),
                       "0 (full) or 1 (sliding window)", std::to_string((*pattern)[i]));
            if ((*pattern)[i] == 1) kinds[i] = LayerKind::sliding;
        }
        return kinds;
    }
    if (f == Family::jamba) {
        // JambaConfig.layers_block_type: layer i is attention when i % attn_layer_period ==
        // attn_layer_offset, Mamba otherwise (class defaults 8 and 4).
        const std::uint64_t period =
            r.optional_positive_integer("attn_layer_period", u32_max).value_or(8);
        const std::uint64_t offset = r.optional_count("attn_layer_offset", u32_max).value_or(4);
        if (offset >= period)
            r.fail("attn_layer_offset",
                   "less than attn_layer_period (" + std::to_string(period) + ")",
                   std::to_string(offset));
        for (std::uint32_t i = 0; i < n; ++i)
            if (i % period != offset) kinds[i] = LayerKind::linear;
        return kinds;
    }

    if (const auto types = r.optional_string_array("layer_types")) {
        if (types->size() != n)
            r.fail("layer_types", "one entry per layer (" + std::to_string(n) + ")",
                   std::to_string(types->size()) + " entries");
        for (std::uint32_t i = 0; i < n; ++i) {
            const std::string& t = (*types)[i];
            if (t == "full_attention") {
                kinds[i] = LayerKind::full;
            } else if (t == "sliding_attention") {
                kinds[i] = windows_on ? LayerKind::sliding : LayerKind::full;
            } else if (t == "linear_attention" && gated_delta_net_family(f)) {
                kinds[i] = LayerKind::linear;
            } else {
                r.fail(JsonReader::element("layer_types", i),
                       gated_delta_net_family(f)
                           ? "\"full_attention\", \"sliding_attention\" or \"linear_attention\""
                           : "\"full_attention\" or \"sliding_attention\"",
                       "\"" + t + "\"");
            }
        }
        return kinds;
    }

    switch (f) {
        case Family::mistral:
            if (!r.contains("sliding_window"))
                r.fail("sliding_window", "a window in tokens, or null for none",
                       "nothing (Mistral configs must say: v0.1 used 4096, later ones null)");
            [[fallthrough]];
        case Family::mixtral:
        case Family::phi3:
            if (windows_on && r.has("sliding_window"))
                std::fill(kinds.begin(), kinds.end(), LayerKind::sliding);
            break;
        case Family::qwen2:
        case Family::qwen2_moe:
        case Family::qwen3:
        case Family::qwen3_moe:
            if (windows_on && r.has("sliding_window")) {
                const std::uint64_t first = r.optional_count("max_window_layers").value_or(28);
                for (std::uint32_t i = 0; i < n; ++i)
                    if (i >= first) kinds[i] = LayerKind::sliding;
            }
            break;
        case Family::gemma2:
        case Family::gpt_oss:
            for (std::uint32_t i = 0; i < n; ++i)
                if (i % 2 == 0) kinds[i] = LayerKind::sliding;
            break;
        case Family::gemma3: {
            const std::uint64_t pattern =
                r.optional_positive_integer("sliding_window_pattern").value_or(6);
            for (std::uint32_t i = 0; i < n; ++i)
                if ((i + 1) % pattern != 0) kinds[i] = LayerKind::sliding;
            break;
        }
        case Family::qwen3_next:
        case Family::qwen3_5:
        case Family::qwen3_5_moe: {
            const std::uint64_t interval =
                r.optional_positive_integer("full_attention_interval").value_or(4);
            for (std::uint32_t i = 0; i < n; ++i)
                if ((i + 1) % interval != 0) kinds[i] = LayerKind::linear;
            break;
        }
        default:
            break;
    }
    return kinds;
}

/// The window of sliding layers: sliding_window, or the family's transformers default.
[[nodiscard]] inline std::uint64_t window_of(const JsonReader& r, Family f) {
    // MiMoV2FlashDecoderLayer passes sliding_window_size to its sliding layers.
    if (f == Family::mimo_v2_flash) return r.positive_integer("sliding_window_size", ~0ULL);
    if (const auto w = r.optional_positive_integer("sliding_window", ~0ULL)) return *w;
    switch (f) {
        case Family::gemma2:
        case Family::gemma3:
            if (!r.contains("sliding_window")) return 4096;  // Gemma2Config / Gemma3TextConfig
            break;
        case Family::gpt_oss:
            if (!r.contains("sliding_window")) return 128;  // GptOssConfig
            break;
        default:
            break;
    }
    r.fail("sliding_window", "a window in tokens for the sliding layers",
           r.contains("sliding_window") ? "null" : "nothing (the field is missing)");
}

}  // namespace detail::hf

}  // namespace kvplan
