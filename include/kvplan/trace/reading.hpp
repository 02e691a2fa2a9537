#pragma once

// Reading request traces. A trace is a list of requests, each with its prompt and generated token
// counts and, where the trace records them, arrival times.
//
// Readers: CSV with a header row, or JSON Lines (one flat object per line). Columns are matched by
// name, case and '_'/'-' ignored: prompt tokens from ContextTokens, prompt_tokens, input_tokens,
// prompt_len, input_length...; generated tokens from GeneratedTokens, output_tokens,
// completion_tokens, output_len, output_length...; arrival from TIMESTAMP, timestamp, arrival_time,
// arrival... as seconds, or as a date-time "2023-11-16 18:15:46.6805900" (ISO 8601, 'T' or ' ').
//
// A file is read in chunks and parsed line by line without an allocation per row, so memory is the
// requests read (24 bytes each), not the file: a ten-million-row trace fits where its text would.

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../detail/checked.hpp"
#include "../detail/flat_json.hpp"
#include "../detail/input_file.hpp"
#include "../detail/text.hpp"
#include "../error.hpp"
#include "../input_limits.hpp"
#include "../units.hpp"

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
    std::vector<std::string> columns{};  ///< a CSV trace's header, as written; none for JSON Lines
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

/// The number written by the `n` characters at `p`, or -1 when one is not a digit.
[[nodiscard]] constexpr int fixed_digits(const char* p, std::size_t n) noexcept {
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned d = static_cast<unsigned char>(p[i]) - unsigned{'0'};
        if (d > 9) return -1;
        v = v * 10 + static_cast<int>(d);
    }
    return v;
}

/// The days since 1970-01-01 of the last date read, for the next row (a trace's rows share their
/// dates: the calendar is worked out once a day, not once a row).
struct DateCache {
    char date[10]{};
    bool valid = false;
    std::int64_t days = 0;
};

/// 0.1, 0.01, ...: the weights of a fraction's digits, each the one before divided by ten (as the
/// digits are read; a table spares a division per digit, not a bit of the result).
inline constexpr auto fraction_digit_weights = [] {
    std::array<double, 32> w{};
    double scale = 0.1;
    for (double& x : w) {
        x = scale;
        scale /= 10;
    }
    return w;
}();

/// Whether the 10 characters at a and b (a date) are the same: two loads each, not a call.
[[nodiscard]] inline bool same_date(const char* a, const char* b) noexcept {
    std::uint64_t a8, b8;
    std::uint16_t a2, b2;
    std::memcpy(&a8, a, 8);
    std::memcpy(&b8, b, 8);
    std::memcpy(&a2, a + 8, 2);
    std::memcpy(&b2, b + 8, 2);
    return a8 == b8 && a2 == b2;
}

/// Seconds since 1970-01-01 of "YYYY-MM-DD[ T]HH:MM:SS[.frac][Z|+HH:MM|-HH:MM]", or nullopt.
[[nodiscard]] inline std::optional<double> parse_date_time(std::string_view s,
                                                           DateCache* cache = nullptr) {
    s = trim(s);
    if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
        s[13] != ':' || s[16] != ':')
        return std::nullopt;
    const char* c = s.data();
    const int h = fixed_digits(c + 11, 2), mi = fixed_digits(c + 14, 2),
              se = fixed_digits(c + 17, 2);
    if (h < 0 || mi < 0 || se < 0 || h > 23 || mi > 59 || se > 60) return std::nullopt;
    std::int64_t days = 0;
    if (cache != nullptr && cache->valid && same_date(cache->date, c)) {
        days = cache->days;
    } else {
        const int y = fixed_digits(c, 4), mo = fixed_digits(c + 5, 2), d = fixed_digits(c + 8, 2);
        if (y < 0 || mo < 0 || d < 0) return std::nullopt;
        const std::chrono::year_month_day ymd{std::chrono::year{y},
                                              std::chrono::month{static_cast<unsigned>(mo)},
                                              std::chrono::day{static_cast<unsigned>(d)}};
        if (!ymd.ok()) return std::nullopt;
        days = std::chrono::sys_days{ymd}.time_since_epoch().count();
        if (cache != nullptr) {
            std::memcpy(cache->date, c, 10);
            cache->days = days;
            cache->valid = true;
        }
    }
    double frac = 0;
    std::size_t at = 19;
    if (at < s.size() && s[at] == '.') {
        ++at;
        const std::size_t first = at;
        double scale = 0;
        for (; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at) {
            const std::size_t k = at - first;
            // Past the table (32 digits, far below a double's resolution) as before: divided.
            scale = k < fraction_digit_weights.size() ? fraction_digit_weights[k] : scale / 10;
            frac += (s[at] - '0') * scale;
        }
        if (at == first) return std::nullopt;
    }
    double offset = 0;
    if (at < s.size()) {
        if (s[at] == 'Z' && at + 1 == s.size()) {
            // UTC
        } else if ((s[at] == '+' || s[at] == '-') && s.size() == at + 6 && s[at + 3] == ':') {
            const int oh = fixed_digits(c + at + 1, 2), om = fixed_digits(c + at + 4, 2);
            if (oh < 0 || om < 0) return std::nullopt;
            offset = (s[at] == '+' ? 1.0 : -1.0) * (oh * 3600.0 + om * 60.0);
        } else {
            return std::nullopt;
        }
    }
    return static_cast<double>(days) * 86400.0 + h * 3600.0 + mi * 60.0 + se + frac - offset;
}

