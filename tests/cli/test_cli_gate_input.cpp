// The CI gate under attack, input side: files a pull request controls, each ending in one line
// and exit 2 or 3 within seconds and a bounded address space. Every run goes through `timeout 20`
// and `prlimit --as` (768 MiB of address space; not under the sanitizers), so a hang ends in 124
// and a runaway allocation in a failure, rather than in a stuck or swapping test run. A FIFO's
// writer holds none of the runner's pipes, so a kvplan that never opens the FIFO fails the test
// instead of leaving it waiting for the writer's output.

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;

// The sanitizers reserve terabytes of address space for their shadow memory: under them, only
// the time is bounded.
#ifdef KVPLAN_TEST_SANITIZED
const std::string bounded = "timeout 20";
#else
const std::string bounded = "timeout 20 prlimit --as=805306368";
#endif

/// A fresh folder for one test case, removed when it ends.
struct Scratch {
    fs::path path;
    explicit Scratch(const std::string& name)
        : path(std::string(KVPLAN_TEST_BINARY_DIR) + "/gate_" + std::to_string(getpid()) + "_" +
               name) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~Scratch() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    [[nodiscard]] std::string quoted(const std::string& name) const {
        std::string q = "'";
        q.append((path / name).string()).append("'");
        return q;
    }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(path / name, std::ios::binary) << text;
    }
};

/// One line on stderr, "kvplan: " first, nothing on stdout.
void check_one_line(const CliRun& r, int code) {
    CHECK(r.code == code);
    CHECK(r.out.empty());
    REQUIRE(!r.err.empty());
    CHECK(r.err.rfind("kvplan: ", 0) == 0);
    CHECK(r.err.find('\n') == r.err.size() - 1);
}

/// Llama-3-8B's sizes as a config.json, with `extra` appended inside the object.
std::string config(const std::string& extra = "") {
    return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
"num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
"intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
"torch_dtype": "bfloat16")" +
           extra + "}";
}

const std::string policy_tail =
    R"("requirements": [{"kind": "max_kv_bytes_per_token", "KiB": 128}]})";

}  // namespace

TEST_CASE("a path with a NUL or a control character in a policy is refused unread",
          "[cli][gate][paths]") {
    Scratch dir("nul");
    fs::create_directories(dir.path / "sub");
    // "sub\0/../../.." passed the containment check as "sub" and was opened as the normalised
    // whole: any file on the runner. Now the path is refused as written, and the message shows
    // the path (NUL as '?'), never the file it led to.
    dir.write("model.json", R"({"schema": "kvplan-policy/1",
"model": "sub\u0000/../../../../../../../../etc/passwd", "replica": {"gpu": "h100-sxm"}, )" +
                                policy_tail);
    dir.write("gpu.json", R"({"schema": "kvplan-policy/1", "model": "llama-3-8b",
"replica": {"gpu": "sub/\u0000/../../../../../../../../etc/hostname"}, )" +
                              policy_tail);
    dir.write("tab.json", R"({"schema": "kvplan-policy/1", "model": "sub\tx/config.json",
"replica": {"gpu": "h100-sxm"}, )" +
                              policy_tail);
    for (const auto& [file, field] : {std::pair<std::string, std::string>{"model.json", "model"},
                                      {"gpu.json", "replica.gpu"},
                                      {"tab.json", "model"}}) {
        INFO(file);
        const CliRun r = run_kvplan("check --policy " + dir.quoted(file), bounded);
        check_one_line(r, 3);
        CHECK_THAT(r.err, Catch::StartsWith("kvplan: invalid input: " + (dir.path / file).string() +
                                            ": " + field +
                                            ": expected a bundled id or a path inside the "
                                            "policy's folder, found \"sub") &&
                              Catch::EndsWith("a path with a NUL or another control character\n"));
        CHECK_THAT(r.err, !Catch::Contains("root:"));
    }
}

