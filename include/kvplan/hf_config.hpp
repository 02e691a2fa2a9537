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
// Granite-4.0-H and Jamba. Granite's dense variant still needs num_local_experts: its class
// default is 8 experts, not a dense model. The vision tower of a multimodal wrapper and
// DeepSeek-V3's multi-token-prediction layer are not part of the model.

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "json.hpp"
#include "model.hpp"
#include "units.hpp"
#include "weights.hpp"

namespace kvplan {

/// Choices the config file does not make: how wide the values of Mamba and linear-attention
/// state are, as vLLM's --mamba-cache-dtype and --mamba-ssm-cache-dtype choose them
/// (MambaStateDtypeCalculator in vllm/model_executor/layers/mamba/mamba_utils.py).
struct HfImportOptions {
    /// Bytes per value of the convolution state, and of the recurrent (SSM) state unless
    /// ssm_state_element_bytes says otherwise (2: bf16, vLLM's "auto" for a bf16 model).
    std::uint32_t state_element_bytes = 2;
    /// Bytes per value of the recurrent (SSM) state; 0: as state_element_bytes (vLLM's "auto").
    std::uint32_t ssm_state_element_bytes = 0;
};

namespace detail::hf {

enum class Family : std::uint8_t {
    llama,
    mistral,
    mixtral,
    phi3,
    qwen2,
    qwen2_moe,
    qwen3,
    qwen3_moe,
    qwen3_next,
    gemma,
    gemma2,
    gemma3,
    deepseek,
    falcon,
    gpt_neox,
    gptj,
    gpt_oss,
    granite_hybrid,
    jamba,
};

struct NamedFamily {
    std::string_view name;
    Family family;
};

// transformers' model_type values this importer maps.
inline constexpr std::array model_types{
    NamedFamily{"llama", Family::llama},           NamedFamily{"mistral", Family::mistral},
    NamedFamily{"mixtral", Family::mixtral},       NamedFamily{"phi3", Family::phi3},
    NamedFamily{"qwen2", Family::qwen2},           NamedFamily{"qwen2_moe", Family::qwen2_moe},
    NamedFamily{"qwen3", Family::qwen3},           NamedFamily{"qwen3_moe", Family::qwen3_moe},
    NamedFamily{"qwen3_next", Family::qwen3_next}, NamedFamily{"gemma", Family::gemma},
    NamedFamily{"gemma2", Family::gemma2},         NamedFamily{"gemma3", Family::gemma3},
    NamedFamily{"gemma3_text", Family::gemma3},    NamedFamily{"deepseek_v2", Family::deepseek},
    NamedFamily{"deepseek_v3", Family::deepseek},  NamedFamily{"falcon", Family::falcon},
    NamedFamily{"RefinedWeb", Family::falcon},     NamedFamily{"RefinedWebModel", Family::falcon},
    NamedFamily{"gpt_neox", Family::gpt_neox},     NamedFamily{"gptj", Family::gptj},
    NamedFamily{"gpt_oss", Family::gpt_oss},
    NamedFamily{"granitemoehybrid", Family::granite_hybrid},
    NamedFamily{"jamba", Family::jamba},
};

// The architectures[0] class names, for files without model_type.
inline constexpr std::array architectures{
    NamedFamily{"LlamaForCausalLM", Family::llama},
    NamedFamily{"MistralForCausalLM", Family::mistral},
    NamedFamily{"MixtralForCausalLM", Family::mixtral},
    NamedFamily{"Phi3ForCausalLM", Family::phi3},
    NamedFamily{"Qwen2ForCausalLM", Family::qwen2},
    NamedFamily{"Qwen2MoeForCausalLM", Family::qwen2_moe},
    NamedFamily{"Qwen3ForCausalLM", Family::qwen3},
    NamedFamily{"Qwen3MoeForCausalLM", Family::qwen3_moe},
    NamedFamily{"Qwen3NextForCausalLM", Family::qwen3_next},
    NamedFamily{"GemmaForCausalLM", Family::gemma},
    NamedFamily{"Gemma2ForCausalLM", Family::gemma2},
    NamedFamily{"Gemma3ForCausalLM", Family::gemma3},
    NamedFamily{"Gemma3ForConditionalGeneration", Family::gemma3},
    NamedFamily{"DeepseekV2ForCausalLM", Family::deepseek},
    NamedFamily{"DeepseekV3ForCausalLM", Family::deepseek},
    NamedFamily{"FalconForCausalLM", Family::falcon},
    NamedFamily{"RWForCausalLM", Family::falcon},
    NamedFamily{"GPTNeoXForCausalLM", Family::gpt_neox},
    NamedFamily{"GPTJForCausalLM", Family::gptj},
    NamedFamily{"GptOssForCausalLM", Family::gpt_oss},
    NamedFamily{"GraniteMoeHybridForCausalLM", Family::granite_hybrid},
    NamedFamily{"JambaForCausalLM", Family::jamba},
};

template <std::size_t N>
[[nodiscard]] inline std::string list_names(const std::array<NamedFamily, N>& names) {
    std::string s;
    for (const NamedFamily& n : names) s += (s.empty() ? "" : ", ") + std::string(n.name);
    return s;
}

template <std::size_t N>
[[nodiscard]] inline std::optional<Family> lookup(const std::array<NamedFamily, N>& names,
                                                  std::string_view s) {
    for (const NamedFamily& n : names)
        if (n.name == s) return n.family;
    return std::nullopt;
}

/// The family from model_type (a nested text_config's first, then the file's), else from
/// architectures[0].
[[nodiscard]] inline Family family_of(const JsonReader& top, const JsonReader& text) {
    const bool nested = &text != &top;
    const std::optional<std::string> text_type =
        nested ? text.optional_string("model_type") : std::nullopt;
    const std::optional<std::string> top_type = top.optional_string("model_type");
    if (text_type)
        if (const auto f = lookup(model_types, *text_type)) return *f;
    if (top_type)
        if (const auto f = lookup(model_types, *top_type)) return *f;
    const std::string expected = "a supported model_type (" + list_names(model_types) + ")";
    if (text_type) text.fail("model_type", expected, "\"" + *text_type + "\"");
    if (top_type) top.fail("model_type", expected, "\"" + *top_type + "\"");
    if (const auto archs = top.optional_string_array("architectures"); archs && !archs->empty()) {
        if (const auto f = lookup(architectures, archs->front())) return *f;
        top.fail("architectures[0]", "a supported architecture (" + list_names(architectures) + ")",
                 "\"" + archs->front() + "\"");
    }
    top.fail("model_type", expected, "nothing (neither model_type nor architectures is given)");
}

constexpr std::uint64_t u32_max = 0xFFFF'FFFFULL;

/// A required size under the first present of `keys` (the first key names it when all are
/// missing).
[[nodiscard]] inline std::uint64_t size_field(const JsonReader& r,
                                              std::initializer_list<std::string_view> keys,
                                              std::uint64_t max = u32_max) {
    const auto k = r.first_present(keys);
    return r.positive_integer(k ? *k : *keys.begin(), max);
}

[[nodiscard]] inline std::uint32_t u32(std::uint64_t v) { return static_cast<std::uint32_t>(v); }

/// What one layer is, before it becomes a CacheSpec.
enum class LayerKind : std::uint8_t { full, sliding, linear };

/// The per-layer kinds from layer_types, or from the family's own rule.
[[nodiscard]] inline std::vector<LayerKind> layer_kinds(const JsonReader& r, Family f,
                                                        std::uint32_t n) {
    std::vector<LayerKind> kinds(n, LayerKind::full);
    const bool qwen = f == Family::qwen2 || f == Family::qwen2_moe || f == Family::qwen3 ||
                      f == Family::qwen3_moe || f == Family::qwen3_next;
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
            } else if (t == "linear_attention" && f == Family::qwen3_next) {
                kinds[i] = LayerKind::linear;
            } else {
                r.fail(JsonReader::element("layer_types", i),
                       f == Family::qwen3_next
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
        case Family::qwen3_next: {
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
            break;
        case Family::qwen2_moe:
        case Family::qwen3_moe:
        case Family::qwen3_next: {
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
    // Qwen2-MoE and Qwen3-Next gate the shared expert with a hidden x 1 projection per MoE layer.
    if (m.shared_experts != 0 && (f == Family::qwen2_moe || f == Family::qwen3_next)) {
        std::uint64_t moe_layers = 0;
        for (std::uint32_t i = 0; i < c.layers.num_layers; ++i)
            moe_layers += m.is_moe_layer(i) ? 1 : 0;
        extra += moe_layers * c.hidden_size;
    }
}

/// Whether `key` holds the string "auto" (a size the config class derives from others).
[[nodiscard]] inline bool is_auto(const JsonReader& r, std::string_view key) {
    const Json* v = r.find(key);
    return v != nullptr && v->is_string() && v->get<std::string>() == "auto";
}

/// One recurrent layer's state per sequence, its convolution and its recurrent (SSM) part in
/// values, and its mixer's parameters.
struct RecurrentShape {
    std::uint64_t conv_values = 0;
    std::uint64_t ssm_values = 0;
    std::uint64_t mixer_params = 0;
};

/// a x b for a recurrent layer's sizes: OverflowError, never a wrap.
[[nodiscard]] inline std::uint64_t times(std::uint64_t a, std::uint64_t b) {
    return detail::mul(a, b, "a recurrent layer's size");
}

/// The sum of `terms`: OverflowError, never a wrap.
[[nodiscard]] inline std::uint64_t sum(std::initializer_list<std::uint64_t> terms) {
    std::uint64_t s = 0;
    for (std::uint64_t t : terms) s = detail::add(s, t, "a recurrent layer's size");
    return s;
}

/// Qwen3-Next's Gated DeltaNet layer.
[[nodiscard]] inline RecurrentShape gated_delta_net(const JsonReader& r, std::uint64_t hidden) {
    const std::uint64_t nk = r.positive_integer("linear_num_key_heads", u32_max);
    const std::uint64_t nv = r.positive_integer("linear_num_value_heads", u32_max);
    const std::uint64_t dk = r.positive_integer("linear_key_head_dim", u32_max);
    const std::uint64_t dv = r.positive_integer("linear_value_head_dim", u32_max);
    const std::uint64_t k = r.positive_integer("linear_conv_kernel_dim", u32_max);
    const std::uint64_t qk = times(2, times(nk, dk));
    const std::uint64_t conv_dim = sum({qk, times(nv, dv)});
    // Gated DeltaNet mixer (transformers' Qwen3NextGatedDeltaNet): in_proj_qkvz, in_proj_ba, a
    // depthwise conv1d of K taps, dt_bias and A_log per value head, a gated RMSNorm of dv,
    // out_proj.
    return {.conv_values = times(k - 1, conv_dim),
            .ssm_values = times(nv, times(dk, dv)),
            .mixer_params = sum({times(hidden, sum({qk, times(2, times(nv, dv))})),
                                 times(hidden, times(2, nv)), times(conv_dim, k), times(2, nv), dv,
                                 times(times(nv, dv), hidden)})};
}

/// A Mamba-2 layer (Granite-4.0-H): mamba_n_heads (nh) heads of mamba_d_head (p), mamba_n_groups
/// (g) groups of B and C of mamba_d_state (N), a conv of mamba_d_conv (K) taps over d_inner =
/// mamba_expand x hidden = nh x p channels plus B and C.
[[nodiscard]] inline RecurrentShape mamba2_layer(const JsonReader& r, std::uint64_t hidden) {
    const std::uint64_t nh = r.positive_integer("mamba_n_heads", u32_max);
    const std::uint64_t n_state = r.positive_integer("mamba_d_state", u32_max);
    const std::uint64_t g = r.positive_integer("mamba_n_groups", u32_max);
    const std::uint64_t k = r.positive_integer("mamba_d_conv", u32_max);
    const std::uint64_t expand = r.positive_integer("mamba_expand", u32_max);
    const std::uint64_t expanded = times(expand, hidden);
    // GraniteMoeHybridConfig: mamba_d_head "auto" is mamba_expand x hidden / mamba_n_heads.
    const std::uint64_t p = is_auto(r, "mamba_d_head")
                                ? expanded / nh
                                : r.positive_integer("mamba_d_head", u32_max);
    const std::uint64_t d_inner = times(nh, p);
    // GraniteMoeHybridConfig checks the two spellings of d_inner agree.
    if (expanded != d_inner)
        r.fail("mamba_d_head",
               "mamba_n_heads x mamba_d_head equal to mamba_expand x hidden_size (" +
                   std::to_string(expanded) + ")",
               std::to_string(p) + " (" + std::to_string(nh) + " x " + std::to_string(p) + " = " +
                   std::to_string(d_inner) + ")");
    if (nh % g != 0)
        r.fail("mamba_n_groups", "a divisor of the " + std::to_string(nh) + " mamba heads",
               std::to_string(g));
    const bool conv_bias = r.optional_boolean("mamba_conv_bias").value_or(true);
    const bool proj_bias = r.optional_boolean("mamba_proj_bias").value_or(false);
    const std::uint64_t conv_dim = sum({d_inner, times(2, times(g, n_state))});
    // vLLM's MambaStateShapeCalculator.mamba2_state_shape: conv state (K - 1) x conv_dim, SSM
    // state nh x p x N.
    const std::uint64_t conv_state = times(k - 1, conv_dim);
    const std::uint64_t ssm_state = times(d_inner, n_state);
    // MambaMixer2 (vLLM mamba_mixer2.py, transformers' GraniteMoeHybridMambaLayer): in_proj to
    // gate, x/B/C and dt; a depthwise conv1d of K taps; dt_bias, A_log and D per head; the gated
    // RMSNorm over d_inner; out_proj.
    const std::uint64_t in_width = sum({d_inner, conv_dim, nh});
    const std::uint64_t mixer =
        sum({times(hidden, in_width), proj_bias ? in_width : 0, times(conv_dim, k),
             conv_bias ? conv_dim : 0, times(3, nh), d_inner, times(d_inner, hidden),
             proj_bias ? hidden : 0});
    return {.conv_values = conv_state, .ssm_values = ssm_state, .mixer_params = mixer};
}

/// A Mamba-1 layer (Jamba): d_inner = mamba_expand x hidden channels, mamba_d_state (N),
/// mamba_d_conv (K) taps, mamba_dt_rank (R).
[[nodiscard]] inline RecurrentShape mamba1_layer(const JsonReader& r, std::uint64_t hidden) {
    const std::uint64_t n_state = r.positive_integer("mamba_d_state", u32_max);
    const std::uint64_t k = r.positive_integer("mamba_d_conv", u32_max);
    const std::uint64_t expand = r.positive_integer("mamba_expand", u32_max);
    // JambaConfig: mamba_dt_rank "auto" (its default) is ceil(hidden / 16).
    const std::uint64_t rank = r.contains("mamba_dt_rank") && !is_auto(r, "mamba_dt_rank")
                                   ? r.positive_integer("mamba_dt_rank", u32_max)
                                   : hidden / 16 + (hidden % 16 != 0 ? 1 : 0);
    const bool conv_bias = r.optional_boolean("mamba_conv_bias").value_or(true);
    const bool proj_bias = r.optional_boolean("mamba_proj_bias").value_or(false);
    const std::uint64_t d_inner = times(expand, hidden);
    // vLLM's MambaStateShapeCalculator.mamba1_state_shape: conv d_inner x (K - 1), SSM
    // d_inner x N.
    const std::uint64_t conv_state = times(k - 1, d_inner);
    const std::uint64_t ssm_state = times(d_inner, n_state);
    // JambaMambaMixer (transformers): in_proj to x and gate, a depthwise conv1d, x_proj to dt, B
    // and C, dt_proj (with bias), A_log (d_inner x N), D, out_proj, and Jamba's RMSNorms on dt,
    // B and C.
    const std::uint64_t bc = times(2, n_state);
    const std::uint64_t mixer =
        sum({times(hidden, times(2, d_inner)), proj_bias ? times(2, d_inner) : 0,
             times(d_inner, k), conv_bias ? d_inner : 0, times(d_inner, sum({rank, bc})),
             times(rank, d_inner), d_inner, times(d_inner, n_state), d_inner,
             times(d_inner, hidden), proj_bias ? hidden : 0, rank, bc});
    return {.conv_values = conv_state, .ssm_values = ssm_state, .mixer_params = mixer};
}

/// A recurrent layer's state in bytes: the conv state at state_element_bytes, the SSM state at
/// ssm_state_element_bytes (0: the same), as vLLM's MambaStateDtypeCalculator pairs them.
[[nodiscard]] inline std::uint64_t state_bytes(const RecurrentShape& shape,
                                               const HfImportOptions& o) {
    const std::uint64_t ssm_bytes =
        o.ssm_state_element_bytes != 0 ? o.ssm_state_element_bytes : o.state_element_bytes;
    return detail::add(detail::mul(shape.conv_values, o.state_element_bytes, "a layer's state"),
                       detail::mul(shape.ssm_values, ssm_bytes, "a layer's state"),
                       "a layer's state");
}

}  // namespace detail::hf

/// Maps a parsed Hugging Face config.json to a Model. `source` names the document in messages (a
/// file name); `name` becomes the model's name (the source if empty). Throws InvalidInput naming
/// the source, the JSON path, the expected and the found on anything it cannot map.
[[nodiscard]] inline Model model_from_hf_json(const Json& root, std::string_view source,
                                              std::string_view name = {},
                                              const HfImportOptions& options = {}) {
    using namespace detail::hf;
    const JsonReader top(root, std::string(source));
    const std::optional<JsonReader> text_config = top.optional_object("text_config");
    const JsonReader& r = text_config ? *text_config : top;
    const Family f = family_of(top, r);

    ModelConfig c;
    c.name = name.empty() ? source : name;

    const std::uint32_t n = u32(size_field(r, {"num_hidden_layers", "n_layer"}, max_layers));
    const std::uint64_t heads = size_field(r, {"num_attention_heads", "n_head"});
    const std::uint64_t hidden = size_field(r, {"hidden_size", "n_embd"}, ~0ULL);
    c.num_heads = u32(heads);
    c.hidden_size = hidden;
    if (f == Family::gemma3 && !r.contains("vocab_size"))
        c.vocab_size = 262'208;  // Gemma3TextConfig's default, which the published files rely on
    else
        c.vocab_size = r.positive_integer("vocab_size");

    // Context length: the trained one, or the class default where published configs omit it.
    if (const auto k = r.first_present(
            {"max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"}))
        c.max_position_embeddings = r.positive_integer(*k, ~0ULL);
    else if (f == Family::gemma3)
        c.max_position_embeddings = 131'072;
    else if (f == Family::falcon)
        c.max_position_embeddings = 2048;

    // Families.
    const bool gemma = f == Family::gemma || f == Family::gemma2 || f == Family::gemma3;
    const bool layer_norm = f == Family::falcon || f == Family::gpt_neox || f == Family::gptj;
    c.norm = layer_norm ? NormKind::layer : NormKind::rms;
    c.mlp = layer_norm ? MlpKind::plain : MlpKind::gated;
    c.qk_norm = f == Family::qwen3 || f == Family::qwen3_moe || f == Family::qwen3_next ||
                f == Family::gemma3;
    c.norms_per_layer = f == Family::gemma2 || f == Family::gemma3 ? 4 : 2;
    const bool tie_default = gemma || f == Family::falcon;
    c.tie_embeddings =
        r.optional_boolean("tie_word_embeddings")
            .value_or(top.optional_boolean("tie_word_embeddings").value_or(tie_default));

    // KV heads and head_dim.
    std::uint64_t kv_heads = heads;
    std::string kv_key = "num_key_value_heads";
    if (f == Family::falcon) {
        const bool new_arch = r.optional_boolean("new_decoder_architecture").value_or(false);
        if (new_arch) {
            const auto k = r.first_present({"num_kv_heads", "n_head_kv"});
            kv_key = k ? std::string(*k) : "num_kv_heads";
            kv_heads = k ? r.positive_integer(*k, u32_max) : heads;  // FalconConfig: None -> heads
        } else if (r.optional_boolean("multi_query").value_or(true)) {
            kv_heads = 1;
        }
    } else if (f == Family::gemma3 && !r.has("num_key_value_heads")) {
        r.fail("num_key_value_heads", "a positive integer (Gemma-3's class default is not MHA)",
               "nothing (the field is missing)");
    } else if (f != Family::gpt_neox && f != Family::gptj && f != Family::deepseek) {
        if (const auto kv = r.optional_positive_integer("num_key_value_heads", u32_max))
            kv_heads = *kv;
    }
    if (f != Family::deepseek && heads % kv_heads != 0)
        r.fail(kv_key, "a divisor of the " + std::to_string(heads) + " attention heads",
               std::to_string(kv_heads));

    std::uint64_t head_dim = 0;
    if (const auto hd = r.optional_positive_integer("head_dim", u32_max)) {
        head_dim = *hd;
    } else if (gemma) {
        r.fail("head_dim", "a positive integer (Gemma's head_dim is not hidden / heads)",
               "nothing (the field is missing)");
    } else if (f != Family::deepseek) {
        if (hidden % heads != 0)
            r.fail("hidden_size",
                   "a multiple of the " + std::to_string(heads) + " heads (no head_dim is given)",
                   std::to_string(hidden));
        head_dim = hidden / heads;
    }

    // MLP width.
    if (f == Family::gptj) {
        c.intermediate_size = r.optional_positive_integer("n_inner", ~0ULL).value_or(4 * hidden);
    } else if (f == Family::falcon) {
        c.intermediate_size =
            r.optional_positive_integer("ffn_hidden_size", ~0ULL).value_or(4 * hidden);
    } else if (f == Family::granite_hybrid) {
        // GraniteMoeHybrid's shared_mlp: the dense MLP of a dense model, the shared expert of an
        // MoE one.
        c.intermediate_size = r.positive_integer("shared_intermediate_size", ~0ULL);
    } else if (f == Family::deepseek || f == Family::qwen2_moe || f == Family::qwen3_moe ||
               f == Family::qwen3_next) {
        c.intermediate_size = r.optional_positive_integer("intermediate_size", ~0ULL).value_or(0);
    } else {
        c.intermediate_size = r.positive_integer("intermediate_size", ~0ULL);
    }

    // Biases and norms per layer.
    std::uint64_t extra = 0;
    switch (f) {
        case Family::llama: {
            // vLLM's LlamaDecoderLayer also takes `bias` (InternLM).
            const bool b = r.optional_boolean("attention_bias").value_or(false) ||
                           r.optional_boolean("bias").value_or(false);
            c.attention_bias = b ? AttentionBias::qkvo : AttentionBias::none;
            c.mlp_bias = r.optional_boolean("mlp_bias").value_or(false);
            break;
        }
        case Family::qwen2:
        case Family::qwen2_moe:
            c.attention_bias = AttentionBias::qkv;
            break;  // fixed in Qwen2
        case Family::qwen3:
        case Family::qwen3_moe:
        case Family::qwen3_next:
        case Family::gemma:
        case Family::gemma2:
        case Family::gemma3:
        case Family::granite_hybrid:
            c.attention_bias = r.optional_boolean("attention_bias").value_or(false)
                                   ? AttentionBias::qkvo
                                   : AttentionBias::none;
            break;
        case Family::deepseek:
            if (r.optional_boolean("attention_bias").value_or(false))
                r.fail("attention_bias", "false (biases on MLA projections are not modelled)",
                       "true");
            break;
        case Family::falcon: {
            const bool b = r.optional_boolean("bias").value_or(false);
            c.attention_bias = b ? AttentionBias::qkvo : AttentionBias::none;
            c.mlp_bias = b;
            // Falcon-40B's new architecture norms attention and MLP inputs apart (ln_attn,
            // ln_mlp); the 7B's parallel block has one input_layernorm.
            if (r.optional_boolean("new_decoder_architecture").value_or(false))
                c.norms_per_layer =
                    u32(r.optional_positive_integer("num_ln_in_parallel_attn", 8).value_or(2));
            else
                c.norms_per_layer = r.optional_boolean("parallel_attn").value_or(true) ? 1 : 2;
            break;
        }
        case Family::gpt_neox:
            c.attention_bias = r.optional_boolean("attention_bias").value_or(true)
                                   ? AttentionBias::qkvo
                                   : AttentionBias::none;
            c.mlp_bias = true;
            break;
        case Family::gptj:
            c.mlp_bias = true;      // fc_in and fc_out
            c.norms_per_layer = 1;  // ln_1 only: attention and MLP read it in parallel
            extra += c.vocab_size;  // lm_head has a bias
            break;
        case Family::gpt_oss:
            c.attention_bias = r.optional_boolean("attention_bias").value_or(true)
                                   ? AttentionBias::qkvo
                                   : AttentionBias::none;
            c.mlp_bias = true;                  // the experts' gate_up and down biases
            extra += std::uint64_t{n} * heads;  // attention sinks
            break;
        default:
            break;
    }

    // Layers.
    if (f == Family::deepseek) {
        const std::uint64_t kv_lora = r.positive_integer("kv_lora_rank", u32_max);
        const std::uint64_t rope = r.positive_integer("qk_rope_head_dim", u32_max);
        const std::uint64_t nope = r.positive_integer("qk_nope_head_dim", u32_max);
        if (!r.contains("q_lora_rank"))
            r.fail("q_lora_rank", "a rank, or null for direct query projection",
                   "nothing (the field is missing)");
        c.mla = {
            .q_lora_rank = u32(r.optional_positive_integer("q_lora_rank", u32_max).value_or(0)),
            .qk_nope_head_dim = u32(nope),
            .v_head_dim = u32(r.positive_integer("v_head_dim", u32_max))};
        // Each fits 32 bits; their sum, the query head dimension, must too (never a wrap).
        if (nope + rope > u32_max)
            r.fail("qk_rope_head_dim",
                   "qk_nope_head_dim + qk_rope_head_dim at most " + std::to_string(u32_max),
                   std::to_string(nope + rope));
        c.head_dim = u32(nope + rope);
        c.layers = LayerStack::uniform(n, mla_latent(u32(kv_lora), u32(rope)));
    } else {
        const std::vector<LayerKind> kinds = layer_kinds(r, f, n);
        const bool any_sliding = std::count(kinds.begin(), kinds.end(), LayerKind::sliding) > 0;
        const std::uint64_t window = any_sliding ? window_of(r, f) : 0;
        CacheSpec linear{};
        if (std::count(kinds.begin(), kinds.end(), LayerKind::linear) > 0) {
            const RecurrentShape shape = f == Family::granite_hybrid ? mamba2_layer(r, hidden)
                                         : f == Family::jamba        ? mamba1_layer(r, hidden)
                                                                     : gated_delta_net(r, hidden);
            // The whole layer's state; kv_bytes.hpp's layer_state_bytes splits it evenly over TP
            // ranks. That is vLLM's sharding for Gated DeltaNet and Mamba-1 (every dimension
            // split is a multiple of tp) and for Mamba-2 when tp divides mamba_n_groups. When it
            // does not, vLLM (mamba_utils.py, extra_groups_for_head_shards) replicates the groups
            // up to tp, so each rank keeps (K - 1) x 2N x (groups added) / tp values more than
            // this even split: 384 of 536,960 (0.07%) on a Granite-4.0-H-Small rank at tp 2.
            // Not modelled.
            linear = constant_state(Bytes::exactly(state_bytes(shape, options)));
            extra += detail::mul(
                shape.mixer_params,
                static_cast<std::uint64_t>(
                    std::count(kinds.begin(), kinds.end(), LayerKind::linear)),
                "the recurrent mixers' parameters");
        }
        const CacheSpec full = full_attention(u32(kv_heads), u32(head_dim));
        const CacheSpec slide = sliding_window(u32(kv_heads), u32(head_dim), window);
        for (LayerKind k : kinds)
            c.layers.append(k == LayerKind::full ? full : k == LayerKind::sliding ? slide : linear);
        c.head_dim = u32(head_dim);
        if (f == Family::qwen3_next) {
            // Gated attention: q_proj also produces an output gate per head, doubling its width.
            const std::uint64_t full_layers =
                static_cast<std::uint64_t>(std::count(kinds.begin(), kinds.end(), LayerKind::full));
            extra += full_layers * hidden * heads * head_dim;
        }
    }

    const bool moe_family = f == Family::mixtral || f == Family::qwen2_moe ||
                            f == Family::qwen3_moe || f == Family::qwen3_next ||
                            f == Family::deepseek || f == Family::gpt_oss ||
                            f == Family::granite_hybrid || f == Family::jamba;
    if (moe_family) read_moe(r, f, c, extra);
    c.extra_params = extra;

    try {
        return Model{c};
    } catch (const InvalidModel& e) {
        throw InvalidInput(std::string(source) + ": " + e.what());
    }
}

/// Loads a config.json, or the config.json inside a model folder. The model is named after the
/// folder (for .../Llama-3-8B/config.json) or the file's stem. Throws InvalidInput on anything it
/// cannot read or map.
[[nodiscard]] inline Model load_hf_config(const std::filesystem::path& file_or_folder,
                                          const HfImportOptions& options = {}) {
    std::filesystem::path file = file_or_folder;
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) file /= "config.json";
    std::string name = file.stem().string();
    if (name == "config" && file.has_parent_path() && file.parent_path().has_filename())
        name = file.parent_path().filename().string();
    return model_from_hf_json(read_json_file(file), file.string(), name, options);
}

/// The folder of bundled model configs: `config_dir`/models when it exists, else `config_dir`.
[[nodiscard]] inline std::filesystem::path models_dir(const std::filesystem::path& config_dir) {
    std::error_code ec;
    const std::filesystem::path sub = config_dir / "models";
    return std::filesystem::is_directory(sub, ec) ? sub : config_dir;
}

/// The ids of the bundled models (file names without .json, sorted).
[[nodiscard]] inline std::vector<std::string> bundled_model_ids(
    const std::filesystem::path& config_dir) {
    std::vector<std::string> ids;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(models_dir(config_dir), ec))
        if (e.is_regular_file() && e.path().extension() == ".json")
            ids.push_back(e.path().stem().string());
    std::sort(ids.begin(), ids.end());
    return ids;
}

/// The file of bundled model `id` (case-insensitive: "Llama-3-70B" finds llama-3-70b.json).
[[nodiscard]] inline std::optional<std::filesystem::path> find_bundled_model(
    const std::filesystem::path& config_dir, std::string_view id) {
    const std::string want = detail::lower_ascii(id);
    for (const std::string& have : bundled_model_ids(config_dir))
        if (detail::lower_ascii(have) == want) return models_dir(config_dir) / (have + ".json");
    return std::nullopt;
}

/// Loads bundled model `id`, named by its id. Throws InvalidInput listing the bundled ids when
/// there is no such model.
[[nodiscard]] inline Model load_bundled_model(const std::filesystem::path& config_dir,
                                              std::string_view id,
                                              const HfImportOptions& options = {}) {
    const auto file = find_bundled_model(config_dir, id);
    if (!file) {
        // Appended piece by piece: GCC 12 at -O2 warns falsely (-Wrestrict, GCC bug 105651) on
        // "literal" + std::string temporaries here.
        std::string expected = "a bundled model id (";
        bool first = true;
        for (const std::string& s : bundled_model_ids(config_dir)) {
            if (!first) expected += ", ";
            expected += s;
            first = false;
        }
        expected += ") or a config path";
        std::string found = "\"";
        found.append(id).append("\"");
        detail::throw_field_error<InvalidInput>(models_dir(config_dir).string(), "model", expected,
                                                found);
    }
    return model_from_hf_json(read_json_file(*file), file->string(), file->stem().string(),
                              options);
}

/// The weight format the checkpoint itself is stored in, from quantization_config (mxfp4: gpt-oss's
/// experts in MXFP4 and the rest in bf16, as its modules_to_not_convert says; fp8; AWQ / GPTQ at
/// 4 bits with group 128: int4) or else torch_dtype; nullopt when the file says neither or says
/// something kvplan does not model (other bit widths or group sizes). DeepSeek-V3's fp8 checkpoint
/// keeps one scale per 128 x 128 block rather than per matrix: 0.002 bits per weight more.
[[nodiscard]] inline std::optional<WeightOptions> checkpoint_weight_options(
    const Json& root, std::string_view source) {
    const JsonReader top(root, std::string(source));
    if (const auto q = top.optional_object("quantization_config")) {
        const std::string method =
            detail::lower_ascii(q->optional_string("quant_method").value_or(""));
        if (method == "mxfp4")
            return WeightOptions{.format = WeightFormat::bf16,
                                 .expert_format = WeightFormat::mxfp4};
        if (method == "fp8") return WeightOptions{.format = WeightFormat::fp8};
        if (method == "awq" || method == "gptq") {
            const auto bits = q->optional_positive_integer("bits", 64);
            const auto group = q->optional_positive_integer("group_size", 1u << 20);
            if (bits == 4u && group == 128u) return WeightOptions{.format = WeightFormat::int4};
        }
        return std::nullopt;
    }
    const std::optional<JsonReader> text = top.optional_object("text_config");
    for (const JsonReader* r : {&top, text ? &*text : &top}) {
        if (const auto dtype = r->optional_string("torch_dtype")) {
            if (*dtype == "bfloat16") return WeightOptions{.format = WeightFormat::bf16};
            if (*dtype == "float16") return WeightOptions{.format = WeightFormat::fp16};
            if (*dtype == "float32") return WeightOptions{.format = WeightFormat::fp32};
        }
    }
    return std::nullopt;
}

/// A model named by a path (a config.json or a folder holding one) or a bundled id: a path that
/// exists wins.
[[nodiscard]] inline Model resolve_model(const std::filesystem::path& config_dir,
                                         std::string_view path_or_id,
                                         const HfImportOptions& options = {}) {
    std::error_code ec;
    const std::filesystem::path p{std::string(path_or_id)};
    if (std::filesystem::exists(p, ec)) return load_hf_config(p, options);
    return load_bundled_model(config_dir, path_or_id, options);
}

}  // namespace kvplan
