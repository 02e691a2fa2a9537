#pragma once

// Request traces: what real traffic asks of the cache. A trace is a list of requests, each with its
// prompt and generated token counts and, where the trace records them, arrival times. From it:
//   - the distribution of KV per request (nearest-rank percentiles, stated below);
//   - the paged against contiguous waste over the whole trace;
//   - the concurrency the arrivals imply: Little's law, and a replay of arrivals and completions.
// Opt-in (not in kvplan.hpp): this header reads files and allocates.
//
// Readers: CSV with a header row, or JSON Lines (one flat object per line). Columns are matched by
// name, case and '_'/'-' ignored: prompt tokens from ContextTokens, prompt_tokens, input_tokens,
// prompt_len, input_length...; generated tokens from GeneratedTokens, output_tokens,
// completion_tokens, output_len, output_length...; arrival from TIMESTAMP, timestamp, arrival_time,
// arrival... as seconds, or as a date-time "2023-11-16 18:15:46.6805900" (ISO 8601, 'T' or ' ').

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "budget.hpp"
#include "detail/checked.hpp"
#include "detail/flat_json.hpp"
#include "detail/text.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "kv_bytes.hpp"
#include "layout.hpp"
#include "model.hpp"
#include "paging.hpp"
#include "units.hpp"

namespace kvplan {

/// One request of a trace.
struct TraceRequest {
    std::uint64_t prompt_tokens = 0;
    std::uint64_t output_tokens = 0;
    Seconds arrival{};  ///< since the trace's earliest arrival; zero when the trace has none

