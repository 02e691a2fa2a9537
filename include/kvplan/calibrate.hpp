#pragma once

// Calibration from a vLLM start-up log. vLLM measures what no formula predicts (the activation peak
// of its profile run, memory outside PyTorch, CUDA graphs) and prints what it found. From those
// lines this header fits the non-KV reserve of one model on one GPU:
//
//     reserve = ceil(total x gpu_memory_utilization) - weights - available KV
//
// (vllm/v1/worker/gpu_worker.py, determine_available_memory: available = requested_memory -
// non_kv_cache_memory, non-KV = weights + torch peak increase + non-torch increase [+ CUDA graph
// estimate since v0.21]; V0's vllm/worker/worker.py, determine_num_available_blocks, the same
// without the graphs). The profile it writes lets later runs use the measured reserve.
//
// Lines read (V0 and V1; "GB" in vLLM's weight lines is GiB: the value is bytes / 2^30):
//   Loading model weights took X GB | Model loading took X GiB [memory] and ... | model weights
//   take XGiB total_gpu_memory (XGiB) | total_gpu_memory=XGiB | Free memory on device (F/T GiB)
//   gpu_memory_utilization (U) | gpu_memory_utilization=U | --gpu-memory-utilization=U (first)
//   Available KV cache memory: X GiB | the rest of the memory reserved for KV Cache is XGiB |
//       kv_cache_size=XGiB
//   non_torch_memory takes XGiB | non_torch_memory=XGiB | non-torch forward increase memory: XGiB
//   PyTorch activation peak memory takes XGiB | torch peak memory increase: XGiB |
//       peak_torch_memory=XGiB (weights included)
//   # GPU blocks: N | # cuda blocks: N | GPU KV cache size: N tokens
//   Maximum concurrency for N tokens per request: X.XXx
//   Graph capturing finished in N secs, took X GiB | Estimated CUDA graph memory: X GiB total
//   vLLM API server version X.Y.Z | Initializing a V1 LLM engine (vX.Y.Z) | Initializing an LLM
//       engine (vX.Y.Z): the release (vllm/entrypoints/openai/api_server.py logs the first,
//       vllm/v1/engine/core.py and V0's vllm/engine/llm_engine.py the others)
// When a line repeats (several workers, several runs) the last one counts.
//
// Opt-in (not in kvplan.hpp): reads files and allocates.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "budget.hpp"
#include "detail/enum_table.hpp"
#include "detail/flat_json.hpp"
#include "detail/input_file.hpp"
#include "detail/scale.hpp"
#include "detail/text.hpp"
#include "engine/release.hpp"
#include "error.hpp"
#include "input_limits.hpp"
#include "plan/deployment.hpp"
#include "roofline/estimate.hpp"
#include "units.hpp"

