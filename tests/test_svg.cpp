#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <kvplan/svg.hpp>
#include <limits>
#include <string>

#include "support/random.hpp"

using namespace kvplan::svg;

namespace {
std::size_t count(const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
}
}  // namespace

TEST_CASE("tick labels are whole numbers with separators or three significant digits", "[svg]") {
    CHECK(detail::tick_label(0) == "0");
    CHECK(detail::tick_label(1000) == "1,000");
    CHECK(detail::tick_label(131072) == "131,072");
    CHECK(detail::tick_label(-2500) == "-2,500");
    CHECK(detail::tick_label(0.25) == "0.25");
    CHECK(detail::tick_label(12.3456) == "12.3");
}

TEST_CASE("linear axes take 1-2-5 steps and start at zero when the data is close to it", "[svg]") {
    // Data 3..47 over about 6 ticks: raw step 47 / 6 = 7.8 -> 10; range widened to 0..50.
    std::vector<double> ticks;
    const detail::Scale sc = detail::make_scale(Axis{"y", false, {}, {}}, {3, 47}, 0, 100, ticks);
    CHECK(sc.lo == 0);
    CHECK(sc.hi == 50);
    CHECK(ticks == std::vector<double>{0, 10, 20, 30, 40, 50});
    CHECK(sc(25) == Approx(50));  // halfway in data is halfway in pixels
}

TEST_CASE("log axes run over whole decades, with 2 and 5 ticks when short", "[svg]") {
    // 3..700 spans 10^0..10^3 (three decades): ticks at decades only.
    std::vector<double> ticks;
    detail::Scale sc = detail::make_scale(Axis{"x", true, {}, {}}, {3, 700}, 0, 300, ticks);
    CHECK(ticks == std::vector<double>{1, 10, 100, 1000});
    CHECK(sc(10) == Approx(100));  // one decade of three is a third of 300 px
    // 3..70 spans two decades: 1 2 5 10 20 50 100.
    detail::make_scale(Axis{"x", true, {}, {}}, {3, 70}, 0, 300, ticks);
    CHECK(ticks == std::vector<double>{1, 2, 5, 10, 20, 50, 100});
}

TEST_CASE("a chart carries its title, axis labels, series, markers and escaped text", "[svg]") {
    LineChart c;
    c.title = "KV <budget> & batch";
    c.x.label = "batch (sequences)";
    c.y.label = "TPOT (ms)";
    Series s;
    s.name = "bound";
    // A NaN breaks the line in two.
    s.points = {{1, 1}, {2, 2}, {3, std::numeric_limits<double>::quiet_NaN()}, {4, 3}, {5, 4}};
    c.series = {s};
    Marker target;
    target.y = 2.5;
    target.label = "target";
    c.markers = {target};
    c.note = "source: a note";
    const std::string svg = render(c);
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(count(svg, "KV &lt;budget&gt; &amp; batch") == 2);  // <title> and the heading
    CHECK(svg.find("batch (sequences)") != std::string::npos);
    CHECK(svg.find("TPOT (ms)") != std::string::npos);
    CHECK(count(svg, "<polyline") == 2);
    CHECK(svg.find(">target</text>") != std::string::npos);
    CHECK(svg.find("source: a note") != std::string::npos);
}

TEST_CASE("writing a chart where no file can be made is invalid input", "[svg]") {
    CHECK_THROWS_WITH(write(LineChart{}, "no/such/dir/chart.svg"),
                      Catch::Contains("no/such/dir/chart.svg: file: expected a writable file"));
}

TEST_CASE("text widths follow DejaVu Sans's advances", "[svg][layout]") {
    // "1,000": four digits of 1,303 units and a comma of 651, 5,863 / 2,048 em; at 12 px 34.35 px.
    CHECK(detail::text_width("1,000", 12) == Approx(5863.0 / 2048 * 12));
    // "ms": m 1,995 + s 1,067 = 3,062 units; at 10 px 14.95 px. A multi-byte character counts once.
    CHECK(detail::text_width("ms", 10) == Approx(3062.0 / 2048 * 10));
    CHECK(detail::text_width("\xc3\x97", 12) == Approx(1716.0 / 2048 * 12));
}

TEST_CASE("a segment crosses a box when it passes through it, not when it passes by",
          "[svg][layout]") {
    const Box b{10, 10, 20, 20};
    CHECK(detail::crosses({{0, 0}, {30, 30}, 1, ""}, b));  // the diagonal
    CHECK(detail::crosses({{15, 0}, {15, 5}, 12, ""},
                          b));  // short of it, but 6 px of stroke reach it
    CHECK_FALSE(detail::crosses({{0, 25}, {30, 25}, 2, ""}, b));
    CHECK_FALSE(detail::crosses({{0, 15}, {5, 15}, 2, ""}, b));
}