    /// Tokens the request holds when it completes: prompt + generated.
    [[nodiscard]] constexpr std::uint64_t total_tokens() const {
        return detail::add(prompt_tokens, output_tokens, "a request's tokens");
    }
};

/// A request trace as read from a file.
struct Trace {
    std::string source;                  ///< where it was read from, for messages
    std::vector<TraceRequest> requests;  ///< in file order
    bool has_arrivals = false;           ///< every request carries an arrival time
};

/// How to read numeric arrival times. A column named *_ms or *_us is read in that unit whatever
/// this says; a date-time string is always absolute.
struct TraceOptions {
    tag::Time::Unit numeric_time_unit = seconds;
};

namespace detail {

enum class TraceColumn : std::uint8_t { none, prompt, output, arrival };

struct TraceColumnMatch {
    TraceColumn column = TraceColumn::none;
    double time_scale = 0;  ///< seconds per unit for numeric arrivals; 0: from the options
};

[[nodiscard]] inline TraceColumnMatch match_trace_column(std::string_view header) {
    const std::string n = normalized_name(header);
    static constexpr std::string_view prompt_names[]{
        "contexttokens",  "prompttokens",  "inputtokens",      "promptlen",
        "promptlength",   "inputlen",      "inputlength",      "numprompttokens",
        "numinputtokens", "requesttokens", "prompttokencount", "inputtokencount"};
    static constexpr std::string_view output_names[]{
        "generatedtokens",  "outputtokens",         "completiontokens",   "outputlen",
        "outputlength",     "numoutputtokens",      "numgeneratedtokens", "responsetokens",
        "generationlength", "completiontokencount", "outputtokencount",   "decodetokens"};
    for (std::string_view p : prompt_names)
        if (n == p) return {TraceColumn::prompt, 0};
    for (std::string_view p : output_names)
        if (n == p) return {TraceColumn::output, 0};
    static constexpr std::string_view time_names[]{"timestamp", "arrivaltime", "arrival", "time",
                                                   "arrivedat"};
    for (std::string_view p : time_names) {
        if (n == p) return {TraceColumn::arrival, 0};
        if (n == std::string(p) + "s" || n == std::string(p) + "sec")
            return {TraceColumn::arrival, 1};
        if (n == std::string(p) + "ms") return {TraceColumn::arrival, 1e-3};
        if (n == std::string(p) + "us") return {TraceColumn::arrival, 1e-6};
    }
    return {};
}

/// Seconds since 1970-01-01 of "YYYY-MM-DD[ T]HH:MM:SS[.frac][Z|+HH:MM|-HH:MM]", or nullopt.
[[nodiscard]] inline std::optional<double> parse_date_time(std::string_view s) {
    s = trim(s);
    const auto digits = [&](std::size_t at, std::size_t n) -> std::optional<int> {
        if (at + n > s.size()) return std::nullopt;
        int v = 0;
        for (std::size_t i = at; i < at + n; ++i) {
            if (s[i] < '0' || s[i] > '9') return std::nullopt;
            v = v * 10 + (s[i] - '0');
        }
        return v;
    };
    if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
        s[13] != ':' || s[16] != ':')
        return std::nullopt;
    const auto y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2),
               mi = digits(14, 2), se = digits(17, 2);
    if (!y || !mo || !d || !h || !mi || !se) return std::nullopt;
    const std::chrono::year_month_day ymd{std::chrono::year{*y},
                                          std::chrono::month{static_cast<unsigned>(*mo)},
                                          std::chrono::day{static_cast<unsigned>(*d)}};
    if (!ymd.ok() || *h > 23 || *mi > 59 || *se > 60) return std::nullopt;
    double frac = 0;
    std::size_t at = 19;
    if (at < s.size() && s[at] == '.') {
        double scale = 0.1;
        ++at;
        const std::size_t first = at;
        for (; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, scale /= 10)
            frac += (s[at] - '0') * scale;
        if (at == first) return std::nullopt;
    }
    double offset = 0;
    if (at < s.size()) {
        if (s[at] == 'Z' && at + 1 == s.size()) {
            // UTC
        } else if ((s[at] == '+' || s[at] == '-') && s.size() == at + 6 && s[at + 3] == ':') {
            const auto oh = digits(at + 1, 2), om = digits(at + 4, 2);
            if (!oh || !om) return std::nullopt;
            offset = (s[at] == '+' ? 1.0 : -1.0) * (*oh * 3600.0 + *om * 60.0);
        } else {
            return std::nullopt;
        }
    }
    const auto days = std::chrono::sys_days{ymd}.time_since_epoch().count();
    return static_cast<double>(days) * 86400.0 + *h * 3600.0 + *mi * 60.0 + *se + frac - offset;
}

/// Collects fields of one request by column, then checks and stores it.
class TraceBuilder {
   public:
    TraceBuilder(std::string where, TraceOptions opt) : opt_(opt) {
        trace_.source = std::move(where);
    }

    void begin_record(std::size_t line) {
        line_ = line;
        prompt_.reset();
        output_.reset();
        time_.reset();
    }

    void field(const TraceColumnMatch& c, std::string_view name, std::string_view value) {
        switch (c.column) {
            case TraceColumn::none:
                return;
            case TraceColumn::prompt:
                prompt_ = tokens(name, value);
                return;
            case TraceColumn::output:
                output_ = tokens(name, value);
                return;
            case TraceColumn::arrival:
                time_ = arrival(c, name, value);
                return;
        }
    }

    void end_record() {
        if (!prompt_)
            throw_field_error<InvalidInput>(where(), "prompt tokens",
                                            "a prompt-token field (ContextTokens, prompt_tokens, "
                                            "input_tokens, ...)",
                                            "none");
        if (!output_)
            throw_field_error<InvalidInput>(where(), "generated tokens",
                                            "a generated-token field (GeneratedTokens, "
                                            "output_tokens, completion_tokens, ...)",
                                            "none");
        if (trace_.requests.empty()) any_time_ = time_.has_value();
        if (time_.has_value() != any_time_)
            throw_field_error<InvalidInput>(where(), "arrival time",
                                            any_time_ ? "an arrival time on every request"
                                                      : "no arrival time, as on the first request",
                                            time_ ? "one" : "none");
        trace_.requests.push_back({*prompt_, *output_, {}});
        times_.push_back(time_.value_or(0.0));
    }

