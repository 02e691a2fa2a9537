#pragma once

// DeepSeek-V4 (model_type deepseek_v4; vLLM's vllm/model_executor/models/deepseek_v4.py and
// vllm/model_executor/layers/deepseek_v4_attention.py). Every layer attends to a sliding window of
// uncompressed latents; compress_ratios[i] gives layer i a compressed pool beside it: 4 (CSA, with
// an indexer that picks index_topk entries), 128 (HCA, read whole) or 0 (the window only). One
// KV head of head_dim (512: qk_rope_head_dim RoPE values, the rest without RoPE). Each pool has a
// compressor (vllm/model_executor/layers/deepseek_compressor.py) whose fp32 state covers the last
// coff x ratio tokens (coff 2 for the overlapping ratio-4 windows, else 1), 2 x coff x head_dim
// values each; the indexer has its own compressor of index_head_dim.

#include <cstdint>
#include <string>
#include <vector>

#include "../detail/checked.hpp"
#include "../json.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "fields.hpp"
#include "recurrent.hpp"

namespace kvplan {

namespace detail::hf {

/// Bytes of a DeepSeek-V4 compressor's fp32 state per sequence: coff x ratio slots of
/// 2 x coff x `head_dim` values (kv_state and score_state), coff = 2 when the ratio is 4.
[[nodiscard]] constexpr std::uint64_t v4_compressor_state(std::uint64_t ratio,
                                                          std::uint64_t head_dim) {
    const std::uint64_t coff = ratio == 4 ? 2 : 1;
    return coff * ratio * (2 * coff * head_dim) * 4;
}

/// The layers, attention shape, MoE and hyper-connections (hc_mult, ModelConfig::hc_mult) of a
/// DeepSeek-V4 config into `c` (n layers). Every tensor is described (no extra_params): the
/// router's fp32 correction bias and the hash layers' tid2eid tables are MoeShape's
/// router_bias_fp32 and hash_layers.
inline void read_deepseek_v4(const JsonReader& r, std::uint32_t n, ModelConfig& c) {
    const std::uint64_t head_dim = r.positive_integer("head_dim", u32_max);
    const std::uint64_t rope = r.positive_integer("qk_rope_head_dim", u32_max);
    if (rope >= head_dim)
        r.fail("qk_rope_head_dim", "less than head_dim (" + std::to_string(head_dim) + ")",
               std::to_string(rope));
    const std::uint64_t kv_heads =
        r.optional_positive_integer("num_key_value_heads", u32_max).value_or(1);
    if (kv_heads != 1)
        r.fail("num_key_value_heads", "1 (DeepSeek-V4 caches one latent per token)",
               std::to_string(kv_heads));
    const std::uint64_t window = r.positive_integer("sliding_window", ~0ULL);
    const std::uint64_t index_dim = r.positive_integer("index_head_dim", u32_max);
    const std::uint64_t q_lora = r.positive_integer("q_lora_rank", u32_max);
    const std::uint64_t groups = r.positive_integer("o_groups", u32_max);
    if (c.num_heads % groups != 0)
        r.fail("o_groups", "a divisor of the " + std::to_string(c.num_heads) + " attention heads",
               std::to_string(groups));
    c.mla = {.q_lora_rank = u32(q_lora),
             .qk_nope_head_dim = u32(head_dim - rope),
             .v_head_dim = u32(head_dim),
             .index_n_heads = u32(r.positive_integer("index_n_heads", u32_max)),
             .o_groups = u32(groups),
             .o_lora_rank = u32(r.positive_integer("o_lora_rank", u32_max))};
    c.head_dim = u32(head_dim);

    // compress_ratios lists the MTP layers after the model's: the first n are the model's.
    const std::vector<std::uint64_t> ratios =
        r.optional_count_array("compress_ratios").value_or(std::vector<std::uint64_t>{});
    if (ratios.size() < n)
        r.fail("compress_ratios", "an entry per layer (at least " + std::to_string(n) + ")",
               std::to_string(ratios.size()) + " entries");
    const auto spec_of = [&](std::uint64_t ratio) {
        // vLLM: max(1, ratio); 1 is a window-only layer, 4 has the indexer, 128 does not.
        if (ratio <= 1) return compressed_mla(u32(head_dim - rope), u32(rope), window, 0, 0, {});
        const bool indexed = ratio == 4;
        const std::uint64_t state = v4_compressor_state(ratio, head_dim) +
                                    (indexed ? v4_compressor_state(ratio, index_dim) : 0);
        return compressed_mla(u32(head_dim - rope), u32(rope), window, u32(ratio),
                              indexed ? u32(index_dim) : 0, Bytes::exactly(state));
    };
    for (std::uint32_t i = 0; i < ratios.size(); ++i) {
        if (ratios[i] != 0 && ratios[i] != 1 && ratios[i] != 4 && ratios[i] != 128)
            r.fail(JsonReader::element("compress_ratios", i),
                   "0 or 1 (window only), 4 or 128 (vLLM's DeepSeek-V4 layer types)",
                   std::to_string(ratios[i]));
        if (i < n) c.layers.append(spec_of(ratios[i]));
    }
    // The first entry past the model's is the MTP layer's own (window only in V4-Flash and -Pro:
    // the checkpoint's mtp.0 has no compressor or indexer).
    if (ratios.size() > n) c.mtp_spec = spec_of(ratios[n]);

    // Every layer routes (DeepseekV4MoE): n_routed_experts of moe_intermediate_size, top
    // num_experts_per_tok, n_shared_experts beside them.
    MoeShape& m = c.moe;
    m.experts = u32(r.positive_integer("n_routed_experts", u32_max));
    m.experts_per_token = u32(r.positive_integer("num_experts_per_tok", m.experts));
    m.expert_intermediate_size = r.positive_integer("moe_intermediate_size", ~0ULL);
    m.shared_experts = u32(r.optional_count("n_shared_experts", u32_max).value_or(0));
    c.intermediate_size = 0;
    // vLLM's DeepseekV4MoE (vllm/model_executor/models/deepseek_v4.py): the first
    // num_hash_layers layers take their experts from gate.tid2eid (vocab x num_experts_per_tok,
    // int64 in DeepSeek's safetensors); the others have an fp32 e_score_correction_bias when
    // topk_method is noaux_tc (V4-Flash's and -Pro's).
    m.hash_layers = u32(r.optional_count("num_hash_layers", n).value_or(0));
    m.router_bias = r.optional_string("topk_method").value_or("") == "noaux_tc";
    m.router_bias_fp32 = true;

    c.hc_mult = u32(r.positive_integer("hc_mult", 64));
}

}  // namespace detail::hf

}  // namespace kvplan
