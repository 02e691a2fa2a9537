#pragma once

// Flags to the library's inputs, in one place: every flag a replica takes is parsed here once
// (usage errors, exit 2, before any file is read), then the model and GPU are resolved and the
// library's Deployment and Demand built. Subcommands call read_replica() and evaluate().

#include <cstdint>
#include <optional>
#include <string>

#include <kvplan/dtype.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan/deployment.hpp>
#include <kvplan/weights.hpp>

#include "context.hpp"
#include "inputs.hpp"
#include "options.hpp"
#include "replica.hpp"

namespace kvplan::cli {

/// --weight-dtype and --expert-dtype; nullopt when neither is given (the checkpoint's format).
[[nodiscard]] std::optional<WeightOptions> parse_weights(const CommonOptions& o);

/// --engine and its knobs: --block-size, --gpu-memory-utilization, --kv-memory, --max-num-seqs,
/// --max-num-batched-tokens, --num-gpu-blocks-override, --allow-long-context.
[[nodiscard]] Serving parse_serving(const CommonOptions& o);

/// The flags of a replica, parsed.
struct ReplicaFlags {
    LayoutInput layout{};
    KvFormat kv{};
    std::optional<WeightOptions> weights{};
    Serving serving{};
    std::optional<std::uint64_t> context{};
    std::uint64_t concurrency = 1;
    HfImportOptions import{};
};

/// Every replica flag `o` holds (a flag its subcommand does not register is empty).
[[nodiscard]] ReplicaFlags parse_replica_flags(const CommonOptions& o);

/// A replica: its flags parsed, its model and GPU resolved.
struct ReplicaRequest {
    ResolvedModel model;
    ResolvedGpu gpu;
    ReplicaFlags flags;
    std::uint64_t context = 0;  ///< --context, else the model's context limit

    [[nodiscard]] Deployment deployment() const;
    [[nodiscard]] Demand demand() const { return {context, flags.concurrency}; }
};

/// Parses `o`'s replica flags, then resolves --model and --gpu (exit 3 on a bad file).
[[nodiscard]] ReplicaRequest read_replica(const CommonOptions& o, const Context& ctx);

/// Refuses, as usage errors, the flags that shape a replica's budget when there is no --gpu to
/// budget (compare and diff without --gpu): such a flag would be ignored.
void refuse_budget_flags_without_gpu(const CommonOptions& o);

/// "bf16", "bf16 (experts mxfp4)", "fp8 (128 x 128 blocks)": a weight format as a person reads it.
[[nodiscard]] std::string describe_weights(const WeightOptions& w);

}  // namespace kvplan::cli