TEST_CASE("a config nested 40,000 deep ends in one line, for check --baseline and diff",
          "[cli][gate][json]") {
    Scratch dir("deep");
    // 80,000 brackets: under the 1 MiB limit, 625 times the 64 levels read.
    const std::string deep = ", \"x\": " + std::string(40'000, '[') + std::string(40'000, ']');
    dir.write("deep.json", config(deep));
    dir.write("deep2.json", config(deep + ", \"y\": 1"));
    const std::string expected = "kvplan: invalid input: " + (dir.path / "deep.json").string() +
                                 ": (document): expected objects and arrays nested at most 64 "
                                 "deep, found deeper nesting\n";
    const CliRun diff =
        run_kvplan("diff " + dir.quoted("deep.json") + " " + dir.quoted("deep2.json"), bounded);
    check_one_line(diff, 3);
    CHECK(diff.err == expected);
    const CliRun check =
        run_kvplan("check --policy " + data_file("cli/policy_regressions.json") + " --model " +
                       dir.quoted("deep.json") + " --baseline " + dir.quoted("deep2.json"),
                   bounded);
    check_one_line(check, 3);
    CHECK(check.err == expected);
}

TEST_CASE("a key twice, bytes after the document or a NUL in it are refused", "[cli][gate][json]") {
    Scratch dir("strict");
    // The last hidden_size would win while a reviewer reads the first.
    dir.write("dup.json", config(", \"hidden_size\": 8192"));
    dir.write("after.json", config() + " {\"hidden_size\": 8192}");
    // nlohmann ends the text at a NUL: what follows was ignored.
    dir.write("nul.json", config() + std::string(1, '\0') + "{\"hidden_size\": 8192}");
    dir.write("policy.json", R"({"schema": "kvplan-policy/1", "model": "llama-3-8b",
"replica": {"gpu": "h100-sxm"}, "replica": {"gpu": "b200"}, )" +
                                 policy_tail);
    const std::vector<std::pair<std::string, std::string>> runs{
        {"size --model " + dir.quoted("dup.json"),
         ": hidden_size: expected each key once in an object (a reader would take the last), "
         "found the key 'hidden_size' a second time\n"},
        {"size --model " + dir.quoted("after.json"), ": (document): expected valid JSON, found "},
        {"size --model " + dir.quoted("nul.json"),
         ": (document): expected valid JSON, found a NUL byte at line 4, column 27\n"},
        {"check --policy " + dir.quoted("policy.json"),
         ": replica: expected each key once in an object (a reader would take the last), found "
         "the key 'replica' a second time\n"}};
    for (const auto& [args, tail] : runs) {
        INFO(args);
        const CliRun r = run_kvplan(args, bounded);
        check_one_line(r, 3);
        CHECK_THAT(r.err, Catch::Contains(tail));
    }
    // The bytes after the document are not quoted (nlohmann's "last read: '...'").
    const CliRun after = run_kvplan("size --model " + dir.quoted("after.json"), bounded);
    CHECK_THAT(after.err, !Catch::Contains("last read") && !Catch::Contains("8192"));
}

TEST_CASE("a stream without an end is refused at its kind's limit, naming the file",
          "[cli][gate][limits]") {
    if (!fs::exists("/dev/zero")) return;
    // Each reader stops one byte past its limit (input_limits.hpp) under a 768 MiB address space.
    const std::string m = " --model llama-3-8b --gpu h100-sxm";
    const std::vector<std::pair<std::string, std::string>> runs{
        {"trace /dev/zero" + m,
         "/dev/zero:1: line: expected a line of at most 16 MiB (16777216 bytes)"},
        {"calibrate /dev/zero" + m,
         "/dev/zero: file: expected a vLLM log of at most 64 MiB (67108864 bytes)"},
        {"calibrate --bench /dev/zero" + m,
         "/dev/zero: file: expected a vLLM benchmark result of at most 64 MiB (67108864 bytes)"},
        {"fit --profile /dev/zero" + m,
         "/dev/zero: file: expected a calibration profile of at most 1 MiB (1048576 bytes)"},
        {"check --policy /dev/zero",
         "/dev/zero: file: expected a JSON file of at most 1 MiB (1048576 bytes)"},
        {"size --model /dev/zero", "expected a JSON file of at most 16 MiB (16777216 bytes)"}};
    for (const auto& [args, message] : runs) {
        INFO(args);
        const CliRun r = run_kvplan(args, bounded);
        check_one_line(r, 3);
        CHECK_THAT(r.err, Catch::Contains(message));
    }
}

TEST_CASE("a trace line past 16 MiB is refused at its line, one at the limit is read",
          "[cli][gate][limits]") {
    Scratch dir("trace");
    // Row 2: a count of 16 MiB - 2 digits, ",2": exactly 16 MiB, read (and refused as a count).
    // Row 2 one digit longer: 16 MiB + 1 bytes, refused as a line.
    const std::size_t limit = 16 * 1024 * 1024;
    dir.write("at.csv", "prompt_tokens,output_tokens\n" + std::string(limit - 2, '1') + ",2\n");
    dir.write("long.csv", "prompt_tokens,output_tokens\n" + std::string(limit - 1, '1') + ",2\n");
    const CliRun at = run_kvplan("trace " + dir.quoted("at.csv") + " --model llama-3-8b", bounded);
    check_one_line(at, 3);
    CHECK_THAT(at.err, Catch::Contains("at.csv:2: ") && !Catch::Contains("line: expected a line"));
    const CliRun r = run_kvplan("trace " + dir.quoted("long.csv") + " --model llama-3-8b", bounded);
    check_one_line(r, 3);
    CHECK(r.err == "kvplan: invalid input: " + (dir.path / "long.csv").string() +
                       ":2: line: expected a line of at most 16 MiB (16777216 bytes), as a "
                       "request is a few fields, found a longer one\n");
}

