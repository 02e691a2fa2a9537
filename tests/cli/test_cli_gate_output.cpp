// kvplan check as a CI gate under attack, its output side: a policy that states thousands of
// replicas or requirements is refused in a moment; names that hold line breaks or workflow
// commands cannot forge a command in any output; an empty flag value is a usage error; output
// that cannot be written is exit 3.

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "app.hpp"
#include "cli_runner.hpp"
#include "report.hpp"

using nlohmann::json;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A file in the test binary's folder, unique to this process, removed at the end.
struct ScratchFile {
    std::string path;
    explicit ScratchFile(const std::string& name)
        : path(std::string(KVPLAN_TEST_BINARY_DIR) + "/gate_" + std::to_string(getpid()) + "_" +
               name) {}
    ~ScratchFile() { std::remove(path.c_str()); }
    void write(const std::string& text) const { std::ofstream(path, std::ios::binary) << text; }
    [[nodiscard]] std::string quoted() const { return "'" + path + "'"; }
};

/// A policy on `replicas` replicas of 4 x H100 with `requirements` copies of `requirement`, each
/// named (unless `unnamed`: the smallest file).
json policy(std::size_t replicas, std::size_t requirements,
            const json& requirement = {{"kind", "max_kv_bytes_per_token"}, {"KiB", 320}},
            bool unnamed = false) {
    json p = {{"schema", "kvplan-policy/1"},
              {"model", "llama-3-70b"},
              {"replicas", json::array()},
              {"requirements", json::array()}};
    for (std::size_t i = 0; i < replicas; ++i) {
        p["replicas"].push_back({{"gpu", "h100-sxm"}, {"tp", 4}});
        if (!unnamed) p["replicas"].back()["name"] = "r" + std::to_string(i);
    }
    for (std::size_t i = 0; i < requirements; ++i) {
        p["requirements"].push_back(requirement);
        if (!unnamed) p["requirements"].back()["name"] = "q" + std::to_string(i);
    }
    return p;
}

#ifdef KVPLAN_TEST_SANITIZED
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif

/// A shell prefix that caps kvplan's address space at 256 MiB (not under AddressSanitizer, which
/// reserves terabytes of it): a policy that needed gigabytes fails as std::bad_alloc instead.
std::string memory_cap() { return sanitized ? "" : "ulimit -v 262144;"; }

/// Seconds `f` takes.
template <class F>
double seconds_of(F&& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("a policy of 20,000 replicas or requirements is refused in a moment, naming the limit",
          "[cli][check][limits]") {
    // Before the limits, 20,000 replicas (a 261 KB file) took 66 s and over 3 GB before
    // std::bad_alloc, and 20,000 requirements 47 s: the replica names were compared pair by pair
    // and every requirement judged on every replica. Each file here is under 1 MiB; whichever
    // limit refuses it first, the refusal is one line naming the file.
    const ScratchFile replicas("replicas.json"), requirements("requirements.json");
    const json light = {{"kind", "max_kv_bytes_per_token"}, {"KiB", 320}};
    replicas.write(policy(20000, 1, light, true).dump());
    requirements.write(policy(1, 20000, light, true).dump());
    for (const ScratchFile* f : {&replicas, &requirements}) {
        CliRun r;
        const double took =
            seconds_of([&] { r = run_kvplan("check --policy " + f->quoted(), memory_cap()); });
        INFO(r.err);
        CHECK(r.code == 3);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::StartsWith("kvplan: invalid input: " + f->path + ": "));
        CHECK(r.err.find('\n') == r.err.size() - 1);
        CHECK(took < 10.0);
    }
    // Within the file size limit, the count limits are what refuse them.
    if (std::filesystem::file_size(requirements.path) <= 1048576) {
        CHECK_THAT(run_kvplan("check --policy " + replicas.quoted()).err,
                   Catch::EndsWith(": replicas: expected at most 32 replicas (a policy's limit), "
                                   "found 20000 replicas\n"));
        CHECK_THAT(run_kvplan("check --policy " + requirements.quoted()).err,
                   Catch::EndsWith(": requirements: expected at most 128 requirements (a "
                                   "policy's limit), found 20000 requirements\n"));
    }
}

