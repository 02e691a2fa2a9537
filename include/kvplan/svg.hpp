#pragma once

// A small SVG line chart: axes with labels (units in the label), 1-2-5 ticks on linear axes and
// decade ticks on logarithmic ones, a grid, several series, and markers (a vertical line at an x, a
// horizontal line at a y, or a labelled point), and figures of several charts stacked as panels.
// Enough for a chart a reviewer drops into a doc; standalone SVG 1.1, no scripts, no external
// fonts. Opt-in (not in kvplan.hpp): allocates and writes files.
//
// Labels never overlap a line or each other: every text gets a box (its width from DejaVu Sans's
// advance widths, the font the chart asks for first and the widest of the fallbacks), marker labels
// are placed at the first free spot around their marker (and listed in the legend when none is
// free), tick labels that would touch are thinned, and layout_problems() checks the result.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
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

/// A rectangle in px (y grows downwards).
struct Box {
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    [[nodiscard]] bool intersects(const Box& o) const {
        return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1;
    }
    [[nodiscard]] bool inside(const Box& o) const {
        return x0 >= o.x0 && x1 <= o.x1 && y0 >= o.y0 && y1 <= o.y1;
    }
};

namespace detail {

/// DejaVu Sans advance widths of ASCII 32..126 in font units (2,048 per em), read from its hmtx
/// table. Other characters count as 1,716 units, the widest of its maths signs (x, <=, ~=).
inline constexpr std::array<unsigned short, 95> dejavu_advance{
    651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716, 651,  739,  651,  690,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690,  690,  1716, 1716, 1716, 1087,
    2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604,  604,  1343, 1141, 1767, 1532, 1612,
    1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799,  690,  799,  1716, 1024,
    1024, 1255, 1300, 1126, 1300, 1260, 721,  1300, 1298, 569,  569,  1186, 569,  1995, 1298, 1253,
    1300, 1300, 842,  1067, 803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716};

/// The width in px of `s` (UTF-8) at `size` px in DejaVu Sans.
[[nodiscard]] inline double text_width(std::string_view s, double size) {
    double units = 0;
    for (unsigned char ch : s) {
        if ((ch & 0xC0) == 0x80) continue;  // a continuation byte: its character counted once
        units += ch >= 32 && ch < 127 ? dejavu_advance[ch - 32] : 1716;
    }
    return units / 2048.0 * size;
}

enum class Anchor : std::uint8_t { start, middle, end };

/// A text as drawn, and the box it covers.
struct Text {
    std::string text;
    double x = 0, y = 0;  ///< the anchor point on the baseline
    double size = 12;
    Anchor anchor = Anchor::start;
    std::string color = "#333333";
    bool halo = false;
    bool vertical = false;  ///< rotated -90 degrees about (x, y)
    [[nodiscard]] Box box() const {
        const double w = text_width(text, size) + 2;
        // DejaVu Sans: ascent 0.93 em above the baseline (accents included), descent 0.24 em.
        const double up = 0.93 * size, down = 0.24 * size;
        const double a = anchor == Anchor::start ? 0 : anchor == Anchor::middle ? w / 2 : w;
        if (vertical) return {x - up, y - w + a, x + down, y + a};
        return {x - a - 1, y - up, x - a + w, y + down};
    }
};

/// A drawn line segment (px) and whose it is, for the layout check.
struct Segment {
    Point a, b;
    double width = 1;
    std::string owner;
};

/// Whether the segment, widened by half its stroke, crosses box `r`.
[[nodiscard]] inline bool crosses(const Segment& s, const Box& r) {
    const double h = s.width / 2;
    const Box b{r.x0 - h, r.y0 - h, r.x1 + h, r.y1 + h};
    // Liang-Barsky: clip the segment to the box; it crosses when something is left.
    double t0 = 0, t1 = 1;
    const double dx = s.b.x - s.a.x, dy = s.b.y - s.a.y;
    const double p[4] = {-dx, dx, -dy, dy};
    const double q[4] = {s.a.x - b.x0, b.x1 - s.a.x, s.a.y - b.y0, b.y1 - s.a.y};
    for (int i = 0; i < 4; ++i) {
        if (p[i] == 0) {
            if (q[i] < 0) return false;
            continue;
        }
        const double t = q[i] / p[i];
        if (p[i] < 0)
            t0 = std::max(t0, t);
        else
            t1 = std::min(t1, t);
        if (t0 > t1) return false;
    }
    return true;
}

/// `s` clipped to `r`; nullopt when it lies outside.
[[nodiscard]] inline std::optional<Segment> clip(Segment s, const Box& r) {
    double t0 = 0, t1 = 1;
    const double dx = s.b.x - s.a.x, dy = s.b.y - s.a.y;
    const double p[4] = {-dx, dx, -dy, dy};
    const double q[4] = {s.a.x - r.x0, r.x1 - s.a.x, s.a.y - r.y0, r.y1 - s.a.y};
    for (int i = 0; i < 4; ++i) {
        if (p[i] == 0) {
            if (q[i] < 0) return std::nullopt;
            continue;
        }
        const double t = q[i] / p[i];
        if (p[i] < 0)
            t0 = std::max(t0, t);
        else
            t1 = std::min(t1, t);
        if (t0 > t1) return std::nullopt;
    }
    const Point a = s.a;
    s.a = {a.x + t0 * dx, a.y + t0 * dy};
    s.b = {a.x + t1 * dx, a.y + t1 * dy};
    return s;
}

/// Everything a chart draws, in px: what render() writes and layout_problems() checks.
struct Frame {
    double x0 = 0, x1 = 0, y0 = 0, y1 = 0;  ///< the plot area: left, right, bottom, top
    Scale sx, sy;
    std::vector<double> xt, yt;
    std::vector<std::string> colours;                   ///< per series
    std::vector<std::vector<std::vector<Point>>> runs;  ///< per series, its unbroken runs (px)
    std::vector<Text> texts;                            ///< every text but the legend's
    struct LegendEntry {
        std::string label;
        std::string color;
        double width = 2;
        bool dashed = false;
        bool dot = false;  ///< a marker's point, not a line
    };
    std::vector<LegendEntry> legend;
    double legend_x = 0, legend_y = 0;
    struct DrawnMarker {
        std::string color;
        std::optional<Point> point;  ///< px
        std::optional<double> vx;    ///< a vertical line at this px
        std::optional<double> hy;    ///< a horizontal line at this px
    };
    std::vector<DrawnMarker> markers;
    std::vector<Segment> segments;  ///< series, marker lines and axes, clipped to the plot area
    std::vector<Box> dots;          ///< marker points
    [[nodiscard]] Box plot() const { return {x0, y1, x1, y0}; }
    /// The legend's texts, as drawn.
    [[nodiscard]] std::vector<Text> legend_texts() const {
        std::vector<Text> out;
        double ly = legend_y;
        for (const LegendEntry& e : legend) {
            Text t;
            t.text = e.label;
            t.x = legend_x + 37;
            t.y = ly + 4;
            t.color = "#000000";
            out.push_back(t);
            ly += 20;
        }
        return out;
    }
};

/// Whether box `b` is free of the frame's lines, dots and the texts in `taken`.
[[nodiscard]] inline bool free_spot(const Frame& f, const Box& b, const std::vector<Text>& taken) {
    const Box inner{f.x0 + 2, f.y1 + 2, f.x1 - 2, f.y0 - 2};
    if (!b.inside(inner)) return false;
    for (const Segment& s : f.segments)
        if (crosses(s, b)) return false;
    for (const Box& d : f.dots)
        if (d.intersects(b)) return false;
    for (const Text& t : taken)
        if (t.box().intersects(b)) return false;
    return true;
}

/// The frame of `c` with the markers listed in `to_legend` moved to the legend.
[[nodiscard]] inline Frame frame(const LineChart& c, const std::vector<bool>& to_legend) {
    Frame f;
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
    // Scales first in data terms, to measure the tick labels that set the left margin.
    const double top = 50, bottom = c.note.empty() ? 60 : 80;
    std::vector<Frame::LegendEntry> legend;
    std::size_t next_colour = 0;
    for (const Series& s : c.series) {
        const std::string colour =
            s.color.empty() ? palette[next_colour++ % std::size(palette)] : s.color;
        f.colours.push_back(colour);
        if (!s.name.empty()) legend.push_back({s.name, colour, s.width, s.dashed, false});
    }
    for (std::size_t i = 0; i < c.markers.size(); ++i)
        if (to_legend[i] && !c.markers[i].label.empty())
            legend.push_back({c.markers[i].label, c.markers[i].color, 1.5,
                              !c.markers[i].x || !c.markers[i].y,
                              c.markers[i].x && c.markers[i].y});
    double widest_legend = 0;
    for (const auto& e : legend) widest_legend = std::max(widest_legend, text_width(e.label, 12));
    const double right =
        legend.empty() ? 30.0 : std::min(c.width / 2.0, std::max(80.0, 52.0 + widest_legend + 10));
    std::vector<double> yt_probe;
    (void)make_scale(c.y, ys, 0, 1, yt_probe);
    double widest_tick = 0;
    for (double v : yt_probe) widest_tick = std::max(widest_tick, text_width(tick_label(v), 12));
    const double left = std::max(70.0, widest_tick + 8 + 40);
    f.x0 = left;
    f.x1 = c.width - right;
    f.y0 = c.height - bottom;
    f.y1 = top;
    f.sx = make_scale(c.x, xs, f.x0, f.x1, f.xt);
    f.sy = make_scale(c.y, ys, f.y0, f.y1, f.yt);
    f.legend = legend;
    f.legend_x = f.x1 + 15;
    f.legend_y = top + 10;

    // Lines: the axes, the series' runs, the marker lines.
    const Box plot = f.plot();
    const auto add_segment = [&](Point a, Point b, double w, const std::string& owner) {
        if (const auto s = clip({a, b, w, owner}, plot)) f.segments.push_back(*s);
    };
    add_segment({f.x0, f.y0}, {f.x1, f.y0}, 1.5, "the x axis");
    add_segment({f.x0, f.y0}, {f.x0, f.y1}, 1.5, "the y axis");
    for (std::size_t i = 0; i < c.series.size(); ++i) {
        const Series& s = c.series[i];
        std::vector<std::vector<Point>> runs(1);
        for (const Point& p : s.points) {
            if (!f.sx.valid(p.x) || !f.sy.valid(p.y)) {
                if (!runs.back().empty()) runs.emplace_back();
                continue;
            }
            runs.back().push_back({f.sx(p.x), f.sy(p.y)});
        }
        for (const auto& run : runs)
            for (std::size_t k = 1; k < run.size(); ++k)
                add_segment(run[k - 1], run[k], s.width, "series '" + s.name + "'");
        f.runs.push_back(std::move(runs));
    }
    for (const Marker& m : c.markers) {
        Frame::DrawnMarker d;
        d.color = m.color;
        const bool has_x = m.x && f.sx.valid(*m.x), has_y = m.y && f.sy.valid(*m.y);
        if (m.x && m.y) {
            if (has_x && has_y) {
                d.point = Point{f.sx(*m.x), f.sy(*m.y)};
                f.dots.push_back({d.point->x - 5, d.point->y - 5, d.point->x + 5, d.point->y + 5});
            }
        } else if (has_x) {
            d.vx = f.sx(*m.x);
            add_segment({*d.vx, f.y0}, {*d.vx, f.y1}, 1.5, "marker '" + m.label + "'");
        } else if (has_y) {
            d.hy = f.sy(*m.y);
            add_segment({f.x0, *d.hy}, {f.x1, *d.hy}, 1.5, "marker '" + m.label + "'");
        }
        f.markers.push_back(d);
    }

    // Texts outside the plot: the title (shrunk to fit), axis labels, ticks (thinned where they
    // would touch), the note.
    Text title;
    title.text = c.title;
    title.x = c.width / 2.0;
    title.y = 28;
    title.anchor = Anchor::middle;
    title.color = "#000000";
    title.size = std::min(17.0, 17.0 * (c.width - 20.0) / std::max(1.0, text_width(c.title, 17)));
    f.texts.push_back(title);
    Text xl;
    xl.text = c.x.label;
    xl.x = (f.x0 + f.x1) / 2;
    xl.y = f.y0 + 42;
    xl.anchor = Anchor::middle;
    xl.size = 14;
    xl.color = "#000000";
    f.texts.push_back(xl);
    Text yl = xl;
    yl.text = c.y.label;
    yl.x = 20;
    yl.y = (f.y0 + f.y1) / 2;
    yl.vertical = true;
    f.texts.push_back(yl);
    bool any = false;
    Box last;
    for (double v : f.xt) {
        Text t;
        t.text = tick_label(v);
        t.x = f.sx(v);
        t.y = f.y0 + 18;
        t.anchor = Anchor::middle;
        const Box b = t.box();
        if (any && last.x1 + 4 > b.x0) continue;
        any = true;
        last = b;
        f.texts.push_back(t);
    }
    any = false;
    for (double v : f.yt) {  // upwards
        Text t;
        t.text = tick_label(v);
        t.x = f.x0 - 8;
        t.y = f.sy(v) + 4;
        t.anchor = Anchor::end;
        const Box b = t.box();
        if (any && b.y1 + 2 > last.y0) continue;
        any = true;
        last = b;
        f.texts.push_back(t);
    }
    if (!c.note.empty()) {
        Text n;
        n.text = c.note;
        n.x = 10;
        n.y = c.height - 10.0;
        n.size = std::min(10.0, 10.0 * (c.width - 20.0) / std::max(1.0, text_width(c.note, 10)));
        n.color = "#555555";
        f.texts.push_back(n);
    }

    // Marker labels at the first free spot around their marker, nearest first.
    for (std::size_t i = 0; i < c.markers.size(); ++i) {
        const Marker& m = c.markers[i];
        const Frame::DrawnMarker& d = f.markers[i];
        if (m.label.empty() || to_legend[i]) continue;
        std::vector<Text> tries;
        Text t;
        t.text = m.label;
        t.color = m.color;
        t.halo = true;
        if (d.point) {
            const Point p = *d.point;
            for (double r : {8.0, 14.0, 22.0, 34.0, 50.0, 70.0})
                for (int k = 0; k < 8; ++k) {
                    // Above, below and beside the point, right then left, then centred.
                    const bool centred = k >= 6, to_right = k % 2 == 0;
                    t.anchor = centred ? Anchor::middle : to_right ? Anchor::start : Anchor::end;
                    t.x = centred ? p.x : p.x + (to_right ? r : -r);
                    t.y = k < 2 || k == 6 ? p.y - r : k < 4 || k == 7 ? p.y + r + 10 : p.y + 4;
                    tries.push_back(t);
                }
        } else if (d.vx) {
            const bool rightwards = *d.vx < f.x0 + 0.6 * (f.x1 - f.x0);
            for (int side = 0; side < 2; ++side) {
                const bool to_right = (side == 0) == rightwards;
                t.anchor = to_right ? Anchor::start : Anchor::end;
                t.x = *d.vx + (to_right ? 5 : -5);
                for (double y = f.y1 + 16; y <= f.y0 - 6; y += 7) {
                    t.y = y;
                    tries.push_back(t);
                }
            }
        } else if (d.hy) {
            t.anchor = Anchor::end;
            for (double x = f.x1 - 5; x >= f.x0 + 40; x -= 12)
                for (double dy : {-5.0, 16.0}) {
                    t.x = x;
                    t.y = *d.hy + dy;
                    tries.push_back(t);
                }
        }
        std::vector<Text> placed(f.texts.begin(), f.texts.end());
        bool done = false;
        for (const Text& cand : tries)
            if (free_spot(f, cand.box(), placed)) {
                f.texts.push_back(cand);
                done = true;
                break;
            }
        if (!done) return f;  // the caller moves it to the legend (see render)
    }
    return f;
}

/// The frame of `c`, every marker label either placed clear of everything or in the legend.
[[nodiscard]] inline Frame frame(const LineChart& c) {
    std::vector<bool> to_legend(c.markers.size(), false);
    for (;;) {
        Frame f = frame(c, to_legend);
        // Which labelled markers found no spot: their label is missing from the texts.
        bool moved = false;
        for (std::size_t i = 0; i < c.markers.size() && !moved; ++i) {
            if (c.markers[i].label.empty() || to_legend[i]) continue;
            const bool placed = std::any_of(f.texts.begin(), f.texts.end(), [&](const Text& t) {
                return t.halo && t.text == c.markers[i].label;
            });
            if (!placed) {
                to_legend[i] = true;
                moved = true;
            }
        }
        if (!moved) return f;
    }
}

[[nodiscard]] inline std::string text_svg(const Text& t) {
    std::string o = "<text x=\"" + px(t.x) + "\" y=\"" + px(t.y) + "\"";
    if (t.vertical)
        o = "<text transform=\"translate(" + px(t.x) + " " + px(t.y) + ") rotate(-90)\"";
    if (t.anchor != Anchor::start)
        o +=
            std::string(" text-anchor=\"") + (t.anchor == Anchor::middle ? "middle" : "end") + "\"";
    o += " font-size=\"" + px(t.size) + "\" fill=\"" + escape(t.color) + "\"";
    if (t.halo) o += " paint-order=\"stroke\" stroke=\"#ffffff\" stroke-width=\"3\"";
    return o + ">" + escape(t.text) + "</text>\n";
}

/// The chart's elements (inside the root <svg>), its clip path named `clip_id`.
[[nodiscard]] inline std::string body(const LineChart& c, const std::string& clip_id) {
    const Frame f = frame(c);
    std::string o;
    o += "<title>" + escape(c.title) + "</title>\n";
    o += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(c.width) + "\" height=\"" +
         std::to_string(c.height) + "\" fill=\"#ffffff\"/>\n";
    // Grid.
    o += "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
    for (double v : f.xt)
        o += "<line x1=\"" + px(f.sx(v)) + "\" y1=\"" + px(f.y0) + "\" x2=\"" + px(f.sx(v)) +
             "\" y2=\"" + px(f.y1) + "\"/>\n";
    for (double v : f.yt)
        o += "<line x1=\"" + px(f.x0) + "\" y1=\"" + px(f.sy(v)) + "\" x2=\"" + px(f.x1) +
             "\" y2=\"" + px(f.sy(v)) + "\"/>\n";
    o += "</g>\n";
    // Axes.
    o += "<g stroke=\"#000000\" stroke-width=\"1.5\">\n<line x1=\"" + px(f.x0) + "\" y1=\"" +
         px(f.y0) + "\" x2=\"" + px(f.x1) + "\" y2=\"" + px(f.y0) + "\"/>\n<line x1=\"" + px(f.x0) +
         "\" y1=\"" + px(f.y0) + "\" x2=\"" + px(f.x0) + "\" y2=\"" + px(f.y1) + "\"/>\n</g>\n";
    // Series, clipped to the plot area.
    o += "<defs><clipPath id=\"" + clip_id + "\"><rect x=\"" + px(f.x0) + "\" y=\"" + px(f.y1) +
         "\" width=\"" + px(f.x1 - f.x0) + "\" height=\"" + px(f.y0 - f.y1) +
         "\"/></clipPath></defs>\n";
    o += "<g clip-path=\"url(#" + clip_id + ")\" fill=\"none\" stroke-linejoin=\"round\">\n";
    for (std::size_t i = 0; i < c.series.size(); ++i)
        for (const auto& run : f.runs[i]) {
            if (run.empty()) continue;
            std::string pts;
            for (const Point& p : run) {
                if (!pts.empty()) pts += ' ';
                pts.append(px(p.x)).append(1, ',').append(px(p.y));
            }
            o += "<polyline stroke=\"" + escape(f.colours[i]) + "\" stroke-width=\"" +
                 px(c.series[i].width) + "\"" +
                 (c.series[i].dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + pts +
                 "\"/>\n";
        }
    o += "</g>\n";
    // Markers.
    for (const Frame::DrawnMarker& m : f.markers) {
        const std::string col = escape(m.color);
        if (m.point)
            o += "<circle cx=\"" + px(m.point->x) + "\" cy=\"" + px(m.point->y) +
                 "\" r=\"5\" fill=\"" + col + "\"/>\n";
        if (m.vx)
            o += "<line x1=\"" + px(*m.vx) + "\" y1=\"" + px(f.y0) + "\" x2=\"" + px(*m.vx) +
                 "\" y2=\"" + px(f.y1) + "\" stroke=\"" + col +
                 "\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/>\n";
        if (m.hy)
            o += "<line x1=\"" + px(f.x0) + "\" y1=\"" + px(*m.hy) + "\" x2=\"" + px(f.x1) +
                 "\" y2=\"" + px(*m.hy) + "\" stroke=\"" + col +
                 "\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/>\n";
    }
    for (const Text& t : f.texts) o += text_svg(t);
    // Legend.
    double ly = f.legend_y;
    o += "<g font-size=\"12\">\n";
    for (const Frame::LegendEntry& e : f.legend) {
        if (e.dot)
            o += "<circle cx=\"" + px(f.legend_x + 15) + "\" cy=\"" + px(ly) +
                 "\" r=\"5\" fill=\"" + escape(e.color) + "\"/>\n";
        else
            o += "<line x1=\"" + px(f.legend_x) + "\" y1=\"" + px(ly) + "\" x2=\"" +
                 px(f.legend_x + 30) + "\" y2=\"" + px(ly) + "\" stroke=\"" + escape(e.color) +
                 "\" stroke-width=\"" + px(e.width) + "\"" +
                 (e.dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
        ly += 20;
    }
    for (const Text& t : f.legend_texts()) o += text_svg(t);
    o += "</g>\n";
    return o;
}

[[nodiscard]] inline std::string svg_open(int width, int height) {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" +
           std::to_string(width) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
           std::to_string(width) + " " + std::to_string(height) +
           "\" font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\">\n";
}

}  // namespace detail

/// Charts stacked top to bottom in one SVG document, each in its own panel.
struct Figure {
    std::string title;  ///< the document's <title>
    std::vector<LineChart> panels;
};

namespace detail {

/// What overlaps in frame `f` of a `width` x `height` chart (see layout_problems).
[[nodiscard]] inline std::vector<std::string> frame_problems(const Frame& f, int width,
                                                             int height) {
    std::vector<Text> texts = f.texts;
    for (const Text& t : f.legend_texts()) texts.push_back(t);
    std::vector<std::string> out;
    const Box canvas{0, 0, static_cast<double>(width), static_cast<double>(height)};
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const Box b = texts[i].box();
        const std::string what = "label '" + texts[i].text + "'";
        if (!b.inside(canvas)) out.push_back(what + " leaves the chart");
        for (std::size_t j = i + 1; j < texts.size(); ++j)
            if (b.intersects(texts[j].box()))
                out.push_back(what + " overlaps label '" + texts[j].text + "'");
        for (const Segment& s : f.segments)
            if (crosses(s, b)) out.push_back(what + " crosses " + s.owner);
        for (const Box& d : f.dots)
            if (d.intersects(b)) out.push_back(what + " covers a marker's point");
    }
    return out;
}

}  // namespace detail

/// What overlaps in `c` as drawn: each entry names a text and the text, line, point or edge it
/// touches. Empty when every label reads clear, which render()'s layout sees to.
[[nodiscard]] inline std::vector<std::string> layout_problems(const LineChart& c) {
    return detail::frame_problems(detail::frame(c), c.width, c.height);
}

/// The problems of every panel of `fig`, each prefixed with its panel's number (from 1).
[[nodiscard]] inline std::vector<std::string> layout_problems(const Figure& fig) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < fig.panels.size(); ++i)
        for (const std::string& p : layout_problems(fig.panels[i]))
            out.push_back("panel " + std::to_string(i + 1) + ": " + p);
    return out;
}

