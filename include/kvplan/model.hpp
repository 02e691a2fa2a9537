#pragma once

// A model, as the cache and the weights see it: an ordered stack of layers, each of one cache kind,
// plus the shapes that weight and FLOP counts need. Everything is a constexpr aggregate: presets
// are built at compile time, imported configs at run time, and both are validated by one function.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "detail/message.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "fixed_array.hpp"
#include "optional.hpp"
#include "units.hpp"
#include "weight_format.hpp"

namespace kvplan {

/// What a layer keeps per sequence.
enum class CacheKind : std::uint8_t {
    full_attention,  ///< K and V for every token
    sliding_window,  ///< K and V for the last `window` tokens
    mla_latent,      ///< one compressed latent per token (kv_lora_rank + qk_rope_head_dim values)
    constant_state,  ///< a fixed state per sequence (Mamba, linear attention)
    shared,          ///< reuses another layer's cache: no bytes of its own
    chunked_local,   ///< K and V of the current attention chunk: at most `window` tokens
    mlp_only,        ///< no mixer at all, only an MLP (Nemotron-H's "-" layers): no cache
};

/// A CacheKind with its spelling.
struct NamedCacheKind {
    CacheKind kind;
    const char* name;
};

/// Every CacheKind, in enumerator order, with its spelling (the one table name() and
/// parse_cache_kind() read).
inline constexpr NamedCacheKind cache_kinds[] = {
    {CacheKind::full_attention, "full_attention"},
    {CacheKind::sliding_window, "sliding_window"},
    {CacheKind::mla_latent, "mla_latent"},
    {CacheKind::constant_state, "constant_state"},
    {CacheKind::shared, "shared"},
    {CacheKind::chunked_local, "chunked_local"},
    {CacheKind::mlp_only, "mlp_only"},
};

[[nodiscard]] constexpr const char* name(CacheKind k) noexcept {
    for (const NamedCacheKind& n : cache_kinds)
        if (n.kind == k) return n.name;
    return "?";
}

/// The CacheKind spelled `s`, or empty.
[[nodiscard]] constexpr Optional<CacheKind> parse_cache_kind(detail::TextRef s) noexcept {
    for (const NamedCacheKind& n : cache_kinds)
        if (s == detail::TextRef(n.name)) return n.kind;
    return {};
}

/// The cache shape of one layer. Which fields count depends on `kind`.
struct CacheSpec {
    CacheKind kind = CacheKind::full_attention;
    std::uint32_t kv_heads = 0;          ///< attention: KV heads (1 = MQA)
    std::uint32_t k_head_dim = 0;        ///< attention: key head dimension
    std::uint32_t v_head_dim = 0;        ///< attention: value head dimension (may differ from K)
    std::uint64_t window = 0;            ///< sliding_window: tokens kept; chunked_local: chunk size
    std::uint32_t kv_lora_rank = 0;      ///< mla_latent: compressed KV dimension
    std::uint32_t qk_rope_head_dim = 0;  ///< mla_latent: decoupled RoPE key dimension
    /// mla_latent and full_attention: the key dimension of a sparse-attention indexer
    /// (DeepSeek-V3.2's index_head_dim, MiniMax-M3's sparse_index_dim), one key per token cached
    /// beside the latent or the K and V; 0: none.
    std::uint32_t index_head_dim = 0;
    Bytes state_bytes{};  ///< constant_state: bytes per sequence per layer, whole model
    /// mla_latent with a window (DeepSeek-V4): one latent per compress_ratio tokens goes to a
    /// compressed pool beside the window of uncompressed latents; 0: no pool, the window only.
    /// state_bytes then holds the compressors' fp32 state per sequence.
    std::uint32_t compress_ratio = 0;

