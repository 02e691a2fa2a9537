#pragma once

// Constexpr presets: each value is from the model's published config.json on Hugging Face (the repo
// named above each). The JSON importer (kvplan/hf_config.hpp) reads the same files, which are
// bundled under configs/models/, and a test checks that both agree.

#include "fixed_array.hpp"
#include "model.hpp"

namespace kvplan::presets {

// meta-llama/Meta-Llama-3-8B: 32 layers, 32 heads, 8 KV heads, hidden 4096 (head_dim 128),
// intermediate 14336, vocab 128256, max_position_embeddings 8192.
inline constexpr Model llama_3_8b{ModelConfig{
    .name = "Llama-3-8B",
    .layers = LayerStack::uniform(32, full_attention(8, 128)),
    .num_heads = 32,
    .hidden_size = 4096,
    .intermediate_size = 14336,
    .vocab_size = 128256,
    .max_position_embeddings = 8192,
}};

// meta-llama/Meta-Llama-3-70B: 80 layers, 64 heads, 8 KV heads, hidden 8192 (head_dim 128),
// intermediate 28672, vocab 128256, max_position_embeddings 8192.
inline constexpr Model llama_3_70b{ModelConfig{
    .name = "Llama-3-70B",
    .layers = LayerStack::uniform(80, full_attention(8, 128)),
    .num_heads = 64,
    .hidden_size = 8192,
    .intermediate_size = 28672,
    .vocab_size = 128256,
    .max_position_embeddings = 8192,
}};

// meta-llama/Llama-3.1-405B: 126 layers, 128 heads, 8 KV heads, hidden 16384 (head_dim 128),
// intermediate 53248, vocab 128256, max_position_embeddings 131072.
inline constexpr Model llama_3_1_405b{ModelConfig{
    .name = "Llama-3.1-405B",
    .layers = LayerStack::uniform(126, full_attention(8, 128)),
    .num_heads = 128,
    .hidden_size = 16384,
    .intermediate_size = 53248,
    .vocab_size = 128256,
    .max_position_embeddings = 131072,
}};

// mistralai/Mistral-7B-v0.1: 32 layers, 32 heads, 8 KV heads, hidden 4096, intermediate 14336,
// vocab 32000, sliding_window 4096 on every layer, max_position_embeddings 32768.
inline constexpr Model mistral_7b_v0_1{ModelConfig{
    .name = "Mistral-7B-v0.1",
    .layers = LayerStack::uniform(32, sliding_window(8, 128, 4096)),
    .num_heads = 32,
    .hidden_size = 4096,
    .intermediate_size = 14336,
    .vocab_size = 32000,
    .max_position_embeddings = 32768,
}};

// mistralai/Mixtral-8x7B-v0.1: 32 layers, 32 heads, 8 KV heads, hidden 4096, 8 local experts of
// intermediate 14336, 2 per token, vocab 32000, sliding_window null, max_position_embeddings 32768.
inline constexpr Model mixtral_8x7b{ModelConfig{
    .name = "Mixtral-8x7B",
    .layers = LayerStack::uniform(32, full_attention(8, 128)),
    .num_heads = 32,
    .hidden_size = 4096,
    .intermediate_size = 14336,
    .vocab_size = 32000,
    .max_position_embeddings = 32768,
    .moe = {.experts = 8, .experts_per_token = 2, .expert_intermediate_size = 14336},
}};

// Qwen/Qwen2.5-72B: 80 layers, 64 heads, 8 KV heads, hidden 8192, intermediate 29568, vocab 152064,
// q/k/v biases, use_sliding_window false (so no window), max_position_embeddings 131072.
inline constexpr Model qwen2_5_72b{ModelConfig{
    .name = "Qwen2.5-72B",
    .layers = LayerStack::uniform(80, full_attention(8, 128)),
    .num_heads = 64,
    .hidden_size = 8192,
    .intermediate_size = 29568,
    .vocab_size = 152064,
    .max_position_embeddings = 131072,
    .attention_bias = AttentionBias::qkv,
}};

// google/gemma-2-27b: 46 layers alternating sliding (even layers, window 4096) and global, 32
// heads, 16 KV heads, head_dim 128, hidden 4608, intermediate 36864, vocab 256000, tied embeddings,
// four norms per layer, max_position_embeddings 8192.
inline constexpr Model gemma_2_27b{ModelConfig{
    .name = "Gemma-2-27B",
    .layers = LayerStack::periodic(
        46, FixedArray{sliding_window(16, 128, 4096), full_attention(16, 128)}),
    .num_heads = 32,
    .head_dim = 128,
    .hidden_size = 4608,
    .intermediate_size = 36864,
    .vocab_size = 256000,
    .max_position_embeddings = 8192,
    .tie_embeddings = true,
    .norms_per_layer = 4,
}};

// google/gemma-3-27b-it (text_config): 62 layers, five sliding (window 1024) to one global
// (sliding_window_pattern 6), 32 heads, 16 KV heads, head_dim 128, hidden 5376, intermediate 21504,
// vocab 262208, tied embeddings, q/k norms, max_position_embeddings 131072. vLLM's rope tables:
// the global layers' linear x 8 over 1,048,576 positions, the sliding layers' own over 131,072.
inline constexpr Model gemma_3_27b{ModelConfig{
    .name = "Gemma-3-27B",
    .layers = LayerStack::periodic(
        62, FixedArray{sliding_window(16, 128, 1024), sliding_window(16, 128, 1024),
                       sliding_window(16, 128, 1024), sliding_window(16, 128, 1024),
                       sliding_window(16, 128, 1024), full_attention(16, 128)}),
    .num_heads = 32,
    .head_dim = 128,
    .rotary_positions = 1'048'576,
    .local_rotary_positions = 131'072,
    .hidden_size = 5376,
    .intermediate_size = 21504,
    .vocab_size = 262208,
    .max_position_embeddings = 131072,
    .tie_embeddings = true,
    .norms_per_layer = 4,
    .qk_norm = true,
}};

// deepseek-ai/DeepSeek-V3: 61 layers of MLA (kv_lora_rank 512, qk_rope_head_dim 64, q_lora_rank
// 1536, qk_nope_head_dim 128, v_head_dim 128), 128 heads, hidden 7168, dense intermediate 18432 for
// the first 3 layers, then 256 routed experts (8 per token) of 2048 and 1 shared expert, vocab
// 129280, max_position_embeddings 163840. The multi-token-prediction layer is not counted.
inline constexpr Model deepseek_v3{ModelConfig{
    .name = "DeepSeek-V3",
    .layers = LayerStack::uniform(61, mla_latent(512, 64)),
    .num_heads = 128,
    .head_dim = 192,
    .hidden_size = 7168,
    .intermediate_size = 18432,
    .vocab_size = 129280,
    .max_position_embeddings = 163840,
    .moe = {.experts = 256,
            .experts_per_token = 8,
            .expert_intermediate_size = 2048,
            .shared_experts = 1,
            .first_dense_layers = 3,
            .router_bias = true},
    .mla = {.q_lora_rank = 1536, .qk_nope_head_dim = 128, .v_head_dim = 128},
}};

// openai/gpt-oss-120b: 36 layers alternating sliding (window 128) and full attention, starting
// sliding (layer_types), 64 heads, 8 KV heads, head_dim 64, hidden 2880, 128 experts (4 per token)
// of intermediate 2880, vocab 201088, attention and expert biases, max_position_embeddings 131072.
inline constexpr Model gpt_oss_120b{ModelConfig{
    .name = "gpt-oss-120b",
    .layers =
        LayerStack::periodic(36, FixedArray{sliding_window(8, 64, 128), full_attention(8, 64)}),
    .num_heads = 64,
    .head_dim = 64,
    .rotary_table_element_bytes = 4,
    .hidden_size = 2880,
    .intermediate_size = 2880,
    .vocab_size = 201088,
    .max_position_embeddings = 131072,
    .attention_bias = AttentionBias::qkvo,
    .mlp_bias = true,
    .moe = {.experts = 128,
            .experts_per_token = 4,
            .expert_intermediate_size = 2880,
            .router_bias = true},
}};

// tiiuae/falcon-7b: 32 layers, 71 heads, multi_query (one KV head), head_dim 64 (4544 / 71),
// hidden 4544, plain 4x MLP (18176), LayerNorm, parallel attention with one norm per layer,
// vocab 65024, tied embeddings.
inline constexpr Model falcon_7b{ModelConfig{
    .name = "Falcon-7B",
    .layers = LayerStack::uniform(32, full_attention(1, 64)),
    .num_heads = 71,
    .hidden_size = 4544,
    .intermediate_size = 18176,
    .vocab_size = 65024,
    .max_position_embeddings = 2048,
    .tie_embeddings = true,
    .mlp = MlpKind::plain,
    .norm = NormKind::layer,
    .norms_per_layer = 1,
}};

/// Every preset, for tests and listings.
inline constexpr FixedArray all{&llama_3_8b,   &llama_3_70b,  &llama_3_1_405b, &mistral_7b_v0_1,
                                &mixtral_8x7b, &qwen2_5_72b,  &gemma_2_27b,    &gemma_3_27b,
                                &deepseek_v3,  &gpt_oss_120b, &falcon_7b};

}  // namespace kvplan::presets
