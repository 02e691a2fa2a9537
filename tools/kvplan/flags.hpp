#pragma once

// Flags to the library's inputs, in one place: every flag a replica takes is parsed here once
// (usage errors, exit 2, before any file is read), then the model and GPU are resolved and the
// library's Deployment and Demand built. Subcommands call read_replica() and evaluate().

#include <cstdint>
#include <kvplan/calibrate.hpp>
#include <kvplan/dtype.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan/deployment.hpp>
#include <kvplan/weights.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "context.hpp"
#include "inputs.hpp"
#include "options.hpp"
#include "replica.hpp"

namespace kvplan::cli {

/// Weights in `format`, their routed experts in `experts`; nullopt when neither is given (the
/// checkpoint's format).
[[nodiscard]] std::optional<WeightOptions> weights_of(std::optional<WeightFormat> format,
                                                      std::optional<WeightFormat> experts);

/// --weight-dtype (its first item) and --expert-dtype, as weights_of.
[[nodiscard]] std::optional<WeightOptions> parse_weights(const CommonOptions& o);

/// --kv-dtype's first format; nullopt when not given (the engine's "auto" for the checkpoint,
/// which the library resolves: served_kv).
[[nodiscard]] std::optional<KvFormat> kv_flag(const CommonOptions& o);

/// --kv-dtype's formats, as a search or comparison takes them; {nullopt} when not given.
[[nodiscard]] std::vector<std::optional<KvFormat>> kv_flags(const CommonOptions& o);

/// --engine and its knobs: --block-size, --gpu-memory-utilization, --kv-memory, --max-num-seqs,
/// --max-num-batched-tokens, --num-gpu-blocks-override, --allow-long-context.
[[nodiscard]] Serving parse_serving(const CommonOptions& o);

/// --prompt-tokens and --output-tokens: both or neither (a usage error names the one missing).
struct TokenSplitFlags {
    std::optional<std::uint64_t> prompt{};
    std::optional<std::uint64_t> output{};
    [[nodiscard]] bool given() const { return prompt.has_value(); }
    /// prompt + output tokens (TokenSplit::tokens). Precondition: given().
    [[nodiscard]] std::uint64_t sum() const { return TokenSplit{*prompt, *output}.tokens(); }
};
[[nodiscard]] TokenSplitFlags parse_token_split(const CommonOptions& o);

/// --context against the split: at least prompt + output tokens (a usage error otherwise).
void check_context_holds_split(std::uint64_t context, const TokenSplitFlags& split);

/// The flags of a replica, parsed.
struct ReplicaFlags {
    LayoutInput layout{};
    /// --kv-dtype's first format; nullopt: the engine's "auto" for the checkpoint (served_kv).
    std::optional<KvFormat> kv{};
    std::optional<WeightOptions> weights{};
    Serving serving{};
    std::optional<std::uint64_t> context{};
    std::uint64_t concurrency = 1;
    TokenSplitFlags split{};
    std::uint64_t shared_prefix = 0;  ///< --shared-prefix; 0: none
    RunShape run{};                   ///< --length-spread, --num-prompts, --fixed-lengths
    HfImportOptions import{};
};

/// --length-spread, --num-prompts and --fixed-lengths: the run the estimate times, with the split
/// they shape (a usage error names the flag given without --prompt-tokens and --output-tokens,
/// or --fixed-lengths with a nonzero --length-spread).
[[nodiscard]] RunShape parse_run_shape(const CommonOptions& o, const TokenSplitFlags& split);

/// The note that says the KV dtype `kv` of `m` under engine `e` came from the checkpoint, or
/// nullopt when it did not; `engine_named` false: the command names no engine (vLLM's newest
/// release's default, as the library resolves it).
[[nodiscard]] std::optional<std::string> checkpoint_kv_note(const Model& m, Engine e,
                                                            const ServedKv& kv,
                                                            bool engine_named = true);

/// Every replica flag `o` holds (a flag its subcommand does not register is empty).
[[nodiscard]] ReplicaFlags parse_replica_flags(const CommonOptions& o);

/// The shared prefix the load states: --shared-prefix, or --prefix-hit-rate of the prompt
/// (shared_prefix_of_hit_rate); 0: none.
[[nodiscard]] std::uint64_t shared_prefix_flag(const CommonOptions& o,
                                               std::optional<std::uint64_t> prompt);

/// Reads --draft-model (exit 3 on a bad file) into `flags`' speculation when its method is
/// draft_model, as read_replica does.
void read_draft_model(ReplicaFlags& flags, const CommonOptions& o, const Context& ctx);

/// Refuses, as usage errors, the speculative-decoding flags of a command whose library call does
/// not model a drafter (`why` says so): such a flag would be ignored.
void refuse_speculation_flags(const CommonOptions& o, std::string_view why);

/// A replica: its model and GPU resolved, and the library's deployment and demand built from its
/// flags, once.
struct ReplicaRequest {
    ResolvedModel model;
    ResolvedGpu gpu;
    Deployment deployment;  ///< --profile applied to its serving
    /// Its context: --context, else --prompt-tokens + --output-tokens, else the model's limit.
    Demand demand{};
    std::optional<CalibrationProfile> profile{};  ///< --profile
    std::string profile_path{};
};

/// Parses `o`'s replica flags, then resolves --model and --gpu (exit 3 on a bad file) and applies
/// --profile, whose estimate must be of `compute`'s peak (unset: the type the replica's weights
/// run in, matmul_compute).
[[nodiscard]] ReplicaRequest read_replica(const CommonOptions& o, const Context& ctx,
                                          std::optional<ComputeDtype> compute = std::nullopt);

/// Refuses, as usage errors, the flags that shape a replica's budget when there is no --gpu to
/// budget (compare and diff without --gpu): such a flag would be ignored.
void refuse_budget_flags_without_gpu(const CommonOptions& o);

}  // namespace kvplan::cli
