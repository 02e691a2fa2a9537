// kvplan check: the CI gate. A policy file states requirements on one or more replicas; the library
// judges each on each (kvplan::check_policy, plan/check.hpp) for the model and, with --baseline,
// for its previous revision. Exit 0 when none fails, 1 when any does. Text, md, JSON or CSV on
// stdout, JUnit XML with --junit, SARIF 2.1.0 with --sarif, and GitHub Actions annotations when
// GITHUB_ACTIONS=true, each pointing at the policy's requirement and, when the model is a
// config.json changed against a baseline config.json, at the changed fields that moved the figure
// (kvplan::attribute_config_changes, policy/attribution.hpp).

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <kvplan/engine/release.hpp>
#include <kvplan/error.hpp>
#include <kvplan/format.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/json_position.hpp>
#include <kvplan/plan/check.hpp>
#include <kvplan/policy.hpp>
#include <kvplan/policy/attribution.hpp>
#include <kvplan/version.hpp>
#include <memory>
#include <optional>
#include <sstream>

#include "answer.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"
#include "typed_option.hpp"

namespace kvplan::cli::check_cmd {

namespace {

namespace fs = std::filesystem;

struct CheckOptions {
    std::string policy;
    std::string model;
    std::string baseline;
    std::string junit;
    std::string sarif;
    Format format = Format::text;
};

/// A model as the command line or the policy names it, and the config.json behind it.
struct ModelInput {
    ResolvedModel model;
    std::optional<fs::path> file;  ///< its config.json, bundled ones included; none for a preset
    bool given_as_path = false;    ///< a path, not a bundled id: a file of the repository judged
};

ModelInput read_model(const std::string& arg, const Context& ctx, std::string_view flag) {
    ModelInput in{resolve_model(arg, ctx, flag), std::nullopt, false};
    std::error_code ec;
    fs::path p{arg};
    if (fs::is_directory(p, ec)) p /= "config.json";
    if (fs::is_regular_file(p, ec)) {
        in.file = p;
        in.given_as_path = true;
    } else if (const auto bundled = find_bundled_model(ctx.config_dir, arg)) {
        in.file = *bundled;
    }
    return in;
}

/// The text of a JSON file already read: the command's InputSession serves it, unopened again.
std::string file_text(const fs::path& file) {
    return detail::read_input_text(file, config_json_limit);
}

/// A path as GitHub and SARIF want it: relative to the workspace (GITHUB_WORKSPACE, else the
/// working directory) when inside it, with '/' separators; else as given.
std::string repo_path(const std::string& path) {
    std::error_code ec;
    const char* ws = std::getenv("GITHUB_WORKSPACE");
    const fs::path base = ws != nullptr && *ws != '\0' ? fs::path(ws) : fs::current_path(ec);
    const fs::path abs = fs::weakly_canonical(fs::absolute(path, ec), ec);
    const fs::path root = fs::weakly_canonical(base, ec);
    if (!ec) {
        const fs::path rel = abs.lexically_relative(root);
        if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
    }
    return fs::path(path).generic_string();
}

// ---------------------------------------------------------------------------------------------
// What the outcomes say, in words and cells.

struct Judged {
    const Policy* policy = nullptr;
    const CheckResult* result = nullptr;

