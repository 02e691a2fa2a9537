// kvplan plan for a design review, through the built binary: what would make each nearest miss
// fit, cost from a price file, ranking under latency targets, the Pareto front.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

using nlohmann::json;

namespace {
const std::string prices = std::string(KVPLAN_SOURCE_DIR) + "/configs/prices/example.json";
}  // namespace

TEST_CASE("plan says what would make each nearest miss fit", "[cli][plan][review]") {
    // Llama-3-8B on one H100 given 8 GiB of KV: vLLM's 4,096 blocks of 16 tokens less its null
    // block hold floor(4,095 / 512) = 7 sequences of 8,192 tokens; 64 do not fit
    // (tests/plan/test_review.cpp derives each figure).
    const CliRun r = run_kvplan(
        "plan --model llama-3-8b --gpu h100-sxm --max-gpus 1 --kv-dtype bf16 --kv-memory 8GiB "
        "--context 8192 --concurrency 64 --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    REQUIRE(j["nearest_misses"].size() == 1);
    const json& miss = j["nearest_misses"][0];
    CHECK(miss["max_concurrency"] == 7);
    // ceil(64 / 7) = 10 replicas; 63 blocks each of 4,095 = 1,008 tokens; fp8 holds 15, short.
    CHECK(miss["fits_with_gpus"] == 10);
    CHECK(miss["fits_with_context_tokens"] == 1008);
    CHECK(miss["fits_with_fp8_kv_max_concurrency"].is_null());
    const CliRun text = run_kvplan(
        "plan --model llama-3-8b --gpu h100-sxm --max-gpus 1 --kv-dtype bf16 --kv-memory 8GiB "
        "--context 8192 --concurrency 64");
    CHECK_THAT(text.out,
               Catch::Contains("holds 7 of 64) fits with 10 GPUs (10 replicas holding 70)"));
    CHECK_THAT(text.out, Catch::Contains("a context of at most 1,008 tokens"));
    // No row is ranked, so no note says how rows are ranked.
    CHECK(text.out.find("ranked by") == std::string::npos);
}

TEST_CASE("plan says what stops every replica when none starts", "[cli][plan][review]") {
    // Llama-3-70B's config says max_position_embeddings = 8,192: 32k tokens stop every layout,
    // which no memory lifts, and the verdict names the limit from the largest replica searched
    // (4 GPUs).
    const CliRun ctx = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm --max-gpus 4 --context 32k --concurrency 8");
    REQUIRE(ctx.code == 0);
    CHECK_THAT(ctx.out, Catch::Contains("none starts: on 4 x h100-sxm"));
    CHECK_THAT(ctx.out, Catch::Contains("pass the model's limit of 8,192 tokens"));
    // bf16 weights of 141,107,412,992 B (65.7 GiB a stage at pp 2) never fit two 24 GB L4s.
    const CliRun w =
        run_kvplan("plan --model llama-3-70b --gpu l4 --max-gpus 2 --context 8k --concurrency 8");
    REQUIRE(w.code == 0);
    CHECK_THAT(w.out, Catch::Contains("none starts: on 2 x l4"));
    CHECK_THAT(w.out, Catch::Contains("the weights (65.71 GiB)"));
    // The refused replica shown is the one nearest to starting (the least memory a GPU lacks),
    // named by its whole layout: of Qwen3-235B-A22B-FP8's two-L4 layouts, tp 2 halves the
    // 220 GiB of weights on each GPU (110.16 GiB), where two data-parallel ranks of tp 1 (the
    // first refused at two GPUs) hold all of them on each.
    const CliRun dp =
        run_kvplan("plan --model " + std::string(KVPLAN_SOURCE_DIR) +
                   "/tests/data/fp8/qwen3-235b-a22b-fp8.json --gpu l4 --max-gpus 2 --context 8k "
                   "--concurrency 4");
    REQUIRE(dp.code == 0);
    CHECK_THAT(dp.out,
               Catch::Contains("none starts: on 2 x l4 (tp 2 x pp 1), the weights (110.16 GiB)"));
    // When a replica starts, the misses say the rest: no refusal in the verdict.
    const CliRun m = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm --max-gpus 4 --context 8k --concurrency 64");
    REQUIRE(m.code == 0);
    CHECK(m.out.find("none starts") == std::string::npos);
    CHECK_THAT(m.out, Catch::Contains("Nearest misses"));
}

TEST_CASE("the searches name vLLM's or SGLang's release whose defaults they used",
          "[cli][plan][review]") {
    // --engine-version changes each search's figures (v0.10's gpu_memory_utilization is 0.9,
    // engine/release.hpp), so each names it, as fit does: plan's and disagg's headings, and the
    // JSON inputs of plan, disagg, fleet and compare; SGLang's release (engine/sglang_release.hpp)
    // the same way.
    const std::string v = " --engine-version 0.10";
    const CliRun plan = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm --context 8k --concurrency 8 --top 1" + v);
    CHECK_THAT(plan.out, Catch::Contains("engine vllm 0.10; "));
    const std::string disagg =
        "disagg --model llama-3-70b --gpu h100-sxm --rate 10 --prompt-tokens 2000 "
        "--output-tokens 500 --ttft-ms 500 --tpot-ms 50";
    CHECK_THAT(run_kvplan(disagg + v).out, Catch::Contains(", engine vllm 0.10, "));
    for (const std::string& args :
         {"plan --model llama-3-70b --gpu h100-sxm --context 8k --concurrency 8 --top 1" + v,
          disagg + v,
          "fleet --model llama-3-70b --gpu h100-sxm --tp 4 --rate 20 --tpot-ms 30 "
          "--prompt-tokens 2000 --output-tokens 500" +
              v,
          "compare --model llama-3-70b --gpu h100-sxm --tp 4 --context 8k" + v}) {
        INFO(args);
        const CliRun r = run_kvplan(args + " --format json");
        REQUIRE(r.code == 0);
        CHECK(nlohmann::json::parse(r.out)["inputs"]["engine_version"] == "0.10");
    }
    const CliRun sglang = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm --context 8k --concurrency 8 --top 1 -e sglang "
        "--format json");
    // SGLang's release is its own: the newest kvplan knows unless given.
    CHECK(nlohmann::json::parse(sglang.out)["inputs"]["engine_version"] == "0.5.20");
    const CliRun sglang_04 = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm --context 8k --concurrency 8 --top 1 -e sglang "
        "--engine-version 0.4.3.post4 --format json");
    REQUIRE(sglang_04.code == 0);
    CHECK(nlohmann::json::parse(sglang_04.out)["inputs"]["engine_version"] == "0.4.3");
    // TensorRT-LLM has no release table; SGLang 0.4.7 needs a fraction given (its tag ran the tp
    // table, 0.4.7.post1 PR #7054's reserve, one release to kvplan): usage errors naming the flag.
    // 0.4.9 runs PR #7054's reserve and is named in the answer.
    const CliRun trtllm = run_kvplan(
        "fit --model llama-3-8b --gpu h100-sxm --context 8k -e trtllm --engine-version 0.10");
    CHECK(trtllm.code == 2);
    CHECK_THAT(trtllm.err, Catch::Contains("--engine-version"));
    const CliRun sglang_047 = run_kvplan(
        "fit --model llama-3-8b --gpu h100-sxm --context 8k -e sglang --engine-version 0.4.7");
    CHECK(sglang_047.code == 2);
    CHECK_THAT(sglang_047.err, Catch::Contains("0.4.7.post1"));
    CHECK(run_kvplan("fit --model llama-3-8b --gpu h100-sxm --context 8k -e sglang "
                     "--engine-version 0.4.7 --gpu-memory-utilization 0.9")
              .code == 0);
    CHECK(run_kvplan("fit --model llama-3-8b --gpu h100-sxm --context 8k -e sglang "
                     "--engine-version 0.4.9")
              .code == 0);
}

