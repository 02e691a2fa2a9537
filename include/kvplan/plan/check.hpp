#pragma once

// A policy judged: each requirement of a policy (policy/requirements.hpp) on each of its replicas,
// for a model and, when given, its previous revision (the baseline). Every figure comes from the
// replica's one answer, evaluate() (plan/evaluate.hpp), at the demand the requirement states:
//
//   min_concurrency         max_concurrency at context_tokens (0 when the engine does not start,
//                           so a context past the model's limit fails)
//   min_context             max_context of `sequences` sequences, capped at the model's limit
//   max_tpot                the decode bound at batch x context_tokens; none, and failed, when the
//                           engine does not start at that context
//   max_kv_bytes_per_token  kv_per_token
//   max_weights_per_gpu     weights_per_gpu
//   max_regression          its figure, on the model and on the baseline: it may worsen by at
//                           most `percent` of the baseline's (skipped without a baseline)
//
// `kvplan check` renders the result; serving code and the Python module can call it the same way.

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../change.hpp"
#include "../detail/enum_table.hpp"
#include "../error.hpp"
#include "../fixed_array.hpp"
#include "../gpu.hpp"
#include "../model.hpp"
#include "../policy/requirements.hpp"
#include "../roofline/step_cost.hpp"
#include "../units.hpp"
#include "../weights.hpp"
#include "deployment.hpp"
#include "evaluate.hpp"
#include "refusal.hpp"

namespace kvplan {

/// The deployment `r` describes for `model` on `gpu` (the GPU the front end resolved `r.gpu` to):
/// one replica of tp x pp GPUs (x dp under vLLM's rules) with its dp, ep and dcp, its formats and
/// its engine's knobs; the checkpoint's own weight format when the replica names none.
[[nodiscard]] inline Deployment policy_deployment(const PolicyReplica& r, const Model& model,
                                                  const GpuSpec& gpu) {
    Deployment d{.model = model,
                 .gpu = gpu,
                 .parallel = {.tp = r.tp,
                              .pp = r.pp,
                              .dp = r.dp,
                              .ep = r.ep,
                              .dcp = r.dcp,
                              .redundant_experts = r.redundant_experts},
                 .kv = r.kv_dtype};
    if (r.weight_dtype) {
        WeightOptions w;
        w.format = *r.weight_dtype;
        d.weights = w;
    }
    d.serving.engine = r.engine;
    d.serving.block_size = r.block_size;
    d.serving.memory_fraction = r.gpu_memory_utilization;
    d.serving.engine_version = r.engine_version;
    return d;
}

/// How a requirement came out on a replica.
enum class CheckStatus : std::uint8_t {
    passed,
    failed,
    skipped,  ///< a max_regression without a baseline to compare with
};

/// Each status's spelling.
inline constexpr FixedArray<detail::EnumName<CheckStatus>, 3> check_status_names{{
    {CheckStatus::passed, "passed"},
    {CheckStatus::failed, "failed"},
    {CheckStatus::skipped, "skipped"},
}};

[[nodiscard]] constexpr const char* name(CheckStatus s) noexcept {
    return detail::enum_name(check_status_names, s);
}

/// A figure as measured, exact where it is a count.
struct FigureValue {
    CheckFigure figure = CheckFigure::max_concurrency;
    std::uint64_t count = 0;  ///< sequences, tokens or bytes (every figure but tpot)
    Seconds time{};           ///< tpot
    bool unbounded = false;   ///< max_context: any length (nothing grows with the context)

    /// In unit_name(figure): the count, or seconds; infinity when unbounded.
    [[nodiscard]] double value() const noexcept {
        if (unbounded) return std::numeric_limits<double>::infinity();
        return figure == CheckFigure::tpot ? time.in(seconds) : static_cast<double>(count);
    }
};

/// One requirement on one replica.
struct CheckOutcome {
    std::size_t requirement = 0;  ///< its index in Policy::requirements
    std::size_t replica = 0;      ///< its index in Policy::replicas
    CheckFigure figure = CheckFigure::max_concurrency;
    CheckStatus status = CheckStatus::failed;
    /// The model's figure; nullopt when it has none (a TPOT where the engine does not start, or a
    /// replica that cannot take the model).
    std::optional<FigureValue> measured{};
    std::optional<FigureValue> baseline{};  ///< the baseline's, when given and it has one
    /// (measured - baseline) / baseline x 100, when both are bounded and the baseline is not 0.
    std::optional<double> change_percent{};
    /// Why it failed or was skipped when the figures alone do not say: the engine's refusal, a
    /// layout the replica cannot take, no baseline. Empty otherwise.
    std::string reason{};
    /// The answers the figures were read from (nullopt: the replica cannot take that model).
    std::optional<ReplicaAnswer> answer{};
    std::optional<ReplicaAnswer> baseline_answer{};

