#pragma once

// What a design review asks of a replica search beyond "what fits": what would make a miss fit,
// what each candidate costs, which candidates serve the most under the latency targets, and which
// are not dominated on throughput per GPU against TPOT (the chart a serving team chooses from).
// Every figure is an evaluate() answer or read from one; nothing here times a step of its own.
// review_plan() is `kvplan plan` whole: the search, then its ranking, targets, prices and front,
// so that the command line and Python render one answer.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../detail/enum_table.hpp"
#include "../error.hpp"
#include "../gpu.hpp"
#include "../units.hpp"
#include "deployment.hpp"
#include "evaluate.hpp"
#include "search.hpp"

namespace kvplan {

/// What would make a replica that does not hold the demand hold it: each a deployment changed in
/// one way, with its evaluate() answer, set only when that answer fits.
struct WhatWouldFit {
    /// The same replica, more of them: the fewest replicas of its layout, GPU and formats that
    /// hold the demand between them (answer.gpus GPUs). Unset when one replica holds no sequence.
    std::optional<ReplicaAnswer> more_gpus{};
    /// The same replica with an fp8 (e4m3) KV cache. Unset when the KV is already 8 bits or
    /// fewer, or fp8 does not hold the demand either.
    std::optional<ReplicaAnswer> fp8_kv{};
    /// The same replica at the longest context of which it holds the demand's concurrency
    /// (ReplicaAnswer::max_context). The demand's prompt / output split is kept when it fits
    /// that context, else dropped (no estimate). Unset when no context holds it.
    std::optional<ReplicaAnswer> shorter_context{};
    /// The same layout and formats on another GPU: of the GPUs given that hold the demand, the
    /// one with the least memory (the smallest step up), the first of equals.
    std::optional<ReplicaAnswer> other_gpu{};

    [[nodiscard]] bool any() const noexcept {
        return more_gpus || fp8_kv || shorter_context || other_gpu;
    }
};

/// The deployment of a search candidate: `model` and `serving` as searched, the candidate's GPU,
/// layout and formats (one replica).
[[nodiscard]] inline Deployment candidate_deployment(const Model& model, const SearchSpace& space,
                                                     const Serving& serving,
                                                     const PlanCandidate& c) {
    // The layout as searched: the answer's stages count a drafter's layers, which evaluate()
    // appends again.
    ParallelConfig searched = c.answer.replica.parallel;
    if (c.answer.drafter_layers != 0 && searched.pp > 1) searched.stage_layers = {};
    return Deployment{.model = model,
                      .gpu = space.gpus[c.gpu],
                      .parallel = searched,
                      .weights = space.weights[c.weights],
                      .kv = space.kv_formats[c.kv],
                      .serving = serving};
}

/// What would make `d` hold `demand`: more replicas of it, fp8 KV, a shorter context, or one of
/// `other_gpus` (the least memory that fits; d.gpu's id skipped). Each is evaluated with `o`.
/// Throws as evaluate(d, demand) does.
[[nodiscard]] inline WhatWouldFit what_would_fit(const Deployment& d, const Demand& demand,
                                                 std::span<const GpuSpec> other_gpus = {},
                                                 const EvaluateOptions& o = {}) {
    WhatWouldFit out;
    EvaluateOptions with_contexts = o;
    with_contexts.contexts = true;
    Deployment one = d;
    one.gpus = 0;  // one replica: what it holds alone
    const ReplicaAnswer base = evaluate(one, demand, with_contexts);

    // Replicas share the demand: k of them hold k x max_concurrency, so the fewest is
    // ceil(concurrency / max_concurrency). What one replica holds at the context does not depend
    // on how many sequences it is asked for.
    if (base.starts() && base.max_concurrency > 0) {
        const std::uint64_t k =
            (demand.concurrency + base.max_concurrency - 1) / base.max_concurrency;
        // A count past what a GPU count holds is no answer.
        if (k <= std::numeric_limits<std::uint32_t>::max() / base.replica_gpus) {
            Deployment more = d;
            more.gpus = static_cast<std::uint32_t>(k) * base.replica_gpus;
            ReplicaAnswer a = evaluate(more, demand, o);
            if (a.fits()) out.more_gpus = std::move(a);
        }
    }

    // fp8 halves a 16-bit cache; a cache of 8 bits or fewer has nothing to gain from it.
    if (bits(d.kv_format().dtype) > 8) {
        Deployment fp8 = d;
        fp8.kv = KvFormat(KvDtype::fp8_e4m3);
        ReplicaAnswer a = evaluate(fp8, demand, o);
        if (a.fits()) out.fp8_kv = std::move(a);
    }

    // The longest context of which each replica holds its share.
    if (base.starts() || base.refusal == Refusal::request) {
        const bool one_replica = d.gpus == 0 || d.gpus == base.replica_gpus;
        const ReplicaAnswer shared = one_replica ? base : evaluate(d, demand, with_contexts);
        if (shared.max_context && *shared.max_context > 0 && *shared.max_context < demand.context) {
            Demand shorter = demand;
            shorter.context = *shared.max_context;
            if (demand.prompt_tokens && demand.output_tokens &&
                *demand.prompt_tokens + *demand.output_tokens > shorter.context)
                shorter.prompt_tokens = shorter.output_tokens = std::nullopt;
            // The same system prompt, cut where the shorter context ends.
            shorter.shared_prefix_tokens = std::min(shorter.shared_prefix_tokens, shorter.context);
            ReplicaAnswer a = evaluate(d, shorter, o);
            if (a.fits()) out.shorter_context = std::move(a);
        }
    }

    for (const GpuSpec& g : other_gpus) {
        if (g.id == d.gpu.id) continue;
        if (out.other_gpu && !(g.memory_total < out.other_gpu->replica.gpu.memory_total)) continue;
        Deployment other = d;
        other.gpu = g;
        ReplicaAnswer a = evaluate(other, demand, o);
        if (a.fits()) out.other_gpu = std::move(a);
    }
    return out;
}

/// Latency targets a candidate's estimate must meet; unset: no target.
struct LatencyTargets {
    std::optional<Seconds> ttft{};  ///< the TTFT estimate at most this
    std::optional<Seconds> tpot{};  ///< the TPOT estimate at most this
};

/// One GPU's price.
struct GpuPrice {
    std::string gpu;                    ///< a GPU id, as GpuSpec::id
    double dollars_per_gpu_hour = 0.0;  ///< US$ per GPU-hour
};

/// Prices per GPU, with where they come from.
struct PriceTable {
    std::string date;      ///< when the prices were read (ISO 8601)
    std::string source;    ///< where
    bool example = false;  ///< an illustration, not a quote
    std::vector<GpuPrice> prices{};

