// Renders an SVG in headless Chromium to a PNG at the SVG's own size and checks that the picture
// is not blank: several distinct colours, a share of non-white pixels, and saturated pixels (the
// coloured series). A figure of several panels (<svg class="panel" ...>) is checked panel by panel.
//
//   svg_render_check FILE.svg     render FILE.svg
//   svg_render_check --sample     render a chart built here with kvplan/svg.hpp
//   svg_render_check --self-test  decode PNGs whose pixels are known, and judge known pictures
//
// Exit 0 on success, 1 on a blank or unreadable picture, 77 when no Chromium is installed (ctest's
// SKIP_RETURN_CODE). PNGs are read and written with libpng (Debian's libpng-dev).

#include <png.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <kvplan/svg.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace fs = std::filesystem;

namespace {

// ---- PNG
// -----------------------------------------------------------------------------------------

struct Image {
    std::uint32_t width = 0, height = 0;
    std::vector<std::array<std::uint8_t, 4>> rgba;  ///< row by row
};

/// The pixels of a PNG as 8-bit RGBA, decoded by libpng's simplified API (png_image): every
/// colour type, bit depth and interlacing Chromium may write. Throws with libpng's message.
Image decode_png(const std::vector<std::uint8_t>& bytes) {
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    if (png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()) == 0)
        throw std::runtime_error(std::string("libpng: ") + png.message);
    png.format = PNG_FORMAT_RGBA;
    std::vector<std::uint8_t> buffer(PNG_IMAGE_SIZE(png));
    if (png_image_finish_read(&png, nullptr, buffer.data(), 0, nullptr) == 0) {
        const std::string message = png.message;
        png_image_free(&png);
        throw std::runtime_error("libpng: " + message);
    }
    Image img;
    img.width = png.width;
    img.height = png.height;
    img.rgba.resize(std::size_t{png.width} * png.height);
    for (std::size_t i = 0; i < img.rgba.size(); ++i)
        for (std::size_t c = 0; c < 4; ++c) img.rgba[i][c] = buffer[4 * i + c];
    return img;
}

/// `img` written as a PNG by libpng (8-bit RGBA).
std::vector<std::uint8_t> encode_png(const Image& img) {
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    png.width = img.width;
    png.height = img.height;
    png.format = PNG_FORMAT_RGBA;
    std::vector<std::uint8_t> pixels;
    for (const auto& p : img.rgba) pixels.insert(pixels.end(), p.begin(), p.end());
    png_alloc_size_t size = 0;
    if (png_image_write_to_memory(&png, nullptr, &size, 0, pixels.data(), 0, nullptr) == 0)
        throw std::runtime_error(std::string("libpng: ") + png.message);
    std::vector<std::uint8_t> out(size);
    if (png_image_write_to_memory(&png, out.data(), &size, 0, pixels.data(), 0, nullptr) == 0)
        throw std::runtime_error(std::string("libpng: ") + png.message);
    out.resize(size);
    return out;
}

std::vector<std::uint8_t> read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---- Rendering
// -----------------------------------------------------------------------------------

std::string find_chromium() {
    if (const char* e = std::getenv("KVPLAN_CHROMIUM"); e && *e) return e;
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
        std::size_t start = 0;
        while (start <= dirs.size()) {
            const std::size_t end = std::min(dirs.find(':', start), dirs.size());
            const fs::path cand = fs::path(dirs.substr(start, end - start)) / name;
            std::error_code ec;
            if (fs::is_regular_file(cand, ec)) return cand.string();
            start = end + 1;
        }
    }
    return {};
}

