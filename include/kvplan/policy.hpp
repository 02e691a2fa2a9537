#pragma once

// The policy file of `kvplan check` (schema "kvplan-policy/1"): the replica a model is judged on
// and the requirements it must meet, so that a CI job can refuse a config.json change that breaks
// capacity or latency. Reading is strict, with the same error standard as every JSON reader here:
// InvalidInput naming the file, the JSON path, what was expected and what was found.
//
//   {
//     "schema": "kvplan-policy/1",
//     "description": "chat serving on one 4 x H100 node",          (optional)
//     "model": "llama-3-70b",          (optional: a bundled id or a path, relative to this file;
//                                        `kvplan check --model` overrides it)
//     "replica": {
//       "gpu": "h100-sxm",             (required: a bundled id or alias, or a spec path)
//       "tp": 4, "pp": 1,              (default 1 and 1)
//       "kv_dtype": "fp8",             (default "bf16")
//       "weight_dtype": "bf16",        (default: the model's own)
//       "engine": "vllm",              (default "vllm")
//       "gpu_memory_utilization": 0.9, (default: the engine's)
//       "block_size": 16               (default: the engine's)
//     },
//     "requirements": [                (at least one)
//       {"name": "p95 chat load", "kind": "min_concurrency", "sequences": 64, "context_tokens": 12000},
//       {"name": "decode latency", "kind": "max_tpot", "ms": 40, "batch": 64, "context_tokens": 8000},
//       {"name": "cache cost", "kind": "max_kv_bytes_per_token", "bytes": 163840},
//       {"name": "weights", "kind": "max_weights_per_gpu", "GiB": 40},
//       {"name": "long documents", "kind": "min_context", "tokens": 131072, "sequences": 1}
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
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dtype.hpp"
#include "engine.hpp"
#include "error.hpp"
#include "json.hpp"
#include "units.hpp"
#include "weights.hpp"

