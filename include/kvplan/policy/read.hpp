#pragma once

// Reading a policy file of `kvplan check` (schema "kvplan-policy/1") into policy/requirements.hpp's
// types. Reading is strict, with the same error standard as every JSON reader here: InvalidInput
// naming the file, the JSON path, what was expected and what was found.
//
//   {
//     "schema": "kvplan-policy/1",
//     "description": "chat serving on 4 x H100 and on 4 x H200",   (optional)
//     "model": "llama-3-70b",          (optional: a bundled id or a path, relative to this file;
//                                        `kvplan check --model` overrides it)
//     "replica": {                     (one replica; or "replicas": [{...}, {...}], each judged)
//       "name": "H100 fleet",          (optional: as reports show it)
//       "gpu": "h100-sxm",             (required: a bundled id or alias, or a spec path)
//       "tp": 4, "pp": 1,              (default 1 and 1)
//       "dp": 1, "ep": 1, "dcp": 1,    (default 1: data, expert and decode context parallelism,
//                                        in the engine's rules; see ParallelConfig)
//       "kv_dtype": "fp8",             (default: what the engine's "auto" stores for the
//                                        checkpoint, engine/served_kv.hpp)
//       "weight_dtype": "bf16",        (default: the model's own)
//       "engine": "vllm",              (default "vllm")
//       "gpu_memory_utilization": 0.9, (default: the engine's)
//       "block_size": 16               (default: the engine's)
//     },
//     "requirements": [                (at least one)
//       {"name": "p95 chat load", "kind": "min_concurrency", "sequences": 64, "context_tokens":
//       12000, "shared_prefix_tokens": 2048},   (optional: a system prompt every request starts
//                                                 with, its full blocks held once)
//       {"name": "decode latency", "kind": "max_tpot", "ms": 40, "batch": 64, "context_tokens":
//       8000},
//       {"name": "cache cost", "kind": "max_kv_bytes_per_token", "bytes": 163840},
//       {"name": "weights", "kind": "max_weights_per_gpu", "GiB": 40},
//       {"name": "long documents", "kind": "min_context", "tokens": 131072, "sequences": 1},
//       {"kind": "max_regression", "figure": "max_concurrency", "context_tokens": 8000, "percent":
//       10},
//       {"kind": "max_regression", "figure": "kv_bytes_per_token", "percent": 5},
//       {"kind": "max_regression", "figure": "tpot", "batch": 32, "context_tokens": 8000,
//       "percent": 10}
//     ]
//   }
//
// A size is given in exactly one unit, named by its key: "bytes" (an integer), or a number of
// "KiB", "MiB", "GiB", "kB", "MB" or "GB". Token counts are integers. Every object is strict: a
// key the schema does not name is an error naming its JSON path and the nearest known key, since
// a typo that passed silently ("tensor_parallel": 8 read as tp 1) would judge the wrong replica.
// The full schema is in examples/ci/README.md.
//
// The gate reads policies from the pull requests it judges, so a path a policy names (its model,
// a GPU spec) is read only inside the policy's folder: see policy_file().

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../dtype.hpp"
#include "../engine.hpp"
#include "../error.hpp"
#include "../json.hpp"
#include "../json_position.hpp"
#include "../plan/deployment.hpp"
#include "../units.hpp"
#include "../weights.hpp"
#include "requirements.hpp"