    friend constexpr bool operator==(const CacheSpec&, const CacheSpec&) = default;
};

/// Full attention (MHA, GQA, MQA) with one head dimension for K and V.
[[nodiscard]] constexpr CacheSpec full_attention(std::uint32_t kv_heads, std::uint32_t head_dim) {
    return {.kind = CacheKind::full_attention,
            .kv_heads = kv_heads,
            .k_head_dim = head_dim,
            .v_head_dim = head_dim};
}
/// Sliding-window attention keeping the last `window` tokens.
[[nodiscard]] constexpr CacheSpec sliding_window(std::uint32_t kv_heads, std::uint32_t head_dim,
                                                 std::uint64_t window) {
    return {.kind = CacheKind::sliding_window,
            .kv_heads = kv_heads,
            .k_head_dim = head_dim,
            .v_head_dim = head_dim,
            .window = window};
}
/// Multi-head latent attention (DeepSeek-V2/V3): one latent per token, no separate K and V.
[[nodiscard]] constexpr CacheSpec mla_latent(std::uint32_t kv_lora_rank,
                                             std::uint32_t qk_rope_head_dim) {
    return {.kind = CacheKind::mla_latent,
            .kv_lora_rank = kv_lora_rank,
            .qk_rope_head_dim = qk_rope_head_dim};
}
/// A fixed per-sequence state (Mamba, linear attention), whole-model bytes per layer.
[[nodiscard]] constexpr CacheSpec constant_state(Bytes per_sequence) {
    return {.kind = CacheKind::constant_state, .state_bytes = per_sequence};
}
/// A layer that reads another layer's cache (cross-layer KV sharing).
[[nodiscard]] constexpr CacheSpec shared_cache() { return {.kind = CacheKind::shared}; }
/// A layer that reads another layer's cache but keeps its own K and V projections of `kv_heads`
/// heads of `head_dim` (Gemma-3n's KV-shared layers: the checkpoint holds k_proj and v_proj, the
/// engine never runs them into a cache).
[[nodiscard]] constexpr CacheSpec shared_cache(std::uint32_t kv_heads, std::uint32_t head_dim) {
    return {.kind = CacheKind::shared,
            .kv_heads = kv_heads,
            .k_head_dim = head_dim,
            .v_head_dim = head_dim};
}
/// Chunked local attention (Llama-4's attention_chunk_size): a token attends to the earlier
/// tokens of its own chunk of `chunk` tokens, so a layer never holds more than one chunk.
[[nodiscard]] constexpr CacheSpec chunked_local(std::uint32_t kv_heads, std::uint32_t head_dim,
                                                std::uint64_t chunk) {
    return {.kind = CacheKind::chunked_local,
            .kv_heads = kv_heads,
            .k_head_dim = head_dim,
            .v_head_dim = head_dim,
            .window = chunk};
}
/// Multi-head latent attention with a sparse-attention indexer (DeepSeek-V3.2): the latent, and
/// the indexer's key of `index_head_dim` per token.
[[nodiscard]] constexpr CacheSpec mla_latent(std::uint32_t kv_lora_rank,
                                             std::uint32_t qk_rope_head_dim,
                                             std::uint32_t index_head_dim) {
    return {.kind = CacheKind::mla_latent,
            .kv_lora_rank = kv_lora_rank,
            .qk_rope_head_dim = qk_rope_head_dim,
            .index_head_dim = index_head_dim};
}
/// DeepSeek-V4's attention layer (vLLM's DeepseekV4Attention): the latest `window` latents of
/// kv_lora_rank + qk_rope_head_dim values (DeepseekV4SWACache), and, when compress_ratio is not 0,
/// one latent per compress_ratio tokens in a compressed pool with, when index_head_dim is not 0,
/// an indexer key beside each; `state` is the compressors' fp32 state per sequence.
[[nodiscard]] constexpr CacheSpec compressed_mla(std::uint32_t kv_lora_rank,
                                                 std::uint32_t qk_rope_head_dim,
                                                 std::uint64_t window, std::uint32_t compress_ratio,
                                                 std::uint32_t index_head_dim, Bytes state) {
    return {.kind = CacheKind::mla_latent,
            .window = window,
            .kv_lora_rank = kv_lora_rank,
            .qk_rope_head_dim = qk_rope_head_dim,
            .index_head_dim = index_head_dim,
            .state_bytes = state,
            .compress_ratio = compress_ratio};
}
/// Block-sparse attention with an indexer (MiniMax-M3's sparse layers, vLLM's
/// MiniMaxM3SparseAttention): GQA K and V of `kv_heads` x `head_dim`, and beside them one key of
/// `index_head_dim` per token that the indexer scores blocks with (MiniMaxM3IndexerCache), a
/// single head shared by every TP rank.
[[nodiscard]] constexpr CacheSpec indexed_attention(std::uint32_t kv_heads, std::uint32_t head_dim,
                                                    std::uint32_t index_head_dim) {
    CacheSpec s = full_attention(kv_heads, head_dim);
    s.index_head_dim = index_head_dim;
    return s;
}
/// Whether `spec` is DeepSeek-V4's compressed MLA (an MLA layer with a window).
[[nodiscard]] constexpr bool is_compressed_mla(const CacheSpec& spec) noexcept {
    return spec.kind == CacheKind::mla_latent && spec.window != 0;
}
/// A layer with no token mixer, only an MLP (Nemotron-H's "-"): it caches nothing.
[[nodiscard]] constexpr CacheSpec mlp_only() { return {.kind = CacheKind::mlp_only}; }

inline constexpr std::size_t max_layers = 512;
inline constexpr std::size_t max_cache_specs = 4;

/// The ordered layers of a model, as groups of one cache kind: a few distinct specs and, per layer,
/// which spec it has. Order matters: pipeline stages take contiguous layers.
struct LayerStack {
    FixedArray<CacheSpec, max_cache_specs> specs{};
    std::uint32_t num_specs = 0;
    FixedArray<std::uint8_t, max_layers> spec_of_layer{};
    std::uint32_t num_layers = 0;

