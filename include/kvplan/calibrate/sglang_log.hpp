#pragma once

// What an SGLang start-up log says about memory, beside the vLLM reader (calibrate.hpp). SGLang
// prints (python/sglang/srt/model_executor/model_runner.py and mem_cache/memory_pool.py):
//
//   Load weight begin. avail mem=A GB
//   Load weight end. type=..., dtype=..., avail mem=B GB, mem usage=W GB.
//   KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB      (MHA pools)
//   KV Cache is allocated. #tokens: N, KV size: X GB                   (MLA pools)
//   max_total_num_tokens=N, chunked_prefill_size=..., max_running_requests=..., context_len=...
//   server_args=ServerArgs(..., mem_fraction_static=F, ...)
//
// Every "GB" there is GiB: get_available_gpu_memory returns free bytes / (1 << 30)
// (python/sglang/srt/utils/common.py), the weights' "mem usage" is the difference of two such
// figures, and memory_pool.py divides the buffers' bytes by GB = 1024 ** 3. A start SGLang refuses
// shows "Not enough memory" (profile_max_num_token found no room for the pool) or an error of
// the configuration.
//
// Opt-in (not in kvplan.hpp): reads files and allocates.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "../calibrate.hpp"

namespace kvplan {

/// What an SGLang start-up log says about memory. Every field is optional: logs differ by release.
struct SglangLogFacts {
    std::optional<LoggedSize> free_before_weights;  ///< "Load weight begin. avail mem="
    std::optional<LoggedSize> free_after_weights;   ///< "Load weight end. ... avail mem="
    /// "Load weight end. ... mem usage=", or where a release prints no "mem usage", the free
    /// memory before the weights less after them.
    std::optional<LoggedSize> weights;
    std::optional<std::uint64_t> kv_tokens;     ///< "#tokens:" or max_total_num_tokens
    std::optional<LoggedSize> k_size;           ///< "K size:" (or MLA's "KV size:")
    std::optional<LoggedSize> v_size;           ///< "V size:" (absent for MLA)
    std::optional<double> mem_fraction_static;  ///< from server_args
    std::optional<std::uint64_t> context_len;   ///< "context_len=" of the scheduler line
    std::optional<std::uint64_t> max_running_requests;
    bool refused = false;        ///< the log shows the start failing
    std::size_t lines_read = 0;  ///< lines that gave a fact
};

/// Reads the memory facts of an SGLang start-up log. Lines it does not know are skipped; a log with
/// none of them is InvalidInput naming `where`. When a line repeats (every TP rank prints its own)
/// the last one counts.
[[nodiscard]] inline SglangLogFacts parse_sglang_log(std::string_view text,
                                                     std::string_view where) {
    SglangLogFacts f;
    const auto read = [&f](detail::LogLine& line) {
        if (line.has("Load weight begin.")) line.take(f.free_before_weights, "avail mem=");
        if (line.has("Load weight end.")) {
            line.take(f.free_after_weights, "avail mem=");
            line.take(f.weights, "mem usage=");
        }
        if (line.has("KV Cache is allocated.")) {
            line.take(f.kv_tokens, "#tokens:");
            // An MLA pool prints one "KV size:", which holds "V size:" too: read it alone.
            if (line.has("KV size:")) {
                line.take(f.k_size, "KV size:");
            } else {
                line.take(f.k_size, "K size:");
                line.take(f.v_size, "V size:");
            }
        }
        if (line.has("max_total_num_tokens=")) {
            line.take(f.kv_tokens, "max_total_num_tokens=");
            line.take(f.context_len, "context_len=");
            line.take(f.max_running_requests, "max_running_requests=");
        }
        line.take(f.mem_fraction_static, "mem_fraction_static=");
        if (line.flag({"Not enough memory. Please try to increase --mem-fraction-static",
                       "leave no GPU memory for the KV cache", "is not divisible by"}))
            f.refused = true;
    };
    f.lines_read = detail::scan_log_lines(
        text, where,
        "SGLang start-up lines (\"Load weight end\", \"KV Cache is allocated\", "
        "\"max_total_num_tokens=\", ...)",
        read);
    // Releases before "mem usage=" (0.4.1, 0.4.2) print the two free figures it is the
    // difference of (load_model: before_avail_memory - after_avail_memory); each is rounded to
    // 0.01 GiB, so the difference is within the sum of their half steps.
    if (!f.weights && f.free_before_weights && f.free_after_weights &&
        f.free_before_weights->value > f.free_after_weights->value)
        f.weights = LoggedSize{f.free_before_weights->value - f.free_after_weights->value,
                               f.free_before_weights->half_step + f.free_after_weights->half_step};
    return f;
}

/// Reads the SGLang log at `path`, of at most vllm_log_limit (the same bound as vLLM's). Throws
/// InvalidInput.
[[nodiscard]] inline SglangLogFacts load_sglang_log(const std::string& path) {
    return parse_sglang_log(detail::read_input_text(path, vllm_log_limit),
                            detail::without_controls(path));
}

}  // namespace kvplan
