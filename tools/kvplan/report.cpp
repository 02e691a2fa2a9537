#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <kvplan/format.hpp>
#include <kvplan/plan/refusal.hpp>
#include <kvplan/version.hpp>
#include <ostream>
#include <sstream>

#include "context.hpp"

namespace kvplan::cli {

std::string grouped(std::uint64_t n) { return detail::grouped_digits(n); }

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", grouped(n), n == 1 ? one : many);
}

Cell cell(Bytes b) { return {fmt::format("{}", b), b.count()}; }
Cell cell_exact(Bytes b) { return {grouped(b.count()) + " B", b.count()}; }
Cell cell(Seconds t) { return {fmt::format("{}", t), t.in(seconds)}; }
Cell cell(BytesPerSecond r) { return {fmt::format("{}", r), r.in(B_per_s)}; }
Cell cell(FlopsPerSecond r) { return {fmt::format("{}", r), r.in(FLOP_per_s)}; }
Cell cell(Flops f) { return {fmt::format("{}", f), f.in(FLOP)}; }
Cell cell_count(std::uint64_t n, std::string_view unit) {
    if (unit.empty()) return {grouped(n), n};
    // "1 sequence", not "1 sequences": the plural nouns the tables count in lose their "s".
    constexpr std::string_view plurals[] = {"sequences", "tokens",   "blocks",  "layers",
                                            "GPUs",      "replicas", "requests"};
    if (n == 1 && std::find(std::begin(plurals), std::end(plurals), unit) != std::end(plurals))
        unit.remove_suffix(1);
    return {grouped(n) + " " + std::string(unit), n};
}
Cell cell_text(std::string s) { return {s, s}; }
Cell cell_tokens(std::optional<std::uint64_t> v) {
    if (!v) return {"any length", nullptr};
    return cell_count(*v, "tokens");
}
Figure size_figure(std::string key, std::string label, Bytes b, Explanation how) {
    return {std::move(key), std::move(label), cell(b), cell_exact(b), std::move(how)};
}
Cell cell_bool(bool b, std::string_view yes, std::string_view no) {
    return {std::string(b ? yes : no), b};
}
Cell cell_number(double v, std::string_view unit, int precision) {
    std::string t = fmt::format("{:.{}f}", v, precision);
    if (!unit.empty()) t.append(" ").append(unit);
    return {t, v};
}
Cell cell_null(std::string text) { return {std::move(text), nullptr}; }

Format parse_format(std::string_view s) {
    if (s == "text") return Format::text;
    if (s == "md" || s == "markdown") return Format::md;
    if (s == "json") return Format::json;
    if (s == "csv") return Format::csv;
    throw UsageError("--format: expected text, md (markdown), json or csv, found '" +
                     std::string(s) + "'");
}