    /// Appends `count` layers of `spec`. Throws InvalidModel past max_layers layers or
    /// max_cache_specs distinct specs.
    constexpr LayerStack& append(const CacheSpec& spec, std::uint32_t count = 1) {
        std::uint32_t idx = 0;
        while (idx < num_specs && !(specs[idx] == spec)) ++idx;
        if (idx == num_specs) {
            if (num_specs == max_cache_specs)
                detail::throw_field_error<InvalidModel>(
                    "", "layers", "at most 4 distinct layer cache shapes", "a fifth");
            specs[num_specs++] = spec;
        }
        if (count > max_layers - num_layers)
            detail::throw_field_error<InvalidModel>(
                "", "num_layers", "at most 512 layers",
                detail::text(num_layers + std::uint64_t{count}));
        for (std::uint32_t i = 0; i < count; ++i)
            spec_of_layer[num_layers++] = static_cast<std::uint8_t>(idx);
        return *this;
    }

    /// `n` layers of one spec.
    [[nodiscard]] static constexpr LayerStack uniform(std::uint32_t n, const CacheSpec& spec) {
        LayerStack s;
        s.append(spec, n);
        return s;
    }

    /// `n` layers where layer i has pattern[i % P]: {sliding, full} alternates (Gemma-2, gpt-oss);
    /// five sliding then one full is Gemma-3's 5:1. `pattern` is a FixedArray, std::array or any
    /// array type with a constant size().
    template <class Pattern>
    [[nodiscard]] static constexpr LayerStack periodic(std::uint32_t n, const Pattern& pattern) {
        constexpr std::size_t P = Pattern{}.size();
        static_assert(P > 0, "a pattern needs at least one layer spec");
        LayerStack s;
        for (std::uint32_t i = 0; i < n; ++i) s.append(pattern[i % P]);
        return s;
    }

    /// The cache spec of layer `i` (0-based).
    [[nodiscard]] constexpr const CacheSpec& operator[](std::uint32_t i) const {
        KVPLAN_EXPECTS(i < num_layers);
        return specs[spec_of_layer[i]];
    }

    /// How many layers have spec number `spec`.
    [[nodiscard]] constexpr std::uint32_t layers_with_spec(std::uint32_t spec) const noexcept {
        std::uint32_t c = 0;
        for (std::uint32_t i = 0; i < num_layers; ++i) c += spec_of_layer[i] == spec ? 1 : 0;
        return c;
    }

