#pragma once

// Hugging Face config.json -> kvplan::Model, reading fields the way transformers' config classes
// and vLLM's model_executor read them.
//
// Which fields (the first present of a list is used; `text_config` is read when the file has one):
//   layers, heads, hidden   num_hidden_layers | n_layer, num_attention_heads | n_head,
//                           hidden_size | n_embd
//   KV heads                num_key_value_heads; absent or null means MHA (as LlamaConfig).
//                           Falcon: new_decoder_architecture ? num_kv_heads | n_head_kv :
//                           multi_query ? 1 : heads. GPT-NeoX and GPT-J: MHA.
//   head_dim                head_dim where present, else hidden / heads (which must divide).
//   MLP width               intermediate_size; GPT-J n_inner (null: 4 x n_embd); Falcon
//                           ffn_hidden_size (absent: 4 x hidden).
//   windows                 layer_types when present ("full_attention", "sliding_attention",
//                           "linear_attention"); otherwise per family: Mistral and Phi-3 slide on
//                           every layer when sliding_window is a number, on none when it is null;
//                           Qwen2/Qwen3 only with use_sliding_window true, on layers >=
//                           max_window_layers (transformers' Qwen2Config.layer_types); Gemma-2 and
//                           gpt-oss on even layers; Gemma-3 on all but every
//                           sliding_window_pattern-th layer. use_sliding_window: false turns every
//                           window off (vLLM's ModelConfig.get_hf_config_sliding_window).
//   MLA (DeepSeek-V2/V3)    kv_lora_rank, q_lora_rank (null: queries projected directly),
//                           qk_nope_head_dim, qk_rope_head_dim, v_head_dim.
//   MoE                     num_local_experts | num_experts | n_routed_experts,
//                           num_experts_per_tok | experts_per_token, moe_intermediate_size (Mixtral
//                           and gpt-oss: intermediate_size), n_shared_experts,
//                           shared_expert_intermediate_size, first_k_dense_replace, moe_layer_freq
//                           (layer i is MoE when i % freq == 0), decoder_sparse_step ((i + 1) %
//                           step == 0), mlp_only_layers (a leading run of dense layers).
//   linear attention        Qwen3-Next: full_attention_interval (layer i is full attention when
//                           (i + 1) % interval == 0) or layer_types, and linear_num_key_heads (nk),
//                           linear_num_value_heads (nv), linear_key_head_dim (dk),
//                           linear_value_head_dim (dv), linear_conv_kernel_dim (K). Each Gated
//                           DeltaNet layer keeps per sequence a conv state of (K - 1) x (2 nk dk +
//                           nv dv) values and a recurrent state of nv x dk x dv values (vLLM's
//                           mamba state shapes for gated delta nets). In every recurrent layer
//                           (these and the Mamba layers below) a conv value takes
//                           HfImportOptions::state_element_bytes and a recurrent value
//                           ssm_state_element_bytes (by default the same).
//   Mamba-2 (Granite-4.0-H) model_type granitemoehybrid: layer_types "mamba" / "attention";
//                           mamba_n_heads (nh), mamba_d_head (p; "auto": expand x hidden / nh),
//                           mamba_d_state (N), mamba_n_groups (g), mamba_d_conv (K), mamba_expand
//                           (nh x p must be mamba_expand x hidden). Each Mamba layer keeps a conv
//                           state of (K - 1) x (nh p + 2 g N) values and an SSM state of nh x p x
//                           N values (vLLM's MambaStateShapeCalculator). shared_intermediate_size
//                           is the shared MLP on every layer (the dense MLP when num_local_experts
//                           is 0); intermediate_size is the routed experts' width.
//   Mamba-1 (Jamba)         attn_layer_period / attn_layer_offset (layer i is attention when
//                           i % period == offset), expert_layer_period / expert_layer_offset (MoE
//                           likewise), mamba_d_state (N), mamba_d_conv (K), mamba_expand (d_inner =
//                           expand x hidden), mamba_dt_rank (missing or "auto": ceil(hidden /
//                           16), as JambaConfig). Each Mamba layer keeps (K - 1) x d_inner conv
//                           values and d_inner x N SSM values.
//   Llama-4                 text_config; a layer with RoPE (no_rope_layers[i] 1, else every
//                           no_rope_layer_interval-th layer is NoPE) attends within chunks of
//                           attention_chunk_size (CacheKind::chunked_local); MoE where (i + 1) %
//                           interleave_moe_layer_step == 0, experts and the shared expert of
//                           intermediate_size, dense layers of intermediate_size_mlp (llama4.py).
//   GLM-4.5 (glm4_moe)      first_k_dense_replace, n_shared_experts, QKV bias (attention_bias),
//                           use_qk_norm, head_dim; the router's e_score_correction_bias.
//   DeepSeek-V3.2           index_head_dim, index_n_heads: the indexer's key is cached per token
//                           beside the latent (132 B for 128 dims), its weights counted.
//   Gemma-3n                the last num_kv_shared_layers layers share earlier caches; per-layer
//                           embeddings, AltUp and Laurel in extra_params; intermediate_size may be
//                           a list of equal widths.
//   Nemotron-H              hybrid_override_pattern: M (Mamba-2: mamba_num_heads, mamba_head_dim,
//                           ssm_state_size, n_groups, conv_kernel), * (attention), - (MLP of
//                           intermediate_size, squared ReLU), E (MoE: n_routed_experts,
//                           moe_intermediate_size, moe_shared_expert_intermediate_size); one mixer
//                           or one MLP per block; the SSM state in mamba_ssm_cache_dtype (float32
//                           when absent) unless HfImportOptions says otherwise, as vLLM does.
//                           Newer files (Nemotron-3 Ultra, 3.5) give layers_block_type instead:
//                           "mamba", "attention", "mlp", "moe" per block (num_hidden_layers may
//                           be absent: its length).
//   Qwen3.5 (qwen3_5,       text_config of Qwen3-Next's layers (layer_types, Gated DeltaNet,
//   qwen3_5_moe)            gated attention: attn_output_gate); qwen3_5 has a dense MLP of
//                           intermediate_size; the vision tower is Qwen3-VL's.
//   GLM-5 (glm_moe_dsa)     DeepSeek-V3.2's MLA and indexer under another name; GLM-5.2's
//                           indexer_types: a "shared" layer has no indexer (weights or key cache).
//   Kimi-K2.5 (kimi_k25)    text_config.architectures[0] decides (DeepseekV3ForCausalLM).
//   MiniMax-M2              every layer full attention (attn_type_list all 1) and MoE of
//                           num_local_experts x intermediate_size; q/k norms over all heads.
//   MiMo-V2-Flash           hybrid_layer_pattern (1: sliding_window_size), per kind of layer its
//                           KV heads and K/V head sizes (swa_num_key_value_heads, swa_v_head_dim,
//                           v_head_dim); moe_layer_freq a 0/1 flag per layer.
//   DeciLM (nemotron-nas)   block_configs: per layer n_heads_in_group (KV heads = heads / it) or
//                           a no-op attention, and ffn_mult (width int(2 x mult x hidden / 3)
//                           rounded up to 256, nemotron_nas.py).
//   Gemma 4 (gemma4)        text_config; full layers of global_head_dim with
//                           num_global_key_value_heads when attention_k_eq_v (V cached as K, as
//                           vLLM does); enable_moe_block: num_experts x moe_intermediate_size,
//                           top_k_experts, beside the dense MLP. Per-layer embeddings and
//                           KV-shared layers (E2B, E4B) are refused.
//   DeepSeek-V4             head_dim (one latent, qk_rope_head_dim of it with RoPE),
//   (deepseek_v4)           sliding_window on every layer, compress_ratios per layer (0 window
//                           only, 4 with the indexer of index_head_dim, 128), q_lora_rank,
//                           o_groups x o_lora_rank, hc_mult, num_hash_layers (deepseek_v4.hpp).
//   Kimi Linear             linear_attn_config: full_attn_layers (MLA) and kda_layers (KDA,
//   (kimi_linear)           1-based), num_heads, head_dim, short_conv_kernel_size; num_experts,
//                           num_experts_per_token, num_shared_experts (kimi_linear.hpp).
//   MiniMax-M3 (minimax_m3, GQA of head_dim on every layer; where
//   minimax_m3_vl,          sparse_attention_config.sparse_attention_freq flags a layer, an
//   minimax_m3_text)        indexer key of sparse_index_dim per token beside K and V
//                           (sparse_num_index_heads must be num_key_value_heads); moe_layer_freq a
//                           0/1 flag per layer, dense layers of dense_intermediate_size, experts
//                           and n_shared_experts of intermediate_size (minimax_m3.hpp).
//   Kimi-K3 (kimi_k3)       text_config is Kimi Linear's, with use_full_rank_gate,
//                           mla_use_output_gate, routed_expert_hidden_size (latent MoE,
//                           latent_moe_use_norm) and attn_res_block_size (kimi_linear.hpp);
//                           MoonViT3d tower (vision.hpp).
//   Mamba, Falcon-Mamba     state_size, conv_kernel, intermediate_size (else expand x hidden),
//   (Mamba-1), Mamba-2      time_step_rank; Mamba-2: num_heads, head_dim, n_groups. No attention,
//                           no MLP: a fixed state per sequence.
//   vision_config           Gemma-3 (SigLIP), Qwen2.5-VL, Qwen3-VL (and Qwen3.5), Llama-4 and
//                           Kimi-K2.5 (MoonViT) and Gemma 4 towers are counted into
//                           vision_params (hf_config/vision.hpp), MiniMax-M3's with the wrapper's
//                           projector_hidden_size (minimax_m3.hpp).
//   no model_type           architectures[0] decides, with a note; with neither, the sizes are read
//                           as a plain decoder (plain_decoder.hpp), with a note.
//   encoder-decoder         is_encoder_decoder true, or a T5 / BART / Whisper model_type: refused.
//
// Defaults. A field that sizes the model is required. A missing flag takes the default of its
// transformers config class, as every engine loading the file does: tie_word_embeddings (true for
// Gemma and Falcon, false elsewhere), attention_bias / mlp_bias (false; GPT-NeoX true),
// use_sliding_window (false for Qwen), max_window_layers (28), Falcon's multi_query (true),
// new_decoder_architecture (false), parallel_attn (true) and bias (false), decoder_sparse_step (1),
// first_k_dense_replace (0), moe_layer_freq (1), mamba_conv_bias (true), mamba_proj_bias (false),
// Jamba's attn_layer_period / offset (8, 4) and expert_layer_period / offset (2, 1), sliding
// windows where the class has one (Gemma-2 4096, Gemma-3 4096 and pattern 6, gpt-oss 128) and
// Qwen3-Next's full_attention_interval (4). Gemma-3's published text_config omits vocab_size
// (262208) and max_position_embeddings (131072), which Gemma3TextConfig supplies. Mistral's
// sliding_window has no safe default (4096 in v0.1, null later) and must be present, number or
// null.
//
// Parameters the core's fields do not describe go to extra_params: gpt-oss's attention sinks (one
// per head per layer), GPT-J's LM-head bias, Qwen3-Next's linear-attention mixers, its output gate
// on the queries (q_proj is twice as wide) and its shared-expert gate, the Mamba mixers of
// Granite-4.0-H and Jamba, Nemotron-H, Mamba and Mamba-2. Granite's dense variant still needs
// num_local_experts: its class default is 8 experts, not a dense model. Multi-token-prediction
// layers (num_nextn_predict_layers) are not part of the model; a note says so.
//
// The functions are declared here and defined in import_impl.hpp, which one translation unit of the
// program compiles: the one that defines KVPLAN_HF_CONFIG_IMPLEMENTATION before including
// <kvplan/hf_config.hpp>. Every other file includes the declarations only.

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../model.hpp"
#include "options.hpp"