namespace {

std::string pad(std::string_view s, std::size_t w) {
    std::string out(s);
    if (out.size() < w) out.append(w - out.size(), ' ');
    return out;
}
std::string pad_left(std::string_view s, std::size_t w) {
    std::string out;
    if (s.size() < w) out.append(w - s.size(), ' ');
    out.append(s);
    return out;
}

// Numbers read best right-aligned; words left-aligned.
bool right_aligned(const Cell& c) { return c.json.is_number(); }

void text_table(const Table& t, std::ostream& out) {
    std::vector<std::size_t> w(t.columns.size());
    for (std::size_t c = 0; c < t.columns.size(); ++c) w[c] = t.columns[c].label.size();
    for (const auto& row : t.rows)
        for (std::size_t c = 0; c < row.size() && c < w.size(); ++c)
            w[c] = std::max(w[c], row[c].text.size());
    if (!t.title.empty()) out << t.title << "\n";
    std::string line;
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
        if (!t.columns[c].in_text) continue;
        const bool right = !t.rows.empty() && c < t.rows[0].size() && right_aligned(t.rows[0][c]);
        line.append("  ").append(right ? pad_left(t.columns[c].label, w[c])
                                       : pad(t.columns[c].label, w[c]));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
    for (const auto& row : t.rows) {
        line.clear();
        for (std::size_t c = 0; c < row.size() && c < w.size(); ++c)
            if (t.columns[c].in_text)
                line.append("  ").append(right_aligned(row[c]) ? pad_left(row[c].text, w[c])
                                                               : pad(row[c].text, w[c]));
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << "\n";
    }
}

/// `r` with every field a person reads (not the JSON values) passed through `esc`.
Report fields_escaped(const Report& r, std::string (*esc)(std::string_view)) {
    Report e = r;
    if (e.verdict) e.verdict = esc(*e.verdict);
    e.heading = esc(e.heading);
    for (auto& [k, v] : e.inputs) v.text = esc(v.text);
    for (Figure& f : e.figures) {
        f.label = esc(f.label);
        f.value.text = esc(f.value.text);
        if (f.exact) f.exact->text = esc(f.exact->text);
        f.explain.formula = esc(f.explain.formula);
        for (std::string& in : f.explain.inputs) in = esc(in);
    }
    for (Table& t : e.tables) {
        t.title = esc(t.title);
        for (Column& c : t.columns) c.label = esc(c.label);
        for (auto& row : t.rows)
            for (Cell& c : row) c.text = esc(c.text);
    }
    for (std::string& n : e.notes) n = esc(n);
    return e;
}

void render_text(const Report& r, bool explain, std::ostream& out) {
    if (r.verdict) out << *r.verdict << "\n";
    if (!r.heading.empty()) out << r.heading << "\n";
    const bool any_figure =
        std::any_of(r.figures.begin(), r.figures.end(), [](const Figure& f) { return f.in_text; });
    if (any_figure) {
        if (r.verdict || !r.heading.empty()) out << "\n";
        std::size_t wl = 0, wv = 0;
        for (const Figure& f : r.figures) {
            if (!f.in_text) continue;
            wl = std::max(wl, f.label.size());
            wv = std::max(wv, f.value.text.size());
        }
        for (const Figure& f : r.figures) {
            if (!f.in_text) continue;
            std::string line = "  ";
            line.append(pad(f.label, wl)).append("  ").append(pad_left(f.value.text, wv));
            if (f.exact && f.exact->text != f.value.text)
                line.append("  (").append(f.exact->text).append(")");
            out << line << "\n";
            if (explain && !f.explain.formula.empty()) {
                out << "      = " << f.explain.formula << "\n";
                for (const std::string& in : f.explain.inputs) out << "        " << in << "\n";
            }
        }
    }
    for (const Table& t : r.tables) {
        if (!t.in_text) continue;
        out << "\n";
        text_table(t, out);
    }
    if (!r.notes.empty()) out << "\n";
    for (const std::string& n : r.notes) out << "note: " << n << "\n";
}

// Every field of a Markdown report through md_field: a pipe would end a table cell, a line break
// the row.
std::string md_escape(std::string_view s) { return md_field(s); }

void render_md(const Report& r, bool explain, std::ostream& out) {
    if (!r.heading.empty()) out << "### " << md_escape(r.heading) << "\n\n";
    if (r.verdict) out << "**" << md_escape(*r.verdict) << "**\n\n";
    if (!r.inputs.empty()) {
        out << "Inputs:";
        bool first = true;
        for (const auto& [k, v] : r.inputs) {
            out << (first ? " " : ", ") << k << " `" << md_escape(v.text) << "`";
            first = false;
        }
        out << "\n\n";
    }
    // Figures shown only in JSON and CSV (check's verdict says them) make no table.
    const bool any_figure =
        std::any_of(r.figures.begin(), r.figures.end(), [](const Figure& f) { return f.in_text; });
    if (any_figure) {
        out << (explain ? "| figure | value | exact | how |\n|---|--:|--:|---|\n"
                        : "| figure | value | exact |\n|---|--:|--:|\n");
        for (const Figure& f : r.figures) {
            if (!f.in_text) continue;
            out << "| " << md_escape(f.label) << " | " << md_escape(f.value.text) << " | "
                << (f.exact ? md_escape(f.exact->text) : "") << " |";
            if (explain) {
                std::string how = f.explain.formula;
                for (const std::string& in : f.explain.inputs) how.append("; ").append(in);
                out << " " << md_escape(how) << " |";
            }
            out << "\n";
        }
        out << "\n";
    }
    for (const Table& t : r.tables) {
        if (!t.in_text) continue;
        if (!t.title.empty()) out << "**" << md_escape(t.title) << "**\n\n";
        out << "|";
        for (const Column& c : t.columns)
            if (c.in_text) out << " " << md_escape(c.label) << " |";
        out << "\n|";
        // A column of numbers is right-aligned, whichever row has the first one.
        for (std::size_t c = 0; c < t.columns.size(); ++c) {
            if (!t.columns[c].in_text) continue;
            const bool right = std::any_of(t.rows.begin(), t.rows.end(), [&](const auto& row) {
                return c < row.size() && right_aligned(row[c]);
            });
            out << (right ? "--:|" : "---|");
        }
        out << "\n";
        for (const auto& row : t.rows) {
            out << "|";
            for (std::size_t c = 0; c < row.size() && c < t.columns.size(); ++c)
                if (t.columns[c].in_text) out << " " << md_escape(row[c].text) << " |";
            out << "\n";
        }
        out << "\n";
    }
    // One quote each: consecutive quoted lines would run together as one paragraph.
    for (std::size_t i = 0; i < r.notes.size(); ++i)
        out << (i == 0 ? "" : "\n") << "> " << md_escape(r.notes[i]) << "\n";
}

Json table_json(const Table& t) {
    Json rows = Json::array();
    for (const auto& row : t.rows) {
        Json o = Json::object();
        for (std::size_t c = 0; c < row.size() && c < t.columns.size(); ++c)
            o[t.columns[c].key] = row[c].json;
        rows.push_back(std::move(o));
    }
    return rows;
}

/// `j` with every string and key made valid UTF-8 (utf8_escaped), so that bytes read from a file
/// reach the output escaped as \xNN rather than refused or replaced.
Json escaped(const Json& j) {
    if (j.is_string()) return utf8_escaped(j.get_ref<const std::string&>());
    if (j.is_array()) {
        Json a = Json::array();
        for (const Json& v : j) a.push_back(escaped(v));
        return a;
    }
    if (j.is_object()) {
        Json o = Json::object();
        for (auto it = j.begin(); it != j.end(); ++it) o[utf8_escaped(it.key())] = escaped(*it);
        return o;
    }
    return j;
}

}  // namespace