    /// How many layers are of `kind`.
    [[nodiscard]] constexpr std::uint32_t layers_of_kind(CacheKind kind) const noexcept {
        std::uint32_t c = 0;
        for (std::uint32_t i = 0; i < num_layers; ++i) c += (*this)[i].kind == kind ? 1 : 0;
        return c;
    }
};

/// Mixture-of-experts shape; experts == 0 means a dense model.
struct MoeShape {
    std::uint32_t experts = 0;                   ///< routed experts per MoE layer
    std::uint32_t experts_per_token = 0;         ///< routed experts each token uses
    std::uint64_t expert_intermediate_size = 0;  ///< MLP width of one routed expert
    std::uint32_t shared_experts = 0;            ///< always-on experts per MoE layer
    std::uint64_t shared_intermediate_size =
        0;  ///< total MLP width of the shared experts (0: shared_experts × expert width)
    std::uint32_t first_dense_layers = 0;  ///< leading layers with a dense MLP
    std::uint32_t layer_freq =
        1;  ///< after those, layer i is MoE when (i + layer_offset) % layer_freq == 0
    std::uint32_t layer_offset =
        0;                     ///< 0 as DeepSeek's moe_layer_freq; 1 as Qwen's decoder_sparse_step
    bool router_bias = false;  ///< the router has a bias per expert
    /// The router's bias is stored (and held) in fp32: DeepSeek-V4's e_score_correction_bias
    /// (vLLM's DeepseekV4MoE builds it float32; its checkpoint stores F32).
    bool router_bias_fp32 = false;
    /// DeepSeek-V4's num_hash_layers: the first this many layers route by a table of the token's
    /// id (tid2eid, vocab x experts_per_token, int64 in the checkpoint) and have no router bias.
    std::uint32_t hash_layers = 0;
    /// LatentMoE (Nemotron-3-Super's moe_latent_size): the routed experts read and write this
    /// width, between a projection down from the hidden size and one back up; 0: the hidden size.
    std::uint64_t latent_size = 0;
    /// Layers from this index on have a dense MLP: the multi-token-prediction layers appended past
    /// the model's own where they are dense (MiMo-V2-Flash's); 0: none.
    std::uint32_t dense_from = 0;

    /// Whether layer `i` (0-based) has a routed MoE MLP.
    [[nodiscard]] constexpr bool is_moe_layer(std::uint32_t i) const noexcept {
        return experts != 0 && i >= first_dense_layers && (dense_from == 0 || i < dense_from) &&
               (layer_freq <= 1 || (i + layer_offset) % layer_freq == 0);
    }
    /// Whether layer `i` routes by the token-id table (hash_layers).
    [[nodiscard]] constexpr bool is_hash_layer(std::uint32_t i) const noexcept {
        return i < hash_layers && is_moe_layer(i);
    }
};

/// The projections of multi-head latent attention that the cache spec does not carry.
struct MlaShape {
    std::uint32_t q_lora_rank = 0;       ///< 0: queries are projected directly (DeepSeek-V2-Lite)
    std::uint32_t qk_nope_head_dim = 0;  ///< per-head query/key dimension without RoPE
    std::uint32_t v_head_dim = 0;        ///< per-head value dimension
    std::uint32_t index_n_heads = 0;     ///< the sparse-attention indexer's query heads (V3.2)
    std::uint32_t o_groups = 0;          ///< DeepSeek-V4: groups of heads the output projects apart
    std::uint32_t o_lora_rank = 0;  ///< DeepSeek-V4: each group's output rank (wo_a, then wo_b)
};

/// Which layers carry an MLP.
enum class MlpLayers : std::uint8_t {
    every_layer,  ///< each layer is a mixer (attention, Mamba...) followed by an MLP
    mlp_only,     ///< only the mlp_only layers: each block is one mixer or one MLP (Nemotron-H,
                  ///< and pure Mamba models, which have none)
};

enum class MlpKind : std::uint8_t { gated, plain };  ///< gated: SwiGLU/GeGLU (3 matrices); plain: 2
enum class NormKind : std::uint8_t { rms, layer };   ///< layer norms carry a bias as well
enum class AttentionBias : std::uint8_t { none, qkv, qkvo };

/// A short name held in place (at most 95 characters, longer names are cut), so a model stays a
/// constexpr aggregate without allocation. Takes a C string or anything with data() and size().
class ModelName {
   public:
    static constexpr std::size_t max_size = 95;