namespace kvplan {

// Limits on what a policy states. A gate reads policies from the pull requests it judges, and
// judges each requirement on each replica (a check about a millisecond), the config.json fields a
// change moved once more each: a policy of thousands must be refused in a moment, not judged for
// minutes on gigabytes. A policy names the few fleets one model is served on and the dozen
// figures that matter; the limits are well above that (docs/cli.md, "Policy limits").

/// The most replicas a policy may state.
inline constexpr std::size_t max_policy_replicas = 32;

/// The most requirements a policy may state.
inline constexpr std::size_t max_policy_requirements = 128;

/// The most checks (replicas x requirements) a policy may ask for.
inline constexpr std::size_t max_policy_checks = 1024;

namespace detail::policy {

/// The keys a size may be written with, and their units.
struct SizeKey {
    std::string_view key;
    ByteUnit unit;
};
inline constexpr SizeKey size_keys[] = {{"bytes", B}, {"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB},
                                        {"kB", kB},   {"MB", MB},   {"GB", GB}};

/// A size given in exactly one unit named by its key.
[[nodiscard]] inline Bytes size_field(const JsonReader& r) {
    std::optional<SizeKey> found;
    for (const SizeKey& k : size_keys) {
        if (!r.contains(k.key)) continue;
        if (found)
            r.fail(k.key, "one size key (bytes, KiB, MiB, GiB, kB, MB or GB)",
                   "both \"" + std::string(found->key) + "\" and \"" + std::string(k.key) + "\"");
        found = k;
    }
    if (!found)
        r.fail("bytes", "a size: one of bytes, KiB, MiB, GiB, kB, MB or GB",
               "nothing (the field is missing)");
    if (found->unit.bytes == 1) return Bytes::exactly(r.positive_integer("bytes"));
    const double v = r.positive_number(found->key);
    if (!(v * static_cast<double>(found->unit.bytes) < 18446744073709549568.0))
        r.fail(found->key, "a size below 2^64 bytes", number_text(v));
    return round_to_bytes(v, found->unit);
}

/// Engines' and people's names for the replica's keys: vLLM's --tensor-parallel-size,
/// --data-parallel-size, --enable-expert-parallel, --decode-context-parallel-size and
/// --kv-cache-dtype (vllm/engine/arg_utils.py, EngineArgs), SGLang's --tp-size, --dp-size,
/// --ep-size, --ep-num-redundant-experts, --page-size and --mem-fraction-static
/// (python/sglang/srt/server_args.py, ServerArgs), TensorRT-LLM's moe_expert_parallel_size
/// (tensorrt_llm/llmapi/llm_args.py) and its tokens_per_block and free_gpu_memory_fraction (the
/// same file, KvCacheConfig).
inline const std::vector<NameHint> replica_hints{
    {"tensor_parallel", "tp"},
    {"tensor_parallel_size", "tp"},
    {"tp_size", "tp"},
    {"pipeline_parallel", "pp"},
    {"pipeline_parallel_size", "pp"},
    {"pp_size", "pp"},
    {"data_parallel_size", "dp"},
    {"data_parallel", "dp"},
    {"dp_size", "dp"},
    {"expert_parallel_size", "ep"},
    {"enable_expert_parallel", "ep"},
    {"moe_expert_parallel_size", "ep"},
    {"ep_size", "ep"},
    {"decode_context_parallel_size", "dcp"},
    {"dcp_size", "dcp"},
    {"num_redundant_experts", "redundant_experts"},
    {"ep_num_redundant_experts", "redundant_experts"},
    {"kv_cache_dtype", "kv_dtype"},
    {"dtype", "weight_dtype"},
    {"torch_dtype", "weight_dtype"},
    {"mem_fraction_static", "gpu_memory_utilization"},
    {"free_gpu_memory_fraction", "gpu_memory_utilization"},
    {"page_size", "block_size"},
    {"tokens_per_block", "block_size"},
    {"label", "name"},
    {"description", "name"},
};

/// Other names for requirement keys; only those whose key the requirement's kind takes are
/// offered.
inline const std::vector<NameHint> requirement_hints{
    {"concurrency", "sequences"},
    {"max_num_seqs", "sequences"},
    {"context", "context_tokens"},
    {"max_model_len", "context_tokens"},
    {"context", "tokens"},
    {"context_tokens", "tokens"},
    {"max_model_len", "tokens"},
    {"batch_size", "batch"},
    {"tpot_ms", "ms"},
    {"milliseconds", "ms"},
    {"size", "bytes"},
    {"kilobytes", "kB"},
    {"megabytes", "MB"},
    {"gigabytes", "GB"},
    {"kibibytes", "KiB"},
    {"mebibytes", "MiB"},
    {"gibibytes", "GiB"},
    {"description", "name"},
    {"max_change_percent", "percent"},
    {"percentage", "percent"},
    {"pct", "percent"},
    {"metric", "figure"},
};

/// Other names for the figures a max_regression compares.
inline const std::vector<NameHint> figure_hints{
    {"concurrency", "max_concurrency"},
    {"max_num_seqs", "max_concurrency"},
    {"context", "max_context"},
    {"max_model_len", "max_context"},
    {"tpot_ms", "tpot"},
    {"decode_latency", "tpot"},
    {"kv_bytes", "kv_bytes_per_token"},
    {"kv_per_token", "kv_bytes_per_token"},
    {"weights", "weights_per_gpu"},
    {"weight_bytes", "weights_per_gpu"},
};

/// The keys a max_regression of `figure` takes beside kind, name, figure and percent.
[[nodiscard]] inline std::vector<std::string_view> regression_keys(CheckFigure figure) {
    switch (figure) {
        case CheckFigure::max_concurrency:
            return {"context_tokens", "shared_prefix_tokens"};
        case CheckFigure::max_context:
            return {"sequences"};
        case CheckFigure::tpot:
            return {"batch", "context_tokens"};
        case CheckFigure::kv_bytes_per_token:
        case CheckFigure::weights_per_gpu:
            return {};
    }
    return {};
}

/// The keys a requirement of `kind` takes, kind and name first (for max_regression, those of any
/// figure).
[[nodiscard]] inline std::vector<std::string_view> requirement_keys(RequirementKind kind) {
    std::vector<std::string_view> keys{"kind", "name"};
    switch (kind) {
        case RequirementKind::min_concurrency:
            keys.insert(keys.end(), {"sequences", "context_tokens", "shared_prefix_tokens"});
            break;
        case RequirementKind::max_tpot:
            keys.insert(keys.end(), {"ms", "batch", "context_tokens"});
            break;
        case RequirementKind::max_kv_bytes_per_token:
        case RequirementKind::max_weights_per_gpu:
            for (const SizeKey& k : size_keys) keys.push_back(k.key);
            break;
        case RequirementKind::min_context:
            keys.insert(keys.end(), {"tokens", "sequences"});
            break;
        case RequirementKind::max_regression:
            keys.insert(keys.end(), {"figure", "percent", "context_tokens", "batch", "sequences",
                                     "shared_prefix_tokens"});
            break;
    }
    return keys;
}

inline constexpr RequirementKind all_requirement_kinds[] = {RequirementKind::min_concurrency,
                                                            RequirementKind::max_tpot,
                                                            RequirementKind::max_kv_bytes_per_token,
                                                            RequirementKind::max_weights_per_gpu,
                                                            RequirementKind::min_context,
                                                            RequirementKind::max_regression};

inline constexpr CheckFigure all_check_figures[] = {
    CheckFigure::max_concurrency, CheckFigure::max_context, CheckFigure::tpot,
    CheckFigure::kv_bytes_per_token, CheckFigure::weights_per_gpu};

/// "a, b and c".
[[nodiscard]] inline std::string listed(const std::vector<std::string>& items) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i)
        out.append(i == 0 ? "" : i + 1 == items.size() ? " and " : ", ").append(items[i]);
    return out;
}

/// Refuses a key outside `keys` ("a " + `what`): one that `others` take is named as such ("ms, a
/// key of max_tpot"), any other as unknown, each with the nearest key of `keys`.
inline void only_keys_naming_others(
    const JsonReader& r, const std::vector<std::string_view>& keys, const std::string& what,
    const std::vector<std::pair<std::string, std::vector<std::string_view>>>& others) {
    std::vector<NameHint> hints;
    for (const NameHint& h : requirement_hints)
        if (std::find(keys.begin(), keys.end(), h.meant) != keys.end()) hints.push_back(h);
    for (const auto& item : r.json().items()) {
        const std::string& key = item.key();
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        std::vector<std::string> takers;
        for (const auto& [other, ks] : others)
            if (std::find(ks.begin(), ks.end(), key) != ks.end()) takers.push_back(other);
        if (takers.empty()) r.unknown_key(key, keys, what, hints);
        std::string expected = "a key of " + what + " (";
        for (std::size_t i = 0; i < keys.size(); ++i)
            expected.append(i ? ", " : "").append(keys[i]);
        r.fail(key, expected + ")",
               "'" + printable(key) + "', a key of " + listed(takers) +
                   did_you_mean(key, keys, hints));
    }
}

/// Refuses a key a requirement of `kind` does not take (see only_keys_naming_others).
inline void requirement_only_keys(const JsonReader& r, RequirementKind kind) {
    std::vector<std::pair<std::string, std::vector<std::string_view>>> others;
    for (RequirementKind k : all_requirement_kinds)
        if (k != kind) others.emplace_back(name(k), requirement_keys(k));
    only_keys_naming_others(r, requirement_keys(kind),
                            "a " + std::string(name(kind)) + " requirement", others);
}

/// Refuses a key a max_regression of `figure` does not take, naming the figures that take it.
inline void regression_only_keys(const JsonReader& r, CheckFigure figure) {
    const auto keys_of = [](CheckFigure f) {
        std::vector<std::string_view> keys{"kind", "name", "figure", "percent"};
        for (std::string_view k : regression_keys(f)) keys.push_back(k);
        return keys;
    };
    std::vector<std::pair<std::string, std::vector<std::string_view>>> others;
    for (CheckFigure f : all_check_figures)
        if (f != figure)
            others.emplace_back("max_regression of " + std::string(name(f)), keys_of(f));
    only_keys_naming_others(r, keys_of(figure),
                            "a max_regression requirement of " + std::string(name(figure)), others);
}

[[nodiscard]] inline std::uint32_t u32_field(const JsonReader& r, std::string_view key,
                                             std::uint32_t fallback) {
    const auto v = r.optional_positive_integer(key, 1U << 16);
    return v ? static_cast<std::uint32_t>(*v) : fallback;
}

[[nodiscard]] inline PolicyReplica read_replica(const JsonReader& r) {
    r.only_keys(
        {"name", "gpu", "tp", "pp", "dp", "ep", "dcp", "redundant_experts", "kv_dtype",
         "weight_dtype", "engine", "gpu_memory_utilization", "block_size", "engine_version"},
        "the replica", replica_hints);
    PolicyReplica p;
    p.gpu = r.string("gpu");
    p.tp = u32_field(r, "tp", 1);
    p.pp = u32_field(r, "pp", 1);
    p.dp = u32_field(r, "dp", 1);
    p.ep = u32_field(r, "ep", 1);
    p.dcp = u32_field(r, "dcp", 1);
    if (const auto n = r.optional_count("redundant_experts", 1U << 16))
        p.redundant_experts = static_cast<std::uint32_t>(*n);
    if (const auto s = r.optional_string("kv_dtype")) {
        const auto d = parse_kv_dtype(*s);
        if (!d)
            r.fail("kv_dtype",
                   "a KV dtype (fp32, fp16, bf16, fp8, fp8_e5m2, fp8_per_token_head, int8, int4, "
                   "nvfp4, nvfp4_4over6, mxfp4)",
                   "\"" + printable(*s) + "\"" +
                       did_you_mean(
                           *s, {"fp32", "fp16", "bf16", "fp8", "fp8_e5m2", "fp8_per_token_head",
                                "int8", "int4", "nvfp4", "nvfp4_4over6", "mxfp4"}));
        p.kv_dtype = *d;
    }
    if (const auto s = r.optional_string("weight_dtype")) {
        p.weight_dtype = parse_weight_format(*s);
        if (!p.weight_dtype)
            r.fail("weight_dtype", "a weight format (fp32, bf16, fp16, fp8, int8, int4, mxfp4)",
                   "\"" + printable(*s) + "\"" +
                       did_you_mean(*s, {"fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4"}));
    }
    if (const auto s = r.optional_string("engine")) {
        const auto e = parse_engine(*s);
        if (!e)
            r.fail("engine", "ideal, vllm, sglang or trtllm",
                   "\"" + printable(*s) + "\"" +
                       did_you_mean(*s, {"ideal", "vllm", "sglang", "trtllm"}));
        p.engine = *e;
    }
    if (r.has("gpu_memory_utilization")) {
        const double u = r.positive_number("gpu_memory_utilization");
        if (u > 1.0) r.fail("gpu_memory_utilization", "a fraction in (0, 1]", number_text(u));
        // The ideal profile gives the cache every byte but the weights: a fraction would be
        // ignored.
        if (p.engine == Engine::ideal)
            r.fail("gpu_memory_utilization",
                   "no fraction with engine \"ideal\", which gives the cache every byte but the "
                   "weights",
                   number_text(u));
        p.gpu_memory_utilization = u;
    }
    if (r.has("block_size")) {
        p.block_size = u32_field(r, "block_size", 1);
        if (p.engine == Engine::vllm &&
            std::find(std::begin(vllm_block_sizes), std::end(vllm_block_sizes), *p.block_size) ==
                std::end(vllm_block_sizes))
            r.fail("block_size",
                   "one of vLLM's block sizes 1, 8, 16, 32, 64, 128, 256 (vllm/config/cache.py)",
                   std::to_string(*p.block_size));
    }
    if (const auto s = r.optional_string("engine_version")) {
        if (p.engine != Engine::vllm && p.engine != Engine::sglang)
            r.fail("engine_version",
                   "engine \"vllm\" or \"sglang\" (the release tables are vLLM's and SGLang's)",
                   "\"" + printable(*s) + "\"");
        const auto v = parse_engine_version(*s);
        if (p.engine == Engine::sglang) {
            if (!v || !sglang_release_defaults(*v))
                r.fail("engine_version",
                       "an SGLang release as \"X.Y.Z\", " + sglang_oldest_release.text() + " to " +
                           sglang_newest_release.text(),
                       "\"" + printable(*s) + "\"");
        } else if (!v || !vllm_release_defaults(v->line())) {
            r.fail("engine_version",
                   "a vLLM release as \"X.Y\", " + vllm_oldest_release.text() + " to " +
                       vllm_newest_release.text(),
                   "\"" + printable(*s) + "\"");
        }
        p.engine_version = *v;
    }
    p.name = r.optional_string("name").value_or(default_replica_name(p));
    return p;
}

/// The optional shared prefix of a demand of `context` tokens (Demand::shared_prefix_tokens): at
/// most the context; 0 when absent.
[[nodiscard]] inline std::uint64_t shared_prefix_field(const JsonReader& r, std::uint64_t context) {
    const std::uint64_t n = r.optional_count("shared_prefix_tokens").value_or(0);
    if (n > context)
        r.fail("shared_prefix_tokens",
               "at most context_tokens, " + std::to_string(context) +
                   " (the prefix is part of "
                   "every request)",
               std::to_string(n));
    return n;
}

/// A percentage >= 0.
[[nodiscard]] inline double percent_field(const JsonReader& r) {
    const Json* v = r.find("percent");
    if (v == nullptr || v->is_null())
        r.fail("percent", "a percentage >= 0 (how far the figure may worsen)",
               "nothing (the field is missing)");
    if (!v->is_number()) r.fail("percent", "a percentage >= 0", describe_json(*v));
    const double d = v->get<double>();
    if (!(d >= 0.0) || !std::isfinite(d)) r.fail("percent", "a percentage >= 0", v->dump());
    return d;
}

[[nodiscard]] inline Requirement read_requirement(const JsonReader& r) {
    Requirement q;
    if (!r.contains("kind")) {  // "knd": name it as unknown rather than "kind" as missing
        std::vector<std::string_view> any{"kind", "name"};
        for (RequirementKind k : all_requirement_kinds)
            for (std::string_view key : requirement_keys(k))
                if (std::find(any.begin(), any.end(), key) == any.end()) any.push_back(key);
        r.only_keys(any, "a requirement", requirement_hints);
    }
    const std::string kind = r.string("kind");
    const auto k = parse_requirement_kind(kind);
    if (!k) {
        std::vector<std::string_view> kinds;
        for (RequirementKind each : all_requirement_kinds) kinds.push_back(name(each));
        r.fail("kind",
               "min_concurrency, max_tpot, max_kv_bytes_per_token, max_weights_per_gpu, "
               "min_context or max_regression",
               "\"" + printable(kind) + "\"" + did_you_mean(kind, kinds));
    }
    q.kind = *k;
    requirement_only_keys(r, q.kind);
    q.name = r.optional_string("name").value_or(kind);
    switch (q.kind) {
        case RequirementKind::min_concurrency:
            q.sequences = r.positive_integer("sequences");
            q.context_tokens = r.positive_integer("context_tokens");
            q.shared_prefix_tokens = shared_prefix_field(r, q.context_tokens);
            break;
        case RequirementKind::max_tpot:
            q.tpot = r.positive_number("ms") * milliseconds;
            q.batch = r.positive_integer("batch");
            q.context_tokens = r.positive_integer("context_tokens");
            break;
        case RequirementKind::max_kv_bytes_per_token:
        case RequirementKind::max_weights_per_gpu:
            q.size = size_field(r);
            break;
        case RequirementKind::min_context:
            q.tokens = r.positive_integer("tokens");
            q.sequences = r.optional_positive_integer("sequences").value_or(1);
            break;
        case RequirementKind::max_regression: {
            const std::string figure = r.string("figure");
            const auto f = parse_check_figure(figure);
            if (!f) {
                std::vector<std::string_view> figures;
                for (CheckFigure each : all_check_figures) figures.push_back(name(each));
                r.fail(
                    "figure",
                    "max_concurrency, max_context, tpot, kv_bytes_per_token or weights_per_gpu",
                    "\"" + printable(figure) + "\"" + did_you_mean(figure, figures, figure_hints));
            }
            q.figure = *f;
            regression_only_keys(r, q.figure);
            q.percent = percent_field(r);
            switch (q.figure) {
                case CheckFigure::max_concurrency:
                    q.context_tokens = r.positive_integer("context_tokens");
                    q.shared_prefix_tokens = shared_prefix_field(r, q.context_tokens);
                    break;
                case CheckFigure::max_context:
                    q.sequences = r.optional_positive_integer("sequences").value_or(1);
                    break;
                case CheckFigure::tpot:
                    q.batch = r.positive_integer("batch");
                    q.context_tokens = r.positive_integer("context_tokens");
                    break;
                case CheckFigure::kv_bytes_per_token:
                case CheckFigure::weights_per_gpu:
                    break;
            }
            if (!r.contains("name")) q.name = kind + " of " + figure;
            break;
        }
    }
    return q;
}

/// Reads the replicas: "replica" (one object) or "replicas" (an array of at least one), not
/// both. Names must tell them apart: a name given twice is an error, and a default name that two
/// replicas share gets its JSON path.
[[nodiscard]] inline std::vector<PolicyReplica> read_replicas(const JsonReader& r) {
    std::vector<PolicyReplica> out;
    const bool one = r.contains("replica"), many = r.contains("replicas");
    if (one && many)
        r.fail("replicas", "\"replica\" (one) or \"replicas\" (several), not both",
               "both \"replica\" and \"replicas\"");
    if (!one && !many)
        r.fail("replica", "a replica (\"replica\": {...}) or several (\"replicas\": [...])",
               "nothing (the field is missing)");
    std::vector<bool> named;
    if (one) {
        out.push_back(read_replica(r.object("replica")));
        out.back().path = "replica";
        named.push_back(r.object("replica").has("name"));
    } else {
        const Json& list = r.array("replicas");
        if (list.empty()) r.fail("replicas", "at least one replica", "an empty array");
        if (list.size() > max_policy_replicas)
            r.fail(
                "replicas",
                "at most " + std::to_string(max_policy_replicas) + " replicas (a policy's limit)",
                std::to_string(list.size()) + " replicas");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string path = JsonReader::element("replicas", i);
            const JsonReader each(list[i], r.source(), r.path(path));
            out.push_back(read_replica(each));
            out.back().path = path;
            named.push_back(each.has("name"));
        }
    }
    // By hashing, not pair by pair: the time stays linear in the replicas.
    std::unordered_map<std::string_view, std::size_t> first_named, uses;
    for (std::size_t i = 0; i < out.size(); ++i) {
        ++uses[out[i].name];
        if (!named[i]) continue;
        const auto [at, first] = first_named.emplace(out[i].name, i);
        if (!first)
            detail::throw_field_error<InvalidInput>(
                r.source(), r.path(out[i].path + ".name"), "a name no other replica has",
                "\"" + printable(out[i].name) + "\", the name of " + out[at->second].path);
    }
    // Default names that clash (or clash with a given one) take their path.
    std::vector<bool> clashes(out.size(), false);
    for (std::size_t i = 0; i < out.size(); ++i) clashes[i] = !named[i] && uses[out[i].name] > 1;
    for (std::size_t i = 0; i < out.size(); ++i)
        if (clashes[i]) out[i].name += " (" + out[i].path + ")";
    return out;
}

}  // namespace detail::policy