TEST_CASE("a policy is judged up to its limits and refused one past them", "[cli][check][limits]") {
    const ScratchFile at("at.json"), past("past.json"), fixture("f.json");
    // 32 replicas x 32 requirements = 1,024 checks, every limit reached: judged, each check met
    // (Llama-3-70B's KV per token is 2 x 8 kv heads x 128 head dim x 80 layers x 2 B = 320 KiB).
    at.write(policy(32, 32).dump());
    const CliRun ok = run_kvplan("check --policy " + at.quoted() + " --format json", memory_cap());
    REQUIRE(ok.code == 0);
    const json j = json::parse(ok.out);
    CHECK(j["requirements"].size() == 32 * 32);
    CHECK(j["verdict"] == "PASS: all 1024 checks met (32 requirements on 32 replicas)");
    // One requirement more: 32 x 33 = 1,056 checks.
    past.write(policy(32, 33).dump());
    const CliRun no = run_kvplan("check --policy " + past.quoted(), memory_cap());
    CHECK(no.code == 3);
    CHECK(no.err == "kvplan: invalid input: " + past.path +
                        ": requirements: expected at most 1024 checks, replicas x requirements (a "
                        "policy's limit), found 32 replicas x 33 requirements = 1056\n");
    // 33 replicas, one past the limit, and 129 requirements.
    fixture.write(policy(33, 1).dump());
    CHECK_THAT(run_kvplan("check --policy " + fixture.quoted()).err,
               Catch::EndsWith("replicas: expected at most 32 replicas (a policy's limit), found "
                               "33 replicas\n"));
    fixture.write(policy(1, 129).dump());
    CHECK_THAT(run_kvplan("check --policy " + fixture.quoted()).err,
               Catch::EndsWith("requirements: expected at most 128 requirements (a policy's "
                               "limit), found 129 requirements\n"));
}

TEST_CASE("replica names are told apart by hashing, as pair by pair they were",
          "[cli][check][limits]") {
    const ScratchFile file("names.json");
    json p = policy(3, 1);
    p["replicas"][2]["name"] = "r0";
    file.write(p.dump());
    const CliRun r = run_kvplan("check --policy " + file.quoted());
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::EndsWith("replicas[2].name: expected a name no other replica has, "
                                      "found \"r0\", the name of replicas[0]\n"));
    // Unnamed replicas of one GPU and layout share a default name, and take their paths.
    for (json& each : p["replicas"]) each.erase("name");
    file.write(p.dump());
    const CliRun d = run_kvplan("check --policy " + file.quoted() + " --format json");
    REQUIRE(d.code == 0);
    const json j = json::parse(d.out);
    CHECK_THAT(j["requirements"][2]["replica"].get<std::string>(),
               Catch::EndsWith(" (replicas[2])"));
}

TEST_CASE("a comma-separated list takes at most 64 items, and compare at most 1024 rows",
          "[cli][limits]") {
    const auto list = [](const std::string& item, int n) {
        std::string s = item;
        for (int i = 1; i < n; ++i) s += "," + item;
        return s;
    };
    // 2,000 GPUs in one --gpu took 6 s; each is judged.
    const CliRun gpus = run_kvplan("compare --model llama-3-8b --gpu " + list("h100", 2000));
    CHECK(gpus.code == 2);
    CHECK(gpus.err ==
          "kvplan: error: --gpu: expected a comma-separated list of at most 64 items, found '2000 "
          "items'\n");
    for (const std::string& args :
         {"plan --model llama-3-8b --context 8k --gpu " + list("h100", 65),
          "plan --model llama-3-8b --context 8k --gpu h100 --kv-dtype " + list("fp8", 65),
          "roofline --model llama-3-8b --gpu h100 --batch " + list("1", 65)}) {
        const CliRun r = run_kvplan(args);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("expected a comma-separated list of at most 64 items, "
                                          "found '65 items'"));
    }
    // 64 GPUs x 17 models = 1,088 rows, past the 1,024; 64 GPUs alone, the longest list, are
    // judged.
    const CliRun rows =
        run_kvplan("compare --model " + list("llama-3-8b", 17) + " --gpu " + list("h100", 64));
    CHECK(rows.code == 2);
    CHECK_THAT(rows.err, Catch::Contains("--model: expected at most 1,024 rows (models x GPUs x KV "
                                         "dtypes x weight formats), found '17 x 64 x 1 x 1 = "
                                         "1,088'"));
    const CliRun ok =
        run_kvplan("compare --model llama-3-8b --gpu " + list("h100", 64) + " --format json");
    REQUIRE(ok.code == 0);
    CHECK(json::parse(ok.out)["rows"].size() == 64);
}

