#pragma once

// The largest input of each kind kvplan reads, in one place. A CI gate reads files from the pull
// requests it judges, so every file is refused past its limit, with one line naming the file and
// the limit, before it can cost more memory or time than a real one of its kind would
// (docs/cli.md, "Input limits").

#include <cstdint>
#include <string_view>

namespace kvplan {

/// A kind of input and the most of it kvplan reads.
struct InputLimit {
    std::string_view noun;    ///< "JSON file": messages say "a JSON file", "an existing JSON file"
    std::uint64_t max_bytes;  ///< the file's size, or what is read of a stream, at most
    std::string_view reason;  ///< why real inputs stay under it, for the message
};

/// The largest JSON file kvplan reads: 1 MiB. Configs are kilobytes (the largest bundled one,
/// a config.json or a GPU spec, is under 4 KB), and parsing costs memory several times the
/// file's size.
inline constexpr std::uint64_t max_json_file_bytes = std::uint64_t{1} << 20;

/// The largest Hugging Face config.json (or hf_quant_config.json) kvplan reads: 16 MiB. A quantized
/// checkpoint's config may list every module it quantizes (MiniMax-M3-NVFP4's config.json is 3.09
/// MB, 2.4 MB of it quantization_config); 16 MiB admits five times that and still bounds what a
/// parse costs.
inline constexpr std::uint64_t max_config_json_bytes = std::uint64_t{16} << 20;

/// The deepest a JSON document nests: 64 objects or arrays. A config.json nests 3 deep (a
/// vision-language model's text_config.rope_scaling), a policy 4; reading deeper nesting is only
/// a way to exhaust the stack of whatever walks it.
inline constexpr std::uint32_t max_json_depth = 64;

/// Configs, GPU specs, policies, baselines and price tables.
inline constexpr InputLimit json_file_limit{"JSON file", max_json_file_bytes,
                                            "as configs are kilobytes"};

/// Hugging Face config.json files (models and baselines), as read_json_file(file, numbers,
/// max_config_json_bytes) reads them.
inline constexpr InputLimit config_json_limit{"JSON file", max_config_json_bytes,
                                              "as configs are kilobytes"};

/// `vllm bench serve --save-result` files: 64 MiB. With --save-detailed they hold every
/// request's inter-token latencies and generated text, tens of KB per request of 1,000 output
/// tokens.
inline constexpr InputLimit bench_result_limit{"vLLM benchmark result", std::uint64_t{64} << 20,
                                               "as detailed results take tens of KB a request"};

/// vLLM server logs (`calibrate --log`): 64 MiB. The lines read are printed at start-up, in the
/// first few hundred lines; a longer log can be cut (`head -c 64M`).
inline constexpr InputLimit vllm_log_limit{"vLLM log", std::uint64_t{64} << 20,
                                           "as the start-up lines read come first (head -c 64M)"};

/// Calibration profiles (`--profile`), written by `kvplan calibrate`: 1 MiB (they are under 1 KB).
inline constexpr InputLimit profile_limit{"calibration profile", std::uint64_t{1} << 20,
                                          "as profiles are under 1 KB"};

/// Request traces (CSV or JSON Lines): 4 GiB, read in chunks. A CSV request is 20 to 40 bytes
/// (a time stamp and two counts), so ten million requests take 200 to 400 MB.
inline constexpr InputLimit trace_limit{"trace", std::uint64_t{4} << 30,
                                        "as ten million requests take under 400 MB"};

/// The longest line of a trace: 16 MiB. A request is a few numbers and a time stamp; a JSON Lines
/// trace can also carry its prompt's text or its blocks' hashes (Mooncake's hash_ids), which the
/// reader skips, a few MB at most. A longer "line" is a binary file or a stream without line
/// breaks.
inline constexpr std::uint64_t max_trace_line_bytes = std::uint64_t{16} << 20;

/// The most requests a trace holds: 64 million (2^26), 32 bytes each in memory, 2 GiB in all.
inline constexpr std::uint64_t max_trace_requests = std::uint64_t{1} << 26;

}  // namespace kvplan