/// Maps a parsed policy document. `source` names it in messages. Throws InvalidInput.
[[nodiscard]] inline Policy policy_from_json(const Json& root, std::string source) {
    const JsonReader r(root, source);
    r.only_keys({"schema", "description", "model", "replica", "replicas", "requirements"},
                "a policy",
                {{"comment", "description"},
                 {"_comment", "description"},
                 {"requirement", "requirements"},
                 {"checks", "requirements"},
                 {"fleet", "replicas"},
                 {"fleets", "replicas"}});
    Policy p;
    p.source = std::move(source);
    const std::string schema = r.string("schema");
    if (schema != "kvplan-policy/1") r.fail("schema", "\"kvplan-policy/1\"", "\"" + schema + "\"");
    p.description = r.optional_string("description").value_or("");
    p.model = r.optional_string("model");
    p.replicas = detail::policy::read_replicas(r);
    const Json& reqs = r.array("requirements");
    if (reqs.empty()) r.fail("requirements", "at least one requirement", "an empty array");
    if (reqs.size() > max_policy_requirements)
        r.fail("requirements",
               "at most " + std::to_string(max_policy_requirements) +
                   " requirements (a policy's limit)",
               std::to_string(reqs.size()) + " requirements");
    if (p.replicas.size() * reqs.size() > max_policy_checks)
        r.fail("requirements",
               "at most " + std::to_string(max_policy_checks) +
                   " checks, replicas x requirements (a policy's limit)",
               std::to_string(p.replicas.size()) + " replicas x " + std::to_string(reqs.size()) +
                   " requirements = " + std::to_string(p.replicas.size() * reqs.size()));
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        const std::string path = JsonReader::element("requirements", i);
        Requirement q = detail::policy::read_requirement(JsonReader(reqs[i], p.source, path));
        q.path = path;
        p.requirements.push_back(std::move(q));
    }
    return p;
}