TEST_CASE("tracing a changed config.json judges at most 2048 checks again",
          "[cli][check][limits]") {
    // Each changed field is traced by judging every check again with that field reverted: 22
    // fields x 96 checks (32 replicas x 3 requirements) = 2,112 checks, past the 2,048.
    const std::string base =
        std::string(KVPLAN_SOURCE_DIR) + "/examples/ci/pr/base/our-70b/config.json";
    json config = json::parse(read_file(base));
    for (int i = 0; i < 22; ++i) config["added_" + std::to_string(i)] = i;
    const ScratchFile head("config.json"), file("trace.json");
    head.write(config.dump(2));
    file.write(policy(32, 3).dump());
    const std::string check = "check --policy " + file.quoted() + " --model " + head.quoted() +
                              " --baseline '" + base + "'";
    CliRun r;
    const double took = seconds_of([&] { r = run_kvplan(check); });
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::EndsWith("note: the baseline's config.json differs in 22 fields, too "
                                      "many to judge each again on the 96 checks (at most 2,048 "
                                      "checks judged again): no field is traced to the figures "
                                      "it moves\n"));
    CHECK(took < 10.0);
    // 21 fields x 96 = 2,016 checks: traced, and none of the added keys moves a figure, so no
    // note names one.
    config.erase("added_21");
    head.write(config.dump(2));
    const CliRun t = run_kvplan(check);
    CHECK(t.code == 0);
    CHECK_THAT(t.out, !Catch::Contains("note:"));
}

// ---------------------------------------------------------------------------------------------
// Forged workflow commands.

TEST_CASE("each format's escaper writes what its reader takes back", "[cli][escape]") {
    using namespace kvplan::cli;
    // Text: every control character as \xNN, so a field stays on its line.
    CHECK(text_field("a\nb\rc\td") == "a\\x0Ab\\x0Dc\\x09d");
    CHECK(text_field("del\x7F") == "del\\x7F");
    CHECK(text_field("nel\xC2\x85") == "nel\\xC2\\x85");         // U+0085, a C1 control
    CHECK(text_field("ls\xE2\x80\xA8") == "ls\\xE2\\x80\\xA8");  // U+2028 LINE SEPARATOR
    CHECK(text_field("caf\xC3\xA9 \xE2\x80\x94") == "caf\xC3\xA9 \xE2\x80\x94");  // é, an em dash
    CHECK(text_field("bad \xFF") == "bad \\xFF");
    // A command that would start a line, after any white space the runner trims.
    CHECK(text_field("::error::x") == "\\x3A:error::x");
    CHECK(text_field("  ::error::x") == "  \\x3A:error::x");
    CHECK(text_field("\xC2\xA0\xE3\x80\x80::x") == "\xC2\xA0\xE3\x80\x80\\x3A:x");
    CHECK(text_field("a ::b") == "a ::b");  // not at the start: no command
    CHECK(text_field("x ##[error]y ##[") == "x ##\\x5Berror]y ##\\x5B");
    // A whole document keeps its lines, and escapes the rest.
    CHECK(utf8_escaped("a\nb\t\x7F\xC2\x9B") == "a\nb\t\\x7F\\xC2\\x9B");
    CHECK(md_field("a|b\n|c") == "a\\|b\\x0A\\|c");
    // GitHub's escaping (actions/runner, ActionCommand.cs: %0D, %0A, %25; %3A, %2C in
    // properties).
    CHECK(gh_data("50% of\r\n::x") == "50%25 of%0D%0A::x");
    CHECK(gh_property("kvplan check: a, b%\n") == "kvplan check%3A a%2C b%25%0A");
    CHECK(gh_data("tab\tdel\x7F") == "tab\\x09del\\x7F");
    CHECK(xml_field("<a href=\"x\">&'\n\r\t\x01") ==
          "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&#10;&#13;&#9;\\x01");
}

