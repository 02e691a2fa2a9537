// json.hpp: how every reader opens a file (size limit first) and refuses unknown keys.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <kvplan/json.hpp>
#include <limits>
#include <string>
#include <vector>

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

TEST_CASE("one parser: nesting to 64 is read, 65 is refused", "[json][limits]") {
    STATIC_REQUIRE(max_json_depth == 64);
    // 64 arrays, one inside the other: the deepest input a reader takes.
    const std::string at = std::string(64, '[') + std::string(64, ']');
    CHECK(parse_json_text(at, "at.json").is_array());
    const std::string over = std::string(65, '[') + std::string(65, ']');
    CHECK_THROWS_WITH(parse_json_text(over, "over.json"),
                      "over.json: (document): expected objects and arrays nested at most 64 deep, "
                      "found deeper nesting");
    // Objects count as arrays do: {"a": {"a": ... 65 deep.
    std::string objects;
    for (int i = 0; i < 65; ++i) objects += "{\"a\": ";
    objects += "1" + std::string(65, '}');
    CHECK_THROWS_WITH(parse_json_text(objects, "o.json"), Catch::Contains("at most 64 deep"));
}

TEST_CASE("one parser: a key twice is refused at its JSON path", "[json][keys]") {
    CHECK_THROWS_WITH(parse_json_text(R"({"a": {"b": [0, {"c": 1, "c": 2}]}})", "d.json"),
                      "d.json: a.b[1].c: expected each key once in an object (a reader would "
                      "take the last), found the key 'c' a second time");
    // The same key in two objects is two keys.
    CHECK(parse_json_text(R"({"a": {"c": 1}, "b": {"c": 1}})", "ok.json")["b"]["c"] == 1);
}

TEST_CASE("one parser: bytes after the document, a NUL, and no bytes quoted", "[json]") {
    CHECK_THROWS_WITH(parse_json_text("{\"a\": 1}\n {\"secret\": 2}", "t.json"),
                      "t.json: (document): expected valid JSON, found line 2, column 2: syntax "
                      "error while parsing value - unexpected '{'; expected end of input");
    // nlohmann stops at a NUL as at the end of the text; it is refused where it stands.
    const std::string nul = std::string("{\"a\": 1}\n ") + '\0' + "{\"b\": 2}";
    CHECK_THROWS_WITH(parse_json_text(nul, "n.json"),
                      "n.json: (document): expected valid JSON, found a NUL byte at line 2, "
                      "column 2");
    // An invalid literal: nlohmann says "last read: 'root:x'"; the message does not.
    CHECK_THROWS_WITH(parse_json_text("root:x:0:0", "p.json"),
                      !Catch::Contains("root") && Catch::Contains("line 1, column 1"));
    // Python's literals still read as the doubles Python reads.
    const Json py = parse_json_text("[Infinity, -Infinity]", "py.json", JsonNumbers::python);
    CHECK(py[0].get<double>() == std::numeric_limits<double>::infinity());
    CHECK(py[1].get<double>() == -std::numeric_limits<double>::infinity());
}

TEST_CASE("a file path with a control character is refused before any system call", "[json]") {
    const std::string path = std::string("dir") + '\0' + "/../../etc/passwd";
    CHECK_THROWS_WITH(read_json_file(fs::path(path)),
                      "dir?/../../etc/passwd: file: expected a path without control characters, "
                      "found \"dir?/../../etc/passwd\" (a NUL at byte 3)");
}

TEST_CASE("the fields two documents differ in, in key order, without recursion",
          "[json][changes]") {
    const Json a =
        Json::parse(R"({"a": 1, "n": {"x": 1, "y": [1, 2]}, "gone": {"k": 1}, "e": {}})");
    const Json b = Json::parse(R"({"a": 1, "n": {"x": 2, "y": [1, 2], "z": null}, "new": 3})");
    const std::vector<JsonFieldChange> c = json_field_changes(a, b);
    REQUIRE(c.size() == 5);
    // e: an empty object gone, whole; gone.k: removed; n.x: 1 -> 2; n.z: added; new: added.
    CHECK((c[0].steps == std::vector<std::string>{"e"}));
    CHECK((*c[0].before == Json::object() && c[0].after == nullptr));
    CHECK((c[1].steps == std::vector<std::string>{"gone", "k"}));
    CHECK((c[2].steps == std::vector<std::string>{"n", "x"}));
    CHECK((*c[2].before == 1 && *c[2].after == 2));
    CHECK((c[3].steps == std::vector<std::string>{"n", "z"}));
    CHECK((c[3].before == nullptr && c[3].after->is_null()));
    CHECK((c[4].steps == std::vector<std::string>{"new"}));
    CHECK(json_field_changes(a, a).empty());
    // 10,000 objects deep (built in code, past what the parser takes): walked, not recursed.
    Json deep = 1, deeper = 2;
    for (int i = 0; i < 10'000; ++i) {
        deep = Json{{"k", std::move(deep)}};
        deeper = Json{{"k", std::move(deeper)}};
    }
    const auto far = json_field_changes(deep, deeper);
    REQUIRE(far.size() == 1);
    CHECK(far[0].steps.size() == 10'000);
}
