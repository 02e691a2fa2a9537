// The roofline: decode and prefill lower bounds of a deployment (kvplan/roofline.hpp), the costs
// that depend on neither batch nor context prepared once.

#include <kvplan/roofline.hpp>

#include "common.hpp"

namespace kvplan::python {

namespace {

struct PyDecodeBound {
    DecodeBound d;
};

struct PyPrefill {
    PrefillBound p;
};

struct PyRoofline {
    std::shared_ptr<const PyDeployment> dep;
    Replica replica;
    RooflineOptions options;
    DecodeCosts costs;
};

std::string seconds_text(Seconds t) { return fmt::format("{}", t); }

std::string point_repr(const DecodePoint& p) {
    return fmt::format(
        "<kvplan.DecodePoint batch {} x {} tokens: TPOT {}, {:.1f} tokens/s, {}-bound>",
        grouped(p.batch), grouped(p.context), seconds_text(p.tpot), p.tokens_per_s, name(p.bound));
}

py::object optional_count(const std::optional<std::uint64_t>& v) {
    return v ? py::object(py::int_(*v)) : py::object(py::none());
}

std::shared_ptr<PyRoofline> roofline_of(const std::shared_ptr<PyDeployment>& d,
                                        py::handle compute_dtype) {
    RooflineOptions ro;
    ro.compute = to_compute_dtype(compute_dtype, "compute_dtype");
    // The replica as kvplan roofline evaluates it (its layout resolved in the engine's rules).
    const Replica r = evaluate(d->deployment, {.context = 1}, budget_options, d->prepared).replica;
    ro = with_compute(ro, r);  // the weights' own type unless compute_dtype says otherwise
    return std::make_shared<PyRoofline>(PyRoofline{d, r, ro, decode_costs(r, ro)});
}

namespace docs {

constexpr const char* roofline_doc = R"(The decode and prefill lower bounds of a deployment.

Deployment.roofline(compute_dtype=None) prepares the costs that depend on neither batch
nor context; point(), decode() and prefill() then cost little. The figures are kvplan
roofline's for the same inputs: bounds at peak bandwidth and FLOP/s, no real step is faster.)";

}  // namespace docs

}  // namespace

py::object make_roofline(const std::shared_ptr<PyDeployment>& d, py::handle compute_dtype) {
    return py::cast(roofline_of(d, compute_dtype));
}

void bind_roofline(py::module_& m) {
    using namespace docs;
    py::class_<PyDecodePoint>(m, "DecodePoint",
                              "A decode step's lower bound at a batch and context, as kvplan "
                              "roofline's points give it.")
        .def_property_readonly("batch", [](const PyDecodePoint& p) { return p.p.batch; })
        .def_property_readonly("context_tokens", [](const PyDecodePoint& p) { return p.p.context; })
        .def_property_readonly("decode_step_seconds",
                               [](const PyDecodePoint& p) { return p.p.step.in(seconds); })
        .def_property_readonly("tpot_seconds",
                               [](const PyDecodePoint& p) { return p.p.tpot.in(seconds); })
        .def_property_readonly("tokens_per_second",
                               [](const PyDecodePoint& p) { return p.p.tokens_per_s; })
        .def_property_readonly("tokens_per_second_per_gpu",
                               [](const PyDecodePoint& p) { return p.p.tokens_per_s_per_gpu; })
        .def_property_readonly(
            "bound", [](const PyDecodePoint& p) { return std::string(name(p.p.bound)); },
            "\"memory\" or \"compute\".")
        .def("__repr__", [](const PyDecodePoint& p) { return point_repr(p.p); });

    py::class_<PyDecodeBound>(m, "DecodeBound",
                              "A decode step's lower bound with its limiting stage's bytes and "
                              "FLOPs, as kvplan roofline gives one point.")
        .def_property_readonly("batch", [](const PyDecodeBound& b) { return b.d.batch; })
        .def_property_readonly("context_tokens",
                               [](const PyDecodeBound& b) { return b.d.longest_context; })
        .def_property_readonly("decode_step_seconds",
                               [](const PyDecodeBound& b) { return b.d.step.in(seconds); })
        .def_property_readonly("tpot_seconds",
                               [](const PyDecodeBound& b) { return b.d.tpot.in(seconds); })
        .def_property_readonly("tokens_per_second",
                               [](const PyDecodeBound& b) { return b.d.tokens_per_s; })
        .def_property_readonly("tokens_per_second_per_gpu",
                               [](const PyDecodeBound& b) { return b.d.tokens_per_s_per_gpu; })
        .def_property_readonly(
            "bytes_per_step",
            [](const PyDecodeBound& b) { return b.d.stages[b.d.limiting_stage].bytes().count(); },
            "Bytes read per step per GPU of the slowest stage: weights and KV.")
        .def_property_readonly(
            "flops_per_step",
            [](const PyDecodeBound& b) { return b.d.stages[b.d.limiting_stage].flops().in(FLOP); },
            "FLOPs per step per GPU of the slowest stage.")
        .def_property_readonly("bound",
                               [](const PyDecodeBound& b) { return std::string(name(b.d.bound)); })
        .def_property_readonly(
            "all_reduce_seconds",
            [](const PyDecodeBound& b) { return b.d.all_reduce.per_step.in(seconds); },
            "The tensor-parallel all-reduce time of a step (not in the bound).")
        .def_property_readonly("limiting_stage",
                               [](const PyDecodeBound& b) { return b.d.limiting_stage; })
        .def_property_readonly("micro_batches",
                               [](const PyDecodeBound& b) { return b.d.micro_batches; })
        .def("__repr__", [](const PyDecodeBound& b) { return point_repr(point_of(b.d)); });

    py::class_<PyPrefill>(m, "PrefillBound", "A prefill's lower bound (time to first token).")
        .def_property_readonly("prompt_tokens",
                               [](const PyPrefill& p) { return p.p.prompt_tokens; })
        .def_property_readonly("prompts", [](const PyPrefill& p) { return p.p.prompts; })
        .def_property_readonly("prefill_seconds",
                               [](const PyPrefill& p) { return p.p.ttft.in(seconds); })
        .def_property_readonly("prefill_bound",
                               [](const PyPrefill& p) { return std::string(name(p.p.bound)); })
        .def("__repr__", [](const PyPrefill& p) {
            return fmt::format("<kvplan.PrefillBound {} x {} tokens: {}, {}-bound>", p.p.prompts,
                               grouped(p.p.prompt_tokens), seconds_text(p.p.ttft), name(p.p.bound));
        });

    const auto roofline_context = [](const PyRoofline& r, py::handle context) {
        return context.is_none() ? r.dep->default_context : to_tokens(context, "context");
    };
    py::class_<PyRoofline, std::shared_ptr<PyRoofline>>(m, "Roofline", roofline_doc)
        .def(
            "point",
            [roofline_context](const PyRoofline& r, py::handle batch, py::handle context) {
                return PyDecodePoint{decode_point(r.costs, to_count(batch, "batch", "sequences"),
                                                  roofline_context(r, context))};
            },
            py::arg("batch"), py::arg("context") = py::none(),
            "point($self, /, batch, context=None)\n--\n\nThe decode bound of `batch` sequences of "
            "`context` tokens (None: the model's "
            "limit): a kvplan.DecodePoint, the fastest way to ask.")
        .def(
            "decode",
            [roofline_context](const PyRoofline& r, py::handle batch, py::handle context) {
                return PyDecodeBound{decode_bound(r.costs, to_count(batch, "batch", "sequences"),
                                                  roofline_context(r, context))};
            },
            py::arg("batch"), py::arg("context") = py::none(),
            "decode($self, /, batch, context=None)\n--\n\nThe decode bound with its bytes and "
            "FLOPs per step: a kvplan.DecodeBound.")
        .def(
            "prefill",
            [roofline_context](const PyRoofline& r, py::handle context, py::handle prompts) {
                return PyPrefill{prefill_bound(r.replica, roofline_context(r, context),
                                               to_count(prompts, "prompts", "prompts"), r.options)};
            },
            py::arg("context") = py::none(), py::arg("prompts") = 1,
            "prefill($self, /, context=None, prompts=1)\n--\n\nThe prefill bound of `prompts` "
            "prompts of `context` tokens: a kvplan.PrefillBound.")
        .def(
            "compute_bound_batch",
            [roofline_context](const PyRoofline& r, py::handle context, py::handle max_batch) {
                return optional_count(
                    compute_bound_batch(r.replica, roofline_context(r, context), r.options,
                                        to_count(max_batch, "max_batch", "sequences")));
            },
            py::arg("context") = py::none(), py::arg("max_batch") = 1ULL << 20,
            "compute_bound_batch($self, /, context=None, max_batch=1048576)\n--\n\nThe smallest "
            "batch whose decode step is compute-bound, or None when memory still "
            "bounds it at max_batch.")
        .def_property_readonly(
            "compute_dtype",
            [](const PyRoofline& r) { return std::string(name(*r.options.compute)); })
        .def("__repr__", [](const PyRoofline& r) {
            return fmt::format("<kvplan.Roofline of {} on {} x {} in {}>", r.dep->model->id,
                               r.dep->gpus, r.dep->gpu->id, name(*r.options.compute));
        });

    const auto* roofline_signature =
        new Signature("roofline", 2,
                      {deploy("model"), deploy("gpu"), own("batch", py::int_(1)),
                       own("context", py::none()), own("compute_dtype", py::none())},
                      {"tp", "pp", "dp", "ep", "dcp", "kv_dtype", "weight_dtype", "expert_dtype",
                       "engine", "engine_version"});
    m.def(
        "roofline",
        [roofline_signature](const py::args& args, const py::kwargs& kwargs) {
            const Call c(*roofline_signature, args, kwargs);
            const std::shared_ptr<PyDeployment> d = deployment_from(c.deployment());
            const std::shared_ptr<PyRoofline> r = roofline_of(d, c["compute_dtype"]);
            const py::handle context = c["context"];
            const std::uint64_t n =
                context.is_none() ? d->default_context : to_tokens(context, "context");
            return PyDecodeBound{
                decode_bound(r->costs, to_count(c["batch"], "batch", "sequences"), n)};
        },
        roofline_signature
            ->doc(
                R"(The decode bound of `batch` sequences of `context` tokens (None: the model's limit), as
kvplan roofline gives it: a kvplan.DecodeBound. Deployment.roofline() prepares the costs
once for many points, and its prefill() gives the prefill bound.

Example:

>>> kvplan.roofline(model="llama-3-70b", gpu="h100-sxm", tp=4, batch=8,
...                 context="8k").bound
'memory'
)")
            .c_str());
}

}  // namespace kvplan::python
