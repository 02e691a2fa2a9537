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
// "KiB", "MiB", "GiB", "kB", "MB" or "GB". Token counts are integers. The full schema is in
// examples/ci/README.md.

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

/// A size given in exactly one unit named by its key.
[[nodiscard]] inline Bytes size_field(const JsonReader& r) {
    struct Key {
        std::string_view key;
        ByteUnit unit;
    };
    static constexpr Key keys[] = {{"bytes", B}, {"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB},
                                   {"kB", kB},   {"MB", MB},   {"GB", GB}};
    std::optional<Key> found;
    for (const Key& k : keys) {
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
        r.fail(found->key, "a size below 2^64 bytes", std::to_string(v));
    return round_to_bytes(v, found->unit);
}

[[nodiscard]] inline std::uint32_t u32_field(const JsonReader& r, std::string_view key,
                                             std::uint32_t fallback) {
    const auto v = r.optional_positive_integer(key, 1U << 16);
    return v ? static_cast<std::uint32_t>(*v) : fallback;
}

[[nodiscard]] inline PolicyReplica read_replica(const JsonReader& r) {
    PolicyReplica p;
    p.gpu = r.string("gpu");
    p.tp = u32_field(r, "tp", 1);
    p.pp = u32_field(r, "pp", 1);
    if (const auto s = r.optional_string("kv_dtype")) {
        const auto d = parse_kv_dtype(*s);
        if (!d)
            r.fail("kv_dtype",
                   "a KV dtype (fp32, fp16, bf16, fp8, fp8_e5m2, int8, int4, nvfp4, mxfp4)",
                   "\"" + *s + "\"");
        p.kv_dtype = *d;
    }
    if (const auto s = r.optional_string("weight_dtype")) {
        p.weight_dtype = parse_weight_format(*s);
        if (!p.weight_dtype)
            r.fail("weight_dtype", "a weight format (fp32, bf16, fp16, fp8, int8, int4, mxfp4)",
                   "\"" + *s + "\"");
    }
    if (const auto s = r.optional_string("engine")) {
        const auto e = parse_engine(*s);
        if (!e) r.fail("engine", "ideal, vllm, sglang or trtllm", "\"" + *s + "\"");
        p.engine = *e;
    }
    if (r.has("gpu_memory_utilization")) {
        const double u = r.positive_number("gpu_memory_utilization");
        if (u > 1.0)
            r.fail("gpu_memory_utilization", "a fraction in (0, 1]", std::to_string(u));
        p.gpu_memory_utilization = u;
    }
    if (r.has("block_size")) p.block_size = u32_field(r, "block_size", 1);
    return p;
}

[[nodiscard]] inline Requirement read_requirement(const JsonReader& r) {
    Requirement q;
    const std::string kind = r.string("kind");
    const auto k = parse_requirement_kind(kind);
    if (!k)
        r.fail("kind",
               "min_concurrency, max_tpot, max_kv_bytes_per_token, max_weights_per_gpu or "
               "min_context",
               "\"" + kind + "\"");
    q.kind = *k;
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

/// Reads a policy file. Throws InvalidInput naming the file (and the field) on anything wrong.
[[nodiscard]] inline Policy load_policy(const std::filesystem::path& file) {
    return policy_from_json(read_json_file(file), file.string());
}

}  // namespace kvplan
