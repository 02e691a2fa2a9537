// The KV cache a checkpoint's quantization names (CheckpointFormat::kv_cache) and the dtype each
// engine's "auto" then stores (engine/checkpoint_kv.hpp), from the published files in
// tests/data/quantized.

#include <catch2/catch.hpp>
#include <kvplan/engine/checkpoint_kv.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/plan/evaluate.hpp>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

const std::filesystem::path kv_folders = data_dir / "quantized";

Model kv_model(const Json& j) { return model_from_hf_json(j, "config.json"); }

/// An llm-compressor FP8 export (the shape of RedHatAI's *-FP8-KV checkpoints): weights fp8 per
/// channel, kv_cache_scheme num_bits 8 float; Llama-3-8B's attention, 32 layers x 8 KV heads x
/// 128: 2 x 32 x 8 x 128 = 65,536 values a token, 65,536 B in fp8.
Json llm_compressor_fp8_kv() {
    return {{"model_type", "llama"},
            {"architectures", {"LlamaForCausalLM"}},
            {"hidden_size", 4096},
            {"intermediate_size", 14336},
            {"num_hidden_layers", 32},
            {"num_attention_heads", 32},
            {"num_key_value_heads", 8},
            {"vocab_size", 128256},
            {"max_position_embeddings", 8192},
            {"torch_dtype", "bfloat16"},
            {"quantization_config",
             {{"quant_method", "compressed-tensors"},
              {"config_groups",
               {{"group_0",
                 {{"targets", {"Linear"}},
                  {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}}}}}}},
              {"kv_cache_scheme",
               {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}, {"dynamic", false}}}}}};
}

}  // namespace