std::string json_document(const Json& j) {
    const std::string text = escaped(j).dump(2);
    // "##[" would be a workflow command in a CI log (text_field); "\u005B" reads back as "[".
    std::string out;
    out.reserve(text.size());
    for (std::size_t from = 0;;) {
        const std::size_t at = text.find("##[", from);
        if (at == std::string::npos) return out.append(text, from);
        out.append(text, from, at + 2 - from).append("\\u005B");
        from = at + 3;
    }
}

namespace {

void render_json(const Report& r, bool explain, std::ostream& out) {
    Json j = Json::object();
    j["command"] = r.command;
    j["kvplan_version"] = kvplan::version_string;
    if (r.verdict) j["verdict"] = *r.verdict;
    Json inputs = Json::object();
    for (const auto& [k, v] : r.inputs) inputs[k] = v.json;
    j["inputs"] = std::move(inputs);
    for (const Figure& f : r.figures) j[f.key] = f.value.json;
    for (const Table& t : r.tables) j[t.key] = table_json(t);
    for (const auto& [k, v] : r.extra_json.items()) j[k] = v;
    j["notes"] = r.notes;
    if (explain) {
        Json e = Json::object();
        for (const Figure& f : r.figures)
            if (!f.explain.formula.empty())
                e[f.key] = Json{{"formula", f.explain.formula}, {"inputs", f.explain.inputs}};
        j["explain"] = std::move(e);
    }
    out << json_document(j) << "\n";
}

std::string csv_field(const Json& v) {
    std::string s;
    if (v.is_null()) return s;
    if (v.is_string())
        s = text_field(v.get_ref<const std::string&>());
    else
        s = v.dump();
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"')
            q += "\"\"";
        else
            q.push_back(c);
    }
    return q + "\"";
}

