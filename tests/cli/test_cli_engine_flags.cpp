// Every engine command kvplan prints parses against that engine's own argument list
// (tests/data/engine_flags/vllm.txt, read from vllm/engine/arg_utils.py,
// tests/data/engine_flags/sglang.txt, read from python/sglang/srt/server_args.py, and
// tests/data/engine_flags/trtllm.txt, read from tensorrt_llm/commands/serve.py, each at the commit
// it names): each flag is one the engine has, a flag that takes a value has one, a switch has none.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

/// An engine's flags: the name (and each alias) -> whether it takes a value, and, for a flag
/// older releases lack, the first release line that parses it ("since X.Y" as {X, Y}).
struct FlagList {
    std::map<std::string, bool> takes_value;
    std::map<std::string, std::pair<int, int>> since;
    std::string commit;
};

FlagList read_flags(const std::string& path) {
    FlagList f;
    std::ifstream in(path);
    REQUIRE(in);
    for (std::string line; std::getline(in, line);) {
        if (const auto at = line.find("commit "); line.rfind('#', 0) == 0 && at != line.npos)
            f.commit = line.substr(at + 7, 40);
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string names, kind, since_word, release;
        words >> names >> kind >> since_word >> release;
        REQUIRE((kind == "value" || kind == "switch"));
        std::pair<int, int> since{0, 0};
        if (!since_word.empty()) {
            INFO(line);
            REQUIRE(since_word == "since");
            const auto dot = release.find('.');
            REQUIRE(dot != std::string::npos);
            since = {std::stoi(release.substr(0, dot)), std::stoi(release.substr(dot + 1))};
        }
        std::istringstream each(names);
        for (std::string n; std::getline(each, n, ',');) {
            f.takes_value[n] = kind == "value";
            if (since != std::pair<int, int>{0, 0}) f.since[n] = since;
        }
    }
    return f;
}

/// The words of a POSIX shell line as kvplan quotes them (ServeCommand::line): plain words, or
/// single-quoted ones with '\'' for a quote.
std::vector<std::string> shell_words(const std::string& line) {
    std::vector<std::string> out;
    std::string w;
    bool in_word = false, quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '\'')
                quoted = false;
            else
                w += c;
        } else if (c == '\'') {
            quoted = in_word = true;
        } else if (c == '\\' && i + 1 < line.size()) {
            w += line[++i];
            in_word = true;
        } else if (c == ' ') {
            if (in_word) out.push_back(w);
            w.clear();
            in_word = false;
        } else {
            w += c;
            in_word = true;
        }
    }
    REQUIRE_FALSE(quoted);
    if (in_word) out.push_back(w);
    return out;
}

/// The command lines in a JSON answer's notes ("vLLM command line ...: <line>").
std::vector<std::string> command_lines(const std::string& json_text) {
    std::vector<std::string> out;
    const nlohmann::json j = nlohmann::json::parse(json_text);
    if (!j.contains("notes")) return out;
    for (const auto& n : j["notes"]) {
        const std::string s = n.get<std::string>();
        const auto at = s.find("command line");
        if (at == std::string::npos || s.find("no command line") != std::string::npos) continue;
        const auto colon = s.find(": ", at);
        REQUIRE(colon != std::string::npos);
        out.push_back(s.substr(colon + 2));
    }
    return out;
}

/// A served model is one word naming a repository or a folder: a bundled config's README row may
/// add a note after its repo, which is not part of the name (gemma-3-27b's printed
/// 'google/gemma-3-27b-it (multimodal: ...)' once).
void check_model_word(const std::string& word) {
    INFO("model " << word);
    CHECK_FALSE(word.empty());
    CHECK(word.find_first_of(" ()`") == std::string::npos);
}

