// trace/reading.hpp: JSON Lines and CSV read alike; a file read in chunks reads as its whole text;
// quoting as RFC 4180 writes it.

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <kvplan/trace/reading.hpp>
#include <string>

#include "support/random.hpp"

using namespace kvplan;
namespace fs = std::filesystem;

namespace {

void check_same(const Trace& a, const Trace& b) {
    REQUIRE(a.requests.size() == b.requests.size());
    CHECK(a.has_arrivals == b.has_arrivals);
    for (std::size_t i = 0; i < a.requests.size(); ++i) {
        INFO("request " << i);
        CHECK(a.requests[i].prompt_tokens == b.requests[i].prompt_tokens);
        CHECK(a.requests[i].output_tokens == b.requests[i].output_tokens);
        CHECK(a.requests[i].arrival == b.requests[i].arrival);
    }
}

/// A file of `text` under the temporary directory, removed with the object.
struct TempFile {
    fs::path path;
    TempFile(const std::string& name, const std::string& text)
        : path(fs::temp_directory_path() / name) {
        std::ofstream(path, std::ios::binary) << text;
    }
    ~TempFile() { fs::remove(path); }
};

}  // namespace

TEST_CASE("a JSON Lines trace reads as the same trace in CSV", "[trace][reading][property]") {
    // Random rows in the Azure trace's form (date-times to 100 ns), written both ways, in both
    // formats with date-times and with numeric seconds: the same requests, to the last bit.
    KVPLAN_TEST_RNG(rng, 1);
    const auto tokens = [&rng] { return rng.between(0, 20000); };
    const auto sec = [&rng] { return rng.between(0, 59); };
    const auto frac = [&rng] { return rng.between(0, 9'999'999); };
    for (int round = 0; round < 20; ++round) {
        std::string csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
        std::string jsonl, csv_s = "arrival_s,prompt_tokens,output_tokens\n", jsonl_s;
        for (int i = 0; i < 500; ++i) {
            char stamp[40];
            std::snprintf(stamp, sizeof stamp, "2023-11-%02d %02d:%02d:%02d.%07d", 16 + i / 200,
                          i % 24, sec(), sec(), frac());
            const int p = tokens(), o = tokens() / 20;
            csv += std::string(stamp) + "," + std::to_string(p) + "," + std::to_string(o) + "\n";
            jsonl += "{\"TIMESTAMP\": \"" + std::string(stamp) +
                     "\", \"ContextTokens\": " + std::to_string(p) +
                     ", \"GeneratedTokens\": " + std::to_string(o) + "}\n";
            const std::string at = std::to_string(i * 0.25 + frac() * 1e-7);
            csv_s += at + "," + std::to_string(p) + "," + std::to_string(o) + "\n";
            jsonl_s += "{\"arrival_s\": " + at + ", \"prompt_tokens\": " + std::to_string(p) +
                       ", \"output_tokens\": " + std::to_string(o) + "}\n";
        }
        check_same(parse_trace(jsonl, "t.jsonl"), parse_trace(csv, "t.csv"));
        check_same(parse_trace(jsonl_s, "s.jsonl"), parse_trace(csv_s, "s.csv"));
    }
}