TEST_CASE("a named pipe is opened once and read", "[cli][gate][fifo]") {
    Scratch dir("fifo");
    // One request of 100 + 20 tokens through a FIFO: the trace was opened once to look for the
    // Azure header and again to read it, and the second open waited for a writer that had gone.
    const fs::path fifo = dir.path / "trace.csv";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const CliRun r =
        run_kvplan("trace " + dir.quoted("trace.csv") + " --model llama-3-8b --format json",
                   "(exec >/dev/null 2>&1; printf 'prompt_tokens,output_tokens\\n100,20\\n' > " +
                       dir.quoted("trace.csv") + " &); " + bounded);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("\"requests\": 1") || Catch::Contains("\"requests\":1"));
    // A policy through a FIFO: read once, its lines found in the same text.
    const fs::path pipe = dir.path / "policy.json";
    REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
    const CliRun p = run_kvplan(
        "check --policy " + dir.quoted("policy.json"),
        "(exec >/dev/null 2>&1; printf '%s' '{\"schema\": \"kvplan-policy/1\", \"model\": "
        "\"llama-3-8b\", \"replica\": "
        "{\"gpu\": \"h100-sxm\"}, \"requirements\": [{\"kind\": \"max_kv_bytes_per_token\", "
        "\"KiB\": 128}]}' > " +
            dir.quoted("policy.json") + " &); " + bounded);
    // Llama-3-8B: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B = 128 KiB per token, at
    // the bound: the check passes.
    CHECK(p.code == 0);
    CHECK_THAT(p.out, Catch::Contains("PASS"));
}

TEST_CASE("a head_dim derived past 32 bits and a block count past 64 bits of tokens are refused",
          "[cli][gate][widths]") {
    Scratch dir("widths");
    // hidden_size 2^33 over 1 head: a head_dim of 8,589,934,592, which 32 bits held as 0.
    dir.write("wide.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
"hidden_size": 8589934592, "num_attention_heads": 1, "num_hidden_layers": 1,
"intermediate_size": 1, "vocab_size": 1, "max_position_embeddings": 8})");
    const CliRun r = run_kvplan("size --model " + dir.quoted("wide.json"), bounded);
    check_one_line(r, 3);
    CHECK(r.err == "kvplan: invalid input: " + (dir.path / "wide.json").string() +
                       ": hidden_size: expected at most 4294967295 x the 1 heads (hidden_size / "
                       "heads is the head_dim, a 32-bit size), found 8589934592\n");
    // 2^64 - 1 blocks x 8,192 tokens / 512 blocks per request: about 2^64 x 16 tokens, which
    // printed "KV capacity 0 tokens" beside FITS.
    const CliRun blocks = run_kvplan(
        "fit --model llama-3-8b --gpu h100-sxm --num-gpu-blocks-override 18446744073709551615",
        bounded);
    check_one_line(blocks, 3);
    CHECK_THAT(blocks.err, Catch::Contains("vLLM's KV token count (18446744073709551615 blocks, "
                                           "--num-gpu-blocks-override) exceeds 2^64 - 1 tokens"));
}

#ifdef KVPLAN_STRACE
TEST_CASE("check opens the files a policy names once each, and nothing outside them and configs/",
          "[cli][gate][paths]") {
    Scratch dir("opened");
    // A policy naming a model folder and a GPU spec beside it, against a baseline given by path:
    // the shape of a pull request's files.
    fs::create_directories(dir.path / "our-8b");
    dir.write("our-8b/config.json", config());
    dir.write("base.json", config());
    // H100 SXM's spec under the id its file name gives.
    std::ifstream spec(std::string(KVPLAN_CONFIG_DIR) + "/gpus/h100-sxm.json");
    std::string text{std::istreambuf_iterator<char>(spec), {}};
    const std::string id = "\"id\": \"h100-sxm\"";
    REQUIRE(text.find(id) != std::string::npos);
    text.replace(text.find(id), id.size(), "\"id\": \"gpu\"");
    dir.write("gpu.json", text);
    dir.write("policy.json", R"({"schema": "kvplan-policy/1", "model": "our-8b",
"replica": {"gpu": "gpu.json"}, )" +
                                 policy_tail);
    const std::string trace = (dir.path / "opened.txt").string();
    const TracedRun t = run_kvplan_traced(
        "check --policy " + dir.quoted("policy.json") + " --baseline " + dir.quoted("base.json"),
        trace);
    const CliRun& r = t.run;
    // 128 KiB per token, at the bound, on both.
    REQUIRE(r.code == 0);
    const fs::path root = fs::weakly_canonical(dir.path);
    const fs::path configs = fs::weakly_canonical(KVPLAN_CONFIG_DIR);
    const std::set<fs::path> named{root / "policy.json", root / "our-8b" / "config.json",
                                   root / "gpu.json", root / "base.json"};
    // The files outside the bundled configs/: the ones the policy names, each opened once.
    std::map<fs::path, int> opens;
    for (const auto& [f, n] : t.opens) {
        const bool bundled = f.string().rfind(configs.string() + "/", 0) == 0 || f == configs;
        if (!bundled) opens[f] = n;
    }
    for (const auto& [f, n] : opens) {
        INFO(f.string());
        CHECK(named.count(f) == 1);
        CHECK(n == 1);
    }
    CHECK(opens.size() == named.size());
}
#endif