    /// The price of GPU `id`, or nullopt when the table has none.
    [[nodiscard]] std::optional<double> price(std::string_view id) const {
        for (const GpuPrice& p : prices)
            if (p.gpu == id) return p.dollars_per_gpu_hour;
        return std::nullopt;
    }
};

/// US$ per million output tokens of a GPU at `dollars_per_gpu_hour` serving
/// `tokens_per_s_per_gpu` output tokens per second: the hour's price over the hour's tokens.
[[nodiscard]] constexpr double dollars_per_million_tokens(double dollars_per_gpu_hour,
                                                          double tokens_per_s_per_gpu) noexcept {
    return dollars_per_gpu_hour / (tokens_per_s_per_gpu * 3600.0) * 1e6;
}

/// How rank_for_review() orders.
enum class ReviewRanking : std::uint8_t {
    tokens_per_gpu,  ///< the most output tokens/s per GPU by the estimate first
    cost,            ///< the fewest US$ per million output tokens first (needs prices)
};

/// A candidate as a review ranks it.
struct ReviewedCandidate {
    std::size_t index = 0;            ///< into the candidates given
    double tokens_per_s_per_gpu = 0;  ///< output tokens/s per GPU, the latency estimate's
    std::optional<double> dollars_per_gpu_hour{};
    std::optional<double> dollars_per_million_tokens{};  ///< US$ per million output tokens
};

/// The candidates ranked for a review, and those left out, counted by why.
struct ReviewAnswer {
    std::vector<ReviewedCandidate> ranked{};
    std::size_t without_estimate = 0;  ///< no latency estimate (no prompt / output split, ...)
    std::size_t over_ttft = 0;         ///< the TTFT estimate misses the target
    std::size_t over_tpot = 0;         ///< the TPOT estimate misses the target (TTFT met)
    std::size_t without_price = 0;     ///< cost ranking: the GPU has no price
    /// The candidates left out, for any of the reasons above.
    [[nodiscard]] std::size_t left_out() const noexcept {
        return without_estimate + over_ttft + over_tpot + without_price;
    }
};

/// `candidates` (those that fit, each with its latency estimate) ranked by `ranking` under
/// `targets`: those without an estimate, missing a target, or (ranking by cost) without a price
/// in `prices` are left out and counted. Ties go to fewer GPUs, then the candidates' order.
[[nodiscard]] inline ReviewAnswer rank_for_review(std::span<const PlanCandidate> candidates,
                                                  ReviewRanking ranking,
                                                  const LatencyTargets& targets = {},
                                                  const PriceTable* prices = nullptr) {
    ReviewAnswer out;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const ReplicaAnswer& a = candidates[i].answer;
        if (!a.estimate || !(a.estimate->tokens_per_s_per_gpu > 0.0)) {
            ++out.without_estimate;
            continue;
        }
        if (targets.ttft && a.estimate->ttft > *targets.ttft) {
            ++out.over_ttft;
            continue;
        }
        if (targets.tpot && a.estimate->tpot > *targets.tpot) {
            ++out.over_tpot;
            continue;
        }
        ReviewedCandidate c{i, a.estimate->tokens_per_s_per_gpu, {}, {}};
        if (prices != nullptr)
            c.dollars_per_gpu_hour = prices->price(std::string(a.replica.gpu.id));
        if (c.dollars_per_gpu_hour)
            c.dollars_per_million_tokens =
                dollars_per_million_tokens(*c.dollars_per_gpu_hour, c.tokens_per_s_per_gpu);
        if (ranking == ReviewRanking::cost && !c.dollars_per_million_tokens) {
            ++out.without_price;
            continue;
        }
        out.ranked.push_back(c);
    }
    std::stable_sort(out.ranked.begin(), out.ranked.end(),
                     [&](const ReviewedCandidate& x, const ReviewedCandidate& y) {
                         if (ranking == ReviewRanking::cost &&
                             *x.dollars_per_million_tokens != *y.dollars_per_million_tokens)
                             return *x.dollars_per_million_tokens < *y.dollars_per_million_tokens;
                         if (x.tokens_per_s_per_gpu != y.tokens_per_s_per_gpu)
                             return x.tokens_per_s_per_gpu > y.tokens_per_s_per_gpu;
                         return candidates[x.index].answer.gpus < candidates[y.index].answer.gpus;
                     });
    return out;
}