    [[nodiscard]] Trace finish() && {
        if (trace_.requests.empty())
            throw_field_error<InvalidInput>(trace_.source, "requests", "at least one request",
                                            "none");
        trace_.has_arrivals = any_time_;
        if (any_time_) {
            const double t0 = *std::min_element(times_.begin(), times_.end());
            for (std::size_t i = 0; i < times_.size(); ++i)
                trace_.requests[i].arrival = (times_[i] - t0) * seconds;
        }
        return std::move(trace_);
    }

   private:
    [[nodiscard]] std::string where() const { return trace_.source + ":" + std::to_string(line_); }
    [[nodiscard]] std::uint64_t tokens(std::string_view name, std::string_view value) const {
        const auto v = parse_token_count(value);
        if (!v)
            throw_field_error<InvalidInput>(where(), name, "a whole number of tokens >= 0",
                                            quoted(value));
        return *v;
    }
    [[nodiscard]] double arrival(const TraceColumnMatch& c, std::string_view name,
                                 std::string_view value) const {
        if (auto dt = parse_date_time(value)) return *dt;
        if (auto v = parse_double(value))
            return *v * (c.time_scale != 0 ? c.time_scale : opt_.numeric_time_unit.scale);
        throw_field_error<InvalidInput>(
            where(), name, "seconds, or a date-time such as 2023-11-16 18:15:46.68", quoted(value));
    }

    TraceOptions opt_;
    Trace trace_;
    std::vector<double> times_;
    std::size_t line_ = 0;
    bool any_time_ = false;
    std::optional<std::uint64_t> prompt_, output_;
    std::optional<double> time_;
};

/// Splits one CSV record (RFC 4180 quoting, no line breaks inside fields).
[[nodiscard]] inline std::vector<std::string> split_csv_record(std::string_view line,
                                                               std::string_view where) {
    std::vector<std::string> out(1);
    bool quoted_field = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted_field) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                out.back().push_back('"');
                ++i;
            } else if (c == '"') {
                quoted_field = false;
            } else {
                out.back().push_back(c);
            }
        } else if (c == '"') {
            quoted_field = true;
        } else if (c == ',') {
            out.emplace_back();
        } else {
            out.back().push_back(c);
        }
    }
    if (quoted_field)
        throw_field_error<InvalidInput>(where, "record", "a closing '\"'", "end of line");
    return out;
}

/// The next line of `text` from `pos` (without its "\n" or "\r\n"); advances pos.
[[nodiscard]] inline std::string_view next_line(std::string_view text, std::size_t& pos) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = end + 1;
    return line;
}

}  // namespace detail

