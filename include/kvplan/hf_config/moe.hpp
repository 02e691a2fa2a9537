#pragma once

// The mixture-of-experts fields of a config.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../detail/checked.hpp"
#include "../json.hpp"
#include "../model.hpp"
#include "families.hpp"
#include "fields.hpp"

namespace kvplan {

namespace detail::hf {

/// The number of a leading run of dense layers given as mlp_only_layers ([0, 1, ..., k - 1]).
[[nodiscard]] inline std::uint32_t leading_dense_layers(const JsonReader& r) {
    const auto list = r.optional_count_array("mlp_only_layers");
    if (!list) return 0;
    std::vector<std::uint64_t> sorted = *list;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i)
        if (sorted[i] != i)
            r.fail("mlp_only_layers", "a leading run of layers 0, 1, ..., k - 1",
                   "layer " + std::to_string(sorted[i]) + " out of such a run");
    return u32(sorted.size());
}

/// The leading dense layers of a moe_layer_freq that flags each of `n` layers 0 (dense) or 1
/// (MoE): kvplan sizes a leading run of dense layers, then MoE on every layer.
[[nodiscard]] inline std::uint32_t leading_dense_by_flags(const JsonReader& r, std::uint32_t n) {
    const auto flags = r.optional_count_array("moe_layer_freq");
    if (!flags || flags->size() != n)
        r.fail("moe_layer_freq", "a 0/1 flag per layer (" + std::to_string(n) + ")",
               flags ? std::to_string(flags->size()) + " entries" : std::string("no list"));
    std::uint32_t dense = 0;
    while (dense < flags->size() && (*flags)[dense] == 0) ++dense;
    for (std::size_t i = dense; i < flags->size(); ++i)
        if ((*flags)[i] != 1)
            r.fail(JsonReader::element("moe_layer_freq", i),
                   "1 (kvplan sizes leading dense layers, then MoE on every layer)",
                   std::to_string((*flags)[i]));
    return dense;
}

/// Reads the MoE fields of an MoE family into c.moe (dense if the expert count is 0 or null).
inline void read_moe(const JsonReader& r, Family f, ModelConfig& c, std::uint64_t& extra) {
    const auto experts_key =
        r.first_present({"num_local_experts", "num_experts", "n_routed_experts"});
    // GraniteMoeHybridConfig defaults to 8 experts: a file without the field is not dense.
    if (!experts_key && f == Family::granite_hybrid)
        r.fail("num_local_experts", "a count of routed experts (0 for a dense model)",
               "nothing (the field is missing)");
    const std::uint64_t experts = experts_key ? *r.optional_count(*experts_key, u32_max) : 0;
    if (experts == 0) {
        if (f == Family::mixtral || f == Family::gpt_oss)
            r.fail("num_local_experts", "a positive integer", "nothing (the field is missing)");
        return;  // DeepSeek / Qwen MoE classes with no experts are dense
    }
    MoeShape& m = c.moe;
    m.experts = u32(experts);
    // gpt-oss writes both experts_per_token and num_experts_per_tok; they must agree.
    const auto a = r.optional_positive_integer("num_experts_per_tok", experts);
    const auto b = r.optional_positive_integer("experts_per_token", experts);
    if (a && b && *a != *b)
        r.fail("experts_per_token",
               "the same value as num_experts_per_tok (" + std::to_string(*a) + ")",
               std::to_string(*b));
    if (!a && !b)
        r.fail("num_experts_per_tok", "a positive integer (experts per token)",
               "nothing (the field is missing)");
    m.experts_per_token = u32(a ? *a : *b);

    if (f == Family::mixtral || f == Family::gpt_oss || f == Family::jamba) {
        m.expert_intermediate_size = c.intermediate_size;
    } else if (f == Family::minimax_m2 || f == Family::minimax_m3) {
        // MiniMaxM2Config and MiniMaxM3TextConfig: intermediate_size is one expert's width.
        m.expert_intermediate_size = r.positive_integer("intermediate_size");
    } else if (f == Family::llama4) {
        // Llama4TextConfig: intermediate_size is an expert's width (intermediate_size_mlp the
        // dense layers').
        m.expert_intermediate_size = r.positive_integer("intermediate_size");
    } else if (f == Family::granite_hybrid) {
        // Granite's intermediate_size is the routed experts' width; the shared MLP has its own.
        m.expert_intermediate_size = r.positive_integer("intermediate_size");
    } else {
        m.expert_intermediate_size = r.positive_integer("moe_intermediate_size");
    }

    switch (f) {
        case Family::deepseek:
            m.shared_experts = u32(r.optional_count("n_shared_experts", u32_max).value_or(0));
            m.first_dense_layers =
                u32(r.optional_count("first_k_dense_replace", u32_max).value_or(0));
            m.layer_freq = u32(r.optional_positive_integer("moe_layer_freq", u32_max).value_or(1));
            m.layer_offset = 0;
            // DeepSeek-V3's router carries e_score_correction_bias with topk_method noaux_tc.
            m.router_bias = r.optional_string("topk_method").value_or("") == "noaux_tc";
            // GLM-5.2 also lists each layer's MLP ("dense" or "sparse"); it must say what
            // first_k_dense_replace and moe_layer_freq say.
            if (const auto types = r.optional_string_array("mlp_layer_types")) {
                if (types->size() != c.layers.num_layers)
                    r.fail("mlp_layer_types",
                           "one entry per layer (" + std::to_string(c.layers.num_layers) + ")",
                           std::to_string(types->size()) + " entries");
                for (std::uint32_t i = 0; i < types->size(); ++i) {
                    const char* want = m.is_moe_layer(i) ? "sparse" : "dense";
                    if ((*types)[i] != want)
                        r.fail(JsonReader::element("mlp_layer_types", i),
                               std::string("\"") + want +
                                   "\", as first_k_dense_replace and moe_layer_freq say",
                               "\"" + (*types)[i] + "\"");
                }
            }
            break;
        case Family::glm4_moe:
            // vLLM's Glm4MoE (glm4_moe.py): the first first_k_dense_replace layers are dense,
            // n_shared_experts always-on experts of moe_intermediate_size, and a router with an
            // e_score_correction_bias on every MoE layer.
            m.shared_experts = u32(r.optional_count("n_shared_experts", u32_max).value_or(0));
            m.first_dense_layers =
                u32(r.optional_count("first_k_dense_replace", u32_max).value_or(0));
            m.router_bias = true;
            break;
        case Family::llama4: {
            // vLLM's Llama4DecoderLayer (llama4.py): layer i routes when
            // (i + 1) % interleave_moe_layer_step == 0; Llama4MoE adds one shared expert of
            // intermediate_size; the router has no bias.
            m.layer_freq =
                u32(r.optional_positive_integer("interleave_moe_layer_step", u32_max).value_or(1));
            m.layer_offset = 1;
            m.shared_experts = 1;
            break;
        }
        case Family::qwen2_moe:
        case Family::qwen3_moe:
        case Family::qwen3_vl_moe:
        case Family::qwen3_next:
        case Family::qwen3_5_moe: {
            m.layer_freq =
                u32(r.optional_positive_integer("decoder_sparse_step", u32_max).value_or(1));
            m.layer_offset = 1;
            m.first_dense_layers = leading_dense_layers(r);
            const std::uint64_t shared =
                r.optional_count("shared_expert_intermediate_size").value_or(0);
            if (shared != 0) {
                m.shared_experts = 1;
                m.shared_intermediate_size = shared;
            }
            break;
        }
        case Family::gpt_oss:
            m.router_bias = true;
            break;
        case Family::minimax_m2:
            // MiniMaxM2MoE: e_score_correction_bias when use_routing_bias; no shared expert.
            if (r.optional_count("shared_intermediate_size").value_or(0) != 0)
                r.fail("shared_intermediate_size", "0 (MiniMax-M2 has no shared expert)",
                       std::to_string(*r.optional_count("shared_intermediate_size")));
            m.router_bias = r.optional_boolean("use_routing_bias").value_or(false);
            break;
        case Family::mimo_v2_flash:
            // MiMoV2FlashDecoderLayer.is_moe_layer: moe_layer_freq is a 0/1 flag per layer.
            // MiMoV2MoE's router always has an e_score_correction_bias; n_shared_experts is null
            // (none).
            m.first_dense_layers = leading_dense_by_flags(r, c.layers.num_layers);
            if (r.optional_count("n_shared_experts", u32_max).value_or(0) != 0)
                r.fail("n_shared_experts", "null or 0 (MiMoV2MoE has no shared expert)",
                       std::to_string(*r.optional_count("n_shared_experts", u32_max)));
            m.router_bias = true;
            break;
        case Family::minimax_m3: {
            // vLLM's MiniMaxM3MoE (vllm/models/minimax_m3/nvidia/model.py, _is_moe_layer: a 0/1
            // flag per layer in moe_layer_freq): the shared expert is one MLP of
            // intermediate_size x n_shared_experts, and the router has an
            // e_score_correction_bias when use_routing_bias.
            m.first_dense_layers = leading_dense_by_flags(r, c.layers.num_layers);
            const std::uint64_t shared = r.optional_count("n_shared_experts", u32_max).value_or(0);
            if (shared != 0) {
                m.shared_experts = u32(shared);
                m.shared_intermediate_size =
                    detail::mul(shared, m.expert_intermediate_size, "the shared expert's width");
            }
            m.router_bias = r.optional_boolean("use_routing_bias").value_or(false);
            break;
        }
        case Family::granite_hybrid:
            // GraniteMoeHybridDecoderLayer: every layer has the shared_mlp beside its experts.
            m.shared_experts = 1;
            m.shared_intermediate_size = c.intermediate_size;
            break;
        case Family::jamba: {
            // JambaConfig.layers_num_experts: layer i routes when i % expert_layer_period ==
            // expert_layer_offset (class defaults 2 and 1), i.e. when
            // (i + period - offset) % period == 0.
            const std::uint64_t period =
                r.optional_positive_integer("expert_layer_period", u32_max).value_or(2);
            const std::uint64_t offset =
                r.optional_count("expert_layer_offset", u32_max).value_or(1);
            if (offset >= period)
                r.fail("expert_layer_offset",
                       "less than expert_layer_period (" + std::to_string(period) + ")",
                       std::to_string(offset));
            m.layer_freq = u32(period);
            m.layer_offset = u32((period - offset) % period);
            break;
        }
        default:
            break;
    }
    if (m.first_dense_layers > 0 || m.layer_freq > 1) {
        if (c.intermediate_size == 0)
            r.fail("intermediate_size", "a positive integer (the dense layers' MLP width)",
                   "nothing (the field is missing)");
    }
    // Qwen2-MoE, Qwen3-Next and Qwen3.5 gate the shared expert with a hidden x 1 projection per MoE
    // layer.
    if (m.shared_experts != 0 &&
        (f == Family::qwen2_moe || f == Family::qwen3_next || f == Family::qwen3_5_moe)) {
        std::uint64_t moe_layers = 0;
        for (std::uint32_t i = 0; i < c.layers.num_layers; ++i)
            moe_layers += m.is_moe_layer(i) ? 1 : 0;
        extra += moe_layers * c.hidden_size;
    }
}

}  // namespace detail::hf

}  // namespace kvplan