namespace kvplan {

/// A size as a log prints it: the bytes it stands for and the half-step of its last printed digit
/// (6.51 GiB is 6.51 GiB +- 0.005 GiB).
struct LoggedSize {
    Bytes value{};
    Bytes half_step{};
    [[nodiscard]] Bytes lo() const { return value > half_step ? value - half_step : Bytes{}; }
    [[nodiscard]] Bytes hi() const { return value + half_step; }
};

/// What a vLLM start-up log says about memory. Every field is optional: logs differ by version.
struct VllmLogFacts {
    std::optional<LoggedSize> weights;
    std::optional<LoggedSize> memory_total;
    std::optional<double> utilization;
    std::optional<LoggedSize> available_kv;
    /// "Available KV cache memory: -X GiB": the start failed, the weights and the profiled peak
    /// having taken X more than memory x utilization (vLLM then raises; the last line counts).
    std::optional<LoggedSize> kv_shortfall;
    std::optional<LoggedSize> non_torch;
    std::optional<LoggedSize> activation_peak;  ///< the torch peak increase of the profile run
    std::optional<LoggedSize> peak_torch;  ///< older V0: the absolute torch peak, weights included
    std::optional<LoggedSize> non_kv_total;  ///< V1 debug: "Total non KV cache memory"
    std::optional<std::uint64_t> gpu_blocks;
    std::optional<std::uint64_t> kv_cache_tokens;
    std::optional<std::uint64_t> max_model_len;  ///< from the concurrency line
    std::optional<double> max_concurrency;
    std::optional<LoggedSize> cuda_graphs;
    bool cuda_graphs_charged = false;  ///< "CUDA graph memory profiling is enabled" (v0.21+)
    /// The release line the log's banner names ("vLLM API server version 0.10.1.1": 0.10).
    std::optional<EngineVersion> engine_version;
    /// The log shows vLLM refusing to start: a negative KV memory, one request of max_model_len
    /// past the cache ("To serve at least one request ..."; V0: "larger than the maximum number
    /// of tokens that can be stored in KV cache"), no memory for the cache blocks, a layout
    /// check ("... is not divisible by ...", "must be divisible by"), or the weights not fitting
    /// ("CUDA out of memory" while loading; PyTorch's "Tried to allocate X GiB").
    bool refused = false;
    std::size_t lines_read = 0;  ///< lines that gave a fact
};

namespace detail {

struct LogNumber {
    double value = 0;
    int decimals = 0;
    std::size_t end = 0;  // position after the number
};

/// The number starting at or after `from` (skipping spaces, '(', '=', ':', quotes and the '*' of a
/// log quoted in Markdown, "**Model loading took:** 14.99 GiB"), digits with optional ','
/// thousands separators and one '.'.
[[nodiscard]] inline std::optional<LogNumber> log_number_at(std::string_view line,
                                                            std::size_t from) {
    std::size_t p = from;
    while (p < line.size() && (line[p] == ' ' || line[p] == '(' || line[p] == '=' ||
                               line[p] == ':' || line[p] == '\'' || line[p] == '*'))
        ++p;
    std::string digits;
    int decimals = -1;
    for (; p < line.size(); ++p) {
        const char c = line[p];
        if (c >= '0' && c <= '9') {
            digits.push_back(c);
            if (decimals >= 0) ++decimals;
        } else if (c == ',' && decimals < 0 && !digits.empty() && p + 1 < line.size() &&
                   line[p + 1] >= '0' && line[p + 1] <= '9') {
            continue;
        } else if (c == '.' && decimals < 0 && p + 1 < line.size() && line[p + 1] >= '0' &&
                   line[p + 1] <= '9') {
            digits.push_back('.');
            decimals = 0;
        } else {
            break;
        }
    }
    const auto v = parse_double(digits);
    if (!v) return std::nullopt;
    return LogNumber{*v, std::max(decimals, 0), p};
}

/// The number after the first `key` in `line` (nullopt when either is missing).
[[nodiscard]] inline std::optional<LogNumber> log_number_after(std::string_view line,
                                                               std::string_view key) {
    const std::size_t at = line.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    return log_number_at(line, at + key.size());
}

/// A size after `key`: the number and its unit (GiB or GB, both meaning 2^30 bytes in vLLM's
/// lines; MiB or MB, 2^20).
[[nodiscard]] inline std::optional<LoggedSize> log_size_after(std::string_view line,
                                                              std::string_view key) {
    const auto n = log_number_after(line, key);
    if (!n) return std::nullopt;
    std::size_t p = n->end;
    while (p < line.size() && line[p] == ' ') ++p;
    const std::string_view unit = line.substr(p, 3);
    double scale = 0;
    if (unit == "GiB" || unit.substr(0, 2) == "GB")
        scale = static_cast<double>(GiB.bytes);
    else if (unit == "MiB" || unit.substr(0, 2) == "MB")
        scale = static_cast<double>(MiB.bytes);
    else
        return std::nullopt;
    const double half = 0.5 * std::pow(10.0, -n->decimals) * scale;
    return LoggedSize{round_to_bytes(n->value * scale, B), round_to_bytes(half, B)};
}

/// One line of a start-up log as a reader looks at it, and whether it gave a fact: the scanning
/// every engine's log reader shares (vLLM's here, SGLang's in calibrate/sglang_log.hpp).
struct LogLine {
    std::string_view text;
    bool hit = false;  ///< the line gave a fact

