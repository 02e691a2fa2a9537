#pragma once

// One result model, four renderings. A subcommand fills a Report: a verdict (fit, check), the
// inputs, scalar figures and tables; render() prints it as text (an aligned table a person reads
// at a glance), md (pastes into a design doc), json (stable keys, bytes as integers) or csv (a
// header row, then one row per record).

#include <cstdint>
#include <iosfwd>
#include <kvplan/units.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan::cli {

enum class Format { text, md, json, csv };

using Json = nlohmann::ordered_json;

/// One value: how a person reads it (with its unit) and how a machine reads it (bytes as integers,
/// seconds as numbers, flags as booleans).
struct Cell {
    std::string text;
    Json json;
};

[[nodiscard]] Cell cell(Bytes b);           ///< "40.00 GiB" / 42949672960
[[nodiscard]] Cell cell_exact(Bytes b);     ///< "42,949,672,960 B" / 42949672960
[[nodiscard]] Cell cell(Seconds t);         ///< "12.30 ms" / 0.0123 (seconds)
[[nodiscard]] Cell cell(BytesPerSecond r);  ///< "3.35 TB/s" / 3.35e12 (bytes per second)
[[nodiscard]] Cell cell(FlopsPerSecond r);  ///< "989.40 TFLOP/s" / 9.894e14
[[nodiscard]] Cell cell(Flops f);           ///< "1.23 TFLOP" / 1.23e12
[[nodiscard]] Cell cell_count(std::uint64_t n, std::string_view unit);  ///< "8,000 tokens" / 8000
[[nodiscard]] Cell cell_text(std::string s);  ///< a name or an id, the same for both
[[nodiscard]] Cell cell_bool(bool b, std::string_view yes = "yes", std::string_view no = "no");
[[nodiscard]] Cell cell_number(double v, std::string_view unit, int precision = 2);
[[nodiscard]] Cell cell_null(std::string text = "-");

/// 1234567 -> "1,234,567", as the library's texts group digits (its refusals).
[[nodiscard]] std::string grouped(std::uint64_t n);

/// "1 sequence", "12,345 sequences".
[[nodiscard]] std::string plural(std::uint64_t n, std::string_view one, std::string_view many);

/// "any length" (null) or "12,345 tokens".
[[nodiscard]] Cell cell_tokens(std::optional<std::uint64_t> v);

/// How a figure was obtained: shown with --explain.
struct Explanation {
    std::string formula;  ///< "2 x kv_heads x head_dim x dtype bytes x layers"
    std::vector<std::string>
        inputs;  ///< "kv_heads = 8 (configs/models/x.json: num_key_value_heads)"
};

/// A scalar result.
struct Figure {
    std::string key;    ///< the JSON key and CSV column: kv_bytes_per_token
    std::string label;  ///< what a person reads: "KV per token"
    Cell value;
    std::optional<Cell> exact;  ///< the exact form shown beside the value (bytes)
    Explanation explain{};
    bool in_text = true;  ///< false: JSON and CSV only (the verdict line already says it)
};

/// A size: its value, its exact bytes beside it, and how it was obtained.
[[nodiscard]] Figure size_figure(std::string key, std::string label, Bytes b, Explanation how);

struct Column {
    std::string key;
    std::string label;
    bool in_text = true;  ///< false: JSON and CSV only (another column shows the same figure)
};

/// Rows of records; `key` names the JSON array.
struct Table {
    std::string key;
    std::string title;
    std::vector<Column> columns;
    std::vector<std::vector<Cell>> rows;
    bool in_text = true;  ///< false: JSON and CSV only (the figures already show its one row)
};

struct Report {
    std::string command;
    std::string heading;                               ///< one line: what was sized, on what
    std::optional<std::string> verdict;                ///< printed first (fit, check)
    std::vector<std::pair<std::string, Cell>> inputs;  ///< echoed inputs: model, gpu, tp...
    std::vector<Figure> figures;
    std::vector<Table> tables;
    std::vector<std::string> notes;
    /// The table whose rows the CSV rendering prints; none: the figures as one row.
    std::optional<std::size_t> csv_table;
    /// Extra JSON members merged after everything else (structured results).
    Json extra_json = Json::object();
};

/// Prints `r` in `f`; with `explain`, each figure's formula and inputs follow it.
void render(const Report& r, Format f, bool explain, std::ostream& out);

[[nodiscard]] Format parse_format(std::string_view s);

/// `s` as valid UTF-8: every byte that is not part of a well-formed sequence, and every control
/// character but newline and tab (C0, DEL, C1), written as \xNN (a C1 character as its two bytes).
[[nodiscard]] std::string utf8_escaped(std::string_view s);

// One escaper per format a field read from a file (a requirement's or a replica's name, a path)
// is printed in. A pull request controls those files, and GitHub Actions runs as a workflow
// command any line of a step's output that starts, after white space, with "::" ("::error::",
// "::stop-commands::"), or holds "##[" (the runner's older syntax): so no field may end a line,
// and none may start a command (actions/runner, src/Runner.Common/ActionCommand.cs).

/// A field of a line a person reads (text reports, CSV, error messages): utf8_escaped, with
/// newline, tab, U+2028 and U+2029 escaped too, so the field stays on its line; a "::" after
/// the field's leading white space written "\x3A:", and the "[" of "##[" written "\x5B".
[[nodiscard]] std::string text_field(std::string_view s);

/// A field of a Markdown report: text_field, and "|" written "\|" (it would end a table cell).
[[nodiscard]] std::string md_field(std::string_view s);

/// The message of a GitHub workflow command ("::error file=...::message"), escaped as the runner
/// unescapes it: % as %25, CR as %0D, LF as %0A; the other control characters as text_field
/// writes them.
[[nodiscard]] std::string gh_data(std::string_view s);

/// A property value of a GitHub workflow command (file=, title=): gh_data, and ':' as %3A and ','
/// as %2C.
[[nodiscard]] std::string gh_property(std::string_view s);

/// `j` as a JSON document (indented by 2): every string and key made valid UTF-8 with its control
/// characters written as \xNN (utf8_escaped), and "##[" written "##\u005B", which reads back the
/// same.
[[nodiscard]] std::string json_document(const Json& j);

/// Text of an XML attribute or element (JUnit): the five entities, and newline, CR and tab as
/// character references, so an attribute keeps them; other control characters as text_field
/// writes them (XML 1.0 forbids them).
[[nodiscard]] std::string xml_field(std::string_view s);

}  // namespace kvplan::cli