namespace kvplan {

/// A parsed JSON document (nlohmann::json), as json.hpp names it.
using Json = nlohmann::json;

/// A model imported from a config.json, and what the import assumed that the file does not say (a
/// model_type it fell back from, a plain decoder read without one, a vision tower counted apart,
/// layers left out): one sentence each, for a front end to show.
struct HfImport {
    Model model;
    std::vector<std::string> notes;
};

/// Maps a parsed Hugging Face config.json to a Model, with notes. `source` names the document in
/// messages (a file name); `name` becomes the model's name (the source if empty). Throws
/// InvalidInput naming the source, the JSON path, the expected and the found on anything it
/// cannot map.
[[nodiscard]] HfImport import_hf_json(const Json& root, std::string_view source,
                                      std::string_view name = {},
                                      const HfImportOptions& options = {});

/// Maps a parsed Hugging Face config.json to a Model. `source` names the document in messages (a
/// file name); `name` becomes the model's name (the source if empty). Throws InvalidInput naming
/// the source, the JSON path, the expected and the found on anything it cannot map.
[[nodiscard]] Model model_from_hf_json(const Json& root, std::string_view source,
                                       std::string_view name = {},
                                       const HfImportOptions& options = {});

/// Imports a config.json, or the config.json inside a model folder, with notes. The file may hold
/// Python's Infinity and NaN, as transformers writes them. The model is named after the folder
/// (for .../Llama-3-8B/config.json) or the file's stem. Throws InvalidInput on anything it cannot
/// read or map.
[[nodiscard]] HfImport import_hf_config(const std::filesystem::path& file_or_folder,
                                        const HfImportOptions& options = {});

/// Loads a config.json, or the config.json inside a model folder (import_hf_config's model).
[[nodiscard]] Model load_hf_config(const std::filesystem::path& file_or_folder,
                                   const HfImportOptions& options = {});

/// The folder of bundled model configs: `config_dir`/models when it exists, else `config_dir`.
[[nodiscard]] std::filesystem::path models_dir(const std::filesystem::path& config_dir);

/// The ids of the bundled models (file names without .json, sorted).
[[nodiscard]] std::vector<std::string> bundled_model_ids(const std::filesystem::path& config_dir);

/// The file of bundled model `id` (case-insensitive: "Llama-3-70B" finds llama-3-70b.json).
[[nodiscard]] std::optional<std::filesystem::path> find_bundled_model(
    const std::filesystem::path& config_dir, std::string_view id);

/// Imports bundled model `id`, named by its id, with notes. Throws InvalidInput listing the
/// bundled ids when there is no such model.
[[nodiscard]] HfImport import_bundled_model(const std::filesystem::path& config_dir,
                                            std::string_view id,
                                            const HfImportOptions& options = {});

/// Loads bundled model `id` (import_bundled_model's model).
[[nodiscard]] Model load_bundled_model(const std::filesystem::path& config_dir, std::string_view id,
                                       const HfImportOptions& options = {});

/// Imports a model named by a path (a config.json or a folder holding one) or a bundled id, with
/// notes: a path that exists wins.
[[nodiscard]] HfImport import_model(const std::filesystem::path& config_dir,
                                    std::string_view path_or_id,
                                    const HfImportOptions& options = {});

/// A model named by a path or a bundled id (import_model's model).
[[nodiscard]] Model resolve_model(const std::filesystem::path& config_dir,
                                  std::string_view path_or_id, const HfImportOptions& options = {});

}  // namespace kvplan
