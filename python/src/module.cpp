// The compiled half of the kvplan Python package (python/kvplan/ is the other half): the library
// bound directly, one file per family. inputs.cpp: Model and Gpu (a bundled id read once);
// deployment.cpp: Deployment, ReplicaAnswer, LatencyEstimate and kvplan.fit; roofline.cpp: the
// roofline's bounds; block_pool.cpp: BlockPool and its requests; plan.cpp: size, compare, plan,
// disagg and fleet; trace.cpp: trace; calibrate.cpp: calibrate; check.cpp: check and diff.
// convert.cpp reads every argument and maps the library's errors to Python's; keywords.cpp holds
// the table of the deployment keywords and binds each function's call to its signature.

#include <kvplan/version.hpp>

#include "common.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_kvplan, m) {
    using namespace kvplan::python;
    m.doc() = "The compiled half of kvplan: use the kvplan package instead.";
    // Each docstring starts with its Python signature ("name($self, /, ...)" and "--"), which
    // help() and inspect.signature read, instead of pybind11's C++ types.
    py::options options;
    options.disable_function_signatures();
    py::register_exception_translator(&translate);
    m.attr("version") = kvplan::version_string;
    m.attr("source_config_dir") = KVPLAN_CONFIG_DIR;

    m.def("set_config_dir", [](const std::string& dir) { config_dir() = dir; });
    m.def("get_config_dir", [] { return config_dir().string(); });

    bind_inputs(m);
    bind_deployment(m);
    bind_roofline(m);
    bind_block_pool(m);
    bind_plan(m);
    bind_trace(m);
    bind_calibrate(m);
    bind_check(m);
}
