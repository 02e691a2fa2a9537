#pragma once

// Speculative decoding in the engine's accounting, as vLLM allocates for it:
//
//   - the drafter's own layers keep a KV cache in the same pool as the model's: vLLM registers
//     every attention layer of the runner, the drafter's included, with the KV cache manager
//     (vllm/v1/worker/gpu_model_runner.py, get_kv_cache_spec). An EAGLE or EAGLE-3 head is one
//     decoder layer of the model's shape; multi-token prediction loads the checkpoint's MTP layers
//     (DeepSeek-V3's num_nextn_predict_layers); a separate draft model brings all of its layers.
//     Their weights sit on the last pipeline stage, beside the LM head they share.
//   - each request keeps a block per speculative token beside a Mamba state
//     (MambaSpec.num_speculative_blocks, vllm/v1/kv_cache_interface.py).
//   - the scheduler asks for num_speculative_tokens lookahead slots beyond the tokens it
//     schedules for EAGLE, MTP and draft models (vllm/v1/core/sched/scheduler.py,
//     num_lookahead_tokens), capped at max_model_len: a sequence at its full length holds no more.
// n-gram speculation has no drafter and no lookahead slots.
//
// with_drafter() returns the model with the drafter's layers appended and the layout that keeps
// them on the last stage; evaluate() sizes that model, so fit, plan and the rest count the drafter.

#include <cstdint>
#include <optional>

#include "../detail/enum_table.hpp"
#include "../error.hpp"
#include "../fixed_array.hpp"
#include "../layout.hpp"
#include "../model.hpp"

namespace kvplan {

/// How an engine drafts the tokens it speculates (vLLM's speculative_config.method).
enum class DraftMethod : std::uint8_t { none, ngram, eagle, eagle3, mtp, draft_model };

/// Each method's spelling, as vLLM's speculative_config spells it.
inline constexpr FixedArray<detail::EnumName<DraftMethod>, 6> draft_method_names{{
    {DraftMethod::none, "none"},
    {DraftMethod::ngram, "ngram"},
    {DraftMethod::eagle, "eagle"},
    {DraftMethod::eagle3, "eagle3"},
    {DraftMethod::mtp, "mtp"},
    {DraftMethod::draft_model, "draft_model"},
}};

[[nodiscard]] constexpr const char* name(DraftMethod m) noexcept {
    return detail::enum_name(draft_method_names, m);
}

/// The method spelled `s`, or nothing.
[[nodiscard]] constexpr Optional<DraftMethod> parse_draft_method(detail::TextRef s) noexcept {
    return detail::enum_parse(draft_method_names, s);
}

/// Speculative decoding as the engine is configured for it.
struct Speculation {
    DraftMethod method = DraftMethod::none;
    std::uint32_t tokens = 0;  ///< num_speculative_tokens
    /// Drafter layers; 0: the method's own (EAGLE: 1; MTP: the model's mtp_draft_layers, else
    /// its mtp_layers).
    std::uint32_t layers = 0;
    std::optional<Model> draft_model{};  ///< draft_model: the drafter
};

/// A model with the drafter's layers appended, and the layout that keeps them on the last stage.
struct DraftedModel {
    Model model;
    ParallelConfig parallel{};
    std::uint32_t drafter_layers = 0;  ///< the last layers of `model` that are the drafter's
};

namespace detail {

/// The cache spec of the model's layers a drafter of its own shape repeats: its first full
/// attention layer, else its MLA latent.
[[nodiscard]] constexpr Optional<CacheSpec> drafter_spec(const Model& m) noexcept {
    for (CacheKind want : {CacheKind::full_attention, CacheKind::mla_latent})
        for (std::uint32_t k = 0; k < m.layers().num_specs; ++k)
            if (m.layers().specs[k].kind == want) return m.layers().specs[k];
    return {};
}

}  // namespace detail

/// `target` under `parallel` with the drafter of `s` appended. Throws InvalidInput when the method
/// needs what the model has not (MTP on a model without MTP layers, EAGLE on a model without an
/// attention layer to copy, a draft model missing) or more than 512 layers result.
[[nodiscard]] constexpr DraftedModel with_drafter(const Model& target,
                                                  const ParallelConfig& parallel,
                                                  const Speculation& s) {
    const auto refuse = [&](const char* field, const char* expected, std::uint64_t found) {
        detail::throw_field_error<InvalidInput>(detail::model_where(target.config()), field,
                                                expected, detail::text(found));
    };
    DraftedModel d{target, parallel, 0};
    if (s.method == DraftMethod::none || s.method == DraftMethod::ngram) return d;
    if (s.tokens == 0) refuse("num_speculative_tokens", ">= 1 with a drafter", 0);
    ModelConfig c = target.config();
    std::uint32_t layers = s.layers;
    switch (s.method) {
        case DraftMethod::eagle:
        case DraftMethod::eagle3: {
            const auto spec = detail::drafter_spec(target);
            if (!spec) refuse("layers", "an attention layer for the EAGLE head to repeat", 0);
            if (layers == 0) layers = 1;
            c.layers.append(*spec, layers);
            break;
        }
        case DraftMethod::mtp: {
            // The layers the engine builds (MiMo-V2-Flash: one of the checkpoint's three), of the
            // spec the config gives them (MiMo-V2-Flash's sliding window; DeepSeek-V4's MTP cache
            // is the engine's own pools, engine/vllm_deepseek_v4.hpp).
            if (layers == 0) layers = c.mtp_draft_layers != 0 ? c.mtp_draft_layers : c.mtp_layers;
            if (layers == 0)
                refuse("mtp_layers", "multi-token-prediction layers (num_nextn_predict_layers)", 0);
            // A config that gives the MTP layer its own spec keeps it (MiMo-V2-Flash's sliding
            // window); DeepSeek-V4's is window only, whatever the model's first layer is (vLLM's
            // DeepseekV4Attention takes compress_ratio 1 for a layer past num_hidden_layers, so the
            // draft layer registers its DeepseekV4SWACache alone:
            // vllm/models/deepseek_v4/attention.py).
            const auto spec = c.mtp_spec ? c.mtp_spec : detail::drafter_spec(target);
            if (!spec) refuse("layers", "an attention layer for the MTP layers to repeat", 0);
            c.layers.append(*spec, layers);
            break;
        }
        case DraftMethod::draft_model: {
            if (!s.draft_model) refuse("draft_model", "a draft model", 0);
            const LayerStack& dl = s.draft_model->layers();
            for (std::uint32_t i = 0; i < dl.num_layers; ++i) c.layers.append(dl[i]);
            layers = dl.num_layers;
            break;
        }
        case DraftMethod::none:
        case DraftMethod::ngram:
            break;
    }
    d.drafter_layers = layers;
    d.model = Model{c};
    // The drafter runs on the last stage: the model's own split, the drafter added to its end.
    if (parallel.pp > 1) {
        bool explicit_split = false;
        for (std::uint32_t st = 0; st < max_pipeline_stages; ++st)
            explicit_split = explicit_split || parallel.stage_layers[st] != 0;
        for (std::uint32_t st = 0; st < parallel.pp; ++st)
            d.parallel.stage_layers[st] = static_cast<std::uint16_t>(
                explicit_split ? parallel.stage_layers[st]
                               : default_stage_layers(target.num_layers(), parallel.pp, st));
        d.parallel.stage_layers[parallel.pp - 1] =
            static_cast<std::uint16_t>(d.parallel.stage_layers[parallel.pp - 1] + layers);
    }
    return d;
}

}  // namespace kvplan
