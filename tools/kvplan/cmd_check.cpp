// kvplan check: the CI gate. A policy file states requirements on a replica; each is measured on
// the model (and, with --baseline, on the previous revision of it). Exit 0 when all pass, 1 when
// any fails. Text, md or JSON on stdout, JUnit XML with --junit, and GitHub Actions annotations
// when GITHUB_ACTIONS=true.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include <kvplan/error.hpp>
#include <kvplan/format.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/policy.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/roofline.hpp>
#include <kvplan/weights.hpp>

#include "answer.hpp"
#include "flags.hpp"
#include "commands.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

namespace fs = std::filesystem;

struct CheckOptions {
    std::string policy;
    std::string model;
    std::string baseline;
    std::string junit;
    std::string format = "text";
};

/// What one requirement measured: a number in the requirement's unit, its display, and pass/fail.
struct Measure {
    double value = 0;           ///< in the JSON unit: sequences, seconds, bytes, tokens
    Cell cell;                  ///< as a person reads it
    bool unbounded = false;     ///< min_context: any length fits
};

struct Outcome {
    const Requirement* req = nullptr;
    Measure measured;
    std::optional<Measure> baseline;
    bool passed = false;
    std::string threshold_text;
    double threshold = 0;
};

std::string xml_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out.push_back(c);
        }
    }
    return out;
}

// GitHub Actions workflow commands escape %, CR and LF in messages (and , : in properties).
std::string gh_escape(std::string_view s, bool property) {
    std::string out;
    for (char c : s) {
        if (c == '%') out += "%25";
        else if (c == '\r') out += "%0D";
        else if (c == '\n') out += "%0A";
        else if (property && c == ':') out += "%3A";
        else if (property && c == ',') out += "%2C";
        else out.push_back(c);
    }
    return out;
}

CommonOptions replica_flags(const Policy& p) {
    CommonOptions o;
    o.gpu = p.replica.gpu;
    o.tp = std::to_string(p.replica.tp);
    o.pp = std::to_string(p.replica.pp);
    o.kv_dtype = std::string(name(p.replica.kv_dtype));
    if (p.replica.weight_dtype) o.weight_dtype = std::string(name(*p.replica.weight_dtype));
    o.engine = std::string(name(p.replica.engine));
    if (p.replica.gpu_memory_utilization)
        o.gpu_memory_utilization = fmt::format("{}", *p.replica.gpu_memory_utilization);
    if (p.replica.block_size) o.block_size = std::to_string(*p.replica.block_size);
    return o;
}

Measure measure(const Requirement& q, const ReplicaRequest& in) {
    const Deployment dep = in.deployment();
    const Replica r = evaluate(dep, {.context = 1}, {.contexts = false, .decode = false}).replica;
    switch (q.kind) {
        case RequirementKind::min_concurrency: {
            const ReplicaAnswer a = evaluate(
                dep, {.context = q.context_tokens, .concurrency = q.sequences}, {.contexts = false});
            return {static_cast<double>(a.max_concurrency),
                    cell_count(a.max_concurrency, "sequences")};
        }
        case RequirementKind::max_tpot: {
            // Past the model's limit the engine does not start: no TPOT to meet.
            const ReplicaAnswer a = evaluate(
                dep, {.context = q.context_tokens, .concurrency = q.batch}, {.contexts = false});
            if (a.refusal == Refusal::context_limit)
                return {std::numeric_limits<double>::infinity(),
                        cell_null("past the model's context limit")};
            const DecodeBound d = decode_bound(r, q.batch, q.context_tokens);
            return {d.tpot.in(seconds), cell(d.tpot)};
        }
        case RequirementKind::max_kv_bytes_per_token: {
            const Bytes b = kv_bytes_per_token(r.model, r.kv);
            return {static_cast<double>(b.count()), cell_exact(b)};
        }
        case RequirementKind::max_weights_per_gpu: {
            const Bytes b = max_weight_bytes_per_rank(r.model, r.layout(), r.weights);
            return {static_cast<double>(b.count()), cell(b)};
        }
        case RequirementKind::min_context: {
            const ReplicaAnswer a =
                evaluate(dep, {.context = q.tokens, .concurrency = q.sequences});
            if (!a.max_context) return {0, cell_tokens(std::nullopt), true};
            return {static_cast<double>(*a.max_context), cell_count(*a.max_context, "tokens")};
        }
    }
    return {};
}

std::string threshold_text(const Requirement& q) {
    switch (q.kind) {
        case RequirementKind::min_concurrency:
            return fmt::format(">= {} sequences of {} tokens", grouped(q.sequences),
                               grouped(q.context_tokens));
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
    }
    return "";
}

double threshold_value(const Requirement& q) {
    switch (q.kind) {
        case RequirementKind::min_concurrency: return static_cast<double>(q.sequences);
        case RequirementKind::max_tpot: return q.tpot.in(seconds);
        case RequirementKind::max_kv_bytes_per_token:
        case RequirementKind::max_weights_per_gpu: return static_cast<double>(q.size.count());
        case RequirementKind::min_context: return static_cast<double>(q.tokens);
    }
    return 0;
}