/// Checks one command line against the list: NAME=value assignments, then the program words
/// `program` (for vLLM, its model: a positional word), then flags only, each one release line
/// `release` parses (major, minor; {0, 0}: the newest). A `ray start ... &&` before it (vLLM's
/// head of a Ray cluster) is checked apart (check_ray_start).
void check_line(const std::string& line, const FlagList& flags,
                const std::vector<std::string>& program, bool positional_model,
                std::pair<int, int> release = {0, 0}) {
    INFO(line);
    std::vector<std::string> w = shell_words(line);
    if (const auto amp = std::find(w.begin(), w.end(), "&&"); amp != w.end())
        w.erase(w.begin(), amp + 1);
    std::size_t i = 0;
    // NAME=value assignments first.
    for (; i < w.size() && w[i].find('=') != std::string::npos && w[i].rfind("--", 0) != 0; ++i) {
        const std::string name = w[i].substr(0, w[i].find('='));
        CHECK(name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == name.npos);
    }
    REQUIRE(i + program.size() < w.size());
    for (const std::string& p : program) CHECK(w[i++] == p);
    if (positional_model) {
        CHECK(w[i].rfind("-", 0) != 0);
        check_model_word(w[i++]);
    }
    for (; i < w.size(); ++i) {
        INFO(w[i]);
        REQUIRE(w[i].rfind("-", 0) == 0);
        const auto f = flags.takes_value.find(w[i]);
        REQUIRE(f != flags.takes_value.end());
        if (const auto since = flags.since.find(w[i]);
            since != flags.since.end() && release != std::pair<int, int>{0, 0})
            CHECK(since->second <= release);
        if (f->second) {
            REQUIRE(i + 1 < w.size());
            CHECK(w[i + 1].rfind("--", 0) != 0);
            ++i;
        }
    }
}

void check_vllm_line(const std::string& line, const FlagList& flags,
                     std::pair<int, int> release = {0, 0}) {
    check_line(line, flags, {"vllm", "serve"}, true, release);
}

/// The Ray cluster of a vLLM release before multi-node multiprocessing: the head's line starts
/// `ray start --head --port=6379 && vllm serve`, a worker's is `ray start --address=HEAD:6379
/// --block` alone (Ray's own CLI: --head, --port, --address and --block are `ray start`'s
/// options).
bool is_ray_worker_line(const std::string& line) {
    return line.rfind("ray start --address=", 0) == 0;
}
void check_ray_start(const std::string& line) {
    INFO(line);
    const std::vector<std::string> w = shell_words(line);
    if (is_ray_worker_line(line)) {
        REQUIRE(w.size() == 4);
        CHECK(w[2] == "--address=HEAD_NODE_IP:6379");
        CHECK(w[3] == "--block");
        return;
    }
    REQUIRE(w.size() > 5);
    CHECK(w[0] == "ray");
    CHECK(w[1] == "start");
    CHECK(w[2] == "--head");
    CHECK(w[3] == "--port=6379");
    CHECK(w[4] == "&&");
}

void check_sglang_line(const std::string& line, const FlagList& flags) {
    check_line(line, flags, {"python", "-m", "sglang.launch_server"}, false);
}

/// The bundled models' ids, sorted (a directory lists them in no fixed order).
std::vector<std::string> bundled_models() {
    std::vector<std::string> ids;
    for (const auto& e :
         std::filesystem::directory_iterator(std::string(KVPLAN_SOURCE_DIR) + "/configs/models"))
        if (e.path().extension() == ".json") ids.push_back(e.path().stem().string());
    std::sort(ids.begin(), ids.end());
    return ids;
}

/// Whether the model at `index` runs the command `kind` of `kinds`: every one in an ordinary
/// build; under the sanitizers (KVPLAN_TEST_SANITIZED) one command a model, in turn. A CLI run
/// costs about 0.25 s there, 300 of them most of the sanitizer suite's longest test, and what the
/// sanitizers look for is in the code a command runs, which every model still takes through one
/// command and every command through a quarter or half of the models. The -O2 run checks every
/// command line of every model against the engine's flags; the counts below hold in both.
bool runs_command(std::size_t index, std::size_t kind, std::size_t kinds) {
#ifdef KVPLAN_TEST_SANITIZED
    return index % kinds == kind;
#else
    (void)index, (void)kind, (void)kinds;
    return true;
#endif
}

