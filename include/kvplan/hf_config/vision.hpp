#pragma once

// The parameters of a multimodal config's vision tower and projector, from its vision_config:
// weights the language model does not cache with, counted apart (ModelConfig::vision_params).
//   Gemma-3 (SigLIP, transformers' SiglipVisionModel and Gemma3MultiModalProjector): a patch
//     convolution with bias, a position embedding per patch, layers of LayerNorm -> attention
//     (q, k, v, o with biases) -> LayerNorm -> MLP (fc1, fc2 with biases), a final LayerNorm; the
//     projector's vision x text matrix and its RMSNorm.
//   Qwen2.5-VL (Qwen2_5_VisionTransformerPretrainedModel; vLLM's qwen2_5_vl.py): a Conv3d patch
//     embedding without bias, layers of RMSNorm -> attention (fused qkv and proj, with biases) ->
//     RMSNorm -> gated MLP (gate, up, down, with biases), and the patch merger (RMSNorm, then two
//     linear layers with biases from merge^2 x hidden to out_hidden_size).
//   Qwen3-VL (Qwen3VLVisionModel; vLLM's qwen3_vl.py): a Conv3d patch embedding with bias, a
//     learned position embedding of num_position_embeddings, layers of LayerNorm -> attention ->
//     LayerNorm -> MLP (linear_fc1, linear_fc2, with biases), the patch merger (LayerNorm over the
//     hidden size, two linear layers), and one more merger per deepstack_visual_indexes entry
//     (LayerNorm over merge^2 x hidden).
//   Llama-4 (Llama4VisionModel and Llama4MultiModalProjector; vLLM's mllama4.py): an unfolded
//     patch projection without bias, a class embedding, a position embedding per patch and one
//     for the class token, LayerNorms before and after, layers of LayerNorm -> attention (q, k, v,
//     o with biases) -> LayerNorm -> MLP (fc1, fc2 with biases), the pixel-shuffle adapter (fc1
//     from intermediate_size to projector_input_dim, fc2 projector_output_dim square, no biases)
//     and the projector from vision_output_dim to the text hidden size.
//   Kimi-K2.5 (MoonViT; vLLM's kimi_k25_vit.py): see Family::deepseek below; Kimi-K3's MoonViT3d
//     (SGLang's kimi_k3_vl.py): see kimi_k3_vision.
//   Gemma 4 (transformers' modeling_gemma4.py, Gemma4VisionModel and Gemma4MultimodalEmbedder):
//     a patch projection without bias (3 x patch^2 to hidden), a 2 x position_embedding_size
//     position table, layers of four RMSNorms around attention (q, k, v, o without biases, a
//     scaled q and k norm of head_dim, v's norm without scale) and a gated MLP (gate, up, down, no
//     biases); with standardize, a bias and a scale of the hidden size; the embedder's projection
//     to the text hidden size (its RMSNorm has no scale). The pooler has no weights.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "../detail/checked.hpp"
#include "../json.hpp"
#include "families.hpp"
#include "fields.hpp"

