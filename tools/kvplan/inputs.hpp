#pragma once

// From flags to the library's inputs: a model, a GPU, a layout, a KV format, a workload. Each
// resolved input remembers where it came from, for --explain and the JSON "inputs" object.

#include <cstdint>
#include <filesystem>
#include <kvplan/calibrate.hpp>
#include <kvplan/dtype.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/layout.hpp>
#include <kvplan/model.hpp>
#include <optional>
#include <string>
#include <vector>

#include "context.hpp"
#include "options.hpp"

namespace kvplan::cli {

struct ResolvedModel {
    std::string id;      ///< what the user asked for: a bundled id or a path
    std::string source;  ///< where the numbers come from: a file, or a built-in preset
    std::optional<Model> model;
    std::vector<std::string> notes{};  ///< what the import assumed that the file does not say

    [[nodiscard]] const Model& get() const { return *model; }
};

/// A bundled id (configs/models/<id>.json, else a built-in preset by its lower-case name), or a
/// path to a config.json or a folder holding one. Unknown ids and unreadable files throw
/// kvplan::InvalidInput (exit 3); an empty argument is a usage error.
[[nodiscard]] ResolvedModel resolve_model(const std::string& arg, const Context& ctx,
                                          std::string_view flag = "--model",
                                          const HfImportOptions& import = {});

/// --model, or the model the inline flags (--layers, --hidden-size ...) describe; exactly one of
/// them (a usage error otherwise).
[[nodiscard]] ResolvedModel resolve_model_flags(const CommonOptions& o, const Context& ctx,
                                                const HfImportOptions& import);

/// Refuses, as a usage error naming the flag, a flag that would shape nothing of `rm`:
/// --expert-dtype on a model without routed experts, --mamba-cache-dtype and
/// --mamba-ssm-cache-dtype on a model without recurrent-state layers.
void refuse_flags_the_model_ignores(const CommonOptions& o, const ResolvedModel& rm);

/// The import options of --model-type, --mamba-cache-dtype and --mamba-ssm-cache-dtype; a usage
/// error names the flag for a type it does not know.
[[nodiscard]] HfImportOptions import_options(const CommonOptions& o);

struct ResolvedGpu {
    std::string id;      ///< the canonical id (h100-sxm)
    std::string source;  ///< the spec file
    GpuSpec spec{};
    std::vector<std::string> aliases{};
    MemoryBasis memory_basis = MemoryBasis::runtime;  ///< which of its figures spec.memory_total is
};

/// A bundled id or alias (case-insensitive), or a path to a spec JSON. Unknown ids and bad files
/// throw kvplan::InvalidInput (exit 3).
[[nodiscard]] ResolvedGpu resolve_gpu(const std::string& arg, const Context& ctx,
                                      std::string_view flag = "--gpu");

/// Every bundled GPU, sorted by id.
[[nodiscard]] std::vector<ResolvedGpu> bundled_gpus(const Context& ctx);

/// --gpu as a comma list of ids or spec paths, each resolved; empty: every bundled GPU.
[[nodiscard]] std::vector<ResolvedGpu> resolve_gpu_list(const std::string& flag,
                                                        const Context& ctx);

/// --profile read (exit 3 on a bad file), or nullopt without the flag.
[[nodiscard]] std::optional<CalibrationProfile> read_profile_flag(const CommonOptions& o);

/// "bundled models/llama-3-70b.json": a bundled file named relative to the config folder.
[[nodiscard]] std::string bundled_source(const Context& ctx, const std::filesystem::path& file);

/// Every model `kvplan list models` shows: bundled config ids, then presets not bundled as files.
struct ModelListing {
    std::string id;
    std::string source;
};
[[nodiscard]] std::vector<ModelListing> bundled_models(const Context& ctx);

/// --tp, --pp and --gpus checked against each other and against the model (InvalidLayout: exit 3).
struct LayoutInput {
    std::uint32_t tp = 1;
    std::uint32_t pp = 1;
    std::uint32_t dp = 1;   ///< attention data-parallel ranks
    std::uint32_t ep = 1;   ///< GPUs the routed experts spread over
    std::uint32_t dcp = 1;  ///< decode context parallelism
    std::uint32_t redundant_experts = 0;
    std::uint32_t gpus = 1;      ///< replica GPUs x replicas
    std::uint32_t replicas = 1;  ///< copies of the replica: gpus / replica GPUs
    /// The layout as the library takes it (its rules set by the deployment's engine).
    [[nodiscard]] ParallelConfig parallel() const {
        return {.tp = tp,
                .pp = pp,
                .dp = dp,
                .ep = ep,
                .dcp = dcp,
                .redundant_experts = redundant_experts};
    }
};
[[nodiscard]] LayoutInput parse_layout(const CommonOptions& o);

/// The layout a model takes, validated.
[[nodiscard]] Layout make_layout(const Model& m, const LayoutInput& l);

/// The model an engine's command line serves: the folder of a config given by path, else the
/// Hugging Face repo configs/models/README.md lists for a bundled id, else the id.
[[nodiscard]] std::string served_model(const ResolvedModel& m, const Context& ctx);

/// "Llama-3-70B" or the id when the config has no name.
[[nodiscard]] std::string display_name(const ResolvedModel& m);

}  // namespace kvplan::cli
