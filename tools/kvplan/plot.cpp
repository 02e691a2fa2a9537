#include "plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kvplan/plan/curves.hpp>
#include <kvplan/svg.hpp>
#include <vector>

#include "answer.hpp"
#include "report.hpp"

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

void write_roofline_plot(const std::string& path, const Deployment& d, std::uint64_t context,
                         std::optional<std::uint64_t> batch, const RooflineOptions& o,
                         const std::string& subject) {
    svg::Figure fig;
    fig.title = subject + ": the roofline";
    const std::string where = fmt::format("{}, {} tokens of context", subject, grouped(context));

    // 1. Throughput against batch, the KV wall and the knee marked.
    const ReplicaAnswer at = evaluate(d, {.context = context, .concurrency = 1},
                                      {.contexts = false, .decode = false, .roofline = o});
    const std::uint64_t wall = at.starts() ? at.max_concurrency : 0;
    std::uint64_t hi = 1024;
    while (hi < 2 * std::max<std::uint64_t>(wall, batch.value_or(1))) hi *= 2;
    std::vector<std::uint64_t> batches = doubling(1, hi, batch);
    if (wall >= 1 && std::find(batches.begin(), batches.end(), wall) == batches.end()) {
        batches.push_back(wall);
        std::sort(batches.begin(), batches.end());
    }
    const BatchCurve bc = batch_curve(d, context, batches, o);
    svg::LineChart t;
    t.title = "Decode throughput against batch at " + grouped(context) + " tokens";
    t.x.label = "batch (sequences decoding at once)";
    t.x.log = true;
    t.y.label = "tokens/s (bound)";
    t.y.log = true;
    svg::Series replica, per_gpu, replica_past, gpu_past;
    replica.name = "replica";
    replica.color = "#1f77b4";
    replica.width = 3;
    per_gpu.name = fmt::format("per GPU (of {})", bc.replica_gpus);
    per_gpu.color = "#ff7f0e";
    replica_past.name = "past the KV wall: the cache cannot hold it";
    replica_past.color = "#999999";
    replica_past.dashed = true;
    gpu_past.color = "#999999";
    gpu_past.dashed = true;
    for (const DecodePoint& p : bc.points) {
        const double x = static_cast<double>(p.batch);
        const bool held = p.batch <= bc.kv_wall;
        if (held || p.batch == bc.kv_wall) {
            replica.points.push_back({x, p.tokens_per_s});
            per_gpu.points.push_back({x, p.tokens_per_s_per_gpu});
        }
        if (!held || p.batch == bc.kv_wall) {
            replica_past.points.push_back({x, p.tokens_per_s});
            gpu_past.points.push_back({x, p.tokens_per_s_per_gpu});
        }
    }
    t.series = {replica, per_gpu, replica_past, gpu_past};
    if (bc.at_wall) {
        svg::Marker m;
        m.x = static_cast<double>(bc.kv_wall);
        m.label = bc.wall_is_sequence_cap
                      ? fmt::format("sequence cap: {}", grouped(bc.kv_wall))
                      : fmt::format("KV wall: {} sequences", grouped(bc.kv_wall));
        t.markers.push_back(m);
    }
    if (bc.knee) {
        svg::Marker m;
        m.x = static_cast<double>(*bc.knee);
        m.label = fmt::format("compute-bound from batch {}", grouped(*bc.knee));
        m.color = "#2ca02c";
        t.markers.push_back(m);
    }
    if (batch) {
        const DecodePoint p = decode_point(decode_costs(at.replica, o), *batch, context);
        svg::Marker m;
        m.x = static_cast<double>(*batch);
        m.y = p.tokens_per_s;
        m.label = fmt::format("batch {}: {:.0f} tokens/s", grouped(*batch), p.tokens_per_s);
        m.color = "#111111";
        t.markers.push_back(m);
    }
    t.note =
        where +
        (bc.knee ? std::string()
                 : fmt::format("; memory-bound at every batch up to {}: no knee", grouped(hi))) +
        "; peak figures, a bound";
    fig.panels.push_back(t);

    // 2. TPOT against context at a fixed batch.
    const std::uint64_t fixed = batch ? *batch : std::max<std::uint64_t>(wall, 1);
    std::uint64_t chi = 256;
    while (chi < std::max<std::uint64_t>(2 * context, context_limit(d.model.config()).tokens))
        chi *= 2;
    const std::vector<std::uint64_t> contexts = doubling(128, chi, context);
    Deployment longer = d;
    longer.serving.allow_long_context = true;
    const ContextCurve cc = context_curve(longer, fixed, contexts, o);
    svg::LineChart tp;
    tp.title = fmt::format("Time per output token against context at batch {}", grouped(fixed));
    tp.x.label = "context per sequence (tokens)";
    tp.x.log = true;
    tp.y.label = "TPOT bound (ms)";
    tp.y.log = true;
    svg::Series tpot;
    tpot.name = "TPOT bound";
    tpot.width = 3;
    tpot.color = "#1f77b4";
    for (const DecodePoint& p : cc.points)
        tpot.points.push_back({static_cast<double>(p.context), p.tpot.in(milliseconds)});
    tp.series = {tpot};
    if (cc.max_context && *cc.max_context >= 1) {
        svg::Marker m;
        m.x = static_cast<double>(*cc.max_context);
        m.label =
            fmt::format("cache holds {} up to {} tokens", grouped(fixed), grouped(*cc.max_context));
        tp.markers.push_back(m);
    }
    {
        const DecodePoint p = decode_point(decode_costs(at.replica, o), fixed, context);
        svg::Marker m;
        m.x = static_cast<double>(context);
        m.y = p.tpot.in(milliseconds);
        m.label = fmt::format("{} tokens: {:.1f} ms", grouped(context), p.tpot.in(milliseconds));
        m.color = "#111111";
        tp.markers.push_back(m);
    }
    tp.note = fmt::format("{}; weights and every sequence's KV read each step, at peak bandwidth",
                          subject);
    fig.panels.push_back(tp);

    // 3 and 4. Prefill with and without fused attention.
    const std::vector<PrefillAttention> pre = prefill_curve(longer, contexts, o);
    svg::LineChart traffic, ttft;
    traffic.title = "Prefill HBM traffic against prompt length";
    traffic.x.label = "prompt (tokens)";
    traffic.x.log = true;
    traffic.y.label = "HBM traffic per GPU (GB)";
    traffic.y.log = true;
    ttft = traffic;
    ttft.title = "Prefill: the TTFT bound against prompt length";
    ttft.y.label = "TTFT bound (ms)";
    svg::Series fused_b, unfused_b, fused_t, unfused_t;
    fused_b.name = fused_t.name = "fused attention (FlashAttention)";
    fused_b.color = fused_t.color = "#1f77b4";
    fused_b.width = fused_t.width = 3;
    unfused_b.name = unfused_t.name = "unfused: N x N scores written and read";
    unfused_b.color = unfused_t.color = "#d62728";
    for (const PrefillAttention& a : pre) {
        const double x = static_cast<double>(a.prompt_tokens);
        fused_b.points.push_back({x, a.fused_bytes.in(GB)});
        unfused_b.points.push_back({x, a.unfused_bytes.in(GB)});
        fused_t.points.push_back({x, a.fused_ttft().in(milliseconds)});
        unfused_t.points.push_back({x, a.unfused_ttft.in(milliseconds)});
    }
    traffic.series = {fused_b, unfused_b};
    ttft.series = {fused_t, unfused_t};
    for (const PrefillAttention& a : pre)
        if (a.prompt_tokens == context) {
            svg::Marker m;
            m.x = static_cast<double>(context);
            m.y = a.unfused_bytes.in(GB);
            m.label = fmt::format("{:.1f}x the bytes at {} tokens", a.unfused_bytes_ratio(),
                                  grouped(context));
            m.color = "#111111";
            traffic.markers.push_back(m);
            svg::Marker n;
            n.x = static_cast<double>(context);
            n.y = a.unfused_ttft.in(milliseconds);
            n.label = fmt::format("{:.0f} ms unfused, {:.0f} ms fused",
                                  a.unfused_ttft.in(milliseconds), a.fused_ttft().in(milliseconds));
            n.color = "#111111";
            ttft.markers.push_back(n);
        }
    traffic.note = fmt::format(
        "{}; one prompt; weights read + KV written, unfused adds 4 x N^2 x heads x layers x 2 B",
        subject);
    ttft.note =
        fmt::format("{}; max(bytes / bandwidth, FLOPs / peak) on the slowest stage", subject);
    fig.panels.push_back(traffic);
    fig.panels.push_back(ttft);
    svg::write(fig, path);
}

