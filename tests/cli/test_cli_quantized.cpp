// Quantized checkpoints through the built binary: `kvplan size` and `fit` read a model folder's
// hf_quant_config.json (NVIDIA ModelOpt) and size the weights from it.

#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

namespace {

std::string folder(const std::string& name) { return data_file("quantized/" + name); }

}  // namespace

TEST_CASE("size reads hf_quant_config.json beside config.json: Qwen3-235B-A22B-NVFP4 134.1 GB",
          "[cli][quantized]") {
    // tests/hf_config/test_quantized.cpp derives 134,101,505,504 B: NVFP4 attention and experts (4
    // bits and an fp8 scale per 16 weights, an fp32 scale per matrix), bf16 routers, norms,
    // embedding and LM head. Without hf_quant_config.json the same config.json says bfloat16:
    // 470,187,269,120 B.
    for (const std::string& model :
         {folder("Qwen3-235B-A22B-NVFP4"), folder("Qwen3-235B-A22B-NVFP4/config.json")}) {
        INFO(model);
        const CliRun r = run_kvplan("size --context 8k --model " + model);
        CHECK(r.code == 0);
        CHECK_THAT(r.out, Catch::Contains("Weights, whole model") &&
                              Catch::Contains("(134,101,505,504 B)") &&
                              Catch::Contains("quantization read from hf_quant_config.json"));
    }
}

TEST_CASE("size says when the weights' format is assumed, as fit does", "[cli][quantized]") {
    // gpt-j-6b's config.json states neither a torch_dtype nor a quantization_config: its
    // parameters are sized at 2 B each. 28 layers of q, k, v, o 4 x 4,096^2, fc_in and fc_out
    // 2 x 4,096 x 16,384 with biases 16,384 + 4,096, ln_1 2 x 4,096 (201,355,264); wte and the
    // LM head 50,400 x 4,096 each, its bias 50,400, ln_f 2 x 4,096: 6,050,882,784 x 2 B.
    const CliRun r = run_kvplan("size --context 2k --model gpt-j-6b");
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("(12,101,765,568 B)") &&
                          Catch::Contains("note: weights sized as bf16 (no quantization_config or "
                                          "torch_dtype: bf16 assumed); --weight-dtype sets them"));
    // A format the checkpoint states brings no such note.
    const CliRun q = run_kvplan("size --context 8k --model " + folder("Qwen3-235B-A22B-NVFP4"));
    CHECK_THAT(q.out, !Catch::Contains("weights sized as bf16"));
}

TEST_CASE("an NVFP4 checkpoint with an FP8 KV cache is sized and started as vLLM's auto stores it",
          "[cli][quantized]") {
    // Qwen3-235B-A22B-NVFP4's hf_quant_config.json names kv_cache_quant_algo FP8: vLLM's
    // --kv-cache-dtype auto is fp8_e4m3 (engine/checkpoint_kv.hpp). 94 layers x 4 KV heads x 128
    // dims x K and V x 1 B = 96,256 B a token, half of bf16's 192,512 B.
    const std::string model = folder("Qwen3-235B-A22B-NVFP4");
    const CliRun size = run_kvplan("size --context 8k --model " + model);
    CHECK(size.code == 0);
    CHECK_THAT(size.out, Catch::Contains("KV cache in fp8_e4m3") && Catch::Contains("(96,256 B)"));
    const std::string fit = "fit --context 8k --gpu b200 --tp 4 --concurrency 48 --model " + model;
    const CliRun dflt = run_kvplan(fit);
    CHECK(dflt.code == 0);
    CHECK_THAT(dflt.out, Catch::Contains("--kv-cache-dtype fp8_e4m3") &&
                             Catch::Contains("KV cache in fp8_e4m3: the checkpoint's "
                                             "kv_cache_quant_algo, which vllm's default"));
    // --kv-dtype still wins, and the command says so.
    const CliRun bf16 = run_kvplan(fit + " --kv-dtype bf16");
    CHECK(bf16.code == 0);
    CHECK_THAT(bf16.out, Catch::Contains("--kv-cache-dtype bfloat16") &&
                             !Catch::Contains("the checkpoint's kv_cache_quant_algo"));
    const CliRun bf16_size = run_kvplan("size --context 8k --kv-dtype bf16 --model " + model);
    CHECK_THAT(bf16_size.out, Catch::Contains("(192,512 B)"));
}