namespace {

/// .NET's white space at s[i] (String.TrimStart, which the runner applies to a line): its
/// length, 0 if none.
std::size_t dotnet_space(const std::string& s, std::size_t i) {
    static const std::vector<std::string> spaces = {" ",
                                                    "\t",
                                                    "\v",
                                                    "\f",
                                                    "\xC2\x85",
                                                    "\xC2\xA0",
                                                    "\xE1\x9A\x80",
                                                    "\xE2\x80\x80",
                                                    "\xE2\x80\x81",
                                                    "\xE2\x80\x82",
                                                    "\xE2\x80\x83",
                                                    "\xE2\x80\x84",
                                                    "\xE2\x80\x85",
                                                    "\xE2\x80\x86",
                                                    "\xE2\x80\x87",
                                                    "\xE2\x80\x88",
                                                    "\xE2\x80\x89",
                                                    "\xE2\x80\x8A",
                                                    "\xE2\x80\xA8",
                                                    "\xE2\x80\xA9",
                                                    "\xE2\x80\xAF",
                                                    "\xE2\x81\x9F",
                                                    "\xE3\x80\x80"};
    for (const std::string& sp : spaces)
        if (s.compare(i, sp.size(), sp) == 0) return sp.size();
    return 0;
}

/// The lines of `text` the Actions runner runs as workflow commands: split as it reads them (at
/// CR, LF or CRLF), those that start with "::" once trimmed, and those holding "##[".
std::vector<std::string> command_lines(const std::string& text) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t end = std::min(text.find_first_of("\r\n", at), text.size());
        const std::string line = text.substr(at, end - at);
        std::size_t lead = 0;
        while (const std::size_t n = dotnet_space(line, lead)) lead += n;
        if (line.compare(lead, 2, "::") == 0 || line.find("##[") != std::string::npos)
            out.push_back(line);
        at = end + 1;
    }
    return out;
}

/// A workflow command's message as the runner unescapes it.
std::string gh_unescaped(std::string s) {
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"%0D", "\r"}, {"%0A", "\n"}, {"%25", "%"}})
        for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at))
            s.replace(at, from.size(), to), at += to.size();
    return s;
}

const std::string forged_requirement = "ok\n::error file=x,line=1::forged by a requirement";
const std::string stop_commands = "cr\r::stop-commands::tok3n";

/// A policy whose names try every way into a line of their own.
json forging_policy() {
    const std::vector<std::string> names = {forged_requirement,
                                            stop_commands,
                                            "::warning::at the start",
                                            "  ::notice::after spaces",
                                            "\xC2\xA0::notice::after a no-break space",
                                            "old ##[error]syntax",
                                            "nel\xC2\x85::error::after U+0085",
                                            "ls\xE2\x80\xA8::error::after U+2028",
                                            "tab\t::debug::x, del\x7F, bell\x07"};
    json p = policy(2, names.size(),
                    {{"kind", "min_concurrency"}, {"sequences", 100000}, {"context_tokens", 8000}});
    for (std::size_t i = 0; i < names.size(); ++i) p["requirements"][i]["name"] = names[i];
    p["replicas"][0]["name"] = "fleet\n::error::forged by a replica";
    p["replicas"][1]["name"] = "::notice::fleet two";
    return p;
}

}  // namespace