/// The YAML notes of a JSON answer ("TensorRT-LLM extra_llm_api_options.yaml (...): <yaml>").
std::vector<std::string> yaml_notes(const std::string& json_text) {
    std::vector<std::string> out;
    const nlohmann::json j = nlohmann::json::parse(json_text);
    if (!j.contains("notes")) return out;
    for (const auto& n : j["notes"]) {
        const std::string s = n.get<std::string>();
        if (s.rfind("TensorRT-LLM extra_llm_api_options.yaml", 0) != 0) continue;
        out.push_back(s.substr(s.find("): ") + 3));
    }
    return out;
}

}  // namespace

TEST_CASE("every vLLM command fit and plan print parses against vLLM's flags", "[cli][commands]") {
    const FlagList flags =
        read_flags(std::string(KVPLAN_SOURCE_DIR) + "/tests/data/engine_flags/vllm.txt");
    CHECK(flags.commit.size() == 40);
    CHECK(flags.takes_value.at("--tensor-parallel-size"));
    CHECK_FALSE(flags.takes_value.at("--enable-expert-parallel"));
    std::vector<std::string> runs;
    const std::vector<std::string> ids = bundled_models();
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::string& id = ids[i];
        if (runs_command(i, 0, 4))
            runs.push_back("fit --model " + id + " --gpu h200-sxm --tp 8 --context 8k -f json");
        if (runs_command(i, 1, 4))
            runs.push_back("fit --model " + id + " --gpu h100-sxm --context 4k -f json");
        if (runs_command(i, 2, 4))
            runs.push_back("plan --model " + id + " --gpu h200-sxm --context 8k -f json");
        if (runs_command(i, 3, 4))
            runs.push_back("disagg --model " + id +
                           " --gpu h200-sxm --rate 2 --ttft-ms 2000 --tpot-ms 100 --prompt-tokens "
                           "1000 --output-tokens 200 -f json");
    }
    // What the bundled models alone do not reach: two nodes, quantization at load, the given
    // block size, long contexts, dp ranks over nodes, an older release.
    runs.push_back("fit --model llama-3.1-405b --gpu h100-sxm --tp 16 --context 8k -f json");
    runs.push_back("fit --model llama-3.1-405b --gpu h100-sxm --tp 8 --pp 2 --context 8k -f json");
    runs.push_back("fit --model qwen3-235b-a22b --gpu h200-sxm --tp 4 --weight-dtype fp8 -f json");
    runs.push_back(
        "fit --model deepseek-v3 --gpu h200-sxm --tp 1 --dp 16 --enable-expert-parallel "
        "--redundant-experts 32 --context 8k -f json");
    runs.push_back(
        "fit --model llama-3-8b --gpu h100-sxm --block-size 32 --context 16k "
        "--allow-long-context --max-num-batched-tokens 4096 -f json");
    runs.push_back(
        "fit --model llama-4-scout-17b-16e-instruct --gpu h100-sxm --tp 4 --context 8k "
        "--engine-version 0.10 -f json");
    runs.push_back(
        "fit --model gemma-3-27b --gpu h100-sxm --limit-mm-per-prompt 2 --skip-mm-profiling "
        "-f json");
    runs.push_back("fit --model llama-3-70b --gpu h100-sxm --tp 4 --enforce-eager -f json");
    // Host memory for KV (vLLM's --kv-offloading-size and --kv-offloading-backend), and a release
    // whose batch defaults differ on the GPU (v0.8 on a B200: --max-num-batched-tokens 2048).
    runs.push_back("fit --model llama-3-8b --gpu h100-sxm --tp 2 --host-kv 100GiB -f json");
    runs.push_back("fit --model llama-3-8b --gpu b200 --engine-version 0.8 --context 8k -f json");
    std::size_t parsed = 0, multi_node = 0, offloading = 0;
    for (const std::string& r : runs) {
        INFO("kvplan " << r);
        const CliRun run = run_kvplan(r);
        if (run.code != 0 && run.code != 1) continue;  // a layout the model cannot take
        for (const std::string& line : command_lines(run.out)) {
            if (line.find("vllm serve") == std::string::npos) continue;
            check_vllm_line(line, flags);
            ++parsed;
            if (line.find("--kv-offloading-size 100 --kv-offloading-backend native") !=
                std::string::npos)
                ++offloading;
            if (line.find("--nnodes") != std::string::npos ||
                line.find("--data-parallel-size-local") != std::string::npos)
                ++multi_node;
        }
    }
    // At least one command per bundled model, and the multi-node ones (the runs after the loop
    // print all six of these and the offloading one). With 75 models the -O2 run parses 156 lines,
    // the sanitizer run, a command a model, 47.
    CHECK(parsed >= 40);
    CHECK(multi_node >= 4);
    CHECK(offloading == 1);
}