    /// Whether the line holds `key`.
    [[nodiscard]] bool has(std::string_view key) const noexcept {
        return text.find(key) != std::string_view::npos;
    }
    /// Whether the line holds any of `keys`; a fact (a refusal, a switch) when it does.
    [[nodiscard]] bool flag(std::initializer_list<std::string_view> keys) noexcept {
        for (std::string_view k : keys)
            if (has(k)) return hit = true;
        return false;
    }
    /// The number after `key` (nullopt when either is missing).
    [[nodiscard]] std::optional<LogNumber> number_after(std::string_view key) const {
        return log_number_after(text, key);
    }
    /// The size after `key` (nullopt when either is missing).
    [[nodiscard]] std::optional<LoggedSize> size_after(std::string_view key) const {
        return log_size_after(text, key);
    }
    /// `field` set to the number after `key` when the line has it (the last line counts).
    void take(std::optional<double>& field, std::string_view key) {
        if (const auto n = number_after(key)) take_value(field, n->value);
    }
    /// `field` set to the whole number after `key` when the line has it (the last line counts).
    void take(std::optional<std::uint64_t>& field, std::string_view key) {
        if (const auto n = number_after(key))
            take_value(field, static_cast<std::uint64_t>(n->value));
    }
    /// `field` set to the size after `key` when the line has it (the last line counts).
    void take(std::optional<LoggedSize>& field, std::string_view key) {
        if (const auto v = size_after(key)) take_value(field, *v);
    }
    /// `field` set to `v`; the line gave a fact.
    template <class T, class V>
    void take_value(std::optional<T>& field, V v) {
        field = T(v);
        hit = true;
    }
};

/// Calls `read(LogLine&)` on each line of `text` and returns how many gave a fact; a log where none
/// did is InvalidInput naming `where` and what was `expected`.
template <class Read>
std::size_t scan_log_lines(std::string_view text, std::string_view where, std::string_view expected,
                           Read read) {
    std::size_t lines_read = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t end = std::min(text.find('\n', pos), text.size());
        LogLine line{text.substr(pos, end - pos)};
        pos = end + 1;
        read(line);
        if (line.hit) ++lines_read;
    }
    if (lines_read == 0) throw_field_error<InvalidInput>(where, "log", expected, "none");
    return lines_read;
}

/// The release line of a version printed after `key` ("0.10.1.1" or "v0.13.0": 0.10, 0.13);
/// nullopt when the line lacks `key` or no major.minor follows it.
[[nodiscard]] inline std::optional<EngineVersion> log_release_after(std::string_view line,
                                                                    std::string_view key) {
    const std::size_t at = line.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view rest = line.substr(at + key.size());
    const std::size_t dot = rest.find('.');
    if (dot == std::string_view::npos) return std::nullopt;
    std::size_t end = dot + 1;
    while (end < rest.size() && rest[end] >= '0' && rest[end] <= '9') ++end;
    return parse_engine_version(rest.substr(0, end));
}

}  // namespace detail

/// Reads the memory facts of a vLLM start-up log (V0 or V1). Lines it does not know are skipped;
/// a log with none of them is InvalidInput naming `where`.
[[nodiscard]] inline VllmLogFacts parse_vllm_log(std::string_view text, std::string_view where) {
    VllmLogFacts f;
    const auto read = [&f](detail::LogLine& line) {
        // A size printed twice (V0: "Loading model weights took 21.2134 GB", then "model weights
        // take 21.21GiB") keeps its finer figure when the two agree.
        const auto take_size = [&](std::optional<LoggedSize>& field, std::optional<LoggedSize> v) {
            if (!v) return;
            line.hit = true;
            if (field && field->half_step < v->half_step && field->value <= v->hi() &&
                field->value >= v->lo())
                return;
            field = v;
        };
        take_size(f.weights, line.size_after("Loading model weights took"));
        take_size(f.weights, line.size_after("Model loading took"));
        take_size(f.weights, line.size_after("model weights take"));
        take_size(f.weights, line.size_after("weights memory:"));
        take_size(f.memory_total, line.size_after("total_gpu_memory"));
        if (const std::size_t at = line.text.find("Free memory on device (");
            at != std::string_view::npos)
            if (const std::size_t slash = line.text.find('/', at); slash != std::string_view::npos)
                take_size(f.memory_total, detail::log_size_after(line.text.substr(slash), "/"));
        line.take(f.utilization, "gpu_memory_utilization");
        line.take(f.utilization, "--gpu-memory-utilization");
        line.take(f.utilization, "Desired GPU memory utilization is (");
        if (const auto v = line.size_after("Available KV cache memory:")) {
            take_size(f.available_kv, v);
            f.kv_shortfall.reset();
        }
        if (const auto v = line.size_after("Available KV cache memory: -")) {
            take_size(f.kv_shortfall, v);
            f.available_kv.reset();
        }
        take_size(f.available_kv, line.size_after("reserved for KV Cache is"));
        take_size(f.available_kv, line.size_after("kv_cache_size"));
        take_size(f.non_torch, line.size_after("non_torch_memory takes"));
        take_size(f.non_torch, line.size_after("non_torch_memory="));
        take_size(f.non_torch, line.size_after("non-torch forward increase memory:"));
        take_size(f.activation_peak, line.size_after("activation peak memory takes"));
        take_size(f.activation_peak, line.size_after("torch peak memory increase:"));
        take_size(f.peak_torch, line.size_after("peak_torch_memory="));
        take_size(f.non_kv_total, line.size_after("Total non KV cache memory:"));
        // V1 debug: "Actual usage is A GiB for weight, B GiB for peak activation, C GiB for
        // non-torch memory, and D GiB for CUDAGraph memory."
        take_size(f.weights, line.size_after("Actual usage is"));
        take_size(f.activation_peak, line.size_after("GiB for weight,"));
        take_size(f.non_torch, line.size_after("GiB for peak activation,"));
        take_size(f.cuda_graphs, line.size_after("GiB for non-torch memory, and"));
        for (std::string_view key : {"GPU blocks:", "cuda blocks:"}) line.take(f.gpu_blocks, key);
        if (line.has("tokens")) line.take(f.kv_cache_tokens, "GPU KV cache size:");
        if (auto n = line.number_after("Maximum concurrency for")) {
            line.take_value(f.max_model_len, static_cast<std::uint64_t>(n->value));
            if (auto c = detail::log_number_after(line.text.substr(n->end), "per request:"))
                line.take_value(f.max_concurrency, c->value);
        }
        if (line.has("Graph capturing finished")) take_size(f.cuda_graphs, line.size_after("took"));
        take_size(f.cuda_graphs, line.size_after("Estimated CUDA graph memory:"));
        if (line.flag({"CUDA graph memory profiling is enabled"})) f.cuda_graphs_charged = true;
        for (std::string_view key : {"vLLM API server version ", "LLM engine (v"})
            if (const auto v = detail::log_release_after(line.text, key))
                line.take_value(f.engine_version, *v);
        if (line.flag({"Available KV cache memory: -", "To serve at least one request",
                       "stored in KV cache", "No available memory for the cache blocks",
                       "is not divisible by", "must be divisible by", "CUDA out of memory",
                       "Tried to allocate"}))
            f.refused = true;
    };
    f.lines_read = detail::scan_log_lines(
        text, where,
        "vLLM start-up lines (\"Available KV cache memory\", \"# GPU blocks\", \"Model "
        "loading took\", ...)",
        read);
    return f;
}