    [[nodiscard]] const Requirement& req(const CheckOutcome& o) const {
        return policy->requirements[o.requirement];
    }
    [[nodiscard]] const PolicyReplica& replica(const CheckOutcome& o) const {
        return policy->replicas[o.replica];
    }
    [[nodiscard]] bool many_replicas() const { return policy->replicas.size() > 1; }
    /// "cache cost", or "cache cost on H100" when the policy has several replicas.
    [[nodiscard]] std::string title(const CheckOutcome& o) const {
        return many_replicas() ? req(o).name + " on " + replica(o).name : req(o).name;
    }
};

std::string percent_text(double p) { return fmt::format("{:g} %", p); }

const char* figure_words(CheckFigure f) {
    switch (f) {
        case CheckFigure::max_concurrency:
            return "max concurrency";
        case CheckFigure::max_context:
            return "max context";
        case CheckFigure::tpot:
            return "TPOT bound";
        case CheckFigure::kv_bytes_per_token:
            return "KV bytes per token";
        case CheckFigure::weights_per_gpu:
            return "weights per GPU";
    }
    return "figure";
}

/// ", sharing a 2,048-token prefix", or nothing without one.
std::string prefix_text(const Requirement& q) {
    return q.shared_prefix_tokens == 0
               ? std::string()
               : fmt::format(", sharing a {}-token prefix", grouped(q.shared_prefix_tokens));
}

std::string threshold_text(const Requirement& q) {
    switch (q.kind) {
        case RequirementKind::min_concurrency:
            return fmt::format(">= {} sequences of {} tokens{}", grouped(q.sequences),
                               grouped(q.context_tokens), prefix_text(q));
        case RequirementKind::max_tpot:
            return fmt::format("<= {} TPOT at batch {} x {} tokens", fmt::format("{}", q.tpot),
                               grouped(q.batch), grouped(q.context_tokens));
        case RequirementKind::max_kv_bytes_per_token:
            return fmt::format("<= {} per token", grouped(q.size.count()) + " B");
        case RequirementKind::max_weights_per_gpu:
            return fmt::format("<= {} per GPU", fmt::format("{}", q.size));
        case RequirementKind::min_context:
            return fmt::format(">= {} tokens for {} sequence{}", grouped(q.tokens),
                               grouped(q.sequences), q.sequences == 1 ? "" : "s");
        case RequirementKind::max_regression: {
            std::string at;
            switch (q.figure) {
                case CheckFigure::max_concurrency:
                    at = fmt::format(" at {} tokens{}", grouped(q.context_tokens), prefix_text(q));
                    break;
                case CheckFigure::max_context:
                    at = fmt::format(" of {} sequence{}", grouped(q.sequences),
                                     q.sequences == 1 ? "" : "s");
                    break;
                case CheckFigure::tpot:
                    at = fmt::format(" at batch {} x {} tokens", grouped(q.batch),
                                     grouped(q.context_tokens));
                    break;
                case CheckFigure::kv_bytes_per_token:
                case CheckFigure::weights_per_gpu:
                    break;
            }
            return fmt::format("{}{} {} <= {} vs baseline", figure_words(q.figure), at,
                               higher_is_better(q.figure)      ? "falls"
                               : q.figure == CheckFigure::tpot ? "grows"
                                                               : "grow",
                               percent_text(q.percent));
        }
    }
    return "";
}

/// The bound in the requirement's unit (JSON "threshold"): sequences, seconds, bytes, tokens, or
/// the percentage of a regression.
double threshold_value(const Requirement& q) {
    switch (q.kind) {
        case RequirementKind::min_concurrency:
            return static_cast<double>(q.sequences);
        case RequirementKind::max_tpot:
            return q.tpot.in(seconds);
        case RequirementKind::max_kv_bytes_per_token:
        case RequirementKind::max_weights_per_gpu:
            return static_cast<double>(q.size.count());
        case RequirementKind::min_context:
            return static_cast<double>(q.tokens);
        case RequirementKind::max_regression:
            return q.percent;
    }
    return 0;
}

/// A figure as a person and a machine read it.
Cell figure_cell(const std::optional<FigureValue>& v) {
    if (!v) return cell_null("none");
    switch (v->figure) {
        case CheckFigure::max_concurrency:
            return cell_count(v->count, "sequences");
        case CheckFigure::max_context:
            return v->unbounded ? cell_tokens(std::nullopt) : cell_count(v->count, "tokens");
        case CheckFigure::tpot:
            return cell(v->time);
        case CheckFigure::kv_bytes_per_token:
            return cell_exact(Bytes::exactly(v->count));
        case CheckFigure::weights_per_gpu:
            return cell(Bytes::exactly(v->count));
    }
    return cell_null("none");
}

Cell change_cell(const CheckOutcome& o) {
    if (o.change_percent) return {fmt::format("{:+.1f} %", *o.change_percent), *o.change_percent};
    if (!o.measured || !o.baseline) return cell_null("");
    if (o.measured->unbounded || o.baseline->unbounded)
        return cell_null(o.measured->unbounded == o.baseline->unbounded ? "0 %" : "");
    return cell_null(o.measured->value() == 0 ? "0 %" : "new");
}

/// "required >= 32 sequences of 8,000 tokens, measured 37 sequences (baseline 76 sequences,
/// -51.3 %)", and the reason when there is one.
std::string detail_text(const Judged& j, const CheckOutcome& o) {
    std::string s = fmt::format("required {}, measured {}", threshold_text(j.req(o)),
                                figure_cell(o.measured).text);
    if (o.baseline || o.baseline_answer || !o.reason.empty()) {
        if (o.baseline || o.baseline_answer) {
            s += " (baseline " + figure_cell(o.baseline).text;
            const std::string change = change_cell(o).text;
            if (!change.empty()) s += ", " + change;
            s += ")";
        }
    }
    if (!o.reason.empty()) s += ": " + o.reason;
    return s;
}

/// "31 sequences (was 63 sequences, -50.8 %)": a figure beside the baseline's, briefly.
std::string moved_text(const CheckOutcome& o) {
    std::string s = figure_cell(o.measured).text;
    if (o.baseline) {
        s += " (was " + figure_cell(o.baseline).text;
        const std::string change = change_cell(o).text;
        if (!change.empty()) s += ", " + change;
        s += ")";
    }
    return s;
}

// ---------------------------------------------------------------------------------------------
// The config.json fields a change touched, and which outcomes each one moves.

/// The attribution (policy/attribution.hpp) and the file its lines are in, as annotations name it.
struct ConfigTrace : ConfigAttribution {
    std::string file;
};

/// The fields of the model's config.json that differ from the baseline's, each with its line and
/// the outcomes it moves (kvplan::attribute_config_changes). Only for a model given as a
/// config.json path against a baseline with a config.json.
std::optional<ConfigTrace> trace_config(const ModelInput& model, const ModelInput& base,
                                        const Policy& p, std::span<const GpuSpec> gpus,
                                        const CheckResult& result) {
    if (!model.given_as_path || !model.file || !base.file) return std::nullopt;
    const kvplan::Json now =
        read_json_file(*model.file, JsonNumbers::python, max_config_json_bytes);
    const kvplan::Json before =
        read_json_file(*base.file, JsonNumbers::python, max_config_json_bytes);
    const std::string text = file_text(*model.file);
    const std::string source = model.file->string();
    const std::string name(model.model.get().name());
    ConfigTrace t;
    static_cast<ConfigAttribution&>(t) =
        attribute_config_changes({.config = &now,
                                  .config_text = text,
                                  .source = source,
                                  .model_name = name,
                                  .baseline = &before},
                                 p, gpus, base.model.get(), result);
    t.file = repo_path(model.file->string());
    return t;
}

std::string json_text(const std::optional<kvplan::Json>& v) {
    return v ? v->dump() : std::string("(absent)");
}

// ---------------------------------------------------------------------------------------------
// Outputs.

void write_file(const std::string& file, const char* flag, const std::string& content) {
    std::ofstream out(file, std::ios::binary);
    if (out) out << content;
    out.close();  // a full disk shows only when the buffer is written out
    if (!out)
        detail::throw_field_error<InvalidInput>(file, flag, "a writable file",
                                                "a path that cannot be written");
}

void write_junit(const std::string& file, const Judged& j, const std::string& model) {
    const auto& outs = j.result->outcomes;
    std::ostringstream out;
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out << "<testsuites name=\"kvplan check\" tests=\"" << outs.size() << "\" failures=\""
        << j.result->failed << "\">\n";
    out << "  <testsuite name=\"" << xml_field("kvplan check " + model) << "\" tests=\""
        << outs.size() << "\" failures=\"" << j.result->failed << "\" errors=\"0\" skipped=\""
        << j.result->skipped << "\">\n";
    for (const CheckOutcome& o : outs) {
        const Requirement& q = j.req(o);
        out << "    <testcase classname=\"kvplan.check." << xml_field(name(q.kind)) << "\" name=\""
            << xml_field(j.title(o)) << "\" file=\"" << xml_field(j.policy->source) << "\"";
        if (q.line != 0) out << " line=\"" << q.line << "\"";
        out << ">\n";
        const std::string detail = detail_text(j, o);
        switch (o.status) {
            case CheckStatus::failed:
                out << "      <failure message=\"" << xml_field(detail) << "\" type=\""
                    << xml_field(name(q.kind)) << "\">" << xml_field(detail) << " ["
                    << xml_field(j.policy->source + ": " + q.path) << "]</failure>\n";
                break;
            case CheckStatus::skipped:
                out << "      <skipped message=\"" << xml_field(o.reason) << "\"/>\n";
                break;
            case CheckStatus::passed:
                out << "      <system-out>" << xml_field(detail) << "</system-out>\n";
                break;
        }
        out << "    </testcase>\n";
    }
    out << "  </testsuite>\n</testsuites>\n";
    write_file(file, "--junit", utf8_escaped(out.str()));
}

/// A relative path as a URI reference: each byte outside RFC 3986's unreserved characters and
/// '/' percent-encoded.
std::string uri_of(const std::string& path) {
    std::string out;
    const bool absolute = !path.empty() && path.front() == '/';
    if (absolute) out = "file://";
    for (unsigned char c : path) {
        if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
            out.push_back(static_cast<char>(c));
        else
            out += fmt::format("%{:02X}", c);
    }
    return out;
}

Json sarif_location(const std::string& file, std::uint32_t line, const std::string& message) {
    Json loc = {{"physicalLocation",
                 {{"artifactLocation", {{"uri", uri_of(file)}}},
                  {"region", {{"startLine", line == 0 ? 1 : line}}}}}};
    if (!message.empty()) loc["message"] = {{"text", message}};
    return loc;
}

const char* rule_summary(RequirementKind k) {
    switch (k) {
        case RequirementKind::min_concurrency:
            return "The engine holds at least the required sequences of the context at once.";
        case RequirementKind::max_tpot:
            return "The decode-step (TPOT) lower bound at the batch and context is within the "
                   "bound, "
                   "and the engine starts at that context.";
        case RequirementKind::max_kv_bytes_per_token:
            return "The whole model's KV cache bytes per token are within the bound.";
        case RequirementKind::max_weights_per_gpu:
            return "The weight bytes on the fullest GPU are within the bound.";
        case RequirementKind::min_context:
            return "Each of the sequences can reach the context, within the model's context limit.";
        case RequirementKind::max_regression:
            return "A figure worsens by at most the allowed percentage against the baseline "
                   "config.";
    }
    return "";
}

/// SARIF 2.1.0 for GitHub code scanning: one rule per requirement kind; a failed requirement is
/// an error and a met one whose figure worsened against the baseline a note, each at the changed
/// config.json field that moved it (a line of the pull request's diff) when known, with the
/// policy's requirement beside it; otherwise at the requirement. A met requirement whose figure
/// did not worsen is no finding, so that fixing one closes its alert.
std::string sarif(const Judged& j, const std::optional<ConfigTrace>& trace) {
    const std::string policy_file = repo_path(j.policy->source);
    Json rules = Json::array();
    for (const auto& k : requirement_kind_names) {
        rules.push_back({{"id", std::string("kvplan/") + k.name},
                         {"name", k.name},
                         {"shortDescription", {{"text", std::string("kvplan check: ") + k.name}}},
                         {"fullDescription", {{"text", rule_summary(k.value)}}},
                         {"defaultConfiguration", {{"level", "error"}}},
                         {"help",
                          {{"text",
                            "The requirement is stated in the policy file of kvplan "
                            "check (schema kvplan-policy/1); see examples/ci/README.md."}}}});
    }
    Json results = Json::array();
    for (std::size_t i = 0; i < j.result->outcomes.size(); ++i) {
        const CheckOutcome& o = j.result->outcomes[i];
        const Requirement& q = j.req(o);
        const bool failed = o.status == CheckStatus::failed;
        if (!failed && !o.worsened()) continue;
        Json locations = Json::array(), related = Json::array();
        const std::string at_policy = "the requirement " + q.path + " of the policy";
        if (trace)
            for (const ConfigChange& c : trace->changes) {
                if (i >= c.moves.size() || !c.moves[i]) continue;
                const std::string msg = fmt::format("{} changed from {} to {}", c.path,
                                                    json_text(c.before), json_text(c.after));
                (locations.empty() ? locations : related)
                    .push_back(sarif_location(trace->file, c.line, msg));
            }
        const Json policy_loc = sarif_location(policy_file, q.line, at_policy);
        if (locations.empty())
            locations.push_back(policy_loc);
        else
            related.insert(related.begin(), policy_loc);
        for (std::size_t k = 0; k < related.size(); ++k) related[k]["id"] = k + 1;
        const auto rule = static_cast<std::size_t>(q.kind);
        Json r = {{"ruleId", std::string("kvplan/") + name(q.kind)},
                  {"ruleIndex", rule},
                  {"level", failed ? "error" : "note"},
                  {"message", {{"text", j.title(o) + ": " + detail_text(j, o)}}},
                  {"locations", std::move(locations)}};
        if (!related.empty()) r["relatedLocations"] = std::move(related);
        // Several replicas judge one requirement at one line: the fingerprint tells them apart.
        r["partialFingerprints"] = {{"kvplanRequirement/v1", q.path + "@" + j.replica(o).path}};
        r["properties"] = {{"replica", j.replica(o).name},
                           {"status", name(o.status)},
                           {"measured", figure_cell(o.measured).json},
                           {"baseline", figure_cell(o.baseline).json},
                           {"unit", unit_name(o.figure)}};
        results.push_back(std::move(r));
    }
    Json doc = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
                {"version", "2.1.0"},
                {"runs",
                 {{{"tool",
                    {{"driver",
                      {{"name", "kvplan"},
                       {"semanticVersion", kvplan::version_string},
                       {"rules", std::move(rules)}}}}},
                   {"invocations",
                    {{{"executionSuccessful", true}, {"exitCode", j.result->passed() ? 0 : 1}}}},
                   {"results", std::move(results)}}}}};
    return json_document(doc) + "\n";
}

/// GitHub Actions annotations: one per outcome at the policy's requirement (an error when it
/// failed), and one per changed config.json field that moved a figure, at its line, listing what
/// it moved (an error when any of it failed).
void annotate(std::ostream& out, const Judged& j, const std::optional<ConfigTrace>& trace) {
    const std::string policy_file = repo_path(j.policy->source);
    for (const CheckOutcome& o : j.result->outcomes) {
        const Requirement& q = j.req(o);
        out << (o.status == CheckStatus::failed ? "::error" : "::notice")
            << " file=" << gh_property(policy_file);
        if (q.line != 0) out << ",line=" << q.line;
        out << ",title=" << gh_property("kvplan check: " + j.title(o)) << "::"
            << gh_data(j.title(o) + ": " + (o.status == CheckStatus::skipped ? "skipped, " : "") +
                       detail_text(j, o))
            << "\n";
    }
    if (!trace) return;
    for (const ConfigChange& c : trace->changes) {
        const std::size_t moved = c.moved();
        std::vector<std::string> failing, met;
        for (std::size_t i = 0; i < c.moves.size(); ++i) {
            if (!c.moves[i]) continue;
            const CheckOutcome& o = j.result->outcomes[i];
            (o.status == CheckStatus::failed ? failing : met)
                .push_back(j.title(o) + ": " + moved_text(o));
        }
        if (moved == 0) continue;
        // The failures it brings, else what it moves within bounds.
        std::string text =
            fmt::format("{} changed from {} to {}: it moves {} check{}, ", c.path,
                        json_text(c.before), json_text(c.after), moved, moved == 1 ? "" : "s");
        text += failing.empty() ? "all still met" : fmt::format("{} failing", failing.size());
        for (const std::string& each : failing.empty() ? met : failing) text += "; " + each;
        out << (failing.empty() ? "::notice" : "::error") << " file=" << gh_property(trace->file)
            << ",line=" << c.line << ",title=" << gh_property("kvplan check: " + c.path)
            << "::" << gh_data(text) << "\n";
    }
}

// ---------------------------------------------------------------------------------------------

/// The KV format replica `ri` was evaluated with: its answer's (the layout its engine stores on
/// the GPU, engine_kv), else, where no requirement reached an answer, the policy's kv_dtype or the
/// engine's auto for the checkpoint (policy_deployment resolved once, here).
KvFormat evaluated_kv(const Judged& j, std::size_t ri, const std::vector<ResolvedGpu>& gpus,
                      const Model& model) {
    for (const CheckOutcome& o : j.result->outcomes)
        if (o.replica == ri && o.answer) return o.answer->replica.kv;
    return policy_deployment(j.policy->replicas[ri], model, gpus[ri].spec).kv_format();
}

/// "4 x h100-sxm (tp 4 x pp 1), KV bf16, weights bf16, engine vllm 0.30": the replica `ri` with
/// the KV format `kv` it was evaluated with (evaluated_kv), its weights as evaluated when an
/// answer was given, else as the policy names them.
std::string replica_text(const Judged& j, std::size_t ri, const std::vector<ResolvedGpu>& gpus,
                         KvFormat kv) {
    const PolicyReplica& r = j.policy->replicas[ri];
    std::string weights = r.weight_dtype ? name(*r.weight_dtype) : "the checkpoint's";
    for (const CheckOutcome& o : j.result->outcomes)
        if (o.replica == ri && o.answer) {
            weights = describe_weights(o.answer->replica.weights);
            break;
        }
    // GPUs as the engine's rules count them: dp engines of tp x pp each under vLLM's.
    const ParallelConfig layout{.tp = r.tp,
                                .pp = r.pp,
                                .dp = r.dp,
                                .ep = r.ep,
                                .dcp = r.dcp,
                                .redundant_experts = r.redundant_experts,
                                .rules = parallel_rules(r.engine)};
    std::string parallel = fmt::format("tp {} x pp {}", r.tp, r.pp);
    if (r.dp != 1) parallel += fmt::format(" x dp {}", r.dp);
    if (r.ep != 1) parallel += fmt::format(", ep {}", r.ep);
    if (r.dcp != 1) parallel += fmt::format(", dcp {}", r.dcp);
    if (r.redundant_experts != 0)
        parallel += fmt::format(", +{} redundant experts", r.redundant_experts);
    // vLLM's or SGLang's release, as fit names it: the policy's engine_version, else the newest
    // kvplan knows.
    const std::string release =
        r.engine == Engine::vllm     ? " " + vllm_release_or_newest(r.engine_version).line().text()
        : r.engine == Engine::sglang ? " " + sglang_release_or_newest(r.engine_version).text()
                                     : "";
    return fmt::format("{} x {} ({}), KV {}, weights {}, engine {}{}", replica_gpus(layout),
                       gpus[ri].id, parallel, name(kv.dtype), weights, name(r.engine), release);
}

void run_check(const CheckOptions& co, Context& ctx) {
    if (co.policy.empty()) usage_error("--policy", "a policy file", "");
    const Format f = co.format;
    const Policy p = load_policy(co.policy);
    std::string model_arg = co.model;
    if (model_arg.empty()) {
        if (!p.model)
            usage_error("--model", "a model (the policy names none: add \"model\" or --model)", "");
        // A bundled id, else a path inside the policy's folder (policy_file).
        std::vector<std::string> ids;
        for (const ModelListing& m : bundled_models(ctx)) ids.push_back(m.id);
        model_arg = policy_reference(p, "model", *p.model, ids, "config.json");
    }
    // A bundled id names its own file (configs/gpus/<id>.json): only an alias, a path or a typo
    // needs every spec's names, read once.
    std::optional<std::vector<std::string>> gpu_names;
    const auto bundled_gpu_names = [&](const std::string& written) -> std::vector<std::string> {
        std::string lower = written;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::error_code ec;
        if (lower.find('/') == std::string::npos && lower.find('\\') == std::string::npos &&
            fs::is_regular_file(ctx.config_dir / "gpus" / (lower + ".json"), ec))
            return {written};
        if (!gpu_names) gpu_names = GpuRegistry::load(ctx.config_dir).names();
        return *gpu_names;
    };
    std::vector<ResolvedGpu> gpus;
    std::vector<GpuSpec> specs;
    for (const PolicyReplica& r : p.replicas) {
        const std::string field = r.path + ".gpu";
        gpus.push_back(resolve_gpu(policy_reference(p, field, r.gpu, bundled_gpu_names(r.gpu)), ctx,
                                   p.source + ": " + field));
        specs.push_back(gpus.back().spec);
    }
    const ModelInput model = read_model(model_arg, ctx, co.model.empty() ? p.source : "--model");
    std::optional<ModelInput> base;
    if (!co.baseline.empty()) base = read_model(co.baseline, ctx, "--baseline");

    const CheckResult result =
        check_policy(p, model.model.get(), specs, base ? &base->model.get() : nullptr);
    const Judged j{&p, &result};
    const std::optional<ConfigTrace> trace =
        base ? trace_config(model, *base, p, specs, result) : std::nullopt;

    const std::size_t n = result.outcomes.size();
    Report rep;
    rep.command = "check";
    // "requirements" on one replica; "checks", a requirement on a replica, on several.
    const bool one = p.replicas.size() == 1;
    const std::string unit = std::string(one ? "requirement" : "check") + (n == 1 ? "" : "s");
    const std::string over = one ? std::string()
                                 : fmt::format(" ({} requirements on {} replicas)",
                                               p.requirements.size(), p.replicas.size());
    if (!result.passed())
        rep.verdict = fmt::format("FAIL: {} of {} {} not met{}", result.failed, n, unit, over);
    else if (result.skipped == 0)
        rep.verdict = fmt::format("PASS: all {} {} met{}", n, unit, over);
    else
        rep.verdict = fmt::format("PASS: {} of {} {} met, {} skipped{}", result.met(), n, unit,
                                  result.skipped, over);
    // One replica: its KV format, resolved once, serves the heading and the inputs.
    const std::optional<KvFormat> kv0 =
        p.replicas.size() == 1 ? std::optional(evaluated_kv(j, 0, gpus, model.model.get()))
                               : std::nullopt;
    if (kv0) {
        rep.heading =
            fmt::format("{} on {}{}", display_name(model.model), replica_text(j, 0, gpus, *kv0),
                        base ? "; baseline " + base->model.id : std::string());
    } else {
        std::string list;
        for (std::size_t ri = 0; ri < p.replicas.size(); ++ri)
            list += fmt::format(
                "{}{}: {}", ri == 0 ? "" : "; ", p.replicas[ri].name,
                replica_text(j, ri, gpus, evaluated_kv(j, ri, gpus, model.model.get())));
        rep.heading =
            fmt::format("{} on {} replicas ({}){}", display_name(model.model), p.replicas.size(),
                        list, base ? "; baseline " + base->model.id : std::string());
    }
    rep.inputs = {{"policy", cell_text(p.source)}, {"model", cell_text(model.model.id)}};
    if (kv0) {
        rep.inputs.push_back({"gpu", cell_text(gpus[0].id)});
        rep.inputs.push_back({"tp", cell_count(p.replicas[0].tp, "")});
        rep.inputs.push_back({"pp", cell_count(p.replicas[0].pp, "")});
        rep.inputs.push_back({"dp", cell_count(p.replicas[0].dp, "")});
        rep.inputs.push_back({"ep", cell_count(p.replicas[0].ep, "")});
        rep.inputs.push_back({"dcp", cell_count(p.replicas[0].dcp, "")});
        rep.inputs.push_back({"kv_dtype", cell_text(std::string(name(kv0->dtype)))});
        rep.inputs.push_back({"engine", cell_text(std::string(name(p.replicas[0].engine)))});
        if (p.replicas[0].engine == Engine::vllm)
            rep.inputs.push_back(
                {"engine_version",
                 cell_text(vllm_release_or_newest(p.replicas[0].engine_version).line().text())});
        if (p.replicas[0].engine == Engine::sglang)
            rep.inputs.push_back(
                {"engine_version",
                 cell_text(sglang_release_or_newest(p.replicas[0].engine_version).text())});
    } else {
        rep.inputs.push_back({"replicas", cell_count(p.replicas.size(), "")});
    }
    if (base) rep.inputs.push_back({"baseline", cell_text(base->model.id)});
    rep.figures.push_back({"passed", "passed", cell_bool(result.passed()), {}, {}, false});
    rep.figures.push_back({"failed_count", "failed", cell_count(result.failed, ""), {}, {}, false});
    rep.figures.push_back(
        {"skipped_count", "skipped", cell_count(result.skipped, ""), {}, {}, false});

    // The full table (JSON and CSV) and the one a person reads (text and md).
    Table full;
    full.key = "requirements";
    full.columns = {{"result", "result"},
                    {"status", "status"},
                    {"name", "requirement"},
                    {"kind", "kind"},
                    {"figure", "figure"},
                    {"replica", "replica"},
                    {"threshold_text", "required"},
                    {"measured", "measured"},
                    {"baseline", "baseline"},
                    {"change_percent", "change"},
                    {"unit", "unit"},
                    {"threshold", "threshold"},
                    {"threshold_unit", "threshold unit"},
                    {"reason", "reason"},
                    {"path", "policy path"},
                    {"line", "policy line"},
                    {"replica_path", "replica path"}};
    full.in_text = false;
    Table shown;
    shown.key = "requirements_shown";
    shown.columns = {{"result", "result"}, {"name", "requirement"}};
    if (p.replicas.size() > 1) shown.columns.push_back({"replica", "replica"});
    shown.columns.insert(shown.columns.end(),
                         {{"threshold_text", "required"}, {"measured", "measured"}});
    if (base) {
        shown.columns.push_back({"baseline", "baseline"});
        shown.columns.push_back({"change_percent", "change"});
    }
    for (const CheckOutcome& o : result.outcomes) {
        const Requirement& q = j.req(o);
        const PolicyReplica& r = j.replica(o);
        const Cell result_cell = o.status == CheckStatus::skipped
                                     ? Cell{"skipped", nullptr}
                                     : cell_bool(o.status == CheckStatus::passed, "pass", "FAIL");
        const Cell measured = figure_cell(o.measured);
        const Cell baseline = base ? figure_cell(o.baseline) : cell_null("");
        full.rows.push_back(
            {result_cell,
             cell_text(name(o.status)),
             cell_text(q.name),
             cell_text(name(q.kind)),
             cell_text(name(o.figure)),
             cell_text(r.name),
             cell_text(threshold_text(q)),
             measured,
             baseline,
             change_cell(o),
             cell_text(unit_name(o.figure)),
             {"", threshold_value(q)},
             cell_text(q.kind == RequirementKind::max_regression ? "percent" : unit_name(o.figure)),
             o.reason.empty() ? cell_null("") : cell_text(o.reason),
             cell_text(q.path),
             q.line == 0 ? cell_null("") : cell_count(q.line, ""),
             cell_text(r.path)});
        std::vector<Cell> row{result_cell, cell_text(q.name)};
        if (p.replicas.size() > 1) row.push_back(cell_text(r.name));
        row.insert(row.end(), {cell_text(threshold_text(q)), measured});
        if (base) {
            row.push_back(baseline);
            row.push_back(change_cell(o));
        }
        shown.rows.push_back(std::move(row));
        // Without a baseline every regression is skipped: one note says so below.
        if (!o.reason.empty() && (base || o.status != CheckStatus::skipped))
            rep.notes.push_back(j.title(o) + ": " + o.reason);
    }
    if (!base && result.skipped != 0)
        rep.notes.push_back(fmt::format(
            "{} max_regression check{} skipped: they compare with the previous config, given by "
            "--baseline",
            result.skipped, result.skipped == 1 ? "" : "s"));
    if (trace && trace->too_many)
        rep.notes.push_back(fmt::format(
            "the baseline's config.json differs in more than {} fields: no field is traced to "
            "the figures it moves",
            max_changes_traced));
    if (trace && trace->too_many_checks)
        rep.notes.push_back(fmt::format(
            "the baseline's config.json differs in {} fields, too many to judge each again on "
            "the {} checks (at most {} checks judged again): no field is traced to the figures it "
            "moves",
            trace->fields, n, grouped(max_checks_retraced)));
    if (trace)
        for (const ConfigChange& c : trace->changes)
            if (c.moves_any())
                rep.notes.push_back(fmt::format("{}:{}: {} changed from {} to {}", trace->file,
                                                c.line, c.path, json_text(c.before),
                                                json_text(c.after)));
    if (f == Format::json || f == Format::csv) {
        rep.tables.push_back(std::move(full));
        rep.csv_table = 0;
    } else {
        rep.tables.push_back(std::move(shown));
    }

    const char* gha = std::getenv("GITHUB_ACTIONS");
    if (gha != nullptr && std::string_view(gha) == "true" && f != Format::json && f != Format::csv)
        annotate(*ctx.out, j, trace);
    render(rep, f, false, *ctx.out);
    if (!co.junit.empty()) write_junit(co.junit, j, model.model.id);
    if (!co.sarif.empty()) write_file(co.sarif, "--sarif", sarif(j, trace));
    ctx.exit_code = result.passed() ? exit_ok : exit_check_failed;
}

}  // namespace

}  // namespace kvplan::cli::check_cmd

namespace kvplan::cli {

void register_check(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<check_cmd::CheckOptions>();
    CLI::App* sub = app.add_subcommand(
        "check", "CI gate: judge a model against a policy file; exit 0 pass, 1 fail");
    sub->add_option("-p,--policy", o->policy, "Policy file (JSON, schema kvplan-policy/1)")
        ->required();
    sub->add_option("-m,--model", o->model,
                    "The model to check (overrides the policy's \"model\"): a bundled id or a "
                    "path to a config.json or a folder");
    sub->add_option("--baseline", o->baseline,
                    "The previous revision of the config: its figures, the change, and the "
                    "policy's max_regression requirements");
    sub->add_option("--junit", o->junit, "Also write the results as JUnit XML to this file");
    sub->add_option("--sarif", o->sarif,
                    "Also write the findings as SARIF 2.1.0 to this file (GitHub code scanning)");
    typed(
        *sub, "-f,--format", o->format,
        [](std::string_view text, std::string_view) { return parse_format(text); },
        "Output: text, md, json or csv")
        ->default_str("text");
    sub->callback([o, &ctx] { check_cmd::run_check(*o, ctx); });
}

}  // namespace kvplan::cli