namespace kvplan {

/// What a requirement bounds.
enum class RequirementKind : std::uint8_t {
    min_concurrency,         ///< at least `sequences` sequences of `context_tokens` fit at once
    max_tpot,                ///< the decode step at `batch` x `context_tokens` is at most `tpot`
    max_kv_bytes_per_token,  ///< KV bytes per token of the whole model at most `size`
    max_weights_per_gpu,     ///< weight bytes on the fullest GPU at most `size`
    min_context,             ///< `sequences` sequences (default 1) can each reach `tokens`
};

[[nodiscard]] constexpr std::string_view name(RequirementKind k) noexcept {
    switch (k) {
        case RequirementKind::min_concurrency: return "min_concurrency";
        case RequirementKind::max_tpot: return "max_tpot";
        case RequirementKind::max_kv_bytes_per_token: return "max_kv_bytes_per_token";
        case RequirementKind::max_weights_per_gpu: return "max_weights_per_gpu";
        case RequirementKind::min_context: return "min_context";
    }
    return "?";
}

[[nodiscard]] constexpr std::optional<RequirementKind> parse_requirement_kind(
    std::string_view s) noexcept {
    for (RequirementKind k :
         {RequirementKind::min_concurrency, RequirementKind::max_tpot,
          RequirementKind::max_kv_bytes_per_token, RequirementKind::max_weights_per_gpu,
          RequirementKind::min_context})
        if (s == name(k)) return k;
    return std::nullopt;
}

/// One requirement. Which fields count depends on `kind`.
struct Requirement {
    std::string name;  ///< as the report and JUnit show it; defaults to the kind
    std::string path;  ///< its JSON path in the policy file, "requirements[2]"
    RequirementKind kind = RequirementKind::min_concurrency;
    std::uint64_t sequences = 0;       ///< min_concurrency, min_context
    std::uint64_t context_tokens = 0;  ///< min_concurrency, max_tpot: the p95 context
    std::uint64_t tokens = 0;          ///< min_context
    std::uint64_t batch = 0;           ///< max_tpot: sequences decoded per step
    Seconds tpot{};                    ///< max_tpot
    Bytes size{};                      ///< max_kv_bytes_per_token, max_weights_per_gpu
};

/// The replica requirements are judged on.
struct PolicyReplica {
    std::string gpu;
    std::uint32_t tp = 1;
    std::uint32_t pp = 1;
    KvDtype kv_dtype = KvDtype::bf16;
    std::optional<WeightFormat> weight_dtype{};
    Engine engine = Engine::vllm;
    std::optional<double> gpu_memory_utilization{};
    std::optional<std::uint32_t> block_size{};
};

struct Policy {
    std::string source;  ///< the file it was read from
    std::string description;
    std::optional<std::string> model;  ///< as written (resolve relative paths against `source`)
    PolicyReplica replica;
    std::vector<Requirement> requirements;
};

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

/// Engines' and people's names for the replica's keys: vLLM's --tensor-parallel-size and
/// --kv-cache-dtype (vllm/engine/arg_utils.py, EngineArgs), SGLang's --tp-size, --page-size and
/// --mem-fraction-static (python/sglang/srt/server_args.py, ServerArgs), TensorRT-LLM's
/// tokens_per_block and free_gpu_memory_fraction (tensorrt_llm/llmapi/llm_args.py, KvCacheConfig).
inline const std::vector<NameHint> replica_hints{
    {"tensor_parallel", "tp"},
    {"tensor_parallel_size", "tp"},
    {"tp_size", "tp"},
    {"pipeline_parallel", "pp"},
    {"pipeline_parallel_size", "pp"},
    {"pp_size", "pp"},
    {"kv_cache_dtype", "kv_dtype"},
    {"dtype", "weight_dtype"},
    {"torch_dtype", "weight_dtype"},
    {"mem_fraction_static", "gpu_memory_utilization"},
    {"free_gpu_memory_fraction", "gpu_memory_utilization"},
    {"page_size", "block_size"},
    {"tokens_per_block", "block_size"},
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
};

/// The keys a requirement of `kind` takes, kind and name first.
[[nodiscard]] inline std::vector<std::string_view> requirement_keys(RequirementKind kind) {
    std::vector<std::string_view> keys{"kind", "name"};
    switch (kind) {
        case RequirementKind::min_concurrency:
            keys.insert(keys.end(), {"sequences", "context_tokens"});
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
    }
    return keys;
}

inline constexpr RequirementKind all_requirement_kinds[] = {
    RequirementKind::min_concurrency, RequirementKind::max_tpot,
    RequirementKind::max_kv_bytes_per_token, RequirementKind::max_weights_per_gpu,
    RequirementKind::min_context};

/// Refuses a key a requirement of `kind` does not take: one that another kind takes is named as
/// such ("ms, a key of max_tpot"), any other as unknown, each with the nearest key `kind` takes.
inline void requirement_only_keys(const JsonReader& r, RequirementKind kind) {
    const std::vector<std::string_view> keys = requirement_keys(kind);
    std::vector<NameHint> hints;
    for (const NameHint& h : requirement_hints)
        if (std::find(keys.begin(), keys.end(), h.meant) != keys.end()) hints.push_back(h);
    const std::string what = "a " + std::string(name(kind)) + " requirement";
    for (const auto& item : r.json().items()) {
        const std::string& key = item.key();
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        std::string others;
        for (RequirementKind k : all_requirement_kinds) {
            const auto ks = requirement_keys(k);
            if (k == kind || std::find(ks.begin(), ks.end(), key) == ks.end()) continue;
            others += (others.empty() ? "" : " and ") + std::string(name(k));
        }
        if (others.empty()) r.unknown_key(key, keys, what, hints);
        std::string expected = "a key of " + what + " (";
        for (std::size_t i = 0; i < keys.size(); ++i)
            expected.append(i ? ", " : "").append(keys[i]);
        r.fail(key, expected + ")",
               "'" + key + "', a key of " + others + did_you_mean(key, keys, hints));
    }
}

[[nodiscard]] inline std::uint32_t u32_field(const JsonReader& r, std::string_view key,
                                             std::uint32_t fallback) {
    const auto v = r.optional_positive_integer(key, 1U << 16);
    return v ? static_cast<std::uint32_t>(*v) : fallback;
}

[[nodiscard]] inline PolicyReplica read_replica(const JsonReader& r) {
    r.only_keys({"gpu", "tp", "pp", "kv_dtype", "weight_dtype", "engine", "gpu_memory_utilization",
                 "block_size"},
                "the replica", replica_hints);
    PolicyReplica p;
    p.gpu = r.string("gpu");
    p.tp = u32_field(r, "tp", 1);
    p.pp = u32_field(r, "pp", 1);
    if (const auto s = r.optional_string("kv_dtype")) {
        const auto d = parse_kv_dtype(*s);
        if (!d)
            r.fail("kv_dtype",
                   "a KV dtype (fp32, fp16, bf16, fp8, fp8_e5m2, int8, int4, nvfp4, mxfp4)",
                   "\"" + printable(*s) + "\"" +
                       did_you_mean(*s, {"fp32", "fp16", "bf16", "fp8", "fp8_e5m2", "int8", "int4",
                                         "nvfp4", "mxfp4"}));
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
        p.gpu_memory_utilization = u;
    }
    if (r.has("block_size")) p.block_size = u32_field(r, "block_size", 1);
    return p;
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
               "min_concurrency, max_tpot, max_kv_bytes_per_token, max_weights_per_gpu or "
               "min_context",
               "\"" + printable(kind) + "\"" + did_you_mean(kind, kinds));
    }
    q.kind = *k;
    requirement_only_keys(r, q.kind);
    q.name = r.optional_string("name").value_or(kind);
    switch (q.kind) {
        case RequirementKind::min_concurrency:
            q.sequences = r.positive_integer("sequences");
            q.context_tokens = r.positive_integer("context_tokens");
            break;
        case RequirementKind::max_tpot:
            q.tpot = r.positive_number("ms") * milliseconds;
            q.batch = r.positive_integer("batch");
            q.context_tokens = r.positive_integer("context_tokens");
            break;
        case RequirementKind::max_kv_bytes_per_token:
        case RequirementKind::max_weights_per_gpu: q.size = size_field(r); break;
        case RequirementKind::min_context:
            q.tokens = r.positive_integer("tokens");
            q.sequences = r.optional_positive_integer("sequences").value_or(1);
            break;
    }
    return q;
}

}  // namespace detail::policy