TEST_CASE("diff and a check policy without kv_dtype store the checkpoint's fp8 cache, as fit does",
          "[cli][quantized]") {
    // Qwen3-235B-A22B-NVFP4 names kv_cache_quant_algo FP8; the bundled qwen3-235b-a22b is the same
    // config.json with no quantization: 94 layers x 4 KV heads x 128 dims x K and V, 1 B a value
    // in fp8 = 96,256 B a token against bf16's 2 B = 192,512 B. Each model at its own engine
    // default, and on 4 x B200 the same concurrency as fit gives the folder.
    const std::uint64_t fp8 = 94ULL * 4 * 128 * 2 * 1, bf16 = 94ULL * 4 * 128 * 2 * 2;
    const std::string model = folder("Qwen3-235B-A22B-NVFP4");
    const std::string replica = " --gpu b200 --tp 4 --context 8k --format json";
    const CliRun fit = run_kvplan("fit --model " + model + replica);
    REQUIRE(fit.code == 0);
    const auto fit_concurrency =
        nlohmann::json::parse(fit.out)["max_concurrency"].get<std::uint64_t>();

    const CliRun diff = run_kvplan("diff qwen3-235b-a22b " + model + replica);
    REQUIRE(diff.code == 0);
    const nlohmann::json d = nlohmann::json::parse(diff.out);
    CHECK(d["inputs"]["kv_dtype"] == "bf16 -> fp8_e4m3");
    for (const auto& row : d["effects"]) {
        if (row["figure"] == "kv_bytes_per_token") {
            CHECK(row["old"].get<std::uint64_t>() == bf16);
            CHECK(row["new"].get<std::uint64_t>() == fp8);
        }
        if (row["figure"] == "max_concurrency")
            CHECK(row["new"].get<std::uint64_t>() == fit_concurrency);
    }
    CHECK_THAT(d["notes"].dump(), Catch::Contains("the checkpoint's kv_cache_quant_algo"));

    // tests/data/cli/policy_checkpoint_kv.json: b200 tp 4, no kv_dtype; max_kv_bytes_per_token
    // 96,256 passes only at fp8.
    const CliRun check =
        run_kvplan("check --format json --policy " + data_file("cli/policy_checkpoint_kv.json") +
                   " --model " + model);
    REQUIRE(check.code == 0);
    const nlohmann::json c = nlohmann::json::parse(check.out);
    CHECK(c["passed"] == true);
    CHECK(c["inputs"]["kv_dtype"] == "fp8_e4m3");
    REQUIRE(c["requirements"].size() == 2);
    CHECK(c["requirements"][0]["measured"].get<std::uint64_t>() == fp8);
    CHECK(c["requirements"][1]["measured"].get<std::uint64_t>() == fit_concurrency);
    // The text names the KV dtype evaluated, not the policy's unset one.
    CHECK_THAT(run_kvplan("check --policy " + data_file("cli/policy_checkpoint_kv.json") +
                          " --model " + model)
                   .out,
               Catch::Contains("KV fp8_e4m3"));
}