    constexpr ModelName() noexcept = default;
    constexpr ModelName(detail::TextRef s) noexcept  // NOLINT: implicit from a literal is the point
        : len_(s.size < max_size ? s.size : max_size) {
        for (std::size_t i = 0; i < len_; ++i) buf_[i] = s.data[i];
    }
    constexpr ModelName(const char* s) noexcept : ModelName(detail::TextRef(s)) {}  // NOLINT
    template <detail::CharSpan S>
    requires(!std::is_same_v<S, ModelName>) constexpr ModelName(const S& s) noexcept
        : ModelName(detail::TextRef(s)) {}  // NOLINT

    [[nodiscard]] constexpr const char* c_str() const noexcept { return buf_; }
    [[nodiscard]] constexpr const char* data() const noexcept { return buf_; }
    [[nodiscard]] constexpr std::size_t size() const noexcept { return len_; }
    [[nodiscard]] constexpr bool empty() const noexcept { return len_ == 0; }

    /// To std::string or std::string_view (any type built from characters and a count):
    /// std::string(config.name).
    template <class S>
    requires std::is_constructible_v<S, const char*, std::size_t>
    constexpr explicit operator S() const { return S(buf_, len_); }

    friend constexpr bool operator==(const ModelName& a, const ModelName& b) noexcept {
        return detail::TextRef(a) == detail::TextRef(b);
    }