int check_picture(const Image& img) {
    std::unordered_set<std::uint32_t> colours;
    std::size_t non_white = 0, saturated = 0;
    for (const auto& p : img.rgba) {
        colours.insert((std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                       (std::uint32_t{p[2]} << 8) | p[3]);
        if (p[0] < 245 || p[1] < 245 || p[2] < 245) ++non_white;
        const int hi = std::max({p[0], p[1], p[2]}), lo = std::min({p[0], p[1], p[2]});
        if (hi - lo > 80) ++saturated;
    }
    const std::size_t n = img.rgba.size();
    std::cout << "rendered " << img.width << " x " << img.height << " px: " << colours.size()
              << " distinct colours, " << non_white << " non-white pixels ("
              << 100.0 * static_cast<double>(non_white) / static_cast<double>(n) << " %), "
              << saturated << " saturated\n";
    // A blank page is one colour; text alone is grey. Axes, labels and coloured lines give many
    // colours (anti-aliasing), at least 0.5 % of the page drawn, and saturated series pixels.
    const bool ok = colours.size() >= 16 && non_white * 200 >= n && saturated >= 100;
    std::cout << (ok ? "not blank\n" : "BLANK or nearly so\n");
    return ok ? 0 : 1;
}

/// A script run on the chart in Chromium: every text's box as laid out with the real font,
/// checked against the other texts, every drawn line (the grid aside) and the page.
constexpr const char* layout_script = R"js(
// Real glyph boxes from Chromium's layout, against each other, the drawn lines and the page.
const problems = [];
const texts = [...document.querySelectorAll('svg text')];
const rects = texts.map(t => t.getBoundingClientRect());
const page = document.querySelector('svg').getBoundingClientRect();
const segs = [];
const inGrid = el => el.parentElement && el.parentElement.getAttribute('stroke') === '#e0e0e0';
for (const el of document.querySelectorAll('svg polyline, svg line')) {
  if (inGrid(el)) continue;
  const m = el.getScreenCTM();
  const w = parseFloat(el.getAttribute('stroke-width') || (el.parentElement.getAttribute('stroke-width') || '1'));
  const pt = (x, y) => { const p = el.ownerSVGElement.createSVGPoint(); p.x = x; p.y = y; return p.matrixTransform(m); };
  let pts = [];
  if (el.tagName === 'polyline') for (const p of el.points) pts.push(pt(p.x, p.y));
  else pts = [pt(el.x1.baseVal.value, el.y1.baseVal.value), pt(el.x2.baseVal.value, el.y2.baseVal.value)];
  for (let i = 1; i < pts.length; ++i) segs.push({a: pts[i - 1], b: pts[i], w: w});
}
const crosses = (s, r) => {
  const h = s.w / 2, x0 = r.left - h, x1 = r.right + h, y0 = r.top - h, y1 = r.bottom + h;
  let t0 = 0, t1 = 1;
  const dx = s.b.x - s.a.x, dy = s.b.y - s.a.y;
  const p = [-dx, dx, -dy, dy], q = [s.a.x - x0, x1 - s.a.x, s.a.y - y0, y1 - s.a.y];
  for (let i = 0; i < 4; ++i) {
    if (p[i] === 0) { if (q[i] < 0) return false; continue; }
    const t = q[i] / p[i];
    if (p[i] < 0) t0 = Math.max(t0, t); else t1 = Math.min(t1, t);
    if (t0 > t1) return false;
  }
  return true;
};
for (let i = 0; i < texts.length; ++i) {
  const r = rects[i], name = JSON.stringify(texts[i].textContent);
  if (r.left < page.left || r.right > page.right || r.top < page.top || r.bottom > page.bottom)
    problems.push(name + ' leaves the page');
  for (let j = i + 1; j < texts.length; ++j) {
    const o = rects[j];
    if (r.left < o.right && o.left < r.right && r.top < o.bottom && o.top < r.bottom)
      problems.push(name + ' overlaps ' + JSON.stringify(texts[j].textContent));
  }
  for (const s of segs) if (crosses(s, r)) { problems.push(name + ' crosses a line'); break; }
}
const out = document.createElement('pre');
out.id = 'kvplan-layout';
out.textContent = 'LAYOUT ' + texts.length + ' texts, ' + segs.length + ' segments, ' +
                  problems.length + ' problems\n' + problems.join('\n') + '\nEND';
document.body.appendChild(out);
)js";

