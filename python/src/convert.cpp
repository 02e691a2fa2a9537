// Python values as the library's types, and the library's errors as Python's: the one place the
// module reads what a caller passed.

#include <kvplan/plan/refusal.hpp>
#include <kvplan/quantity_text.hpp>
#include <kvplan/weight_format.hpp>

#include "common.hpp"

namespace kvplan::python {

std::filesystem::path& config_dir() {
    static std::filesystem::path dir{KVPLAN_CONFIG_DIR};
    return dir;
}

// ---------------------------------------------------------------------------------------------
// Errors: the library's exception types as the classes of kvplan/_errors.py, chosen by type.

namespace {

void set_error(const char* cls, const char* message) {
    const py::object type = py::module_::import("kvplan._errors").attr(cls);
    // Messages may quote bytes read from a file: undecodable bytes shown as \xNN.
    const std::string_view m(message);
    const py::object text = py::reinterpret_steal<py::object>(
        PyUnicode_DecodeUTF8(m.data(), static_cast<Py_ssize_t>(m.size()), "backslashreplace"));
    PyErr_SetObject(type.ptr(), text.ptr());
}

}  // namespace

void translate(std::exception_ptr p) {
    try {
        if (p) std::rethrow_exception(p);
    } catch (const UsageError& e) {
        set_error("UsageError", e.what());
    } catch (const InvalidModel& e) {
        set_error("InvalidModelError", e.what());
    } catch (const InvalidLayout& e) {
        set_error("InvalidLayoutError", e.what());
    } catch (const OverflowError& e) {
        set_error("SizeOverflowError", e.what());
    } catch (const Error& e) {
        set_error("InvalidInputError", e.what());
    }
}

void usage(std::string_view field, std::string_view expected, std::string_view found) {
    throw UsageError(fmt::format("{}: expected {}, found {}", field, expected, found));
}

namespace {

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")); }

std::string shown(py::handle h) { return py::repr(h); }

bool is_int(py::handle h) { return PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr()); }

std::string_view trim(std::string_view s) {
    const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return s;
}

}  // namespace

void wrong_type(std::string_view field, std::string_view expected, py::handle found) {
    throw py::type_error(
        fmt::format("{}: expected {}, found {}", field, expected, type_name(found)));
}

std::uint64_t to_count(py::handle h, std::string_view field, std::string_view unit,
                       std::uint64_t min) {
    if (!is_int(h)) wrong_type(field, fmt::format("an int ({})", unit), h);
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    std::uint64_t n = 0;
    if (overflow > 0) {
        n = PyLong_AsUnsignedLongLong(h.ptr());
        if (PyErr_Occurred()) {
            PyErr_Clear();
            usage(field, fmt::format("at most 2^64 - 1 {}", unit), shown(h));
        }
    } else if (overflow < 0 || v < 0) {
        usage(field, fmt::format(">= {} {}", min, unit), shown(h));
    } else {
        n = static_cast<std::uint64_t>(v);
    }
    if (n < min) usage(field, fmt::format(">= {} {}", min, unit), grouped(n));
    return n;
}

std::uint32_t to_u32(py::handle h, std::string_view field, std::string_view unit, std::uint32_t max,
                     std::uint32_t min) {
    const std::uint64_t n = to_count(h, field, unit, min);
    if (n > max) usage(field, fmt::format("at most {} {}", grouped(max), unit), grouped(n));
    return static_cast<std::uint32_t>(n);
}

// The library's token grammar (kvplan/quantity_text.hpp: vLLM's --max-model-len, 8k = 8,000,
// 8K = 8,192), the one the command line reads.
std::uint64_t to_tokens(py::handle h, std::string_view field) {
    if (is_int(h)) return to_count(h, field, "tokens");
    if (!PyUnicode_Check(h.ptr())) wrong_type(field, "an int or a token count such as '8k'", h);
    const kvplan::TextRead<std::uint64_t> r = kvplan::read_token_count(py::cast<std::string>(h));
    if (!r.value) usage(field, r.expected, shown(h));
    if (*r.value == 0)
        usage(field, "a token count >= 1 (8192, '8k' = 8,000, '25.6k' = 25,600, '8K' = 8,192)",
              shown(h));
    return *r.value;
}