    /// Whether the figure is worse than the baseline's: a fall of a figure better higher
    /// (higher_is_better), a rise of the rest; an any-length max_context that became bounded.
    /// False without both figures.
    [[nodiscard]] bool worsened() const noexcept {
        if (!measured || !baseline) return false;
        if (baseline->unbounded || measured->unbounded)
            return baseline->unbounded && !measured->unbounded;
        const double now = measured->value(), before = baseline->value();
        return higher_is_better(figure) ? now < before : now > before;
    }
};

/// A policy judged: one outcome per requirement and replica, requirement by requirement, each on
/// every replica in the policy's order.
struct CheckResult {
    std::vector<CheckOutcome> outcomes;
    std::size_t failed = 0;
    std::size_t skipped = 0;

    /// No requirement failed on any replica (skipped ones do not fail).
    [[nodiscard]] bool passed() const noexcept { return failed == 0; }
    /// The outcomes met: neither failed nor skipped.
    [[nodiscard]] std::size_t met() const noexcept { return outcomes.size() - failed - skipped; }
};

namespace detail::check {

/// 1234567 -> "1,234,567".
[[nodiscard]] inline std::string grouped(std::uint64_t n) { return grouped_digits(n); }

/// Why the engine does not start, in a sentence: refusal_text (plan/refusal.hpp), the one text
/// every front end shows.
[[nodiscard]] inline std::string refusal_reason(const ReplicaAnswer& a) {
    return a.refusal == Refusal::none ? std::string()
                                      : "the engine does not start: " + refusal_text(a);
}

/// A figure read from an answer, or why there is none.
struct Measure {
    std::optional<FigureValue> value{};
    std::optional<ReplicaAnswer> answer{};
    std::string reason{};
};

/// `f` of deployment `d` at the demand requirement `q` states. Throws InvalidInput naming the
/// policy's requirement when a TPOT is asked of a GPU whose spec lacks the figures for it.
[[nodiscard]] inline Measure measure(const Policy& p, const Requirement& q, CheckFigure f,
                                     const Deployment& d, const RooflineOptions& roofline) {
    Measure m;
    FigureValue v{.figure = f};
    const auto answer = [&](Demand demand, bool contexts, bool decode) -> const ReplicaAnswer& {
        m.answer =
            evaluate(d, demand, {.contexts = contexts, .decode = decode, .roofline = roofline});
        if (!m.answer->starts()) m.reason = refusal_reason(*m.answer);
        return *m.answer;
    };
    switch (f) {
        case CheckFigure::max_concurrency: {
            const std::uint64_t n = q.kind == RequirementKind::min_concurrency ? q.sequences : 1;
            v.count = answer({.context = q.context_tokens,
                              .concurrency = n,
                              .shared_prefix_tokens = q.shared_prefix_tokens},
                             false, false)
                          .max_concurrency;
            break;
        }
        case CheckFigure::max_context: {
            // min_context starts the engine at the length it asks for; a regression at the
            // model's own limit, the length an engine takes when told none.
            const std::uint64_t context = q.kind == RequirementKind::min_context
                                              ? q.tokens
                                              : context_limit(d.model.config()).tokens;
            const ReplicaAnswer& a =
                answer({.context = context, .concurrency = q.sequences}, true, false);
            // Past the limit the search still runs, capped at the limit: the figure stands.
            if (a.refusal == Refusal::weights || a.refusal == Refusal::outside_fraction)
                v.count = 0;
            else if (!a.max_context)
                v.unbounded = true;
            else
                v.count = *a.max_context;
            break;
        }
        case CheckFigure::tpot: {
            const ReplicaAnswer& a =
                answer({.context = q.context_tokens, .concurrency = q.batch}, false, true);
            if (!a.starts()) return m;  // no engine, no step: no figure
            if (!a.decode)
                detail::throw_field_error<InvalidInput>(
                    p.source, q.path,
                    "a GPU whose spec states its memory bandwidth, its dense FLOP/s and, at tp > "
                    "1, a link (scale-up or PCIe), for the decode bound",
                    text("GPU '", d.gpu.id, "' without them"));
            v.time = a.decode->tpot;
            break;
        }
        case CheckFigure::kv_bytes_per_token:
            v.count = answer({.context = 1}, false, false).kv_per_token.count();
            m.reason.clear();  // a per-token size holds whether or not the engine starts
            break;
        case CheckFigure::weights_per_gpu:
            v.count = answer({.context = 1}, false, false).weights_per_gpu.count();
            m.reason.clear();
            break;
    }
    m.value = v;
    return m;
}

/// measure(), or, for a layout the replica cannot take, no figure and why.
[[nodiscard]] inline Measure measure_or_layout(const Policy& p, const Requirement& q, CheckFigure f,
                                               const Deployment& d,
                                               const RooflineOptions& roofline) {
    try {
        return measure(p, q, f, d, roofline);
    } catch (const InvalidLayout& e) {
        Measure m;
        m.reason = std::string("the replica cannot take this model: ") + e.what();
        return m;
    }
}

/// Whether `now` meets requirement `q` (not max_regression).
[[nodiscard]] inline bool meets(const Requirement& q, const FigureValue& now) noexcept {
    switch (q.kind) {
        case RequirementKind::min_concurrency:
            return now.count >= q.sequences;
        case RequirementKind::max_tpot:
            return now.time <= q.tpot;
        case RequirementKind::max_kv_bytes_per_token:
        case RequirementKind::max_weights_per_gpu:
            return now.count <= q.size.count();
        case RequirementKind::min_context:
            return now.unbounded || now.count >= q.tokens;
        case RequirementKind::max_regression:
            return false;
    }
    return false;
}

/// Judges a max_regression: `now` may be worse than `before` by at most q.percent of `before`.
inline void judge_regression(const Requirement& q, CheckOutcome& o) {
    const bool higher = higher_is_better(q.figure);
    if (!o.measured) {
        o.status = CheckStatus::failed;
        return;
    }
    if (!o.baseline) {
        // The baseline has no figure here (its engine does not start, or its layout fails):
        // nothing the change can have made worse.
        o.status = CheckStatus::passed;
        return;
    }
    const FigureValue& now = *o.measured;
    const FigureValue& before = *o.baseline;
    if (before.unbounded || now.unbounded) {
        // Any length before and now bounded is worse by more than any percentage.
        const bool worse = before.unbounded && !now.unbounded;
        o.status = worse ? CheckStatus::failed : CheckStatus::passed;
        if (worse) o.reason = "the baseline reaches any length; the model no longer does";
        return;
    }
    const double b = before.value(), a = now.value();
    const double worsening = higher ? b - a : a - b;
    // worsening / b <= percent / 100, multiplied out so that a baseline of 0 needs no division:
    // a figure of 0 cannot fall, and one that grows from 0 grows past any percentage.
    o.status = worsening * 100.0 <= q.percent * b || worsening <= 0.0 ? CheckStatus::passed
                                                                      : CheckStatus::failed;
}

}  // namespace detail::check

/// Judges each requirement of `p` on each of its replicas for `model`, and for `baseline` when
/// given. `gpus[i]` is the GPU of `p.replicas[i]` (resolved by the front end from its id or spec
/// file). A replica that cannot take the model (InvalidLayout) fails every requirement on it, with
/// the reason. Throws InvalidInput for what evaluate() refuses (a GPU without memory) and for a
/// TPOT asked of a GPU whose spec lacks bandwidth or FLOP/s.
[[nodiscard]] inline CheckResult check_policy(const Policy& p, const Model& model,
                                              std::span<const GpuSpec> gpus,
                                              const Model* baseline = nullptr,
                                              const RooflineOptions& roofline = {}) {
    KVPLAN_EXPECTS(gpus.size() == p.replicas.size());
    CheckResult result;
    for (std::size_t qi = 0; qi < p.requirements.size(); ++qi) {
        const Requirement& q = p.requirements[qi];
        for (std::size_t ri = 0; ri < p.replicas.size(); ++ri) {
            CheckOutcome o{.requirement = qi, .replica = ri, .figure = figure_of(q)};
            detail::check::Measure now = detail::check::measure_or_layout(
                p, q, o.figure, policy_deployment(p.replicas[ri], model, gpus[ri]), roofline);
            o.measured = now.value;
            o.answer = std::move(now.answer);
            o.reason = std::move(now.reason);
            std::string baseline_reason;
            if (baseline != nullptr) {
                detail::check::Measure before = detail::check::measure_or_layout(
                    p, q, o.figure, policy_deployment(p.replicas[ri], *baseline, gpus[ri]),
                    roofline);
                o.baseline = before.value;
                o.baseline_answer = std::move(before.answer);
                baseline_reason = std::move(before.reason);
            }
            if (o.measured && o.baseline && !o.measured->unbounded && !o.baseline->unbounded)
                o.change_percent = change_percent(o.baseline->value(), o.measured->value());
            if (q.kind != RequirementKind::max_regression) {
                o.status = o.measured && detail::check::meets(q, *o.measured) ? CheckStatus::passed
                                                                              : CheckStatus::failed;
            } else if (baseline == nullptr) {
                o.status = CheckStatus::skipped;
                o.reason = "no baseline to compare with";
            } else {
                detail::check::judge_regression(q, o);
                if (o.status == CheckStatus::passed && !o.baseline)
                    o.reason = "the baseline has no figure here (" + baseline_reason +
                               "): nothing to regress from";
            }
            // A refusal explains a failure; beside a pass only a missing baseline figure needs
            // saying.
            if (o.status == CheckStatus::passed &&
                !(q.kind == RequirementKind::max_regression && !o.baseline))
                o.reason.clear();
            result.failed += o.status == CheckStatus::failed ? 1 : 0;
            result.skipped += o.status == CheckStatus::skipped ? 1 : 0;
            result.outcomes.push_back(std::move(o));
        }
    }
    return result;
}

}  // namespace kvplan