/// Reads a CSV trace (a header row, then one request per row). Throws InvalidInput naming
/// `where`:line, the column, what was expected and what was found.
[[nodiscard]] inline Trace parse_trace_csv(std::string_view text, std::string_view where,
                                           TraceOptions opt = {}) {
    std::size_t pos = 0, line_no = 0;
    std::vector<std::string> header;
    while (pos < text.size() && header.empty()) {
        ++line_no;
        const std::string_view line = detail::next_line(text, pos);
        if (detail::trim(line).empty()) continue;
        header = detail::split_csv_record(line, std::string(where) + ":" + std::to_string(line_no));
    }
    std::vector<detail::TraceColumnMatch> cols;
    bool has_prompt = false, has_output = false;
    for (auto& h : header) {
        h = std::string(detail::trim(h));
        if (!h.empty() && static_cast<unsigned char>(h[0]) == 0xEF && h.size() >= 3)
            h.erase(0, 3);  // a UTF-8 byte-order mark
        cols.push_back(detail::match_trace_column(h));
        has_prompt = has_prompt || cols.back().column == detail::TraceColumn::prompt;
        has_output = has_output || cols.back().column == detail::TraceColumn::output;
    }
    if (!has_prompt || !has_output) {
        std::string found;
        for (const auto& h : header) found += (found.empty() ? "" : ",") + h;
        detail::throw_field_error<InvalidInput>(
            where, "header",
            "columns for prompt tokens (ContextTokens, prompt_tokens, input_tokens...) and "
            "generated tokens (GeneratedTokens, output_tokens, completion_tokens...)",
            detail::quoted(found));
    }
    detail::TraceBuilder b{std::string(where), opt};
    while (pos < text.size()) {
        ++line_no;
        const std::string_view line = detail::next_line(text, pos);
        if (detail::trim(line).empty()) continue;
        const std::string at = std::string(where) + ":" + std::to_string(line_no);
        const std::vector<std::string> fields = detail::split_csv_record(line, at);
        if (fields.size() != header.size())
            detail::throw_field_error<InvalidInput>(at, "record",
                                                    std::to_string(header.size()) + " fields",
                                                    std::to_string(fields.size()));
        b.begin_record(line_no);
        for (std::size_t i = 0; i < fields.size(); ++i) b.field(cols[i], header[i], fields[i]);
        b.end_record();
    }
    return std::move(b).finish();
}

/// Reads a JSON Lines trace: one object per line, fields matched as CSV columns are; other fields
/// (nested ones included) are ignored. Throws InvalidInput as parse_trace_csv does.
[[nodiscard]] inline Trace parse_trace_jsonl(std::string_view text, std::string_view where,
                                             TraceOptions opt = {}) {
    detail::TraceBuilder b{std::string(where), opt};
    std::size_t pos = 0, line_no = 0;
    while (pos < text.size()) {
        ++line_no;
        const std::string_view line = detail::next_line(text, pos);
        if (detail::trim(line).empty()) continue;
        const std::string at = std::string(where) + ":" + std::to_string(line_no);
        b.begin_record(line_no);
        for (const auto& [key, value] : detail::flat_json_object(line, at)) {
            const auto col = detail::match_trace_column(key);
            if (col.column != detail::TraceColumn::none && value != "null")
                b.field(col, key, value);
        }
        b.end_record();
    }
    return std::move(b).finish();
}

/// Reads a trace in either format: JSON Lines when the first non-blank character is '{'.
[[nodiscard]] inline Trace parse_trace(std::string_view text, std::string_view where,
                                       TraceOptions opt = {}) {
    std::size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    return i < text.size() && text[i] == '{' ? parse_trace_jsonl(text, where, opt)
                                             : parse_trace_csv(text, where, opt);
}

/// Reads the trace file at `path` (CSV or JSON Lines). Throws InvalidInput.
[[nodiscard]] inline Trace load_trace(const std::string& path, TraceOptions opt = {}) {
    return parse_trace(detail::read_text_file(path), path, opt);
}

// ---- Distributions
// -------------------------------------------------------------------------------

/// The nearest-rank percentile of sorted values: the smallest value v such that at least p % of the
/// values are <= v, i.e. sorted[ceil(p / 100 x n) - 1] (p = 0 gives the minimum). Always an
/// observed value, never an interpolation. Precondition: `sorted` is non-empty and ascending, 0 <=
/// p <= 100.
template <class T>
[[nodiscard]] T nearest_rank(std::span<const T> sorted, double p) {
    KVPLAN_EXPECTS(!sorted.empty() && p >= 0.0 && p <= 100.0);
    const double exact = p / 100.0 * static_cast<double>(sorted.size());
    // The small tolerance keeps p x n that is whole in exact arithmetic from rounding up a rank.
    double r = std::ceil(exact - 1e-9);
    if (r < 1) r = 1;
    if (r > static_cast<double>(sorted.size())) r = static_cast<double>(sorted.size());
    return sorted[static_cast<std::size_t>(r) - 1];
}