/// The candidates not dominated on (output tokens/s per GPU, TPOT) by their latency estimates:
/// no other has as many tokens/s per GPU and as low a TPOT, one of them strictly better. Indices
/// into `candidates`, the lowest TPOT first; candidates without an estimate are left out. Two
/// candidates equal on both are both kept.
[[nodiscard]] inline std::vector<std::size_t> pareto_front(
    std::span<const PlanCandidate> candidates) {
    std::vector<std::size_t> with;
    for (std::size_t i = 0; i < candidates.size(); ++i)
        if (candidates[i].answer.estimate) with.push_back(i);
    const auto rate = [&](std::size_t i) {
        return candidates[i].answer.estimate->tokens_per_s_per_gpu;
    };
    const auto tpot = [&](std::size_t i) { return candidates[i].answer.estimate->tpot; };
    // Lowest TPOT first, the highest rate first among equal TPOTs: a candidate is on the front
    // when its rate beats every rate before it of a strictly lower TPOT, or equals the best so
    // far at the same TPOT.
    std::stable_sort(with.begin(), with.end(), [&](std::size_t x, std::size_t y) {
        if (tpot(x) != tpot(y)) return tpot(x) < tpot(y);
        return rate(x) > rate(y);
    });
    std::vector<std::size_t> front;
    for (std::size_t i : with) {
        if (front.empty()) {
            front.push_back(i);
            continue;
        }
        const std::size_t last = front.back();
        const bool same_point = tpot(i) == tpot(last) && rate(i) == rate(last);
        // Every kept point has a TPOT <= this one's; the last kept has the best rate so far.
        if (same_point || rate(i) > rate(last)) front.push_back(i);
    }
    return front;
}

/// How a plan orders the replicas that fit (`kvplan plan --rank`, Python's rank=).
enum class PlanRanking : std::uint8_t {
    gpus,      ///< fewest GPUs first (Ranking::fewest_gpus)
    fastest,   ///< the lowest decode-step bound first (Ranking::fastest)
    estimate,  ///< the most output tokens/s per GPU by the latency estimate (Ranking::estimate)
    cost,      ///< the fewest US$ per million output tokens (needs prices), then as estimate
};

