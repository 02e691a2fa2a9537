#include <catch2/catch.hpp>
#include <cmath>
#include <kvplan/svg.hpp>
#include <limits>
#include <string>

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
