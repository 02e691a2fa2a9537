#pragma once

// Parallel layouts, per rank and never averaged. A layout is stated as an engine's flags
// (ParallelConfig: tp, pp, and attention data, expert and decode context parallelism) and resolved
// into what every GPU holds (Placement), because the engines place the same sizes differently:
//
//   vLLM      dp engines of tp x pp GPUs each (--data-parallel-size adds GPUs): attention, dense
//             MLPs, shared experts, embedding and LM head split over tp and copied in every dp
//             rank; routed experts spread over ep = dp x tp with --enable-expert-parallel, else
//             split tensor-parallel over dp x tp (vllm/model_executor/layers/fused_moe/config.py,
//             FusedMoEParallelConfig.make); --decode-context-parallel-size splits each sequence's
//             tokens over dcp of the tp ranks without adding GPUs (vllm/config/parallel.py).
//   SGLang    --dp-size with --enable-dp-attention splits the tp GPUs into dp attention groups of
//             tp / dp (python/sglang/srt/layers/dp_attention.py, compute_dp_attention_world_info):
//             no GPUs added; the embedding is copied on every GPU, the dense MLP, shared experts
//             and LM head stay split over all tp; routed experts spread over --ep-size, each split
//             tp / ep ways.
//   TensorRT  enable_attention_dp makes each of the tp ranks its own attention rank (dp = tp):
//   -LLM      attention, dense MLP, shared experts, embedding and LM head whole on every GPU
//             (tensorrt_llm/_torch/models/modeling_deepseekv3.py); routed experts over
//             moe_expert_parallel_size, each split tp / ep ways (tensorrt_llm/mapping.py).
//
// TP shards KV heads across the attention ranks (a rank holds kv_heads / tp of them, or one
// replicated head when tp exceeds kv_heads, as vLLM does); an MLA latent is whole on every one.
// PP gives each stage a contiguous run of layers, and the most-loaded stage sets a replica's
// capacity. Under attention data parallelism each dp rank holds only its own sequences.

#include <cstdint>

#include "detail/enum_table.hpp"
#include "detail/message.hpp"
#include "error.hpp"
#include "fixed_array.hpp"
#include "model.hpp"