/// Reads the vLLM log at `path`, of at most vllm_log_limit. Throws InvalidInput.
[[nodiscard]] inline VllmLogFacts load_vllm_log(const std::string& path) {
    return parse_vllm_log(detail::read_input_text(path, vllm_log_limit),
                          detail::without_controls(path));
}

/// Where a figure of the fit came from: the log's own line, the GPU spec named beside it (its
/// memory total), a value the user gave (a flag or keyword), or the model.
enum class FigureSource : std::uint8_t { log, gpu_spec, given, modelled };

/// Each source's spelling.
inline constexpr FixedArray<detail::EnumName<FigureSource>, 4> figure_source_names{{
    {FigureSource::log, "log"},
    {FigureSource::gpu_spec, "gpu_spec"},
    {FigureSource::given, "given"},
    {FigureSource::modelled, "modelled"},
}};

[[nodiscard]] constexpr std::string_view name(FigureSource s) noexcept {
    return detail::enum_name(figure_source_names, s);
}

/// What the log cannot say, from elsewhere.
struct CalibrationInputs {
    /// The GPU spec's memory total (GpuSpec::memory_total, exact): preferred to the log's figure,
    /// which is rounded.
    std::optional<Bytes> memory_total;
    std::optional<double> utilization;  ///< given by the user: overrides the log's
    double default_utilization = 0.9;   ///< when neither gives one (vLLM's default through v0.1x)
    std::optional<Bytes> weights;       ///< modelled weights, when the log has no weight line
    /// Bytes of one block over the layers of a rank (vLLM V0's cache_block_size; V1's page x layers
    /// for a model of one layer type) and tokens per block: turns "# GPU blocks: N" or
    /// "GPU KV cache size: N tokens" into an exact interval for the available KV memory.
    std::optional<Bytes> bytes_per_block;
    std::uint32_t block_size = 16;
};

/// The fitted reserve and the figures it rests on.
struct CalibrationFit {
    Bytes memory_total{};
    FigureSource memory_total_source = FigureSource::log;
    double utilization = 0;
    FigureSource utilization_source = FigureSource::log;
    Bytes usable{};  ///< ceil(memory_total x utilization), vLLM's requested_memory
    Bytes weights{};
    FigureSource weights_source = FigureSource::log;
    Bytes available_kv{};  ///< the middle of [available_lo, available_hi]
    Bytes available_lo{};
    Bytes available_hi{};
    std::optional<std::uint64_t> blocks{};  ///< the block count the interval used
    bool blocks_agree = true;               ///< the block count and the printed GiB figure overlap
    Bytes reserve{};                        ///< usable - weights - available_kv
    std::optional<Bytes> cuda_graphs{};     ///< part of the reserve when charged (v0.21+)
    bool consistent = true;                 ///< weights + available KV fit in usable
    /// The log is a failed start: its KV memory was negative, kv_shortfall below zero
    /// (available_kv is then zero and the reserve usable - weights + kv_shortfall).
    bool started = true;
    Bytes kv_shortfall{};
};

