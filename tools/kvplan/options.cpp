#include "options.hpp"

#include <CLI/CLI.hpp>

namespace kvplan::cli {

void add_options(CLI::App& sub, CommonOptions& o, unsigned groups) {
    if (groups & opt_model)
        sub.add_option("-m,--model", o.model,
                       "A bundled model id (kvplan list models), or a path to a config.json or to "
                       "a folder holding one");
    if (groups & opt_gpu)
        sub.add_option("-g,--gpu", o.gpu,
                       "A bundled GPU id or alias (kvplan list gpus), or a path to a GPU spec JSON");
    if (groups & opt_layout) {
        sub.add_option("--gpus", o.gpus, "GPUs in the replica (default: tp x pp)");
        sub.add_option("--tp", o.tp, "Tensor-parallel degree")->capture_default_str();
        sub.add_option("--pp", o.pp, "Pipeline-parallel stages")->capture_default_str();
    }
    if (groups & opt_dtypes) {
        sub.add_option("--kv-dtype", o.kv_dtype,
                       "KV-cache element type: fp32 fp16 bf16 fp8 (= fp8_e4m3) fp8_e5m2 int8 int4 "
                       "nvfp4 mxfp4")
            ->capture_default_str();
        sub.add_option("--weight-dtype", o.weight_dtype,
                       "Weight format (default: the model's torch_dtype, else bf16)");
        sub.add_option("--mamba-cache-dtype", o.mamba_cache_dtype,
                       "State of Mamba and linear-attention layers, as vLLM's flag: auto (2 B, a "
                       "bf16 model's), bfloat16, float16 or float32")
            ->capture_default_str();
        sub.add_option("--mamba-ssm-cache-dtype", o.mamba_ssm_cache_dtype,
                       "Their recurrent (SSM) state only, as vLLM's flag: auto (as "
                       "--mamba-cache-dtype), bfloat16, float16 or float32")
            ->capture_default_str();
    }
    if (groups & opt_workload) {
        sub.add_option("-c,--context", o.context,
                       "Tokens per sequence, as vLLM's --max-model-len reads them: 8192, 8k (8,000), "
                       "25.6k, 8K (8,192)");
        sub.add_option("-n,--concurrency", o.concurrency, "Sequences held at once");
        sub.add_option("-b,--batch", o.batch, "Decode batch size (sequences per step)");
        sub.add_option("--block-size", o.block_size,
                       "Tokens per KV block (paged attention); default: the engine's");
    }
    if (groups & opt_budget) {
        sub.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                       "Fraction of GPU memory the engine may use (vLLM's flag); default: the "
                       "engine's");
        sub.add_option("--kv-memory", o.kv_memory,
                       "KV budget per GPU, replacing the computed one; names its unit (5.38GiB)");
        sub.add_option("-e,--engine", o.engine, "Engine profile: ideal, vllm, sglang, trtllm");
    }
    if (groups & opt_output) {
        sub.add_option("-f,--format", o.format, "Output: text, md, json or csv")
            ->check(CLI::IsMember({"text", "md", "json", "csv"}))
            ->capture_default_str();
        sub.add_flag("--explain", o.explain,
                     "Show each figure's formula, its inputs and the source of each spec value");
    }
}

}  // namespace kvplan::cli