TEST_CASE("plan ranks by dollars per million output tokens under a TPOT target",
          "[cli][plan][review]") {
    const std::string args =
        "plan --model llama-3-70b --gpu h100-sxm,h200-sxm --context 3000 --concurrency 64 "
        "--prompt-tokens 2000 --output-tokens 1000 --prices " +
        prices + " --rank cost --tpot-ms 40 --pareto --format json";
    const CliRun r = run_kvplan(args);
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    const json& c = j["candidates"];
    REQUIRE(c.size() >= 2);
    for (std::size_t i = 0; i < c.size(); ++i) {
        // $/M = $/GPU-h / (tokens/s per GPU x 3,600) x 1e6, the example file's 3.0 and 3.8.
        const double price = c[i]["gpu"] == "h100-sxm" ? 3.0 : 3.8;
        CHECK(c[i]["dollars_per_gpu_hour"].get<double>() == price);
        CHECK(c[i]["dollars_per_million_output_tokens"].get<double>() ==
              Approx(price / (c[i]["tokens_per_second_per_gpu_estimate"].get<double>() * 3600) *
                     1e6));
        CHECK(c[i]["tpot_estimate_seconds"].get<double>() <= 0.040);
        if (i + 1 < c.size())
            CHECK(c[i]["dollars_per_million_output_tokens"].get<double>() <=
                  c[i + 1]["dollars_per_million_output_tokens"].get<double>());
    }
    // The front: along it, a lower TPOT costs tokens/s per GPU.
    const json& front = j["pareto"];
    REQUIRE_FALSE(front.empty());
    for (std::size_t i = 0; i + 1 < front.size(); ++i) {
        CHECK(front[i]["tpot_estimate_seconds"].get<double>() <=
              front[i + 1]["tpot_estimate_seconds"].get<double>());
        CHECK(front[i]["tokens_per_second_per_gpu_estimate"].get<double>() <=
              front[i + 1]["tokens_per_second_per_gpu_estimate"].get<double>());
    }
    // The left-out count and the example mark are said.
    const CliRun text =
        run_kvplan(args.substr(0, args.size() - std::string(" --format json").size()));
    CHECK_THAT(text.out, Catch::Contains("the TPOT target"));
    CHECK_THAT(text.out, Catch::Contains("an EXAMPLE, not a quote"));
}

