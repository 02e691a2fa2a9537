#include "parse.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <kvplan/detail/nearest.hpp>
#include <kvplan/quantity_text.hpp>
#include <string>

#include "context.hpp"

namespace kvplan::cli {

namespace {

// The library's number pieces, so that flags and its lists read numbers alike.
using detail::quantity_text::is_decimal;
using detail::quantity_text::to_double;
using detail::quantity_text::to_u64;
using detail::quantity_text::trim;

/// A flag's token count: the grammar's, and at least one.
constexpr std::string_view tokens_expected =
    "a token count >= 1 (8192, 8k = 8,000, 25.6k = 25,600, 8K = 8,192)";

}  // namespace

void usage_error(std::string_view flag, std::string_view expected, std::string_view found) {
    std::string m(flag);
    m.append(": expected ").append(expected).append(", found '").append(found).append("'");
    throw UsageError(m);
}

std::uint64_t parse_tokens(std::string_view text, std::string_view flag) {
    // The library's grammar (kvplan/quantity_text.hpp), which its lists of lengths read too; a
    // flag's count is at least one token.
    const TextRead<std::uint64_t> r = read_token_count(text);
    if (!r.value || *r.value == 0)
        usage_error(flag,
                    !r.value && r.expected != token_count_grammar ? r.expected : tokens_expected,
                    text);
    return *r.value;
}

Bytes parse_size(std::string_view text, std::string_view flag) {
    const TextRead<Bytes> r = read_size(text);
    if (!r.value) usage_error(flag, r.expected, text);
    return *r.value;
}

Bytes parse_gib_number(std::string_view text, std::string_view flag) {
    const std::string_view s = trim(text);
    const bool number = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
    });
    const TextRead<Bytes> r = number ? read_size(std::string(s) + "GiB") : TextRead<Bytes>{};
    if (!r.value || r.value->is_zero())
        usage_error(flag, "a number of GiB > 0, as vLLM takes it (64, 1.5)", text);
    return *r.value;
}

std::uint64_t parse_count(std::string_view text, std::string_view flag, std::uint64_t min) {
    std::uint64_t v = 0;
    const std::string_view s = trim(text);
    if (!to_u64(s, v) || v < min)
        usage_error(flag, "a whole number >= " + std::to_string(min), text);
    return v;
}

std::uint64_t parse_whole(std::string_view text, std::string_view flag) {
    return parse_count(text, flag);
}

