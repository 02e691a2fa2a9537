#pragma once

// The format an engine loads a checkpoint's weights in when its dtype is left "auto": the
// checkpoint's own, except that a float32 checkpoint is served in 16 bits by vLLM and SGLang.
//
//   vLLM          a float32 config is downcast to the platform's first supported dtype the model
//                 may take (vllm/config/model.py, _resolve_auto_dtype, from _get_and_verify_dtype):
//                 bf16 on every GPU kvplan models, whose list starts with it (CUDA from compute
//                 capability 8.0, vllm/platforms/cuda.py, CudaPlatformBase.supported_dtypes;
//                 ROCm's CDNA3 and CDNA4 take Platform's bf16, fp16, fp32). Before vLLM PR #18751
//                 ("Rework dtype resolution", reviewed 2025-05-30, after v0.9.0 and in v0.9.1,
//                 which kvplan counts from the v0.9 line) the rule was "float16 for float32
//                 models" (vllm/config.py, _get_and_verify_dtype; PLaMo-2 excepted): the v0.8 line.
//   SGLang        bf16 for a model_type that begins with "gemma", fp16 for any other
//                 (python/sglang/srt/configs/model_config.py, _get_and_verify_dtype, vLLM's
//                 v0.6.4 rule).
//   TensorRT-LLM  the PyTorch backend builds the model in the config's torch_dtype, bf16 where
//                 it has none (tensorrt_llm/_torch/model_config.py, ModelConfig.torch_dtype): a
//                 float32 checkpoint stays float32.
//   ideal         the checkpoint as stored.
// fp16 and bf16 weigh the same: what the rule changes is float32's 4 bytes a weight to 2; the
// 16-bit type is the engine's name for them.

#include <optional>

#include "../model.hpp"
#include "../weight_format.hpp"
#include "../weights/format.hpp"
#include "kind.hpp"
#include "release.hpp"

namespace kvplan {

/// The 16-bit format engine `e` (vLLM: release line `vllm_release`) loads the float32 weights of
/// a checkpoint in with its dtype "auto"; nullopt: it keeps them in float32. `gemma`: the
/// checkpoint is a Gemma's (CheckpointFormat::gemma).
[[nodiscard]] constexpr std::optional<WeightFormat> fp32_load_format(Engine e,
                                                                     EngineVersion vllm_release,
                                                                     bool gemma) noexcept {
    switch (e) {
        case Engine::vllm:
            return vllm_release < EngineVersion{0, 9} ? WeightFormat::fp16 : WeightFormat::bf16;
        case Engine::sglang:
            return gemma ? WeightFormat::bf16 : WeightFormat::fp16;
        case Engine::trtllm:
        case Engine::ideal:
            return std::nullopt;
    }
    return std::nullopt;
}

namespace detail {
/// Calls fn on each format `w` sets: its linear layers' and every part it names apart.
template <class Options, class Fn>
constexpr void for_each_weight_format(Options& w, Fn&& fn) {
    fn(w.format);
    for (auto* part :
         {&w.expert_format, &w.attention_format, &w.attention_output_format,
          &w.shared_expert_format, &w.dense_mlp_format, &w.mixer_format, &w.lm_head_format})
        if (*part) fn(**part);
}
}  // namespace detail

/// The weights of `m` as engine `e` loads its checkpoint with its dtype "auto" (vLLM: release
/// line `vllm_release`, the newest when unset): the checkpoint's formats (checkpoint_weights),
/// each float32 part in fp32_load_format.
[[nodiscard]] constexpr WeightOptions engine_load_weights(
    const Model& m, Engine e, std::optional<EngineVersion> vllm_release = std::nullopt) {
    const CheckpointFormat& c = m.config().checkpoint;
    WeightOptions w = checkpoint_weights(c);
    if (const std::optional<WeightFormat> to =
            fp32_load_format(e, vllm_release_or_newest(vllm_release), c.gemma))
        detail::for_each_weight_format(w, [&](WeightFormat& f) {
            if (f == WeightFormat::fp32) f = *to;
        });
    return w;
}

/// Whether engine `e` loads part of `m`'s checkpoint in another format than it is stored in: a
/// float32 part that engine_load_weights downcasts.
[[nodiscard]] constexpr bool engine_downcasts(
    const Model& m, Engine e, std::optional<EngineVersion> vllm_release = std::nullopt) {
    const CheckpointFormat& c = m.config().checkpoint;
    if (!fp32_load_format(e, vllm_release_or_newest(vllm_release), c.gemma)) return false;
    const WeightOptions stored = checkpoint_weights(c);
    bool fp32 = false;
    detail::for_each_weight_format(stored,
                                   [&](WeightFormat f) { fp32 = fp32 || f == WeightFormat::fp32; });
    return fp32;
}

/// The weights `m` is served in: `given` (--weight-dtype) when set, else engine_load_weights.
[[nodiscard]] constexpr WeightOptions served_weights(
    const Model& m, const std::optional<WeightOptions>& given, Engine e,
    std::optional<EngineVersion> vllm_release = std::nullopt) {
    return given ? *given : engine_load_weights(m, e, vllm_release);
}

}  // namespace kvplan