   private:
    char buf_[max_size + 1]{};  // always NUL-terminated
    std::size_t len_ = 0;
};

/// The longest sequence a model's config allows, as vLLM derives it (vllm/config/model.py,
/// _get_and_verify_max_len): the least of the length keys the config holds, times the rope scaling
/// factor (yarn: original_max_position_embeddings x factor; llama3, longrope and su scaling leave
/// it as it is). vLLM refuses a longer --max-model-len unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set.
struct ContextLimit {
    std::uint64_t tokens = 0;  ///< 0: not derived; max_position_embeddings stands (context_limit)
    const char* field = "max_position_embeddings";  ///< the config key the length comes from
    std::uint64_t field_tokens = 0;                 ///< that key's value, before rope scaling
    double rope_factor = 1.0;                       ///< the rope scaling factor applied
    const char* rope_type = "";                     ///< its rope_type ("" when none applies)
};

/// Everything kvplan knows about a model. Build one (presets, the JSON importer, or by hand), then
/// wrap it in a Model, which validates it once.
struct ModelConfig {
    ModelName name{};
    LayerStack layers{};
    std::uint32_t num_heads = 0;  ///< query heads
    std::uint32_t head_dim =
        0;  ///< query head dimension; 0: the first attention layer's k_head_dim
    /// Dimensions of a head RoPE rotates: head_dim x partial_rotary_factor (GLM-4.5: 64 of 128);
    /// 0: the whole query head, or an MLA model's qk_rope_head_dim. Sizes vLLM's cos/sin table
    /// (vllm_rotary_table_bytes, engine/startup.hpp).
    std::uint32_t rotary_dim = 0;
    /// Positions of vLLM's cos/sin table where its rope class sizes it apart from the context
    /// limit (Gemma-3's global layers: linear scaling builds max_position x factor, though the
    /// limit stays unscaled); 0: the context limit's (vllm_rotary_table_bytes).
    std::uint64_t rotary_positions = 0;
    /// Positions of a second table: sliding layers with a rope of their own (Gemma-3's
    /// rope_local_base_freq, unscaled) make get_rope build another; 0: every layer shares one.
    std::uint64_t local_rotary_positions = 0;
    /// Bytes of a value of vLLM's cos/sin table where the model builds it in a dtype of its own
    /// (gpt-oss: get_rope(..., dtype=torch.float32), models/gpt_oss.py, OAIAttention); 0: the
    /// model's dtype (vllm_rotary_table_bytes).
    std::uint32_t rotary_table_element_bytes = 0;
    std::uint64_t hidden_size = 0;
    std::uint64_t intermediate_size = 0;  ///< dense MLP width
    std::uint64_t vocab_size = 0;
    std::uint64_t max_position_embeddings = 0;  ///< the trained context length, 0 if unknown
    ContextLimit context_limit{};   ///< the importer's derivation; unset: max_position_embeddings
    CheckpointFormat checkpoint{};  ///< how the published weights are stored (unknown: bf16)
    bool tie_embeddings = false;
    MlpKind mlp = MlpKind::gated;
    NormKind norm = NormKind::rms;
    std::uint32_t norms_per_layer = 2;
    AttentionBias attention_bias = AttentionBias::none;
    bool mlp_bias = false;
    bool qk_norm = false;  ///< per-head RMSNorm on q and k (Qwen3, Gemma-3)
    MoeShape moe{};
    MlaShape mla{};
    MlpLayers mlp_layers = MlpLayers::every_layer;
    std::uint64_t extra_params =
        0;  ///< parameters the fields above do not describe (Mamba mixers...)
    /// DeepSeek-V4's hyper-connections (its config's hc_mult): the residual stream is hc_mult
    /// streams, mixed on every layer by hc_attn and hc_ffn and collapsed before the norm by
    /// hc_head, all stored in fp32 (weights/tensors.hpp, emit_hyper_connection); 0: none.
    std::uint32_t hc_mult = 0;
    /// Parameters of a multimodal model's vision tower and projector: weights, not part of the
    /// language model that caches; counted apart (ParamGroup::vision).
    std::uint64_t vision_params = 0;
    /// Tokens an image becomes in the language model, where the config states it (Gemma 3's
    /// mm_tokens_per_image); 0: not stated. Sizes the encoder cache (budget/reserve.hpp).
    std::uint64_t mm_tokens_per_item = 0;
    /// Values in one token of the vision encoder's output, as vLLM's encoder cache keeps it; 0:
    /// the language model's hidden size. Qwen3-VL's tower returns its merger's output beside one
    /// more per deepstack_visual_indexes entry (vLLM's qwen3_vl.py, Qwen3_VisionTransformer:
    /// "[seq_len, hidden_size * (1 + depth_of_deepstack)]"), split only when the embeddings are
    /// merged into the prompt. Sizes the encoder cache (budget/reserve.hpp).
    std::uint64_t mm_embedding_width = 0;
    /// Multi-token-prediction layers the checkpoint holds beside the model (DeepSeek-V3's
    /// num_nextn_predict_layers): not part of the model, loaded only as a speculative draft.
    std::uint32_t mtp_layers = 0;
    /// The cache spec of those layers where the config gives them one of their own (DeepSeek-V4's
    /// compress_ratios past the model's layers); unset: the model's last layer's.
    Optional<CacheSpec> mtp_spec{};
    /// Of those layers, how many the engine loads as a speculative draft; 0: all of them.
    /// MiMo-V2-Flash's checkpoint holds 3, vLLM's and SGLang's MiMoV2MTP build one.
    std::uint32_t mtp_draft_layers = 0;
    /// Parameters each of those layers holds beyond its decoder layer and its norms and eh_proj,
    /// stored 16-bit (MiMo-V2-Flash's attention sinks, one per query head).
    std::uint64_t mtp_layer_extra_params = 0;
    /// Whether those layers' input projection (eh_proj) splits its output rows over tensor
    /// parallelism (vLLM's qwen3_5_mtp.py: fc, a ColumnParallelLinear); else it is whole on
    /// every rank (deepseek_mtp.py, mimo_v2_mtp.py). weights/checkpoint_files.hpp,
    /// mtp_head_bytes.
    bool mtp_projection_split = false;
};

namespace detail {

inline Message model_where(const ModelConfig& c) {
    return c.name.empty() ? text("model") : text("model '", c.name, "'");
}

inline Message spec_field(std::uint32_t i, const char* field) {
    return text("layers.specs[", i, "].", field);
}

template <class E = InvalidModel>
[[noreturn]] inline void bad_field(const ModelConfig& c, TextRef field, const char* expected,
                                   std::uint64_t found) {
    throw_field_error<E>(model_where(c), field, expected, text(found));
}

}  // namespace detail

/// Refuses a config no real model could have: InvalidModel names the field, what was expected and
/// what was found. During constant evaluation the throw is a compile error.
constexpr void validate(const ModelConfig& c) {
    const LayerStack& L = c.layers;
    if (L.num_layers == 0) detail::bad_field(c, "num_layers", "at least 1 layer", 0);
    if (L.num_specs == 0 || L.num_specs > max_cache_specs)
        detail::bad_field(c, "layers.num_specs", "1 to 4 cache specs", L.num_specs);
    if (c.hidden_size == 0) detail::bad_field(c, "hidden_size", "> 0", 0);
    if (c.vocab_size == 0) detail::bad_field(c, "vocab_size", "> 0", 0);
    bool attends = false;  // an attention-free model (Mamba) has no query heads
    for (std::uint32_t i = 0; i < L.num_specs && i < max_cache_specs; ++i)
        attends = attends || (L.specs[i].kind != CacheKind::constant_state &&
                              L.specs[i].kind != CacheKind::mlp_only);
    if (attends && c.num_heads == 0) detail::bad_field(c, "num_heads", "> 0 query heads", 0);
    if (c.norms_per_layer > 8) detail::bad_field(c, "norms_per_layer", "0 to 8", c.norms_per_layer);

    bool holds_bytes = false;
    for (std::uint32_t i = 0; i < L.num_specs; ++i) {
        const CacheSpec& s = L.specs[i];
        switch (s.kind) {
            case CacheKind::sliding_window:
            case CacheKind::chunked_local:
                if (s.window == 0)
                    detail::bad_field(c, detail::spec_field(i, "window"), "> 0 tokens", 0);
                [[fallthrough]];
            case CacheKind::full_attention:
                if (s.kv_heads == 0)
                    detail::bad_field(c, detail::spec_field(i, "kv_heads"), "> 0", 0);
                if (s.k_head_dim == 0)
                    detail::bad_field(c, detail::spec_field(i, "k_head_dim"), "> 0", 0);
                if (s.v_head_dim == 0)
                    detail::bad_field(c, detail::spec_field(i, "v_head_dim"), "> 0", 0);
                if (c.num_heads % s.kv_heads != 0)
                    detail::bad_field(c, detail::spec_field(i, "kv_heads"),
                                      "a divisor of num_heads", s.kv_heads);
                holds_bytes = true;
                break;
            case CacheKind::mla_latent:
                if (s.kv_lora_rank == 0)
                    detail::bad_field(c, detail::spec_field(i, "kv_lora_rank"), "> 0", 0);
                // A compressed pool needs the window beside it, and 1 would be no compression.
                if (s.compress_ratio != 0 && s.window == 0)
                    detail::bad_field(c, detail::spec_field(i, "window"),
                                      "> 0 tokens beside a compressed pool", 0);
                if (s.compress_ratio == 1)
                    detail::bad_field(c, detail::spec_field(i, "compress_ratio"),
                                      "0 (no pool) or at least 2", 1);
                holds_bytes = true;
                break;
            case CacheKind::constant_state:
                if (s.state_bytes.is_zero())
                    detail::bad_field(c, detail::spec_field(i, "state_bytes"), "> 0 bytes", 0);
                holds_bytes = true;
                break;
            case CacheKind::shared:
                if (s.kv_heads != 0 && c.num_heads % s.kv_heads != 0)
                    detail::bad_field(c, detail::spec_field(i, "kv_heads"),
                                      "a divisor of num_heads", s.kv_heads);
                break;
            case CacheKind::mlp_only:
                break;
        }
    }
    // An indexer's key sits beside full attention's K and V or an MLA latent, nowhere else.
    for (std::uint32_t i = 0; i < L.num_specs; ++i)
        if (L.specs[i].index_head_dim != 0 && L.specs[i].kind != CacheKind::full_attention &&
            L.specs[i].kind != CacheKind::mla_latent)
            detail::bad_field(c, detail::spec_field(i, "index_head_dim"),
                              "0 on a layer that is neither full attention nor MLA",
                              L.specs[i].index_head_dim);
    for (std::uint32_t i = 0; i < L.num_layers; ++i)
        if (L.spec_of_layer[i] >= L.num_specs)
            detail::bad_field(c, detail::text("layers.spec_of_layer[", i, "]"),
                              "an index of a cache spec", L.spec_of_layer[i]);
    if (!holds_bytes) detail::bad_field(c, "layers", "at least one layer that caches something", 0);

    const MoeShape& m = c.moe;
    if (m.experts != 0) {
        if (m.experts_per_token == 0 || m.experts_per_token > m.experts)
            detail::bad_field(c, "moe.experts_per_token", "1 to moe.experts", m.experts_per_token);
        if (m.expert_intermediate_size == 0)
            detail::bad_field(c, "moe.expert_intermediate_size", "> 0", 0);
        if (m.layer_freq == 0) detail::bad_field(c, "moe.layer_freq", ">= 1", 0);
        if (m.first_dense_layers > L.num_layers)
            detail::bad_field(c, "moe.first_dense_layers", "at most num_layers",
                              m.first_dense_layers);
    }
    bool dense_mlp = false;
    for (std::uint32_t i = 0; i < L.num_layers && !dense_mlp; ++i)
        dense_mlp = (c.mlp_layers == MlpLayers::every_layer || L[i].kind == CacheKind::mlp_only) &&
                    !m.is_moe_layer(i);
    if (dense_mlp && c.intermediate_size == 0)
        detail::bad_field(c, "intermediate_size", "> 0 for a dense MLP layer", 0);
    if (L.layers_of_kind(CacheKind::mla_latent) > 0 && (c.mla.v_head_dim == 0))
        detail::bad_field(c, "mla.v_head_dim", "> 0 for an MLA model", 0);
}

/// vLLM assumes this length when a config holds none of the keys it reads.
inline constexpr std::uint64_t vllm_default_max_model_len = 2048;

/// The longest sequence `c` allows: its derived limit, else max_position_embeddings, else the
/// 2,048 tokens vLLM assumes (field "none").
[[nodiscard]] constexpr ContextLimit context_limit(const ModelConfig& c) noexcept {
    if (c.context_limit.tokens != 0) return c.context_limit;
    if (c.max_position_embeddings != 0)
        return {.tokens = c.max_position_embeddings, .field_tokens = c.max_position_embeddings};
    return {.tokens = vllm_default_max_model_len, .field = "none (vLLM assumes 2048)"};
}

/// A validated model: constructing one checks the config, and every sizing function that takes a
/// Model then has no failure path but a 64-bit overflow of its own result.
class Model {
   public:
    /// Validates `c`; throws InvalidModel (a compile error in a constant expression).
    constexpr explicit Model(const ModelConfig& c) : c_(c) { validate(c_); }

