// The KV dtype left unset (engine/served_kv.hpp): every library entry point that takes one
// resolves it where the engine and its release are known, from the checkpoint's own KV cache
// (tests/data/quantized/Qwen3-235B-A22B-NVFP4, whose hf_quant_config.json names
// "kv_cache_quant_algo": "FP8"), so that fit, size, plan, compare, check and diff agree.

#include <catch2/catch.hpp>
#include <kvplan/calibrate/replica.hpp>
#include <kvplan/engine/served_kv.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan/check.hpp>
#include <kvplan/plan/compare.hpp>
#include <kvplan/plan/deployment.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/plan/search.hpp>
#include <kvplan/plan/size.hpp>
#include <kvplan/plan/trace.hpp>
#include <kvplan/presets.hpp>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

Model nvfp4_folder() { return load_hf_config(data_dir / "quantized" / "Qwen3-235B-A22B-NVFP4"); }

// config.json: 94 layers x 4 KV heads x head_dim 128, K and V. fp8: 94 x 4 x 128 x 2 x 1 B.
constexpr std::uint64_t fp8_token = 94ULL * 4 * 128 * 2 * 1;
constexpr std::uint64_t bf16_token = 94ULL * 4 * 128 * 2 * 2;
static_assert(fp8_token == 96'256 && bf16_token == 192'512);

}  // namespace

TEST_CASE("a deployment without a KV dtype stores what its engine's auto stores for the checkpoint",
          "[served_kv]") {
    const Model m = nvfp4_folder();
    const Demand demand{.context = 8000, .concurrency = 16};
    Deployment d{.model = m, .gpu = gpus::b200, .parallel = {.tp = 4}};
    REQUIRE_FALSE(d.kv.has_value());
    // vLLM's newest release follows kv_cache_quant_algo FP8 (from v0.14, PR #30785).
    const ReplicaAnswer a = evaluate(d, demand);
    CHECK(a.replica.kv.dtype == KvDtype::fp8_e4m3);
    CHECK(a.kv_source == KvSource::checkpoint);
    CHECK(a.kv_per_token.count() == fp8_token);
    // The same figures as fp8 given, only the source differs.
    Deployment given = d;
    given.kv = KvFormat(KvDtype::fp8_e4m3);
    const ReplicaAnswer g = evaluate(given, demand);
    CHECK(g.kv_source == KvSource::given);
    CHECK(g.max_concurrency == a.max_concurrency);
    // v0.13 predates the rule: the model's 16 bits.
    d.serving.engine_version = EngineVersion{0, 13};
    const ReplicaAnswer old = evaluate(d, demand);
    CHECK(old.replica.kv.dtype == KvDtype::bf16);
    CHECK(old.kv_source == KvSource::model);
    CHECK(old.kv_per_token.count() == bf16_token);
    // The ideal profile stores what it is told: bf16 unless given.
    d.serving = Serving{.engine = Engine::ideal};
    CHECK(d.kv_format().dtype == KvDtype::bf16);
}

TEST_CASE("a model whose checkpoint names no KV cache keeps its 16-bit cache unset",
          "[served_kv]") {
    // Llama-3-70B (the headline): 80 layers x 8 KV heads x 128 x K and V x 2 B = 327,680 B.
    const Deployment d{.model = presets::llama_3_70b, .gpu = gpus::h100_sxm, .parallel = {.tp = 4}};
    const ServedKv kv = d.served_kv();
    CHECK(kv.format == KvFormat(KvDtype::bf16));
    CHECK(kv.source == KvSource::model);
    const Demand demand{.context = 8192, .concurrency = 48};
    Deployment bf16 = d;
    bf16.kv = KvFormat(KvDtype::bf16);
    const ReplicaAnswer a = evaluate(d, demand);
    CHECK(a.kv_per_token.count() == 80ULL * 8 * 128 * 2 * 2);
    CHECK(a.max_concurrency == evaluate(bf16, demand).max_concurrency);
}

TEST_CASE("size, compare, the search, a policy, a trace and a calibration resolve it alike",
          "[served_kv]") {
    const Model m = nvfp4_folder();
    // size names no engine: vLLM's newest release; an engine that keeps 16 bits when asked.
    const SizeAnswer s = size(m, std::nullopt, {}, {.context = 8000});
    CHECK(s.kv.dtype == KvDtype::fp8_e4m3);
    CHECK(s.kv_source == KvSource::checkpoint);
    CHECK(s.per_token.count() == fp8_token);
    CHECK(size(m, std::nullopt, {}, {.context = 8000, .engine = Engine::ideal}).per_token.count() ==
          bf16_token);
    CHECK(size(m, KvFormat(KvDtype::bf16), {}, {.context = 8000}).kv_source == KvSource::given);

    // compare: the size and the deployment of a case resolved under the request's engine.
    const CompareRow row =
        compare_one({.model = m, .gpu = gpus::b200}, {.parallel = {.tp = 4}, .context = 8000});
    CHECK(row.size.per_token.count() == fp8_token);
    REQUIRE(row.replica.has_value());
    CHECK(row.replica->replica.kv.dtype == KvDtype::fp8_e4m3);

    // The search: an unset entry beside a given one.
    SearchSpace space;
    CHECK(searched_kv_formats(m, space, Serving{}) == std::vector{KvFormat(KvDtype::fp8_e4m3)});
    space.kv_formats = {KvFormat(KvDtype::bf16), std::nullopt};
    CHECK(searched_kv_formats(m, space, Serving{.engine = Engine::sglang}) ==
          std::vector{KvFormat(KvDtype::bf16), KvFormat(KvDtype::fp8_e4m3)});

    // A policy replica without kv_dtype.
    PolicyReplica r;
    r.tp = 4;
    CHECK(policy_deployment(r, m, gpus::b200).kv_format().dtype == KvDtype::fp8_e4m3);
    r.kv_dtype = KvDtype::bf16;
    CHECK(policy_deployment(r, m, gpus::b200).served_kv().source == KvSource::given);

    // A trace replayed without a GPU: the same bytes per token.
    Trace t;
    t.requests = {TraceRequest{.prompt_tokens = 1000, .output_tokens = 100}};
    const TraceAnswer ta = analyze_trace(t, {.model = m});
    CHECK(ta.kv.format.dtype == KvDtype::fp8_e4m3);
    CHECK(ta.kv.source == KvSource::checkpoint);

    // A calibration of a vLLM log: vLLM's newest release.
    const CalibrationRequest rq{.model = m};
    CHECK(rq.served_kv().format.dtype == KvDtype::fp8_e4m3);
}