MmLimit parse_mm_limit(std::string_view text, std::string_view flag) {
    // vLLM takes JSON by modality; of the modalities, images alone are modelled.
    constexpr std::string_view expected =
        "images per prompt: a whole number, {\"image\": N} or image=N";
    std::string compact;
    for (const char ch : text)
        if (ch != ' ') compact += ch;
    std::string_view v = compact;
    MmLimit m;
    constexpr std::string_view open = "{\"image\":";
    // vLLM's comma-separated key=value (nullable_kvs, vllm/engine/arg_utils.py: keys lowercased)
    // up to v0.9; of its keys, image alone is modelled, as in the JSON.
    constexpr std::string_view key = "image=";
    if (v.starts_with('{')) {
        if (!v.starts_with(open) || !v.ends_with('}')) usage_error(flag, expected, text);
        v = v.substr(open.size(), v.size() - open.size() - 1);
    } else if (v.size() > key.size() &&
               std::equal(key.begin(), key.end(), v.begin(), [](char k, char c) {
                   return k == std::tolower(static_cast<unsigned char>(c));
               })) {
        m.key_value = true;
        v = v.substr(key.size());
    }
    std::uint64_t n = 0;
    if (!to_u64(v, n) || n > 0xFFFF'FFFFU) usage_error(flag, expected, text);
    m.images = static_cast<std::uint32_t>(n);
    return m;
}

std::uint32_t parse_search_bound(std::string_view text, std::string_view flag) {
    const std::uint64_t v = parse_count(text, flag);
    if (v > 64) usage_error(flag, "at most 64", text);
    return static_cast<std::uint32_t>(v);
}

bool parse_switch(std::string_view text, std::string_view flag) {
    const std::string_view s = trim(text);
    if (s != "0" && s != "1") usage_error(flag, "0 or 1, as vLLM's environment variable", text);
    return s == "1";
}

double parse_fraction(std::string_view text, std::string_view flag) {
    const std::string_view s = trim(text);
    bool has_point = false;
    const double v = is_decimal(s, has_point) ? to_double(s) : -1.0;
    if (!(v > 0.0 && v <= 1.0)) usage_error(flag, "a fraction in (0, 1], e.g. 0.9", text);
    return v;
}

double parse_share(std::string_view text, std::string_view flag) {
    const std::string_view s = trim(text);
    bool has_point = false;
    const double v = is_decimal(s, has_point) ? to_double(s) : -1.0;
    if (!(v >= 0.0 && v <= 1.0)) usage_error(flag, "a share in [0, 1], e.g. 0.4", text);
    return v;
}

double parse_positive(std::string_view text, std::string_view flag) {
    const std::string_view s = trim(text);
    bool has_point = false;
    const double v = is_decimal(s, has_point) ? to_double(s) : -1.0;
    if (!(v > 0.0) || !std::isfinite(v)) usage_error(flag, "a positive number", text);
    return v;
}

std::uint32_t parse_degree(std::string_view text, std::string_view flag) {
    const std::uint64_t v = parse_count(text, flag);
    if (v > (1U << 16)) usage_error(flag, "at most 65536", text);
    return static_cast<std::uint32_t>(v);
}

std::uint32_t parse_redundant_experts(std::string_view text, std::string_view flag) {
    const std::uint64_t v = parse_count(text, flag, 0);
    if (v > (1U << 16)) usage_error(flag, "at most 65536", text);
    return static_cast<std::uint32_t>(v);
}

std::uint32_t parse_block_size(std::string_view text, std::string_view flag) {
    const std::uint64_t b = parse_count(text, flag);
    if (b > (1U << 20)) usage_error(flag, "at most 1048576 tokens", text);
    return static_cast<std::uint32_t>(b);
}

std::uint32_t parse_speculative_tokens(std::string_view text, std::string_view flag) {
    const std::uint64_t t = parse_count(text, flag);
    if (t > 64) usage_error(flag, "at most 64", text);
    return static_cast<std::uint32_t>(t);
}

Engine parse_engine_name(std::string_view text, std::string_view flag) {
    if (const auto e = parse_engine(text)) return *e;
    // The engines' names are engine/kind.hpp's: "ideal, vllm, sglang or trtllm".
    std::vector<std::string_view> names;
    std::string expected;
    for (const Engine e : all_engines) {
        if (!names.empty()) expected += names.size() + 1 == all_engines.size() ? " or " : ", ";
        names.push_back(name(e));
        expected += name(e);
    }
    throw UsageError(std::string(flag) + ": expected " + expected + ", found '" +
                     std::string(text) + "'" + detail::did_you_mean(text, names));
}

EngineVersion parse_engine_version_flag(std::string_view text, std::string_view flag) {
    if (const auto v = parse_engine_version(text)) return *v;
    usage_error(flag, "a release as X.Y or X.Y.Z (0.10, 0.5.12)", text);
}

DraftMethod parse_draft_method_flag(std::string_view text, std::string_view flag) {
    if (const auto m = parse_draft_method(text)) return *m;
    throw UsageError(
        std::string(flag) + ": expected none, ngram, eagle, eagle3, mtp or draft_model, found '" +
        std::string(text) + "'" +
        detail::did_you_mean(text, {"none", "ngram", "eagle", "eagle3", "mtp", "draft_model"}));
}

KvDtype parse_kv_dtype_flag(std::string_view text, std::string_view flag) {
    if (const auto d = parse_kv_dtype(trim(text))) return *d;
    usage_error(flag,
                "a KV dtype (fp32, fp16, bf16, fp8 = fp8_e4m3, fp8_e5m2, fp8_per_token_head, "
                "int8, int4, nvfp4, nvfp4_4over6, mxfp4)",
                text);
}

std::optional<WeightFormat> parse_weight_dtype_flag(std::string_view text, std::string_view flag) {
    const std::string_view t = trim(text);
    if (t == "checkpoint") return std::nullopt;
    if (const auto f = parse_weight_format(t)) return *f;
    usage_error(flag,
                "a weight format (fp32, bf16, fp16, fp8, int8, int4, mxfp8, mxfp4, nvfp4) or "
                "checkpoint (the model's own)",
                text);
}

std::uint32_t parse_mamba_dtype_flag(std::string_view text, std::string_view flag) {
    // vLLM's MambaDType spellings (vllm/config/cache.py), and ours; auto keeps the importer's
    // default.
    std::string t(trim(text));
    std::transform(t.begin(), t.end(), t.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (t == "auto") return 0;
    if (t == "float32" || t == "fp32") return 4;
    if (t == "float16" || t == "fp16" || t == "bfloat16" || t == "bf16") return 2;
    usage_error(flag, "auto, bfloat16, float16 or float32", text);
}

std::uint32_t parse_count32(std::string_view text, std::string_view flag) {
    const std::uint64_t v = parse_count(text, flag);
    if (v > 0xFFFF'FFFFULL) usage_error(flag, "a whole number from 1 to 4294967295", text);
    return static_cast<std::uint32_t>(v);
}

std::vector<std::string> split_list(std::string_view text, std::string_view flag) {
    // Each item is a model, GPU or format judged (compare: each of every other list's too): a
    // list of thousands would run for minutes.
    const auto count = static_cast<std::size_t>(std::count(text.begin(), text.end(), ',')) + 1;
    if (count > max_list_items)
        usage_error(
            flag, "a comma-separated list of at most " + std::to_string(max_list_items) + " items",
            std::to_string(count) + " items");
    std::vector<std::string> items;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        const std::string_view item =
            trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
        if (item.empty()) usage_error(flag, "a comma-separated list without empty items", text);
        items.emplace_back(item);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return items;
}

}  // namespace kvplan::cli