TEST_CASE("names with line breaks cannot forge a workflow command in any output",
          "[cli][check][escape]") {
    const ScratchFile file("forging.json"), junit("forging.xml"), sarif("forging.sarif");
    file.write(forging_policy().dump());
    const std::string check = "check --policy " + file.quoted();
    const std::size_t checks = 2 * 9;  // every requirement on both replicas, each failing
    // With GITHUB_ACTIONS=true, text and md are preceded by one annotation per check: exactly
    // those, each "::error file=...,line=N,title=...::message", are the output's commands.
    const std::regex annotation{"::error file=[^:,]*,line=[0-9]+,title=[^:,]*::[^\r\n]*"};
    for (const char* format : {"text", "md"}) {
        const CliRun r = run_kvplan(check + " --format " + format + " --junit " + junit.quoted() +
                                        " --sarif " + sarif.quoted(),
                                    "GITHUB_ACTIONS=true");
        INFO(format << ":\n" << r.out << r.err);
        REQUIRE(r.code == 1);
        CHECK(r.err.empty());
        const std::vector<std::string> commands = command_lines(r.out);
        CHECK(commands.size() == checks);
        for (const std::string& c : commands) CHECK(std::regex_match(c, annotation));
        // No byte of the report is a control character but its line ends: no C0 but LF, no DEL,
        // no C1 (U+0080 to U+009F are C2 80 to C2 9F), no U+2028.
        CHECK(std::none_of(r.out.begin(), r.out.end(), [](char c) {
            return (static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == '\x7F';
        }));
        CHECK(r.out.find("\xC2\x85") == std::string::npos);
        CHECK(r.out.find("\xE2\x80\xA8") == std::string::npos);
        // The messages carry the names whole, as the runner unescapes them.
        bool forged_seen = false, stop_seen = false;
        for (const std::string& c : commands) {
            const std::string message = gh_unescaped(c.substr(c.find("::", 2) + 2));
            forged_seen = forged_seen || message.starts_with(forged_requirement + " on fleet\n");
            stop_seen = stop_seen || message.starts_with(stop_commands + " on ");
        }
        CHECK(forged_seen);
        CHECK(stop_seen);
    }
    // JSON and CSV hold no command; JSON keeps the name (with its line break) as its value.
    const CliRun j = run_kvplan(check + " --format json", "GITHUB_ACTIONS=true");
    REQUIRE(j.code == 1);
    CHECK(command_lines(j.out).empty());
    const json doc = json::parse(j.out);
    CHECK(doc["requirements"][0]["name"] == forged_requirement);
    CHECK(doc["requirements"][10]["name"] == "old ##[error]syntax");  // "\u005B" reads back "["
    const CliRun c = run_kvplan(check + " --format csv", "GITHUB_ACTIONS=true");
    REQUIRE(c.code == 1);
    CHECK(command_lines(c.out).empty());
    const auto rows = parse_csv(c.out);
    REQUIRE(rows.size() == checks + 1);
    for (const auto& row : rows) CHECK(row.size() == rows[0].size());
    // SARIF is JSON; JUnit XML has one test case per check, every '<' and '>' a tag's, no
    // control byte but line ends, and the name's line break as a character reference.
    const json s = json::parse(read_file(sarif.path));
    CHECK(s["runs"][0]["results"].size() >= checks);
    const std::string xml = read_file(junit.path);
    std::size_t cases = 0, closes = 0, opens = 0, shuts = 0;
    for (std::size_t at = xml.find("<testcase "); at != std::string::npos;
         at = xml.find("<testcase ", at + 1))
        ++cases;
    for (std::size_t at = xml.find("</testcase>"); at != std::string::npos;
         at = xml.find("</testcase>", at + 1))
        ++closes;
    for (char ch : xml) {
        opens += ch == '<' ? 1 : 0;
        shuts += ch == '>' ? 1 : 0;
    }
    CHECK(std::none_of(xml.begin(), xml.end(), [](char ch) {
        return static_cast<unsigned char>(ch) < 0x20 && ch != '\n';
    }));
    CHECK(cases == checks);
    CHECK(closes == checks);
    CHECK(opens == shuts);
    CHECK_THAT(xml, Catch::Contains("name=\"ok&#10;::error file=x,line=1::forged by a requirement "
                                    "on fleet&#10;::error::forged by a replica\""));
}

TEST_CASE("an error message stays one line, whatever the name it quotes", "[cli][escape]") {
    const ScratchFile file("bad.json");
    json p = policy(1, 1);
    p["replicas"][0]["gpu"] = "h100\n::error::forged by an error";
    file.write(p.dump());
    const CliRun r = run_kvplan("check --policy " + file.quoted());
    CHECK(r.code == 3);
    CHECK(r.out.empty());
    CHECK(command_lines(r.err).empty());
    REQUIRE(!r.err.empty());
    CHECK(r.err.find('\n') == r.err.size() - 1);
}

// ---------------------------------------------------------------------------------------------
// Empty values and lost output.

TEST_CASE("an empty value is a usage error for every flag of every command", "[cli][empty]") {
    // `check --baseline ''` once read as no baseline: every regression rule skipped, a pass.
    const CliRun b =
        run_kvplan("check --policy " + data_file("cli/policy_regressions.json") + " --baseline ''");
    CHECK(b.code == 2);
    CHECK(b.out.empty());
    CHECK(b.err == "kvplan: error: --baseline: expected a value, found '' (see kvplan --help)\n");
    // Every other flag in process, through the same kvplan::cli::run the binary's main calls.
    const auto run = [](const std::vector<std::string>& args) {
        std::ostringstream out, err;
        const int code = kvplan::cli::run(args, out, err, KVPLAN_CONFIG_DIR);
        return CliRun{code, out.str(), err.str()};
    };
    std::size_t tried = 0;
    for (const kvplan::cli::CommandInfo& c : kvplan::cli::describe()) {
        for (const kvplan::cli::FlagInfo& f : c.flags) {
            if (!f.takes_value) continue;
            // One name per flag (an alias is the same option), as `--flag ''` and `--flag=`.
            const std::vector<std::string> args =
                f.positional ? std::vector<std::string>{c.name, ""}
                             : std::vector<std::string>{c.name, "--" + f.names[0], ""};
            const CliRun r = run(args);
            INFO("kvplan " << c.name << " " << f.name << " ''\n" << r.err);
            CHECK(r.code == 2);
            CHECK(r.out.empty());
            CHECK_THAT(r.err, Catch::Contains("expected a value, found ''"));
            CHECK(r.err.find('\n') == r.err.size() - 1);
            if (!f.positional) CHECK(run({c.name, "--" + f.names[0] + "="}).code == 2);
            ++tried;
        }
    }
    // Twelve commands with about 150 flags that take a value (the issue counted 138 pairs that
    // read an empty value as none).
    CHECK(tried >= 138);
}

TEST_CASE("output that cannot be written is exit 3, never a silent pass", "[cli][write]") {
    if (!std::filesystem::exists("/dev/full")) {
        WARN("no /dev/full to write to");
        return;
    }
    const std::string fit = "fit --model llama-3-70b --gpu h100 --tp 4 --context 8k";
    // /dev/full takes the open and fails every write with ENOSPC.
    const CliRun full = run_kvplan(fit + " >/dev/full");
    CHECK(full.code == 3);
    CHECK(full.err == "kvplan: error: the output could not be written (No space left on device)\n");
    CHECK(run_kvplan(fit + " --format json >/dev/full").code == 3);
    CHECK(run_kvplan("list models >/dev/full").code == 3);
    CHECK(run_kvplan("fit --help >/dev/full").code == 3);
    CHECK(run_kvplan(fit).code == 0);  // the same command, written: 0
    // A check that failed (1) but whose report was lost is 3 too; so are its files.
    const std::string failing = "check --policy " + data_file("cli/policy_regressions.json") +
                                " --model " + data_file("cli/llama-3-70b-16kv") +
                                " --baseline llama-3-70b";
    CHECK(run_kvplan(failing).code == 1);
    CHECK(run_kvplan(failing + " >/dev/full").code == 3);
    const CliRun junit = run_kvplan(failing + " --junit /dev/full");
    CHECK(junit.code == 3);
    CHECK_THAT(junit.err, Catch::Contains("/dev/full: --junit: expected a writable file"));
    CHECK(run_kvplan(failing + " --sarif /dev/full").code == 3);
}