/// The figures a distribution is reported by.
template <class T>
struct Percentiles {
    T p50{};
    T p95{};
    T p99{};
    T max{};
};

/// Nearest-rank p50, p95, p99 and the maximum of `values` (sorted in place). Precondition: not
/// empty.
template <class T>
[[nodiscard]] Percentiles<T> percentiles_of(std::vector<T>& values) {
    KVPLAN_EXPECTS(!values.empty());
    std::sort(values.begin(), values.end());
    const std::span<const T> v{values};
    return {nearest_rank(v, 50), nearest_rank(v, 95), nearest_rank(v, 99), v.back()};
}

/// Token lengths over a trace.
struct TraceLengths {
    std::size_t requests = 0;
    Percentiles<std::uint64_t> prompt, output, total;  ///< total = prompt + output
    double mean_prompt = 0, mean_output = 0, mean_total = 0;
};

[[nodiscard]] inline TraceLengths trace_lengths(const Trace& t) {
    TraceLengths r;
    r.requests = t.requests.size();
    std::vector<std::uint64_t> p, o, a;
    p.reserve(r.requests);
    o.reserve(r.requests);
    a.reserve(r.requests);
    double sp = 0, so = 0;
    for (const TraceRequest& q : t.requests) {
        p.push_back(q.prompt_tokens);
        o.push_back(q.output_tokens);
        a.push_back(q.total_tokens());
        sp += static_cast<double>(q.prompt_tokens);
        so += static_cast<double>(q.output_tokens);
    }
    r.prompt = percentiles_of(p);
    r.output = percentiles_of(o);
    r.total = percentiles_of(a);
    const double n = static_cast<double>(r.requests);
    r.mean_prompt = sp / n;
    r.mean_output = so / n;
    r.mean_total = (sp + so) / n;
    return r;
}

/// KV held by each request at completion (prompt + generated tokens, a conservative bound: the last
/// generated token's K and V are in fact never written), paged in blocks of `block_size` tokens, on
/// one rank (`shard`; the whole model by default). block_size 1 means exact bytes.
[[nodiscard]] inline std::vector<Bytes> kv_per_request(const Trace& t, const Model& m, KvFormat f,
                                                       std::uint32_t block_size = 1,
                                                       const Shard& shard = {}) {
    KVPLAN_EXPECTS(block_size >= 1);
    std::vector<Bytes> out;
    out.reserve(t.requests.size());
    for (const TraceRequest& q : t.requests)
        out.push_back(block_size == 1
                          ? kv_bytes_per_sequence(m, f, q.total_tokens(), shard)
                          : paged_sequence(m, f, q.total_tokens(), block_size, shard).reserved);
    return out;
}

/// The distribution of KV per request: exact bytes and paged bytes, and their means.
struct KvDistribution {
    Percentiles<Bytes> exact;  ///< kv_bytes_per_sequence(prompt + generated)
    Percentiles<Bytes> paged;  ///< the blocks it holds
    Bytes mean_exact{};        ///< sum / requests, rounded down
    Bytes mean_paged{};
};

[[nodiscard]] inline KvDistribution kv_distribution(const Trace& t, const Model& m, KvFormat f,
                                                    std::uint32_t block_size,
                                                    const Shard& shard = {}) {
    std::vector<Bytes> e = kv_per_request(t, m, f, 1, shard);
    std::vector<Bytes> p = kv_per_request(t, m, f, block_size, shard);
    Bytes se{}, sp{};
    for (Bytes b : e) se += b;
    for (Bytes b : p) sp += b;
    const std::uint64_t n = e.size();
    return {percentiles_of(e), percentiles_of(p), se / n, sp / n};
}