TEST_CASE("multi-node vLLM commands parse against the flags of the release they are for",
          "[cli][commands]") {
    // One engine over two nodes: from v0.12 `vllm serve` on each node with --nnodes (vLLM PR
    // #23691); before, a Ray cluster, `vllm serve ... --distributed-executor-backend ray` on its
    // head alone. Every flag printed for a release is one that release parses (vllm.txt's "since").
    const FlagList flags =
        read_flags(std::string(KVPLAN_SOURCE_DIR) + "/tests/data/engine_flags/vllm.txt");
    CHECK(flags.since.at("--nnodes") == std::pair<int, int>{0, 12});
    CHECK(flags.since.at("-r") == std::pair<int, int>{0, 12});
    CHECK(flags.since.count("--distributed-executor-backend") == 0);
    struct Run {
        std::string args;
        std::pair<int, int> release;
    };
    const std::string two_nodes = "fit --model llama-3.1-405b --gpu h100-sxm --context 8k -f json ";
    const std::vector<Run> runs = {
        {two_nodes + "--tp 16 --engine-version 0.8", {0, 8}},
        {two_nodes + "--tp 8 --pp 2 --engine-version 0.10", {0, 10}},
        {two_nodes + "--tp 16 --engine-version 0.11", {0, 11}},
        {two_nodes + "--tp 16 --engine-version 0.12", {0, 12}},
        {two_nodes + "--tp 8 --pp 2", {0, 0}},
    };
    std::size_t ray_heads = 0, ray_workers = 0, nnodes = 0;
    for (const Run& r : runs) {
        INFO("kvplan " << r.args);
        const CliRun run = run_kvplan(r.args);
        REQUIRE((run.code == 0 || run.code == 1));
        std::size_t lines = 0;
        for (const std::string& line : command_lines(run.out)) {
            if (line.find("vllm serve") == std::string::npos && !is_ray_worker_line(line)) continue;
            ++lines;
            const bool ray = line.rfind("ray start", 0) == 0;
            if (ray) check_ray_start(line);
            if (is_ray_worker_line(line)) {
                ++ray_workers;
                continue;
            }
            check_vllm_line(line, flags, r.release);
            ray_heads += ray;
            nnodes += line.find(" --nnodes 2 ") != std::string::npos;
            // Ray's head names its backend; the multiprocessing one needs no name.
            CHECK(ray == (line.find("--distributed-executor-backend ray") != std::string::npos));
        }
        CHECK(lines == 2);  // the head's and the other node's
    }
    // v0.8, v0.10 and v0.11 through Ray; v0.12 and the newest with --nnodes on both nodes.
    CHECK(ray_heads == 3);
    CHECK(ray_workers == 3);
    CHECK(nnodes == 4);
}