namespace {

// The roofline chart's worst case: markers at the same x, a point on the bound's line, a wall and
// a knee a few pixels apart, and a horizontal target across the lines.
LineChart crowded() {
    LineChart c;
    c.title = "Llama-3-70B on 4 x h100-sxm: tokens/s against batch at 8,192 tokens";
    c.x.label = "batch (sequences)";
    c.x.log = true;
    c.y.label = "tokens/s";
    c.y.log = true;
    Series replica, per_gpu, flat;
    replica.name = "tokens/s, replica";
    per_gpu.name = "tokens/s per GPU";
    flat.name = "served past the wall";
    flat.dashed = true;
    for (double b = 1; b <= 1024; b *= 2) {
        replica.points.push_back({b, 100 * b / (1 + b / 64)});
        per_gpu.points.push_back({b, 25 * b / (1 + b / 64)});
        flat.points.push_back({b, 3000});
    }
    c.series = {replica, per_gpu, flat};
    for (double x : {64.0, 66.0, 70.0}) {
        Marker m;
        m.x = x;
        m.label = "KV wall: " + std::to_string(static_cast<int>(x)) + " sequences";
        c.markers.push_back(m);
    }
    Marker at;
    at.x = 64;
    at.y = 100 * 64 / 2.0;
    at.label = "batch 64: 3,200 tokens/s";
    Marker target;
    target.y = 1000;
    target.label = "target 1,000 tokens/s";
    c.markers.push_back(at);
    c.markers.push_back(target);
    return c;
}

}  // namespace

TEST_CASE("labels clear every line and each other, even when markers crowd", "[svg][layout]") {
    const LineChart c = crowded();
    CHECK(layout_problems(c).empty());
    // Every label is drawn: in the plot or, when no spot is free, in the legend.
    const std::string svg = render(c);
    for (const Marker& m : c.markers)
        CHECK(svg.find(">" + m.label + "</text>") != std::string::npos);
}

TEST_CASE("the layout check finds a label laid over a line, a label or the edge", "[svg][layout]") {
    const LineChart c = crowded();
    detail::Frame f = detail::frame(c);
    REQUIRE(detail::frame_problems(f, c.width, c.height).empty());
    // A label across the middle of the plot, where the series run.
    detail::Text over;
    over.text = "over the lines";
    over.x = (f.x0 + f.x1) / 2;
    over.anchor = detail::Anchor::middle;
    for (double y = f.y1 + 12; y < f.y0; y += 4) {
        over.y = y;
        f.texts.push_back(over);
    }
    const auto problems = detail::frame_problems(f, c.width, c.height);
    CHECK(std::any_of(problems.begin(), problems.end(), [](const std::string& p) {
        return p.find("label 'over the lines' crosses series") != std::string::npos;
    }));
    CHECK(std::any_of(problems.begin(), problems.end(), [](const std::string& p) {
        return p.find("overlaps label 'over the lines'") != std::string::npos;
    }));
    detail::Frame g = detail::frame(c);
    detail::Text off;
    off.text = "off the edge";
    off.x = c.width - 5.0;
    off.y = 5;
    g.texts.push_back(off);
    CHECK(detail::frame_problems(g, c.width, c.height) ==
          std::vector<std::string>{"label 'off the edge' leaves the chart"});
}

TEST_CASE("random charts lay out without an overlap", "[svg][layout][property]") {
    KVPLAN_TEST_RNG(rng, 15);
    const auto u = [&rng] { return rng.real(0, 1); };
    for (int n = 0; n < 150; ++n) {
        LineChart c;
        c.title = "chart " + std::to_string(n);
        c.x.label = "x (units)";
        c.y.label = "y (units)";
        c.x.log = n % 2 == 0;
        c.y.log = n % 3 == 0;
        const int series = 1 + n % 4;
        for (int s = 0; s < series; ++s) {
            Series line;
            line.name = "series " + std::to_string(s);
            for (double x = 1; x <= 4096; x *= 2) line.points.push_back({x, 1 + 1000 * u()});
            c.series.push_back(line);
        }
        const int markers = n % 6;
        for (int k = 0; k < markers; ++k) {
            Marker m;
            if (k % 3 != 1) m.x = std::pow(2.0, 12 * u());
            if (k % 3 != 0) m.y = 1 + 1000 * u();
            m.label = "marker " + std::to_string(k) + ": " + std::to_string(n * 37 % 1000);
            c.markers.push_back(m);
        }
        INFO("chart " << n);
        CHECK(layout_problems(c).empty());
    }
}

TEST_CASE("a figure stacks its panels and checks each", "[svg][layout]") {
    Figure fig;
    fig.title = "two panels";
    fig.panels = {crowded(), crowded()};
    fig.panels[1].height = 400;
    const std::string svg = render(fig);
    CHECK(svg.find("height=\"900\"") != std::string::npos);
    CHECK(count(svg, "<svg class=\"panel\"") == 2);
    CHECK(svg.find("<svg class=\"panel\" x=\"0\" y=\"500\"") != std::string::npos);
    // Each panel clips to its own plot area.
    CHECK(svg.find("clip-path=\"url(#plot1)\"") != std::string::npos);
    CHECK(svg.find("clip-path=\"url(#plot2)\"") != std::string::npos);
    CHECK(layout_problems(fig).empty());
}
