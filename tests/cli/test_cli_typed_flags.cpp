// Every flag becomes its value as CLI11 parses it (tools/kvplan/options.cpp, parse.hpp): a bad
// value is one line naming the flag, what it expects and what it found, exit 2, before any file
// is read; and a flag that would change nothing for the model or engine given is refused, not
// ignored.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using json = nlohmann::json;

namespace {

/// `args` fails as a usage error whose one line is "flag: expected ..., found 'found'".
void check_refused(const std::string& args, const std::string& flag, const std::string& found) {
    INFO(args);
    const CliRun r = run_kvplan(args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("kvplan: error: " + flag + ": expected ") &&
                          Catch::Contains(", found '" + found + "'"));
    CHECK(r.err.find('\n') == r.err.size() - 1);
}

// A model that is no file: a flag's error must come first, before the model is looked for.
const std::string fit = "fit --model no-such-model --gpu h100-sxm";

}  // namespace

TEST_CASE("a bad value of a format flag is refused as it is parsed, naming the flag",
          "[cli][typed_flags]") {
    check_refused(fit + " --kv-dtype fp9", "--kv-dtype", "fp9");
    // fit sizes one replica: a list is not one format.
    check_refused(fit + " --kv-dtype bf16,fp8", "--kv-dtype", "bf16,fp8");
    check_refused(fit + " --weight-dtype fp7", "--weight-dtype", "fp7");
    check_refused(fit + " --expert-dtype checkpoint", "--expert-dtype", "checkpoint");
    check_refused(fit + " --mamba-cache-dtype int8", "--mamba-cache-dtype", "int8");
    check_refused(fit + " --mamba-ssm-cache-dtype fp8", "--mamba-ssm-cache-dtype", "fp8");
    check_refused(fit + " --format xml", "--format", "xml");
    check_refused("check --policy no-such-policy.json --format yaml", "--format", "yaml");
    // plan searches a list: each item is checked.
    check_refused("plan --model no-such-model --kv-dtype bf16,fp9", "--kv-dtype", "fp9");
    check_refused("plan --model no-such-model --weight-dtype checkpoint,fp7", "--weight-dtype",
                  "fp7");
}

TEST_CASE("vLLM's switches take 0 or 1, as its environment variables", "[cli][typed_flags]") {
    // vllm/envs.py reads each as bool(int(value)); kvplan takes the two values that mean
    // something and nothing else.
    check_refused(fit + " --chunked-local-hybrid 2", "--chunked-local-hybrid", "2");
    check_refused(fit + " --chunked-local-hybrid on", "--chunked-local-hybrid", "on");
    check_refused(fit + " --without-flashinfer yes", "--without-flashinfer", "yes");
}

TEST_CASE("SGLang's --lora-target-modules is read as it is parsed, in the library's words",
          "[cli][typed_flags]") {
    // lm_head's stack depends on the vocabulary adapters add, which kvplan does not size
    // (budget/lora.hpp, lora_targets): refused before the model is looked for.
    const CliRun r =
        run_kvplan(fit + " --engine sglang --max-loras 4 --lora-target-modules q_proj,lm_head");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("kvplan: error: --lora-target-modules: "
                                        "lora_target_modules: expected ") &&
                          Catch::Contains(", found lm_head"));
}

TEST_CASE("a model's sizes are whole numbers, layer and head counts 32-bit", "[cli][typed_flags]") {
    const std::string sized = "fit --gpu h100-sxm --hidden-size 4096 --heads 32 --vocab 32000";
    check_refused(sized + " --layers 0", "--layers", "0");
    // 2^32 = 4,294,967,296 layers do not fit the config's 32-bit count.
    check_refused(sized + " --layers 4294967296", "--layers", "4294967296");
    check_refused(sized + " --layers 32 --window 4k", "--window", "4k");
}

TEST_CASE("trace, fleet, disagg and plan options are typed as they are parsed",
          "[cli][typed_flags]") {
    const std::string trace = "trace no-such-trace.csv --model no-such-model --gpu h100-sxm";
    check_refused(trace + " --ttft-ms -1", "--ttft-ms", "-1");
    check_refused(trace + " --time-unit h", "--time-unit", "h");
    check_refused(trace + " --max-model-len 0", "--max-model-len", "0");
    const std::string fleet =
        "fleet --model no-such-model --gpu h100-sxm --rate 1 --tpot-ms 50 --output-tokens 200";
    check_refused(fleet + " --prompt-tokens 1k --size-by guess", "--size-by", "guess");
    // Percentiles ascending with tokens not decreasing (fleet.hpp, parse_quantile_points).
    check_refused(fleet + " --prompt-tokens 50:2k,95:1k", "--prompt-tokens", "50:2k,95:1k");
    const std::string disagg =
        "disagg --model no-such-model --gpu h100-sxm --rate 1 --ttft-ms 1000 --tpot-ms 50";
    check_refused(disagg + " --trace t.csv --percentile 90", "--percentile", "90");
    check_refused(disagg + " --link 5", "--link", "5");
    check_refused(disagg + " --latency exact", "--latency", "exact");
    check_refused("plan --model no-such-model --rank cheapest", "--rank", "cheapest");
}