Bytes to_size(py::handle h, std::string_view field) {
    if (is_int(h)) return Bytes::exactly(to_count(h, field, "bytes", 0));
    if (!PyUnicode_Check(h.ptr()))
        wrong_type(field, "an int of bytes or a size naming its unit such as '5.38GiB'", h);
    const kvplan::TextRead<Bytes> r = kvplan::read_size(py::cast<std::string>(h));
    if (!r.value) usage(field, r.expected, shown(h));
    return *r.value;
}

namespace {

double to_real(py::handle h, std::string_view field) {
    if (PyBool_Check(h.ptr()) || !(PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr())))
        wrong_type(field, "a number", h);
    const double v = PyFloat_AsDouble(h.ptr());
    if (PyErr_Occurred()) {
        PyErr_Clear();
        usage(field, "a finite number", shown(h));
    }
    return v;
}

}  // namespace

double to_fraction(py::handle h, std::string_view field) {
    const double v = to_real(h, field);
    if (!(v > 0.0 && v <= 1.0)) usage(field, "a fraction in (0, 1], e.g. 0.9", shown(h));
    return v;
}

double to_share(py::handle h, std::string_view field) {
    const double v = to_real(h, field);
    if (!(v >= 0.0 && v <= 1.0)) usage(field, "a share in [0, 1], e.g. 0.4", shown(h));
    return v;
}

double to_positive(py::handle h, std::string_view field) {
    const double v = to_real(h, field);
    if (!(v > 0.0) || !std::isfinite(v)) usage(field, "a positive number", shown(h));
    return v;
}

std::optional<bool> to_switch(py::handle h, std::string_view field) {
    if (h.is_none()) return std::nullopt;
    if (!PyBool_Check(h.ptr())) wrong_type(field, "True, False or None", h);
    return h.ptr() == Py_True;
}

std::string to_text(py::handle h, std::string_view field) {
    if (!PyUnicode_Check(h.ptr())) wrong_type(field, "a str", h);
    return py::cast<std::string>(h);
}

std::string path_text(py::handle h, std::string_view field) {
    if (PyUnicode_Check(h.ptr())) return py::cast<std::string>(h);
    if (py::hasattr(h, "__fspath__")) {
        const py::object p = py::module_::import("os").attr("fspath")(h);
        if (PyUnicode_Check(p.ptr())) return py::cast<std::string>(p);
    }
    wrong_type(field, "an id or a path (str or os.PathLike)", h);
}

KvFormat to_kv_format(py::handle h, std::string_view field) {
    const std::string text = to_text(h, field);
    if (const auto d = parse_kv_dtype(trim(text))) return KvFormat(*d);
    usage(field,
          "a KV dtype (fp32, fp16, bf16, fp8 = fp8_e4m3, fp8_e5m2, fp8_per_token_head, int8, "
          "int4, nvfp4, nvfp4_4over6, mxfp4)",
          shown(h));
}

std::optional<KvFormat> to_kv_choice(py::handle h, std::string_view field) {
    if (h.is_none()) return std::nullopt;
    return to_kv_format(h, field);
}

Engine to_engine(py::handle h, std::string_view field) {
    const std::string text = to_text(h, field);
    if (const auto e = parse_engine(text)) return *e;
    usage(field, "ideal, vllm, sglang or trtllm", shown(h));
}

WeightFormat to_weight_format(py::handle h, std::string_view field) {
    const std::string text = to_text(h, field);
    if (const auto f = parse_weight_format(text)) return *f;
    usage(field, "a weight format (fp32, bf16, fp16, fp8, int8, int4, mxfp8, mxfp4, nvfp4)",
          shown(h));
}

std::optional<ComputeDtype> to_compute_dtype(py::handle h, std::string_view field) {
    if (h.is_none()) return std::nullopt;
    const std::string text = to_text(h, field);
    if (const auto d = parse_compute_dtype(text)) return *d;
    usage(field, "tf32, bf16, fp16, fp8, int8 or fp4", shown(h));
}

std::string grouped(std::uint64_t n) { return detail::grouped_digits(n); }

}  // namespace kvplan::python