void write_compare_plot(const std::string& path,
                        const std::vector<std::pair<std::string, Deployment>>& rows,
                        std::uint64_t context, const std::string& subject) {
    svg::Figure fig;
    fig.title = subject;
    svg::LineChart t, w;
    t.title = "Decode throughput per GPU against batch at " + grouped(context) + " tokens";
    t.x.label = "batch (sequences decoding at once)";
    t.x.log = true;
    t.y.label = "tokens/s per GPU (bound)";
    t.y.log = true;
    w.title = "The KV wall against context";
    w.x.label = "context per sequence (tokens)";
    w.x.log = true;
    w.y.label = "max concurrency (sequences at once)";
    w.y.log = true;
    std::uint64_t chi = 256;
    while (chi < 2 * context) chi *= 2;
    const std::vector<std::uint64_t> contexts = doubling(128, chi, context);
    std::size_t i = 0;
    for (const auto& [name, d] : rows) {
        const std::string colour = svg::detail::palette[i++ % std::size(svg::detail::palette)];
        const ReplicaAnswer at = evaluate(d, {.context = context, .concurrency = 1},
                                          {.contexts = false, .decode = false});
        const std::uint64_t wall = at.starts() ? at.max_concurrency : 0;
        svg::Series s;
        s.name = wall >= 1 ? fmt::format("{} (wall {})", name, grouped(wall))
                           : fmt::format("{} (does not start)", name);
        s.color = colour;
        s.width = 2.5;
        if (wall >= 1) {
            const std::vector<std::uint64_t> batches = doubling(1, wall, wall);
            const BatchCurve bc = batch_curve(d, context, batches);
            for (const DecodePoint& p : bc.points)
                s.points.push_back({static_cast<double>(p.batch), p.tokens_per_s_per_gpu});
            svg::Marker end;  // the wall: where the line stops
            end.x = static_cast<double>(wall);
            end.y = bc.at_wall->tokens_per_s_per_gpu;
            end.color = colour;
            t.markers.push_back(end);
        }
        t.series.push_back(s);
        svg::Series ws;
        ws.name = name;
        ws.color = colour;
        ws.width = 2.5;
        for (const WallPoint& p : wall_curve(d, contexts))
            if (p.kv_wall >= 1)
                ws.points.push_back(
                    {static_cast<double>(p.context), static_cast<double>(p.kv_wall)});
        w.series.push_back(ws);
    }
    svg::Marker here;
    here.x = static_cast<double>(context);
    here.label = grouped(context) + " tokens";
    here.color = "#111111";
    w.markers.push_back(here);
    t.note = subject + "; each line stops at its KV wall (the dot); peak figures, a bound";
    w.note = subject +
             "; evaluate()'s max concurrency (flat where the engine's sequence cap binds), past "
             "the model's context limit too";
    fig.panels = {t, w};
    svg::write(fig, path);
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
    engine_line.name =
        fmt::format("{} (block {}){}", name(target.serving.engine), target.serving.block_size,
                    demand.shared_prefix_tokens == 0
                        ? std::string()
                        : fmt::format(", shared prefix {}", grouped(demand.shared_prefix_tokens)));
    engine_line.width = 3;
    exact.name = "exact bytes, no blocks";
    exact.dashed = true;
    // Every point is evaluate()'s answer at that context, past the model's limit too, with the
    // same system prompt at every context.
    const std::vector<std::uint64_t> contexts = doubling(128, hi, demand.context);
    for (const ConcurrencyPoint& p : concurrency_curve(d, demand.shared_prefix_tokens, contexts)) {
        const double x = static_cast<double>(p.context);
        engine_line.points.push_back({x, static_cast<double>(p.max_concurrency)});
        exact.points.push_back({x, p.exact_sequences});
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
                         d.parallel.pp, name(d.kv_format().dtype), target.kv_budget.in(GiB));
    svg::write(c, path);
}

}  // namespace kvplan::cli
