#pragma once

// An option that becomes its value as CLI11 parses it, through one converter per kind of value
// (parse.hpp: a token count, a size, an engine...). The converter throws UsageError naming the
// flag, which main reports as a usage error (exit 2) with the same one line as before.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>

namespace kvplan::cli {

/// The name an error gives for the option named `names` ("-c,--context": "--context").
[[nodiscard]] inline std::string flag_of(const std::string& names) {
    for (std::size_t start = 0; start < names.size();) {
        const std::size_t end = std::min(names.find(',', start), names.size());
        if (names.compare(start, 2, "--") == 0) return names.substr(start, end - start);
        start = end + 1;
    }
    return names;
}

/// Adds option `names` to `app`: its text becomes `out = convert(text, flag)` while CLI11 parses
/// (`out` a value with its default, or a std::optional left empty when the flag is not given).
template <class Target, class Convert>
CLI::Option* typed(CLI::App& app, const std::string& names, Target& out, Convert convert,
                   const std::string& help) {
    return app.add_option_function<std::string>(
        names,
        [&out, convert, flag = flag_of(names)](const std::string& text) {
            out = convert(text, flag);
        },
        help);
}

}  // namespace kvplan::cli
