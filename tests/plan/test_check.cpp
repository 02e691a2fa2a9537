// plan/check.hpp: a policy's requirements judged on each replica through evaluate(), against a
// baseline where asked. Every figure below is derived by hand from the configs and GPU specs.
//
// Llama-3-70B (configs/models/llama-3-70b.json): hidden 8,192, 80 layers, 64 heads, 8 KV heads of
// 128, intermediate 28,672, vocab 128,256, untied embeddings, bf16, max_position_embeddings 8,192.
//   Parameters per layer: q and o 8,192 x 8,192 each, k and v 8,192 x 1,024 each, the MLP
//   3 x 8,192 x 28,672, two norms of 8,192: 855,654,400. Whole model: 80 layers + embedding and
//   lm_head of 128,256 x 8,192 each + the final norm = 70,553,706,496 parameters.
//   At tp 4 each GPU holds a quarter of every matrix and every norm whole: per layer
//   (855,654,400 - 16,384) / 4 + 16,384 = 213,925,888, x 80 = 17,114,071,040; a quarter of each
//   embedding, 2 x 262,668,288; the final norm, 8,192: 17,639,415,808 parameters = 35,278,831,616
//   B. KV per token: 2 x 80 x 8 x 128 x 2 B = 327,680 B; per GPU at tp 4: 81,920 B.
// The same with 16 KV heads (tests/data/cli/llama-3-70b-16kv/config.json, one field changed):
//   k and v grow by 8,192 x 1,024 each per layer, a quarter of it per GPU: 80 x 2 x 2,097,152 =
//   335,544,320 more parameters per GPU, 671,088,640 B: 35,949,920,256 B per GPU.
//   KV per token: 655,360 B; per GPU 163,840 B.
// GPUs (configs/gpus/, the CUDA runtime's totals): H100 SXM 85,029,027,840 B (81,090 MiB) at
// 3.35 TB/s; H200 SXM 150,109,945,856 B (143,156 MiB) at 4.8 TB/s.
// The ideal engine gives the cache every byte but the weights, in blocks of 1 token, so:
//   H100, 8 heads:  85,029,027,840 - 35,278,831,616 = 49,750,196,224 B / 81,920 = 607,302 tokens
//   H100, 16 heads: 85,029,027,840 - 35,949,920,256 = 49,079,107,584 B / 163,840 = 299,555 tokens
//   H200, 8 heads:  150,109,945,856 - 35,278,831,616 = 114,831,114,240 B / 81,920 = 1,401,747
//   H200, 16 heads: 150,109,945,856 - 35,949,920,256 = 114,160,025,600 B / 163,840 = 696,777

#include <catch2/catch.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan/check.hpp>
#include <kvplan/policy.hpp>
#include <string>
#include <vector>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

/// A policy of the given requirements (JSON members of the "requirements" array) on the ideal
/// engine at tp 4 on each of `gpus`.
Policy policy(const std::string& requirements,
              const std::vector<std::string>& gpus = {"h100-sxm"}) {
    std::string replicas;
    for (const std::string& g : gpus) {
        if (!replicas.empty()) replicas.append(",");
        replicas.append(R"({"gpu": ")")
            .append(g)
            .append(R"(", "tp": 4, "engine": "ideal", "block_size": 1})");
    }
    return policy_from_json(Json::parse(R"({"schema": "kvplan-policy/1", "replicas": [)" +
                                        replicas + R"(], "requirements": [)" + requirements + "]}"),
                            "policy.json");
}

std::vector<GpuSpec> gpus_of(const std::vector<std::string>& ids) {
    std::vector<GpuSpec> out;
    for (const std::string& id : ids) out.push_back(bundled_gpu(id));
    return out;
}

const Model& llama70() {
    static const Model m = bundled("llama-3-70b");
    return m;
}

const Model& llama70_16kv() {
    static const Model m = load_hf_config(data_dir / "cli" / "llama-3-70b-16kv");
    return m;
}

/// Llama-3-70B with its config's max_position_embeddings lowered to `tokens`.
Model llama70_limited(std::uint64_t tokens) {
    Json doc = bundled_json("llama-3-70b");
    doc["max_position_embeddings"] = tokens;
    return model_from_hf_json(doc, "llama-3-70b-short.json", "llama-3-70b-short");
}

}  // namespace