namespace kvplan {

namespace detail::hf {

/// The sum of products, each term a pair: OverflowError, never a wrap.
[[nodiscard]] inline std::uint64_t vision_sum(
    std::initializer_list<std::pair<std::uint64_t, std::uint64_t>> terms) {
    std::uint64_t s = 0;
    for (const auto& [a, b] : terms)
        s = detail::add(s, detail::mul(a, b, "a vision tower's size"), "a vision tower's size");
    return s;
}

/// The patches MoonViT's projector merges into one token, the area of merge_kernel_size in `v`
/// (2 x 2 when absent; Kimi-K2.5's and Kimi-K3's towers both read it).
[[nodiscard]] inline std::uint64_t merge_kernel_area(const JsonReader& v) {
    const auto kernel =
        v.optional_count_array("merge_kernel_size").value_or(std::vector<std::uint64_t>{2, 2});
    if (kernel.size() != 2 || kernel[0] == 0 || kernel[1] == 0 || kernel[0] > 64 || kernel[1] > 64)
        v.fail("merge_kernel_size", "two positive sizes of at most 64",
               std::to_string(kernel.size()) + " entries");
    return kernel[0] * kernel[1];
}

/// The vision tower and projector of family `f` from `v` (its vision_config), or nullopt for a
/// family whose tower kvplan does not count. `text_hidden` is the language model's hidden size.
[[nodiscard]] inline std::optional<std::uint64_t> vision_params(const JsonReader& v, Family f,
                                                                std::uint64_t text_hidden) {
    const auto layers_of = [&](std::uint64_t per_layer, std::string_view key) {
        return detail::mul(per_layer, v.positive_integer(key, u32_max), "a vision tower's size");
    };
    switch (f) {
        case Family::gemma3: {
            const std::uint64_t h = v.positive_integer("hidden_size", u32_max);
            const std::uint64_t i = v.positive_integer("intermediate_size", u32_max);
            const std::uint64_t p = v.positive_integer("patch_size", u32_max);
            const std::uint64_t side = v.positive_integer("image_size", u32_max) / p;
            const std::uint64_t ch = v.optional_positive_integer("num_channels", 64).value_or(3);
            if (v.optional_boolean("vision_use_head").value_or(false))
                v.fail("vision_use_head", "false (Gemma-3's tower has no pooling head)", "true");
            const std::uint64_t layer =
                vision_sum({{4, h * h}, {4, h}, {2, h * i}, {1, i}, {1, h}, {4, h}});
            return vision_sum({{layers_of(layer, "num_hidden_layers"), 1},
                               {ch * p * p, h},
                               {1, h},
                               {side * side, h},
                               {2, h},
                               // Gemma3MultiModalProjector: mm_input_projection_weight and
                               // mm_soft_emb_norm.
                               {h, text_hidden},
                               {1, h}});
        }
        case Family::qwen2_5_vl: {
            const std::uint64_t h = v.positive_integer("hidden_size", u32_max);
            const std::uint64_t i = v.positive_integer("intermediate_size", u32_max);
            const std::uint64_t p = v.positive_integer("patch_size", u32_max);
            const std::uint64_t t =
                v.optional_positive_integer("temporal_patch_size", 64).value_or(2);
            const auto ch_key = v.first_present({"in_channels", "in_chans"});
            const std::uint64_t ch = ch_key ? v.positive_integer(*ch_key, 64) : 3;
            const std::uint64_t m =
                v.optional_positive_integer("spatial_merge_size", 64).value_or(2);
            const std::uint64_t out = v.positive_integer("out_hidden_size", u32_max);
            const std::uint64_t layer = vision_sum(
                {{3 * h, h}, {3, h}, {h, h}, {1, h}, {2 * h, i}, {2, i}, {i, h}, {1, h}, {2, h}});
            const std::uint64_t merged = m * m * h;
            return vision_sum({{layers_of(layer, "depth"), 1},
                               {ch * t * p * p, h},
                               {1, h},
                               {merged, merged},
                               {1, merged},
                               {merged, out},
                               {1, out}});
        }
        case Family::qwen3_vl:
        case Family::qwen3_vl_moe:
        case Family::qwen3_5:  // qwen3_5.py builds Qwen3-VL's Qwen3_VisionTransformer
        case Family::qwen3_5_moe: {
            const std::uint64_t h = v.positive_integer("hidden_size", u32_max);
            const std::uint64_t i = v.positive_integer("intermediate_size", u32_max);
            const std::uint64_t p = v.positive_integer("patch_size", u32_max);
            const std::uint64_t t =
                v.optional_positive_integer("temporal_patch_size", 64).value_or(2);
            const std::uint64_t ch = v.optional_positive_integer("in_channels", 64).value_or(3);
            const std::uint64_t m =
                v.optional_positive_integer("spatial_merge_size", 64).value_or(2);
            const std::uint64_t out = v.positive_integer("out_hidden_size", u32_max);
            const std::uint64_t pos = v.positive_integer("num_position_embeddings", u32_max);
            const std::uint64_t deepstack = v.optional_count_array("deepstack_visual_indexes")
                                                .value_or(std::vector<std::uint64_t>{})
                                                .size();
            const std::uint64_t layer =
                vision_sum({{4 * h, h}, {4, h}, {2 * h, i}, {1, i}, {1, h}, {4, h}});
            const std::uint64_t merged = m * m * h;
            const std::uint64_t merger_linears =
                vision_sum({{merged, merged}, {1, merged}, {merged, out}, {1, out}});
            return vision_sum(
                {{layers_of(layer, "depth"), 1},
                 {ch * t * p * p, h},
                 {1, h},
                 {pos, h},
                 {2, h},
                 {merger_linears, 1},
                 {deepstack, detail::add(merger_linears, 2 * merged, "a vision tower's size")}});
        }
        case Family::llama4: {
            const std::uint64_t h = v.positive_integer("hidden_size", u32_max);
            const std::uint64_t i = v.positive_integer("intermediate_size", u32_max);
            const std::uint64_t p = v.positive_integer("patch_size", u32_max);
            const std::uint64_t side = v.positive_integer("image_size", u32_max) / p;
            const std::uint64_t ch = v.optional_positive_integer("num_channels", 64).value_or(3);
            const std::uint64_t in = v.positive_integer("projector_input_dim", u32_max);
            const std::uint64_t out = v.positive_integer("projector_output_dim", u32_max);
            const std::uint64_t vis_out = v.positive_integer("vision_output_dim", u32_max);
            if (v.optional_boolean("multi_modal_projector_bias").value_or(false))
                v.fail("multi_modal_projector_bias", "false (Llama-4's projector has no bias)",
                       "true");
            const std::uint64_t layer =
                vision_sum({{4 * h, h}, {4, h}, {2 * h, i}, {1, i}, {1, h}, {4, h}});
            return vision_sum({{layers_of(layer, "num_hidden_layers"), 1},
                               {ch * p * p, h},
                               {1, h},
                               {side * side + 1, h},
                               {4, h},
                               {i, in},
                               {out, out},
                               {vis_out, text_hidden}});
        }
        case Family::deepseek: {
            // Kimi-K2.5's MoonViT (vLLM's kimi_k25_vit.py, MoonViT3dPretrainedModel and
            // KimiK25MultiModalProjector "patchmerger"): a Conv2d patch embedding with bias, a
            // learned position table of init_pos_emb_height x init_pos_emb_width (the temporal
            // one is a fixed buffer), vt_num_hidden_layers blocks of LayerNorm -> wqkv and wo with
            // biases -> LayerNorm -> fc0 and fc1 with biases, a final LayerNorm; then the
            // projector's LayerNorm over the tower's width and two linear layers with biases from
            // merge x width to the text model's hidden size.
            if (!v.has("vt_hidden_size") ||
                v.optional_string("mm_projector_type").value_or("patchmerger") != "patchmerger" ||
                v.optional_string("pos_emb_type").value_or("divided_fixed") != "divided_fixed")
                return std::nullopt;
            const std::uint64_t h = v.positive_integer("vt_hidden_size", u32_max);
            const std::uint64_t i = v.positive_integer("vt_intermediate_size", u32_max);
            const std::uint64_t p = v.positive_integer("patch_size", 65'536);
            const std::uint64_t pos = detail::mul(
                v.positive_integer("init_pos_emb_height", u32_max),
                v.positive_integer("init_pos_emb_width", u32_max), "a vision tower's size");
            const std::uint64_t merged = merge_kernel_area(v) * h;
            const std::uint64_t layer =
                vision_sum({{4 * h, h}, {4, h}, {2 * h, i}, {1, i}, {1, h}, {4, h}});
            return vision_sum({{layers_of(layer, "vt_num_hidden_layers"), 1},
                               {3 * p * p, h},
                               {1, h},
                               {pos, h},
                               {4, h},
                               {merged, merged},
                               {1, merged},
                               {merged, text_hidden},
                               {1, text_hidden}});
        }
        case Family::gemma4: {
            // Clippable linears keep clip bounds beside each projection (Gemma4ClippableLinear):
            // not modelled, so the tower is not counted then (a note says so).
            if (v.optional_boolean("use_clipped_linears").value_or(false)) return std::nullopt;
            const std::uint64_t h = v.positive_integer("hidden_size", u32_max);
            const std::uint64_t i = v.positive_integer("intermediate_size", u32_max);
            const std::uint64_t heads = v.positive_integer("num_attention_heads", u32_max);
            const std::uint64_t kv = v.positive_integer("num_key_value_heads", u32_max);
            const std::uint64_t hd = v.positive_integer("head_dim", u32_max);
            const std::uint64_t p = v.positive_integer("patch_size", 65'536);
            const std::uint64_t pos = v.positive_integer("position_embedding_size", u32_max);
            const std::uint64_t std_terms =
                v.optional_boolean("standardize").value_or(false) ? 2 : 0;
            const std::uint64_t layer =
                vision_sum({{2 * heads * hd, h}, {2 * kv * hd, h}, {2, hd}, {3 * h, i}, {4, h}});
            return vision_sum({{layers_of(layer, "num_hidden_layers"), 1},
                               {3 * p * p, h},
                               {2 * pos, h},
                               {std_terms, h},
                               {h, text_hidden}});
        }
        default:
            return std::nullopt;
    }
}

/// Kimi-K3's vision tower and projector from `v` (its vision_config), or nullopt for a tower of
/// another kind. SGLang's kimi_k3_vl.py: KimiK3VisionTower (MoonViT3d) has a Conv2d patch
/// embedding (bias per patch_embed_proj_bias), a learned init_pos_emb_height x
/// init_pos_emb_width position table (the temporal one is a fixed buffer), vt_num_hidden_layers
/// blocks of norm0 -> wqkv (hidden to 3 x qkv_hidden_size) and wo -> norm1 -> fc0 and fc1 (biases
/// per attn_bias and linear_bias; RMSNorms without bias under norm_type rmsnorm, LayerNorms with
/// one otherwise), a final norm; KimiK3MultiModalProjector (PatchMergerMLPV2) two bias-free
/// linear layers from merge x mm_hidden_size to itself and to text_hidden_size, and post_norm.
[[nodiscard]] inline std::optional<std::uint64_t> kimi_k3_vision(const JsonReader& v,
                                                                 std::uint64_t text_hidden) {
    if (!v.has("vt_hidden_size") ||
        v.optional_string("mm_projector_type").value_or("") != "patchmergerv2" ||
        v.optional_string("pos_emb_type").value_or("divided_fixed") != "divided_fixed")
        return std::nullopt;
    const std::uint64_t h = v.positive_integer("vt_hidden_size", u32_max);
    const std::uint64_t i = v.positive_integer("vt_intermediate_size", u32_max);
    const std::uint64_t q = v.optional_positive_integer("qkv_hidden_size", u32_max).value_or(h);
    const std::uint64_t p = v.positive_integer("patch_size", 65'536);
    const std::uint64_t mm = v.optional_positive_integer("mm_hidden_size", u32_max).value_or(h);
    const std::uint64_t out =
        v.optional_positive_integer("text_hidden_size", u32_max).value_or(text_hidden);
    const std::uint64_t merged = merge_kernel_area(v) * mm;
    const std::uint64_t attn_bias = v.optional_boolean("attn_bias").value_or(true) ? 1 : 0;
    const std::uint64_t linear_bias = v.optional_boolean("linear_bias").value_or(true) ? 1 : 0;
    const std::uint64_t patch_bias =
        v.optional_boolean("patch_embed_proj_bias").value_or(true) ? 1 : 0;
    const std::uint64_t norm =
        v.optional_string("norm_type").value_or("layernorm") == "rmsnorm" ? h : 2 * h;
    const std::uint64_t layer = vision_sum({{2, norm},
                                            {3 * h, q},
                                            {attn_bias, 3 * q},
                                            {q, h},
                                            {attn_bias, h},
                                            {2 * h, i},
                                            {linear_bias, i + h}});
    const std::uint64_t layers = v.positive_integer("vt_num_hidden_layers", u32_max);
    const std::uint64_t pos =
        detail::mul(v.positive_integer("init_pos_emb_height", u32_max),
                    v.positive_integer("init_pos_emb_width", u32_max), "a vision tower's size");
    return vision_sum({{layer, layers},
                       {3 * p * p, h},
                       {patch_bias, h},
                       {pos, h},
                       {norm, 1},
                       {merged, merged},
                       {merged, out},
                       {out, 1}});
}

}  // namespace detail::hf

}  // namespace kvplan
