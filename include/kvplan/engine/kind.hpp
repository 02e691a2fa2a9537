#pragma once

// The serving engines kvplan models, by name: ideal, vllm, sglang, trtllm.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "../detail/enum_table.hpp"
#include "../fixed_array.hpp"

namespace kvplan {

/// A serving engine's accounting. Enumerators are spelled as on the command line.
enum class Engine : std::uint8_t { ideal, vllm, sglang, trtllm };

/// Every engine profile, for listings and loops.
inline constexpr std::array all_engines{Engine::ideal, Engine::vllm, Engine::sglang,
                                        Engine::trtllm};

/// Every engine's spellings: the first is its name; "tensorrt-llm" and "trt-llm" are read too.
inline constexpr FixedArray<detail::EnumName<Engine>, 6> engine_names{{
    {Engine::ideal, "ideal"},
    {Engine::vllm, "vllm"},
    {Engine::sglang, "sglang"},
    {Engine::trtllm, "trtllm"},
    {Engine::trtllm, "tensorrt-llm"},
    {Engine::trtllm, "trt-llm"},
}};

/// The command-line spelling.
[[nodiscard]] constexpr std::string_view name(Engine e) noexcept {
    return detail::enum_name(engine_names, e);
}

/// Parses a spelling (engine_names).
[[nodiscard]] constexpr std::optional<Engine> parse_engine(std::string_view s) noexcept {
    if (const auto e = detail::enum_parse(engine_names, s)) return *e;
    return std::nullopt;
}

/// What front ends say of an engine: its name as its project spells it, and the names of the knobs
/// of its memory fraction and of its sequence cap (vLLM: vllm/config/cache.py and
/// vllm/config/scheduler.py; SGLang: python/sglang/srt/server_args.py; TensorRT-LLM: KvCacheConfig
/// and the executor's max_batch_size).
struct EngineWords {
    Engine engine;
    std::string_view display;            ///< "vLLM"
    std::string_view fraction_knob;      ///< "gpu_memory_utilization"
    std::string_view sequence_cap_knob;  ///< "max_num_seqs"
};

/// Every engine's words, one row each.
inline constexpr std::array<EngineWords, 4> engine_words{{
    {Engine::ideal, "the ideal profile", "utilization", "no cap"},
    {Engine::vllm, "vLLM", "gpu_memory_utilization", "max_num_seqs"},
    {Engine::sglang, "SGLang", "mem_fraction_static", "max_running_requests"},
    {Engine::trtllm, "TensorRT-LLM", "free_gpu_memory_fraction", "max_batch_size"},
}};

namespace detail {
[[nodiscard]] constexpr const EngineWords& words_of(Engine e) noexcept {
    for (const EngineWords& w : engine_words)
        if (w.engine == e) return w;
    return engine_words[0];
}
}  // namespace detail

/// The engine as its project spells it: "vLLM", "SGLang", "TensorRT-LLM".
[[nodiscard]] constexpr std::string_view display_name(Engine e) noexcept {
    return detail::words_of(e).display;
}

/// The knob of the engine's memory fraction: "gpu_memory_utilization", "mem_fraction_static".
[[nodiscard]] constexpr std::string_view fraction_knob(Engine e) noexcept {
    return detail::words_of(e).fraction_knob;
}

/// The knob of the engine's sequence cap: "max_num_seqs", "max_running_requests".
[[nodiscard]] constexpr std::string_view sequence_cap_knob(Engine e) noexcept {
    return detail::words_of(e).sequence_cap_knob;
}

}  // namespace kvplan
