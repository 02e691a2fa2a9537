// The checkpoint's own weight format and the model's context limit, as a config.json states them.

#include <catch2/catch.hpp>
#include <cstring>
#include <kvplan/hf_config.hpp>
#include <kvplan/weights.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

/// llama-3-8b with `quantization_config` replaced.
Model with_quantization(const Json& q) {
    Json j = bundled_json("llama-3-8b");
    j["quantization_config"] = q;
    return model_from_hf_json(j, "q.json", "q", {});
}

/// A minimal Llama config with the length keys of `extra`.
Model with_lengths(const Json& extra) {
    Json j = {{"model_type", "llama"},    {"num_hidden_layers", 2},   {"hidden_size", 256},
              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 512},
              {"vocab_size", 1000}};
    for (const auto& [k, v] : extra.items()) j[k] = v;
    return model_from_hf_json(j, "len.json", "len", {});
}

}  // namespace

TEST_CASE("gpt-oss-120b is sized in its MXFP4 checkpoint format, about 65 GB, not 234 GB of bf16",
          "[checkpoint][weights]") {
    const Model m = bundled("gpt-oss-120b");
    const CheckpointFormat& c = m.config().checkpoint;
    CHECK(c.known);
    CHECK(c.experts == WeightFormat::mxfp4);
    CHECK(c.linear == WeightFormat::bf16);  // attention stays bf16 (modules_to_not_convert)
    CHECK(c.attention == WeightFormat::bf16);
    const WeightOptions w = checkpoint_weights(m);
    // bf16 everywhere: 2 B per parameter, 2 x 116,829,156,672 = 233,658,313,344 B. MXFP4 stores
    // an expert's 3 x 2,880 x 2,880 = 24,883,200 weights in 4 + 8 / 32 = 4.25 bits: 13,219,200 B
    // instead of 49,766,400, saving 36,547,200 B on each of 36 x 128 = 4,608 experts:
    // 233,658,313,344 - 4,608 x 36,547,200 = 65,248,815,744 B (65.25 GB; the published checkpoint
    // is about 65 GB).
    CHECK(total_params(m) == 116'829'156'672ULL);
    CHECK(weight_bytes(m, WeightOptions{}).total().count() == 233'658'313'344ULL);
    CHECK(weight_bytes(m, w).total().count() == 233'658'313'344ULL - 4'608ULL * 36'547'200ULL);
    // Its router stays 16-bit: 36 x (128 x 2,880 + 128) parameters x 2 B.
    CHECK(weight_bytes(m, w).router.count() == 36ULL * (128 * 2880 + 128) * 2);
}

TEST_CASE("DeepSeek-V3 is sized in fp8 with one scale per 128 x 128 block, about 0.67 TB",
          "[checkpoint][weights]") {
    const Model m = bundled("deepseek-v3");
    const CheckpointFormat& c = m.config().checkpoint;
    CHECK(c.known);
    CHECK(c.linear == WeightFormat::fp8);
    CHECK(c.experts == WeightFormat::fp8);
    CHECK(c.layout.fp8_block == 128);
    // One expert's up projection, 2,048 x 7,168: 1 B per weight and a 4 B scale per block of
    // 128 x 128, 16 x 56 = 896 blocks: 14,680,064 + 3,584 = 14,683,648 B.
    CHECK(detail::encoded_bytes(encoding(WeightFormat::fp8, c.layout), 2048, 7168, 1).count() ==
          14'683'648ULL);
    // The whole model: 1 B per linear weight plus its blocks' scales, 2 B per other parameter
    // (embedding and LM head 2 x 129,280 x 7,168, norms, routers 58 x (256 x 7,168 + 256)). Scales
    // add 4 B per 16,384 weights at most a block's rounding more, so the total lies between
    // linear + 2 x other and linear x (1 + 4 / 16,384) + 2 x other + rounding.
    const ParamCounts p = count_params(m);
    const std::uint64_t other = p.embedding + p.lm_head + p.norms + p.router;
    CHECK(other == 2ULL * 129'280 * 7'168 + p.norms + 58ULL * (256 * 7'168 + 256));
    const std::uint64_t linear = p.total() - other;
    const std::uint64_t total = weight_bytes(m, checkpoint_weights(m)).total().count();
    CHECK(total > linear + 2 * other);
    CHECK(total < linear + linear / 4096 + 2 * other + 64ULL * 1024 * 1024);
    // 673.15 GB: the published checkpoint, 688.6 GB, also holds the multi-token-prediction layer,
    // which serving does not load by default; never the 1.34 TB of bf16.
    CHECK(total == 673'150'582'112ULL);
}

TEST_CASE("a checkpoint's config without quantization says its format in torch_dtype",
          "[checkpoint]") {
    CHECK(bundled("llama-3-8b").config().checkpoint.linear == WeightFormat::bf16);
    CHECK(std::strcmp(bundled("llama-3-8b").config().checkpoint.source, "torch_dtype") == 0);
    CHECK(bundled("gpt-neox-20b").config().checkpoint.linear == WeightFormat::fp16);
    // Neither: unknown, bf16 assumed, and the reason kept.
    Json j = bundled_json("llama-3-8b");
    j.erase("torch_dtype");
    const Model m = model_from_hf_json(j, "x.json", "x", {});
    CHECK_FALSE(m.config().checkpoint.known);
    CHECK(checkpoint_weights(m).format == WeightFormat::bf16);
}

TEST_CASE("AWQ, GPTQ and compressed-tensors checkpoints keep their group sizes and scales",
          "[checkpoint][weights]") {
    // AWQ, group 128: 4 + (16 + 4) / 128 bits per weight; a 4,096-input row of one output takes
    // 4,096 x 4 / 8 = 2,048 B plus 32 groups x 20 bits = 80 B: 2,128 B.
    const Model awq = with_quantization(
        {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true}});
    CHECK(awq.config().checkpoint.linear == WeightFormat::int4);
    const WeightOptions a = checkpoint_weights(awq);
    CHECK(detail::encoded_bytes(encoding(a.format, a.layout), 1, 4096, 1).count() == 2'128);
    // Group 64: 64 groups x 20 bits = 160 B: 2,208 B.
    const Model g64 = with_quantization({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 64}});
    const WeightOptions b = checkpoint_weights(g64);
    CHECK(detail::encoded_bytes(encoding(b.format, b.layout), 1, 4096, 1).count() == 2'208);
    // GPTQ with group_size -1: one group per row, 2,048 + 20 bits -> 2,051 B.
    const Model gptq = with_quantization(
        {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", -1}, {"sym", true}});
    const WeightOptions g = checkpoint_weights(gptq);
    CHECK(detail::encoded_bytes(encoding(g.format, g.layout), 1, 4096, 1).count() == 2'051);
    // 3-bit GPTQ is not modelled: unknown, bf16 assumed, the reason named.
    const Model three = with_quantization({{"quant_method", "gptq"}, {"bits", 3}});
    CHECK_FALSE(three.config().checkpoint.known);
    CHECK(std::string(three.config().checkpoint.source).find("bit width") != std::string::npos);
    // compressed-tensors W4A16, symmetric, group 128: 4 + 16 / 128 bits: 2,048 + 32 x 2 = 2,112 B.
    const Json w4a16 = {{"quant_method", "compressed-tensors"},
                        {"config_groups",
                         {{"group_0",
                           {{"targets", {"Linear"}},
                            {"weights",
                             {{"num_bits", 4},
                              {"type", "int"},
                              {"strategy", "group"},
                              {"group_size", 128},
                              {"symmetric", true}}}}}}},
                        {"ignore", {"lm_head"}}};
    const WeightOptions ct = checkpoint_weights(with_quantization(w4a16));
    CHECK(ct.format == WeightFormat::int4);
    CHECK(detail::encoded_bytes(encoding(ct.format, ct.layout), 1, 4096, 1).count() == 2'112);
    // compressed-tensors fp8 per channel, attention left out: a 4,096 x 4,096 matrix is
    // 16,777,216 B + 4,096 x 4 B of scales; attention stays bf16.
    const Json fp8 = {
        {"quant_method", "compressed-tensors"},
        {"config_groups",
         {{"group_0",
           {{"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}}}}}}},
        {"ignore", {"lm_head", "re:.*self_attn.*"}}};
    const WeightOptions f = checkpoint_weights(with_quantization(fp8));
    CHECK(f.format == WeightFormat::fp8);
    CHECK(f.attention_format == WeightFormat::bf16);
    CHECK(detail::encoded_bytes(encoding(f.format, f.layout), 4096, 4096, 1).count() ==
          16'777'216ULL + 4096 * 4);
    // nvfp4 (4 bits, an fp8 scale per 16, an fp32 per matrix): a 16 x 4,096 matrix is
    // 32,768 + 4,096 B and 4 B.
    const Json nvfp4 = {{"quant_method", "compressed-tensors"},
                        {"config_groups",
                         {{"group_0",
                           {{"weights",
                             {{"num_bits", 4},
                              {"type", "float"},
                              {"strategy", "tensor_group"},
                              {"group_size", 16}}}}}}}};
    const WeightOptions n = checkpoint_weights(with_quantization(nvfp4));
    CHECK(n.format == WeightFormat::nvfp4);
    CHECK(detail::encoded_bytes(encoding(n.format, n.layout), 16, 4096, 1).count() ==
          32'768 + 4'096 + 4);
    // A method kvplan does not model.
    CHECK_FALSE(with_quantization({{"quant_method", "bitsandbytes"}}).config().checkpoint.known);
}

TEST_CASE("the context limit is derived as vLLM derives max_model_len", "[checkpoint][context]") {
    // Llama-3-8B: max_position_embeddings 8,192, no rope scaling.
    const ContextLimit l3 = context_limit(bundled("llama-3-8b").config());
    CHECK(l3.tokens == 8192);
    CHECK(std::strcmp(l3.field, "max_position_embeddings") == 0);
    // Llama-3.1-405B: llama3 rope scaling extends the trained length itself: 131,072 stays.
    CHECK(context_limit(bundled("llama-3.1-405b").config()).tokens == 131'072);
    // DeepSeek-V3: yarn, factor 40 over original_max_position_embeddings 4,096 = 163,840.
    const ContextLimit ds = context_limit(bundled("deepseek-v3").config());
    CHECK(ds.tokens == 163'840);
    CHECK(ds.field_tokens == 4096);
    CHECK(ds.rope_factor == 40.0);
    // gpt-oss: yarn, 32 x 4,096 = 131,072.
    CHECK(context_limit(bundled("gpt-oss-120b").config()).tokens == 131'072);
    // Gemma-3: the class default 131,072 (its text_config omits the key), and Gemma-3 is never
    // scaled, though its rope_scaling says linear x 8.
    CHECK(context_limit(bundled("gemma-3-27b").config()).tokens == 131'072);
    // Linear scaling multiplies: 32,768 x 4 = 131,072.
    CHECK(with_lengths({{"max_position_embeddings", 32768},
                        {"rope_scaling", {{"rope_type", "linear"}, {"factor", 4.0}}}})
              .config()
              .context_limit.tokens == 131'072);
    // The least of the keys present; model_max_length overrides it.
    CHECK(with_lengths({{"max_position_embeddings", 4096}, {"seq_length", 2048}})
              .config()
              .context_limit.tokens == 2048);
    CHECK(with_lengths({{"max_position_embeddings", 4096}, {"model_max_length", 8192}})
              .config()
              .context_limit.tokens == 8192);
    // None at all: vLLM assumes 2,048.
    const ContextLimit none = with_lengths(Json::object()).config().context_limit;
    CHECK(none.tokens == 2048);
    CHECK(std::string(none.field).find("none") != std::string::npos);
}