TEST_CASE("plan refuses cost without prices and review flags without the estimate's load",
          "[cli][plan][review]") {
    const CliRun no_prices = run_kvplan(
        "plan --model llama-3-8b --gpu h100-sxm --prompt-tokens 1000 --output-tokens 100 --rank "
        "cost");
    CHECK(no_prices.code == 2);
    CHECK_THAT(no_prices.err, Catch::Contains("--prices"));
    const CliRun no_split = run_kvplan("plan --model llama-3-8b --gpu h100-sxm --pareto");
    CHECK(no_split.code == 2);
    CHECK_THAT(no_split.err, Catch::Contains("--prompt-tokens"));
    const CliRun no_file = run_kvplan(
        "plan --model llama-3-8b --gpu h100-sxm --prompt-tokens 1000 --output-tokens 100 --prices "
        "no-such.json");
    CHECK(no_file.code == 3);
    CHECK_THAT(no_file.err, Catch::Contains("no-such.json"));
}

TEST_CASE("fit shows what host, NVMe and remote tiers hold and how fast a sequence comes back",
          "[cli][fit][tiers]") {
    // Llama-3-8B at 8,192 tokens: 1 GiB a sequence (tests/plan/test_review.cpp). 64 GiB of host
    // memory hold 64; one comes back over the H100's 64 GB/s PCIe in 1,073,741,824 / 64e9 s.
    const CliRun r = run_kvplan(
        "fit --model llama-3-8b --gpu h100-sxm --context 8192 --host-kv 64GiB --nvme-kv 1TB "
        "--format json");
    REQUIRE(r.code == 0);
    const json t = json::parse(r.out)["kv_tiers"];
    REQUIRE(t.size() == 2);
    CHECK(t[0]["tier"] == "host");
    CHECK(t[0]["sequences"] == 64);
    CHECK(t[0]["back_seconds"].get<double>() == Approx(1'073'741'824.0 / 64e9));
    CHECK(t[1]["tier"] == "nvme");
    CHECK(t[1]["sequences"] == 931);  // 1e12 / 1,073,741,824 = 931.3
    CHECK(t[0]["back_over_recompute"].get<double>() < 1.0);
    const CliRun bad = run_kvplan("fit --model llama-3-8b --gpu h100-sxm --host-kv lots");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--host-kv"));
}

TEST_CASE("fit takes vLLM's --kv-offloading-size as a number of GiB, as --host-kv",
          "[cli][fit][tiers]") {
    // vLLM's flag is a bare GiB count for the engine (vllm/config/cache.py, kv_offloading_size):
    // 64 is 64 x 2^30 B, the 64 one-GiB sequences of --host-kv 64GiB above, and the vLLM command
    // printed carries it back as --kv-offloading-size 64.
    const CliRun r = run_kvplan(
        "fit --model llama-3-8b --gpu h100-sxm --context 8192 --kv-offloading-size 64 --format "
        "json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    CHECK(j["kv_tiers"][0]["tier"] == "host");
    CHECK(j["kv_tiers"][0]["sequences"] == 64);
    CHECK_THAT(r.out, Catch::Contains("--kv-offloading-size 64"));
    // A unit is refused (vLLM would not take it), and so is giving both names.
    const CliRun unit =
        run_kvplan("fit --model llama-3-8b --gpu h100-sxm --kv-offloading-size 64GiB");
    CHECK(unit.code == 2);
    CHECK_THAT(unit.err, Catch::Contains("--kv-offloading-size"));
    const CliRun both =
        run_kvplan("fit --model llama-3-8b --gpu h100-sxm --host-kv 64GiB --kv-offloading-size 64");
    CHECK(both.code == 2);
}

TEST_CASE("plan reads --expert-dtype alone and a draft model as fit does", "[cli][plan][review]") {
    // Qwen3-30B-A3B with fp8 experts on one H100: the candidate's weights and sequences are fit's
    // for the same flags (the checkpoint's bf16 beside fp8 experts), where bf16 experts leave no
    // room for 48 sequences on one GPU.
    const std::string qwen =
        " --model qwen3-30b-a3b --gpu h100-sxm --context 8k --concurrency 48 --expert-dtype fp8";
    const CliRun plan = run_kvplan("plan" + qwen + " --max-gpus 1 --format json");
    const CliRun fit = run_kvplan("fit" + qwen + " --format json");
    REQUIRE(plan.code == 0);
    REQUIRE(fit.code == 0);
    const json row = json::parse(plan.out)["candidates"][0];
    CHECK(row["weights"] == "bf16, experts fp8");
    CHECK(row["max_concurrency"] == json::parse(fit.out)["max_concurrency"]);
    CHECK(json::parse(run_kvplan("plan --model qwen3-30b-a3b --gpu h100-sxm --context 8k "
                                 "--concurrency 48 --max-gpus 1 --format json")
                          .out)["found"] == false);
    // Qwen3-0.6B drafting for Qwen3-32B: the drafter is read (it was refused as missing), and the
    // 4-GPU candidate holds what fit says of tp 4.
    const std::string draft =
        " --model qwen3-32b --gpu h100-sxm --context 8k --concurrency 48 --speculative-method "
        "draft_model --draft-model qwen3-0.6b --num-speculative-tokens 3 --format json";
    const CliRun p = run_kvplan("plan" + draft);
    const CliRun f = run_kvplan("fit --tp 4" + draft);
    REQUIRE(p.code == 0);
    REQUIRE(f.code == 0);
    const json best = json::parse(p.out)["candidates"][0];
    CHECK(best["gpus"] == 4);
    CHECK(best["max_concurrency"] == json::parse(f.out)["max_concurrency"]);
}