/// The chart's layout as Chromium draws it: 0 when no text overlaps another, crosses a line or
/// leaves the page, 1 otherwise (each problem printed).
int check_layout(const std::string& chromium, const std::string& doc, const fs::path& dir) {
    const fs::path html = dir / "layout.html";
    {
        std::ofstream out(html);
        const std::size_t svg_start = doc.find("<svg");
        out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head>"
               "<body style=\"margin:0\">\n"
            << doc.substr(svg_start == std::string::npos ? 0 : svg_start) << "<script>"
            << layout_script << "</script></body></html>\n";
    }
    const fs::path dump = dir / "layout.txt";
    const std::string cmd = "'" + chromium +
                            "' --headless --no-sandbox --disable-gpu --no-first-run"
                            " --disable-background-networking --disable-component-update"
                            " --disable-sync --user-data-dir='" +
                            (dir / "profile-layout").string() + "' --dump-dom 'file://" +
                            html.string() + "' > '" + dump.string() + "' 2> /dev/null";
    (void)std::system(cmd.c_str());
    const auto bytes = read_file(dump);
    const std::string text(bytes.begin(), bytes.end());
    const std::string tag = "<pre id=\"kvplan-layout\">";
    std::size_t at = text.find(tag);
    if (at != std::string::npos) at += tag.size();
    const std::size_t end = at == std::string::npos ? at : text.find("\nEND", at);
    if (at == std::string::npos || end == std::string::npos) {
        std::cerr << "chromium ran no layout check\n";
        return 1;
    }
    const std::string report = text.substr(at, end - at);
    std::cout << report << "\n";
    return report.find(" 0 problems") != std::string::npos ? 0 : 1;
}