/// Collects fields of one request by column, then checks and stores it.
class TraceBuilder {
   public:
    TraceBuilder(std::string where, TraceOptions opt) : opt_(opt) {
        trace_.source = std::move(where);
    }

    void reserve(std::size_t requests) { trace_.requests.reserve(requests); }
    [[nodiscard]] std::size_t requests() const noexcept { return trace_.requests.size(); }

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
        // The absolute time for now; finish() makes it relative to the earliest.
        const double t = time_.value_or(0.0);
        if (trace_.requests.empty() || t < t0_) t0_ = t;
        if (trace_.requests.size() >= max_trace_requests)
            throw_field_error<InvalidInput>(
                where(), "requests",
                "a trace of at most " + std::to_string(max_trace_requests) + " requests", "more");
        trace_.requests.push_back({*prompt_, *output_, t * seconds});
    }

    [[nodiscard]] Trace finish() && {
        if (trace_.requests.empty())
            throw_field_error<InvalidInput>(trace_.source, "requests", "at least one request",
                                            "none");
        trace_.has_arrivals = any_time_;
        if (any_time_) {
            for (TraceRequest& r : trace_.requests) {
                const double absolute = r.arrival.in(seconds);
                const double since_first = absolute - t0_;
                r.arrival = since_first * seconds;
                if (!(since_first <= std::numeric_limits<double>::max()))
                    throw_field_error<InvalidInput>(trace_.source, "arrival time",
                                                    "arrival times a finite number of seconds "
                                                    "apart",
                                                    "some more than 1.8e308 s apart");
            }
        }
        return std::move(trace_);
    }

   private:
    [[nodiscard]] std::string where() const { return trace_.source + ":" + std::to_string(line_); }
    [[nodiscard]] std::uint64_t tokens(std::string_view name, std::string_view value) const {
        // Digits alone, as traces write counts: read directly; anything else the general way.
        std::uint64_t n = 0;
        const char* end = value.data() + value.size();
        if (const auto r = std::from_chars(value.data(), end, n);
            r.ec == std::errc{} && r.ptr == end)
            return n;
        const auto v = parse_token_count(value);
        if (!v)
            throw_field_error<InvalidInput>(where(), name, "a whole number of tokens >= 0",
                                            detail::quoted(value));
        return *v;
    }
    [[nodiscard]] double arrival(const TraceColumnMatch& c, std::string_view name,
                                 std::string_view value) {
        if (auto dt = parse_date_time(value, &dates_)) return *dt;
        if (auto v = parse_double(value))
            return *v * (c.time_scale != 0 ? c.time_scale : opt_.numeric_time_unit.scale);
        throw_field_error<InvalidInput>(where(), name,
                                        "seconds, or a date-time such as 2023-11-16 18:15:46.68",
                                        detail::quoted(value));
    }

    TraceOptions opt_;
    Trace trace_;
    DateCache dates_;
    double t0_ = 0;  ///< the earliest arrival so far
    std::size_t line_ = 0;
    bool any_time_ = false;
    std::optional<std::uint64_t> prompt_, output_;
    std::optional<double> time_;
};