TEST_CASE("vLLM dp ranks over nodes parse against their release and v0.8 refuses them",
          "[cli][commands]") {
    // --headless, --data-parallel-size-local, --data-parallel-start-rank and
    // --data-parallel-address came with vLLM PR #15977, first in v0.9.0 (its release notes of
    // 2025-05-15: "DP: Decouple engine process management and comms (#15977)"); vllm.txt marks
    // them "since 0.9". DeepSeek-V3 at dp 16 x tp 1 on H200s, 8 a node: two `vllm serve` lines.
    const FlagList flags =
        read_flags(std::string(KVPLAN_SOURCE_DIR) + "/tests/data/engine_flags/vllm.txt");
    CHECK(flags.since.at("--headless") == std::pair<int, int>{0, 9});
    CHECK(flags.since.at("--data-parallel-start-rank") == std::pair<int, int>{0, 9});
    CHECK(flags.since.at("--data-parallel-size-local") == std::pair<int, int>{0, 9});
    CHECK(flags.since.at("--data-parallel-address") == std::pair<int, int>{0, 9});
    CHECK(flags.since.count("--data-parallel-size") == 0);
    const std::string dp =
        "fit --model deepseek-v3 --gpu h200-sxm --tp 1 --dp 16 "
        "--enable-expert-parallel --context 8k -f json --engine-version ";
    for (const auto& [v, release] :
         {std::pair<std::string, std::pair<int, int>>{"0.9", {0, 9}}, {"0.12", {0, 12}}}) {
        INFO("kvplan " << dp << v);
        const CliRun run = run_kvplan(dp + v);
        REQUIRE((run.code == 0 || run.code == 1));
        std::size_t lines = 0, headless = 0;
        for (const std::string& line : command_lines(run.out)) {
            if (line.find("vllm serve") == std::string::npos) continue;
            ++lines;
            check_vllm_line(line, flags, release);
            headless += line.find(" --data-parallel-start-rank 8 ") != std::string::npos &&
                        line.find(" --headless") != std::string::npos;
        }
        CHECK(lines == 2);
        CHECK(headless == 1);
    }
    // v0.8: the same sizing, no command with flags that release lacks (the refusal names them).
    const CliRun old = run_kvplan(dp + "0.8");
    REQUIRE((old.code == 0 || old.code == 1));
    for (const std::string& line : command_lines(old.out))
        CHECK(line.find("--headless") == std::string::npos);
    CHECK(old.out.find("vLLM v0.9 or later for dp ranks over nodes") != std::string::npos);
}