/// Paged against contiguous reservation summed over the requests of a trace that fit in
/// max_model_len (longer ones an engine would refuse; they are counted, and left out of every sum
/// so the three sums cover the same requests).
struct TraceWaste {
    std::size_t requests = 0;      ///< requests summed
    std::size_t over_max_len = 0;  ///< requests longer than max_model_len, left out
    Bytes used{};                  ///< exact KV at completion
    Bytes paged{};                 ///< blocks held at completion
    Bytes contiguous{};            ///< max_model_len reserved per request
    [[nodiscard]] Bytes paged_waste() const { return paged - used; }
    [[nodiscard]] Bytes contiguous_waste() const { return contiguous - used; }
    /// Waste as a fraction of what is reserved (0 when nothing is).
    [[nodiscard]] double paged_waste_fraction() const {
        return paged.is_zero() ? 0.0 : paged_waste().in(B) / paged.in(B);
    }
    [[nodiscard]] double contiguous_waste_fraction() const {
        return contiguous.is_zero() ? 0.0 : contiguous_waste().in(B) / contiguous.in(B);
    }
};

[[nodiscard]] inline TraceWaste trace_waste(const Trace& t, const Model& m, KvFormat f,
                                            std::uint64_t max_model_len, std::uint32_t block_size,
                                            const Shard& shard = {}) {
    KVPLAN_EXPECTS(block_size >= 1);
    TraceWaste w;
    const Bytes contiguous_each = kv_bytes_per_sequence(m, f, max_model_len, shard);
    for (const TraceRequest& q : t.requests) {
        const std::uint64_t n = q.total_tokens();
        if (n > max_model_len) {
            ++w.over_max_len;
            continue;
        }
        const PagedUse p = paged_sequence(m, f, n, block_size, shard);
        ++w.requests;
        w.used += p.used;
        w.paged += p.reserved;
        w.contiguous += contiguous_each;
    }
    return w;
}

// ---- Concurrency
// ---------------------------------------------------------------------------------

/// How long a request stays: TTFT for the prompt, then TPOT per generated token.
struct ServiceTimes {
    Seconds ttft{};
    Seconds tpot{};
    /// Time in system of a request generating `output_tokens`: ttft + output_tokens x tpot.
    [[nodiscard]] constexpr Seconds time_in_system(std::uint64_t output_tokens) const noexcept {
        return ttft + tpot * static_cast<double>(output_tokens);
    }
};

/// The concurrency a trace's arrivals imply at given service times.
struct TraceConcurrency {
    Seconds arrival_span{};         ///< last arrival - first arrival
    double rate_per_s = 0;          ///< (requests - 1) / arrival_span: arrivals per second
    Seconds mean_time_in_system{};  ///< ttft + mean generated tokens x tpot
    double littles_law = 0;         ///< rate x mean time in system: mean requests in flight
    // Replay: request i is in the system over [arrival_i, arrival_i + time in system), holding its
    // KV at completion size throughout (an upper bound: an engine grows it token by token).
    std::uint64_t peak_requests = 0;
    std::uint64_t p95_requests =
        0;                     ///< time-weighted: in flight at most this many 95 % of the time
    double mean_requests = 0;  ///< time-weighted mean over [first arrival, last completion]
    Bytes peak_kv{};
    Bytes p95_kv{};     ///< time-weighted, as p95_requests
    Seconds peak_at{};  ///< when peak_kv is first reached, since the first arrival
};