/// Fits the non-KV reserve from `f`. Throws InvalidInput naming `where` when a needed figure is in
/// neither the log nor `in` (the GPU's total memory, the available KV memory, the weights).
[[nodiscard]] inline CalibrationFit fit_reserve(const VllmLogFacts& f, const CalibrationInputs& in,
                                                std::string_view where) {
    CalibrationFit c;
    if (in.memory_total) {
        c.memory_total = *in.memory_total;
        c.memory_total_source = FigureSource::gpu_spec;
    } else if (f.memory_total) {
        c.memory_total = f.memory_total->value;
    } else {
        detail::throw_field_error<InvalidInput>(
            where, "total GPU memory", "a GPU (--gpu) or a log line with total_gpu_memory", "none");
    }
    if (in.utilization) {
        c.utilization = *in.utilization;
        c.utilization_source = FigureSource::given;
    } else if (f.utilization) {
        c.utilization = *f.utilization;
    } else {
        c.utilization = in.default_utilization;
        c.utilization_source = FigureSource::modelled;
    }
    if (!(c.utilization > 0 && c.utilization <= 1))
        detail::throw_field_error<InvalidInput>(
            where, "gpu_memory_utilization", "a fraction in (0, 1]", std::to_string(c.utilization));
    c.usable = detail::scale_up(c.memory_total, c.utilization);
    if (f.weights) {
        c.weights = f.weights->value;
    } else if (in.weights) {
        c.weights = *in.weights;
        c.weights_source = FigureSource::modelled;
    } else {
        detail::throw_field_error<InvalidInput>(
            where, "weights", "a weight line (Model loading took ...) or a model", "none");
    }

    // The available KV memory: the printed figure (+- half its last digit) and, with the block
    // bytes, the block count (num_blocks = available // block bytes, so available lies in
    // [N x block, (N + 1) x block)). Both known: their overlap.
    std::optional<std::uint64_t> blocks = f.gpu_blocks;
    if (!blocks && f.kv_cache_tokens && in.block_size != 0)
        blocks = *f.kv_cache_tokens / in.block_size;
    const bool use_blocks = blocks.has_value() && in.bytes_per_block.has_value();
    if (f.available_kv) {
        c.available_lo = f.available_kv->lo();
        c.available_hi = f.available_kv->hi();
    }
    if (use_blocks) {
        const Bytes lo = *in.bytes_per_block * *blocks;
        const Bytes hi = *in.bytes_per_block * (*blocks + 1) - Bytes::exactly(1);
        c.blocks = blocks;
        if (!f.available_kv) {
            c.available_lo = lo;
            c.available_hi = hi;
        } else if (lo <= c.available_hi && hi >= c.available_lo) {
            c.available_lo = std::max(c.available_lo, lo);
            c.available_hi = std::min(c.available_hi, hi);
        } else {
            c.blocks_agree = false;  // a different model, dtype or layout than the log's
        }
    }
    if (!f.available_kv && !use_blocks && f.kv_shortfall) {
        // A failed start: what the weights and the reserve took past memory x utilization.
        c.started = false;
        c.kv_shortfall = f.kv_shortfall->value;
        c.reserve = detail::saturating_sub(c.usable + c.kv_shortfall, c.weights);
        c.consistent = c.weights <= c.usable + c.kv_shortfall;
        if (f.cuda_graphs_charged && f.cuda_graphs) c.cuda_graphs = f.cuda_graphs->value;
        return c;
    }
    if (!f.available_kv && !use_blocks)
        detail::throw_field_error<InvalidInput>(
            where, "available KV memory",
            "an \"Available KV cache memory\" line, or a block count with the model's block bytes",
            "none");
    c.available_kv = c.available_lo + (c.available_hi - c.available_lo) / 2;
    const Bytes committed = c.weights + c.available_kv;
    c.consistent = committed <= c.usable;
    c.reserve = c.consistent ? c.usable - committed : Bytes{};
    if (f.cuda_graphs_charged && f.cuda_graphs) c.cuda_graphs = f.cuda_graphs->value;
    return c;
}

// ---- The profile -----------------------------------------------------------------------------

/// What later runs need from a calibration of one model on one GPU under one engine: the measured
/// reserve (from a start-up log), the latency estimate's parameters (from a benchmark result), or
/// both, and the files they came from.
struct CalibrationProfile {
    std::string engine = "vllm";
    std::string model;
    std::string gpu;
    std::uint32_t tp = 1;
    std::uint32_t pp = 1;
    bool has_reserve = true;  ///< false: no log was read, the memory fields below are unset
    double utilization = 0;
    Bytes memory_total{};
    Bytes weights{};
    Bytes available_kv{};
    Bytes reserve{};  ///< non-KV memory inside memory_total x utilization, weights excluded
    std::optional<Bytes> cuda_graphs{};  ///< the part of `reserve` that is CUDA graphs, when known
    std::string source;                  ///< the log it was fitted from
    /// The latency estimate's fractions and fixed costs, fitted on a benchmark of this replica.
    std::optional<EstimateParams> estimate{};
    ComputeDtype estimate_compute = ComputeDtype::bf16;  ///< the peak its compute fraction is of
    std::string estimate_source;                         ///< the benchmark result
};

