// Renders an SVG in headless Chromium to a PNG and checks that the picture is not blank: several
// distinct colours, a share of non-white pixels, and saturated pixels (the coloured series).
//
//   svg_render_check FILE.svg     render FILE.svg
//   svg_render_check --sample     render a chart built here with kvplan/svg.hpp
//   svg_render_check --self-test  decode a small PNG whose pixels are known
//
// Exit 0 on success, 1 on a blank or unreadable picture, 77 when no Chromium is installed (ctest's
// SKIP_RETURN_CODE). The PNG decoder (zlib inflate, RFC 1950/1951, and PNG's scanline filters)
// is written here so that the check needs nothing beyond Chromium itself.

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
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace fs = std::filesystem;

namespace {

// ---- Inflate
// -------------------------------------------------------------------------------------

class BitReader {
   public:
    explicit BitReader(const std::vector<std::uint8_t>& d) : d_(d) {}
    unsigned bit() {
        if (pos_ >= d_.size()) throw std::runtime_error("deflate: data ends early");
        const unsigned b = (d_[pos_] >> bit_) & 1u;
        if (++bit_ == 8) {
            bit_ = 0;
            ++pos_;
        }
        return b;
    }
    unsigned bits(unsigned n) {  // LSB first
        unsigned v = 0;
        for (unsigned i = 0; i < n; ++i) v |= bit() << i;
        return v;
    }
    void align() {
        if (bit_ != 0) {
            bit_ = 0;
            ++pos_;
        }
    }
    std::uint8_t byte() {
        if (pos_ >= d_.size()) throw std::runtime_error("deflate: data ends early");
        return d_[pos_++];
    }

