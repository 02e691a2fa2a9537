#pragma once

// The format a checkpoint's weights are stored in, from its config.json: quantization_config when
// there is one, else torch_dtype (or dtype, its newer name). What each method stores:
//
//   fp8                 8-bit floats in every linear layer of the blocks; weight_block_size [b, b]
//                       keeps one fp32 scale per b x b block (DeepSeek-V3: 128), else one per
//                       matrix; modules_to_not_convert / ignored_layers stay 16-bit.
//   mxfp4               the routed experts in MXFP4 (transformers' Mxfp4HfQuantizer converts only
//                       the experts); attention, routers, embeddings and the LM head stay 16-bit,
//                       as gpt-oss's modules_to_not_convert lists.
//   awq, gptq           4-bit integers in groups of group_size (-1: one group per row) with an fp16
//                       scale and a 4-bit zero point each (GPTQ stores its qzeros even when
//                       symmetric); other bit widths are not modelled.
//   compressed-tensors  config_groups' weights: num_bits 8 float (fp8 per tensor, channel or
//                       block), 8 int with channel scales (int8), 4 int in groups (int4, zero
//                       points unless symmetric), 4 float in groups of 16 (nvfp4); ignore lists
//                       that name attention keep it 16-bit.
//   modelopt            NVIDIA ModelOpt's quant_algo (NVFP4, FP8, INT4_AWQ...: modelopt_format);
//                       import_hf_config reads a model folder's hf_quant_config.json as this.
//
// This reads the file as a whole. Once the model's layers are known, quant_modules.hpp reads the
// module lists (exclude_modules, ignore, modules_to_not_convert, quantized_layers, targets) part
// by part, layer by layer.
//
// A method or shape kvplan does not model leaves the format unknown, with the reason in `source`:
// the model is still sized (bf16 weights assumed) and the answer says so.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../json.hpp"
#include "../weight_format.hpp"
#include "../weights.hpp"

