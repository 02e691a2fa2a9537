#pragma once

// A small SVG line chart: axes with labels (units in the label), 1-2-5 ticks on linear axes and
// decade ticks on logarithmic ones, a grid, several series, and markers (a vertical line at an x, a
// horizontal line at a y, or a labelled point). Enough for a chart a reviewer drops into a doc;
// standalone SVG 1.1, no scripts, no external fonts. Opt-in (not in kvplan.hpp): allocates and
// writes files.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"

namespace kvplan::svg {

struct Point {
    double x = 0;
    double y = 0;
};

/// One line of the chart. Non-finite points (and, on a log axis, points <= 0) break the line.
struct Series {
    std::string name;  ///< shown in the legend
    std::vector<Point> points;
    std::string color;    ///< CSS colour; empty: the palette's next
    bool dashed = false;  ///< drawn dashed (bounds, limits)
    double width = 2.0;   ///< stroke width in px
};

/// A vertical line (x only), a horizontal line (y only) or a labelled point (both).
struct Marker {
    std::optional<double> x;
    std::optional<double> y;
    std::string label;
    std::string color = "#d62728";
};

struct Axis {
    std::string label;          ///< with its unit, e.g. "batch (sequences)"
    bool log = false;           ///< base-10 logarithmic
    std::optional<double> min;  ///< range; unset: from the data and markers
    std::optional<double> max;
};

struct LineChart {
    std::string title;
    Axis x;
    Axis y;
    std::vector<Series> series;
    std::vector<Marker> markers;
    std::string note;  ///< a line of small print under the chart (sources, assumptions)
    int width = 800;
    int height = 500;
};

namespace detail {

[[nodiscard]] inline std::string escape(std::string_view s) {
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
            default:
                out.push_back(c);
        }
    }
    return out;
}