/// Splits CSV records (RFC 4180 quoting, no line breaks inside fields) into views: of the line
/// itself, or of the splitter's buffers for quoted fields. Reused from record to record, it
/// allocates only while its buffers grow.
class CsvSplitter {
   public:
    /// The fields of `line`, valid until the next call. Throws InvalidInput naming `where()` on
    /// an unclosed quote.
    template <class Where>
    [[nodiscard]] std::span<const std::string_view> split(std::string_view line, Where&& where) {
        fields_.clear();
        std::size_t start = 0, at = 0;
        while ((at = comma_or_quote(line, at)) < line.size() && line[at] == ',') {
            fields_.push_back(line.substr(start, at - start));
            start = ++at;
        }
        if (at == line.size()) {  // no quotes: the fields are views of the line
            fields_.push_back(line.substr(start));
            return fields_;
        }
        fields_.clear();
        // Quotes: unquote into buffers, then view them (views are taken once the buffers are
        // final, so no buffer moves under a view).
        std::size_t n = 0;
        const auto next = [&]() -> std::string& {
            if (n == buffers_.size()) buffers_.emplace_back();
            buffers_[n].clear();
            return buffers_[n++];
        };
        std::string* out = &next();
        bool quoted_field = false;
        for (std::size_t i = 0; i < line.size(); ++i) {
            const char c = line[i];
            if (quoted_field) {
                if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                    out->push_back('"');
                    ++i;
                } else if (c == '"') {
                    quoted_field = false;
                } else {
                    out->push_back(c);
                }
            } else if (c == '"') {
                quoted_field = true;
            } else if (c == ',') {
                out = &next();
            } else {
                out->push_back(c);
            }
        }
        if (quoted_field)
            throw_field_error<InvalidInput>(where(), "record", "a closing '\"'", "end of line");
        for (std::size_t k = 0; k < n; ++k) fields_.push_back(buffers_[k]);
        return fields_;
    }

   private:
    /// The first ',' or '"' in `line` from `from`, or its size: eight characters at a time (a
    /// byte equal to c is a zero byte of the word XOR c, found by the borrow of subtracting 1
    /// from every byte; the lowest one flagged is always a true one).
    [[nodiscard]] static std::size_t comma_or_quote(std::string_view line, std::size_t from) {
        std::size_t i = from;
        if constexpr (std::endian::native == std::endian::little) {
            constexpr std::uint64_t ones = 0x0101010101010101, highs = 0x8080808080808080;
            for (; i + 8 <= line.size(); i += 8) {
                std::uint64_t w;
                std::memcpy(&w, line.data() + i, 8);
                const std::uint64_t a = w ^ (ones * ','), b = w ^ (ones * '"');
                const std::uint64_t hit = (((a - ones) & ~a) | ((b - ones) & ~b)) & highs;
                if (hit != 0) return i + static_cast<std::size_t>(std::countr_zero(hit) / 8);
            }
        }
        for (; i < line.size(); ++i)
            if (line[i] == ',' || line[i] == '"') return i;
        return line.size();
    }

    std::vector<std::string_view> fields_;
    std::vector<std::string> buffers_;
};

/// The next line of `text` from `pos` (without its "\n" or "\r\n"); advances pos.
[[nodiscard]] inline std::string_view next_line(std::string_view text, std::size_t& pos) {
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    const std::size_t end =
        nl == nullptr ? text.size()
                      : static_cast<std::size_t>(static_cast<const char*>(nl) - text.data());
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = end + 1;
    return line;
}

enum class TraceFormat : std::uint8_t { detect, csv, jsonl };

/// Reads a trace one line at a time, in either format (or the one its first non-blank character
/// says: JSON Lines when it is '{').
class TraceReader {
   public:
    TraceReader(std::string_view where, TraceOptions opt, TraceFormat format)
        : where_(where), format_(format), b_(std::string(where), opt) {}

    void reserve(std::size_t requests) { b_.reserve(requests); }
    [[nodiscard]] std::size_t requests() const noexcept { return b_.requests(); }

