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

}  // namespace kvplan