TEST_CASE("min_concurrency reads the answer's max_concurrency at the requirement's context",
          "[check]") {
    // 607,302 tokens / 8,000 = 75 sequences of 8,000 tokens on the H100.
    const auto gpus = gpus_of({"h100-sxm"});
    const Policy p = policy(R"({"kind": "min_concurrency", "sequences": 75, "context_tokens": 8000},
                               {"kind": "min_concurrency", "sequences": 76, "context_tokens": 8000})");
    const CheckResult r = check_policy(p, llama70(), gpus);
    REQUIRE(r.outcomes.size() == 2);
    CHECK(r.outcomes[0].measured->count == 75);
    CHECK(r.outcomes[0].status == CheckStatus::passed);
    CHECK(r.outcomes[1].measured->count == 75);
    CHECK(r.outcomes[1].status == CheckStatus::failed);
    CHECK(r.outcomes[1].reason.empty());  // the figure says why
    CHECK(r.failed == 1);
    CHECK_FALSE(r.passed());
    // The figure is the answer's.
    CHECK(r.outcomes[0].answer->max_concurrency == 75);
    CHECK(r.outcomes[0].answer->demand.context == 8000);
}

TEST_CASE("min_concurrency counts a shared prefix once", "[check][shared_prefix]") {
    // A 2,000-token system prompt in blocks of 1 token is 2,000 blocks held once; each sequence
    // then holds its own 6,000: (607,302 - 2,000) / 6,000 = 100 sequences of 8,000 tokens where 75
    // hold without sharing.
    const auto gpus = gpus_of({"h100-sxm"});
    const Policy p = policy(
        R"({"kind": "min_concurrency", "sequences": 100, "context_tokens": 8000,
            "shared_prefix_tokens": 2000},
           {"kind": "min_concurrency", "sequences": 101, "context_tokens": 8000,
            "shared_prefix_tokens": 2000})");
    CHECK(p.requirements.at(0).shared_prefix_tokens == 2000);
    const CheckResult r = check_policy(p, llama70(), gpus);
    REQUIRE(r.outcomes.size() == 2);
    CHECK(r.outcomes[0].measured->count == 100);
    CHECK(r.outcomes[0].status == CheckStatus::passed);
    CHECK(r.outcomes[1].status == CheckStatus::failed);
    CHECK(r.outcomes[0].answer->max_concurrency_without_sharing == 75);
    CHECK(r.outcomes[0].answer->demand.shared_prefix_tokens == 2000);
}

