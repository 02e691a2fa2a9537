// kvplan::refusal_text (plan/refusal.hpp) and the engines' words (engine/kind.hpp): the one text
// of a refusal that `kvplan fit`, `kvplan plan`, `kvplan check` and the Python module show.

#include <catch2/catch.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/plan/refusal.hpp>
#include <kvplan/presets.hpp>
#include <optional>
#include <string>

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

TEST_CASE("vLLM with no KV memory says so, and names an estimated length only above 0",
          "[refusal]") {
    // vllm/v1/core/kv_cache_utils.py, _check_enough_kv_cache_memory: available memory <= 0
    // raises "No available memory for the cache blocks" before any request is sized.
    Deployment d{.model = presets::llama_3_8b, .gpu = gpus::h100_sxm};
    d.serving.kv_memory_per_gpu = Bytes{};
    const ReplicaAnswer none = evaluate(d, {.context = 8000});
    REQUIRE(none.refusal == Refusal::request);
    CHECK(refusal_text(none) ==
          "vLLM has no memory for the cache blocks (0 B of KV memory per GPU; "
          "vllm/v1/core/kv_cache_utils.py, _check_enough_kv_cache_memory)");
    // 3 MiB holds one block of 16 x 128 KiB (2 x 32 layers x 8 heads x 128 x 2 B a token) and
    // vLLM keeps it back as the null block: no token fits, and vLLM's message then names no
    // length (it adds one only when estimate_max_model_len is above 0).
    d.serving.kv_memory_per_gpu = 3 * MiB;
    const ReplicaAnswer one_block = evaluate(d, {.context = 8000});
    REQUIRE(one_block.refusal == Refusal::request);
    CHECK(refusal_text(one_block) ==
          "one sequence of 8,000 tokens does not fit the 3.00 MiB of KV memory per GPU");
}

TEST_CASE("TensorRT-LLM starts when one sequence does not fit, and refuses such requests",
          "[refusal][engine]") {
    // tensorrt_llm/_torch/pyexecutor/resource_manager.py, _validate_and_adjust_attention_windows:
    // max_seq_len and the windows are lowered to what the pool holds, with a warning; it raises
    // only under fail_fast_on_attention_window_too_large (off by default). 256 MiB of Llama-3-8B's
    // 128 KiB a token is 2,048 tokens, 64 blocks of 32; 8,000 tokens need 250.
    Deployment d{.model = presets::llama_3_8b, .gpu = gpus::h100_sxm};
    d.serving.engine = Engine::trtllm;
    d.serving.kv_memory_per_gpu = 256 * MiB;
    const ReplicaAnswer a = evaluate(d, {.context = 8000});
    CHECK(a.refusal == Refusal::none);
    CHECK(a.verdict == Verdict::does_not_fit);
    CHECK(a.kv_tokens == std::optional<std::uint64_t>{2048});
    CHECK(a.max_concurrency == 0);
    // Without a block it cannot start.
    d.serving.kv_memory_per_gpu = Bytes{};
    const ReplicaAnswer empty = evaluate(d, {.context = 8000});
    CHECK(empty.refusal == Refusal::cache);
    CHECK(refusal_text(empty) == "TensorRT-LLM leaves no room for the KV cache");
}

TEST_CASE("TensorRT-LLM's weights past the GPU are refused as such, not as a fraction",
          "[refusal][engine]") {
    // Llama-3-70B in bf16: 80 layers x (2 x 8,192^2 + 2 x 8,192 x 1,024 + 3 x 8,192 x 28,672 +
    // 2 x 8,192) + 2 x 128,256 x 8,192 + 8,192 = 70,553,706,496 parameters, 141,107,412,992 B =
    // 131.42 GiB, on an L4 whose runtime reports 23,570,219,008 B = 21.95 GiB. TensorRT-LLM takes
    // its fraction of what is free after them, so lowering it does not help.
    Deployment d{.model = presets::llama_3_70b, .gpu = gpus::l4};
    d.serving.engine = Engine::trtllm;
    const ReplicaAnswer a = evaluate(d, {.context = 8000});
    REQUIRE(a.refusal == Refusal::outside_fraction);
    CHECK(a.memory().weights.count() == 141'107'412'992ULL);
    const std::string text = refusal_text(a);
    CHECK(text.rfind("the weights (131.42 GiB) and the terms beside them (", 0) == 0);
    CHECK(text.find("more than the GPU's 21.95 GiB") != std::string::npos);
    CHECK(text.find("fraction") == std::string::npos);
}
