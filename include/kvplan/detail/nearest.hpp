#pragma once

// "Did you mean": the known name nearest a mistyped one, for the errors of every reader and of the
// command line. Distance is the optimal string alignment distance (Damerau-Levenshtein without
// editing a substring twice): one insertion, deletion, substitution or swap of two neighbours
// costs 1, so `fti` is 1 from `fit` and `--conccurency` 2 from `--concurrency`. Case is ignored,
// since `GIB` means `GiB`.

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan::detail {

/// Another spelling of a known name that edit distance would not find: an engine's own name for a
/// field ("tensor_parallel_size" for "tp").
struct NameHint {
    std::string_view spelling;
    std::string_view meant;
};

[[nodiscard]] constexpr char fold_ascii(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// The optimal string alignment distance between `a` and `b`, comparing characters with `fold`.
/// Inputs longer than 64 characters are compared on their first 64, which bounds the work on
/// hostile input.
template <class Fold>
[[nodiscard]] constexpr std::size_t osa_distance(std::string_view a, std::string_view b,
                                                 Fold fold) {
    constexpr std::size_t cap = 64;
    a = a.substr(0, std::min(a.size(), cap));
    b = b.substr(0, std::min(b.size(), cap));
    const std::size_t n = a.size(), m = b.size();
    // Three rows, i - 2 (for the swap), i - 1 and i, taken in turn; fixed arrays, since the cap
    // bounds them, keep the function allocation-free and constant-evaluable with every standard
    // library (clang rejects libstdc++ 12's constexpr std::vector(n)).
    std::array<std::array<std::size_t, cap + 1>, 3> rows{};
    for (std::size_t j = 0; j <= m; ++j) rows[0][j] = j;
    for (std::size_t i = 1; i <= n; ++i) {
        auto& cur = rows[i % 3];
        const auto& prev = rows[(i - 1) % 3];
        const auto& before = rows[(i + 1) % 3];  // (i - 2) % 3
        cur[0] = i;
        for (std::size_t j = 1; j <= m; ++j) {
            const bool same = fold(a[i - 1]) == fold(b[j - 1]);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
                fold(a[i - 2]) == fold(b[j - 1]))
                cur[j] = std::min(cur[j], before[j - 2] + 1);
        }
    }
    return rows[n % 3][m];
}

/// The optimal string alignment distance between `a` and `b`, ignoring ASCII case.
[[nodiscard]] constexpr std::size_t edit_distance(std::string_view a, std::string_view b) {
    return osa_distance(a, b, fold_ascii);
}

/// The same distance with case counted: breaks ties between names equally near.
[[nodiscard]] constexpr std::size_t edit_distance_cased(std::string_view a, std::string_view b) {
    return osa_distance(a, b, [](char c) { return c; });
}

/// The most edits still offered as a suggestion for a name typed with `length` characters (not
/// counting the dashes of a flag): one per three characters, at most three, and fewer than the
/// name has, so that something of it is kept. A short name must be nearly right, a long one may
/// be further off, and nothing is offered for a name that resembles nothing: `-x` suggests no
/// `-h`.
[[nodiscard]] constexpr std::size_t suggestion_threshold(std::size_t length) noexcept {
    if (length <= 1) return 0;
    return std::clamp<std::size_t>((length + 2) / 3, 1, 3);
}

/// `name` without the dashes a flag starts with.
[[nodiscard]] constexpr std::string_view without_dashes(std::string_view name) noexcept {
    const std::size_t first = name.find_first_not_of('-');
    return first == std::string_view::npos ? std::string_view{} : name.substr(first);
}

/// The name in `known` nearest to `typed`, or nullopt when none is within
/// suggestion_threshold(without_dashes(typed).size()) edits. A hint whose spelling is within reach
/// suggests the name it means. Ties go to the name nearer with case counted, then to the first
/// listed.
template <class Names>
[[nodiscard]] std::optional<std::string> nearest_name(std::string_view typed, const Names& known,
                                                      const std::vector<NameHint>& hints = {}) {
    std::optional<std::string> best;
    std::size_t best_folded = suggestion_threshold(without_dashes(typed).size()) + 1;
    std::size_t best_cased = 0;
    const auto consider = [&](std::string_view candidate, std::string_view meant) {
        const std::size_t folded = edit_distance(typed, candidate);
        if (folded > best_folded) return;
        const std::size_t cased = edit_distance_cased(typed, candidate);
        if (best && folded == best_folded && cased >= best_cased) return;
        if (!best && folded == best_folded) return;  // beyond the threshold
        best = std::string(meant);
        best_folded = folded;
        best_cased = cased;
    };
    for (const auto& k : known) consider(std::string_view(k), std::string_view(k));
    for (const NameHint& h : hints) consider(h.spelling, h.meant);
    return best;
}

/// "; did you mean 'fit'?" for the nearest name, or "" when none is near: appended to a message.
template <class Names>
[[nodiscard]] std::string did_you_mean(std::string_view typed, const Names& known,
                                       const std::vector<NameHint>& hints = {}) {
    const auto n = nearest_name(typed, known, hints);
    if (!n) return {};
    std::string out = "; did you mean '";
    out.append(*n).append("'?");
    return out;
}

/// did_you_mean over a list written in place: did_you_mean(s, {"vllm", "sglang"}).
[[nodiscard]] inline std::string did_you_mean(std::string_view typed,
                                              std::initializer_list<std::string_view> known,
                                              const std::vector<NameHint>& hints = {}) {
    return did_you_mean<std::initializer_list<std::string_view>>(typed, known, hints);
}

}  // namespace kvplan::detail