   private:
    const std::vector<std::uint8_t>& d_;
    std::size_t pos_ = 0;
    unsigned bit_ = 0;
};

// A canonical Huffman code decoded bit by bit: count of codes per length, symbols in code order.
struct Huffman {
    std::array<int, 16> count{};
    std::vector<int> symbols;
    explicit Huffman(const std::vector<int>& lengths) {
        for (int l : lengths) ++count[l];
        count[0] = 0;
        std::array<int, 16> offs{};
        for (int l = 1; l < 16; ++l) offs[l] = offs[l - 1] + count[l - 1];
        symbols.resize(lengths.size());
        for (std::size_t s = 0; s < lengths.size(); ++s)
            if (lengths[s] != 0) symbols[offs[lengths[s]]++] = static_cast<int>(s);
    }
    int decode(BitReader& br) const {
        int code = 0, first = 0, index = 0;
        for (int len = 1; len < 16; ++len) {
            code |= static_cast<int>(br.bit());
            const int n = count[len];
            if (code - n < first) return symbols[index + (code - first)];
            index += n;
            first = (first + n) << 1;
            code <<= 1;
        }
        throw std::runtime_error("deflate: bad Huffman code");
    }
};

constexpr std::array<int, 29> len_base{3,  4,  5,  6,   7,   8,   9,   10,  11, 13,
                                       15, 17, 19, 23,  27,  31,  35,  43,  51, 59,
                                       67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr std::array<int, 29> len_extra{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                        2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr std::array<int, 30> dist_base{
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr std::array<int, 30> dist_extra{0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                         6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

void inflate_block(BitReader& br, const Huffman& lit, const Huffman& dist,
                   std::vector<std::uint8_t>& out) {
    for (;;) {
        const int sym = lit.decode(br);
        if (sym < 256) {
            out.push_back(static_cast<std::uint8_t>(sym));
        } else if (sym == 256) {
            return;
        } else {
            const int li = sym - 257;
            if (li >= 29) throw std::runtime_error("deflate: bad length code");
            const std::size_t len = len_base[li] + br.bits(len_extra[li]);
            const int di = dist.decode(br);
            if (di >= 30) throw std::runtime_error("deflate: bad distance code");
            const std::size_t d = dist_base[di] + br.bits(dist_extra[di]);
            if (d > out.size()) throw std::runtime_error("deflate: distance too far back");
            for (std::size_t i = 0; i < len; ++i) out.push_back(out[out.size() - d]);
        }
    }
}

std::vector<std::uint8_t> zlib_inflate(const std::vector<std::uint8_t>& z) {
    if (z.size() < 2 || (z[0] & 0x0f) != 8 || ((z[0] << 8) | z[1]) % 31 != 0)
        throw std::runtime_error("zlib: bad header");
    const std::vector<std::uint8_t> body(z.begin() + 2, z.end());
    BitReader br(body);
    std::vector<std::uint8_t> out;
    for (bool last = false; !last;) {
        last = br.bit() != 0;
        const unsigned type = br.bits(2);
        if (type == 0) {
            br.align();
            const unsigned len = br.byte() | (br.byte() << 8);
            const unsigned nlen = br.byte() | (br.byte() << 8);
            if ((len ^ 0xffffu) != nlen) throw std::runtime_error("deflate: bad stored block");
            for (unsigned i = 0; i < len; ++i) out.push_back(br.byte());
        } else if (type == 1) {
            std::vector<int> l(288), d(30, 5);
            for (int i = 0; i < 288; ++i) l[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
            inflate_block(br, Huffman(l), Huffman(d), out);
        } else if (type == 2) {
            const unsigned hlit = br.bits(5) + 257, hdist = br.bits(5) + 1, hclen = br.bits(4) + 4;
            constexpr std::array<int, 19> order{16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                                11, 4,  12, 3, 13, 2, 14, 1, 15};
            std::vector<int> cl(19, 0);
            for (unsigned i = 0; i < hclen; ++i) cl[order[i]] = static_cast<int>(br.bits(3));
            const Huffman clh(cl);
            std::vector<int> lens;
            while (lens.size() < hlit + hdist) {
                const int sym = clh.decode(br);
                if (sym < 16) {
                    lens.push_back(sym);
                } else if (sym == 16) {
                    if (lens.empty()) throw std::runtime_error("deflate: repeat with no length");
                    const int prev = lens.back();
                    for (unsigned n = 3 + br.bits(2); n > 0; --n) lens.push_back(prev);
                } else {
                    const unsigned n = sym == 17 ? 3 + br.bits(3) : 11 + br.bits(7);
                    lens.insert(lens.end(), n, 0);
                }
            }
            if (lens.size() != hlit + hdist) throw std::runtime_error("deflate: lengths overrun");
            inflate_block(br, Huffman({lens.begin(), lens.begin() + hlit}),
                          Huffman({lens.begin() + hlit, lens.end()}), out);
        } else {
            throw std::runtime_error("deflate: reserved block type");
        }
    }
    return out;
}

// ---- PNG
// -----------------------------------------------------------------------------------------

struct Image {
    std::uint32_t width = 0, height = 0;
    std::vector<std::array<std::uint8_t, 4>> rgba;  // row-major
};

std::uint32_t be32(const std::uint8_t* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           p[3];
}

Image decode_png(const std::vector<std::uint8_t>& f) {
    static constexpr std::array<std::uint8_t, 8> sig{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (f.size() < 8 || !std::equal(sig.begin(), sig.end(), f.begin()))
        throw std::runtime_error("png: bad signature");
    Image img;
    int depth = 0, colour = -1, interlace = 0;
    std::vector<std::uint8_t> idat;
    for (std::size_t p = 8; p + 12 <= f.size();) {
        const std::uint32_t len = be32(&f[p]);
        const std::string type(f.begin() + p + 4, f.begin() + p + 8);
        if (p + 12 + len > f.size()) throw std::runtime_error("png: truncated chunk");
        const std::uint8_t* d = &f[p + 8];
        if (type == "IHDR") {
            img.width = be32(d);
            img.height = be32(d + 4);
            depth = d[8];
            colour = d[9];
            interlace = d[12];
        } else if (type == "IDAT") {
            idat.insert(idat.end(), d, d + len);
        } else if (type == "IEND") {
            break;
        }
        p += 12 + len;
    }
    if (depth != 8 || interlace != 0 || (colour != 0 && colour != 2 && colour != 4 && colour != 6))
        throw std::runtime_error("png: only 8-bit, non-interlaced grey/RGB/RGBA is read here");
    const std::size_t ch = colour == 0 ? 1 : colour == 2 ? 3 : colour == 4 ? 2 : 4;
    const std::size_t stride = img.width * ch;
    const std::vector<std::uint8_t> raw = zlib_inflate(idat);
    if (raw.size() < (stride + 1) * img.height) throw std::runtime_error("png: short image data");
    std::vector<std::uint8_t> cur(stride), prev(stride, 0);
    img.rgba.reserve(std::size_t{img.width} * img.height);
    for (std::uint32_t y = 0; y < img.height; ++y) {
        const std::uint8_t* row = &raw[y * (stride + 1)];
        const int filter = row[0];
        for (std::size_t i = 0; i < stride; ++i) {
            const int a = i >= ch ? cur[i - ch] : 0, b = prev[i], c = i >= ch ? prev[i - ch] : 0;
            int pred = 0;
            switch (filter) {
                case 0:
                    pred = 0;
                    break;
                case 1:
                    pred = a;
                    break;
                case 2:
                    pred = b;
                    break;
                case 3:
                    pred = (a + b) / 2;
                    break;
                case 4: {
                    const int pp = a + b - c, pa = std::abs(pp - a), pb = std::abs(pp - b),
                              pc = std::abs(pp - c);
                    pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
                    break;
                }
                default:
                    throw std::runtime_error("png: bad filter type");
            }
            cur[i] = static_cast<std::uint8_t>(row[1 + i] + pred);
        }
        for (std::uint32_t x = 0; x < img.width; ++x) {
            const std::uint8_t* px = &cur[x * ch];
            std::array<std::uint8_t, 4> v{};
            if (ch == 1 || ch == 2)
                v = {px[0], px[0], px[0], ch == 2 ? px[1] : std::uint8_t{255}};
            else
                v = {px[0], px[1], px[2], ch == 4 ? px[3] : std::uint8_t{255}};
            img.rgba.push_back(v);
        }
        std::swap(cur, prev);
    }
    return img;
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
    const fs::path png = dir / "out.png";
    const std::string cmd = "'" + chromium +
                            "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                            " --disable-background-networking --disable-component-update"
                            " --disable-sync --hide-scrollbars --user-data-dir='" +
                            (dir / "profile").string() + "' --screenshot='" + png.string() +
                            "' --window-size=800,600 'file://" + fs::absolute(svg).string() +
                            "' > '" + (dir / "chromium.log").string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    int result = 1;
    try {
        if (!fs::is_regular_file(png)) {
            const auto log = read_file(dir / "chromium.log");
            std::cerr << "chromium wrote no screenshot (exit " << rc << "); its log:\n"
                      << std::string(log.begin(), log.end()) << "\n";
        } else {
            result = check_picture(decode_png(read_file(png)));
        }
    } catch (const std::exception& e) {
        std::cerr << "cannot read the screenshot: " << e.what() << "\n";
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return result;
}

int self_test() {
    // A 3 x 2 RGB PNG written by Python's zlib (level 9, fixed Huffman), rows filtered with Sub and
    // Paeth: (255,0,0) (0,255,0) (0,0,255) / (10,20,30) (200,100,50) (255,255,255).
    const std::vector<std::uint8_t> png{
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
        0x44, 0x52, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00,
        0x00, 0x12, 0x16, 0xf1, 0x4d, 0x00, 0x00, 0x00, 0x19, 0x49, 0x44, 0x41, 0x54, 0x78,
        0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xc0, 0x08, 0xc6, 0x2c, 0xdc, 0x22, 0x72, 0x27, 0x52,
        0x45, 0xcc, 0xff, 0x33, 0x00, 0x00, 0x38, 0xb0, 0x05, 0xb9, 0x7e, 0x1d, 0xd2, 0x56,
        0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
    const Image img = decode_png(png);
    const std::vector<std::array<std::uint8_t, 4>> want{{255, 0, 0, 255},    {0, 255, 0, 255},
                                                        {0, 0, 255, 255},    {10, 20, 30, 255},
                                                        {200, 100, 50, 255}, {255, 255, 255, 255}};
    const bool ok = img.width == 3 && img.height == 2 && img.rgba == want;
    std::cout << (ok ? "PNG decoder self-test passed\n" : "PNG decoder self-test FAILED\n");
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