namespace detail {

/// The smallest value v with (time spent at values <= v) >= p % of the total: the time-weighted
/// nearest-rank percentile of a step function given as (value, duration) segments.
template <class T>
[[nodiscard]] T time_weighted_percentile(std::vector<std::pair<T, double>> segs, double p) {
    KVPLAN_EXPECTS(!segs.empty());
    std::sort(segs.begin(), segs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    double total = 0;
    for (const auto& sg : segs) total += sg.second;
    const double need = p / 100.0 * total;
    double acc = 0;
    for (const auto& sg : segs) {
        acc += sg.second;
        if (acc >= need * (1 - 1e-12)) return sg.first;
    }
    return segs.back().first;
}

}  // namespace detail

/// Little's law and a replay of the trace's arrivals at `times`, with `held[i]` the KV request i
/// holds (from kv_per_request, paged or not). nullopt when the trace has no arrival times, fewer
/// than two requests, or all arrive at one instant (no rate). Precondition: held.size() ==
/// requests.
[[nodiscard]] inline std::optional<TraceConcurrency> trace_concurrency(
    const Trace& t, ServiceTimes times, std::span<const Bytes> held) {
    KVPLAN_EXPECTS(held.size() == t.requests.size());
    const std::size_t n = t.requests.size();
    if (!t.has_arrivals || n < 2) return std::nullopt;
    double first = t.requests[0].arrival.in(seconds), last = first, out_sum = 0;
    for (const TraceRequest& q : t.requests) {
        first = std::min(first, q.arrival.in(seconds));
        last = std::max(last, q.arrival.in(seconds));
        out_sum += static_cast<double>(q.output_tokens);
    }
    if (!(last > first)) return std::nullopt;
    TraceConcurrency c;
    c.arrival_span = (last - first) * seconds;
    c.rate_per_s = static_cast<double>(n - 1) / c.arrival_span.in(seconds);
    c.mean_time_in_system = times.ttft + times.tpot * (out_sum / static_cast<double>(n));
    c.littles_law = c.rate_per_s * c.mean_time_in_system.in(seconds);

    struct Event {
        double at;
        bool arrive;
        std::size_t i;
    };
    std::vector<Event> ev;
    ev.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
        const double a = t.requests[i].arrival.in(seconds);
        ev.push_back({a, true, i});
        ev.push_back({a + times.time_in_system(t.requests[i].output_tokens).in(seconds), false, i});
    }
    // Intervals are half-open: at one instant, completions leave before arrivals come.
    std::sort(ev.begin(), ev.end(), [](const Event& x, const Event& y) {
        return x.at != y.at ? x.at < y.at : (!x.arrive && y.arrive);
    });
    std::uint64_t in_flight = 0;
    Bytes kv{};
    std::vector<std::pair<std::uint64_t, double>> req_segs;
    std::vector<std::pair<Bytes, double>> kv_segs;
    double weighted = 0;
    for (std::size_t k = 0; k < ev.size();) {
        const double now = ev[k].at;
        for (; k < ev.size() && ev[k].at == now; ++k) {
            if (ev[k].arrive) {
                ++in_flight;
                kv += held[ev[k].i];
            } else {
                --in_flight;
                kv -= held[ev[k].i];
            }
        }
        if (in_flight > c.peak_requests) c.peak_requests = in_flight;
        if (kv > c.peak_kv) {
            c.peak_kv = kv;
            c.peak_at = (now - first) * seconds;
        }
        if (k < ev.size()) {
            const double dt = ev[k].at - now;
            req_segs.emplace_back(in_flight, dt);
            kv_segs.emplace_back(kv, dt);
            weighted += static_cast<double>(in_flight) * dt;
        }
    }
    const double horizon = ev.back().at - ev.front().at;
    c.mean_requests = horizon > 0 ? weighted / horizon : 0;
    c.p95_requests = detail::time_weighted_percentile(std::move(req_segs), 95);
    c.p95_kv = detail::time_weighted_percentile(std::move(kv_segs), 95);
    return c;
}

// ---- The replica that holds a trace
// --------------------------------------------------------------

/// How a trace's replay sits on one replica: per pipeline stage, the peak of the KV in use on its
/// GPUs against their KV budget; the stage nearest its budget is reported.
struct TraceReplica {
    ParallelConfig parallel{};
    std::uint32_t limiting_stage = 0;
    Bytes kv_budget{};  ///< per GPU of the limiting stage
    Bytes peak_kv{};    ///< the replay's peak there
    Bytes p95_kv{};     ///< time-weighted p95 there
    std::uint64_t peak_requests = 0;
    bool holds_peak = false;  ///< every stage's peak fits its budget
    bool holds_p95 = false;
    /// Replicas of this shape the peak needs with arrivals split evenly: ceil(peak / budget), the
    /// most over stages (at least 1); 0 when a stage has no KV budget at all.
    std::uint64_t replicas_for_peak = 0;
};