/// Maps a parsed policy document. `source` names it in messages. Throws InvalidInput.
[[nodiscard]] inline Policy policy_from_json(const Json& root, std::string source) {
    const JsonReader r(root, source);
    r.only_keys({"schema", "description", "model", "replica", "requirements"}, "a policy",
                {{"comment", "description"},
                 {"_comment", "description"},
                 {"requirement", "requirements"},
                 {"checks", "requirements"}});
    Policy p;
    p.source = std::move(source);
    const std::string schema = r.string("schema");
    if (schema != "kvplan-policy/1") r.fail("schema", "\"kvplan-policy/1\"", "\"" + schema + "\"");
    p.description = r.optional_string("description").value_or("");
    p.model = r.optional_string("model");
    p.replica = detail::policy::read_replica(r.object("replica"));
    const Json& reqs = r.array("requirements");
    if (reqs.empty()) r.fail("requirements", "at least one requirement", "an empty array");
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        const std::string path = JsonReader::element("requirements", i);
        Requirement q = detail::policy::read_requirement(JsonReader(reqs[i], p.source, path));
        q.path = path;
        p.requirements.push_back(std::move(q));
    }
    return p;
}

/// The file a policy names at `field` ("model", "replica.gpu"): `written` taken relative to the
/// policy's folder, which it must not leave. A CI gate reads policies from the pull requests it
/// judges, so an absolute path, a `..` climbing out of the folder and a symbolic link pointing out
/// of it are all refused: the canonical path of the file (of `file_in_folder` inside it, when
/// `written` names a folder, as a model folder holds its config.json) must lie under the
/// canonical path of the policy's folder. Returns the path joined lexically (policy folder /
/// written), for messages that name what the policy said. Throws InvalidInput naming the policy
/// file, the field and the path.
[[nodiscard]] inline std::filesystem::path policy_file(const Policy& p, std::string_view field,
                                                       std::string_view written,
                                                       std::string_view file_in_folder = {}) {
    namespace fs = std::filesystem;
    const auto refuse = [&](std::string_view why) {
        detail::throw_field_error<InvalidInput>(
            p.source, field, "a bundled id or a path inside the policy's folder",
            "\"" + detail::printable(written, 80) + "\", " + std::string(why));
    };
    const fs::path rel{std::string(written)};
    if (written.empty()) refuse("an empty path");
    if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
        refuse("an absolute path");
    const fs::path folder = fs::path(p.source).parent_path();
    std::error_code ec;
    const fs::path root = fs::weakly_canonical(fs::absolute(folder.empty() ? "." : folder, ec), ec);
    if (ec) refuse("and the policy's folder cannot be resolved");
    const fs::path joined = (folder / rel).lexically_normal();
    const auto inside = [&](const fs::path& file) {
        std::error_code e;
        const fs::path real = fs::weakly_canonical(fs::absolute(file, e), e);
        if (e) return false;
        const auto [r_end, f_it] =
            std::mismatch(root.begin(), root.end(), real.begin(), real.end());
        return r_end == root.end();
    };
    if (!inside(folder / rel)) refuse("which leads out of it");
    if (!file_in_folder.empty() && fs::is_directory(folder / rel, ec) &&
        !inside(folder / rel / std::string(file_in_folder)))
        refuse("whose " + std::string(file_in_folder) + " leads out of it");
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

/// Reads a policy file. Throws InvalidInput naming the file (and the field) on anything wrong.
[[nodiscard]] inline Policy load_policy(const std::filesystem::path& file) {
    return policy_from_json(read_json_file(file), file.string());
}

}  // namespace kvplan
