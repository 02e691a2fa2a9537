#pragma once

// The errors kvplan throws. Messages are held in place (detail::Message), so the core needs neither
// <string> nor <stdexcept>, and copying an error never allocates or throws.

#include <exception>

#include "detail/message.hpp"

namespace kvplan {

/// Every error kvplan throws: bad data, an impossible layout, an overflowing size. The message
/// names where (a file, a model), the field, what was expected and what was found.
class Error : public std::exception {
   public:
    explicit Error(detail::TextRef message) noexcept { message_.append(message); }
    [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }

   private:
    detail::Message message_;
};

/// A model description that cannot describe a real model (no layers, zero heads, a zero window...).
class InvalidModel : public Error {
    using Error::Error;
};

/// A parallel layout the model cannot take (tp that does not divide kv_heads, more stages than
/// layers...).
class InvalidLayout : public Error {
    using Error::Error;
};

/// A size or count that does not fit in 64 bits, or an argument outside its domain (a negative
/// length).
class OverflowError : public Error {
    using Error::Error;
};

/// Input from outside: a file that cannot be read, JSON that does not parse or does not map.
class InvalidInput : public Error {
    using Error::Error;
};

/// A broken precondition: a bug in the caller, never caught. It leaves through a noexcept
/// function, so std::terminate ends the program, and the standard library's terminate handler
/// prints what(): the condition, file and line (without <cstdio> in every translation unit).
class ContractViolation : public std::exception {
   public:
    explicit ContractViolation(const detail::Message& m) noexcept : message_(m) {}
    [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }

   private:
    detail::Message message_;
};

namespace detail {

/// "where: field: expected X, found Y", the one shape of every data error.
[[nodiscard]] constexpr Message field_message(TextRef where, TextRef field, TextRef expected,
                                              TextRef found) noexcept {
    Message m;
    if (!where.empty()) m.append(where).append(": ");
    m.append(field).append(": expected ").append(expected).append(", found ").append(found);
    return m;
}

// Not constexpr on purpose: reaching one of these during constant evaluation is a compile error
// whose note names the function and so the kind of failure.
template <class E>
[[noreturn]] inline void throw_field_error(TextRef where, TextRef field, TextRef expected,
                                           TextRef found) {
    throw E(field_message(where, field, expected, found));
}

[[noreturn]] inline void throw_overflow(const char* what) {
    throw OverflowError(text("size overflow: ", what, " exceeds 2^64 - 1 bytes"));
}

[[noreturn]] inline void throw_contract_violation(const char* condition, const char* file,
                                                  int line) {
    throw ContractViolation(
        text("kvplan: precondition failed: ", condition, " (", file, ":", line, ")"));
}

[[noreturn]] inline void contract_violation(const char* condition, const char* file,
                                            int line) noexcept {
    throw_contract_violation(condition, file, line);  // noexcept: terminates here
}

}  // namespace detail
}  // namespace kvplan

/// A caller's broken precondition: aborts at run time, fails to compile in constant evaluation.
#define KVPLAN_EXPECTS(cond)       \
    ((cond) ? static_cast<void>(0) \
            : ::kvplan::detail::contract_violation(#cond, __FILE__, __LINE__))