int render_and_check(const fs::path& svg) {
    const std::string chromium = find_chromium();
    if (chromium.empty()) {
        std::cout << "chromium is not installed: skipped\n";
        return 77;
    }
    if (!fs::is_regular_file(svg)) {
        std::cerr << svg << ": no such SVG\n";
        return 1;
    }
    std::string tmpl = (fs::temp_directory_path() / "kvplan-render-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
        std::cerr << "cannot make a temporary directory\n";
        return 1;
    }
    const fs::path dir = tmpl;
    // The page at the SVG's own size, and the panels' bands within it.
    const auto text = read_file(svg);
    const std::string doc(text.begin(), text.end());
    std::smatch root;
    int width = 800, height = 600;
    if (std::regex_search(doc, root,
                          std::regex("<svg[^>]* width=\"([0-9]+)\" height=\"([0-9]+)\""))) {
        width = std::stoi(root[1]);
        height = std::stoi(root[2]);
    }
    std::vector<std::pair<std::uint32_t, std::uint32_t>> bands;  // y, height
    const std::regex panel(
        "<svg class=\"panel\" x=\"0\" y=\"([0-9]+)\" width=\"[0-9]+\" height=\"([0-9]+)\"");
    for (auto it = std::sregex_iterator(doc.begin(), doc.end(), panel);
         it != std::sregex_iterator(); ++it)
        bands.emplace_back(std::stoul((*it)[1]), std::stoul((*it)[2]));
    if (bands.empty()) bands.emplace_back(0, height);
    const fs::path png = dir / "out.png";
    const std::string cmd = "'" + chromium +
                            "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                            " --disable-background-networking --disable-component-update"
                            " --disable-sync --hide-scrollbars --user-data-dir='" +
                            (dir / "profile").string() + "' --screenshot='" + png.string() +
                            "' --window-size=" + std::to_string(width) + "," +
                            std::to_string(height) + " 'file://" + fs::absolute(svg).string() +
                            "' > '" + (dir / "chromium.log").string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    int result = 1;
    try {
        if (!fs::is_regular_file(png)) {
            const auto log = read_file(dir / "chromium.log");
            std::cerr << "chromium wrote no screenshot (exit " << rc << "); its log:\n"
                      << std::string(log.begin(), log.end()) << "\n";
        } else {
            const Image img = decode_png(read_file(png));
            result = 0;
            for (std::size_t i = 0; i < bands.size(); ++i) {
                const auto [y, h] = bands[i];
                if (bands.size() > 1) std::cout << "panel " << i + 1 << ": ";
                Image band;
                band.width = img.width;
                band.height = std::min<std::uint32_t>(h, img.height > y ? img.height - y : 0);
                for (std::uint32_t r = y; r < y + band.height; ++r)
                    band.rgba.insert(band.rgba.end(), img.rgba.begin() + std::size_t{r} * img.width,
                                     img.rgba.begin() + std::size_t{r + 1} * img.width);
                if (band.rgba.empty() || check_picture(band) != 0) result = 1;
            }
        }
    } catch (const std::exception& e) {
        std::cerr << "cannot read the screenshot: " << e.what() << "\n";
    }
    try {
        if (check_layout(chromium, doc, dir) != 0) result = 1;
    } catch (const std::exception& e) {
        std::cerr << "cannot check the layout: " << e.what() << "\n";
        result = 1;
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return result;
}

int self_test() {
    bool ok = true;
    const auto expect = [&](bool cond, const char* what) {
        std::cout << (cond ? "ok:     " : "FAILED: ") << what << "\n";
        ok = ok && cond;
    };
    // A 3 x 2 RGB PNG written by Python's zlib (level 9, fixed Huffman), rows filtered with Sub and
    // Paeth: (255,0,0) (0,255,0) (0,0,255) / (10,20,30) (200,100,50) (255,255,255). Read as RGBA,
    // each pixel gains an opaque alpha.
    const std::vector<std::uint8_t> png{
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
        0x44, 0x52, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00,
        0x00, 0x12, 0x16, 0xf1, 0x4d, 0x00, 0x00, 0x00, 0x19, 0x49, 0x44, 0x41, 0x54, 0x78,
        0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xc0, 0x08, 0xc6, 0x2c, 0xdc, 0x22, 0x72, 0x27, 0x52,
        0x45, 0xcc, 0xff, 0x33, 0x00, 0x00, 0x38, 0xb0, 0x05, 0xb9, 0x7e, 0x1d, 0xd2, 0x56,
        0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
    const Image small = decode_png(png);
    const std::vector<std::array<std::uint8_t, 4>> want{{255, 0, 0, 255},    {0, 255, 0, 255},
                                                        {0, 0, 255, 255},    {10, 20, 30, 255},
                                                        {200, 100, 50, 255}, {255, 255, 255, 255}};
    expect(small.width == 3 && small.height == 2 && small.rgba == want,
           "a PNG from another encoder decodes to its known pixels");

    // A picture as the check sees it: white, then with a red diagonal and a grey ramp drawn.
    Image page;
    page.width = page.height = 200;
    page.rgba.assign(200 * 200, {255, 255, 255, 255});
    expect(check_picture(page) == 1, "a blank page is judged blank");
    for (std::uint32_t y = 0; y < 200; ++y)
        for (std::uint32_t x = 0; x < 200; ++x) {
            auto& p = page.rgba[y * 200 + x];
            if (x / 4 == y / 4)
                p = {220, 30, 30, 255};  // 4 px wide: 800 saturated pixels
            else if (y >= 180)
                p = {static_cast<std::uint8_t>(x), static_cast<std::uint8_t>(x),
                     static_cast<std::uint8_t>(x), 255};  // 200 greys
        }
    // Through libpng and back: the same pixels, and the same verdict.
    const Image back = decode_png(encode_png(page));
    expect(back.width == 200 && back.height == 200 && back.rgba == page.rgba,
           "a PNG written by libpng reads back pixel for pixel");
    expect(check_picture(back) == 0, "a drawn page is judged not blank");

    bool refused = false;
    try {
        (void)decode_png({0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00});
    } catch (const std::runtime_error&) {
        refused = true;
    }
    expect(refused, "a truncated PNG is an error, not a picture");
    std::cout << (ok ? "PNG self-test passed\n" : "PNG self-test FAILED\n");
    return ok ? 0 : 1;
}

fs::path write_sample_chart() {
    using namespace kvplan::svg;
    LineChart c;
    c.title = "Sample: y = x and y = x^2";
    c.x.label = "x (units)";
    c.x.log = true;
    c.y.label = "y (units)";
    c.y.log = true;
    Series a, b;
    a.name = "x";
    b.name = "x^2";
    b.dashed = true;
    for (double x = 1; x <= 512; x *= 2) {
        a.points.push_back({x, x});
        b.points.push_back({x, x * x});
    }
    c.series = {a, b};
    Marker point, line;
    point.x = 64.0;
    point.y = 4096.0;
    point.label = "a point";
    line.x = 8.0;
    line.label = "x = 8";
    c.markers = {point, line};
    const fs::path p = fs::temp_directory_path() / "kvplan-sample-chart.svg";
    write(c, p.string());
    return p;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc != 2) {
            std::cerr << "usage: svg_render_check FILE.svg | --sample | --self-test\n";
            return 1;
        }
        const std::string arg = argv[1];
        if (arg == "--self-test") return self_test();
        if (arg == "--sample") {
            const fs::path p = write_sample_chart();
            const int rc = render_and_check(p);
            std::error_code ec;
            fs::remove(p, ec);
            return rc;
        }
        return render_and_check(arg);
    } catch (const std::exception& e) {
        std::cerr << "svg_render_check: " << e.what() << "\n";
        return 1;
    }
}