namespace kvplan {

namespace detail::hf {

/// The 16- or 32-bit format torch_dtype (or dtype) names, in the file or its text_config.
[[nodiscard]] inline std::optional<WeightFormat> torch_dtype_of(const JsonReader& top,
                                                                const JsonReader& text) {
    for (const JsonReader* r : {&top, &text})
        for (const char* key : {"torch_dtype", "dtype"})
            if (const auto d = r->optional_string(key)) {
                if (*d == "bfloat16") return WeightFormat::bf16;
                if (*d == "float16") return WeightFormat::fp16;
                if (*d == "float32") return WeightFormat::fp32;
            }
    return std::nullopt;
}

/// Whether a list of module names (modules_to_not_convert, ignored_layers, ignore) keeps the
/// attention projections unquantized: an entry naming self_attn or attn.
[[nodiscard]] inline bool keeps_attention(const JsonReader& q) {
    for (const char* key : {"modules_to_not_convert", "ignored_layers", "ignore"})
        if (const auto names = q.optional_string_array(key))
            for (const std::string& n : *names)
                if (n.find("self_attn") != std::string::npos || n.find("attn") != std::string::npos)
                    return true;
    return false;
}

/// A checkpoint format that kvplan does not model: sized as bf16, the reason kept.
[[nodiscard]] inline CheckpointFormat unmodelled(const char* why) {
    CheckpointFormat c;
    c.source = why;
    return c;
}

/// `s` in upper case (ASCII).
[[nodiscard]] inline std::string upper_ascii(std::string_view s) {
    std::string out(s);
    for (char& ch : out)
        if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
    return out;
}

/// A ModelOpt quant_algo (upper case) as the format it stores weights in, its scales' layout set
/// in `layout`; nullopt for an algorithm kvplan does not model. As ModelOpt's
/// export writes them (modelopt/torch/export/quant_utils.py): NVFP4 and its W4A16 and AWQ variants
/// 4-bit e2m1 values with an fp8 scale per group_size (16) inputs and an fp32 scale per matrix;
/// FP8 one fp32 scale per matrix; FP8_PER_CHANNEL_PER_TOKEN one per output channel; FP8_PB_WO one
/// per 128 x 128 block; INT4_AWQ, W4A16_AWQ and W4A8_AWQ symmetric 4-bit integers with a 16-bit
/// scale per group_size (128) inputs; W8A8_SQ_PER_CHANNEL int8 with a scale per output channel;
/// MXFP4 and MXFP8 4- and 8-bit floats with an e8m0 byte per 32 inputs.
[[nodiscard]] inline std::optional<WeightFormat> modelopt_format(std::string_view algo,
                                                                 std::optional<std::uint64_t> group,
                                                                 QuantLayout& layout) {
    const auto set_group = [&](std::uint32_t usual) {
        const std::uint64_t g = group.value_or(usual);
        if (layout.group_size == 0) layout.group_size = static_cast<std::uint32_t>(g);
    };
    if (algo == "NVFP4" || algo == "W4A16_NVFP4" || algo == "NVFP4_AWQ" ||
        algo == "W4A8_NVFP4_FP8") {
        set_group(16);
        return WeightFormat::nvfp4;
    }
    if (algo == "FP8") return WeightFormat::fp8;
    if (algo == "FP8_PER_CHANNEL_PER_TOKEN") {
        layout.fp8_per_channel = true;
        return WeightFormat::fp8;
    }
    if (algo == "FP8_PB_WO") {
        layout.fp8_block = 128;
        return WeightFormat::fp8;
    }
    if (algo == "INT4_AWQ" || algo == "W4A16_AWQ" || algo == "W4A8_AWQ") {
        set_group(128);
        layout.int4_zero_points = false;
        return WeightFormat::int4;
    }
    if (algo == "W8A8_SQ_PER_CHANNEL") return WeightFormat::int8;
    if (algo == "MXFP4") return WeightFormat::mxfp4;
    // ModelOpt's MXFP8: e4m3 values with one e8m0 scale per 32 (MiniMax-M3-NVFP4's attention,
    // indexer, shared experts and dense MLPs).
    if (algo == "MXFP8") return WeightFormat::mxfp8;
    return std::nullopt;
}

/// A compressed-tensors weights scheme as a format, its layout set in `layout`; nullopt for one
/// kvplan does not model.
[[nodiscard]] inline std::optional<WeightFormat> compressed_tensors_format(const JsonReader& w,
                                                                           QuantLayout& layout) {
    const auto bits = w.optional_positive_integer("num_bits", 64);
    const std::string type = w.optional_string("type").value_or("int");
    const std::string strategy = w.optional_string("strategy").value_or("tensor");
    if (bits == 8u && type == "float") {
        if (strategy == "block") {
            const auto block = w.optional_count_array("block_structure");
            if (!block || block->size() != 2 || (*block)[0] != (*block)[1] || (*block)[0] == 0)
                return std::nullopt;
            layout.fp8_block = static_cast<std::uint32_t>((*block)[0]);
        } else if (strategy == "channel") {
            layout.fp8_per_channel = true;
        } else if (strategy != "tensor") {
            return std::nullopt;
        }
        return WeightFormat::fp8;
    }
    if (bits == 8u && type == "int" && strategy == "channel") return WeightFormat::int8;
    if (bits == 4u && type == "int" && (strategy == "group" || strategy == "channel")) {
        const auto group = w.optional_positive_integer("group_size", 0xFFFF'FFFFULL);
        if (layout.group_size == 0)
            layout.group_size = strategy == "channel" ? 0xFFFF'FFFFU
                                : group               ? static_cast<std::uint32_t>(*group)
                                                      : 128;
        layout.int4_zero_points = !w.optional_boolean("symmetric").value_or(true);
        return WeightFormat::int4;
    }
    if (bits == 4u && type == "float") {
        // MXFP4 ("mxfp4-pack-quantized", Kimi-K3's experts) keeps one UE8M0 byte per 32 values,
        // its scale_dtype torch.uint8, and no per-tensor scale; NVFP4 fp8 scales and one fp32
        // global scale a tensor.
        const bool mx = w.optional_string("scale_dtype").value_or("") == "torch.uint8";
        const auto group = w.optional_positive_integer("group_size", 0xFFFF'FFFFULL);
        if (mx && group.value_or(32) != 32) return std::nullopt;
        if (mx) return WeightFormat::mxfp4;
        if (layout.group_size == 0)
            layout.group_size = group ? static_cast<std::uint32_t>(*group) : 16;
        return WeightFormat::nvfp4;
    }
    return std::nullopt;
}

/// compressed-tensors: the weights scheme of its first config group (quant_modules.hpp reads
/// every group and the ignore list module by module once the model is known).
[[nodiscard]] inline CheckpointFormat compressed_tensors(const JsonReader& q, WeightFormat rest) {
    const std::optional<JsonReader> groups = q.optional_object("config_groups");
    if (!groups || groups->json().empty())
        return unmodelled("quantization_config: compressed-tensors without config_groups");
    const std::string first = groups->json().begin().key();
    const JsonReader g = groups->object(first);
    const std::optional<JsonReader> w = g.optional_object("weights");
    if (!w) return unmodelled("quantization_config: compressed-tensors without a weights scheme");
    CheckpointFormat c;
    c.known = true;
    c.rest = rest;
    c.source = "quantization_config (compressed-tensors)";
    const std::optional<WeightFormat> f = compressed_tensors_format(*w, c.layout);
    if (!f)
        return unmodelled(
            "quantization_config: a compressed-tensors scheme kvplan does not model "
            "(fp8, int8 per channel, int4 in groups, nvfp4 and mxfp4 are)");
    c.linear = c.experts = *f;
    c.attention = keeps_attention(q) ? rest : c.linear;
    return c;
}

/// DeepSeek-V4's own checkpoint format where `top` (or its text_config `text`) names
/// expert_dtype, as vLLM's DeepseekV4FP8Config (vllm/models/deepseek_v4/quant_config.py) reads
/// it: every linear layer of the blocks in fp8 with one scale per 128 x 128 block, an e8m0 byte
/// when the experts are fp4 (is_scale_e8m0), else fp32; the routed experts in fp4 (e2m1 with an
/// e8m0 scale per 32 inputs: MXFP4) or fp8. Sets `c`'s kept formats and layout; nullopt (and `c`
/// untouched) without expert_dtype.
[[nodiscard]] inline std::optional<WeightFormat> deepseek_v4_source(const JsonReader& top,
                                                                    const JsonReader& text,
                                                                    CheckpointFormat& c) {
    const JsonReader& r = text.optional_string("expert_dtype") ? text : top;
    const std::optional<std::string> dtype = r.optional_string("expert_dtype");
    if (!dtype) return std::nullopt;
    if (*dtype != "fp4" && *dtype != "fp8")
        r.fail("expert_dtype", "fp4 or fp8 (vLLM's DeepSeek-V4 expert dtypes)",
               "\"" + *dtype + "\"");
    const WeightFormat experts = *dtype == "fp4" ? WeightFormat::mxfp4 : WeightFormat::fp8;
    c.kept_linear = WeightFormat::fp8;
    c.kept_experts = experts;
    c.layout.fp8_block = 128;
    c.layout.fp8_scale_e8m0 = *dtype == "fp4";
    return experts;
}

}  // namespace detail::hf

/// Where config.json `top` keeps its quantization: quantization_config (compressed-tensors' older
/// name compression_config) at the top or, in a multimodal wrapper such as Kimi-K2.5's, in its
/// text_config, where vLLM's ModelConfig._verify_quantization (vllm/config/model.py) looks next.
[[nodiscard]] inline std::optional<JsonReader> quantization_section(const JsonReader& top) {
    for (const char* key : {"quantization_config", "compression_config"})
        if (auto q = top.optional_object(key)) return q;
    if (const auto text = top.optional_object("text_config"))
        for (const char* key : {"quantization_config", "compression_config"})
            if (auto q = text->optional_object(key)) return q;
    return std::nullopt;
}

/// A quantization section's method in lower case: its quant_method or, where a ModelOpt export
/// left quant_method out (ModelOpt 0.31 wrote quant_algo and producer.name "modelopt" alone into
/// config.json, as in aiconfigurator's Qwen3-32B-FP8-Static-PerTensor), "modelopt".
[[nodiscard]] inline std::string quant_method_of(const JsonReader& q) {
    if (const auto m = q.optional_string("quant_method")) return detail::lower_ascii(*m);
    if (const auto producer = q.optional_object("producer"))
        if (detail::lower_ascii(producer->optional_string("name").value_or("")) == "modelopt" &&
            q.optional_string("quant_algo"))
            return "modelopt";
    return "";
}

namespace detail::hf {

/// A ModelOpt KV name (kv_cache_quant_algo, or kv_cache_scheme as a string) as a KV dtype, as
/// vLLM's MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP maps it: FP8 e4m3, NVFP4; nullopt for the rest
/// (MIXED_PRECISION and names vLLM does not know: "auto").
[[nodiscard]] inline Optional<KvDtype> modelopt_kv_name(std::string_view name) {
    const std::string n = upper_ascii(name);
    if (n == "FP8") return KvDtype::fp8_e4m3;
    if (n == "NVFP4") return KvDtype::nvfp4;
    return {};
}

/// Records in `c` the KV cache that quantization section `q` (of method `method`) names, where
/// vLLM reads it (vllm/utils/torch_utils.py, get_kv_cache_quant_algo_string, on main):
///   ModelOpt   only a section whose quant_method is named ("modelopt...", which vLLM's
///              ModelConfig._normalize_quantization_config also sets for an hf_quant_config.json):
///              kv_cache_scheme first, then kv_cache_quant_algo, the first not null; a scheme
///              {dynamic: false, num_bits: 8, type: "float"} is fp8, {num_bits: 4, type: "float"}
///              nvfp4, and a string is read as kv_cache_quant_algo is. A ModelOpt 0.31 config.json
///              without quant_method names none (vLLM's resolver looks no further).
///   compressed-tensors  kv_cache_scheme {num_bits: 8, type: "float"}: fp8 (vLLM's Attention layer
///              turns the cache fp8 whenever the config has a kv_cache_scheme,
///              vllm/model_executor/layers/attention/attention.py).
inline void read_checkpoint_kv(const JsonReader& q, std::string_view method, CheckpointFormat& c) {
    const auto scheme_dtype = [](const Json& s, bool require_static) -> Optional<KvDtype> {
        if (s.is_string()) return modelopt_kv_name(s.get<std::string>());
        if (!s.is_object()) return {};
        const auto field = [&](const char* k) -> const Json* {
            const auto it = s.find(k);
            return it == s.end() ? nullptr : &*it;
        };
        const Json* bits = field("num_bits");
        const Json* type = field("type");
        if (bits == nullptr || !bits->is_number_integer() || type == nullptr ||
            !type->is_string() || type->get<std::string>() != "float")
            return {};
        const Json* dynamic = field("dynamic");
        const bool is_static = dynamic != nullptr && dynamic->is_boolean() && !dynamic->get<bool>();
        if (bits->get<std::int64_t>() == 8 && (is_static || !require_static))
            return KvDtype::fp8_e4m3;
        if (bits->get<std::int64_t>() == 4 && require_static) return KvDtype::nvfp4;
        return {};
    };
    const auto present = [&](const char* key) -> const Json* {
        const Json* v = q.find(key);
        return v != nullptr && !v->is_null() ? v : nullptr;
    };
    if (method.rfind("modelopt", 0) == 0 && q.optional_string("quant_method")) {
        if (const Json* s = present("kv_cache_scheme")) {
            c.kv_cache = scheme_dtype(*s, true);
            c.kv_source = CheckpointKvSource::modelopt_scheme;
        } else if (const Json* a = present("kv_cache_quant_algo"); a && a->is_string()) {
            c.kv_cache = modelopt_kv_name(a->get<std::string>());
            c.kv_source = CheckpointKvSource::modelopt_algo;
        }
    } else if (method == "compressed-tensors") {
        if (const Json* s = present("kv_cache_scheme"); s && s->is_object()) {
            c.kv_cache = scheme_dtype(*s, false);
            c.kv_source = CheckpointKvSource::compressed_tensors;
        }
    }
    if (!c.kv_cache) c.kv_source = CheckpointKvSource::none;
}

/// The format of the weights alone (checkpoint_format without the KV cache).
[[nodiscard]] inline CheckpointFormat checkpoint_weight_format(const JsonReader& top,
                                                               const JsonReader& text) {
    const std::optional<WeightFormat> dtype = torch_dtype_of(top, text);
    const WeightFormat rest = dtype == WeightFormat::fp32 ? WeightFormat::fp32 : WeightFormat::bf16;
    const std::optional<JsonReader> q = quantization_section(top);
    if (!q) {
        CheckpointFormat c;
        if (!dtype) {
            c.source = "no quantization_config or torch_dtype: bf16 assumed";
            return c;
        }
        c.known = true;
        c.linear = c.experts = c.attention = c.rest = *dtype;
        c.source = "torch_dtype";
        return c;
    }
    const std::string method = quant_method_of(*q);
    CheckpointFormat c;
    c.known = true;
    c.rest = rest;
    // DeepSeek-V4: DeepSeek's fp8 quantization_config, or NVIDIA's ModelOpt conversion of its
    // experts, which leaves the other modules as DeepSeek stored them. (compressed-tensors
    // exports write what they ignore in the model's dtype.)
    const std::optional<WeightFormat> v4_experts =
        method == "fp8" || method == "modelopt" ? deepseek_v4_source(top, text, c) : std::nullopt;
    if (method == "fp8" && v4_experts) {
        // DeepSeek's checkpoints, and NVIDIA's NVFP4 ones whose config.json keeps DeepSeek's fp8
        // quantization_config with moe_quant_algo NVFP4 beside it: vLLM's DeepseekV4FP8Config
        // then builds the routed experts as ModelOpt NVFP4 (groups of 16) and the rest as fp8.
        // The multi-token-prediction layer keeps DeepSeek's experts (the conversion lists only
        // the model's layers in quantized_layers).
        c.source = "quantization_config (fp8; DeepSeek-V4 expert_dtype)";
        c.linear = c.attention = WeightFormat::fp8;
        // Its hyper-connection mixers and hash tables are no linear layers (unquantized).
        c.mixers = rest;
        if (const auto block = q->optional_count_array("weight_block_size")) {
            if (block->size() != 2 || (*block)[0] != (*block)[1] || (*block)[0] == 0)
                return unmodelled("quantization_config: fp8 weight_block_size that is not square");
            c.layout.fp8_block = static_cast<std::uint32_t>((*block)[0]);
        }
        c.experts = *v4_experts;
        if (upper_ascii(q->optional_string("moe_quant_algo").value_or("")) == "NVFP4") {
            c.experts = WeightFormat::nvfp4;
            c.layout.group_size = static_cast<std::uint32_t>(
                q->optional_positive_integer("group_size", 1024).value_or(16));
            c.mtp_unquantized = true;
        }
        return c;
    }
    if (method == "fp8") {
        c.source = "quantization_config (fp8)";
        c.linear = c.experts = WeightFormat::fp8;
        if (const auto block = q->optional_count_array("weight_block_size")) {
            if (block->size() != 2 || (*block)[0] != (*block)[1] || (*block)[0] == 0)
                return unmodelled("quantization_config: fp8 weight_block_size that is not square");
            c.layout.fp8_block = static_cast<std::uint32_t>((*block)[0]);
        }
        c.attention = keeps_attention(*q) ? rest : WeightFormat::fp8;
        return c;
    }
    if (method == "mxfp4") {
        c.source = "quantization_config (mxfp4)";
        c.linear = c.attention = rest;
        c.experts = WeightFormat::mxfp4;
        return c;
    }
    if (method == "awq" || method == "gptq") {
        c.source = method == "awq" ? "quantization_config (awq)" : "quantization_config (gptq)";
        const auto bits = q->optional_positive_integer("bits", 64);
        if (bits != 4u)
            return unmodelled("quantization_config: awq or gptq at a bit width other than 4");
        c.linear = c.experts = WeightFormat::int4;
        // group_size -1: one group per row (per-channel scales).
        const Json* g = q->find("group_size");
        if (g != nullptr && g->is_number_integer() && g->get<std::int64_t>() == -1)
            c.layout.group_size = 0xFFFF'FFFFU;
        else if (const auto group = q->optional_positive_integer("group_size", 0xFFFF'FFFFULL))
            c.layout.group_size = static_cast<std::uint32_t>(*group);
        c.layout.int4_zero_points =
            method == "gptq" || q->optional_boolean("zero_point").value_or(true);
        c.attention = keeps_attention(*q) ? rest : WeightFormat::int4;
        return c;
    }
    if (method == "compressed-tensors") return compressed_tensors(*q, rest);
    if (method == "modelopt") {
        // NVIDIA ModelOpt, as config.json's quantization_config or hf_quant_config.json's
        // "quantization" (import_hf_config reads the latter as the former).
        c.source = "quantization_config (ModelOpt)";
        const std::string algo = upper_ascii(q->optional_string("quant_algo").value_or(""));
        if (algo == "MIXED_PRECISION") {
            // Each module's own quant_algo, read once the model is known (quant_modules.hpp).
            c.linear = c.experts = c.attention = rest;
            return c;
        }
        const auto f = modelopt_format(algo, q->optional_positive_integer("group_size"), c.layout);
        if (!f)
            return unmodelled(
                "quantization_config: a ModelOpt quant_algo kvplan does not model (NVFP4, FP8, "
                "FP8_PB_WO, INT4_AWQ, W4A8_AWQ, W8A8_SQ_PER_CHANNEL and MXFP4 are)");
        c.linear = c.experts = c.attention = *f;
        return c;
    }
    return unmodelled(
        "quantization_config: a quant_method kvplan does not model (fp8, mxfp4, "
        "awq, gptq, compressed-tensors and modelopt are)");
}

}  // namespace detail::hf

/// The format `top` (a config.json; `text` its text_config, or itself) says its weights are in,
/// and the KV cache its quantization names.
[[nodiscard]] inline CheckpointFormat checkpoint_format(const JsonReader& top,
                                                        const JsonReader& text) {
    CheckpointFormat c = detail::hf::checkpoint_weight_format(top, text);
    if (const std::optional<JsonReader> q = quantization_section(top))
        detail::hf::read_checkpoint_kv(*q, quant_method_of(*q), c);
    return c;
}

/// The weight format the checkpoint itself is stored in (checkpoint_format), as weight options;
/// nullopt when the file says nothing kvplan models.
[[nodiscard]] inline std::optional<WeightOptions> checkpoint_weight_options(
    const Json& root, std::string_view source) {
    const JsonReader top(root, std::string(source));
    const std::optional<JsonReader> text = top.optional_object("text_config");
    const CheckpointFormat c = checkpoint_format(top, text ? *text : top);
    if (!c.known) return std::nullopt;
    return checkpoint_weights(c);
}

}  // namespace kvplan
