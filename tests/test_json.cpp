// json.hpp: how every reader opens a file (size limit first) and refuses unknown keys.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <kvplan/json.hpp>
#include <string>

using namespace kvplan;
namespace fs = std::filesystem;

namespace {

/// A fresh folder for one test case, removed when it ends.
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name)
        : path(fs::temp_directory_path() /
               ("kvplan-json-" + name + "-" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string error_of(const fs::path& file, std::uint64_t limit = max_json_file_bytes) {
    try {
        (void)read_json_file(file, JsonNumbers::strict, limit);
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("the JSON file limit is 1 MiB", "[json][limits]") {
    // 2^20 bytes: three hundred times the largest bundled file (a GPU spec of about 3 KB).
    STATIC_REQUIRE(max_json_file_bytes == 1'048'576);
}

TEST_CASE("a 300 MB file is refused by its size, before any of it is read", "[json][limits]") {
    TempDir dir("large");
    const fs::path big = dir.path / "config.json";
    // A sparse file of 300 MB (resize_file is truncate(2)): nothing is written, and reading it
    // whole would take 300 MB plus what parsing its spaces costs. Refusing it without reading is
    // the only way this test stays instant.
    { std::ofstream(big) << "{}"; }
    fs::resize_file(big, 300'000'000);
    CHECK(error_of(big) == big.string() +
                               ": file: expected a JSON file of at most 1 MiB (1048576 bytes), as "
                               "configs are kilobytes, found a file of 300000000 bytes");
}

TEST_CASE("a file of exactly the limit is read, one byte more is not", "[json][limits]") {
    TempDir dir("edge");
    const fs::path at = dir.path / "at.json", over = dir.path / "over.json";
    // "{}" followed by spaces up to the limit: whitespace is valid JSON padding.
    {
        std::ofstream(at) << "{}" << std::string(1'048'576 - 2, ' ');
        std::ofstream(over) << "{}" << std::string(1'048'576 - 1, ' ');
    }
    REQUIRE(fs::file_size(at) == 1'048'576);
    REQUIRE(fs::file_size(over) == 1'048'577);
    CHECK(read_json_file(at).is_object());
    CHECK_THAT(error_of(over), Catch::Contains("found a file of 1048577 bytes"));
    // The limit is a parameter: 16 bytes refuses "{}" plus 15 spaces (17 bytes).
    CHECK_THAT(error_of(over, 16), Catch::Contains("at most 16 bytes, as configs"));
}

TEST_CASE("a file without an end is read no further than the limit", "[json][limits]") {
    // /dev/zero has no size to check and never ends: it is read up to the limit + 1 and refused,
    // which a reader that slurped the whole stream would never finish.
    if (!fs::exists("/dev/zero")) return;
    CHECK(error_of("/dev/zero") ==
          "/dev/zero: file: expected a JSON file of at most 1 MiB (1048576 bytes), as configs are "
          "kilobytes, found more than 1048576 bytes");
}

TEST_CASE("a missing file or a folder is named as such", "[json]") {
    TempDir dir("missing");
    CHECK_THAT(error_of(dir.path / "nope.json"), Catch::EndsWith("expected an existing JSON file, "
                                                                 "found no such file"));
    CHECK_THAT(error_of(dir.path), Catch::EndsWith("expected a JSON file, found a directory"));
}

TEST_CASE("only_keys names an unknown key, its path and the nearest known key", "[json][keys]") {
    const Json doc = Json::parse(R"({"outer": {"tp": 4, "tensor_parallel": 8}})");
    const JsonReader outer = JsonReader(doc, "p.json").object("outer");
    CHECK_THROWS_WITH(
        outer.only_keys({"tp", "pp"}, "the replica", {{"tensor_parallel", "tp"}}),
        "p.json: outer.tensor_parallel: expected a key of the replica (tp, pp), found the unknown "
        "key 'tensor_parallel'; did you mean 'tp'?");
    // Nothing near: the known keys are listed and no guess is made.
    const Json other = Json::parse(R"({"zzz": 1})");
    CHECK_THROWS_WITH(JsonReader(other, "q.json").only_keys({"tp", "pp"}, "the replica"),
                      "q.json: zzz: expected a key of the replica (tp, pp), found the unknown key "
                      "'zzz'");
    // Every key known: nothing thrown.
    CHECK_NOTHROW(JsonReader(doc, "p.json").only_keys({"outer"}, "a policy"));
}

TEST_CASE("an unknown key is shown on one line and cut to 40 characters", "[json][keys]") {
    Json doc = Json::object();
    doc["bad\nkey"] = 1;
    CHECK_THROWS_WITH(JsonReader(doc, "p.json").only_keys({"tp"}, "x"),
                      Catch::Contains("'bad?key'") && !Catch::Contains("\n"));
    Json longer = Json::object();
    longer[std::string(1000, 'k')] = 1;
    CHECK_THROWS_WITH(JsonReader(longer, "p.json").only_keys({"tp"}, "x"),
                      Catch::Contains("'" + std::string(37, 'k') + "...'"));
}