TEST_CASE("diff sizes KV as evaluate does with a GPU, and says so without one",
          "[cli][quantized][diff]") {
    // DeepSeek-V3.2-NVFP4 names kv_cache_quant_algo FP8; the bundled deepseek-v3.2 is bf16. 61
    // layers, each a latent of 512 + 64 values and the indexer's key of 128 fp8 values with one
    // fp32 scale (132 B): bf16 61 x (1,152 + 132) = 78,324 B a token; plain fp8 61 x (576 + 132)
    // = 43,188 B; vLLM's fp8_ds_mla (512 e4m3 + 4 fp32 scales + 64 bf16 = 656 B) 61 x (656 +
    // 132) = 48,068 B.
    const std::string model = folder("DeepSeek-V3.2-NVFP4");
    const auto kv_row = [](const nlohmann::json& j, const char* figure) {
        for (const auto& row : j["effects"])
            if (row["figure"] == figure) return row;
        FAIL("no row " << figure);
        return nlohmann::json{};
    };
    // No GPU: the dtype before the engine's layout, labelled so, and a note naming the layout.
    const CliRun bare = run_kvplan("diff deepseek-v3.2 " + model + " --format json");
    REQUIRE(bare.code == 0);
    const nlohmann::json b = nlohmann::json::parse(bare.out);
    CHECK(b["inputs"]["kv_dtype"] == "bf16 -> fp8_e4m3");
    CHECK(b["inputs"]["kv_layout"].get<std::string>().rfind("not applied", 0) == 0);
    CHECK(kv_row(b, "kv_bytes_per_token")["old"].get<std::uint64_t>() == 78'324);
    CHECK(kv_row(b, "kv_bytes_per_token")["new"].get<std::uint64_t>() == 43'188);
    CHECK_THAT(b["notes"].dump(), Catch::Contains("as fp8_ds_mla on FLASHMLA_SPARSE"));
    CHECK_THAT(run_kvplan("diff deepseek-v3.2 " + model).out,
               Catch::Contains("Effect (KV in the dtype before the engine's layout"));

    // H100 x 8: FLASHMLA_SPARSE's fp8_ds_mla, the figure fit gives (a sequence of 8,000 tokens
    // is 8,000 x 48,068 = 384,544,000 B, whole on every rank: the latent is not split).
    const std::string replica = " --gpu h100 --tp 8 --context 8k --format json";
    const CliRun h100 = run_kvplan("diff deepseek-v3.2 " + model + replica);
    REQUIRE(h100.code == 0);
    const nlohmann::json h = nlohmann::json::parse(h100.out);
    CHECK(h["inputs"]["kv_dtype"] == "bf16 -> fp8_ds_mla");
    CHECK(kv_row(h, "kv_bytes_per_token")["new"].get<std::uint64_t>() == 48'068);
    CHECK(kv_row(h, "kv_bytes_per_sequence")["new"].get<std::uint64_t>() == 384'544'000);
    const CliRun fit = run_kvplan("fit --model " + model + replica);
    REQUIRE(fit.code == 0);
    CHECK(nlohmann::json::parse(fit.out)["kv_bytes_per_sequence_per_gpu"].get<std::uint64_t>() ==
          384'544'000);
    CHECK_THAT(h["notes"].dump(), !Catch::Contains("FLASHMLA_SPARSE"));
    // MI300X x 8: ROCm's sparse MLA stores plain fp8.
    const CliRun mi = run_kvplan("diff deepseek-v3.2 " + model +
                                 " --gpu mi300x --tp 8 --context 8k --format json");
    REQUIRE(mi.code == 0);
    const nlohmann::json m = nlohmann::json::parse(mi.out);
    CHECK(m["inputs"]["kv_dtype"] == "bf16 -> fp8_e4m3");
    CHECK(kv_row(m, "kv_bytes_per_token")["new"].get<std::uint64_t>() == 43'188);
    // B200 x 8: vLLM from v0.18 runs an fp8 sparse MLA cache on FLASHINFER_MLA_SPARSE, plain fp8.
    const CliRun b200 =
        run_kvplan("diff deepseek-v3.2 " + model + " --gpu b200 --tp 8 --context 8k --format json");
    REQUIRE(b200.code == 0);
    const nlohmann::json bw = nlohmann::json::parse(b200.out);
    CHECK(bw["inputs"]["kv_dtype"] == "bf16 -> fp8_e4m3");
    CHECK(kv_row(bw, "kv_bytes_per_token")["new"].get<std::uint64_t>() == 43'188);
    CHECK_THAT(run_kvplan("fit --model " + model + " --gpu b200 --tp 8 --context 8k").out,
               Catch::Contains("FLASHINFER_MLA_SPARSE"));
}

TEST_CASE("check names one KV format, the one evaluated, in its heading and its inputs",
          "[cli][quantized][check]") {
    // tests/data/cli/policy_sparse_mla_kv.json: h100 tp 8, no kv_dtype. DeepSeek-V3.2-NVFP4's
    // checkpoint names an FP8 cache; vLLM's FLASHMLA_SPARSE stores it as fp8_ds_mla, 61 x (656 +
    // 132) = 48,068 B a token, which the policy's limit of 48,068 B admits.
    const std::string args = " --policy " + data_file("cli/policy_sparse_mla_kv.json") +
                             " --model " + folder("DeepSeek-V3.2-NVFP4");
    const CliRun json = run_kvplan("check --format json" + args);
    REQUIRE(json.code == 0);
    const nlohmann::json c = nlohmann::json::parse(json.out);
    CHECK(c["passed"] == true);
    CHECK(c["inputs"]["kv_dtype"] == "fp8_ds_mla");
    CHECK(c["requirements"][0]["measured"].get<std::uint64_t>() == 48'068);
    const CliRun text = run_kvplan("check" + args);
    CHECK_THAT(text.out, Catch::Contains("KV fp8_ds_mla") && !Catch::Contains("KV fp8_e4m3"));
}

TEST_CASE("an explanation names where the KV dtype came from", "[cli][quantized]") {
    const std::string model = folder("Qwen3-235B-A22B-NVFP4");
    const std::string label = "(the checkpoint's kv_cache_quant_algo, which vllm's auto follows";
    for (const std::string& cmd : {std::string("size --context 8k --explain --model "),
                                   std::string("fit --gpu b200 --tp 4 --context 8k --explain "
                                               "--model ")}) {
        INFO(cmd);
        const CliRun dflt = run_kvplan(cmd + model);
        CHECK(dflt.code == 0);
        CHECK_THAT(dflt.out, Catch::Contains("kv dtype fp8_e4m3") && Catch::Contains(label));
        const CliRun given = run_kvplan(cmd + model + " --kv-dtype fp8");
        CHECK_THAT(given.out, Catch::Contains("(--kv-dtype)") && !Catch::Contains(label));
    }
}

TEST_CASE("fit names each part's format and sizes a rank from the checkpoint's quantization",
          "[cli][quantized]") {
    // DeepSeek-V3.2-NVFP4 (tests/hf_config/test_quantized.cpp): 388,082,983,376 B whole, attention
    // bf16 but its o_proj NVFP4.
    const CliRun whole = run_kvplan("size --context 8k --model " + folder("DeepSeek-V3.2-NVFP4"));
    CHECK(whole.code == 0);
    CHECK_THAT(whole.out, Catch::Contains("(388,082,983,376 B)"));
    const CliRun fit =
        run_kvplan("fit --context 32k --gpu b200 --tp 8 --model " + folder("DeepSeek-V3.2-NVFP4"));
    CHECK(fit.code == 0);
    CHECK_THAT(fit.out, Catch::Contains("weights nvfp4, attention bf16, attention output nvfp4 "
                                        "(the checkpoint's, quantization_config (ModelOpt))"));
    // --weight-dtype still overrides the checkpoint's format.
    const CliRun bf16 = run_kvplan("size --context 8k --weight-dtype bf16 --model " +
                                   folder("Qwen3-235B-A22B-NVFP4"));
    CHECK(bf16.code == 0);
    CHECK_THAT(bf16.out, Catch::Contains("(470,187,269,120 B)"));
}
