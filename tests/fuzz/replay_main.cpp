// Runs a harness over files, with the ordinary compiler and no fuzzing engine: every regression
// input a fuzzer once crashed on, and the seed corpus, replayed in ctest.
//   usage: <replay> <file or folder>...

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int replay(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", file.string().c_str());
        return 1;
    }
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    try {
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: unexpected exception: %s\n", file.string().c_str(), e.what());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int failures = 0, inputs = 0;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path arg = argv[i];
        if (std::filesystem::is_directory(arg)) {
            for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
                if (e.is_regular_file() && e.path().filename() != "README.md") {
                    failures += replay(e.path());
                    ++inputs;
                }
        } else {
            failures += replay(arg);
            ++inputs;
        }
    }
    std::printf("replayed %d inputs, %d failed\n", inputs, failures);
    return failures == 0 && inputs > 0 ? 0 : 1;
}