    /// Line `line_no` (1-based) of the text, without its line break.
    void line(std::string_view line, std::size_t line_no) {
        if (trim(line).empty()) return;
        if (format_ == TraceFormat::detect)
            format_ = trim(line).front() == '{' ? TraceFormat::jsonl : TraceFormat::csv;
        if (format_ == TraceFormat::jsonl)
            jsonl_record(line, line_no);
        else if (header_.empty())
            csv_header(line, line_no);
        else
            csv_record(line, line_no);
    }

    [[nodiscard]] Trace finish() && {
        if (format_ != TraceFormat::jsonl && header_.empty()) check_header();
        Trace t = std::move(b_).finish();
        t.columns = std::move(header_);
        return t;
    }

   private:
    const std::string& at(std::size_t line_no) {
        at_.assign(where_);
        at_.push_back(':');
        char digits[24];
        const auto r = std::to_chars(digits, digits + sizeof digits, line_no);
        at_.append(digits, r.ptr);
        return at_;
    }

    void csv_header(std::string_view line, std::size_t line_no) {
        for (std::string_view f :
             csv_.split(line, [&]() -> const std::string& { return at(line_no); })) {
            std::string h(trim(f));
            if (!h.empty() && static_cast<unsigned char>(h[0]) == 0xEF && h.size() >= 3)
                h.erase(0, 3);  // a UTF-8 byte-order mark
            cols_.push_back(match_trace_column(h));
            header_.push_back(std::move(h));
        }
        check_header();
    }

    void check_header() const {
        bool has_prompt = false, has_output = false;
        for (const TraceColumnMatch& c : cols_) {
            has_prompt = has_prompt || c.column == TraceColumn::prompt;
            has_output = has_output || c.column == TraceColumn::output;
        }
        if (has_prompt && has_output) return;
        std::string found;
        for (const auto& h : header_) found += (found.empty() ? "" : ",") + h;
        throw_field_error<InvalidInput>(
            where_, "header",
            "columns for prompt tokens (ContextTokens, prompt_tokens, input_tokens...) and "
            "generated tokens (GeneratedTokens, output_tokens, completion_tokens...)",
            detail::quoted(found));
    }

    void csv_record(std::string_view line, std::size_t line_no) {
        const std::span<const std::string_view> fields =
            csv_.split(line, [&]() -> const std::string& { return at(line_no); });
        if (fields.size() != header_.size())
            throw_field_error<InvalidInput>(at(line_no), "record",
                                            std::to_string(header_.size()) + " fields",
                                            std::to_string(fields.size()));
        b_.begin_record(line_no);
        for (std::size_t i = 0; i < fields.size(); ++i) b_.field(cols_[i], header_[i], fields[i]);
        b_.end_record();
    }

    void jsonl_record(std::string_view line, std::size_t line_no) {
        b_.begin_record(line_no);
        for_each_flat_json_field(line, at(line_no),
                                 [&](std::string_view key, std::string_view value) {
                                     const TraceColumnMatch col = column_of_key(key);
                                     if (col.column != TraceColumn::none && value != "null")
                                         b_.field(col, key, value);
                                 });
        b_.end_record();
    }

    /// JSON Lines repeat their keys on every line: match each distinct key once.
    TraceColumnMatch column_of_key(std::string_view key) {
        for (const auto& [k, m] : keys_)
            if (k == key) return m;
        const TraceColumnMatch m = match_trace_column(key);
        if (keys_.size() < 64) keys_.emplace_back(std::string(key), m);
        return m;
    }

    std::string where_;
    std::string at_;
    TraceFormat format_;
    TraceBuilder b_;
    CsvSplitter csv_;
    std::vector<std::string> header_;
    std::vector<TraceColumnMatch> cols_;
    std::vector<std::pair<std::string, TraceColumnMatch>> keys_;
};

[[nodiscard]] inline Trace parse_trace_text(std::string_view text, std::string_view where,
                                            TraceOptions opt, TraceFormat format) {
    TraceReader r(where, opt, format);
    std::size_t lines = 1;
    for (const char *p = text.data(), *end = text.data() + text.size();
         (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)))) !=
         nullptr;
         ++p)
        ++lines;
    r.reserve(lines);
    std::size_t pos = 0, line_no = 0;
    while (pos < text.size()) r.line(next_line(text, pos), ++line_no);
    return std::move(r).finish();
}

}  // namespace detail