TEST_CASE("a trace file read in chunks reads as its whole text", "[trace][reading]") {
    // 100,000 CSV rows (3.4 MB: several 1 MiB chunks, lines cut at their edges) with CRLF line
    // breaks, blank lines, and no line break after the last row.
    std::string csv = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n";
    for (int i = 0; i < 100000; ++i) {
        csv += "2023-11-16 18:" + std::to_string(10 + i / 6000) + ":" +
               std::to_string(10 + i / 100 % 50) + "." + std::to_string(1000000 + i) + "," +
               std::to_string(100 + i % 977) + "," + std::to_string(i % 301) + "\r\n";
        if (i % 9999 == 0) csv += "\r\n";
    }
    csv.resize(csv.size() - 2);
    const TempFile f("kvplan-test-trace-chunks.csv", csv);
    const Trace from_file = load_trace(f.path.string());
    CHECK(from_file.source == f.path.string());
    check_same(from_file, parse_trace(csv, "whole"));

    // A JSON Lines record longer than a chunk (a 3 MB nested field) between two short ones.
    const std::string jsonl =
        "{\"prompt_tokens\": 1, \"output_tokens\": 2, \"time\": 0}\n"
        "{\"prompt_tokens\": 3, \"hash_ids\": [\"" +
        std::string(3'000'000, 'x') +
        "\"], \"output_tokens\": 4, \"time\": 1}\n"
        "{\"prompt_tokens\": 5, \"output_tokens\": 6, \"time\": 2.5}";
    const TempFile g("kvplan-test-trace-long.jsonl", jsonl);
    const Trace long_line = load_trace(g.path.string());
    REQUIRE(long_line.requests.size() == 3);
    CHECK(long_line.requests[1].total_tokens() == 7);
    CHECK(long_line.requests[2].arrival.in(seconds) == 2.5);

    // An error far past the first chunk names its line: the header, 100,000 rows and 11 blank
    // lines come before line 100,013.
    const TempFile h("kvplan-test-trace-bad.csv", csv + "\r\n12,x5\r\n");
    CHECK_THROWS_WITH(load_trace(h.path.string()),
                      Catch::Contains(h.path.string() + ":100013: record: expected 3 fields"));
}

TEST_CASE("quoted CSV fields are read as RFC 4180 writes them", "[trace][reading]") {
    const Trace t = parse_trace_csv(
        "\"ContextTokens\",\"GeneratedTokens\",note\n"
        "\"12\",3,\"a, \"\"quoted\"\" note\"\n"
        "7,\"8\",\n",
        "q.csv");
    REQUIRE(t.requests.size() == 2);
    CHECK(t.requests[0].prompt_tokens == 12);
    CHECK(t.requests[0].output_tokens == 3);
    CHECK(t.requests[1].total_tokens() == 15);
    // An escaped quote is shown unescaped in an error; an unclosed quote is named.
    CHECK_THROWS_WITH(parse_trace_csv("prompt_tokens,output_tokens\n\"x\"\"5\",1\n", "e.csv"),
                      Catch::Contains("e.csv:2: prompt_tokens") && Catch::Contains("found 'x\"5'"));
    CHECK_THROWS_WITH(parse_trace_csv("prompt_tokens,output_tokens\n1,\"2\n", "u.csv"),
                      Catch::Contains("u.csv:2: record: expected a closing '\"'"));
}

TEST_CASE("JSON Lines keys and values with escapes are decoded", "[trace][reading]") {
    // "out\put_tokens" decodes to output_tokens; an escaped quote inside a skipped field.
    const Trace t = parse_trace_jsonl(
        "{\"prompt_tokens\": \"12\", \"out\\put_tokens\": 3, \"note\": \"a \\\"b\\\" \\\\ }\"}\n",
        "e.jsonl");
    REQUIRE(t.requests.size() == 1);
    CHECK(t.requests[0].prompt_tokens == 12);
    CHECK(t.requests[0].output_tokens == 3);
}

TEST_CASE("a token count too large for an integer is bad input, not undefined behaviour",
          "[trace][reading][errors]") {
    // 1e41 passes as a double with no fraction; converting it to a 64-bit count would be
    // undefined, so the range is checked first (a fuzzer found this).
    CHECK_THROWS_WITH(parse_trace_csv("prompt_tokens,output_tokens\n1e41,1\n", "big.csv"),
                      Catch::Contains("big.csv:2: prompt_tokens: expected a whole number of "
                                      "tokens >= 0, found '1e41'"));
    CHECK(parse_trace_csv("prompt_tokens,output_tokens\n512.0,1e3\n", "f.csv")
              .requests[0]
              .total_tokens() == 1512);
}

TEST_CASE("arrival times further apart than a double can hold are bad input",
          "[trace][reading][errors]") {
    // -1e308 s and 1e308 s are each a number, but not 2e308 s apart in a double.
    CHECK_THROWS_WITH(
        parse_trace_csv("arrival,prompt_tokens,output_tokens\n-1e308,1,1\n1e308,1,1\n", "far.csv"),
        Catch::Contains("far.csv: arrival time: expected arrival times a finite "
                        "number of seconds apart"));
}