/// Sets the line of each requirement and replica of `p` from `text`, the policy file's text, so
/// that a finding can point at it (0 where the text does not have it).
inline void set_policy_lines(Policy& p, std::string_view text) {
    const auto line_of = [&](std::string_view path) -> std::uint32_t {
        const auto at = json_position(text, path);
        return at ? at->line : 0;
    };
    for (Requirement& q : p.requirements) q.line = line_of(q.path);
    for (PolicyReplica& r : p.replicas) r.line = line_of(r.path);
}

/// The file a policy names at `field` ("model", "replica.gpu"): `written` taken relative to the
/// policy's folder, which it must not leave. A CI gate reads policies from the pull requests it
/// judges, so a path with a NUL or another control character (a NUL cuts the path for one system
/// call and not another), an absolute path, a `..` climbing out of the folder and a symbolic link
/// pointing out of it are all refused: the canonical path of the file (of `file_in_folder` inside
/// it, when `written` names a folder, as a model folder holds its config.json), both as written
/// and as joined, must lie under the canonical path of the policy's folder. Within an
/// InputSession the file is then read, and the file its descriptor opened must lie there too:
/// what is read later is that text. Returns the path joined lexically (policy folder /
/// written), for messages that name what the policy said. Throws InvalidInput naming the policy
/// file, the field and the path; never showing any of the file named.
[[nodiscard]] inline std::filesystem::path policy_file(const Policy& p, std::string_view field,
                                                       std::string_view written,
                                                       std::string_view file_in_folder = {}) {
    namespace fs = std::filesystem;
    const auto refuse = [&](std::string_view why) {
        detail::throw_field_error<InvalidInput>(
            p.source, field, "a bundled id or a path inside the policy's folder",
            "\"" + detail::printable(written, 80) + "\", " + std::string(why));
    };
    if (written.empty()) refuse("an empty path");
    if (detail::has_control_character(written))
        refuse("a path with a NUL or another control character");
    const fs::path rel{std::string(written)};
    if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
        refuse("an absolute path");
    const fs::path folder = fs::path(p.source).parent_path();
    std::error_code ec;
    const fs::path root = fs::weakly_canonical(fs::absolute(folder.empty() ? "." : folder, ec), ec);
    if (ec) refuse("and the policy's folder cannot be resolved");
    const fs::path joined = (folder / rel).lexically_normal();
    const auto inside = [&](const fs::path& file) {
        std::error_code e;
        return detail::lies_under(fs::weakly_canonical(fs::absolute(file, e), e), root) && !e;
    };
    // As written and as joined: `link/..` means one folder to the kernel and another lexically.
    if (!inside(folder / rel) || !inside(joined)) refuse("which leads out of it");
    fs::path file = joined;
    if (!file_in_folder.empty() && fs::is_directory(joined, ec)) {
        file = joined / std::string(file_in_folder);
        if (!inside(folder / rel / std::string(file_in_folder)) || !inside(file))
            refuse("whose " + std::string(file_in_folder) + " leads out of it");
    }
    // Read now, through the descriptor checked, when later reads will be served this text.
    if (detail::InputSession::current() != nullptr && fs::is_regular_file(file, ec))
        (void)detail::read_input_text(file,
                                      file_in_folder.empty() ? json_file_limit : config_json_limit,
                                      &root, p.source, field);
    return joined;
}

