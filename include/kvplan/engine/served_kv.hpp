#pragma once

// The KV format a replica stores: the one the caller chose, else what its engine's "auto" stores
// for the checkpoint (engine_default_kv_dtype, engine/checkpoint_kv.hpp). Every front end leaves
// the KV format unset (std::nullopt) when the user names none, and every library entry point
// resolves it here, once, where the engine and its release are known; so `fit`, `plan`, `check`
// and the Python module give the same figure for the same replica. Where no engine is named
// (`kvplan size`, a calibration of a vLLM log), the defaults are vLLM's newest release's.

#include <cstdint>
#include <optional>

#include "../detail/enum_table.hpp"
#include "../dtype.hpp"
#include "../fixed_array.hpp"
#include "../model.hpp"
#include "checkpoint_kv.hpp"
#include "kind.hpp"
#include "release.hpp"

namespace kvplan {

/// Where a replica's KV dtype came from.
enum class KvSource : std::uint8_t {
    given,       ///< chosen by the caller (--kv-dtype, kv_dtype=, a policy's kv_dtype)
    checkpoint,  ///< the engine's "auto" follows the KV cache the checkpoint's quantization names
    model,       ///< the engine's "auto" on a checkpoint that names none: the 16-bit cache
};

/// Each source's spelling.
inline constexpr FixedArray<detail::EnumName<KvSource>, 3> kv_source_names{{
    {KvSource::given, "given"},
    {KvSource::checkpoint, "checkpoint"},
    {KvSource::model, "model"},
}};

[[nodiscard]] constexpr const char* name(KvSource s) noexcept {
    return detail::enum_name(kv_source_names, s);
}

/// A KV format resolved, and where it came from.
struct ServedKv {
    KvFormat format{};
    KvSource source = KvSource::model;
};

/// The KV format a replica of checkpoint `c` stores under engine `e` (vLLM at release `release`;
/// nullopt: vllm_newest_release): `given` when set, else engine_default_kv_dtype's.
[[nodiscard]] constexpr ServedKv served_kv(const CheckpointFormat& c, std::optional<KvFormat> given,
                                           Engine e = Engine::vllm,
                                           std::optional<EngineVersion> release = std::nullopt) {
    if (given) return {*given, KvSource::given};
    const KvDtype d = engine_default_kv_dtype(c, e, release.value_or(vllm_newest_release));
    // engine_default_kv_dtype answers bf16 unless it follows the checkpoint.
    return {KvFormat(d), d == KvDtype::bf16 ? KvSource::model : KvSource::checkpoint};
}

/// served_kv of model `m`'s checkpoint.
[[nodiscard]] constexpr ServedKv served_kv(const Model& m, std::optional<KvFormat> given,
                                           Engine e = Engine::vllm,
                                           std::optional<EngineVersion> release = std::nullopt) {
    return served_kv(m.config().checkpoint, given, e, release);
}

// A checkpoint naming an FP8 cache in kv_cache_quant_algo (nvidia/Qwen3-235B-A22B-NVFP4): unset,
// the engine's auto gives fp8 (vLLM from v0.14); a vLLM release before it, bf16 from the model;
// a dtype given always wins.
static_assert(served_kv(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                   CheckpointKvSource::modelopt_algo),
                        std::nullopt)
                  .source == KvSource::checkpoint);
static_assert(served_kv(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                   CheckpointKvSource::modelopt_algo),
                        std::nullopt, Engine::vllm, EngineVersion{0, 13})
                  .format.dtype == KvDtype::bf16);
static_assert(served_kv(detail::checkpoint_with_kv(KvDtype::fp8_e4m3,
                                                   CheckpointKvSource::modelopt_algo),
                        KvFormat(KvDtype::bf16))
                  .source == KvSource::given);
static_assert(served_kv(CheckpointFormat{}, std::nullopt).source == KvSource::model);

}  // namespace kvplan