/// The chart as a standalone SVG document.
[[nodiscard]] inline std::string render(const LineChart& c) {
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + detail::svg_open(c.width, c.height) +
           detail::body(c, "plot") + "</svg>\n";
}

/// The figure as a standalone SVG document: its panels one under another, each a nested <svg>
/// of class "panel" at its offset.
[[nodiscard]] inline std::string render(const Figure& fig) {
    int width = 0, height = 0;
    for (const LineChart& c : fig.panels) {
        width = std::max(width, c.width);
        height += c.height;
    }
    std::string o =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + detail::svg_open(width, height);
    o += "<title>" + detail::escape(fig.title) + "</title>\n";
    o += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    int y = 0;
    for (std::size_t i = 0; i < fig.panels.size(); ++i) {
        const LineChart& c = fig.panels[i];
        o += "<svg class=\"panel\" x=\"0\" y=\"" + std::to_string(y) + "\" width=\"" +
             std::to_string(c.width) + "\" height=\"" + std::to_string(c.height) + "\">\n";
        o += detail::body(c, "plot" + std::to_string(i + 1));
        o += "</svg>\n";
        y += c.height;
    }
    return o + "</svg>\n";
}

/// Writes the chart or figure to `path`; InvalidInput when the file cannot be written.
template <class Chart>
requires std::is_same_v<Chart, LineChart> || std::is_same_v<Chart, Figure>
inline void write(const Chart& c, const std::string& path) {
    std::ofstream out(path, std::ios::binary);
    if (out) out << render(c);
    out.close();  // a full disk shows only when the buffer is written out
    if (!out)
        kvplan::detail::throw_field_error<InvalidInput>(path, "file", "a writable file", "none");
}

}  // namespace kvplan::svg