namespace kvplan {

inline constexpr std::size_t max_pipeline_stages = 64;

/// Whose flags a ParallelConfig states: the engines resolve the same dp and ep differently.
enum class ParallelRules : std::uint8_t {
    vllm,    ///< vLLM's (also the ideal profile's)
    sglang,  ///< SGLang's
    trtllm,  ///< TensorRT-LLM's (PyTorch backend)
};

/// Each rule set's spelling.
inline constexpr FixedArray<detail::EnumName<ParallelRules>, 3> parallel_rules_names{{
    {ParallelRules::vllm, "vllm"},
    {ParallelRules::sglang, "sglang"},
    {ParallelRules::trtllm, "trtllm"},
}};

/// The spelling of `r`: "vllm", "sglang" or "trtllm".
[[nodiscard]] constexpr const char* name(ParallelRules r) noexcept {
    return detail::enum_name(parallel_rules_names, r);
}

/// A parallel layout as a user states it, in the engine's own flags (`rules` says whose).
/// stage_layers all zero means the default split.
struct ParallelConfig {
    std::uint32_t tp = 1;  ///< --tensor-parallel-size (SGLang --tp-size; TensorRT-LLM tp_size)
    std::uint32_t pp = 1;  ///< --pipeline-parallel-size
    FixedArray<std::uint16_t, max_pipeline_stages>
        stage_layers{};  ///< layers per stage, if uneven by choice
    /// Attention data parallelism. vLLM --data-parallel-size: dp engines of tp x pp GPUs each;
    /// SGLang --dp-size with --enable-dp-attention: dp attention groups within the tp GPUs;
    /// TensorRT-LLM enable_attention_dp: dp = tp.
    std::uint32_t dp = 1;
    /// Expert parallelism: the GPUs the routed experts spread over. vLLM
    /// --enable-expert-parallel (ep = dp x tp); SGLang --ep-size; TensorRT-LLM
    /// moe_expert_parallel_size. 1: none.
    std::uint32_t ep = 1;
    /// vLLM --decode-context-parallel-size: each sequence's tokens split over dcp of the tp ranks.
    std::uint32_t dcp = 1;
    /// Physical experts beyond the routed ones (vLLM EPLB's num_redundant_experts, SGLang
    /// --ep-num-redundant-experts): copies of busy experts, spread with the rest.
    std::uint32_t redundant_experts = 0;
    ParallelRules rules = ParallelRules::vllm;
};

/// What the GPUs of one pipeline stage do, whichever engine's flags put them there: the degree
/// each part of a layer is split over, and the routed experts each GPU holds.
struct Placement {
    std::uint32_t gpus = 1;              ///< GPUs of one stage
    std::uint32_t attention_tp = 1;      ///< query and KV heads split over (an MLA latent is whole)
    std::uint32_t attention_dp = 1;      ///< attention groups, each with its own sequences
    std::uint32_t dcp = 1;               ///< a sequence's tokens split over (within attention_tp)
    std::uint32_t dense_mlp_tp = 1;      ///< a dense MLP split over
    std::uint32_t shared_expert_tp = 1;  ///< the shared experts split over
    std::uint32_t embedding_tp = 1;      ///< vocabulary rows of the input embedding split over
    std::uint32_t lm_head_tp = 1;        ///< vocabulary rows of the LM head split over
    std::uint32_t expert_ep = 1;         ///< GPUs the routed experts spread over
    std::uint32_t expert_tp = 1;         ///< each routed expert split over
    std::uint32_t physical_experts = 0;  ///< routed experts + redundant copies, per MoE layer
    std::uint32_t experts_per_gpu = 0;   ///< on the fullest GPU (0 for a dense model)
    std::uint32_t experts_least = 0;     ///< on the emptiest GPU

