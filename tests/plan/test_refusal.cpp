// kvplan::refusal_text (plan/refusal.hpp) and the engines' words (engine/kind.hpp): the one text
// of a refusal that `kvplan fit`, `kvplan plan`, `kvplan check` and the Python module show.

#include <catch2/catch.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/plan/refusal.hpp>
#include <kvplan/presets.hpp>

using namespace kvplan;

TEST_CASE("sizes in a refusal print as the fmt formatter prints them", "[refusal]") {
    CHECK(detail::size_text(Bytes::exactly(512)) == "512 B");
    CHECK(detail::size_text(80 * GiB) == "80.00 GiB");
    // The H100 SXM's CUDA total: 85,029,027,840 / 2^30 = 79.1885 GiB.
    CHECK(detail::size_text(Bytes::exactly(85'029'027'840ULL)) == "79.19 GiB");
    CHECK(detail::size_text(Bytes::exactly(1536)) == "1.50 KiB");
    CHECK(detail::grouped_digits(1'234'567) == "1,234,567");
}

TEST_CASE("a context past the model's limit is refused in one sentence", "[refusal]") {
    // Llama-3-8B states max_position_embeddings 8,192 and no rope scaling: 16,384 tokens pass it.
    const Deployment d{.model = presets::llama_3_8b, .gpu = gpus::h100_sxm};
    const ReplicaAnswer a = evaluate(d, {.context = 16'384});
    REQUIRE(a.refusal == Refusal::context_limit);
    CHECK(refusal_text(a) ==
          "16,384 tokens pass the model's limit of 8,192 tokens (max_position_embeddings = "
          "8,192); vLLM refuses that length (--allow-long-context serves it, as "
          "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lets vLLM)");
    CHECK(does_not_start_text(a, "1 x H100") ==
          "DOES NOT START: Llama-3-8B under vllm on 1 x H100: " + refusal_text(a));
    // A replica that starts has no refusal text.
    CHECK(refusal_text(evaluate(d, {.context = 8192})).empty());
}

TEST_CASE("each engine's display name and knobs come from one table", "[refusal][engine]") {
    // vllm/config/cache.py (gpu_memory_utilization), vllm/config/scheduler.py (max_num_seqs);
    // SGLang's server_args.py (mem_fraction_static, max_running_requests); TensorRT-LLM's
    // KvCacheConfig (free_gpu_memory_fraction) and max_batch_size.
    static_assert(display_name(Engine::vllm) == "vLLM");
    static_assert(display_name(Engine::sglang) == "SGLang");
    static_assert(display_name(Engine::trtllm) == "TensorRT-LLM");
    static_assert(fraction_knob(Engine::sglang) == "mem_fraction_static");
    static_assert(sequence_cap_knob(Engine::trtllm) == "max_batch_size");
    for (Engine e : all_engines) {
        CHECK_FALSE(display_name(e).empty());
        CHECK_FALSE(fraction_knob(e).empty());
    }
}
