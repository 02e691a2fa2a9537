// json_position.hpp: the line and column of a value in a JSON text, by its path.

#include <catch2/catch.hpp>
#include <kvplan/json_position.hpp>
#include <string>
#include <vector>

using namespace kvplan;

namespace {

const std::string config =
    "{\n"                                             // line 1
    "  \"architectures\": [\"LlamaForCausalLM\"],\n"  // 2
    "  \"hidden_size\": 8192,\n"                      // 3
    "  \"rope_scaling\": {\"factor\": 8.0,\n"         // 4
    "    \"rope_type\": \"llama3\"},\n"               // 5
    "  \"text_config\": {\n"                          // 6
    "    \"num_key_value_heads\": 16\n"               // 7
    "  },\n"                                          // 8
    "  \"requirements\": [\n"                         // 9
    "    {\"kind\": \"min_context\"},\n"              // 10
    "    [1, 2],\n"                                   // 11
    "    {\"kind\": \"max_tpot\"}\n"                  // 12
    "  ]\n"                                           // 13
    "}\n";

std::optional<std::uint32_t> line(std::string_view text, std::string_view path) {
    const auto at = json_position(text, path);
    if (!at) return std::nullopt;
    return at->line;
}

}  // namespace

TEST_CASE("a key's line and column are where the key starts", "[json_position]") {
    CHECK(json_position(config, "hidden_size") == TextPosition{3, 3});
    CHECK(line(config, "text_config.num_key_value_heads") == 7u);
    CHECK(json_position(config, "text_config.num_key_value_heads") == TextPosition{7, 5});
    // A nested key on the line of its object, and the next one on its own.
    CHECK(json_position(config, "rope_scaling.factor") == TextPosition{4, 20});
    CHECK(line(config, "rope_scaling.rope_type") == 5u);
}

TEST_CASE("an array element's position is where its value starts", "[json_position]") {
    CHECK(json_position(config, "requirements[0]") == TextPosition{10, 5});
    CHECK(line(config, "requirements[1]") == 11u);
    CHECK(line(config, "requirements[2]") == 12u);
    CHECK(line(config, "requirements[1][1]") == 11u);
    CHECK(line(config, "requirements[2].kind") == 12u);
    CHECK(line(config, "architectures[0]") == 2u);
}

TEST_CASE("a path the text does not have finds nothing", "[json_position]") {
    CHECK_FALSE(line(config, "num_key_value_heads"));  // only under text_config
    CHECK_FALSE(line(config, "requirements[3]"));
    CHECK_FALSE(line(config, "hidden_size.x"));
    CHECK_FALSE(line(config, "text_config.num_key_value_heads.deeper"));
    // A key inside a string value is no key.
    CHECK_FALSE(line(R"({"a": "{\"b\": 1}"})", "b"));
}

TEST_CASE("keys are matched as decoded, escapes and all", "[json_position]") {
    const std::string text = "{\"a\\\"b\": 1,\n \"caf\\u00e9\": 2,\n \"\\ud83d\\ude00\": 3}";
    const std::vector<std::string> quote{"a\"b"}, e_acute{"caf\xC3\xA9"}, emoji{"\xF0\x9F\x98\x80"};
    CHECK(json_position(text, std::span<const std::string>(quote))->line == 1);
    CHECK(json_position(text, std::span<const std::string>(e_acute))->line == 2);
    CHECK(json_position(text, std::span<const std::string>(emoji))->line == 3);
    // A key holding a '.' needs the span form.
    const std::vector<std::string> dotted{"a.b"};
    CHECK(json_position(R"({"a": {"b": 1}, "a.b": 2})", std::span<const std::string>(dotted)) ==
          TextPosition{1, 17});
}

TEST_CASE("the empty path is the document, after a byte order mark", "[json_position]") {
    CHECK(json_position("\n  {}", std::span<const std::string>()) == TextPosition{2, 3});
    CHECK(json_position("\xEF\xBB\xBF{\"a\": 1}", "a") == TextPosition{1, 2});
    CHECK_FALSE(json_position("   ", std::span<const std::string>()));
}

TEST_CASE("text that is not JSON finds nothing and never throws", "[json_position]") {
    for (const char* bad : {"", "{", "{\"a\"", "{\"a\" 1}", "[1,,2]", "{\"a\": }", "{1: 2}",
                            "{\"a\": 1 \"b\": 2}", "\"\\u12\"", "{\"\\q\": 1}"})
        CHECK_NOTHROW(json_position(bad, "b"));
    CHECK_FALSE(line("{\"a\": 1 \"b\": 2}", "b"));
    CHECK_FALSE(line("[1,,2]", "[2]"));
    // Before the damage, a path is still found.
    CHECK(line("{\"a\": 1,\n\"b\": [", "b") == 2u);
}

TEST_CASE("a deep document is scanned without recursion", "[json_position]") {
    // 100,000 nested arrays: a recursive scanner would exhaust the stack.
    const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
    CHECK_FALSE(line(deep, "x"));
    const std::string deep_key =
        "{\"x\": " + std::string(100'000, '[') + std::string(100'000, ']') + ",\n\"y\": 1}";
    CHECK(line(deep_key, "y") == 2u);
}
