#pragma once

// tests/data/latency_measurements.json as observations: each row's model and GPU from the bundled
// configs, its layout, formats and load, and the figures its source published.

#include <cstdint>
#include <kvplan/calibrate/latency.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/json.hpp>
#include <string>
#include <vector>

#include "bundled_models.hpp"

namespace kvplan::testing {

/// One row of the table.
struct MeasuredRow {
    std::string id;
    std::string set;     ///< "fit", "held_out" or "external" (a held-out source, never fitted)
    std::string source;  ///< a key of the table's "sources"
    std::string model_name;
    GpuFamily family = GpuFamily::hopper;
    LatencyObservation obs;
    std::optional<double> throughput;  ///< output tokens/s of the replica, where published
    /// The row's figures contradict its stated setup (its caveats say how); the bound and the
    /// error are not judged on it.
    bool doubtful = false;
};

/// Whether the row carries its primary figure (a throughput-only row does not).
inline bool has_primary(const MeasuredRow& r) {
    return r.obs.load.kind != LoadKind::static_batch ? r.obs.itl.has_value()
                                                     : r.obs.e2e.has_value();
}

/// The rows of the table, in its order.
inline std::vector<MeasuredRow> latency_table() {
    const auto file = data_dir / "latency_measurements.json";
    const Json doc = read_json_file(file);
    const JsonReader root(doc, file.string());
    const Json& rows = root.array("rows");
    std::vector<MeasuredRow> out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const JsonReader r(rows[i], file.string(), JsonReader::element("rows", i));
        const GpuSpec gpu = load_gpu_spec(config_dir / "gpus" / (r.string("gpu") + ".json")).spec;
        const WeightFormat wf = *parse_weight_format(r.string("weights"));
        RooflineOptions options;
        // The matmuls run in the type the engines run the checkpoint in (matmul_compute): fp8 on
        // GPUs with an fp8 peak, NVFP4 as W4A4 on Blackwell's fp4 tensor cores (TensorRT-LLM's
        // and vLLM's NVFP4 linear methods), MXFP4 and the rest in bf16.
        options.compute = matmul_compute({.format = wf}, gpu);
        // The vLLM release that ran, where the row names it ("0.12.0": its line 0.12).
        if (const auto v = r.optional_string("engine_version");
            v && r.string("engine").find("vllm") != std::string::npos)
            options.vllm_release =
                parse_engine_version(v->substr(0, v->find('.', v->find('.') + 1)));
        const bool serving = r.string("mode") == "serving";
        // request_rate "inf" with num_prompts = concurrency: every request sent at once.
        const bool burst = serving && r.optional_string("request_rate") == "inf";
        Load load{.kind = burst     ? LoadKind::burst
                          : serving ? LoadKind::serving
                                    : LoadKind::static_batch,
                  .concurrency = r.positive_integer(serving ? "concurrency" : "batch"),
                  .prompt_tokens = r.positive_integer("prompt_tokens"),
                  .output_tokens = r.positive_integer("output_tokens"),
                  .max_num_batched_tokens =
                      r.optional_positive_integer("max_num_batched_tokens", std::uint64_t{1} << 24),
                  .max_running = r.optional_positive_integer("max_running", 1U << 20),
                  // "lengths": "fixed" where the source runs every request at exactly its
                  // lengths; else they are drawn around them (means recorded).
                  .fixed_lengths = r.optional_string("lengths") == "fixed",
                  // "length_spread": each request's lengths drawn uniformly within +-spread of
                  // the recorded means, as the source's benchmark draws them.
                  .length_spread = r.optional_positive_number("length_spread").value_or(0.0)};
        // A closed loop's num_prompts: the run starts its first `concurrency` at once.
        if (load.kind == LoadKind::serving)
            load.requests = r.optional_positive_integer("num_prompts", std::uint64_t{1} << 24);
        const JsonReader meas = r.object("measured");
        const auto ms_of = [&](const char* key) -> std::optional<Seconds> {
            if (const auto v = meas.optional_positive_number(key)) return *v * kvplan::milliseconds;
            return std::nullopt;
        };
        const auto count = [&](const char* key) {
            return static_cast<std::uint32_t>(r.positive_integer(key, 1024));
        };
        // The engine whose scheduler the steps follow (free text in the older rows: the first
        // engine name it holds).
        const std::string engine = r.string("engine");
        const auto has = [&](std::string_view w) { return engine.find(w) != std::string::npos; };
        // fp8 in square blocks where the checkpoint's weight_block_size says so (its config.json).
        const auto fp8_block =
            static_cast<std::uint32_t>(r.optional_positive_integer("fp8_block", 1024).value_or(0));
        const ParallelRules rules = has("sglang") || has("SGLang") ? ParallelRules::sglang
                                    : has("vllm") || has("vLLM")   ? ParallelRules::vllm
                                                                   : ParallelRules::trtllm;
        // Every source of the table predates vLLM v0.28 (the newest is of April 2026): a vLLM row
        // that names no token budget ran with the default before PR #51726 raised it to 16,384.
        if (rules == ParallelRules::vllm && !load.max_num_batched_tokens)
            load.max_num_batched_tokens =
                vllm_batch_defaults(gpu, *vllm_release_defaults({0, 27})).max_num_batched_tokens;
        // A TensorRT-LLM row whose source ran a TensorRT engine through the C++ executor (its
        // source's "trtllm_runtime": "tensorrt-engine"), not the PyTorch backend.
        options.trtllm_tensorrt_engine =
            rules == ParallelRules::trtllm &&
            doc["sources"][r.string("source")].value("trtllm_runtime", "") == "tensorrt-engine";
        const auto opt_count = [&](const char* key) {
            return static_cast<std::uint32_t>(r.optional_positive_integer(key, 1024).value_or(1));
        };
        // TPOT where the row gives it (vllm bench serve's per-token figure); else its ITL, which
        // some tools measure per streamed chunk.
        const char* per_token = meas.has("tpot_ms") ? "tpot_ms" : "itl_ms";
        // A row in the checkpoint's own quantized format is served as the checkpoint stores it:
        // gpt-oss's "mxfp4" quantizes its routed experts alone and keeps attention, the router,
        // the embeddings and the LM head in bf16 (its config.json: quantization_config
        // modules_to_not_convert), which vLLM loads as they are
        // (vllm/model_executor/layers/quantization/mxfp4.py, Mxfp4Config.get_quant_method: the
        // unquantized method for every layer but the fused MoE). Taking the whole model as mxfp4
        // made its weights 1.3 GiB lighter and the KV pool of one H100 that much larger.
        const Model model = bundled(r.string("model"));
        const CheckpointFormat& ckpt = model.config().checkpoint;
        WeightOptions weights{.format = wf, .layout = {.fp8_block = fp8_block}};
        if (ckpt.known && ckpt.experts == wf && ckpt.linear != wf)
            weights = checkpoint_weights(ckpt);
        out.push_back(MeasuredRow{
            .id = r.string("id"),
            .set = r.string("set"),
            .source = r.string("source"),
            .model_name = r.string("model_name"),
            .family = *gpu_family(gpu),
            .obs =
                LatencyObservation{
                    .replica = Replica{.model = model,
                                       .gpu = gpu,
                                       .parallel = {.tp = count("tp"), .pp = count("pp")},
                                       .weights = weights,
                                       .kv = *parse_kv_dtype(r.string("kv_dtype"))},
                    .load = load,
                    .options = options,
                    .itl = ms_of(per_token),
                    .ttft = ms_of("ttft_ms"),
                    .e2e = ms_of("e2e_latency_ms"),
                    .tokens_per_s = meas.optional_positive_number("throughput_tokens_per_s")},
            .throughput = meas.optional_positive_number("throughput_tokens_per_s")});
        // Expert and attention-data parallelism (1 when absent), laid out by the engine's rules.
        ParallelConfig& parallel = out.back().obs.replica.parallel;
        parallel.dp = opt_count("dp");
        parallel.ep = opt_count("ep");
        parallel.rules = rules;
        out.back().doubtful = r.optional_boolean("doubtful").value_or(false);
        // The run's own memory fraction and sequence cap, where its launch command sets them
        // (TensorRT-LLM's free_gpu_memory_fraction and max_batch_size, SGLang's
        // mem_fraction_static and max_running_requests): the requests its KV pool admits.
        EngineOptions eo;
        bool set = false;
        if (const auto f = r.optional_positive_number("free_gpu_memory_fraction")) {
            eo.trtllm.free_gpu_memory_fraction = *f;
            set = true;
        }
        if (const auto n = r.optional_positive_integer("max_batch_size", 1U << 20)) {
            eo.trtllm.max_batch_size = *n;
            set = true;
        }
        if (const auto f = r.optional_positive_number("mem_fraction_static")) {
            eo.sglang.mem_fraction_static = *f;
            set = true;
        }
        if (const auto n = r.optional_positive_integer("max_running_requests", 1U << 20)) {
            eo.sglang.max_running_requests = *n;
            set = true;
        }
        LatencyObservation& o = out.back().obs;
        if (set && o.load.kind != LoadKind::static_batch)
            o.load.max_running =
                running_cap(o.replica, o.load, eo, o.options.vllm_release).sequences;
    }
    return out;
}

/// The observations of `rows` in `set` and `family`.
inline std::vector<LatencyObservation> observations(const std::vector<MeasuredRow>& rows,
                                                    std::string_view set, GpuFamily family) {
    std::vector<LatencyObservation> out;
    for (const MeasuredRow& r : rows)
        if (r.set == set && r.family == family) out.push_back(r.obs);
    return out;
}

/// The row's primary figure: ITL of a serving load, e2e latency of a static batch.
inline Seconds primary_measured(const MeasuredRow& r) {
    return r.obs.load.kind != LoadKind::static_batch ? *r.obs.itl : *r.obs.e2e;
}
inline Seconds primary_estimate(const LatencyEstimate& e) {
    return e.kind != LoadKind::static_batch ? e.itl : e.request;
}
inline Seconds primary_bound(const LatencyEstimate& e) {
    return e.kind != LoadKind::static_batch ? e.itl_bound : e.request_bound;
}

}  // namespace kvplan::testing
