#pragma once

// Command-line values: token counts as vLLM reads them, sizes that name their unit, comma lists.
// Every function throws UsageError naming the flag, what it expected and what it found.

#include <cstddef>
#include <cstdint>
#include <kvplan/detail/enum_table.hpp>
#include <kvplan/dtype.hpp>
#include <kvplan/engine/kind.hpp>
#include <kvplan/engine/release.hpp>
#include <kvplan/plan/speculation.hpp>
#include <kvplan/units.hpp>
#include <kvplan/weight_format.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan::cli {

/// "flag: expected X, found 'text'", the shape of every usage error.
[[noreturn]] void usage_error(std::string_view flag, std::string_view expected,
                              std::string_view found);

/// A token count as vLLM's --max-model-len reads it (vllm/engine/arg_utils.py,
/// human_readable_int): a plain integer, or a number with a suffix. Lowercase k/m/g/t are decimal
/// and take a fraction, truncated after multiplying in double precision as vLLM does
/// (8k = 8,000; 25.6k = 25,600); uppercase K/M/G/T are binary and take whole numbers only
/// (8K = 8,192; 1.5K is an error). Zero and negative counts are usage errors here.
[[nodiscard]] std::uint64_t parse_tokens(std::string_view text, std::string_view flag);

/// A size that names its unit: 5.38GiB, 80GB, 512MiB, 1024B (B, kB, MB, GB, TB, KiB, MiB, GiB,
/// TiB; case as written). A bare number is a usage error: GB and GiB differ by 7 %.
[[nodiscard]] Bytes parse_size(std::string_view text, std::string_view flag);

/// A bare number of GiB, as vLLM's --kv-offloading-size takes it (64, 1.5): 64 x 2^30 B.
[[nodiscard]] Bytes parse_gib_number(std::string_view text, std::string_view flag);

/// A whole number >= min.
[[nodiscard]] std::uint64_t parse_count(std::string_view text, std::string_view flag,
                                        std::uint64_t min = 1);

/// A whole number >= 1 (--concurrency, --max-num-seqs, --top ...).
[[nodiscard]] std::uint64_t parse_whole(std::string_view text, std::string_view flag);

/// --limit-mm-per-prompt as read: images per prompt (0 serves text only), and whether it was
/// written in vLLM's older key=value form.
struct MmLimit {
    std::uint32_t images = 0;
    bool key_value =
        false;  ///< image=N: vLLM v0.8 and v0.9 only (parse_serving checks the release)
};

/// --limit-mm-per-prompt: images per prompt, as a whole number >= 0, vLLM's JSON {"image": N} or
/// its older image=N.
[[nodiscard]] MmLimit parse_mm_limit(std::string_view text, std::string_view flag);

/// A bound of a replica search (--max-gpus, --max-tp): a whole number in [1, 64], the largest
/// replica the search takes.
[[nodiscard]] std::uint32_t parse_search_bound(std::string_view text, std::string_view flag);

/// A switch as vLLM reads its environment variables (vllm/envs.py: bool(int(value))): 0 or 1.
[[nodiscard]] bool parse_switch(std::string_view text, std::string_view flag);

/// A fraction in (0, 1], e.g. --gpu-memory-utilization 0.9.
[[nodiscard]] double parse_fraction(std::string_view text, std::string_view flag);

/// A share in [0, 1], e.g. --prefix-hit-rate 0.4.
[[nodiscard]] double parse_share(std::string_view text, std::string_view flag);

/// A positive real number (milliseconds in a policy, a ratio).
[[nodiscard]] double parse_positive(std::string_view text, std::string_view flag);

/// A parallel degree (--tp, --gpus ...): a whole number in [1, 65536].
[[nodiscard]] std::uint32_t parse_degree(std::string_view text, std::string_view flag);

/// --redundant-experts: a whole number in [0, 65536].
[[nodiscard]] std::uint32_t parse_redundant_experts(std::string_view text, std::string_view flag);

/// --block-size: a whole number of tokens in [1, 1048576].
[[nodiscard]] std::uint32_t parse_block_size(std::string_view text, std::string_view flag);

/// --num-speculative-tokens: a whole number in [1, 64].
[[nodiscard]] std::uint32_t parse_speculative_tokens(std::string_view text, std::string_view flag);

/// --engine: ideal, vllm, sglang or trtllm (the library's table), with the nearest name offered.
[[nodiscard]] Engine parse_engine_name(std::string_view text, std::string_view flag);

/// --engine-version: a release as X.Y or X.Y.Z (0.10, 0.5.12).
[[nodiscard]] EngineVersion parse_engine_version_flag(std::string_view text, std::string_view flag);

/// --speculative-method: none, ngram, eagle, eagle3, mtp or draft_model (the library's table).
[[nodiscard]] DraftMethod parse_draft_method_flag(std::string_view text, std::string_view flag);

/// A KV-cache element type (bf16, fp8, int4, ...).
[[nodiscard]] KvDtype parse_kv_dtype_flag(std::string_view text, std::string_view flag);

/// A weight format (fp32, bf16, fp8, int4, mxfp4, ...), or "checkpoint": the model's own
/// (nullopt).
[[nodiscard]] std::optional<WeightFormat> parse_weight_dtype_flag(std::string_view text,
                                                                  std::string_view flag);

/// A Mamba state type as vLLM's --mamba-cache-dtype reads it (auto, bfloat16, float16, float32;
/// bf16, fp16, fp32 too): its bytes per value, 0 for auto.
[[nodiscard]] std::uint32_t parse_mamba_dtype_flag(std::string_view text, std::string_view flag);

/// A whole number in [1, 2^32 - 1] (a model's layer or head count).
[[nodiscard]] std::uint32_t parse_count32(std::string_view text, std::string_view flag);

/// A converter for a flag spelled as in an enum's table (the library's, detail/enum_table.hpp):
/// the value, or a usage error naming the flag, `expected` and what was found.
template <class E, std::size_t N>
[[nodiscard]] auto enum_flag(const FixedArray<detail::EnumName<E>, N>& table,
                             std::string_view expected) {
    return [&table, expected](std::string_view text, std::string_view flag) -> E {
        if (const auto e = detail::enum_parse(table, detail::TextRef(text))) return *e;
        usage_error(flag, expected, text);
    };
}

/// The most items a comma-separated flag takes.
inline constexpr std::size_t max_list_items = 64;

/// "a,b,c" split on commas; an empty item, or more than max_list_items, is a usage error.
[[nodiscard]] std::vector<std::string> split_list(std::string_view text, std::string_view flag);

/// Each item of a comma list through `parse`.
template <class Parse>
[[nodiscard]] auto parse_list(std::string_view text, std::string_view flag, Parse parse) {
    std::vector<decltype(parse(std::string_view{}, flag))> out;
    for (const std::string& item : split_list(text, flag)) out.push_back(parse(item, flag));
    return out;
}

}  // namespace kvplan::cli
