#pragma once

// The explanations and tables of `kvplan size`, rendered from the terms the library's size()
// returns (plan/size.hpp): each line shows the figures the answer used, none computed here.

#include <kvplan/dtype.hpp>
#include <kvplan/engine/kind.hpp>
#include <kvplan/engine/served_kv.hpp>
#include <kvplan/model.hpp>
#include <kvplan/plan/size.hpp>
#include <optional>
#include <string>

#include "inputs.hpp"
#include "report.hpp"

namespace kvplan::cli {

/// "bf16: 16 bits per value, no scales", "int8: 8 bits per value + one 32-bit scale per token
/// per head".
[[nodiscard]] std::string describe_format(KvFormat f);

/// Where a KV dtype came from, as an explanation labels it: "(--kv-dtype)" when given or the
/// engine's 16-bit default, else the checkpoint's field that engine `e`'s "auto" follows.
[[nodiscard]] std::string kv_dtype_label(const Model& m, KvSource s, Engine e);

/// Bytes per token of the breakdown's shard, kind of layer by kind of layer. `layout` names the
/// rank (omitted: the whole model).
[[nodiscard]] Explanation explain_per_token(const ResolvedModel& rm, const ServedKv& kv,
                                            const SizeBreakdown& b,
                                            std::optional<LayoutInput> layout = std::nullopt);

/// Bytes per sequence of the breakdown's shard: windows cap sliding layers, state is added once.
[[nodiscard]] Explanation explain_per_sequence(const ResolvedModel& rm, const ServedKv& kv,
                                               const SizeBreakdown& b,
                                               std::optional<LayoutInput> layout = std::nullopt);

/// One row per distinct layer cache shape: kind, layers, heads, dims, window, bytes per token.
[[nodiscard]] Table layer_table(const SizeAnswer& a);

/// One row per pipeline stage: its layers and what each of its ranks holds.
[[nodiscard]] Table stage_table(const SizeAnswer& a);

/// weight_bytes (whole model) and weight_bytes_per_gpu (the fullest rank), from the answer.
void append_weight_figures(Report& r, const ResolvedModel& rm, const SizeAnswer& a);

}  // namespace kvplan::cli
