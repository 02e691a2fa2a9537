#pragma once

// A replica's answer (kvplan::evaluate) as the CLI shows it: the verdict line, the heading, the
// figures term by term with their explanations, and the notes. fit shows all of it; compare, plan,
// check and diff take the cells they need from the same answer.

#include <string>

#include <kvplan/plan/evaluate.hpp>

#include "flags.hpp"
#include "report.hpp"

namespace kvplan::cli {

/// "4 x NVIDIA H100 SXM5 80GB (tp 4 x pp 1)", or "8 x ... (2 replicas of tp 4 x pp 1)".
[[nodiscard]] std::string replica_phrase(const ReplicaAnswer& a, const ResolvedGpu& g);

/// "FITS: ...", "DOES NOT FIT: ..." or "DOES NOT START: ..." with the reason.
[[nodiscard]] std::string verdict_line(const ReplicaAnswer& a, const ResolvedGpu& g);

/// Why the engine does not start, in a sentence ("" when it starts).
[[nodiscard]] std::string refusal_text(const ReplicaAnswer& a);

/// "weights bf16 (the checkpoint's, torch_dtype)", "weights fp8 (--weight-dtype)".
[[nodiscard]] std::string weights_phrase(const ReplicaAnswer& a);

/// The heading under the verdict: model, formats, engine, blocks, context limit.
[[nodiscard]] std::string answer_heading(const ReplicaAnswer& a, const ResolvedModel& m);

/// The figures of fit, in order, with their explanations (the JSON keys of fit).
void append_answer_figures(Report& rep, const ReplicaAnswer& a, const ReplicaRequest& in);

/// Notes a reader needs beside the figures: replicas, the engine's logged figure against what it
/// admits, the cap, the limit, an unmodelled checkpoint format.
void append_answer_notes(Report& rep, const ReplicaAnswer& a);

/// What the import of the model assumed (a model_type it fell back from, layers left out...).
void append_model_notes(Report& rep, const ResolvedModel& m);

/// The name of a refusal, for JSON ("context_limit", ...; "none" when it starts).
[[nodiscard]] const char* refusal_key(Refusal r) noexcept;

/// "any length" or "12,345 tokens".
[[nodiscard]] Cell cell_tokens(std::optional<std::uint64_t> v);

}  // namespace kvplan::cli