bool passes(const Requirement& q, const Measure& m) {
    const double t = threshold_value(q);
    switch (q.kind) {
        case RequirementKind::min_concurrency: return m.value >= t;
        case RequirementKind::max_tpot:
        case RequirementKind::max_kv_bytes_per_token:
        case RequirementKind::max_weights_per_gpu: return m.value <= t;
        case RequirementKind::min_context: return m.unbounded || m.value >= t;
    }
    return false;
}

Cell change_cell(const Outcome& o) {
    if (!o.baseline || o.baseline->unbounded || o.measured.unbounded) return cell_null("");
    const double before = o.baseline->value, after = o.measured.value;
    if (before == 0) return cell_null(after == 0 ? "0 %" : "new");
    const double pct = (after - before) / before * 100.0;
    return {fmt::format("{:+.1f} %", pct), pct};
}

std::string unit_of(RequirementKind k) {
    switch (k) {
        case RequirementKind::min_concurrency: return "sequences";
        case RequirementKind::max_tpot: return "seconds";
        case RequirementKind::max_kv_bytes_per_token:
        case RequirementKind::max_weights_per_gpu: return "bytes";
        case RequirementKind::min_context: return "tokens";
    }
    return "";
}

Json measure_json(const Measure& m) {
    if (m.unbounded) return nullptr;
    return m.cell.json;
}

void write_junit(const std::string& file, const Policy& p, const std::string& model,
                 const std::vector<Outcome>& outs) {
    std::ofstream out(file);
    if (!out)
        detail::throw_field_error<InvalidInput>(file, "--junit", "a writable file",
                                                "a path that cannot be opened for writing");
    std::size_t failures = 0;
    for (const Outcome& o : outs) failures += o.passed ? 0 : 1;
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out << "<testsuites name=\"kvplan check\" tests=\"" << outs.size() << "\" failures=\""
        << failures << "\">\n";
    out << "  <testsuite name=\"" << xml_escape("kvplan check " + model) << "\" tests=\""
        << outs.size() << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"0\">\n";
    for (const Outcome& o : outs) {
        out << "    <testcase classname=\"kvplan.check." << xml_escape(std::string(name(o.req->kind)))
            << "\" name=\"" << xml_escape(o.req->name) << "\" file=\"" << xml_escape(p.source)
            << "\">\n";
        const std::string detail = fmt::format("required {}, measured {}{}", o.threshold_text,
                                               o.measured.cell.text,
                                               o.baseline ? " (baseline " + o.baseline->cell.text + ")" : "");
        if (!o.passed)
            out << "      <failure message=\"" << xml_escape(detail) << "\" type=\""
                << xml_escape(std::string(name(o.req->kind))) << "\">" << xml_escape(detail)
                << " [" << xml_escape(p.source + ": " + o.req->path) << "]</failure>\n";
        else
            out << "      <system-out>" << xml_escape(detail) << "</system-out>\n";
        out << "    </testcase>\n";
    }
    out << "  </testsuite>\n</testsuites>\n";
    if (!out)
        detail::throw_field_error<InvalidInput>(file, "--junit", "a writable file", "a write error");
}