// Every row starts with the echoed inputs (model, gpu, tp...), so rows from several runs of a sweep
// can be concatenated and still told apart. An input the record itself has a column for (a swept
// context) is left to that column.
void render_csv(const Report& r, std::ostream& out) {
    std::vector<std::string> keys;
    std::vector<const Json*> values;
    const Table* table =
        r.csv_table && *r.csv_table < r.tables.size() ? &r.tables[*r.csv_table] : nullptr;
    if (table != nullptr) {
        for (const Column& c : table->columns) keys.push_back(c.key);
    } else {
        for (const Figure& f : r.figures) keys.push_back(f.key);
    }
    std::vector<std::pair<std::string, const Json*>> inputs;
    for (const auto& [k, v] : r.inputs)
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) inputs.emplace_back(k, &v.json);
    const auto row = [&](const std::vector<const Json*>& cells) {
        bool first = true;
        for (const auto& [k, v] : inputs) {
            out << (first ? "" : ",") << csv_field(*v);
            first = false;
        }
        for (const Json* c : cells) {
            out << (first ? "" : ",") << csv_field(*c);
            first = false;
        }
        out << "\n";
    };
    bool first = true;
    for (const auto& [k, v] : inputs) {
        out << (first ? "" : ",") << k;
        first = false;
    }
    for (const std::string& k : keys) {
        out << (first ? "" : ",") << k;
        first = false;
    }
    out << "\n";
    if (table != nullptr) {
        for (const auto& cells : table->rows) {
            values.clear();
            for (const Cell& c : cells) values.push_back(&c.json);
            row(values);
        }
        return;
    }
    for (const Figure& f : r.figures) values.push_back(&f.value.json);
    row(values);
}

}  // namespace

void render(const Report& r, Format f, bool explain, std::ostream& out) {
    // Rendered whole, then made valid UTF-8: a name read from a file or a path may hold any bytes.
    std::ostringstream s;
    switch (f) {
        case Format::text:
            render_text(fields_escaped(r, text_field), explain, s);
            break;
        case Format::md:
            render_md(r, explain, s);
            break;
        case Format::json:
            render_json(r, explain, s);
            break;
        case Format::csv:
            render_csv(r, s);
            break;
    }
    out << utf8_escaped(s.str());
}

namespace {

void hex_byte(std::string& out, unsigned char c) {
    static constexpr char digits[] = "0123456789ABCDEF";
    out += "\\x";
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
}

/// The length of the well-formed UTF-8 sequence (RFC 3629) at s[i], a multi-byte one: its length
/// from the lead byte, continuation bytes 10xxxxxx, no overlong forms, no surrogates, nothing past
/// U+10FFFF. 0 when malformed.
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c >= 0xC2 && c <= 0xDF   ? 2
                          : c >= 0xE0 && c <= 0xEF ? 3
                          : c >= 0xF0 && c <= 0xF4 ? 4
                                                   : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
    if (n >= 3) {
        const auto c1 = static_cast<unsigned char>(s[i + 1]);
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
            (c == 0xF4 && c1 > 0x8F))
            return 0;
    }
    return n;
}

