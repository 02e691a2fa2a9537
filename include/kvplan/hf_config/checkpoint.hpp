#pragma once

// The weight format a checkpoint is stored in, from its config.json.

#include <optional>
#include <string>
#include <string_view>

#include "../json.hpp"
#include "../weights.hpp"

namespace kvplan {

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

}  // namespace kvplan
