#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kvplan {

/// Every error kvplan throws: bad data, an impossible layout, an overflowing size. The message names
/// where (a file, a model), the field, what was expected and what was found.
class Error : public std::runtime_error {
   public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A model description that cannot describe a real model (no layers, zero heads, a zero window...).
class InvalidModel : public Error {
    using Error::Error;
};

/// A parallel layout the model cannot take (tp that does not divide kv_heads, more stages than layers...).
class InvalidLayout : public Error {
    using Error::Error;
};

/// A size or count that does not fit in 64 bits, or an argument outside its domain (a negative length).
class OverflowError : public Error {
    using Error::Error;
};

/// Input from outside: a file that cannot be read, JSON that does not parse or does not map.
class InvalidInput : public Error {
    using Error::Error;
};

namespace detail {

/// "where: field: expected X, found Y", the one shape of every data error.
inline std::string field_message(std::string_view where, std::string_view field,
                                 std::string_view expected, std::string_view found) {
    std::string m;
    m.reserve(where.size() + field.size() + expected.size() + found.size() + 24);
    if (!where.empty()) m.append(where).append(": ");
    m.append(field).append(": expected ").append(expected).append(", found ").append(found);
    return m;
}

// Not constexpr on purpose: reaching one of these during constant evaluation is a compile error
// whose note names the function and so the kind of failure.
template <class E>
[[noreturn]] inline void throw_field_error(std::string_view where, std::string_view field,
                                           std::string_view expected, std::string_view found) {
    throw E(field_message(where, field, expected, found));
}

[[noreturn]] inline void throw_overflow(const char* what) {
    throw OverflowError(std::string("size overflow: ") + what + " exceeds 2^64 - 1 bytes");
}

[[noreturn]] inline void contract_violation(const char* condition, const char* file, int line) {
    std::fprintf(stderr, "kvplan: precondition failed: %s (%s:%d)\n", condition, file, line);
    std::abort();
}

}  // namespace detail
}  // namespace kvplan

/// A caller's broken precondition: aborts at run time, fails to compile in constant evaluation.
#define KVPLAN_EXPECTS(cond)                                                        \
    ((cond) ? static_cast<void>(0)                                                  \
            : ::kvplan::detail::contract_violation(#cond, __FILE__, __LINE__))