[[nodiscard]] inline CalibrationProfile make_profile(const CalibrationFit& c, std::string model,
                                                     std::string gpu, std::uint32_t tp,
                                                     std::uint32_t pp, std::string source) {
    CalibrationProfile p;
    p.model = std::move(model);
    p.gpu = std::move(gpu);
    p.tp = tp;
    p.pp = pp;
    p.utilization = c.utilization;
    p.memory_total = c.memory_total;
    p.weights = c.weights;
    p.available_kv = c.available_kv;
    p.reserve = c.reserve;
    p.cuda_graphs = c.cuda_graphs;
    p.source = std::move(source);
    return p;
}

namespace detail {

[[nodiscard]] inline std::string json_quoted(std::string_view s) {
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"' || ch == '\\') out.push_back('\\');
        if (static_cast<unsigned char>(ch) < 0x20) continue;
        out.push_back(ch);
    }
    return out + "\"";
}

}  // namespace detail

/// The profile as JSON (sizes as exact byte counts, with GiB beside them for reading).
[[nodiscard]] inline std::string profile_json(const CalibrationProfile& p) {
    char util[32];
    std::snprintf(util, sizeof util, "%.6g", p.utilization);
    const auto size = [](std::string_view key, Bytes b) {
        char gib[32];
        std::snprintf(gib, sizeof gib, "%.4f", b.in(GiB));
        return "  " + detail::json_quoted(std::string(key) + "_bytes") + ": " +
               std::to_string(b.count()) + ",\n  " +
               detail::json_quoted(std::string(key) + "_GiB") + ": " + gib + ",\n";
    };
    std::string j = "{\n";
    j += "  \"kvplan_profile\": 1,\n";
    j += "  \"engine\": " + detail::json_quoted(p.engine) + ",\n";
    j += "  \"model\": " + detail::json_quoted(p.model) + ",\n";
    j += "  \"gpu\": " + detail::json_quoted(p.gpu) + ",\n";
    j += "  \"tp\": " + std::to_string(p.tp) + ",\n";
    j += "  \"pp\": " + std::to_string(p.pp) + ",\n";
    if (p.has_reserve) {
        j += "  \"gpu_memory_utilization\": " + std::string(util) + ",\n";
        j += size("memory_total", p.memory_total);
        j += size("weights", p.weights);
        j += size("available_kv", p.available_kv);
        if (p.cuda_graphs) j += size("cuda_graphs", *p.cuda_graphs);
        j += size("reserve", p.reserve);
        j += "  \"source\": " + detail::json_quoted(p.source) + ",\n";
    }
    if (p.estimate) {
        // The fewest digits that read back as the same double: a profile reproduces its estimate.
        const auto number = [](std::string_view key, double v) {
            char buf[40];
            for (int digits = 9; digits <= 17; ++digits) {
                std::snprintf(buf, sizeof buf, "%.*g", digits, v);
                if (std::strtod(buf, nullptr) == v) break;
            }
            return "  " + detail::json_quoted(key) + ": " + buf + ",\n";
        };
        j += number("estimate_bandwidth_fraction", p.estimate->bandwidth);
        j += number("estimate_compute_fraction", p.estimate->compute);
        // Attention's and the experts' own fractions, where they have one (0: the GEMMs').
        if (p.estimate->attention > 0.0)
            j += number("estimate_attention_fraction", p.estimate->attention);
        if (p.estimate->experts > 0.0)
            j += number("estimate_experts_fraction", p.estimate->experts);
        j += number("estimate_layer_overhead_seconds", p.estimate->layer_overhead.in(seconds));
        j += number("estimate_all_reduce_latency_seconds",
                    p.estimate->all_reduce_latency.in(seconds));
        // The per-layer multiple of the engines that do not compile their forward, where not 1.
        if (p.estimate->uncompiled_layer_scale != 1.0)
            j += number("estimate_uncompiled_layer_scale", p.estimate->uncompiled_layer_scale);
        j += "  \"estimate_compute_dtype\": " + detail::json_quoted(name(p.estimate_compute)) +
             ",\n";
        j += "  \"estimate_source\": " + detail::json_quoted(p.estimate_source) + ",\n";
    }
    // Every member above ends with a comma; the last one's is dropped.
    j.erase(j.size() - 2, 1);
    return j + "}\n";
}

