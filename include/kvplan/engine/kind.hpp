#pragma once

// The serving engines kvplan models, by name: ideal, vllm, sglang, trtllm.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kvplan {

/// A serving engine's accounting. Enumerators are spelled as on the command line.
enum class Engine : std::uint8_t { ideal, vllm, sglang, trtllm };

/// Every engine profile, for listings and loops.
inline constexpr std::array all_engines{Engine::ideal, Engine::vllm, Engine::sglang, Engine::trtllm};

/// The command-line spelling.
[[nodiscard]] constexpr std::string_view name(Engine e) noexcept {
    switch (e) {
        case Engine::ideal: return "ideal";
        case Engine::vllm: return "vllm";
        case Engine::sglang: return "sglang";
        case Engine::trtllm: return "trtllm";
    }
    return "?";
}

/// Parses a spelling; "tensorrt-llm" and "trt-llm" are accepted for trtllm.
[[nodiscard]] constexpr std::optional<Engine> parse_engine(std::string_view s) noexcept {
    for (Engine e : all_engines)
        if (s == name(e)) return e;
    if (s == "tensorrt-llm" || s == "trt-llm") return Engine::trtllm;
    return std::nullopt;
}

}  // namespace kvplan