    friend constexpr bool operator==(const Placement&, const Placement&) = default;
};

/// What one rank holds: a contiguous run of layers [first_layer, end_layer) with its heads split
/// tp ways and its tokens dcp ways. The default is the whole model on one GPU.
struct Shard {
    std::uint32_t tp = 1;  ///< the attention tensor-parallel degree
    std::uint32_t first_layer = 0;
    std::uint32_t end_layer = max_layers;  ///< clipped to the model's layer count
    std::uint32_t dcp = 1;                 ///< decode context parallelism: tokens split dcp ways
};

/// KV heads one TP rank holds: kv_heads / tp, or one (replicated) when tp >= kv_heads.
[[nodiscard]] constexpr std::uint32_t kv_heads_per_rank(std::uint32_t kv_heads,
                                                        std::uint32_t tp) noexcept {
    return tp >= kv_heads ? 1 : kv_heads / tp;
}

/// The tokens of a sequence of `tokens` one rank of `s` holds: all of them, or under decode context
/// parallelism ceil(tokens / dcp) (vLLM places token t on rank t mod dcp with its default
/// interleave of 1, so rank 0 holds the most).
[[nodiscard]] constexpr std::uint64_t tokens_on_rank(std::uint64_t tokens,
                                                     const Shard& s) noexcept {
    return s.dcp <= 1 ? tokens : tokens / s.dcp + (tokens % s.dcp != 0 ? 1 : 0);
}

/// Whether decode context parallelism splits the tokens of a layer of `kind`: full attention and
/// MLA only. vLLM keeps the sliding-window and Mamba groups of a hybrid model at dcp 1, each rank
/// holding the whole window or state (vllm/v1/core/single_type_kv_cache_manager.py, since vLLM's
/// pull request 40996, "DCP supports hybrid attention").
[[nodiscard]] constexpr bool dcp_splits(CacheKind kind) noexcept {
    return kind == CacheKind::full_attention || kind == CacheKind::mla_latent;
}

/// The tokens of a sequence of `tokens` one rank of `s` holds in a layer of `kind`: its share
/// under decode context parallelism for the kinds dcp splits, all of them for the others.
[[nodiscard]] constexpr std::uint64_t tokens_on_rank(CacheKind kind, std::uint64_t tokens,
                                                     const Shard& s) noexcept {
    return dcp_splits(kind) ? tokens_on_rank(tokens, s) : tokens;
}

/// The layers per stage that vLLM uses without VLLM_PP_LAYER_PARTITION: an even split, with the
/// remainder given one each to the stages before the last (vllm/distributed/utils.py,
/// get_pp_indices), since the last stage also holds the LM head.
[[nodiscard]] constexpr std::uint32_t default_stage_layers(std::uint32_t num_layers,
                                                           std::uint32_t pp,
                                                           std::uint32_t stage) noexcept {
    const std::uint32_t base = num_layers / pp;
    const std::uint32_t rem = num_layers % pp;
    // partitions[-i] += 1 for i in 2..rem+1: the rem stages ending just before the last one.
    const bool extra = stage + 1 < pp && stage + 1 + rem >= pp;
    return base + (extra ? 1 : 0);
}

namespace detail {

/// Refuses `p` for `m` with the reason the engine of p.rules gives; returns where each part goes.
constexpr Placement place(const Model& m, const ParallelConfig& p) {
    const auto where = [&] { return model_where(m.config()); };
    const auto refuse = [&](TextRef field, const Message& expected, const Message& found) {
        throw_field_error<InvalidLayout>(where(), field, expected, found);
    };
    const ModelConfig& c = m.config();
    const bool moe = c.moe.experts != 0;
    if (p.tp == 0) refuse("tp", text(">= 1"), text("0"));
    if (p.pp == 0) refuse("pp", text(">= 1"), text("0"));
    if (p.dp == 0) refuse("dp", text(">= 1"), text("0"));
    if (p.ep == 0) refuse("ep", text(">= 1"), text("0"));
    if (p.dcp == 0) refuse("dcp", text(">= 1"), text("0"));
    // ranks() is 32-bit: the replica's GPUs must not wrap it (a model with 2^31 heads could ask).
    if (std::uint64_t{p.tp} * p.pp > 0xFFFF'FFFFULL)
        refuse("tp", text("tp x pp at most 4294967295 GPUs"), text(std::uint64_t{p.tp} * p.pp));
    if (p.pp > max_pipeline_stages || p.pp > m.num_layers())
        refuse("pp", text("at most one stage per layer (and at most 64 stages)"),
               text(p.pp, " stages for ", m.num_layers(), " layers"));
    if (p.ep > 1 && !moe)
        refuse("ep", text("1: expert parallelism needs a mixture-of-experts model"), text(p.ep));
    if (p.redundant_experts > 0 && !moe)
        refuse("redundant_experts", text("0: a dense model has no experts"),
               text(p.redundant_experts));

    Placement pl;
    const std::uint32_t tp = p.tp, dp = p.dp, ep = p.ep;
    switch (p.rules) {
        case ParallelRules::vllm: {
            // world = dp x tp x pp; the MoE layers see the flattened dp x tp ranks
            // (FusedMoEParallelConfig.make).
            const std::uint64_t flat = std::uint64_t{dp} * tp;
            if (flat * p.pp > 0xFFFF'FFFFULL)
                refuse("dp", text("dp x tp x pp at most 4294967295 GPUs"), text(flat * p.pp));
            pl.gpus = static_cast<std::uint32_t>(flat);
            pl.attention_tp = pl.dense_mlp_tp = pl.shared_expert_tp = pl.embedding_tp =
                pl.lm_head_tp = tp;
            pl.attention_dp = dp;
            if (ep > 1 && ep != flat)
                refuse("ep",
                       text("1, or dp x tp = ", flat,
                            ": with --enable-expert-parallel vLLM spreads the experts over every "
                            "rank of dp x tp (FusedMoEParallelConfig.make, "
                            "vllm/model_executor/layers/fused_moe/config.py)"),
                       text(ep));
            if (p.redundant_experts > 0) {
                if (ep <= 1)
                    refuse(
                        "redundant_experts",
                        text("0 without expert parallelism: vLLM refuses \"enable_expert_parallel "
                             "must be True to use EPLB.\" (vllm/config/parallel.py)"),
                        text(p.redundant_experts));
                const std::uint64_t g = std::uint64_t{c.moe.experts} + p.redundant_experts;
                if (g % ep != 0)
                    refuse(
                        "redundant_experts",
                        text("experts + redundant a multiple of ep: vLLM refuses \"EPLB currently "
                             "only supports even distribution of experts across ranks. Got ",
                             g, " experts and ", ep,
                             " EP ranks.\" (vllm/distributed/eplb/eplb_manager.py)"),
                        text(p.redundant_experts));
            }
            if (moe && ep <= 1 && flat > 1 && c.moe.expert_intermediate_size % flat != 0)
                refuse("tp",
                       text("dp x tp dividing the expert width ", c.moe.expert_intermediate_size,
                            ": without expert parallelism vLLM splits each expert over dp x tp "
                            "(FusedMoEConfig asserts intermediate_size % tp_size == 0)"),
                       text(flat));
            pl.expert_ep = ep > 1 ? ep : 1;
            pl.expert_tp = ep > 1 ? 1 : static_cast<std::uint32_t>(flat);
            if (p.dcp > 1 && tp % p.dcp != 0)
                refuse("dcp",
                       text("a divisor of tp: vLLM refuses \"tp_size=", tp,
                            " must be divisible by dcp_size=", p.dcp,
                            ".\" (vllm/config/parallel.py, _validate_parallel_config)"),
                       text(p.dcp));
            pl.dcp = p.dcp;
            break;
        }
        case ParallelRules::sglang: {
            // SGLang asserts tp % dp == 0 (server_args.py, handle_data_parallelism), then each
            // attention group has tp / dp GPUs; the MoE has tp / ep ways per expert.
            if (tp % dp != 0)
                refuse("dp",
                       text("a divisor of tp = ", tp,
                            ": SGLang's --enable-dp-attention splits the tp GPUs into dp groups "
                            "(assert tp_size % dp_size == 0, python/sglang/srt/server_args.py)"),
                       text(dp));
            if (tp % ep != 0)
                refuse("ep",
                       text("a divisor of tp = ", tp,
                            ": SGLang splits each expert tp / ep ways (moe_tp_size = tp_size // "
                            "ep_size, python/sglang/srt/layers/dp_attention.py)"),
                       text(ep));
            if (p.dcp > 1)
                refuse("dcp",
                       text("1: kvplan models decode context parallelism as vLLM implements it, "
                            "not SGLang's --dcp-size"),
                       text(p.dcp));
            if (p.redundant_experts > 0 && ep <= 1)
                refuse("redundant_experts", text("0 without expert parallelism (--ep-size > 1)"),
                       text(p.redundant_experts));
            if (moe && (std::uint64_t{c.moe.experts} + p.redundant_experts) % ep != 0)
                refuse("ep",
                       text("a divisor of the ", std::uint64_t{c.moe.experts} + p.redundant_experts,
                            " experts (with the redundant ones): SGLang's FusedMoE asserts "
                            "num_experts % ep_size == 0 "
                            "(python/sglang/srt/layers/moe/fused_moe_triton/layer.py)"),
                       text(ep));
            pl.gpus = tp;
            pl.attention_tp = tp / dp;
            pl.attention_dp = dp;
            // VocabParallelEmbedding(enable_tp=not enable_dp_attention) in the model files.
            pl.embedding_tp = dp > 1 ? 1 : tp;
            pl.lm_head_tp = pl.dense_mlp_tp = pl.shared_expert_tp = tp;
            pl.expert_ep = ep;
            pl.expert_tp = tp / ep;
            break;
        }
        case ParallelRules::trtllm: {
            if (dp != 1 && dp != tp)
                refuse("dp",
                       text("1 or tp = ", tp,
                            ": TensorRT-LLM's enable_attention_dp makes each of the tp ranks its "
                            "own attention rank (tensorrt_llm/mapping.py)"),
                       text(dp));
            if (tp % ep != 0)
                refuse("ep",
                       text("a divisor of tp = ", tp,
                            ": TensorRT-LLM refuses \"moe_tp_size * moe_ep_size must equal to "
                            "moe_world_size\" (tensorrt_llm/mapping.py)"),
                       text(ep));
            if (moe && c.moe.experts % ep != 0)
                refuse("ep",
                       text("a divisor of the ", c.moe.experts,
                            " experts: TensorRT-LLM gives each rank experts // ep of them "
                            "(tensorrt_llm/mapping.py, ep_experts)"),
                       text(ep));
            if (p.dcp > 1)
                refuse("dcp",
                       text("1: kvplan models decode context parallelism as vLLM implements it, "
                            "not TensorRT-LLM's context parallelism"),
                       text(p.dcp));
            if (p.redundant_experts > 0)
                refuse("redundant_experts",
                       text("0: TensorRT-LLM's MoE load balancer slots are not modelled"),
                       text(p.redundant_experts));
            pl.gpus = tp;
            const bool adp = dp > 1;
            pl.attention_dp = dp;
            pl.attention_tp = pl.dense_mlp_tp = pl.shared_expert_tp = pl.embedding_tp =
                pl.lm_head_tp = adp ? 1 : tp;
            pl.expert_ep = ep;
            pl.expert_tp = tp / ep;
            break;
        }
    }
    if (moe) {
        pl.physical_experts = c.moe.experts + p.redundant_experts;
        // vLLM's determine_expert_map gives the first (E + R) mod ep ranks one expert more.
        pl.experts_least = pl.physical_experts / pl.expert_ep;
        pl.experts_per_gpu = pl.experts_least + (pl.physical_experts % pl.expert_ep != 0 ? 1 : 0);
    }

    // Heads split over the attention ranks.
    const std::uint32_t atp = pl.attention_tp;
    if (c.num_heads != 0 && c.num_heads % atp != 0)
        refuse("tp", text("a divisor of the ", c.num_heads, " query heads"), text(atp));
    const LayerStack& L = m.layers();
    bool chunked = false;
    for (std::uint32_t i = 0; i < L.num_specs; ++i) {
        const CacheSpec& s = L.specs[i];
        chunked = chunked || s.kind == CacheKind::chunked_local;
        if (s.kind != CacheKind::full_attention && s.kind != CacheKind::sliding_window &&
            s.kind != CacheKind::chunked_local)
            continue;
        const bool ok = atp <= s.kv_heads ? s.kv_heads % atp == 0 : atp % s.kv_heads == 0;
        if (!ok)
            refuse("tp", text("a divisor or a multiple of the ", s.kv_heads, " KV heads"),
                   text(atp));
        if (!dcp_splits(s.kind)) continue;  // a window is held whole on every rank
        // DCP uses the ranks that hold copies of a KV head: at most tp / kv_heads of them
        // (docs/serving/context_parallel_deployment.md: "dcp size is upper bounded by tp_size /
        // H").
        const std::uint32_t copies = atp > s.kv_heads ? atp / s.kv_heads : 1;
        if (pl.dcp > copies)
            refuse("dcp",
                   text("at most tp / kv_heads = ", copies,
                        ": decode context parallelism splits tokens only across the ranks that "
                        "hold the same KV head (vLLM docs/serving/context_parallel_deployment.md)"),
                   text(pl.dcp));
    }
    // A hybrid keeps its sliding-window and state groups at dcp 1 (dcp_splits); chunked local
    // attention has no such rule in vLLM (ChunkedLocalAttentionSpec,
    // vllm/v1/kv_cache_interface.py).
    if (pl.dcp > 1 && chunked)
        refuse("dcp",
               text("1 for a model with chunked local attention: vLLM runs decode context "
                    "parallelism on full attention and MLA, and keeps only sliding-window and "
                    "Mamba groups of a hybrid at dcp 1"),
               text(pl.dcp));
    return pl;
}

}  // namespace detail

/// A parallel layout checked against a model, resolved under its engine's rules. Throws
/// InvalidLayout naming the field, with the engine's reason.
class Layout {
   public:
    constexpr Layout(const Model& m, const ParallelConfig& p) : p_(p), pl_(detail::place(m, p)) {
        const auto where = [&] { return detail::model_where(m.config()); };
        bool explicit_split = false;
        for (std::uint32_t s = 0; s < max_pipeline_stages; ++s)
            explicit_split = explicit_split || p.stage_layers[s] != 0;
        std::uint32_t at = 0;
        for (std::uint32_t s = 0; s < p.pp; ++s) {
            const std::uint32_t n =
                explicit_split ? p.stage_layers[s] : default_stage_layers(m.num_layers(), p.pp, s);
            if (n == 0)
                detail::throw_field_error<InvalidLayout>(
                    where(), detail::text("stage_layers[", s, "]"), ">= 1 layer", "0");
            bounds_[s] = at;
            at += n;
        }
        if (explicit_split) {
            std::uint32_t extra = 0;
            for (std::uint32_t s = p.pp; s < max_pipeline_stages; ++s) extra += p.stage_layers[s];
            if (at != m.num_layers() || extra != 0)
                detail::throw_field_error<InvalidLayout>(
                    where(), "stage_layers",
                    detail::text("layers per stage summing to ", m.num_layers()),
                    detail::text(at + extra));
        }
        bounds_[p.pp] = at;
    }

    /// The engine's tensor-parallel size (--tensor-parallel-size).
    [[nodiscard]] constexpr std::uint32_t tp() const noexcept { return p_.tp; }
    [[nodiscard]] constexpr std::uint32_t pp() const noexcept { return p_.pp; }
    /// Attention data-parallel ranks: each its own scheduler, cache and sequences.
    [[nodiscard]] constexpr std::uint32_t dp() const noexcept { return pl_.attention_dp; }
    [[nodiscard]] constexpr std::uint32_t ep() const noexcept { return pl_.expert_ep; }
    [[nodiscard]] constexpr std::uint32_t dcp() const noexcept { return pl_.dcp; }
    /// The degree heads (and KV heads) are split over.
    [[nodiscard]] constexpr std::uint32_t attention_tp() const noexcept { return pl_.attention_tp; }
    /// GPUs in the replica: the GPUs of a stage x pp.
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept { return pl_.gpus * p_.pp; }
    /// GPUs of one attention data-parallel rank: attention_tp x pp.
    [[nodiscard]] constexpr std::uint32_t dp_rank_gpus() const noexcept {
        return pl_.attention_tp * p_.pp;
    }
    [[nodiscard]] constexpr const ParallelConfig& config() const noexcept { return p_; }
    [[nodiscard]] constexpr const Placement& placement() const noexcept { return pl_; }

    /// What each rank of pipeline stage `s` holds of the attention and the cache.
    [[nodiscard]] constexpr Shard stage(std::uint32_t s) const {
        KVPLAN_EXPECTS(s < p_.pp);
        return {pl_.attention_tp, bounds_[s], bounds_[s + 1], pl_.dcp};
    }

   private:
    ParallelConfig p_;
    Placement pl_;
    FixedArray<std::uint32_t, max_pipeline_stages + 1> bounds_{};
};

/// GPUs of a replica laid out as `p` states it, before any check against a model: dp x tp x pp
/// under vLLM's rules (each dp rank is an engine of its own), tp x pp under SGLang's and
/// TensorRT-LLM's (their dp lives within the tp GPUs).
[[nodiscard]] constexpr std::uint64_t replica_gpus(const ParallelConfig& p) noexcept {
    const std::uint64_t stage =
        p.rules == ParallelRules::vllm ? std::uint64_t{p.dp} * p.tp : std::uint64_t{p.tp};
    return stage * p.pp;
}

}  // namespace kvplan