/// Reads a profile written by profile_json. Throws InvalidInput naming `where` and the field.
[[nodiscard]] inline CalibrationProfile parse_profile(std::string_view text,
                                                      std::string_view where) {
    CalibrationProfile p;
    bool version = false, have_reserve = false, have_util = false;
    EstimateParams est;
    int estimate_keys = 0;
    int optional_estimate_keys = 0;  // attention and experts: only beside the four
    const auto bytes = [&](const std::string& key, const std::string& v) {
        const auto n = detail::parse_u64(v);
        if (!n)
            detail::throw_field_error<InvalidInput>(where, key, "a whole number of bytes",
                                                    detail::quoted(v));
        return Bytes::exactly(*n);
    };
    for (const auto& [key, value] : detail::flat_json_object(text, where)) {
        if (key == "kvplan_profile") {
            if (value != "1")
                detail::throw_field_error<InvalidInput>(where, key, "1", detail::quoted(value));
            version = true;
        } else if (key == "engine") {
            p.engine = value;
        } else if (key == "model") {
            p.model = value;
        } else if (key == "gpu") {
            p.gpu = value;
        } else if (key == "tp" || key == "pp") {
            const auto n = detail::parse_u64(value);
            if (!n || *n == 0 || *n > 4096)
                detail::throw_field_error<InvalidInput>(where, key, "a degree >= 1",
                                                        detail::quoted(value));
            (key == "tp" ? p.tp : p.pp) = static_cast<std::uint32_t>(*n);
        } else if (key == "gpu_memory_utilization") {
            const auto u = detail::parse_double(value);
            if (!u || !(*u > 0 && *u <= 1))
                detail::throw_field_error<InvalidInput>(where, key, "a fraction in (0, 1]",
                                                        detail::quoted(value));
            p.utilization = *u;
            have_util = true;
        } else if (key == "memory_total_bytes") {
            p.memory_total = bytes(key, value);
        } else if (key == "weights_bytes") {
            p.weights = bytes(key, value);
        } else if (key == "available_kv_bytes") {
            p.available_kv = bytes(key, value);
        } else if (key == "cuda_graphs_bytes") {
            p.cuda_graphs = bytes(key, value);
        } else if (key == "reserve_bytes") {
            p.reserve = bytes(key, value);
            have_reserve = true;
        } else if (key == "source") {
            p.source = value;
        } else if (key == "estimate_bandwidth_fraction" || key == "estimate_compute_fraction") {
            const auto f = detail::parse_double(value);
            if (!f || !(*f > 0 && *f <= 1))
                detail::throw_field_error<InvalidInput>(where, key, "a fraction in (0, 1]",
                                                        detail::quoted(value));
            (key == "estimate_bandwidth_fraction" ? est.bandwidth : est.compute) = *f;
            ++estimate_keys;
        } else if (key == "estimate_attention_fraction" || key == "estimate_experts_fraction") {
            // Optional: a profile without them times attention and experts at the GEMMs' fraction.
            const auto f = detail::parse_double(value);
            if (!f || !(*f > 0 && *f <= 1))
                detail::throw_field_error<InvalidInput>(where, key, "a fraction in (0, 1]",
                                                        detail::quoted(value));
            (key == "estimate_attention_fraction" ? est.attention : est.experts) = *f;
            ++optional_estimate_keys;
        } else if (key == "estimate_uncompiled_layer_scale") {
            // Optional: a profile without it times every engine's layers alike.
            const auto f = detail::parse_double(value);
            if (!f || !(*f > 0 && *f <= 100))
                detail::throw_field_error<InvalidInput>(where, key, "a multiple in (0, 100]",
                                                        detail::quoted(value));
            est.uncompiled_layer_scale = *f;
            ++optional_estimate_keys;
        } else if (key == "estimate_layer_overhead_seconds" ||
                   key == "estimate_all_reduce_latency_seconds") {
            const auto t = detail::parse_double(value);
            if (!t || !(*t >= 0 && *t < 1))
                detail::throw_field_error<InvalidInput>(where, key, "a time in [0, 1) s",
                                                        detail::quoted(value));
            (key == "estimate_layer_overhead_seconds" ? est.layer_overhead
                                                      : est.all_reduce_latency) =
                Seconds::in_base(*t);
            ++estimate_keys;
        } else if (key == "estimate_compute_dtype") {
            const auto d = parse_compute_dtype(value);
            if (!d)
                detail::throw_field_error<InvalidInput>(
                    where, key, "tf32, bf16, fp16, fp8, int8 or fp4", detail::quoted(value));
            p.estimate_compute = *d;
        } else if (key == "estimate_source") {
            p.estimate_source = value;
        }
    }
    if (!version)
        detail::throw_field_error<InvalidInput>(where, "kvplan_profile", "1 (a kvplan profile)",
                                                "none");
    // A reserve part (from a log), an estimate part (from a benchmark), or both; each complete.
    if ((estimate_keys != 0 || optional_estimate_keys != 0) && estimate_keys != 4)
        detail::throw_field_error<InvalidInput>(
            where, "estimate_*",
            "all four of estimate_bandwidth_fraction, estimate_compute_fraction, "
            "estimate_layer_overhead_seconds and estimate_all_reduce_latency_seconds",
            detail::text(estimate_keys, " of them"));
    if (estimate_keys == 4) p.estimate = est;
    p.has_reserve = have_reserve || have_util;
    if (!have_reserve && (have_util || !p.estimate))
        detail::throw_field_error<InvalidInput>(
            where, "reserve_bytes",
            p.estimate ? "the fitted reserve" : "the fitted reserve, or the estimate_* parameters",
            "none");
    if (have_reserve && !have_util)
        detail::throw_field_error<InvalidInput>(
            where, "gpu_memory_utilization", "the utilization the reserve was fitted at", "none");
    return p;
}

