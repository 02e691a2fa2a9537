#pragma once

// Parameters and weight bytes, counted tensor by tensor from the model's shapes, for the whole
// model and for one rank of a parallel layout.
//
// What is counted, per layer (names as in Hugging Face checkpoints):
//   attention   q: hidden x heads x query_head_dim; k, v: hidden x kv_heads x k/v_head_dim;
//               o: heads x v_head_dim x hidden; biases per AttentionBias.
//   MLA         q_a (hidden x q_lora_rank) + q_a_layernorm + q_b (q_lora_rank x heads x
//               (qk_nope + qk_rope)), or q_proj (hidden x heads x (qk_nope + qk_rope)) when
//               q_lora_rank is 0; kv_a_proj_with_mqa (hidden x (kv_lora_rank + qk_rope));
//               kv_a_layernorm; kv_b (kv_lora_rank x heads x (qk_nope + v_head_dim)); o.
//   MLP         gated: gate, up, down (3 matrices); plain: up, down (2); biases if mlp_bias.
//   MoE layers  the router (hidden x experts, + bias), every routed expert, the shared experts.
//   norms       norms_per_layer x hidden (x2 for LayerNorm, which has a bias), q/k norms.
// plus the embedding, an untied LM head, the final norm, extra_params (spread over the
// constant-state layers if the model has any, since they hold the Mamba / linear-attention mixers
// those parameters describe, else over every layer), and a multimodal model's vision tower
// (vision_params, 16-bit, on the first pipeline stage). Chunked-local layers have the weights of
// full attention; MLP-only layers have no attention; under MlpLayers::mlp_only the mixer layers
// have no MLP.
//
// Weight formats apply to the linear layers of the blocks. The embedding, the LM head, norms,
// biases and the router stay 16-bit, as vLLM's fp8 and AWQ checkpoints keep them.
//
// Per rank (vLLM's tensor-parallel layers, vllm/model_executor/layers/linear.py): column-parallel
// matrices (q, k, v, gate, up, q_b, kv_b) split their output rows, row-parallel ones (o, down)
// split their input columns and keep their full bias on every rank; k and v keep one whole head
// per rank when tp exceeds kv_heads (QKVParallelLinear replicates them); MLA's q_a and kv_a, the
// router, norms and biases of row-parallel layers are replicated. The embedding and LM head are
// split by vocabulary after padding it to a multiple of 64 (vocab_parallel_embedding.py,
// pad_vocab_size). Under pipeline parallelism the first stage holds the embedding, the last one the
// final norm and the LM head; with tied embeddings and more than one stage the last stage holds its
// own copy of the embedding for the LM head (vllm/model_executor/models/llama.py: embed_tokens is
// built `if is_first_rank or (tie_word_embeddings and is_last_rank)`).
//
// Under a layout's Placement (layout.hpp) each part splits over its own degree: attention over the
// attention group, the dense MLP, shared experts, embedding and LM head as the engine places them,
// and the routed experts spread over ep (the fullest GPU holds ceil((experts + redundant) / ep)),
// each split expert_tp ways. Alike layers are counted once and multiplied.

//
// The parts: weights/format.hpp (formats and WeightOptions), weights/tensors.hpp (the tensors and
// parameter counts), weights/bytes.hpp (bytes for the model and per rank).

#include "weights/bytes.hpp"
#include "weights/checkpoint_files.hpp"
#include "weights/format.hpp"
#include "weights/tensors.hpp"