/// Reads a CSV trace (a header row, then one request per row). Throws InvalidInput naming
/// `where`:line, the column, what was expected and what was found.
[[nodiscard]] inline Trace parse_trace_csv(std::string_view text, std::string_view where,
                                           TraceOptions opt = {}) {
    return detail::parse_trace_text(text, where, opt, detail::TraceFormat::csv);
}

/// Reads a JSON Lines trace: one object per line, fields matched as CSV columns are; other fields
/// (nested ones included) are ignored. Throws InvalidInput as parse_trace_csv does.
[[nodiscard]] inline Trace parse_trace_jsonl(std::string_view text, std::string_view where,
                                             TraceOptions opt = {}) {
    return detail::parse_trace_text(text, where, opt, detail::TraceFormat::jsonl);
}

/// Reads a trace in either format: JSON Lines when the first non-blank character is '{'.
[[nodiscard]] inline Trace parse_trace(std::string_view text, std::string_view where,
                                       TraceOptions opt = {}) {
    return detail::parse_trace_text(text, where, opt, detail::TraceFormat::detect);
}

/// Reads the trace file at `path` (CSV or JSON Lines), in chunks: what stays in memory is the
/// requests, not the text. Opened once, so a named pipe works too. Throws InvalidInput, naming the
/// file and the limit for a trace past trace_limit, a line past max_trace_line_bytes or more than
/// max_trace_requests requests.
[[nodiscard]] inline Trace load_trace(const std::string& path, TraceOptions opt = {}) {
    detail::InputFile in(path, trace_limit);
    const std::string& name = in.name();
    // The file's size, when it has one, sizes the request list after the first chunk (growing it
    // by doubling would hold up to twice the requests, and copy them).
    const std::uint64_t size = in.size().value_or(0);
    detail::TraceReader r(name, opt, detail::TraceFormat::detect);
    std::string buf(std::size_t{1} << 20, '\0');
    std::size_t have = 0, line_no = 0, consumed = 0;
    bool sized = size == 0;
    const auto too_long = [&](std::size_t at_line) {
        detail::throw_field_error<InvalidInput>(name + ":" + std::to_string(at_line), "line",
                                                "a line of at most " +
                                                    detail::limit_text(max_trace_line_bytes) +
                                                    ", as a request is a few fields",
                                                "a longer one");
    };
    for (;;) {
        const std::size_t got = in.read(buf.data() + have, buf.size() - have);
        const std::size_t end = have + got;
        const std::string_view text(buf.data(), end);
        std::size_t pos = 0;
        while (const void* nl = std::memchr(text.data() + pos, '\n', end - pos)) {
            const std::size_t stop =
                static_cast<std::size_t>(static_cast<const char*>(nl) - text.data());
            std::string_view line = text.substr(pos, stop - pos);
            if (line.size() > max_trace_line_bytes) too_long(line_no + 1);
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            r.line(line, ++line_no);
            pos = stop + 1;
        }
        consumed += pos;
        if (got == 0) {  // the end: a last line without a line break
            if (pos < end) {
                if (end - pos > max_trace_line_bytes) too_long(line_no + 1);
                r.line(detail::next_line(text, pos), ++line_no);
            }
            break;
        }
        if (!sized && r.requests() > 0 && consumed > 0) {
            const double per_byte =
                static_cast<double>(r.requests()) / static_cast<double>(consumed);
            const double want = std::min(per_byte * static_cast<double>(size) * 1.02 + 64,
                                         static_cast<double>(max_trace_requests));
            r.reserve(static_cast<std::size_t>(want));
            sized = true;
        }
        have = end - pos;
        if (have > max_trace_line_bytes) too_long(line_no + 1);
        std::memmove(buf.data(), buf.data() + pos, have);
        // A line longer than the buffer: it grows, to twice the longest line at most.
        if (have == buf.size()) buf.resize(2 * buf.size());
    }
    return std::move(r).finish();
}

}  // namespace kvplan