TEST_CASE("an NVFP4 checkpoint with kv_cache_quant_algo FP8 is sized in fp8 under vLLM, half bf16",
          "[checkpoint_kv]") {
    // nvidia/Qwen3-235B-A22B-NVFP4's hf_quant_config.json: "kv_cache_quant_algo": "FP8".
    const Model m = load_hf_config(kv_folders / "Qwen3-235B-A22B-NVFP4");
    const CheckpointFormat& c = m.config().checkpoint;
    REQUIRE(c.kv_cache.has_value());
    CHECK(*c.kv_cache == KvDtype::fp8_e4m3);
    CHECK(c.kv_source == CheckpointKvSource::modelopt_algo);
    const KvDtype vllm = engine_default_kv_dtype(m, Engine::vllm);
    CHECK(vllm == KvDtype::fp8_e4m3);
    // config.json: 94 layers x 4 KV heads x head_dim 128, K and V: bf16 2 x 94 x 4 x 128 x 2 B =
    // 192,512 B a token; fp8 1 B a value, 96,256 B: vLLM's default holds twice the tokens.
    CHECK(kv_bytes_per_token(m, KvFormat(KvDtype::bf16)).count() == 192'512);
    CHECK(kv_bytes_per_token(m, KvFormat(vllm)).count() == 96'256);
    // SGLang and TensorRT-LLM follow the FP8 name too; v0.13 predates vLLM PR #30785.
    CHECK(engine_default_kv_dtype(m, Engine::sglang) == KvDtype::fp8_e4m3);
    CHECK(engine_default_kv_dtype(m, Engine::trtllm) == KvDtype::fp8_e4m3);
    CHECK(engine_default_kv_dtype(m, Engine::vllm, {0, 13}) == KvDtype::bf16);
    CHECK(engine_default_kv_dtype(m, Engine::ideal) == KvDtype::bf16);
}

TEST_CASE("a ModelOpt config.json's kv_cache_scheme names fp8; TensorRT-LLM keeps bf16",
          "[checkpoint_kv]") {
    // nvidia/Kimi-K2.6-NVFP4's config.json: quant_method modelopt, kv_cache_scheme
    // {dynamic: false, num_bits: 8, type: float}.
    const Model m = load_hf_config(kv_folders / "Kimi-K2.6-NVFP4");
    const CheckpointFormat& c = m.config().checkpoint;
    CHECK(c.kv_cache == KvDtype::fp8_e4m3);
    CHECK(c.kv_source == CheckpointKvSource::modelopt_scheme);
    CHECK(engine_default_kv_dtype(m, Engine::vllm) == KvDtype::fp8_e4m3);
    CHECK(engine_default_kv_dtype(m, Engine::sglang) == KvDtype::fp8_e4m3);
    CHECK(engine_default_kv_dtype(m, Engine::trtllm) == KvDtype::bf16);
    // MLA: one latent of kv_lora_rank 512 + qk_rope_head_dim 64 = 576 values a layer, 61 layers:
    // 61 x 576 x 2 B = 70,272 B in bf16, 35,136 B in fp8.
    CHECK(kv_bytes_per_token(m, KvFormat(KvDtype::bf16)).count() == 70'272);
    CHECK(kv_bytes_per_token(m, KvFormat(KvDtype::fp8_e4m3)).count() == 35'136);
}

TEST_CASE("checkpoints that name no KV cache keep every engine's default bf16", "[checkpoint_kv]") {
    // DeepSeek-V4-Flash-NVFP4's hf_quant_config.json: "kv_cache_quant_algo": null.
    const Model v4 = load_hf_config(kv_folders / "DeepSeek-V4-Flash-NVFP4");
    CHECK_FALSE(v4.config().checkpoint.kv_cache.has_value());
    CHECK(engine_default_kv_dtype(v4, Engine::vllm) == KvDtype::bf16);
    // Qwen3-32B-FP8-Static-PerTensor: a ModelOpt 0.31 config.json without quant_method, whose
    // kv_cache_scheme "FP8" vLLM's resolver does not reach (it asks quant_method first).
    const Model q = load_hf_config(kv_folders / "Qwen3-32B-FP8-Static-PerTensor");
    CHECK_FALSE(q.config().checkpoint.kv_cache.has_value());
    // Llama-3-70B (the headline's model): bf16, no quantization_config.
    const Model llama = bundled("llama-3-70b");
    CHECK_FALSE(llama.config().checkpoint.kv_cache.has_value());
    CHECK(engine_default_kv_dtype(llama, Engine::vllm) == KvDtype::bf16);
}

TEST_CASE("compressed-tensors' kv_cache_scheme is fp8 under vLLM, bf16 under SGLang",
          "[checkpoint_kv]") {
    // llm_compressor_fp8_kv: 65,536 values a token.
    Json j = llm_compressor_fp8_kv();
    const Model m = kv_model(j);
    CHECK(m.config().checkpoint.kv_source == CheckpointKvSource::compressed_tensors);
    CHECK(engine_default_kv_dtype(m, Engine::vllm, {0, 8}) == KvDtype::fp8_e4m3);
    CHECK(engine_default_kv_dtype(m, Engine::sglang) == KvDtype::bf16);
    CHECK(kv_bytes_per_token(m, KvFormat(engine_default_kv_dtype(m, Engine::vllm))).count() ==
          65'536);
    // An int8 scheme is no fp8 cache: nothing recorded.
    j["quantization_config"]["kv_cache_scheme"]["type"] = "int";
    CHECK_FALSE(kv_model(j).config().checkpoint.kv_cache.has_value());
}

TEST_CASE("a ModelOpt NVFP4 KV name is vLLM's nvfp4 from v0.20, the rest ignore it",
          "[checkpoint_kv]") {
    Json j = read_json_file(kv_folders / "Qwen3-235B-A22B-NVFP4" / "config.json");
    const Json q = read_json_file(kv_folders / "Qwen3-235B-A22B-NVFP4" / "hf_quant_config.json");
    j["quantization_config"] = q["quantization"];
    j["quantization_config"]["quant_method"] = "modelopt";
    j["quantization_config"]["kv_cache_quant_algo"] = "NVFP4";
    const Model m = kv_model(j);
    CHECK(m.config().checkpoint.kv_cache == KvDtype::nvfp4);
    CHECK(engine_default_kv_dtype(m, Engine::vllm) == KvDtype::nvfp4);
    CHECK(engine_default_kv_dtype(m, Engine::vllm, {0, 19}) == KvDtype::bf16);
    CHECK(engine_default_kv_dtype(m, Engine::sglang) == KvDtype::bf16);
    CHECK(engine_default_kv_dtype(m, Engine::trtllm) == KvDtype::nvfp4);
    // MIXED_PRECISION is vLLM's "auto": nothing recorded.
    j["quantization_config"]["kv_cache_quant_algo"] = "MIXED_PRECISION";
    CHECK_FALSE(kv_model(j).config().checkpoint.kv_cache.has_value());
}

TEST_CASE("vLLM through v0.21 stores compressed-tensors' fp8 over a --kv-dtype bf16 given",
          "[checkpoint_kv]") {
    // Attention.__init__ (vllm/model_executor/layers/attention/attention.py) turned the cache fp8
    // whenever the checkpoint had a kv_cache_scheme, whatever --kv-cache-dtype said, until PR
    // #42782 (v0.22) let a dtype given win. llm_compressor_fp8_kv: 65,536 values a token.
    const Model m = kv_model(llm_compressor_fp8_kv());
    Deployment d{.model = m, .gpu = gpus::h100_sxm, .kv = KvDtype::bf16};
    d.serving.engine_version = EngineVersion{0, 21};
    const ReplicaAnswer old = evaluate(d, {.context = 4096});
    CHECK(old.replica.kv.dtype == KvDtype::fp8_e4m3);
    CHECK(old.kv_per_token.count() == 65'536);  // 1 B a value
    d.serving.engine_version = EngineVersion{0, 22};
    const ReplicaAnswer now = evaluate(d, {.context = 4096});
    CHECK(now.replica.kv.dtype == KvDtype::bf16);
    CHECK(now.kv_per_token.count() == 131'072);  // 2 B a value
    // SGLang never reads compressed-tensors' scheme: bf16 as given.
    d.serving.engine = Engine::sglang;
    d.serving.engine_version.reset();
    CHECK(evaluate(d, {.context = 4096}).replica.kv.dtype == KvDtype::bf16);
}