TEST_CASE("sizes per token and per GPU come from the answer", "[check]") {
    const auto gpus = gpus_of({"h100-sxm"});
    const Policy p = policy(R"({"kind": "max_kv_bytes_per_token", "KiB": 320},
                               {"kind": "max_weights_per_gpu", "bytes": 35278831615})");
    const CheckResult r = check_policy(p, llama70(), gpus);
    // 327,680 B = 320 KiB exactly: at the bound, which passes.
    CHECK(r.outcomes[0].measured->count == 327'680);
    CHECK(r.outcomes[0].status == CheckStatus::passed);
    // 35,278,831,616 B per GPU, one byte over the bound.
    CHECK(r.outcomes[1].measured->count == 35'278'831'616ULL);
    CHECK(r.outcomes[1].status == CheckStatus::failed);
}

TEST_CASE("a requirement whose context passes the model's limit fails", "[check][limit]") {
    // Llama-3-70B's limit is 8,192 tokens (max_position_embeddings): an engine refuses a longer
    // context, so there is no concurrency, no longer context and no TPOT there.
    const auto gpus = gpus_of({"h100-sxm"});
    const Policy p = policy(R"({"kind": "min_concurrency", "sequences": 1, "context_tokens": 16384},
                               {"kind": "min_context", "tokens": 16384},
                               {"kind": "max_tpot", "ms": 1000, "batch": 1, "context_tokens": 16384})");
    const CheckResult r = check_policy(p, llama70(), gpus);
    REQUIRE(r.outcomes.size() == 3);
    for (const CheckOutcome& o : r.outcomes) {
        CHECK(o.status == CheckStatus::failed);
        CHECK(o.answer->refusal == Refusal::context_limit);
        // refusal_text (plan/refusal.hpp): the one text the CLI's verdict shows too.
        CHECK(o.reason ==
              "the engine does not start: 16,384 tokens pass the model's limit of 8,192 tokens "
              "(max_position_embeddings = 8,192); the ideal profile refuses that length "
              "(--allow-long-context serves it, as VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lets vLLM)");
    }
    CHECK(r.outcomes[0].measured->count == 0);
    // The longest context, capped at the limit, stands: 8,192 < 16,384.
    CHECK(r.outcomes[1].measured->count == 8192);
    CHECK_FALSE(r.outcomes[2].measured.has_value());
}

TEST_CASE("a config change that lowers max_position_embeddings below the policy's context fails",
          "[check][limit]") {
    // The policy asks for 8,000-token sequences; the change lowers the limit to 4,096.
    const auto gpus = gpus_of({"h100-sxm"});
    const Policy p = policy(R"({"kind": "min_concurrency", "sequences": 32, "context_tokens": 8000},
                  {"kind": "max_tpot", "ms": 1000, "batch": 32, "context_tokens": 8000},
                  {"kind": "max_regression", "figure": "max_context", "percent": 10})");
    const Model shorter = llama70_limited(4096);
    CHECK(check_policy(p, llama70(), gpus).passed());  // before the change
    const CheckResult r = check_policy(p, shorter, gpus, &llama70());
    CHECK(r.failed == 3);
    CHECK(r.outcomes[0].measured->count == 0);
    CHECK_FALSE(r.outcomes[1].measured.has_value());
    CHECK_THAT(r.outcomes[1].reason, Catch::Contains("the model's limit of 4,096 tokens"));
    // One sequence alone reaches the limit either way (607,302 tokens of room): 8,192 before,
    // 4,096 after, a fall of 50 %.
    CHECK(r.outcomes[2].baseline->count == 8192);
    CHECK(r.outcomes[2].measured->count == 4096);
    CHECK(*r.outcomes[2].change_percent == -50.0);
}

TEST_CASE("regressions against the baseline, derived for doubled KV heads", "[check][regression]") {
    const auto gpus = gpus_of({"h100-sxm"});
    const Policy p = policy(R"(
        {"kind": "max_regression", "figure": "kv_bytes_per_token", "percent": 100},
        {"kind": "max_regression", "figure": "kv_bytes_per_token", "percent": 99.9},
        {"kind": "max_regression", "figure": "max_concurrency", "context_tokens": 8000, "percent": 52},
        {"kind": "max_regression", "figure": "max_concurrency", "context_tokens": 8000, "percent": 10},
        {"kind": "max_regression", "figure": "weights_per_gpu", "percent": 2},
        {"kind": "max_regression", "figure": "weights_per_gpu", "percent": 1.9},
        {"kind": "max_regression", "figure": "tpot", "batch": 1, "context_tokens": 8000, "percent": 3.75},
        {"kind": "max_regression", "figure": "tpot", "batch": 1, "context_tokens": 8000, "percent": 3.7},
        {"kind": "max_regression", "figure": "max_context", "sequences": 64, "percent": 10})");
    const CheckResult r = check_policy(p, llama70_16kv(), gpus, &llama70());
    REQUIRE(r.outcomes.size() == 9);
    const auto status = [&](std::size_t i) { return r.outcomes[i].status; };

    // KV bytes per token: 327,680 -> 655,360 B, +100 % exactly; a bound of 100 % holds it.
    CHECK(r.outcomes[0].baseline->count == 327'680);
    CHECK(r.outcomes[0].measured->count == 655'360);
    CHECK(*r.outcomes[0].change_percent == 100.0);
    CHECK(status(0) == CheckStatus::passed);
    CHECK(status(1) == CheckStatus::failed);

    // Max concurrency at 8,000 tokens: 607,302 / 8,000 = 75 before, 299,555 / 8,000 = 37 after:
    // (37 - 75) / 75 = -50.67 %.
    CHECK(r.outcomes[2].baseline->count == 75);
    CHECK(r.outcomes[2].measured->count == 37);
    CHECK(*r.outcomes[2].change_percent == Approx((37.0 - 75.0) / 75.0 * 100.0));
    CHECK(status(2) == CheckStatus::passed);
    CHECK(status(3) == CheckStatus::failed);

    // Weights per GPU: 35,278,831,616 -> 35,949,920,256 B: 671,088,640 / 35,278,831,616 =
    // +1.9022 %.
    CHECK(r.outcomes[4].baseline->count == 35'278'831'616ULL);
    CHECK(r.outcomes[4].measured->count == 35'949'920'256ULL);
    CHECK(*r.outcomes[4].change_percent == Approx(671'088'640.0 / 35'278'831'616.0 * 100.0));
    CHECK(status(4) == CheckStatus::passed);
    CHECK(status(5) == CheckStatus::failed);

    // The TPOT bound at batch 1 and 8,000 tokens is memory-bound: every weight byte of a GPU but
    // its quarter of the embedding (a lookup reads one row: 32,064 x 8,192 x 2 B = 525,336,576 B)
    // and the KV of 8,000 tokens, over 3.35 TB/s:
    //   before (35,278,831,616 - 525,336,576 + 8,000 x 81,920) B  = 35,408,855,040 B -> 10.5698 ms
    //   after  (35,949,920,256 - 525,336,576 + 8,000 x 163,840) B = 36,735,303,680 B -> 10.9658 ms
    // +3.7461 %.
    CHECK(r.outcomes[6].baseline->time.in(seconds) ==
          Approx(35'408'855'040.0 / 3.35e12).epsilon(1e-12));
    CHECK(r.outcomes[6].measured->time.in(seconds) ==
          Approx(36'735'303'680.0 / 3.35e12).epsilon(1e-12));
    CHECK(*r.outcomes[6].change_percent ==
          Approx((36'735'303'680.0 / 35'408'855'040.0 - 1) * 100).epsilon(1e-9));
    CHECK(status(6) == CheckStatus::passed);
    CHECK(status(7) == CheckStatus::failed);

    // The longest context of 64 sequences: 607,302 / 64 = 9,489, capped at the 8,192 limit,
    // before; 299,555 / 64 = 4,680 after: -42.87 %.
    CHECK(r.outcomes[8].baseline->count == 8192);
    CHECK(r.outcomes[8].measured->count == 4680);
    CHECK(status(8) == CheckStatus::failed);
    CHECK(r.failed == 5);  // 1, 3, 5, 7 and 8
}

TEST_CASE("a max_regression without a baseline is skipped, and the policy still passes",
          "[check][regression]") {
    const auto gpus = gpus_of({"h100-sxm"});
    const Policy p =
        policy(R"({"kind": "max_regression", "figure": "kv_bytes_per_token", "percent": 0},
                               {"kind": "max_kv_bytes_per_token", "KiB": 320})");
    const CheckResult r = check_policy(p, llama70(), gpus);
    CHECK(r.outcomes[0].status == CheckStatus::skipped);
    CHECK(r.outcomes[0].reason == "no baseline to compare with");
    CHECK(r.outcomes[0].measured->count == 327'680);  // measured all the same
    CHECK(r.skipped == 1);
    CHECK(r.failed == 0);
    CHECK(r.passed());
    // Against itself, a bound of 0 % holds: nothing changed.
    const CheckResult same = check_policy(p, llama70(), gpus, &llama70());
    CHECK(same.outcomes[0].status == CheckStatus::passed);
    CHECK(*same.outcomes[0].change_percent == 0.0);
}

TEST_CASE("each requirement is judged on each replica, in the policy's order",
          "[check][replicas]") {
    // 100 sequences of 8,000 tokens: the H100 holds 75, the H200 1,401,747 / 8,000 = 175. After
    // the change: 37 and 696,777 / 8,000 = 87, a fall of (37 - 75) / 75 = 50.67 % and (87 - 175)
    // / 175 = 50.29 %.
    const std::vector<std::string> ids{"h100-sxm", "h200-sxm"};
    const auto gpus = gpus_of(ids);
    const Policy p =
        policy(R"({"kind": "min_concurrency", "sequences": 100, "context_tokens": 8000},
        {"kind": "max_regression", "figure": "max_concurrency", "context_tokens": 8000, "percent": 50.5})",
               ids);
    REQUIRE(p.replicas.size() == 2);
    CHECK(p.replicas[0].name == "h100-sxm tp 4 x pp 1");
    CHECK(p.replicas[1].path == "replicas[1]");
    const CheckResult r = check_policy(p, llama70_16kv(), gpus, &llama70());
    REQUIRE(r.outcomes.size() == 4);
    CHECK(r.outcomes[0].requirement == 0);
    CHECK(r.outcomes[0].replica == 0);
    CHECK(r.outcomes[1].replica == 1);
    CHECK(r.outcomes[2].requirement == 1);
    CHECK(r.outcomes[0].baseline->count == 75);
    CHECK(r.outcomes[1].baseline->count == 175);
    CHECK(r.outcomes[0].measured->count == 37);
    CHECK(r.outcomes[1].measured->count == 87);
    CHECK(r.outcomes[0].status == CheckStatus::failed);
    CHECK(r.outcomes[1].status == CheckStatus::failed);
    // 50.5 % allows the H200's fall of 50.29 %, not the H100's of 50.67 %.
    CHECK(*r.outcomes[3].change_percent == Approx((87.0 - 175.0) / 175.0 * 100.0));
    CHECK(r.outcomes[2].status == CheckStatus::failed);
    CHECK(r.outcomes[3].status == CheckStatus::passed);
    CHECK(r.failed == 3);
}

TEST_CASE("a replica that cannot take the model fails every requirement on it", "[check]") {
    // tp 3 divides neither the 64 query heads nor the 8 KV heads of Llama-3-70B.
    Policy p = policy(R"({"kind": "max_kv_bytes_per_token", "KiB": 320})");
    p.replicas[0].tp = 3;
    const auto gpus = gpus_of({"h100-sxm"});
    const CheckResult r = check_policy(p, llama70(), gpus);
    REQUIRE(r.outcomes.size() == 1);
    CHECK(r.outcomes[0].status == CheckStatus::failed);
    CHECK_FALSE(r.outcomes[0].measured.has_value());
    CHECK_FALSE(r.outcomes[0].answer.has_value());
    CHECK_THAT(r.outcomes[0].reason, Catch::StartsWith("the replica cannot take this model: "));
}

TEST_CASE("a replica's dp, ep and dcp reach evaluate()", "[check][parallel]") {
    // Under vLLM's rules (the ideal engine follows them) dp 2 is two engines of tp 4 each: 8 GPUs,
    // each engine holding 75 sequences of 8,000 tokens as the one engine at tp 4 does, 150 in all.
    Policy p = policy(R"({"kind": "min_concurrency", "sequences": 150, "context_tokens": 8000},
                  {"kind": "max_weights_per_gpu", "bytes": 35278831616})");
    p.replicas[0].dp = 2;
    const auto gpus = gpus_of({"h100-sxm"});
    const CheckResult r = check_policy(p, llama70(), gpus);
    REQUIRE(r.outcomes.size() == 2);
    CHECK(r.outcomes[0].measured->count == 150);
    CHECK(r.outcomes[0].status == CheckStatus::passed);
    CHECK(r.outcomes[0].answer->replica.parallel.dp == 2);
    CHECK(r.outcomes[0].answer->replica_gpus == 8);
    // Each GPU still holds a quarter of the weights: 35,278,831,616 B, at the bound.
    CHECK(r.outcomes[1].measured->count == 35'278'831'616ULL);
    CHECK(r.outcomes[1].status == CheckStatus::passed);

    // Expert parallelism on a dense model is a layout it cannot take: every requirement fails on
    // it, with the layout's reason.
    p.replicas[0].dp = 1;
    p.replicas[0].ep = 4;
    const CheckResult dense = check_policy(p, llama70(), gpus);
    REQUIRE(dense.outcomes.size() == 2);
    CHECK(dense.failed == 2);
    CHECK_FALSE(dense.outcomes[0].measured.has_value());
    CHECK_THAT(dense.outcomes[0].reason,
               Catch::StartsWith("the replica cannot take this model: ") &&
                   Catch::Contains("expert parallelism needs a mixture-of-experts model"));

    // vLLM refuses a dcp that does not divide tp (vllm/config/parallel.py).
    p.replicas[0].ep = 1;
    p.replicas[0].dcp = 3;
    const CheckResult dcp = check_policy(p, llama70(), gpus);
    CHECK(dcp.failed == 2);
    CHECK_THAT(dcp.outcomes[1].reason, Catch::Contains("dcp"));
}

TEST_CASE("a TPOT asked of a GPU whose spec lacks its bandwidth is invalid input", "[check]") {
    GpuSpec bare = bundled_gpu("h100-sxm");
    bare.memory_bandwidth = {};
    const std::vector<GpuSpec> gpus{bare};
    const Policy p =
        policy(R"({"kind": "max_tpot", "ms": 20, "batch": 1, "context_tokens": 8000})");
    CHECK_THROWS_WITH(check_policy(p, llama70(), gpus),
                      Catch::StartsWith("policy.json: requirements[0]: expected a GPU whose spec "
                                        "states its memory bandwidth"));
}

TEST_CASE("a policy replica maps onto the deployment evaluate() takes", "[check]") {
    PolicyReplica r;
    r.gpu = "h100-sxm";
    r.tp = 2;
    r.pp = 2;
    r.kv_dtype = KvDtype::fp8_e4m3;
    r.weight_dtype = WeightFormat::fp8;
    r.engine = Engine::sglang;
    r.gpu_memory_utilization = 0.8;
    r.block_size = 64;
    r.dp = 2;
    r.ep = 2;
    r.dcp = 1;
    const Deployment d = policy_deployment(r, llama70(), bundled_gpu("h100-sxm"));
    CHECK(d.parallel.tp == 2);
    CHECK(d.parallel.pp == 2);
    CHECK(d.parallel.dp == 2);
    CHECK(d.parallel.ep == 2);
    CHECK(d.parallel.dcp == 1);
    // SGLang's dp attention groups live within its tp GPUs: still tp x pp of them.
    CHECK(d.replica_gpus() == 4);
    CHECK(d.gpus == 0);  // one replica
    CHECK(d.kv == KvFormat(KvDtype::fp8_e4m3));
    CHECK(d.weights->format == WeightFormat::fp8);
    CHECK(d.serving.engine == Engine::sglang);
    CHECK(*d.serving.memory_fraction == 0.8);
    CHECK(*d.serving.block_size == 64);
    // Without a weight format, the checkpoint's.
    r.weight_dtype.reset();
    CHECK_FALSE(policy_deployment(r, llama70(), bundled_gpu("h100-sxm")).weights.has_value());
}

TEST_CASE("an outcome worsens when its figure moves the wrong way from the baseline", "[check]") {
    // max_concurrency is better higher: 37 against a baseline of 76 worsened; TPOT is better
    // lower: 25 ms against 20 ms worsened. A max_context that was any length and is now bounded
    // worsened; without a baseline nothing did.
    CheckOutcome o{.figure = CheckFigure::max_concurrency, .status = CheckStatus::passed};
    o.measured = FigureValue{.figure = CheckFigure::max_concurrency, .count = 37};
    o.baseline = FigureValue{.figure = CheckFigure::max_concurrency, .count = 76};
    CHECK(o.worsened());
    std::swap(o.measured, o.baseline);
    CHECK_FALSE(o.worsened());
    CheckOutcome t{.figure = CheckFigure::tpot, .status = CheckStatus::passed};
    t.measured = FigureValue{.figure = CheckFigure::tpot, .time = 25 * milliseconds};
    t.baseline = FigureValue{.figure = CheckFigure::tpot, .time = 20 * milliseconds};
    CHECK(t.worsened());
    CheckOutcome c{.figure = CheckFigure::max_context, .status = CheckStatus::passed};
    c.measured = FigureValue{.figure = CheckFigure::max_context, .count = 8192};
    c.baseline = FigureValue{.figure = CheckFigure::max_context, .unbounded = true};
    CHECK(c.worsened());
    c.baseline.reset();
    CHECK_FALSE(c.worsened());
}

TEST_CASE("a result counts as met what neither failed nor was skipped", "[check]") {
    // Five outcomes, one failed, one skipped: 5 - 1 - 1 = 3 met.
    CheckResult r;
    r.outcomes.resize(5);
    r.failed = 1;
    r.skipped = 1;
    CHECK(r.met() == 3);
    CHECK_FALSE(r.passed());
}