/// What a policy names at `field`: `written` itself when it is one of the `bundled` ids
/// (ignoring case; no file beside the policy can shadow one), else the file policy_file() finds
/// for it inside the policy's folder. A name that is neither (no folder, no .json, nothing of
/// that name beside the policy) is taken for a mistyped id and refused with the nearest bundled
/// one. Throws InvalidInput naming the policy file and the field.
[[nodiscard]] inline std::string policy_reference(const Policy& p, std::string_view field,
                                                  std::string_view written,
                                                  const std::vector<std::string>& bundled,
                                                  std::string_view file_in_folder = {}) {
    const std::string want = detail::lower_ascii(written);
    for (const std::string& id : bundled)
        if (detail::lower_ascii(id) == want) return std::string(written);
    const std::filesystem::path file = policy_file(p, field, written, file_in_folder);
    std::error_code ec;
    const bool looks_like_id = written.find('/') == std::string_view::npos &&
                               std::filesystem::path(std::string(written)).extension() != ".json";
    if (looks_like_id && !std::filesystem::exists(file, ec))
        detail::throw_field_error<InvalidInput>(p.source, field,
                                                "a bundled id or a path inside the policy's folder",
                                                "\"" + detail::printable(written) + "\", neither" +
                                                    detail::did_you_mean(written, bundled));
    return file.string();
}

/// Reads a policy file, with the line of each requirement and replica. Throws InvalidInput naming
/// the file (and the field) on anything wrong.
[[nodiscard]] inline Policy load_policy(const std::filesystem::path& file) {
    // Read once: the lines are found in the text parsed.
    const std::string text = detail::read_input_text(file, json_file_limit);
    const std::string source = detail::without_controls(file.string());
    Policy p = policy_from_json(parse_json_text(text, source), source);
    set_policy_lines(p, text);
    return p;
}

}  // namespace kvplan
