#include "plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kvplan/svg.hpp>
#include <vector>

#include "answer.hpp"

namespace kvplan::cli {

namespace {

/// Powers of two from `lo` to `hi`, with `extra` added in order (when given).
std::vector<std::uint64_t> doubling(std::uint64_t lo, std::uint64_t hi,
                                    std::optional<std::uint64_t> extra) {
    std::vector<std::uint64_t> v;
    for (std::uint64_t x = lo; x <= hi; x *= 2) v.push_back(x);
    if (extra && std::find(v.begin(), v.end(), *extra) == v.end()) {
        v.push_back(*extra);
        std::sort(v.begin(), v.end());
    }
    return v;
}

}  // namespace

void write_roofline_plot(const std::string& path, const Replica& r, std::uint64_t context,
                         std::optional<std::uint64_t> batch, const RooflineOptions& o,
                         const std::string& title) {
    std::uint64_t hi = 1024;
    while (batch && hi < 2 * *batch) hi *= 2;
    svg::LineChart c;
    c.title = title;
    c.x.label = "batch (sequences decoding at once)";
    c.x.log = true;
    c.y.label = "time per output token (ms)";
    c.y.log = true;
    svg::Series memory, compute, bound;
    memory.name = "memory: bytes / bandwidth";
    memory.dashed = true;
    compute.name = "compute: FLOPs / peak";
    compute.dashed = true;
    bound.name = "TPOT bound";
    bound.width = 3;
    bound.color = "#111111";
    for (std::uint64_t b : doubling(1, hi, batch)) {
        const DecodeBound d = decode_bound(r, b, context, o);
        Seconds mem{}, cmp{};
        for (const StageStep& st : d.stage_steps()) {
            mem += st.memory_time;
            cmp += st.compute_time;
        }
        const double x = static_cast<double>(b);
        memory.points.push_back({x, mem.in(milliseconds)});
        compute.points.push_back({x, cmp.in(milliseconds)});
        bound.points.push_back({x, d.tpot.in(milliseconds)});
    }
    c.series = {bound, memory, compute};  // the bound first, its two lines drawn over it
    if (batch) {
        const DecodeBound d = decode_bound(r, *batch, context, o);
        svg::Marker m;
        m.x = static_cast<double>(*batch);
        m.y = d.tpot.in(milliseconds);
        m.label = fmt::format("batch {}: {:.2f} ms", *batch, d.tpot.in(milliseconds));
        c.markers.push_back(m);
    }
    if (const auto turn = compute_bound_batch(r, context, o, hi)) {
        svg::Marker m;
        m.x = static_cast<double>(*turn);
        m.label = fmt::format("compute-bound from batch {}", *turn);
        m.color = "#2ca02c";
        c.markers.push_back(m);
    }
    c.note = fmt::format(
        "{} on {} x {} (tp {} x pp {}), {} tokens of context per sequence; peak "
        "bandwidth and FLOP/s, a lower bound",
        r.model.name().c_str(), r.gpus(), r.gpu.name.c_str(), r.parallel.tp, r.parallel.pp, context);
    svg::write(c, path);
}

void write_fit_plot(const std::string& path, const Deployment& d, const Demand& demand,
                    const std::string& title) {
    // Up to the power of two at or past twice the target (or the model's limit).
    const std::uint64_t want =
        std::max<std::uint64_t>(2 * demand.context, context_limit(d.model.config()).tokens);
    std::uint64_t hi = 256;
    while (hi < want) hi *= 2;
    svg::LineChart c;
    c.title = title;
    c.x.label = "context per sequence (tokens)";
    c.x.log = true;
    c.y.label = "sequences at once (max concurrency)";
    c.y.log = true;
    const ReplicaAnswer target = evaluate(d, demand);
    svg::Series engine_line, exact;
    engine_line.name = fmt::format("{} (block {})", name(target.serving.engine),
                                   target.serving.block_size);
    engine_line.width = 3;
    exact.name = "exact bytes, no blocks";
    exact.dashed = true;
    // Every point is evaluate()'s answer at that context, past the model's limit too.
    Deployment at = d;
    at.serving.allow_long_context = true;
    const EvaluateOptions quick{.contexts = false, .decode = false};
    for (std::uint64_t ctx : doubling(128, hi, demand.context)) {
        const ReplicaAnswer a = evaluate(at, {.context = ctx, .concurrency = 1}, quick);
        const double x = static_cast<double>(ctx);
        engine_line.points.push_back({x, static_cast<double>(a.max_concurrency)});
        const Shard s = a.replica.layout().stage(a.limiting_stage);
        const Bytes per_seq = kv_bytes_per_sequence(a.replica.model, a.replica.kv, ctx, s);
        exact.points.push_back({x, per_seq.is_zero() ? 0.0 : a.kv_budget.in(B) / per_seq.in(B)});
    }
    c.series = {engine_line, exact};
    svg::Marker m;
    m.x = static_cast<double>(demand.context);
    m.y = static_cast<double>(demand.concurrency);
    m.label = fmt::format("target: {} x {} tokens ({})", grouped(demand.concurrency),
                          grouped(demand.context), target.fits() ? "fits" : "does not fit");
    m.color = target.fits() ? "#2ca02c" : "#d62728";
    c.markers.push_back(m);
    c.note = fmt::format("{} on {} x {} (tp {} x pp {}), KV in {}; KV budget {:.2f} GiB per GPU",
                         d.model.name().c_str(), target.gpus, d.gpu.name.c_str(), d.parallel.tp,
                         d.parallel.pp, name(d.kv.dtype), target.kv_budget.in(GiB));
    svg::write(c, path);
}

}  // namespace kvplan::cli