/// `s` as valid UTF-8 with its control characters (C0, DEL, C1) written as \xNN; a whole
/// document keeps newline and tab, a field (`one_line`) escapes them and U+2028 and U+2029 too.
std::string escaped_utf8(std::string_view s, bool one_line) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            const bool kept = !one_line && (c == '\n' || c == '\t');
            if ((c < 0x20 || c == 0x7F) && !kept)
                hex_byte(out, c);
            else
                out.push_back(static_cast<char>(c));
            ++i;
            continue;
        }
        const std::size_t n = utf8_length(s, i);
        if (n == 0) {
            hex_byte(out, c);
            ++i;
            continue;
        }
        const auto c1 = static_cast<unsigned char>(s[i + 1]);
        const bool c1_control = c == 0xC2 && c1 < 0xA0;  // U+0080 to U+009F
        const bool separator = n == 3 && c == 0xE2 && c1 == 0x80 &&
                               (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xA8;
        if (c1_control || (one_line && separator))
            for (std::size_t k = 0; k < n; ++k) hex_byte(out, static_cast<unsigned char>(s[i + k]));
        else
            out.append(s.substr(i, n));
        i += n;
    }
    return out;
}

/// The length of the white space (as .NET's String.TrimStart takes it, which the Actions runner
/// applies to each line) at s[i] of valid UTF-8 with no control characters; 0 if none.
std::size_t white_space_length(std::string_view s, std::size_t i) {
    const auto at = [&](std::size_t k) {
        return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
    };
    if (at(0) == ' ') return 1;
    if (at(0) == 0xC2 && at(1) == 0xA0) return 2;                            // U+00A0
    if (at(0) == 0xE1 && at(1) == 0x9A && at(2) == 0x80) return 3;           // U+1680
    if (at(0) == 0xE2 && at(1) == 0x80 && (at(2) <= 0x8A || at(2) == 0xAF))  // U+2000-200A, 202F
        return 3;
    if (at(0) == 0xE2 && at(1) == 0x81 && at(2) == 0x9F) return 3;  // U+205F
    if (at(0) == 0xE3 && at(1) == 0x80 && at(2) == 0x80) return 3;  // U+3000
    return 0;
}

/// GitHub's escaping of a workflow command's message (and, `property`, of a property value),
/// then the remaining control characters as text_field writes them.
std::string gh_escaped(std::string_view s, bool property) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '%')
            out += "%25";
        else if (c == '\r')
            out += "%0D";
        else if (c == '\n')
            out += "%0A";
        else if (property && c == ':')
            out += "%3A";
        else if (property && c == ',')
            out += "%2C";
        else
            out.push_back(c);
    }
    return escaped_utf8(out, true);
}

}  // namespace

std::string utf8_escaped(std::string_view s) { return escaped_utf8(s, false); }

std::string text_field(std::string_view s) {
    std::string e = escaped_utf8(s, true);
    std::size_t lead = 0;
    while (const std::size_t n = white_space_length(e, lead)) lead += n;
    if (e.compare(lead, 2, "::") == 0) e.replace(lead, 1, "\\x3A");
    for (std::size_t at = e.find("##["); at != std::string::npos; at = e.find("##[", at + 3))
        e.replace(at + 2, 1, "\\x5B");
    return e;
}

std::string md_field(std::string_view s) {
    std::string out;
    for (char c : text_field(s)) {
        if (c == '|') out.push_back('\\');
        out.push_back(c);
    }
    return out;
}

std::string gh_data(std::string_view s) { return gh_escaped(s, false); }

std::string gh_property(std::string_view s) { return gh_escaped(s, true); }

std::string xml_field(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            case '\n':
                out += "&#10;";
                break;
            case '\r':
                out += "&#13;";
                break;
            case '\t':
                out += "&#9;";
                break;
            default:
                out.push_back(c);
        }
    }
    return escaped_utf8(out, true);
}

}  // namespace kvplan::cli