    [[nodiscard]] constexpr const ModelConfig& config() const noexcept { return c_; }
    [[nodiscard]] constexpr const ModelName& name() const noexcept { return c_.name; }
    [[nodiscard]] constexpr std::uint32_t num_layers() const noexcept {
        return c_.layers.num_layers;
    }
    [[nodiscard]] constexpr const CacheSpec& layer(std::uint32_t i) const { return c_.layers[i]; }
    [[nodiscard]] constexpr const LayerStack& layers() const noexcept { return c_.layers; }

    /// Whether layer `i` carries an MLP (dense or MoE).
    [[nodiscard]] constexpr bool has_mlp(std::uint32_t i) const {
        return c_.mlp_layers == MlpLayers::every_layer || layer(i).kind == CacheKind::mlp_only;
    }
    /// Whether layer `i` carries a routed MoE MLP.
    [[nodiscard]] constexpr bool is_moe_layer(std::uint32_t i) const {
        return has_mlp(i) && c_.moe.is_moe_layer(i);
    }

    /// The query head dimension: head_dim if set, else the first attention layer's k_head_dim (0
    /// for an attention-free model).
    [[nodiscard]] constexpr std::uint32_t query_head_dim() const noexcept {
        if (c_.head_dim != 0) return c_.head_dim;
        for (std::uint32_t i = 0; i < c_.layers.num_specs; ++i)
            if (c_.layers.specs[i].k_head_dim != 0) return c_.layers.specs[i].k_head_dim;
        if (c_.num_heads == 0) return 0;  // attention-free
        return static_cast<std::uint32_t>(c_.hidden_size / c_.num_heads);
    }

   private:
    ModelConfig c_;
};

}  // namespace kvplan