/// A coordinate in px with two decimals.
[[nodiscard]] inline std::string px(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

/// A tick label: whole numbers with thousands separators, others with three significant digits.
[[nodiscard]] inline std::string tick_label(double v) {
    char buf[48];
    if (std::fabs(v) >= 1e15 || (v != 0 && std::fabs(v) < 1e-3)) {
        std::snprintf(buf, sizeof buf, "%.3g", v);
        return buf;
    }
    if (std::fabs(v - std::round(v)) < 1e-9 * std::max(1.0, std::fabs(v))) {
        std::snprintf(buf, sizeof buf, "%.0f", std::round(v));
        std::string s = buf, out;
        const std::size_t digits_start = s[0] == '-' ? 1 : 0;
        for (std::size_t i = 0; i < s.size(); ++i) {
            if (i > digits_start && (s.size() - i) % 3 == 0) out.push_back(',');
            out.push_back(s[i]);
        }
        return out;
    }
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

/// 1, 2 or 5 x 10^k nearest above `raw`: the step of a linear axis.
[[nodiscard]] inline double nice_step(double raw) {
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

struct Scale {
    double lo = 0, hi = 1;  // data range (log10 of it on a log axis)
    double p0 = 0, p1 = 1;  // pixel range
    bool log = false;
    [[nodiscard]] bool valid(double v) const { return std::isfinite(v) && (!log || v > 0); }
    [[nodiscard]] double operator()(double v) const {
        const double t = log ? std::log10(v) : v;
        return p0 + (t - lo) / (hi - lo) * (p1 - p0);
    }
};

/// The axis range from the data, widened to whole ticks; the ticks themselves.
inline Scale make_scale(const Axis& a, std::vector<double> values, double p0, double p1,
                        std::vector<double>& ticks) {
    Scale sc;
    sc.log = a.log;
    sc.p0 = p0;
    sc.p1 = p1;
    values.erase(
        std::remove_if(values.begin(), values.end(), [&](double v) { return !sc.valid(v); }),
        values.end());
    double lo = values.empty() ? (a.log ? 1 : 0) : *std::min_element(values.begin(), values.end());
    double hi = values.empty() ? 10 : *std::max_element(values.begin(), values.end());
    if (!a.log && !a.min && lo > 0 && lo < hi * 0.5) lo = 0;  // linear axes start at 0 when close
    if (a.min) lo = *a.min;
    if (a.max) hi = *a.max;
    ticks.clear();
    if (a.log) {
        if (lo <= 0) lo = hi > 0 ? hi / 10 : 1;
        if (hi <= lo) hi = lo * 10;
        double l = std::floor(std::log10(lo) + 1e-9), h = std::ceil(std::log10(hi) - 1e-9);
        if (h <= l) h = l + 1;
        if (!a.min) lo = std::pow(10.0, l);
        if (!a.max) hi = std::pow(10.0, h);
        const bool fine = h - l <= 2;
        for (double k = l; k <= h; ++k)
            for (double m : {1.0, 2.0, 5.0}) {
                if (m != 1.0 && !fine) continue;
                const double v = m * std::pow(10.0, k);
                if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
            }
        sc.lo = std::log10(lo);
        sc.hi = std::log10(hi);
    } else {
        if (hi <= lo) hi = lo + 1;
        const double step = nice_step((hi - lo) / 6);
        if (!a.min) lo = std::floor(lo / step + 1e-9) * step;
        if (!a.max) hi = std::ceil(hi / step - 1e-9) * step;
        for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
            ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
        sc.lo = lo;
        sc.hi = hi;
    }
    return sc;
}

inline constexpr const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                          "#8c564b", "#e377c2", "#7f7f7f", "#17becf"};

}  // namespace detail

/// The chart as a standalone SVG document.
[[nodiscard]] inline std::string render(const LineChart& c) {
    using detail::escape;
    using detail::px;
    // The legend sets the right margin: about 7 px per character at 12 px, plus its line sample.
    std::size_t longest = 0;
    for (const Series& s : c.series) longest = std::max(longest, s.name.size());
    const double right =
        std::min(c.width / 2.0, std::max(120.0, 60.0 + 7.0 * static_cast<double>(longest)));
    const double left = 90, top = 50, bottom = c.note.empty() ? 60 : 80;
    const double x0 = left, x1 = c.width - right, y0 = c.height - bottom, y1 = top;

    std::vector<double> xs, ys;
    for (const Series& s : c.series)
        for (const Point& p : s.points) {
            xs.push_back(p.x);
            ys.push_back(p.y);
        }
    for (const Marker& m : c.markers) {
        if (m.x) xs.push_back(*m.x);
        if (m.y) ys.push_back(*m.y);
    }
    std::vector<double> xt, yt;
    const detail::Scale sx = detail::make_scale(c.x, xs, x0, x1, xt);
    const detail::Scale sy = detail::make_scale(c.y, ys, y0, y1, yt);

    std::string o;
    o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    o += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" +
         std::to_string(c.width) + "\" height=\"" + std::to_string(c.height) + "\" viewBox=\"0 0 " +
         std::to_string(c.width) + " " + std::to_string(c.height) +
         "\" font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\">\n";
    o += "<title>" + escape(c.title) + "</title>\n";
    o += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    // A long title shrinks to fit the width (about 0.55 em per character).
    const double title_size =
        std::min(17.0, (c.width - 20.0) / (0.55 * std::max<double>(1.0, c.title.size())));
    o += "<text x=\"" + px(c.width / 2.0) + "\" y=\"28\" text-anchor=\"middle\" font-size=\"" +
         px(title_size) + "\">" + escape(c.title) + "</text>\n";

    // Grid and ticks.
    o += "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
    for (double v : xt)
        o += "<line x1=\"" + px(sx(v)) + "\" y1=\"" + px(y0) + "\" x2=\"" + px(sx(v)) + "\" y2=\"" +
             px(y1) + "\"/>\n";
    for (double v : yt)
        o += "<line x1=\"" + px(x0) + "\" y1=\"" + px(sy(v)) + "\" x2=\"" + px(x1) + "\" y2=\"" +
             px(sy(v)) + "\"/>\n";
    o += "</g>\n";
    o += "<g font-size=\"12\" fill=\"#333333\">\n";
    for (double v : xt)
        o += "<text x=\"" + px(sx(v)) + "\" y=\"" + px(y0 + 18) + "\" text-anchor=\"middle\">" +
             detail::tick_label(v) + "</text>\n";
    for (double v : yt)
        o += "<text x=\"" + px(x0 - 8) + "\" y=\"" + px(sy(v) + 4) + "\" text-anchor=\"end\">" +
             detail::tick_label(v) + "</text>\n";
    o += "</g>\n";
    // Axes and their labels.
    o += "<g stroke=\"#000000\" stroke-width=\"1.5\">\n<line x1=\"" + px(x0) + "\" y1=\"" + px(y0) +
         "\" x2=\"" + px(x1) + "\" y2=\"" + px(y0) + "\"/>\n<line x1=\"" + px(x0) + "\" y1=\"" +
         px(y0) + "\" x2=\"" + px(x0) + "\" y2=\"" + px(y1) + "\"/>\n</g>\n";
    o += "<text x=\"" + px((x0 + x1) / 2) + "\" y=\"" + px(y0 + 42) +
         "\" text-anchor=\"middle\" font-size=\"14\">" + escape(c.x.label) + "</text>\n";
    o += "<text transform=\"translate(" + px(22) + " " + px((y0 + y1) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"14\">" + escape(c.y.label) +
         "</text>\n";

    // Series, clipped to the plot area.
    o += "<defs><clipPath id=\"plot\"><rect x=\"" + px(x0) + "\" y=\"" + px(y1) + "\" width=\"" +
         px(x1 - x0) + "\" height=\"" + px(y0 - y1) + "\"/></clipPath></defs>\n";
    o += "<g clip-path=\"url(#plot)\" fill=\"none\" stroke-linejoin=\"round\">\n";
    std::size_t next_colour = 0;
    std::vector<std::string> colours;
    for (const Series& s : c.series) {
        const std::string colour =
            s.color.empty() ? detail::palette[next_colour++ % std::size(detail::palette)] : s.color;
        colours.push_back(colour);
        std::string pts;
        const auto flush = [&] {
            if (!pts.empty())
                o += "<polyline stroke=\"" + colour + "\" stroke-width=\"" + px(s.width) + "\"" +
                     (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + pts + "\"/>\n";
            pts.clear();
        };
        for (const Point& p : s.points) {
            if (!sx.valid(p.x) || !sy.valid(p.y)) {
                flush();
                continue;
            }
            if (!pts.empty()) pts += ' ';
            pts.append(px(sx(p.x))).append(1, ',').append(px(sy(p.y)));
        }
        flush();
    }
    o += "</g>\n";

    // Markers; their labels get a white halo so that they read over the lines.
    const std::string halo = " paint-order=\"stroke\" stroke=\"#ffffff\" stroke-width=\"3\"";
    for (const Marker& m : c.markers) {
        const std::string col = escape(m.color);
        // Labels in the right part of the plot read leftwards, away from the legend.
        const bool leftwards = m.x && sx.valid(*m.x) && sx(*m.x) > x0 + 0.6 * (x1 - x0);
        if (m.x && m.y && sx.valid(*m.x) && sy.valid(*m.y)) {
            o += "<circle cx=\"" + px(sx(*m.x)) + "\" cy=\"" + px(sy(*m.y)) + "\" r=\"5\" fill=\"" +
                 col + "\"/>\n";
            o += "<text x=\"" + px(sx(*m.x) + (leftwards ? -8 : 8)) + "\" y=\"" + px(sy(*m.y) - 8) +
                 "\"" + (leftwards ? " text-anchor=\"end\"" : "") + " font-size=\"12\"" + halo +
                 " fill=\"" + col + "\">" + escape(m.label) + "</text>\n";
        } else if (m.x && sx.valid(*m.x)) {
            o += "<line x1=\"" + px(sx(*m.x)) + "\" y1=\"" + px(y0) + "\" x2=\"" + px(sx(*m.x)) +
                 "\" y2=\"" + px(y1) + "\" stroke=\"" + col +
                 "\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/>\n";
            o += "<text x=\"" + px(sx(*m.x) + (leftwards ? -4 : 4)) + "\" y=\"" + px(y1 + 12) +
                 "\"" + (leftwards ? " text-anchor=\"end\"" : "") + " font-size=\"12\"" + halo +
                 " fill=\"" + col + "\">" + escape(m.label) + "</text>\n";
        } else if (m.y && sy.valid(*m.y)) {
            o += "<line x1=\"" + px(x0) + "\" y1=\"" + px(sy(*m.y)) + "\" x2=\"" + px(x1) +
                 "\" y2=\"" + px(sy(*m.y)) + "\" stroke=\"" + col +
                 "\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/>\n";
            o += "<text x=\"" + px(x1 - 4) + "\" y=\"" + px(sy(*m.y) - 5) +
                 "\" text-anchor=\"end\" font-size=\"12\"" + halo + " fill=\"" + col + "\">" +
                 escape(m.label) + "</text>\n";
        }
    }

    // Legend.
    double ly = top + 10;
    o += "<g font-size=\"12\">\n";
    for (std::size_t i = 0; i < c.series.size(); ++i) {
        const Series& s = c.series[i];
        o += "<line x1=\"" + px(x1 + 15) + "\" y1=\"" + px(ly) + "\" x2=\"" + px(x1 + 45) +
             "\" y2=\"" + px(ly) + "\" stroke=\"" + colours[i] + "\" stroke-width=\"" +
             px(s.width) + "\"" + (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
        o += "<text x=\"" + px(x1 + 52) + "\" y=\"" + px(ly + 4) + "\">" + escape(s.name) +
             "</text>\n";
        ly += 20;
    }
    o += "</g>\n";
    if (!c.note.empty())
        o += "<text x=\"" + px(10) + "\" y=\"" + px(c.height - 10.0) +
             "\" font-size=\"10\" fill=\"#555555\">" + escape(c.note) + "</text>\n";
    o += "</svg>\n";
    return o;
}

/// Writes the chart to `path`; InvalidInput when the file cannot be written.
inline void write(const LineChart& c, const std::string& path) {
    std::ofstream out(path, std::ios::binary);
    if (out) out << render(c);
    if (!out)
        kvplan::detail::throw_field_error<InvalidInput>(path, "file", "a writable file", "none");
}

}  // namespace kvplan::svg