TEST_CASE("every SGLang command fit, plan and disagg print parses against SGLang's flags",
          "[cli][commands]") {
    const FlagList flags =
        read_flags(std::string(KVPLAN_SOURCE_DIR) + "/tests/data/engine_flags/sglang.txt");
    CHECK(flags.commit.size() == 40);
    // The spellings server_args.py gives them (python/sglang/srt/server_args.py).
    CHECK(flags.takes_value.at("--tp-size"));
    CHECK(flags.takes_value.at("--ep-size"));
    CHECK(flags.takes_value.at("--ep-num-redundant-experts"));
    CHECK(flags.takes_value.at("--page-size"));
    CHECK(flags.takes_value.at("--mem-fraction-static"));
    CHECK(flags.takes_value.at("--dist-init-addr"));
    CHECK(flags.takes_value.at("--max-loras-per-batch"));
    CHECK(flags.takes_value.at("--max-lora-rank"));
    CHECK_FALSE(flags.takes_value.at("--enable-dp-attention"));
    CHECK_FALSE(flags.takes_value.at("--enable-lora"));
    CHECK(flags.takes_value.count("--enable-expert-parallel") == 0);  // vLLM's, not SGLang's
    CHECK_FALSE(flags.takes_value.at("--enable-hierarchical-cache"));
    CHECK(flags.takes_value.at("--hicache-size"));
    std::vector<std::string> runs;
    const std::vector<std::string> ids = bundled_models();
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::string& id = ids[i];
        if (runs_command(i, 0, 2))
            runs.push_back("fit --model " + id +
                           " --gpu h200-sxm --tp 8 --context 8k -e sglang -f json");
        if (runs_command(i, 1, 2))
            runs.push_back("plan --model " + id + " --gpu h200-sxm --context 8k -e sglang -f json");
    }
    // The layouts and formats the flags state: dp attention, ep with redundant experts, two
    // nodes, fp8 weights over a 16-bit checkpoint, fp8 KV, a given page size, the sequence cap.
    const std::string ds = "fit --model deepseek-v3 --gpu h200-sxm -e sglang --context 8k ";
    runs.push_back(ds + "--tp 8 --dp 8 -f json");
    runs.push_back(ds + "--tp 8 --ep 8 --redundant-experts 32 -f json");
    runs.push_back(ds + "--tp 16 --dp 16 --ep 16 -f json");
    runs.push_back(
        "fit --model qwen3-235b-a22b --gpu h100-sxm -e sglang --tp 8 --weight-dtype fp8 "
        "--kv-dtype fp8 -f json");
    runs.push_back(
        "fit --model llama-3.1-405b --gpu h100-sxm -e sglang --tp 16 --context 8k --kv-dtype "
        "fp8_e5m2 -f json");
    runs.push_back(
        "fit --model llama-3-8b --gpu h100-sxm -e sglang --block-size 64 --context 16k "
        "--allow-long-context --max-num-seqs 64 -f json");
    // The host tier: 400 GiB for two ranks is 214 whole GB a rank, a pool larger than the device
    // one (engine/host_cache.hpp).
    runs.push_back(
        "fit --model llama-3-8b --gpu h100-sxm -e sglang --tp 2 --host-kv 400GiB -f json");
    // disagg prints no command line today; run so that one it prints later is checked too.
    runs.push_back(
        "disagg --model llama-3.1-70b --gpu h200-sxm -e sglang --rate 2 --ttft-ms 2000 "
        "--tpot-ms 100 --prompt-tokens 1000 --output-tokens 200 -f json");
    std::size_t parsed = 0, multi_node = 0, dp_attention = 0, ep = 0, fp8 = 0, page = 0,
                long_context = 0, host_tier = 0;
    for (const std::string& r : runs) {
        INFO("kvplan " << r);
        const CliRun run = run_kvplan(r);
        if (run.code != 0 && run.code != 1) continue;  // a layout the model cannot take
        for (const std::string& line : command_lines(run.out)) {
            if (line.find("sglang.launch_server") == std::string::npos) continue;
            check_sglang_line(line, flags);
            ++parsed;
            multi_node += line.find("--dist-init-addr") != std::string::npos;
            dp_attention += line.find("--enable-dp-attention") != std::string::npos;
            ep += line.find("--ep-num-redundant-experts") != std::string::npos;
            fp8 += line.find("--quantization fp8") != std::string::npos &&
                   line.find("--kv-cache-dtype fp8_e4m3") != std::string::npos;
            page += line.find("--page-size 64") != std::string::npos;
            long_context +=
                line.rfind("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python", 0) == 0;
            host_tier +=
                line.find(" --enable-hierarchical-cache --hicache-size 214") != std::string::npos;
        }
    }
    // At least one command per bundled model, and each of the layouts above. With 75 models the
    // -O2 run parses 124 lines, the sanitizer run, a command a model, 66.
    CHECK(parsed >= 60);
    CHECK(multi_node >= 2);
    CHECK(dp_attention >= 1);
    CHECK(ep >= 1);
    CHECK(fp8 >= 1);
    CHECK(page >= 1);
    CHECK(long_context >= 1);
    CHECK(host_tier == 1);
}

