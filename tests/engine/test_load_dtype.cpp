// The dtype an engine loads a float32 checkpoint in (engine/load_dtype.hpp), on Gemma-2-27B,
// whose config.json says torch_dtype float32, and on a float32 edit of Llama-3.1-8B's.

#include <catch2/catch.hpp>
#include <kvplan/engine/load_dtype.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan/commands.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <optional>
#include <string>

#include "../support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

// Gemma-2-27B's parameters from its config.json (hidden 4,608, 46 layers, 32 query heads and 16
// KV heads of 128, intermediate 36,864, vocabulary 256,000, tied embeddings):
//   a layer: q 4,608 x 4,096 = 18,874,368; k and v 2 x 4,608 x 2,048 = 18,874,368; o 4,096 x
//            4,608 = 18,874,368; the gated MLP 3 x 4,608 x 36,864 = 509,607,936; four norms
//            4 x 4,608 = 18,432; together 566,249,472;
//   46 layers 26,047,475,712, the final norm 4,608, the embedding 256,000 x 4,608 =
//   1,179,648,000: 27,227,128,320, the Gemma 2 report's 27B row (tests/data/official_params.json).
constexpr std::uint64_t gemma_2_27b_params = 27'227'128'320ULL;

/// Llama-3.1-8B's config.json with torch_dtype float32: a float32 checkpoint that is no Gemma.
Model llama_in_fp32() {
    Json j = bundled_json("llama-3.1-8b");
    j["torch_dtype"] = "float32";
    return model_from_hf_json(j, "llama-3.1-8b-fp32.json");
}

}  // namespace

TEST_CASE("each engine's dtype auto for a float32 checkpoint", "[load_dtype]") {
    // vLLM main (_resolve_auto_dtype): the platform's first supported dtype, bf16 from CUDA 8.0;
    // its v0.8 line downcast every float32 model to fp16.
    STATIC_REQUIRE(fp32_load_format(Engine::vllm, vllm_newest_release, false) ==
                   WeightFormat::bf16);
    STATIC_REQUIRE(fp32_load_format(Engine::vllm, {0, 19}, true) == WeightFormat::bf16);
    STATIC_REQUIRE(fp32_load_format(Engine::vllm, {0, 9}, false) == WeightFormat::bf16);
    STATIC_REQUIRE(fp32_load_format(Engine::vllm, {0, 8}, false) == WeightFormat::fp16);
    // SGLang (model_config.py, _get_and_verify_dtype): bf16 for a Gemma, fp16 otherwise.
    STATIC_REQUIRE(fp32_load_format(Engine::sglang, {}, true) == WeightFormat::bf16);
    STATIC_REQUIRE(fp32_load_format(Engine::sglang, {}, false) == WeightFormat::fp16);
    // TensorRT-LLM's PyTorch backend builds the model in the config's torch_dtype.
    STATIC_REQUIRE(!fp32_load_format(Engine::trtllm, {}, true));
    STATIC_REQUIRE(!fp32_load_format(Engine::ideal, {}, true));
}

TEST_CASE("Gemma-2-27B's float32 checkpoint loads in bf16 under vLLM and SGLang", "[load_dtype]") {
    const Model g = bundled("gemma-2-27b");
    const CheckpointFormat& c = g.config().checkpoint;
    CHECK(c.known);
    CHECK(c.gemma);  // model_type gemma2
    CHECK(c.linear == WeightFormat::fp32);
    CHECK(c.rest == WeightFormat::fp32);
    // Stored: 4 B a parameter, 108,908,513,280 B (101.43 GiB); what TensorRT-LLM and the ideal
    // profile hold.
    CHECK(weight_bytes(g, checkpoint_weights(g)).total().count() == gemma_2_27b_params * 4);
    CHECK(engine_load_weights(g, Engine::trtllm).format == WeightFormat::fp32);
    CHECK(engine_load_weights(g, Engine::ideal).format == WeightFormat::fp32);
    // vLLM's dtype auto: 2 B a parameter, embeddings and norms too, 54,454,256,640 B = 50.71
    // GiB, against "Model loading took 50.72 GiB" of vLLM 0.19.0 on one H100
    // (tests/data/startup_logs/vllm/gemma-2-27b-h100-8k.log).
    for (const Engine e : {Engine::vllm, Engine::sglang}) {
        const WeightOptions w = engine_load_weights(g, e);
        CHECK(w.format == WeightFormat::bf16);
        CHECK(weight_bytes(g, w).total().count() == gemma_2_27b_params * 2);
        CHECK(engine_downcasts(g, e));
    }
    CHECK(engine_load_weights(g, Engine::vllm, EngineVersion{0, 8}).format == WeightFormat::fp16);
    CHECK_FALSE(engine_downcasts(g, Engine::trtllm));
}

TEST_CASE("a float32 checkpoint that is no Gemma is fp16 under SGLang and vLLM 0.8",
          "[load_dtype]") {
    const Model m = llama_in_fp32();
    CHECK_FALSE(m.config().checkpoint.gemma);
    CHECK(engine_load_weights(m, Engine::vllm).format == WeightFormat::bf16);
    CHECK(engine_load_weights(m, Engine::vllm, EngineVersion{0, 8}).format == WeightFormat::fp16);
    CHECK(engine_load_weights(m, Engine::sglang).format == WeightFormat::fp16);
    // Both 16-bit types weigh 2 B a weight: half the stored float32.
    CHECK(2 * weight_bytes(m, engine_load_weights(m, Engine::sglang)).total().count() ==
          weight_bytes(m, checkpoint_weights(m)).total().count());
    // A bf16 checkpoint is loaded as stored by every engine.
    const Model b = bundled("llama-3.1-8b");
    for (const Engine e : all_engines) {
        CHECK_FALSE(engine_downcasts(b, e));
        CHECK(engine_load_weights(b, e).format == WeightFormat::bf16);
    }
}

TEST_CASE("vLLM starts Gemma-2-27B on one H100 in bf16, and not in a given float32",
          "[load_dtype][evaluate]") {
    const Deployment d{.model = bundled("gemma-2-27b"), .gpu = bundled_gpu("h100-sxm")};
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    CHECK(a.weight_source == WeightSource::downcast);
    CHECK(a.replica.weights.format == WeightFormat::bf16);
    CHECK(a.weights.total().count() == gemma_2_27b_params * 2);
    CHECK(a.starts());
    // --weight-dtype fp32 is honoured: 101.43 GiB of weights on a 79.19 GiB H100.
    Deployment fp32 = d;
    fp32.weights = WeightOptions{.format = WeightFormat::fp32};
    const ReplicaAnswer f = evaluate(fp32, {.context = 8192});
    CHECK(f.weight_source == WeightSource::given);
    CHECK(f.weights.total().count() == gemma_2_27b_params * 4);
    CHECK(f.refusal == Refusal::weights);
    // The command asks for nothing: vLLM's dtype auto is the bf16 evaluated.
    const std::vector<ServeCommand> cmds = serve_node_commands(a);
    REQUIRE(cmds.size() == 1);
    CHECK(cmds[0].line().find("--dtype") == std::string::npos);
    CHECK(cmds[0].line().find("--quantization") == std::string::npos);
}
