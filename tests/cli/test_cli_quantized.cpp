// Quantized checkpoints through the built binary: `kvplan size` and `fit` read a model folder's
// hf_quant_config.json (NVIDIA ModelOpt) and size the weights from it.

#include <catch2/catch.hpp>
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