TEST_CASE("every TensorRT-LLM command fit and plan print parses against trtllm-serve's options",
          "[cli][commands][trtllm]") {
    const FlagList flags =
        read_flags(std::string(KVPLAN_SOURCE_DIR) + "/tests/data/engine_flags/trtllm.txt");
    CHECK(flags.commit.size() == 40);
    // The spellings tensorrt_llm/commands/serve.py gives them: click options with underscores.
    CHECK(flags.takes_value.at("--tp_size"));
    CHECK(flags.takes_value.at("--ep_size"));
    CHECK(flags.takes_value.at("--kv_cache_free_gpu_memory_fraction"));
    CHECK(flags.takes_value.at("--extra_llm_api_options"));
    CHECK_FALSE(flags.takes_value.at("--trust_remote_code"));
    CHECK(flags.takes_value.count("--kv_cache_dtype") == 0);  // a YAML field, not an option
    std::vector<std::string> runs;
    const std::vector<std::string> ids = bundled_models();
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (runs_command(i, 0, 2))
            runs.push_back("fit --model " + ids[i] +
                           " --gpu h200-sxm --tp 8 --context 8k -e trtllm -f json");
        if (runs_command(i, 1, 2))
            runs.push_back("plan --model " + ids[i] +
                           " --gpu h200-sxm --context 8k -e trtllm -f json");
    }
    // Two nodes (one command for the MPI launcher), fp8 KV with a given block size and cap, and
    // attention dp with expert parallelism: the YAML carries what has no option.
    runs.push_back(
        "fit --model llama-3.1-405b --gpu h100-sxm --tp 16 --context 8k -e trtllm -f json");
    runs.push_back(
        "fit --model llama-3-70b --gpu h100-sxm --tp 4 --context 8k -e trtllm --kv-dtype fp8 "
        "--block-size 64 --max-num-seqs 64 -f json");
    runs.push_back(
        "fit --model deepseek-v3 --gpu h200-sxm --tp 8 --dp 8 --ep 8 --context 8k -e trtllm "
        "-f json");
    // The host tier, KvCacheConfig.host_cache_size in bytes per rank: 100 GiB over tp 2 is
    // 107,374,182,400 / 2 = 53,687,091,200 B.
    runs.push_back(
        "fit --model llama-3-8b --gpu h100-sxm --tp 2 --host-kv 100GiB -e trtllm -f json");
    std::size_t parsed = 0, yaml_named = 0, launcher = 0;
    std::vector<std::string> yamls;
    for (const std::string& r : runs) {
        INFO("kvplan " << r);
        const CliRun run = run_kvplan(r);
        if (run.code != 0 && run.code != 1) continue;  // a layout the model cannot take
        for (const std::string& line : command_lines(run.out)) {
            if (line.find("trtllm-serve") == std::string::npos) continue;
            check_line(line, flags, {"trtllm-serve"}, true);
            ++parsed;
            yaml_named += line.find("--extra_llm_api_options extra_llm_api_options.yaml") !=
                          std::string::npos;
        }
        const std::string text = nlohmann::json::parse(run.out).dump();
        launcher += text.find(
                        "one for all 2 nodes, started on each of its 16 ranks by an MPI "
                        "launcher") != std::string::npos;
        for (const std::string& y : yaml_notes(run.out)) yamls.push_back(y);
    }
    // At least one command per bundled model; each YAML the lines name is printed beside them.
    CHECK(parsed >= 30);
    CHECK(yaml_named == yamls.size());
    CHECK(launcher >= 1);
    // fp8 KV is KvCacheConfig.dtype "fp8"; blocks of 64 its tokens_per_block; attention dp
    // TorchLlmArgs.enable_attention_dp.
    CHECK(std::count(yamls.begin(), yamls.end(),
                     "{kv_cache_config: {dtype: fp8, tokens_per_block: 64}}") == 1);
    CHECK(std::count(yamls.begin(), yamls.end(), "{enable_attention_dp: true}") >= 1);
    CHECK(std::count(yamls.begin(), yamls.end(),
                     "{kv_cache_config: {host_cache_size: 53687091200}}") == 1);
}