/// Each plan ranking, spelled.
inline constexpr FixedArray<detail::EnumName<PlanRanking>, 4> plan_ranking_names{{
    {PlanRanking::gpus, "gpus"},
    {PlanRanking::fastest, "fastest"},
    {PlanRanking::estimate, "estimate"},
    {PlanRanking::cost, "cost"},
}};

/// The spelling of `r`.
[[nodiscard]] constexpr const char* name(PlanRanking r) noexcept {
    return detail::enum_name(plan_ranking_names, r);
}

/// What a plan asks beyond the search space: how to rank the fits, latency targets on their
/// estimates, prices per GPU-hour, and the Pareto front. Targets, prices and cost read the latency
/// estimate, so they need a demand with its prompt / output split.
struct PlanReview {
    /// Unset: estimate when the demand has its prompt / output split, else gpus.
    std::optional<PlanRanking> ranking{};
    LatencyTargets targets{};
    std::optional<PriceTable> prices{};  ///< US$ per GPU-hour by GPU id
    bool pareto = false;                 ///< the candidates not dominated (pareto_front)

    /// The ranking used for `demand`.
    [[nodiscard]] constexpr PlanRanking ranking_for(const Demand& demand) const noexcept {
        if (ranking) return *ranking;
        return demand.prompt_tokens && demand.output_tokens ? PlanRanking::estimate
                                                            : PlanRanking::gpus;
    }
    /// The fits are ranked after the search by rank_for_review(): by cost, under targets or
    /// priced.
    [[nodiscard]] constexpr bool reviews() const noexcept {
        return ranking == PlanRanking::cost || prices || targets.ttft || targets.tpot;
    }
};

/// An option of a PlanReview, for a front end to name as its flag or keyword.
enum class PlanReviewField : std::uint8_t { ranking, prices, ttft, tpot, pareto };

/// How a front end spells the review's options and the demand's split (`--prices`, `prices`), so
/// that a problem reads in its words.
struct PlanReviewSpelling {
    std::string_view ranking = "ranking";
    std::string_view prices = "prices";
    std::string_view ttft = "targets.ttft";
    std::string_view tpot = "targets.tpot";
    std::string_view pareto = "pareto";
    std::string_view prompt_tokens = "demand.prompt_tokens";
    std::string_view output_tokens = "demand.output_tokens";

    [[nodiscard]] constexpr std::string_view operator()(PlanReviewField f) const noexcept {
        switch (f) {
            case PlanReviewField::ranking:
                return ranking;
            case PlanReviewField::prices:
                return prices;
            case PlanReviewField::ttft:
                return ttft;
            case PlanReviewField::tpot:
                return tpot;
            case PlanReviewField::pareto:
                return pareto;
        }
        return ranking;
    }
};

/// Why a plan cannot take a review: the option at fault and what it needs (the front end says
/// what it was given).
struct PlanReviewProblem {
    PlanReviewField field = PlanReviewField::ranking;
    std::string expected;
};

/// The first reason `review` cannot rank the fits of `demand`, worded with `spelling`, or nothing:
/// cost needs prices; prices, targets and the front read the latency estimate, which needs the
/// demand's prompt / output split; prices and targets rank by the estimate (estimate or cost).
[[nodiscard]] inline std::optional<PlanReviewProblem> plan_review_problem(
    const PlanReview& review, const Demand& demand, const PlanReviewSpelling& spelling = {}) {
    using F = PlanReviewField;
    const bool split = demand.prompt_tokens && demand.output_tokens;
    const PlanRanking ranking = review.ranking_for(demand);
    const auto text = [](auto... parts) { return (std::string() + ... + std::string(parts)); };
    if (ranking == PlanRanking::cost && !review.prices)
        return PlanReviewProblem{
            F::ranking, text(spelling.prices, " beside cost (US$ per GPU-hour by GPU id)")};
    if (!split) {
        const std::string needs = text(spelling.prompt_tokens, " and ", spelling.output_tokens,
                                       " beside it (the load the latency estimate serves)");
        if (review.prices) return PlanReviewProblem{F::prices, needs};
        if (review.targets.ttft) return PlanReviewProblem{F::ttft, needs};
        if (review.targets.tpot) return PlanReviewProblem{F::tpot, needs};
        if (review.pareto) return PlanReviewProblem{F::pareto, needs};
    }
    const bool by_estimate = ranking == PlanRanking::estimate || ranking == PlanRanking::cost;
    if ((review.prices || review.targets.ttft || review.targets.tpot) && !by_estimate)
        return PlanReviewProblem{
            F::ranking, text("estimate or cost beside ", spelling.prices, ", ", spelling.ttft,
                             " or ", spelling.tpot, " (they rank by the estimate)")};
    if (by_estimate && !split)
        return PlanReviewProblem{
            F::ranking, text(spelling.prompt_tokens, " and ", spelling.output_tokens, " beside ",
                             name(ranking), " (the load the estimate serves)")};
    return std::nullopt;
}