TEST_CASE("typed lists search and compare each format given", "[cli][typed_flags]") {
    // Two KV formats x the checkpoint's weights and fp8: four rows.
    const CliRun r = run_kvplan(
        "compare --model llama-3-8b --kv-dtype bf16,fp8 --weight-dtype checkpoint,fp8 "
        "--context 8k -f json");
    REQUIRE(r.code == 0);
    const json rows = json::parse(r.out)["rows"];
    REQUIRE(rows.size() == 4);
    // Llama-3-8B: 32 layers x 8 KV heads x 128 x 2 (K and V) = 65,536 values a token, 2 B each
    // in bf16 (131,072 B) and 1 B in fp8 (65,536 B).
    CHECK(rows[0]["kv_bytes_per_token"].get<std::uint64_t>() == 131'072);
    CHECK(rows[2]["kv_bytes_per_token"].get<std::uint64_t>() == 65'536);
    // "checkpoint" is the model's own bf16; fp8 weights are half its bytes.
    CHECK(rows[0]["weight_dtype"].get<std::string>() == "bf16");
    CHECK(rows[1]["weight_dtype"].get<std::string>() == "fp8");
}

TEST_CASE("a flag that would change nothing is refused", "[cli][typed_flags]") {
    // A text-only model has no encoder outputs: vLLM's image flags are the model's error (exit 3,
    // as a drafter's layers on a model without them), naming the field.
    for (const char* flag :
         {" --limit-mm-per-prompt 2", " --limit-mm-per-prompt 0", " --skip-mm-profiling"}) {
        const CliRun r = run_kvplan("fit --model llama-3-8b --gpu h100-sxm" + std::string(flag));
        INFO(flag);
        CHECK(r.code == 3);
        CHECK_THAT(r.err, Catch::Contains("vision_params") &&
                              Catch::Contains("found none (a text-only model)"));
    }
    // TensorRT-LLM's LoRA cache is not modelled; SGLang has no fully sharded LoRA.
    check_refused("fit --model llama-3-8b --gpu h100-sxm --engine trtllm --max-loras 2",
                  "--max-loras", "trtllm");
    check_refused(
        "fit --model llama-3-8b --gpu h100-sxm --engine sglang --max-loras 2 "
        "--fully-sharded-loras",
        "--fully-sharded-loras", "sglang");
    // A trace's flags without a trace.
    check_refused(
        "disagg --model llama-3-8b --gpu h100-sxm --rate 1 --ttft-ms 1000 --tpot-ms 50 "
        "--prompt-tokens 1k --output-tokens 200 --percentile 99",
        "--percentile", "no --trace");
    check_refused(
        "fleet --model llama-3-8b --gpu h100-sxm --rate 1 --tpot-ms 50 --prompt-tokens 1k "
        "--output-tokens 200 --time-unit ms",
        "--time-unit", "no --trace");
    // A dense model has no routed experts to format, and a model of attention alone no recurrent
    // state to type: each flag is refused naming the model, in fit, size and diff alike.
    check_refused("fit --model llama-3-8b --gpu h100-sxm --expert-dtype fp8", "--expert-dtype",
                  "fp8");
    check_refused("diff llama-3-8b llama-3-70b --expert-dtype fp8", "--expert-dtype", "fp8");
    check_refused("size --model llama-3-8b --mamba-cache-dtype float32", "--mamba-cache-dtype",
                  "set");
    check_refused("fit --model llama-3-8b --gpu h100-sxm --mamba-ssm-cache-dtype float32",
                  "--mamba-ssm-cache-dtype", "set");
    CHECK_THAT(run_kvplan("size --model llama-3-8b --expert-dtype fp8").err,
               Catch::Contains("llama-3-8b is dense"));
    // Where they shape something they are taken: gpt-oss-120b's experts, Granite-4.0-H's Mamba
    // layers; vLLM's "auto" asks for nothing.
    CHECK(run_kvplan("size --model gpt-oss-120b --expert-dtype fp8").code == 0);
    CHECK(run_kvplan("size --model granite-4.0-h-small --mamba-cache-dtype float32").code == 0);
    CHECK(run_kvplan("size --model llama-3-8b --mamba-cache-dtype auto").code == 0);
    // Already so: the prefix hit rate is a share of a prompt, and needs one.
    check_refused("fit --model llama-3-8b --gpu h100-sxm --prefix-hit-rate 0.5",
                  "--prefix-hit-rate", "no --prompt-tokens");
}

TEST_CASE("compare reads --draft-model as fit does", "[cli][typed_flags]") {
    // Llama-3-70B on 4 H100s, a Llama-3-8B drafting 4 tokens a step: the drafter's 32 layers keep
    // their KV in the model's cache (plan/speculation.hpp). A token: (80 + 32) layers x 8 KV heads
    // x 128 x 2 (K and V) x 2 B (bf16) = 458,752 B, 114,688 B a GPU at tp 4; a sequence of 8,000
    // tokens 917,504,000 B a GPU (without the drafter 80 layers: 655,360,000 B).
    const std::string replica =
        "--model llama-3-70b --gpu h100-sxm --tp 4 --context 8000 --concurrency 48 "
        "--speculative-method draft_model --draft-model llama-3-8b --num-speculative-tokens 4 "
        "--format json";
    const CliRun fr = run_kvplan("fit " + replica);
    REQUIRE(fr.code == 0);
    const json f = json::parse(fr.out);
    const CliRun cr = run_kvplan("compare " + replica);
    INFO(cr.err);
    REQUIRE(cr.code == 0);
    const json c = json::parse(cr.out)["rows"][0];
    CHECK(f["kv_bytes_per_sequence_per_gpu"].get<std::uint64_t>() == 917'504'000);
    // compare's size columns are the model's own (kvplan::size): 8,000 x 327,680 B.
    CHECK(c["kv_bytes_per_sequence"].get<std::uint64_t>() == 2'621'440'000);
    // The budget: blocks of 16 tokens x 114,688 B = 1,835,008 B; a sequence of 8,000 tokens is 500
    // blocks. The budget fit reports holds floor(budget / 1,835,008) blocks, one of them vLLM's
    // null block: 39 sequences of 500 blocks, as fit says.
    const auto budget = f["kv_budget_bytes_per_gpu"].get<std::uint64_t>();
    CHECK((budget / 1'835'008 - 1) / 500 == 39);
    CHECK(f["max_concurrency"].get<std::uint64_t>() == 39);
    CHECK(c["max_concurrency"].get<std::uint64_t>() == 39);
    CHECK(c["kv_budget_bytes_per_gpu"] == f["kv_budget_bytes_per_gpu"]);
    // The draft model's weights sit on the (only) stage beside the model's, as fit shows them.
    CHECK(c["weight_bytes_per_gpu"] == f["weight_bytes_per_gpu"]);
}

TEST_CASE("fleet, trace and disagg refuse speculative decoding, which they do not model",
          "[cli][typed_flags]") {
    // plan_fleet and analyze_trace size the model without a drafter: the flags would change
    // nothing, so they are refused before any file is read (the model is no file).
    // plan_disaggregated refuses a drafter itself (its pools' steps and the KV moved are the
    // model's own); the command names the flag.
    const std::string fleet =
        "fleet --model no-such-model --gpu h100-sxm --rate 1 --tpot-ms 50 --prompt-tokens 1k "
        "--output-tokens 200";
    const std::string trace = "trace no-such-trace.csv --model no-such-model --gpu h100-sxm";
    const std::string disagg =
        "disagg --model no-such-model --gpu h100-sxm --rate 1 --ttft-ms 1000 --tpot-ms 50 "
        "--prompt-tokens 1k --output-tokens 200";
    for (const std::string& cmd : {fleet, trace, disagg}) {
        check_refused(cmd + " --speculative-method ngram --num-speculative-tokens 3",
                      "--speculative-method", "ngram");
        check_refused(cmd + " --num-speculative-tokens 3", "--num-speculative-tokens", "3");
        check_refused(cmd + " --draft-model llama-3-8b", "--draft-model", "llama-3-8b");
        const CliRun r = run_kvplan(cmd + " --speculative-method eagle --num-speculative-tokens 2");
        CHECK_THAT(r.err, Catch::Contains("without a drafter"));
    }
}