void run_check(const CheckOptions& co, Context& ctx) {
    if (co.policy.empty()) usage_error("--policy", "a policy file", "");
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
    CommonOptions flags = replica_flags(p);
    flags.model = model_arg;
    flags.gpu = policy_reference(p, "replica.gpu", p.replica.gpu,
                                 GpuRegistry::load(ctx.config_dir).names());
    // Every requirement brings its own context; the replica's default is only for reading it.
    flags.context = "1";
    const ReplicaRequest in = read_replica(flags, ctx);
    std::optional<ReplicaRequest> base;
    if (!co.baseline.empty()) {
        CommonOptions bf = flags;
        bf.model = co.baseline;
        base = read_replica(bf, ctx);
    }

    std::vector<Outcome> outs;
    for (const Requirement& q : p.requirements) {
        Outcome o;
        o.req = &q;
        o.measured = measure(q, in);
        if (base) o.baseline = measure(q, *base);
        o.passed = passes(q, o.measured);
        o.threshold_text = threshold_text(q);
        o.threshold = threshold_value(q);
        outs.push_back(std::move(o));
    }
    std::size_t failed = 0;
    for (const Outcome& o : outs) failed += o.passed ? 0 : 1;

    Report rep;
    rep.command = "check";
    rep.verdict = failed == 0
                      ? fmt::format("PASS: all {} requirement{} met", outs.size(),
                                    outs.size() == 1 ? "" : "s")
                      : fmt::format("FAIL: {} of {} requirement{} not met", failed, outs.size(),
                                    outs.size() == 1 ? "" : "s");
    const Replica heading_replica =
        evaluate(in.deployment(), {.context = 1}, {.contexts = false, .decode = false}).replica;
    rep.heading = fmt::format("{} on {} x {} (tp {} x pp {}), KV {}, weights {}, engine {}{}",
                              display_name(in.model), heading_replica.gpus(), in.gpu.id,
                              in.flags.layout.tp, in.flags.layout.pp, name(in.flags.kv.dtype),
                              describe_weights(heading_replica.weights),
                              name(in.flags.serving.engine),
                              base ? "; baseline " + base->model.id : std::string());
    rep.inputs = {{"policy", cell_text(p.source)},
                  {"model", cell_text(in.model.id)},
                  {"gpu", cell_text(in.gpu.id)},
                  {"tp", cell_count(in.flags.layout.tp, "")},
                  {"pp", cell_count(in.flags.layout.pp, "")}};
    if (base) rep.inputs.push_back({"baseline", cell_text(base->model.id)});
    rep.figures.push_back({"passed", "passed", cell_bool(failed == 0), {}, {}, false});
    rep.figures.push_back({"failed_count", "failed", cell_count(failed, ""), {}, {}, false});
    Table t;
    t.key = "requirements";
    t.columns = {{"result", "result"}, {"name", "requirement"}, {"kind", "kind"},
                 {"threshold_text", "required"}, {"measured", "measured"}};
    if (base) {
        t.columns.push_back({"baseline", "baseline"});
        t.columns.push_back({"change_percent", "change"});
    }
    t.columns.push_back({"unit", "unit"});
    t.columns.push_back({"threshold", "threshold"});
    t.columns.push_back({"path", "policy path"});
    for (const Outcome& o : outs) {
        std::vector<Cell> row{cell_bool(o.passed, "pass", "FAIL"), cell_text(o.req->name),
                              cell_text(std::string(name(o.req->kind))), cell_text(o.threshold_text),
                              {o.measured.cell.text, measure_json(o.measured)}};
        if (base) {
            row.push_back({o.baseline->cell.text, measure_json(*o.baseline)});
            row.push_back(change_cell(o));
        }
        row.push_back(cell_text(unit_of(o.req->kind)));
        row.push_back({"", o.threshold});
        row.push_back(cell_text(o.req->path));
        t.rows.push_back(std::move(row));
    }
    // The unit, threshold and path columns are for machines; the table shows the rest.
    Table shown = t;
    shown.key = "requirements_shown";
    shown.columns.resize(shown.columns.size() - 3);
    for (auto& row : shown.rows) row.resize(row.size() - 3);
    t.in_text = false;
    rep.tables.push_back(std::move(shown));
    rep.tables.back().in_text = true;
    rep.tables.push_back(std::move(t));
    rep.csv_table = 1;

    const Format f = parse_format(co.format);
    if (f == Format::json) {
        // One requirements array in JSON: the full one.
        rep.tables.erase(rep.tables.begin());
        rep.csv_table = 0;
    }
    const char* gha = std::getenv("GITHUB_ACTIONS");
    if (gha != nullptr && std::string_view(gha) == "true" && f != Format::json && f != Format::csv) {
        for (const Outcome& o : outs) {
            const std::string msg =
                fmt::format("{}: required {}, measured {}{}", o.req->name, o.threshold_text,
                            o.measured.cell.text,
                            o.baseline ? " (was " + o.baseline->cell.text + ")" : "");
            *ctx.out << (o.passed ? "::notice" : "::error") << " file=" << gh_escape(p.source, true)
                     << ",title=" << gh_escape("kvplan check: " + o.req->name, true)
                     << "::" << gh_escape(msg, false) << "\n";
        }
    }
    if (f == Format::csv) rep.tables.erase(rep.tables.begin()), rep.csv_table = 0;
    render(rep, f, false, *ctx.out);
    if (!co.junit.empty()) write_junit(co.junit, p, in.model.id, outs);
    ctx.exit_code = failed == 0 ? exit_ok : exit_check_failed;
}

}  // namespace

void register_check(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CheckOptions>();
    CLI::App* sub = app.add_subcommand(
        "check", "CI gate: measure a model against a policy file; exit 0 pass, 1 fail");
    sub->add_option("-p,--policy", o->policy, "Policy file (JSON, schema kvplan-policy/1)")
        ->required();
    sub->add_option("-m,--model", o->model,
                    "The model to check (overrides the policy's \"model\"): a bundled id or a "
                    "path to a config.json or a folder");
    sub->add_option("--baseline", o->baseline,
                    "The previous revision of the config: its figures and the change are shown");
    sub->add_option("--junit", o->junit, "Also write the results as JUnit XML to this file");
    sub->add_option("-f,--format", o->format, "Output: text, md, json or csv")
        ->check(CLI::IsMember({"text", "md", "json", "csv"}))
        ->capture_default_str();
    sub->callback([o, &ctx] { run_check(*o, ctx); });
}

}  // namespace kvplan::cli
