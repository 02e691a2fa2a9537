// Block pools: the library's BlockPool (kvplan/admission/block_pool.hpp) with per-request
// objects that keep what they point to; Deployment.block_pool() is the pool the engine builds.

#include <atomic>
#include <kvplan/admission.hpp>
#include <kvplan/admission/engine_pools.hpp>
#include <kvplan/plan/check.hpp>

#include "common.hpp"

namespace kvplan::python {

namespace {

struct PyPrefix {
    SharedPrefix p;
    std::uint64_t pool = 0;  ///< the pool whose blocks it holds while held
};

struct PyPool;

struct PyRequest {
    RequestBlocks r;
    std::uint64_t pool = 0;  ///< the pool that admitted it
    py::object prefix;       ///< keeps the SharedPrefix that r.prefix points to alive
};

struct PyPool {
    BlockPool pool;
    std::uint64_t id;

    static std::uint64_t next_id() {
        static std::atomic<std::uint64_t> n{0};
        return ++n;
    }
    explicit PyPool(const BlockPoolSpec& s, AdmitPolicy p) : pool(s, p), id(next_id()) {}
};

struct PyAdmission {
    AdmitResult res;
    py::object request;  ///< a Request when admitted, else None
};

AdmitPolicy policy_of(const std::string& s) {
    if (s == "engine") return AdmitPolicy::engine;
    if (s == "no_preemption") return AdmitPolicy::no_preemption;
    usage("policy", "'engine' or 'no_preemption'", "'" + s + "'");
}

const char* policy_name(AdmitPolicy p) {
    return p == AdmitPolicy::engine ? "engine" : "no_preemption";
}

BlockGroupKind group_kind_of(const std::string& s) {
    for (const auto& e : block_group_kind_names)
        if (s == e.name) return e.value;
    usage("kind", "'full', 'sliding_window', 'chunked_local' or 'state'", "'" + s + "'");
}

std::shared_ptr<PyPool> make_pool(py::handle num_blocks, py::handle block_size, py::handle groups,
                                  bool null_block, py::handle max_model_len,
                                  py::handle watermark_blocks, bool full_sequence_must_fit,
                                  const std::string& policy) {
    BlockPoolSpec s;
    s.num_blocks = to_count(num_blocks, "num_blocks", "blocks");
    s.null_block = null_block;
    s.max_model_len = to_count(max_model_len, "max_model_len", "tokens", 0);
    s.watermark_blocks = to_count(watermark_blocks, "watermark_blocks", "blocks", 0);
    s.full_sequence_must_fit = full_sequence_must_fit;
    if (groups.is_none()) {
        const std::uint64_t b =
            block_size.is_none() ? 16 : to_count(block_size, "block_size", "tokens");
        if (b > 0xFFFF'FFFFULL) usage("block_size", "at most 4294967295 tokens", std::to_string(b));
        s.groups[0].block_size = static_cast<std::uint32_t>(b);
        s.num_groups = 1;
    } else {
        if (!block_size.is_none())
            usage("block_size", "no block_size beside groups (each group has its own)",
                  std::string(py::str(block_size)));
        if (!py::isinstance<py::sequence>(groups) || PyUnicode_Check(groups.ptr()))
            wrong_type("groups", "a list of kvplan.BlockGroup", groups);
        const py::sequence seq = py::reinterpret_borrow<py::sequence>(groups);
        if (seq.size() == 0 || seq.size() > max_block_groups)
            usage("groups", "1 to 8 BlockGroup", std::to_string(seq.size()));
        for (std::size_t i = 0; i < seq.size(); ++i) {
            if (!py::isinstance<BlockGroup>(seq[i]))
                wrong_type(fmt::format("groups[{}]", i), "a kvplan.BlockGroup", seq[i]);
            s.groups[i] = py::cast<BlockGroup>(seq[i]);
        }
        s.num_groups = static_cast<std::uint32_t>(seq.size());
    }
    return std::make_shared<PyPool>(s, policy_of(policy));  // validate(): InvalidInput
}

PyAdmission admit(PyPool& self, py::handle prompt_h, py::handle max_new_h, py::handle prefix_h,
                  py::handle chunk_h) {
    const BlockPoolSpec& s = self.pool.spec();
    const std::uint64_t prompt = to_count(prompt_h, "prompt", "tokens");
    const std::uint64_t max_new = to_count(max_new_h, "max_new", "tokens");
    const std::uint64_t chunk = to_count(chunk_h, "chunk", "tokens", 0);
    AdmitOptions o{.prefix = nullptr, .chunk = chunk};
    PyPrefix* px = nullptr;
    if (!prefix_h.is_none()) {
        if (!py::isinstance<PyPrefix>(prefix_h)) wrong_type("prefix", "a kvplan.Prefix", prefix_h);
        px = &py::cast<PyPrefix&>(prefix_h);
        const std::uint64_t pt = px->p.tokens;
        if (pt >= prompt)
            usage("prefix", fmt::format("fewer tokens than the prompt's {}", grouped(prompt)),
                  fmt::format("{} tokens", grouped(pt)));
        for (std::uint32_t i = 0; i < s.num_groups; ++i)
            if (s.groups[i].kind != BlockGroupKind::state && pt % s.groups[i].block_size != 0)
                usage("prefix",
                      fmt::format("a multiple of every group's block size ({} tokens)",
                                  s.groups[i].block_size),
                      fmt::format("{} tokens", grouped(pt)));
        const bool held = px->p.holders > 0;
        if (held && px->pool != self.id)
            usage("prefix", "a prefix of this pool (another pool's requests hold it)",
                  "another pool's");
        // A prefix not yet in the cache is computed by the request's first step.
        const std::uint64_t first = chunk == 0 || chunk > prompt ? prompt : chunk;
        if (!held && !px->p.cached && first < pt)
            usage("chunk",
                  fmt::format("at least the prefix's {} tokens: a prefix not yet cached is "
                              "computed by the first step",
                              grouped(pt)),
                  grouped(first));
        o.prefix = &px->p;
    }
    auto req = std::make_unique<PyRequest>();
    PyAdmission out{self.pool.admit(req->r, prompt, max_new, o), py::none()};
    if (out.res) {
        req->pool = self.id;
        if (px != nullptr) {
            req->prefix = py::reinterpret_borrow<py::object>(prefix_h);
            px->pool = self.id;
        }
        out.request = py::cast(std::move(req));
    }
    return out;
}

void check_request(const PyPool& self, const PyRequest& q) {
    if (!q.r.running)
        usage("request", "a running request",
              q.pool == 0 ? "one never admitted" : "a released one");
    if (q.pool != self.id) usage("request", "a request of this pool", "another pool's");
}

GrowResult grow(PyPool& self, PyRequest& q, py::handle n_h) {
    check_request(self, q);
    const RequestBlocks& r = q.r;
    const std::uint64_t n = to_count(n_h, "n", "tokens");
    // The pool's own preconditions (RequestBlocks), refused here rather than aborting.
    const std::uint64_t room = r.tokens_left();
    if (n > room)
        usage("n",
              fmt::format("at most the {} tokens left of prompt + max_new - 1 ({} + {} - 1, {} "
                          "computed)",
                          grouped(room), grouped(r.prompt), grouped(r.max_new), grouped(r.tokens)),
              grouped(n));
    if (self.pool.policy() == AdmitPolicy::no_preemption) {
        // The steps the reservation counted: the admission's chunk until the prompt is in, then
        // one token.
        const std::uint64_t want = r.next_step();
        if (n != want)
            usage("n",
                  fmt::format("{} under no_preemption (the steps its reservation counted: the "
                              "chunk until the prompt is in, then one token)",
                              grouped(want)),
                  grouped(n));
    }
    return self.pool.grow(q.r, n);
}

std::uint64_t release(PyPool& self, PyRequest& q) {
    check_request(self, q);
    const std::uint64_t freed = self.pool.release(q.r);
    q.prefix = py::object();
    return freed;
}

std::shared_ptr<PyPool> pool_of(const std::shared_ptr<PyDeployment>& d, py::handle context,
                                const std::string& policy) {
    const AdmitPolicy p = policy_of(policy);
    const ReplicaAnswer a =
        evaluate(d->deployment, demand_of(d->default_context, context, py::int_(1)), fast_options,
                 d->prepared);
    if (!a.starts())
        throw InvalidInput(detail::text("block_pool: expected an engine that starts, found ",
                                        name(a.refusal), " (", detail::check::refusal_reason(a),
                                        ")"));
    switch (a.serving.engine) {
        case Engine::vllm:
            return std::make_shared<PyPool>(vllm_block_pool(a.report.vllm, a.serving.options.vllm),
                                            p);
        case Engine::sglang:
            if (a.report.sglang.swa_tokens != 0)
                usage("block_pool", "an SGLang pool without a separate sliding-window pool",
                      "a hybrid SWA pool");
            return std::make_shared<PyPool>(sglang_block_pool(a.report.sglang), p);
        default:
            usage("engine", "vllm or sglang (the engines whose block pool kvplan models)",
                  std::string(name(a.serving.engine)));
    }
}

namespace docs {

constexpr const char* pool_doc = R"(A block pool that admits requests as vLLM's scheduler does.

One pool of num_blocks blocks (the null block included), shared by its KV-cache groups:
one full-attention group of block_size tokens (default 16), or the kvplan.BlockGroup list
given. Deployment.block_pool() gives the pool the engine builds for a deployment.

A scheduler calls admit() for a waiting request, grow() for each later step and
release() when it finishes or is preempted. policy "engine" admits as vLLM does (a grow
may find the pool dry; vLLM then preempts); "no_preemption" reserves each running
request's peak so that no grow fails.)";

}  // namespace docs

}  // namespace

py::object engine_pool(const std::shared_ptr<PyDeployment>& d, py::handle context,
                       const std::string& policy) {
    return py::cast(pool_of(d, context, policy));
}

void bind_block_pool(py::module_& m) {
    using namespace docs;
    py::class_<BlockGroup>(
        m, "BlockGroup",
        R"(KV-cache groups of one kind in a block pool, as vLLM's managers hold them.

kind: "full" (every block until the request ends), "sliding_window" or "chunked_local"
(only the blocks the window or chunk of `span` tokens reaches), or "state" (a Mamba or
linear-attention state: one block). count: groups of this kind, each its own table.
admission_cap: the most blocks vLLM's whole-prompt check counts for one windowed table.
align: a state in vLLM's "align" mode (prefix caching).)")
        .def(py::init([](const std::string& kind, py::handle count, py::handle block_size,
                         py::handle span, py::handle admission_cap, bool align) {
                 BlockGroup g;
                 g.kind = group_kind_of(kind);
                 const std::uint64_t c = to_count(count, "count", "groups");
                 const std::uint64_t b = to_count(block_size, "block_size", "tokens");
                 if (c > 0xFFFF'FFFFULL) usage("count", "at most 4294967295", std::to_string(c));
                 if (b > 0xFFFF'FFFFULL)
                     usage("block_size", "at most 4294967295 tokens", std::to_string(b));
                 g.count = static_cast<std::uint32_t>(c);
                 g.block_size = static_cast<std::uint32_t>(b);
                 g.span = to_count(span, "span", "tokens", 0);
                 g.admission_cap = to_count(admission_cap, "admission_cap", "blocks", 0);
                 g.align = align;
                 return g;
             }),
             py::arg("kind") = "full", py::arg("count") = 1, py::arg("block_size") = 16,
             py::arg("span") = 0, py::arg("admission_cap") = 0, py::arg("align") = false,
             "__init__(self, /, kind='full', count=1, block_size=16, span=0, admission_cap=0, "
             "align=False)\n--\n\nA group of `count` tables of `kind` (see the class).")
        .def_property_readonly("kind",
                               [](const BlockGroup& g) { return std::string(name(g.kind)); })
        .def_readonly("count", &BlockGroup::count)
        .def_readonly("block_size", &BlockGroup::block_size)
        .def_readonly("span", &BlockGroup::span)
        .def_readonly("admission_cap", &BlockGroup::admission_cap)
        .def_readonly("align", &BlockGroup::align)
        .def("__repr__", [](const BlockGroup& g) {
            std::string s = fmt::format("kvplan.BlockGroup(kind='{}', count={}, block_size={}",
                                        name(g.kind), g.count, g.block_size);
            if (g.span != 0) s += fmt::format(", span={}", g.span);
            if (g.admission_cap != 0) s += fmt::format(", admission_cap={}", g.admission_cap);
            if (g.align) s += ", align=True";
            return s + ")";
        });

    py::class_<PyPrefix>(m, "Prefix",
                         R"(A prompt prefix that requests share through prefix caching.

`tokens` is a multiple of every group's block size. Its full-attention blocks
are held once while any request that uses it runs. Pass it to BlockPool.admit(prefix=...);
set `cached = False` when the engine evicts it.)")
        .def(py::init([](py::handle tokens) {
                 return PyPrefix{SharedPrefix{.tokens = to_count(tokens, "tokens", "tokens")}};
             }),
             py::arg("tokens"), "__init__(self, /, tokens)\n--\n\nA prefix of `tokens` tokens.")
        .def_property_readonly("tokens", [](const PyPrefix& p) { return p.p.tokens; })
        .def_property_readonly(
            "holders", [](const PyPrefix& p) { return p.p.holders; },
            "Running requests that use it.")
        .def_property_readonly(
            "blocks", [](const PyPrefix& p) { return p.p.blocks; }, "Blocks it holds while held.")
        .def_property(
            "cached", [](const PyPrefix& p) { return p.p.cached; },
            [](PyPrefix& p, bool cached) { p.p.cached = cached; },
            "Its blocks are in the cache: a request that finds it computes only the rest of "
            "its prompt.")
        .def("__repr__", [](const PyPrefix& p) {
            return fmt::format("<kvplan.Prefix {} tokens, {} holders, {} blocks{}>",
                               grouped(p.p.tokens), p.p.holders, grouped(p.p.blocks),
                               p.p.cached ? ", cached" : "");
        });

    py::class_<PyRequest>(m, "Request",
                          "One request's share of a block pool, from BlockPool.admit(): pass it "
                          "to grow() and release().")
        .def_property_readonly("prompt", [](const PyRequest& q) { return q.r.prompt; })
        .def_property_readonly("max_new", [](const PyRequest& q) { return q.r.max_new; })
        .def_property_readonly(
            "tokens", [](const PyRequest& q) { return q.r.tokens; },
            "Tokens with a slot after its last step.")
        .def_property_readonly("chunk", [](const PyRequest& q) { return q.r.chunk; })
        .def_property_readonly(
            "blocks", [](const PyRequest& q) { return q.r.blocks(); },
            "Blocks it holds, its shared prefix's excluded.")
        .def_property_readonly(
            "committed", [](const PyRequest& q) { return q.r.committed; },
            "Blocks reserved for it (no_preemption).")
        .def_property_readonly("running", [](const PyRequest& q) { return q.r.running; })
        .def_property_readonly("prefix", [](const PyRequest& q) { return q.prefix; })
        .def("__repr__", [](const PyRequest& q) {
            return fmt::format("<kvplan.Request {} + {} tokens, {} computed, {} blocks{}>",
                               grouped(q.r.prompt), grouped(q.r.max_new), grouped(q.r.tokens),
                               grouped(q.r.blocks()), q.r.running ? "" : ", released");
        });

    py::class_<PyAdmission>(m, "Admission",
                            "What BlockPool.admit decided: true when admitted, with the Request.")
        .def_property_readonly(
            "status",
            [](const PyAdmission& a) {
                switch (a.res.status) {
                    case AdmitStatus::admitted:
                        return "admitted";
                    case AdmitStatus::wait:
                        return "wait";
                    case AdmitStatus::never:
                        return "never";
                }
                return "wait";
            },
            "\"admitted\"; \"wait\": it fits once running requests free "
            "blocks; \"never\": not even in an empty pool.")
        .def_property_readonly(
            "blocks", [](const PyAdmission& a) { return a.res.blocks; },
            "Admitted: blocks taken; else blocks asked for.")
        .def_property_readonly(
            "available", [](const PyAdmission& a) { return a.res.available; },
            "Blocks the ask was compared with.")
        .def_property_readonly("request", [](const PyAdmission& a) { return a.request; })
        .def("__bool__", [](const PyAdmission& a) { return static_cast<bool>(a.res); })
        .def("__repr__", [](const PyAdmission& a) {
            const char* s = a.res.status == AdmitStatus::admitted ? "admitted"
                            : a.res.status == AdmitStatus::wait   ? "wait"
                                                                  : "never";
            return fmt::format("<kvplan.Admission {}: {} blocks, {} available>", s,
                               grouped(a.res.blocks), grouped(a.res.available));
        });

    py::class_<GrowResult>(m, "Growth", "What BlockPool.grow did: true when grown.")
        .def_readonly("grown", &GrowResult::grown)
        .def_readonly("taken", &GrowResult::taken,
                      "Grown: blocks taken; else blocks the step asked for.")
        .def_readonly("freed", &GrowResult::freed,
                      "Blocks the window let go, returned to the pool either way.")
        .def("__bool__", [](const GrowResult& g) { return g.grown; })
        .def("__repr__", [](const GrowResult& g) {
            return fmt::format("<kvplan.Growth {}: {} taken, {} freed>",
                               g.grown ? "grown" : "not grown", g.taken, g.freed);
        });

    py::class_<RequestNeed>(m, "RequestNeed",
                            "The blocks one request takes in an otherwise empty pool.")
        .def_readonly("gate", &RequestNeed::gate,
                      "vLLM's whole-prompt check before its first step (0: off).")
        .def_readonly("admission", &RequestNeed::admission, "Blocks its first step takes.")
        .def_readonly("peak", &RequestNeed::peak, "The most it holds at any step.")
        .def_readonly("steady", &RequestNeed::steady,
                      "The most it holds while decoding (0: it never decodes).")
        .def("__repr__", [](const RequestNeed& n) {
            return fmt::format("<kvplan.RequestNeed gate {}, admission {}, peak {}, steady {}>",
                               n.gate, n.admission, n.peak, n.steady);
        });

    py::class_<PyPool, std::shared_ptr<PyPool>>(m, "BlockPool", pool_doc)
        .def(py::init(&make_pool), py::arg("num_blocks"), py::arg("block_size") = py::none(),
             py::kw_only(), py::arg("groups") = py::none(), py::arg("null_block") = true,
             py::arg("max_model_len") = 0, py::arg("watermark_blocks") = 0,
             py::arg("full_sequence_must_fit") = true, py::arg("policy") = "engine",
             "__init__(self, /, num_blocks, block_size=None, *, groups=None, null_block=True, "
             "max_model_len=0, watermark_blocks=0, full_sequence_must_fit=True, "
             "policy='engine')\n--\n\nA pool with every usable block free (see the class).")
        .def("admit", &admit, py::arg("prompt"), py::arg("max_new"), py::kw_only(),
             py::arg("prefix") = py::none(), py::arg("chunk") = 0,
             R"(admit($self, /, prompt, max_new, *, prefix=None, chunk=0)
--

Admits a waiting request of `prompt` tokens that may generate `max_new`, and runs
its first step (`chunk` prompt tokens after the prefix hit; 0: all of them).
Returns a kvplan.Admission: true with .request when admitted; .status "wait" when it fits
once running requests free blocks, "never" when it cannot run even alone.)")
        .def("grow", &grow, py::arg("request"), py::arg("n") = 1,
             R"(grow($self, /, request, n=1)
--

Runs a later step of `request` that computes `n` more tokens (the next prefill
chunk, or 1 when decoding). Returns a kvplan.Growth, false when the pool is dry (vLLM then
preempts a request: release() it and admit it again later).)")
        .def("release", &release, py::arg("request"),
             "release($self, /, request)\n--\n\nReturns every block `request` holds (finished or "
             "preempted); the blocks freed.")
        .def(
            "need",
            [](const PyPool& p, py::handle prompt_h, py::handle max_new_h, py::handle cached_h,
               py::handle chunk_h) {
                const std::uint64_t prompt = to_count(prompt_h, "prompt", "tokens");
                const std::uint64_t max_new = to_count(max_new_h, "max_new", "tokens");
                const std::uint64_t cached = to_count(cached_h, "cached", "tokens", 0);
                const std::uint64_t chunk = to_count(chunk_h, "chunk", "tokens", 0);
                if (cached >= prompt)
                    usage("cached", fmt::format("fewer tokens than the prompt's {}", prompt),
                          std::to_string(cached));
                return request_need(p.pool.spec(), prompt, max_new, cached, chunk);
            },
            py::arg("prompt"), py::arg("max_new"), py::kw_only(), py::arg("cached") = 0,
            py::arg("chunk") = 0,
            "need($self, /, prompt, max_new, *, cached=0, chunk=0)\n--\n\nThe blocks a request "
            "takes in an empty pool of this spec: a kvplan.RequestNeed.")
        .def(
            "concurrent_requests",
            [](const PyPool& p, py::handle prompt_h, py::handle max_new_h) {
                return concurrent_requests(p.pool.spec(), to_count(prompt_h, "prompt", "tokens"),
                                           to_count(max_new_h, "max_new", "tokens"));
            },
            py::arg("prompt"), py::arg("max_new"),
            "concurrent_requests($self, /, prompt, max_new)\n--\n\nRequests of one shape the pool "
            "runs at once under no_preemption.")
        .def_property_readonly("free_blocks", [](const PyPool& p) { return p.pool.free_blocks(); })
        .def_property_readonly("used_blocks", [](const PyPool& p) { return p.pool.used_blocks(); })
        .def_property_readonly("committed_blocks",
                               [](const PyPool& p) { return p.pool.committed_blocks(); })
        .def_property_readonly(
            "running", [](const PyPool& p) { return p.pool.running(); },
            "Requests admitted and not released.")
        .def_property_readonly("num_blocks",
                               [](const PyPool& p) { return p.pool.spec().num_blocks; })
        .def_property_readonly("usable_blocks",
                               [](const PyPool& p) { return p.pool.spec().usable_blocks(); })
        .def_property_readonly("max_model_len",
                               [](const PyPool& p) { return p.pool.spec().max_model_len; })
        .def_property_readonly("policy",
                               [](const PyPool& p) { return policy_name(p.pool.policy()); })
        .def_property_readonly("groups",
                               [](const PyPool& p) {
                                   const BlockPoolSpec& s = p.pool.spec();
                                   return std::vector<BlockGroup>(s.groups.begin(),
                                                                  s.groups.begin() + s.num_groups);
                               })
        .def("__repr__", [](const PyPool& p) {
            return fmt::format("<kvplan.BlockPool {} blocks, {} free, {} running, {}>",
                               grouped(p.pool.spec().num_blocks), grouped(p.pool.free_blocks()),
                               p.pool.running(), policy_name(p.pool.policy()));
        });
}

}  // namespace kvplan::python
