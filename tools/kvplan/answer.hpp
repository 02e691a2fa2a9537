#pragma once

// A replica's answer (kvplan::evaluate) as the CLI shows it: the verdict line, the heading, the
// figures term by term with their explanations, and the notes. fit shows all of it; compare, plan,
// check and diff take the cells they need from the same answer.

#include <kvplan/plan/commands.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/plan/refusal.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flags.hpp"
#include "report.hpp"

namespace kvplan::cli {

/// "4 x NVIDIA H100 SXM5 80GB (tp 4 x pp 1)", or "8 x ... (2 replicas of tp 4 x pp 1)".
[[nodiscard]] std::string replica_phrase(const ReplicaAnswer& a, const ResolvedGpu& g);

/// "FITS: ...", "DOES NOT FIT: ..." or "DOES NOT START: ..." with the reason.
[[nodiscard]] std::string verdict_line(const ReplicaAnswer& a, const ResolvedGpu& g);

/// "tp 4 x pp 1", "dp 8 x tp 1 x pp 1, ep 8", "tp 8 x pp 1, dp attention 8, ep 8": a layout as
/// its engine's rules read it.
[[nodiscard]] std::string layout_text(const ParallelConfig& p);

/// Each engine's command line as a note ("vLLM command line: vllm serve ..."), naming the plan
/// candidate it states when `name_candidate`, or why the engine has none.
void append_command_notes(Report& rep, const std::vector<EngineCommand>& commands,
                          bool name_candidate);

/// The command lines to paste for `d` at `demand`, vLLM's and SGLang's, each evaluated under its
/// own engine, as notes (or why an engine has none); `model` is what the engine loads, and
/// `host_kv` the host memory for KV per replica (vLLM's --kv-offloading-size).
void append_serve_commands(Report& rep, const Deployment& d, const Demand& demand,
                           const std::string& model, std::optional<Bytes> host_kv = {});

/// "vllm 0.30", "sglang 0.5.20" (the release whose defaults apply: --engine-version, else the
/// newest kvplan knows), "trtllm": the engine as a search's heading names it.
[[nodiscard]] std::string engine_text(const Serving& s);

/// The input "engine_version" of a search's JSON: vLLM's or SGLang's release whose defaults apply
/// (none for the other engines, which kvplan models at one release).
void append_engine_version_input(Report& rep, const Serving& s);

/// The inputs "length_spread", "num_prompts" and "fixed_lengths" where the run shape states them.
void append_run_shape_inputs(Report& rep, const RunShape& run);

/// "bf16", "bf16 (experts mxfp4)", "fp8 (128 x 128 blocks)": a weight format as a person reads it.
[[nodiscard]] std::string describe_weights(const WeightOptions& w);

/// "weights bf16 (the checkpoint's, torch_dtype)", "weights fp8 (--weight-dtype)".
[[nodiscard]] std::string weights_phrase(const ReplicaAnswer& a);

/// The heading under the verdict: the model (its display_name), formats, engine, blocks, context
/// limit.
[[nodiscard]] std::string answer_heading(const ReplicaAnswer& a, std::string_view model_name);

/// The figures of fit, in order, with their explanations (the JSON keys of fit).
void append_answer_figures(Report& rep, const ReplicaAnswer& a, const ReplicaRequest& in);

/// The shared prefix's figures (always in JSON and CSV, in text when the demand has one): its
/// full blocks, the blocks and bytes it saves, the concurrency without sharing and what it adds.
void append_shared_prefix_figures(Report& rep, const ReplicaAnswer& a);

/// Notes a reader needs beside the figures: replicas, the engine's logged figure against what it
/// admits, the cap, the limit, an unmodelled checkpoint format.
void append_answer_notes(Report& rep, const ReplicaAnswer& a);

/// What the import of the model assumed (a model_type it fell back from, layers left out...).
void append_model_notes(Report& rep, const ResolvedModel& m);

/// "Hopper", "Ampere", "CDNA3": a GPU family as its maker writes it.
[[nodiscard]] std::string family_display(GpuFamily f);

/// "bandwidth 1.00 and compute 0.46 of peak, 123 us a layer, 7 us an all-reduce".
[[nodiscard]] std::string estimate_params_text(const EstimateParams& p);

/// Where the estimate's parameters came from: the family's fitted defaults and what they were
/// fitted on, a family's borrowed ones, or the profile at `profile_path`; with the parameters.
[[nodiscard]] std::string estimate_basis_text(EstimateBasis b, std::optional<GpuFamily> family,
                                              const EstimateParams& p,
                                              const std::string& profile_path);

/// Why there is no estimate, in a sentence ("" when there is one or none was asked for).
[[nodiscard]] std::string no_estimate_text(const ReplicaAnswer& a);

/// The latency estimate beside its bound (ITL and TPOT, TTFT and its parts, tokens/s per replica
/// and per GPU), with the parameters as JSON-only keys; nothing when the demand states no split.
void append_estimate_figures(Report& rep, const ReplicaAnswer& a, const std::string& profile_path);

/// What the estimate assumes and which parameters it used, or why there is none; `verdict_use`
/// says what the command's answer uses (fit: memory alone). Nothing without a split.
void append_estimate_notes(Report& rep, const ReplicaAnswer& a, const std::string& profile_path,
                           const std::string& verdict_use);

/// What a calibration profile at `path` changed (its reserve) and whether it was fitted on
/// another model than `model_id`; nothing without one.
void append_profile_notes(Report& rep, const std::optional<CalibrationProfile>& profile,
                          const std::string& path, const std::string& model_id);

/// The name of a refusal, for JSON ("context_limit", ...; "none" when it starts).
[[nodiscard]] const char* refusal_key(Refusal r) noexcept;

}  // namespace kvplan::cli
