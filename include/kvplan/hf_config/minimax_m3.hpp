#pragma once

// MiniMax-M3 (model_type minimax_m3, or minimax_m3_vl wrapping a text_config; vLLM's
// vllm/models/minimax_m3/nvidia/model.py and vllm/transformers_utils/configs/minimax_m3.py).
// Every layer is GQA (num_key_value_heads x head_dim) with per-head q and k norms. The layers that
// sparse_attention_config.sparse_attention_freq flags run block-sparse attention: beside K and V
// they cache one indexer key of sparse_index_dim per token (MiniMaxM3IndexerCache), which an
// index_q_proj of one index head per KV head and a single index_k_proj produce
// (MinimaxM3QKVParallelLinearWithIndexer: vLLM requires sparse_num_index_heads to equal
// num_key_value_heads). moe_layer_freq flags the MoE layers (num_local_experts of
// intermediate_size, n_shared_experts of intermediate_size each, a router with an
// e_score_correction_bias when use_routing_bias); the others have a dense MLP of
// dense_intermediate_size. The vision tower (vision_tower.py, MiniMaxVLVisionModel) is counted by
// minimax_m3_vision.

#include <cstdint>
#include <string>
#include <vector>

#include "../json.hpp"
#include "../model.hpp"
#include "fields.hpp"
#include "recurrent.hpp"

namespace kvplan {

namespace detail::hf {

/// The layers of a MiniMax-M3 text config into `c` (n layers of `kv_heads` x `head_dim`, against
/// `heads` query heads): indexed attention where sparse_attention_freq flags a layer, plain GQA
/// elsewhere.
inline void read_minimax_m3_layers(const JsonReader& r, std::uint32_t n, std::uint64_t kv_heads,
                                   std::uint64_t head_dim, ModelConfig& c) {
    if (r.optional_boolean("attention_output_gate").value_or(false))
        r.fail("attention_output_gate",
               "false (vLLM's MiniMax-M3 builds no output gate; its weights are not modelled)",
               "true");
    if (const auto t = r.optional_string("qk_norm_type"); t && *t != "per_head")
        r.fail("qk_norm_type", "\"per_head\" (the q and k norms vLLM's MiniMax-M3 builds)",
               "\"" + *t + "\"");
    std::vector<std::uint64_t> sparse;
    std::uint64_t index_dim = 0;
    if (const auto sc = r.optional_object("sparse_attention_config")) {
        // vLLM's _sparse_attention_layer_ids: a layer is sparse where its flag is not 0.
        sparse = sc->optional_count_array("sparse_attention_freq")
                     .value_or(std::vector<std::uint64_t>{});
        if (!sparse.empty() && sparse.size() != n)
            sc->fail("sparse_attention_freq", "a flag per layer (" + std::to_string(n) + ")",
                     std::to_string(sparse.size()) + " entries");
        bool any = false;
        for (std::uint64_t s : sparse) any = any || s != 0;
        if (any) {
            index_dim = sc->positive_integer("sparse_index_dim", u32_max);
            const std::uint64_t index_heads = sc->positive_integer("sparse_num_index_heads");
            if (index_heads != kv_heads)
                sc->fail("sparse_num_index_heads",
                         "num_key_value_heads (" + std::to_string(kv_heads) +
                             "): vLLM's index_q_proj shards as the KV heads do",
                         std::to_string(index_heads));
        }
    }
    const CacheSpec full = full_attention(u32(kv_heads), u32(head_dim));
    const CacheSpec indexed = indexed_attention(u32(kv_heads), u32(head_dim), u32(index_dim));
    for (std::uint32_t i = 0; i < n; ++i)
        c.layers.append(!sparse.empty() && sparse[i] != 0 ? indexed : full);
    // MiniMaxM3Attention and MiniMaxM3SparseAttention build q_norm and k_norm of head_dim always.
    c.qk_norm = true;
    c.head_dim = u32(head_dim);
}

/// MiniMax-M3's vision tower and projectors from `v` (its vision_config), with the wrapper's
/// projector_hidden_size `mid` (0: the text hidden size `text_hidden`). vLLM's
/// MiniMaxVLVisionModel (vllm/models/minimax_m3/common/vision_tower.py): a Conv3d patch embedding
/// without bias (channels x temporal_patch_size x patch^2 to the width), pre_layrnorm, layers of
/// LayerNorm -> attention (fused qkv and out_proj, with biases) -> LayerNorm -> fc1 and fc2 with
/// biases, no post norm (the checkpoint has none); multi_modal_projector (linear_1 from the
/// width to mid, linear_2 from mid to the text width, biases per multimodal_projector_bias); and
/// patch_merge_mlp (linear_1 from merge^2 x the text width to mid, linear_2 back, biases per
/// patch_merge_bias).
[[nodiscard]] inline std::uint64_t minimax_m3_vision(const JsonReader& v, std::uint64_t text_hidden,
                                                     std::uint64_t mid) {
    const std::uint64_t h = v.positive_integer("hidden_size", u32_max);
    const std::uint64_t i = v.positive_integer("intermediate_size", u32_max);
    const std::uint64_t p = v.positive_integer("patch_size", 65'536);
    const std::uint64_t ch = v.optional_positive_integer("num_channels", 64).value_or(3);
    std::uint64_t t = 2, merge = 2;
    if (const auto comp = v.optional_object("img_token_compression_config")) {
        t = comp->optional_positive_integer("temporal_patch_size", 64).value_or(2);
        merge = comp->optional_positive_integer("spatial_merge_size", 64).value_or(2);
    }
    if (mid == 0) mid = text_hidden;
    const std::uint64_t proj_bias =
        v.optional_boolean("multimodal_projector_bias").value_or(true) ? 1 : 0;
    const std::uint64_t merge_bias = v.optional_boolean("patch_merge_bias").value_or(true) ? 1 : 0;
    const std::uint64_t layer = sum({times(4, times(h, h)), times(2, times(h, i)), times(9, h), i});
    return sum({times(layer, v.positive_integer("num_hidden_layers", u32_max)),
                times(ch * t * p * p, h), times(2, h), times(h, mid), times(mid, text_hidden),
                times(proj_bias, mid + text_hidden), times(times(merge * merge, text_hidden), mid),
                times(mid, text_hidden), times(merge_bias, mid + text_hidden)});
}

}  // namespace detail::hf

}  // namespace kvplan
