#pragma once

// Figures and explanations more than one subcommand shows: how bytes per token and per sequence
// come about, layer by layer, and the per-layer and per-stage tables.

#include <cstdint>
#include <kvplan/dtype.hpp>
#include <kvplan/layout.hpp>
#include <kvplan/weights.hpp>
#include <optional>
#include <string>

#include "inputs.hpp"
#include "report.hpp"

namespace kvplan::cli {

/// "bf16: 16 bits per value, no scales", "int8: 8 bits per value + one 32-bit scale per token
/// per head".
[[nodiscard]] std::string describe_format(KvFormat f);

/// Bytes per token on `shard` (the whole model by default), layer group by layer group.
[[nodiscard]] Explanation explain_per_token(const ResolvedModel& rm, KvFormat f, const Shard& shard,
                                            std::optional<LayoutInput> layout = std::nullopt);

/// Bytes per sequence of `tokens` on `shard`: windows cap sliding layers, state is added once.
[[nodiscard]] Explanation explain_per_sequence(const ResolvedModel& rm, KvFormat f,
                                               std::uint64_t tokens, const Shard& shard,
                                               std::optional<LayoutInput> layout = std::nullopt);

/// One row per distinct layer cache shape: kind, layers, heads, dims, window, bytes per token.
[[nodiscard]] Table layer_table(const ResolvedModel& rm, KvFormat f, std::uint32_t tp);

/// One row per pipeline stage: its layers and what each of its ranks holds.
[[nodiscard]] Table stage_table(const ResolvedModel& rm, KvFormat f, const Layout& layout,
                                std::uint64_t tokens);

/// --weight-dtype and --expert-dtype, else `m`'s checkpoint format.
[[nodiscard]] WeightOptions weight_options(const CommonOptions& o, const Model& m);

/// weight_bytes (whole model) and weight_bytes_per_gpu (the fullest rank).
void append_weight_figures(Report& r, const ResolvedModel& rm, const CommonOptions& o,
                           const LayoutInput& li);

}  // namespace kvplan::cli