/// A plan's answer: the search, its fits in the plan's order, and the Pareto front.
struct ReviewedPlan {
    /// The search: every fit it kept (all of them when the plan reviews or charts them), in the
    /// search's ranking.
    PlanAnswer search{};
    PlanRanking ranking = PlanRanking::gpus;  ///< the ranking used
    /// The fits in the plan's order, as indices into search.fits. Reviewed (PlanReview::reviews):
    /// rank_for_review()'s, those meeting the targets (and priced, ranking by cost), each priced
    /// when prices are given, with what was left out counted; else every fit in the search's
    /// order, unpriced.
    ReviewAnswer order{};
    bool reviewed = false;  ///< order is a review's (its counts say what it left out)
    /// With PlanReview::pareto: positions in order.ranked of the candidates not dominated on
    /// (output tokens/s per GPU, TPOT) by their estimates, the lowest TPOT first (pareto_front).
    std::vector<std::size_t> pareto{};

    /// The fit at position `i` of the plan's order.
    [[nodiscard]] const PlanCandidate& at(std::size_t i) const {
        return search.fits[order.ranked[i].index];
    }
};

/// `kvplan plan`: the replicas of `space` that hold `demand`, searched by plan_replicas() in the
/// ranking `review` asks for, then (reviewing) ranked by rank_for_review() under its targets and
/// prices, and (with review.pareto) their Pareto front. A review or a front keeps every fit of the
/// search, whatever space.keep says. Throws InvalidInput for a review plan_review_problem()
/// refuses (named as PlanReviewSpelling's defaults), and as plan_replicas() does.
[[nodiscard]] inline ReviewedPlan review_plan(const Model& model, SearchSpace space,
                                              const Serving& serving, const Demand& demand,
                                              const PlanReview& review = {},
                                              std::size_t misses = 5) {
    if (const std::optional<PlanReviewProblem> p = plan_review_problem(review, demand))
        detail::throw_field_error<InvalidInput>("plan review", PlanReviewSpelling{}(p->field),
                                                p->expected, "otherwise");
    ReviewedPlan out;
    out.ranking = review.ranking_for(demand);
    out.reviewed = review.reviews();
    // Ranked after the search, by cost or under targets, or charted: every fit is kept.
    if (out.reviewed || review.pareto) space.keep = std::numeric_limits<std::size_t>::max();
    out.search = plan_replicas(model, space, serving, demand,
                               out.ranking == PlanRanking::fastest ? Ranking::fastest
                               : out.ranking == PlanRanking::gpus  ? Ranking::fewest_gpus
                                                                   : Ranking::estimate,
                               misses);
    const std::vector<PlanCandidate>& fits = out.search.fits;
    if (out.reviewed) {
        out.order = rank_for_review(
            fits,
            out.ranking == PlanRanking::cost ? ReviewRanking::cost : ReviewRanking::tokens_per_gpu,
            review.targets, review.prices ? &*review.prices : nullptr);
    } else {
        for (std::size_t i = 0; i < fits.size(); ++i) {
            const std::optional<LatencyEstimate>& e = fits[i].answer.estimate;
            out.order.ranked.push_back({i, e ? e->tokens_per_s_per_gpu : 0.0, {}, {}});
        }
    }
    if (review.pareto) {
        std::vector<PlanCandidate> pool;
        pool.reserve(out.order.ranked.size());
        for (std::size_t i = 0; i < out.order.ranked.size(); ++i) pool.push_back(out.at(i));
        out.pareto = pareto_front(pool);
    }
    return out;
}

}  // namespace kvplan