/// Reads the profile at `path`, of at most profile_limit. Throws InvalidInput.
[[nodiscard]] inline CalibrationProfile load_profile(const std::string& path) {
    return parse_profile(detail::read_input_text(path, profile_limit),
                         detail::without_controls(path));
}

/// Budget options that use a profile's measured reserve: vLLM's profiled activation peak, non-torch
/// growth and (when it charged them) CUDA graphs replace the modelled activation and graph terms.
/// The CUDA context and communication buffers, which vLLM allocates before its memory snapshot and
/// so never appear in its reserve, stay as modelled. Utilization is the profile's unless `base` is
/// to keep its own (keep_utilization). A profile without a reserve leaves `base` as it is.
[[nodiscard]] inline BudgetOptions apply_profile(const CalibrationProfile& p, BudgetOptions base,
                                                 bool keep_utilization = false) {
    if (!p.has_reserve) return base;  // an estimate-only profile measured no memory
    const Bytes graphs = p.cuda_graphs.value_or(Bytes{});
    base.reserve.cuda_graphs = graphs;
    base.reserve.activation = p.reserve > graphs ? p.reserve - graphs : Bytes{};
    if (!keep_utilization) base.utilization = p.utilization;
    return base;
}

/// A profile's estimate parameters, for a deployment on the GPU `gpu_id` whose matmuls run at
/// `compute`; nullopt when it has none. The fractions are of the GPU and the compute type's peak
/// they were fitted on, so a profile fitted on another GPU or type is refused. Throws
/// InvalidInput naming `where` (the profile's path) and the field.
[[nodiscard]] inline std::optional<EstimateParams> profile_estimate(const CalibrationProfile& p,
                                                                    std::string_view where,
                                                                    std::string_view gpu_id,
                                                                    ComputeDtype compute) {
    if (!p.estimate) return std::nullopt;
    if (!p.gpu.empty() && p.gpu != gpu_id)
        detail::throw_field_error<InvalidInput>(
            std::string(where), "gpu",
            std::string(gpu_id) +
                ", the GPU deployed: the estimate's fractions are of the GPU they were fitted on",
            "'" + p.gpu + "'");
    if (p.estimate_compute != compute)
        detail::throw_field_error<InvalidInput>(
            std::string(where), "estimate_compute_dtype",
            std::string(name(compute)) +
                ", the compute type the deployment runs at: the compute fraction is of that "
                "type's peak",
            "'" + std::string(name(p.estimate_compute)) + "'");
    return p.estimate;
}

/// `s` with the profile `p` applied, for a deployment on the GPU `gpu_id` whose matmuls run at
/// `compute`: its measured reserve replaces the modelled activation and graph terms, and its
/// utilisation becomes the engine's memory fraction unless `s` sets one (the ideal profile, which
/// has no fraction, keeps none); its estimate parameters become the latency estimate's
/// (profile_estimate). The one rule the command line's --profile and the Python module's
/// profile= follow. Throws InvalidInput naming `where` (the profile's path).
[[nodiscard]] inline Serving apply_profile(const CalibrationProfile& p, Serving s,
                                           std::string_view where, std::string_view gpu_id,
                                           ComputeDtype compute) {
    if (p.has_reserve) {
        BudgetOptions b;
        b.reserve = s.reserve;
        if (s.memory_fraction) b.utilization = *s.memory_fraction;
        b = apply_profile(p, b, s.memory_fraction.has_value());
        s.reserve = b.reserve;
        if (!s.memory_fraction && s.engine != Engine::ideal) s.memory_fraction = b.utilization;
    }
    if (auto e = profile_estimate(p, where, gpu_id, compute)) s.estimate = e;
    return s;
}

}  // namespace kvplan
