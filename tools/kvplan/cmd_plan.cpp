// kvplan plan: the smallest replicas that meet a workload, over GPU types x GPU counts x tp/pp x
// KV dtypes x weight formats, ranked. Without --gpu every bundled GPU is searched. One call to
// kvplan::plan_replicas; every candidate's figures are evaluate()'s, as fit prints them.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <kvplan/format.hpp>
#include <kvplan/plan/commands.hpp>
#include <kvplan/plan/review.hpp>
#include <kvplan/plan/search.hpp>
#include <kvplan/price_file.hpp>
#include <memory>

#include "answer.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "parse.hpp"
#include "report.hpp"
#include "typed_option.hpp"

namespace kvplan::cli {

namespace {

struct PlanOptions {
    CommonOptions common;
    std::uint32_t max_gpus = 8;
    std::uint32_t max_tp = 8;
    std::uint64_t top = 10;
    std::optional<PlanRanking> rank;  ///< default: estimate with a prompt / output split, else gpus
    bool no_dp = false;               ///< leave attention data parallelism out of the search
    bool no_ep = false;               ///< leave expert parallelism out
    bool no_dcp = false;              ///< leave decode context parallelism out
    std::optional<std::uint32_t> redundant_experts;  ///< for the expert-parallel layouts
    std::string prices;                              ///< --prices FILE
    std::optional<double> ttft_ms;                   ///< --ttft-ms target
    std::optional<double> tpot_ms;                   ///< --tpot-ms target
    bool pareto = false;                             ///< --pareto
    bool any_layout = false;  ///< --any-layout: every split, not only whole nodes
};

/// The shared prefix's columns, after max_concurrency (with --shared-prefix).
const std::vector<Column> prefix_columns = {
    {"max_concurrency_without_sharing", "unshared"},
    {"shared_prefix_blocks_saved", "prefix blocks saved", false},
    {"shared_prefix_bytes_saved", "prefix saves/GPU"}};

std::vector<Cell> candidate_row(std::size_t rank, const PlanCandidate& c,
                                const std::vector<ResolvedGpu>& gpus, bool with_estimate,
                                bool with_prefix, const ReviewedCandidate* priced = nullptr) {
    const ReplicaAnswer& a = c.answer;
    std::vector<Cell> row{cell_count(rank, ""),
                          cell_text(gpus[c.gpu].id),
                          cell_count(a.gpus, ""),
                          cell_count(a.replica.parallel.tp, ""),
                          cell_count(a.replica.parallel.pp, ""),
                          cell_count(a.replica.parallel.dp, ""),
                          cell_count(a.replica.parallel.ep, ""),
                          cell_count(a.replica.parallel.dcp, ""),
                          cell_text(name(a.replica.kv.dtype)),
                          cell_text(describe_weights(a.replica.weights)),
                          cell(a.kv_budget),
                          a.kv_tokens ? cell_count(*a.kv_tokens, "") : cell_null("any"),
                          cell_count(a.max_concurrency, ""),
                          a.shortfall.is_zero() ? cell(a.headroom) : cell_null("-"),
                          a.decode ? cell(a.decode->tpot) : cell_null("-")};
    if (with_prefix)
        row.insert(row.begin() + 13, {cell_count(a.max_concurrency_without_sharing, ""),
                                      cell_count(a.shared_prefix_blocks_saved, ""),
                                      cell(a.shared_prefix_bytes_saved)});
    if (!with_estimate) return row;
    if (!a.estimate) {
        row.insert(row.end(), 5, cell_null(name(a.estimate_basis)));
        return row;
    }
    const LatencyEstimate& e = *a.estimate;
    row.insert(row.end(),
               {cell(e.tpot), cell(e.itl), cell(e.ttft), cell_number(e.tokens_per_s, "tokens/s", 1),
                cell_number(e.tokens_per_s_per_gpu, "tokens/s", 1)});
    if (priced != nullptr) {
        row.push_back(priced->dollars_per_gpu_hour
                          ? cell_number(*priced->dollars_per_gpu_hour, "$/GPU-h", 2)
                          : cell_null("no price"));
        row.push_back(priced->dollars_per_million_tokens
                          ? cell_number(*priced->dollars_per_million_tokens, "$/M tokens", 3)
                          : cell_null("no price"));
    }
    return row;
}

/// A miss's fixes, as cells: the GPUs of the fewest replicas that hold the demand, the sequences
/// fp8 KV holds, the longest context that holds it, another GPU that does.
std::vector<Cell> fix_cells(const WhatWouldFit& w) {
    return {w.more_gpus ? cell_count(w.more_gpus->gpus, "GPUs") : cell_null("-"),
            w.fp8_kv ? cell_count(w.fp8_kv->max_concurrency, "sequences") : cell_null("-"),
            w.shorter_context ? cell_count(w.shorter_context->demand.context, "tokens")
                              : cell_null("-"),
            w.other_gpu ? cell_text(std::string(w.other_gpu->replica.gpu.id)) : cell_null("-")};
}

/// What would make a miss fit, in words.
std::string fix_note(std::size_t i, const ResolvedGpu& g, const ReplicaAnswer& miss,
                     const WhatWouldFit& w, const Demand& demand) {
    // The whole layout (dp, ep, dcp too): two misses that differ only there read apart.
    std::string s =
        fmt::format("miss {} ({} x {}, {}, KV {}, holds {} of {}) fits with", i, miss.gpus, g.id,
                    layout_text(miss.replica.parallel), name(miss.replica.kv.dtype),
                    grouped(miss.max_concurrency), grouped(demand.concurrency));
    std::vector<std::string> ways;
    if (w.more_gpus)
        ways.push_back(fmt::format("{} GPUs ({} replicas holding {})", w.more_gpus->gpus,
                                   w.more_gpus->replicas,
                                   grouped(w.more_gpus->total_max_concurrency)));
    if (w.fp8_kv)
        ways.push_back(fmt::format("fp8 KV (--kv-dtype fp8: {} sequences, {} KV/GPU)",
                                   grouped(w.fp8_kv->max_concurrency), w.fp8_kv->kv_budget));
    if (w.shorter_context)
        ways.push_back(fmt::format("a context of at most {} tokens",
                                   grouped(w.shorter_context->demand.context)));
    if (w.other_gpu)
        ways.push_back(fmt::format(
            "{} GPU{} of {} ({} sequences)", w.other_gpu->gpus, w.other_gpu->gpus == 1 ? "" : "s",
            std::string(w.other_gpu->replica.gpu.id), grouped(w.other_gpu->max_concurrency)));
    if (ways.empty())
        return s + " none of more GPUs, fp8 KV, a shorter context or another GPU alone";
    for (std::size_t k = 0; k < ways.size(); ++k)
        s += (k == 0 ? " " : k + 1 == ways.size() ? " or " : ", ") + ways[k];
    return s;
}

void run_plan(const PlanOptions& po, Context& ctx) {
    const CommonOptions& o = po.common;
    const std::uint32_t max_gpus = po.max_gpus;
    const std::uint32_t max_tp = po.max_tp;
    const std::uint64_t top = po.top;
    const TokenSplitFlags split = parse_token_split(o);
    // What the plan asks beyond the search; the library says what it cannot take, in the flags'
    // words, before any file is read (the price file is read once the flags agree).
    PlanReview asked;
    asked.ranking = po.rank;
    if (po.ttft_ms) asked.targets.ttft = *po.ttft_ms * milliseconds;
    if (po.tpot_ms) asked.targets.tpot = *po.tpot_ms * milliseconds;
    if (!po.prices.empty()) asked.prices = PriceTable{};
    asked.pareto = po.pareto;
    {
        Demand load;
        load.prompt_tokens = split.prompt;
        load.output_tokens = split.output;
        constexpr PlanReviewSpelling flags{.ranking = "--rank",
                                           .prices = "--prices",
                                           .ttft = "--ttft-ms",
                                           .tpot = "--tpot-ms",
                                           .pareto = "--pareto",
                                           .prompt_tokens = "--prompt-tokens",
                                           .output_tokens = "--output-tokens"};
        if (const std::optional<PlanReviewProblem> bad = plan_review_problem(asked, load, flags)) {
            using F = PlanReviewField;
            const std::string found = bad->field == F::ranking
                                          ? std::string(name(asked.ranking_for(load)))
                                      : bad->field == F::prices ? po.prices
                                      : bad->field == F::ttft   ? fmt::format("{:g}", *po.ttft_ms)
                                      : bad->field == F::tpot   ? fmt::format("{:g}", *po.tpot_ms)
                                                                : std::string("set");
            usage_error(flags(bad->field), bad->expected, found);
        }
    }
    SearchSpace space;
    space.max_gpus = max_gpus;
    space.max_tp = max_tp;
    space.data_parallel = !po.no_dp;
    space.expert_parallel = !po.no_ep;
    space.context_parallel = !po.no_dcp;
    space.layouts = po.any_layout ? LayoutRule::any : LayoutRule::whole_nodes;
    if (po.redundant_experts) space.redundant_experts = *po.redundant_experts;
    space.kv_formats = kv_flags(o);
    space.weights = searched_weights(o.weight_dtype, o.expert_dtype);
    Serving serving = parse_serving(o);
    const std::uint64_t concurrency = o.concurrency.value_or(1);
    const std::optional<std::uint64_t> context_flag = o.context;
    if (context_flag) check_context_holds_split(*context_flag, split);
    // A profile is one GPU's calibration: the search is then over that GPU alone.
    if (!o.profile.empty() && (o.gpu.empty() || o.gpu.find(',') != std::string::npos))
        usage_error("--gpu", "one GPU beside --profile (a calibration is of one GPU)",
                    o.gpu.empty() ? "every bundled GPU" : o.gpu);
    const HfImportOptions import = import_options(o);
    const ResolvedModel rm = resolve_model_flags(o, ctx, import);
    // The drafter of --speculative-method draft_model, read as fit reads it.
    if (serving.speculation.method == DraftMethod::draft_model)
        serving.speculation.draft_model =
            resolve_model(o.draft_model, ctx, "--draft-model", import).get();
    const std::uint64_t context =
        demand_context(rm.get().config(), context_flag, split.prompt, split.output);
    const std::vector<ResolvedGpu> gpus = resolve_gpu_list(o.gpu, ctx);
    for (const ResolvedGpu& g : gpus) space.gpus.push_back(g.spec);
    const std::optional<CalibrationProfile> profile = read_profile_flag(o);
    if (profile) {
        // The estimate's compute fraction is of the peak the first weight format runs at.
        const WeightOptions w =
            served_weights(rm.get(), space.weights.front(), serving.engine, serving.engine_version);
        serving = apply_profile(*profile, std::move(serving), o.profile, gpus.front().id,
                                matmul_compute(w, gpus.front().spec));
    }

    const std::uint64_t shared_prefix = shared_prefix_flag(o, split.prompt);
    const Demand demand{context,      concurrency,   split.prompt,
                        split.output, shared_prefix, parse_run_shape(o, split)};
    if (asked.prices) asked.prices = load_price_table(po.prices);
    const ReviewedPlan plan = review_plan(rm.get(), space, serving, demand, asked);
    const PlanAnswer& p = plan.search;
    const PlanRanking rank = plan.ranking;
    const bool by_cost = rank == PlanRanking::cost;
    const std::optional<PriceTable>& prices = asked.prices;
    const bool targeted = asked.targets.ttft || asked.targets.tpot;
    const LatencyTargets& targets = asked.targets;
    const std::optional<ReviewAnswer> review =
        plan.reviewed ? std::optional(plan.order) : std::nullopt;
    // The candidates in the plan's order, each with its price when prices were given.
    std::vector<const PlanCandidate*> order;
    std::vector<const ReviewedCandidate*> priced;
    for (std::size_t i = 0; i < plan.order.ranked.size(); ++i) {
        order.push_back(&plan.at(i));
        priced.push_back(prices ? &plan.order.ranked[i] : nullptr);
    }

    Report rep;
    rep.command = "plan";
    if (p.fits.empty()) {
        rep.verdict = fmt::format(
            "NO REPLICA of up to {} GPUs fits {} sequences of {} tokens ({} layouts searched)",
            max_gpus, grouped(concurrency), grouped(context), p.searched);
        // Nothing even starts: say what stops the largest replica, as fit would.
        if (p.refused)
            *rep.verdict += fmt::format("; none starts: on {} x {} ({}), {}",
                                        p.refused->answer.replica_gpus, gpus[p.refused->gpu].id,
                                        layout_text(p.refused->answer.replica.parallel),
                                        refusal_text(p.refused->answer));
    } else if (order.empty()) {
        rep.verdict = fmt::format(
            "NO REPLICA meets the targets: {} fit {} sequences of {} tokens, {} miss the TTFT "
            "target, {} the TPOT target, {} have no estimate{}",
            p.fits.size(), grouped(concurrency), grouped(context), review->over_ttft,
            review->over_tpot, review->without_estimate,
            by_cost ? fmt::format(", {} no price", review->without_price) : std::string());
    } else {
        const ReplicaAnswer& best = order.front()->answer;
        rep.verdict = fmt::format(
            "{}: {} x {} ({}, KV {}, weights {}) holds {} sequences of {} tokens; room for {}",
            rank == PlanRanking::fastest    ? "FASTEST"
            : by_cost                       ? "CHEAPEST PER TOKEN"
            : rank == PlanRanking::estimate ? "MOST TOKENS/S PER GPU"
                                            : "SMALLEST",
            best.gpus, gpus[order.front()->gpu].id, layout_text(best.replica.parallel),
            name(best.replica.kv.dtype), describe_weights(best.replica.weights),
            grouped(concurrency), grouped(context), grouped(best.max_concurrency));
        if (best.estimate)
            *rep.verdict += fmt::format(
                "; by the estimate {:.1f} tokens/s per GPU, TPOT {} (bound {}), TTFT {} (bound "
                "{})",
                best.estimate->tokens_per_s_per_gpu, best.estimate->tpot, best.estimate->itl_bound,
                best.estimate->ttft, best.estimate->ttft_bound);
        if (!priced.empty() && priced.front() && priced.front()->dollars_per_million_tokens)
            *rep.verdict += fmt::format("; ${:.3f} per million output tokens",
                                        *priced.front()->dollars_per_million_tokens);
    }
    rep.heading = fmt::format(
        "{}: {} GPU type{} x 1-{} GPUs x {} x {} KV dtype{} x {} weight format{}, engine {}; {} "
        "layouts searched, {} fit",
        display_name(rm), gpus.size(), gpus.size() == 1 ? "" : "s", max_gpus,
        fmt::format("tp/pp{}{}{}", space.data_parallel ? "/dp" : "",
                    space.expert_parallel ? "/ep" : "", space.context_parallel ? "/dcp" : ""),
        space.kv_formats.size(), space.kv_formats.size() == 1 ? "" : "s", space.weights.size(),
        space.weights.size() == 1 ? "" : "s", engine_text(serving), p.searched, p.fits.size());
    rep.inputs = {{"model", cell_text(rm.id)},
                  {"context_tokens", cell_count(context, "tokens")},
                  {"concurrency", cell_count(concurrency, "sequences")},
                  {"engine", cell_text(std::string(name(serving.engine)))},
                  {"max_gpus", cell_count(max_gpus, "")},
                  {"rank", cell_text(name(rank))}};
    append_engine_version_input(rep, serving);
    if (split.given()) {
        rep.inputs.push_back({"prompt_tokens", cell_count(*split.prompt, "tokens")});
        rep.inputs.push_back({"output_tokens", cell_count(*split.output, "tokens")});
        append_run_shape_inputs(rep, demand.run);
    }
    const bool with_prefix = shared_prefix != 0;
    if (with_prefix)
        rep.inputs.push_back({"shared_prefix_tokens", cell_count(shared_prefix, "tokens")});
    append_model_notes(rep, rm);
    rep.figures.push_back({"found", "found", cell_bool(!p.fits.empty()), {}, {}, false});
    rep.figures.push_back(
        {"layouts_searched", "layouts searched", cell_count(p.searched, ""), {}, {}, false});
    std::vector<Column> columns = {{"rank", "#"},
                                   {"gpu", "GPU"},
                                   {"gpus", "GPUs"},
                                   {"tp", "tp"},
                                   {"pp", "pp"},
                                   {"dp", "dp"},
                                   {"ep", "ep"},
                                   {"dcp", "dcp"},
                                   {"kv_dtype", "KV"},
                                   {"weights", "weights"},
                                   {"kv_budget_bytes_per_gpu", "KV budget/GPU"},
                                   {"kv_tokens_capacity", "KV tokens"},
                                   {"max_concurrency", "max seqs"},
                                   {"headroom_bytes_per_gpu", "headroom/GPU"},
                                   {"tpot_seconds", "TPOT bound"}};
    if (with_prefix)
        columns.insert(columns.begin() + 13, prefix_columns.begin(), prefix_columns.end());
    if (split.given())
        columns.insert(columns.end(),
                       {{"tpot_estimate_seconds", "TPOT est."},
                        {"itl_estimate_seconds", "ITL est.", false},
                        {"ttft_estimate_seconds", "TTFT est."},
                        {"tokens_per_second_estimate", "tokens/s est."},
                        {"tokens_per_second_per_gpu_estimate", "tokens/s/GPU est."}});
    std::vector<Column> ranked_columns = columns;
    if (prices)
        ranked_columns.insert(ranked_columns.end(),
                              {{"dollars_per_gpu_hour", "$/GPU-h"},
                               {"dollars_per_million_output_tokens", "$/M tokens"}});
    Table t;
    t.key = "candidates";
    t.columns = ranked_columns;
    for (std::size_t i = 0; i < order.size() && i < top; ++i)
        t.rows.push_back(
            candidate_row(i + 1, *order[i], gpus, split.given(), with_prefix, priced[i]));
    // Nothing to rank (none starts, or none meets the targets): no header without rows in text.
    t.in_text = !t.rows.empty();
    rep.tables.push_back(std::move(t));
    rep.csv_table = 0;
    if (with_prefix)
        rep.notes.push_back(fmt::format(
            "shared prefix: every request starts with the same {} tokens, whose full blocks each "
            "dp rank's cache holds once (prefix caching); max seqs counts it, unshared is the "
            "figure with every sequence holding its own copy",
            grouped(shared_prefix)));
    if (po.pareto) {
        Table front;
        front.key = "pareto";
        front.title =
            "Pareto front: no other candidate has as many tokens/s per GPU and as low a TPOT "
            "(estimates), lowest TPOT first";
        front.columns = ranked_columns;
        const std::vector<std::size_t>& idx = plan.pareto;
        for (std::size_t i = 0; i < idx.size(); ++i)
            front.rows.push_back(candidate_row(i + 1, *order[idx[i]], gpus, split.given(),
                                               with_prefix, priced[idx[i]]));
        rep.tables.push_back(std::move(front));
        rep.notes.push_back(fmt::format(
            "Pareto front: {} of {} candidates{} are not dominated on (tokens/s per GPU, TPOT "
            "estimate)",
            idx.size(), order.size(), plan.reviewed ? " meeting the targets" : ""));
    }
    if (p.fits.empty() && !p.nearest_misses.empty()) {
        // Another GPU: among those searched, or every bundled one when --gpu narrowed the search.
        std::vector<GpuSpec> others;
        if (o.gpu.empty())
            others = space.gpus;
        else
            for (const ResolvedGpu& g : bundled_gpus(ctx)) others.push_back(g.spec);
        Table misses;
        misses.key = "nearest_misses";
        misses.title = "Nearest misses (the most sequences held) and what would make each fit";
        misses.columns = columns;
        misses.columns.insert(misses.columns.end(),
                              {{"fits_with_gpus", "fits on GPUs"},
                               {"fits_with_fp8_kv_max_concurrency", "fp8 KV holds"},
                               {"fits_with_context_tokens", "fits at context"},
                               {"fits_with_other_gpu", "fits on GPU"}});
        for (std::size_t i = 0; i < p.nearest_misses.size(); ++i) {
            const PlanCandidate& miss = p.nearest_misses[i];
            const WhatWouldFit w = what_would_fit(
                candidate_deployment(rm.get(), space, serving, miss), demand, others);
            std::vector<Cell> row = candidate_row(i + 1, miss, gpus, split.given(), with_prefix);
            const std::vector<Cell> fixes = fix_cells(w);
            row.insert(row.end(), fixes.begin(), fixes.end());
            misses.rows.push_back(std::move(row));
            rep.notes.push_back(fix_note(i + 1, gpus[miss.gpu], miss.answer, w, demand));
        }
        rep.tables.push_back(std::move(misses));
        // fp8 weights are the smallest format the engines make at load: suggested only to misses
        // whose weights are wider.
        const bool wider_than_fp8 = std::any_of(
            p.nearest_misses.begin(), p.nearest_misses.end(),
            [](const auto& m) { return value_bits(m.answer.replica.weights.format) > 8; });
        rep.notes.push_back(fmt::format(
            "none fits: each miss shows the fewest GPUs of its layout that hold the demand (more "
            "replicas), what fp8 KV holds when it holds it all, the longest context that holds "
            "it, and another GPU that does (each evaluated as fit would); {}--max-gpus may find "
            "more",
            wider_than_fp8 ? "a smaller weight format (--weight-dtype fp8) or " : ""));
    }
    if (!order.empty()) {
        // The command lines of the ranked rows, in their order: "candidate N" is row N (shown
        // when N is within --top). None when no fit meets the targets.
        PlanAnswer shown;
        for (const PlanCandidate* c : order) shown.fits.push_back(*c);
        append_command_notes(rep,
                             serve_commands(shown, rm.get(), space, serving, demand,
                                            {.model = served_model(rm, ctx)}),
                             true);
    }
    if (order.size() > top)
        rep.notes.push_back(fmt::format("{} more fit; --top N shows more", order.size() - top));
    if (review) {
        if (review->left_out() > 0)
            rep.notes.push_back(fmt::format(
                "left out of {} that fit: {} miss the TTFT target, {} the TPOT target, {} have no "
                "estimate, {} no price",
                p.fits.size(), review->over_ttft, review->over_tpot, review->without_estimate,
                review->without_price));
        if (targeted)
            rep.notes.push_back(fmt::format(
                "targets on the latency estimate: TTFT {}, TPOT {}",
                targets.ttft ? fmt::format("at most {}", *targets.ttft) : std::string("none"),
                targets.tpot ? fmt::format("at most {}", *targets.tpot) : std::string("none")));
    }
    if (prices)
        rep.notes.push_back(fmt::format(
            "$ per million output tokens = $/GPU-hour / (output tokens/s per GPU by the latency "
            "estimate x 3,600 s) x 10^6, at the load above; prices from {} ({}, {}){}",
            po.prices, prices->date, prices->source,
            prices->example ? ": an EXAMPLE, not a quote" : ""));
    // The order of the ranked rows: none when no layout fits or none meets the targets.
    const char* ranking =
        by_cost ? "ranked by $ per million output tokens, then output tokens/s per GPU, then GPUs"
        : rank == PlanRanking::fastest
            ? "ranked by the decode-step bound at the target concurrency, then GPUs"
        : rank == PlanRanking::estimate
            ? "ranked by output tokens/s per GPU by the latency estimate at the load (the demand "
              "served on the fewest GPU-seconds per token), then GPUs, then the TPOT estimate; the "
              "bound stands beside it (--rank gpus or fastest ranks without the estimate)"
            : "ranked by GPUs, then sequences held, then the decode-step bound at the target "
              "concurrency";
    if (!order.empty()) rep.notes.push_back(ranking);
    if (profile && profile->has_reserve)
        rep.notes.push_back(fmt::format("reserve from the profile {} ({}, fitted on {} from {})",
                                        o.profile, profile->model, gpus.front().id,
                                        profile->source));
    if (split.given()) {
        rep.notes.push_back(fmt::format(
            "the estimate assumes a closed loop of {} clients, every request {} tokens in and {} "
            "out, at most max seqs running at once, chunked prefill as vLLM V1 schedules; the TPOT "
            "bound is at {} sequences of {} tokens (a request's last step)",
            grouped(concurrency), grouped(*split.prompt), grouped(*split.output),
            grouped(concurrency), grouped(context)));
        // The parameters of each GPU type shown, once.
        std::vector<std::size_t> seen;
        for (std::size_t i = 0; i < p.fits.size() && i < top; ++i) {
            const PlanCandidate& c = p.fits[i];
            if (std::find(seen.begin(), seen.end(), c.gpu) != seen.end()) continue;
            seen.push_back(c.gpu);
            const ReplicaAnswer& a = c.answer;
            rep.notes.push_back(
                a.estimate ? fmt::format("estimate parameters on {}: {}", gpus[c.gpu].id,
                                         estimate_basis_text(a.estimate_basis, a.gpu_family,
                                                             a.estimate_params, o.profile))
                           : fmt::format("{}: {}", gpus[c.gpu].id, no_estimate_text(a)));
        }
    }
    render(rep, o.format, o.explain, *ctx.out);
}

}  // namespace

void register_plan(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App* sub = app.add_subcommand(
        "plan",
        "The smallest replicas that hold a workload, over GPU types x counts x tp/pp x KV dtypes x "
        "weight formats");
    add_options(*sub, o->common,
                opt_model | opt_gpu | opt_dtypes | opt_dtype_lists | opt_workload | opt_budget |
                    opt_lengths | opt_run | opt_prefix | opt_hit_rate | opt_profile | opt_output);
    sub->get_option("--gpu")->description(
        "GPUs to search, comma-separated ids or spec paths (default: every bundled GPU)");
    sub->get_option("--kv-dtype")->description("KV dtypes to search, comma-separated (bf16,fp8)");
    sub->get_option("--weight-dtype")
        ->description(
            "Weight formats to search, comma-separated (checkpoint,fp8); default: the "
            "checkpoint's own");
    typed(*sub, "--max-gpus", o->max_gpus, parse_search_bound, "The most GPUs a replica may have")
        ->default_str("8");
    typed(*sub, "--max-tp", o->max_tp, parse_search_bound,
          "The largest tensor-parallel degree (one NVLink domain)")
        ->default_str("8");
    typed(*sub, "--top", o->top, parse_whole, "Candidates shown")->default_str("10");
    typed(*sub, "--rank", o->rank,
          enum_flag(plan_ranking_names,
                    "estimate (the most output tokens/s per GPU by the latency estimate), cost "
                    "(the fewest $ per million output tokens, with --prices), gpus (fewest GPUs "
                    "first) or fastest (the lowest TPOT bound first)"),
          "estimate: the most output tokens/s per GPU by the latency estimate (the "
          "default with --prompt-tokens and --output-tokens); gpus: fewest GPUs first "
          "(the default without them); cost: the fewest $ per million output tokens "
          "(with --prices); fastest: the lowest decode bound "
          "first");
    sub->add_option("--prices", o->prices,
                    "A price file (US$ per GPU-hour by GPU id, its date and source; "
                    "configs/prices/example.json is an example): $ per million output tokens per "
                    "candidate");
    typed(*sub, "--ttft-ms", o->ttft_ms, parse_positive,
          "Leave out candidates whose TTFT estimate passes this many milliseconds");
    typed(*sub, "--tpot-ms", o->tpot_ms, parse_positive,
          "Leave out candidates whose TPOT estimate passes this many milliseconds");
    sub->add_flag("--pareto", o->pareto,
                  "List the candidates not dominated on tokens/s per GPU and TPOT (estimates)");
    sub->add_flag("--no-dp", o->no_dp, "Leave attention data parallelism out of the search");
    sub->add_flag("--no-ep", o->no_ep, "Leave expert parallelism out of the search");
    sub->add_flag("--no-dcp", o->no_dcp, "Leave decode context parallelism out of the search");
    sub->add_flag(
        "--any-layout", o->any_layout,
        "Search every GPU count and split the engine takes, not only whole nodes (a power "
        "of two within a node, pipeline stages across nodes)");
    typed(*sub, "--redundant-experts", o->redundant_experts, parse_redundant_experts,
          "Physical experts beyond the routed ones in the expert-parallel layouts (EPLB)");
    sub->callback([o, &ctx] { run_plan(*o, ctx); });
}

}  // namespace kvplan::cli