/// The replay of `t` at `times` on replica `r` (its layout as given), each request held in blocks
/// of `block_size` tokens on each stage's GPUs; `kv_budget(r, layout, stage)` gives a stage's KV
/// budget per GPU (budget.hpp's stage_budget, or an engine's). nullopt when the trace has no
/// arrival times. Throws InvalidLayout for a layout the model cannot take.
template <class KvBudget>
[[nodiscard]] std::optional<TraceReplica> trace_on_replica(const Trace& t, const Replica& r,
                                                           ServiceTimes times,
                                                           std::uint32_t block_size,
                                                           KvBudget kv_budget) {
    const Layout l = r.layout();
    std::optional<TraceReplica> out;
    double worst = -1;
    bool all_peak = true, all_p95 = true;
    std::uint64_t most_replicas = 1;
    bool any_zero = false;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const std::vector<Bytes> held = kv_per_request(t, r.model, r.kv, block_size, l.stage(st));
        const auto c = trace_concurrency(t, times, held);
        if (!c) return std::nullopt;
        const Bytes budget = kv_budget(r, l, st);
        const bool peak_ok = c->peak_kv <= budget, p95_ok = c->p95_kv <= budget;
        all_peak = all_peak && peak_ok;
        all_p95 = all_p95 && p95_ok;
        if (budget.is_zero())
            any_zero = true;
        else
            most_replicas =
                std::max(most_replicas, detail::ceil_div(c->peak_kv.count(), budget.count()));
        const double ratio = budget.is_zero() ? 1e300 : c->peak_kv.in(B) / budget.in(B);
        if (ratio > worst) {
            worst = ratio;
            out = TraceReplica{r.parallel,       st,    budget, c->peak_kv, c->p95_kv,
                               c->peak_requests, false, false,  0};
        }
    }
    out->holds_peak = all_peak;
    out->holds_p95 = all_p95;
    out->replicas_for_peak = any_zero ? 0 : most_replicas;
    return out;
}

/// The replica with the fewest GPUs whose KV budget holds the replay's peak on every stage, over
/// tp x pp with tp a power of two up to s.max_tp, the larger tp first (as smallest_replica in
/// budget.hpp); the parallel config of `base` is ignored. nullopt when the trace has no arrival
/// times or nothing within s.max_gpus holds it.
template <class KvBudget>
[[nodiscard]] std::optional<TraceReplica> smallest_replica_for_trace(
    const Trace& t, const Replica& base, ServiceTimes times, std::uint32_t block_size,
    KvBudget kv_budget, const ReplicaSearch& s = {}) {
    if (!t.has_arrivals) return std::nullopt;
    for (std::uint32_t n = 1; n <= s.max_gpus; ++n) {
        std::uint32_t tp = 1;
        while (tp * 2 <= std::min(n, s.max_tp)) tp *= 2;
        for (; tp >= 1; tp /= 2) {
            if (n % tp != 0) continue;
            const std::uint32_t pp = n / tp;
            if (pp > base.model.num_layers() || pp > max_pipeline_stages) continue;
            Replica r = base;
            r.parallel = {.tp = tp, .pp = pp, .stage_layers = {}};
            try {
                auto on = trace_on_replica(t, r, times, block_size, kv_budget);
                if (!on) return std::nullopt;
                if (on->holds_peak) return on;
            } catch (const InvalidLayout&) {
                // tp does not divide the heads: not a layout this model can take.
            }
        }
    }
    return std::nullopt;
}

}  // namespace kvplan
