// One answer per replica: evaluate() on the scenarios a design review asks about.

// The one file of this program that compiles the config.json import.
#define KVPLAN_HF_CONFIG_IMPLEMENTATION
#include <catch2/catch.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

GpuSpec gpu(const std::string& id) {
    return load_gpu_spec(config_dir / "gpus" / (id + ".json")).spec;
}

Deployment deployment(const std::string& model, const std::string& g, std::uint32_t tp = 1,
                      std::uint32_t pp = 1) {
    return Deployment{.model = bundled(model), .gpu = gpu(g), .parallel = {.tp = tp, .pp = pp}};
}

}  // namespace

TEST_CASE("gpt-oss-120b loads on one H100 in its MXFP4 checkpoint format", "[evaluate]") {
    // Sized in bf16 it would need 233.66 GB and never start; its checkpoint is 65.25 GB
    // (test_checkpoint.cpp), which one 79.65 GiB H100 holds.
    const ReplicaAnswer a = evaluate(deployment("gpt-oss-120b", "h100-sxm"), {.context = 8000});
    CHECK(a.weight_source == WeightSource::checkpoint);
    CHECK(a.replica.weights.expert_format == WeightFormat::mxfp4);
    CHECK(a.weights.total().count() == 65'248'815'744ULL);
    CHECK(a.starts());
    CHECK(a.fits());
    CHECK(a.max_concurrency >= 1);
}

TEST_CASE("a context past the model's limit does not start, unless allowed as vLLM allows it",
          "[evaluate]") {
    // Llama-3-8B's config allows 8,192 tokens (max_position_embeddings); vLLM refuses a longer
    // --max-model-len unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.
    Deployment d = deployment("llama-3-8b", "h100-sxm");
    const ReplicaAnswer a = evaluate(d, {.context = 200'000});
    CHECK(a.verdict == Verdict::does_not_start);
    CHECK(a.refusal == Refusal::context_limit);
    CHECK(a.over_limit);
    CHECK(a.limit.tokens == 8192);
    CHECK(std::string(a.limit.field) == "max_position_embeddings");
    // Within the limit the longest contexts are capped at it, and say so.
    const ReplicaAnswer within = evaluate(d, {.context = 4096});
    CHECK(within.fits());
    CHECK(within.longest_single_context == 8192u);
    CHECK(within.longest_at_limit);
    // Allowed, it is sized like any other context.
    d.serving.allow_long_context = true;
    const ReplicaAnswer allowed = evaluate(d, {.context = 200'000});
    CHECK(allowed.refusal == Refusal::none);
    CHECK(allowed.long_context_allowed);
    CHECK_FALSE(allowed.longest_at_limit);
}

TEST_CASE("the verdict counts every replica of the GPUs deployed", "[evaluate]") {
    // 8 x H100 at tp 4: two replicas of Llama-3-70B. Each carries ceil(500 / 2) = 250 sequences
    // of 8,000 tokens; the verdict compares 500 with what both hold together.
    Deployment d = deployment("llama-3-70b", "h100-sxm", 4);
    d.gpus = 8;
    const ReplicaAnswer a = evaluate(d, {.context = 8000, .concurrency = 500});
    CHECK(a.replicas == 2);
    CHECK(a.concurrency_per_replica == 250);
    CHECK(a.total_max_concurrency == 2 * a.max_concurrency);
    CHECK(a.fits() == (a.total_max_concurrency >= 500));
    CHECK(a.kv_needed == a.kv_per_sequence * 250);
    // 100 sequences fit two replicas where 2 x max_concurrency >= 100.
    const ReplicaAnswer small = evaluate(d, {.context = 8000, .concurrency = 100});
    CHECK(small.fits());
    // A GPU count that is no multiple of tp x pp is refused.
    d.gpus = 6;
    CHECK_THROWS_AS(evaluate(d, {.context = 8000}), InvalidLayout);
}

TEST_CASE("a hybrid's verdict is what vLLM's scheduler admits, its log figure beside it",
          "[evaluate]") {
    // gpt-oss-120b at 8k on one H100: the sliding layers keep a window of 128 tokens, so the
    // scheduler holds about twice the sequences the start-up line logs.
    const ReplicaAnswer a = evaluate(deployment("gpt-oss-120b", "h100-sxm"), {.context = 8000});
    const double logged = a.max_concurrency_ratio;
    CHECK(a.max_concurrency == a.admitted);
    CHECK(static_cast<double>(a.admitted) > 1.8 * logged);
    // What it admits never passes the exact bytes: the KV budget over one sequence's bytes.
    CHECK(a.admitted <= a.kv_budget.count() / a.kv_per_sequence.count());
}

TEST_CASE("the engine's sequence cap binds when the cache holds more", "[evaluate]") {
    // Llama-3-8B at 256 tokens on an H200: 32 MiB a sequence in some 110 GiB of KV memory is
    // thousands of sequences; vLLM's max_num_seqs (1,024 on GPUs of 70 GiB or more that are not
    // A100s) holds 1,024.
    Deployment d = deployment("llama-3-8b", "h200-sxm");
    const ReplicaAnswer a = evaluate(d, {.context = 256, .concurrency = 2000});
    CHECK(a.sequence_cap == 1024);
    CHECK(a.admitted > 1024);
    CHECK(a.max_concurrency == 1024);
    CHECK(a.verdict == Verdict::does_not_fit);
    // --max-num-seqs raises it.
    d.serving.max_sequences = 4096;
    const ReplicaAnswer raised = evaluate(d, {.context = 256, .concurrency = 2000});
    CHECK(raised.sequence_cap == 4096);
    CHECK(raised.fits());
}

TEST_CASE("the ideal profile is an upper bound no engine exceeds", "[evaluate][properties]") {
    // Over bundled models, GPUs and layouts: ideal gives the cache every byte but the weights and
    // stores exactly the context's bytes, so every engine holds at most as many sequences.
    for (const char* model : {"llama-3-70b", "llama-3-8b", "gpt-oss-120b", "qwen3-30b-a3b",
                              "gemma-3-27b", "deepseek-v3", "jamba-1.5-mini"})
        for (const char* g : {"h100-sxm", "a100-sxm4-80gb", "mi300x", "l40s"})
            for (std::uint32_t tp : {1U, 2U, 4U, 8U})
                for (std::uint64_t ctx : {1024ULL, 8000ULL, 32768ULL}) {
                    Deployment d = deployment(model, g, tp);
                    d.serving.engine = Engine::ideal;
                    ReplicaAnswer ideal = [&] {
                        try {
                            return evaluate(d, {.context = ctx});
                        } catch (const InvalidLayout&) {
                            return ReplicaAnswer{.replica = {.model = d.model}};
                        }
                    }();
                    if (ideal.replica.parallel.tp != tp) continue;  // a layout it cannot take
                    for (Engine e : {Engine::vllm, Engine::sglang, Engine::trtllm}) {
                        d.serving.engine = e;
                        const ReplicaAnswer a = evaluate(d, {.context = ctx});
                        INFO(model << " on " << g << " tp " << tp << " at " << ctx << ": "
                                   << name(e));
                        CHECK(a.admitted <= ideal.admitted);
                        CHECK(a.kv_budget <= ideal.kv_budget);
                    }
                }
}

TEST_CASE("the replica search ranks replicas whose figures are evaluate()'s own",
          "[evaluate][plan]") {
    // Llama-3-70B, 64 sequences of 8,000 tokens, on H100s and H200s with bf16 and fp8 KV.
    const Model m = bundled("llama-3-70b");
    SearchSpace space;
    space.gpus = {gpu("h100-sxm"), gpu("h200-sxm")};
    space.kv_formats = {KvFormat{KvDtype::bf16}, KvFormat{KvDtype::fp8_e4m3}};
    const Demand demand{.context = 8000, .concurrency = 64};
    const PlanAnswer p = plan_replicas(m, space, {}, demand);
    REQUIRE_FALSE(p.fits.empty());
    // 2 GPU types x 2 KV formats x the tp x pp layouts of 1 to 8 GPUs with tp a power of two
    // dividing the count: n = 1..8 gives 1, 2, 1, 3, 1, 2, 1, 4 = 15, every one of which
    // Llama-3-70B (64 heads, 8 KV heads) takes.
    CHECK(p.searched == 2 * 2 * 15);
    // Ranked: never more GPUs than the next; each figure is what evaluate() gives that deployment.
    for (std::size_t i = 0; i + 1 < p.fits.size(); ++i)
        CHECK(p.fits[i].answer.replica.gpus() <= p.fits[i + 1].answer.replica.gpus());
    const PlanCandidate& best = p.fits.front();
    const Deployment d{.model = m,
                       .gpu = space.gpus[best.gpu],
                       .parallel = best.answer.replica.parallel,
                       .kv = space.kv_formats[best.kv]};
    const ReplicaAnswer again = evaluate(d, demand);
    CHECK(again.max_concurrency == best.answer.max_concurrency);
    CHECK(again.kv_budget == best.answer.kv_budget);
    CHECK(again.decode->tpot == best.answer.decode->tpot);
    // Llama-3-70B's 141 GB of bf16 weights need two 80 GB H100s or one 141 GB H200: the best
    // holds 64 sequences in at most two GPUs.
    CHECK(best.answer.replica.gpus() <= 2);
}

TEST_CASE("a prepared deployment answers every demand exactly as evaluate() does",
          "[evaluate][prepare]") {
    // prepare() moves the weights, each stage's engine memory and the decode costs out of the
    // per-demand work; none of them depends on the context or the concurrency, so every figure
    // must come out the same, to the bit, for every bundled model, engine and demand.
    for (const std::string& id : bundled_model_ids(config_dir))
        for (Engine e : {Engine::vllm, Engine::sglang, Engine::trtllm, Engine::ideal})
            for (std::uint32_t pp : {1U, 2U}) {
                Deployment d{.model = bundled(id),
                             .gpu = gpu("h100-sxm"),
                             .parallel = {.tp = 1, .pp = pp},
                             .gpus = 2 * pp};
                d.serving.engine = e;
                const PreparedDeployment p = prepare(d);
                for (std::uint64_t ctx : {1ULL, 4096ULL, 8000ULL, 131072ULL})
                    for (std::uint64_t n : {1ULL, 7ULL, 64ULL}) {
                        INFO(id << " under " << name(e) << ", pp " << pp << ": " << n << " x "
                                << ctx << " tokens");
                        const ReplicaAnswer a = evaluate(d, {.context = ctx, .concurrency = n});
                        const ReplicaAnswer b = evaluate(p, {.context = ctx, .concurrency = n});
                        CHECK(b.verdict == a.verdict);
                        CHECK(b.refusal == a.refusal);
                        CHECK(b.limiting_stage == a.limiting_stage);
                        CHECK(b.memory().fraction_bytes == a.memory().fraction_bytes);
                        CHECK(b.memory().weights == a.memory().weights);
                        CHECK(b.memory().activation == a.memory().activation);
                        CHECK(b.kv_budget == a.kv_budget);
                        CHECK(b.kv_per_sequence == a.kv_per_sequence);
                        CHECK(b.headroom == a.headroom);
                        CHECK(b.shortfall == a.shortfall);
                        CHECK(b.kv_tokens == a.kv_tokens);
                        CHECK(b.admitted == a.admitted);
                        CHECK(b.max_concurrency == a.max_concurrency);
                        CHECK(b.max_concurrency_ratio == a.max_concurrency_ratio);
                        CHECK(b.total_max_concurrency == a.total_max_concurrency);
                        CHECK(b.max_context == a.max_context);
                        CHECK(b.longest_single_context == a.longest_single_context);
                        CHECK(b.estimated_max_model_len == a.estimated_max_model_len);
                        CHECK(b.weights.total() == a.weights.total());
                        CHECK(b.weights_per_gpu == a.weights_per_gpu);
                        REQUIRE(b.decode.has_value() == a.decode.has_value());
                        if (a.decode) {
                            CHECK(b.decode->step == a.decode->step);
                            CHECK(b.decode->tpot == a.decode->tpot);
                            CHECK(b.decode->bound == a.decode->bound);
                        }
                    }
            }
}
