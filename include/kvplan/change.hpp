#pragma once

// How far one figure moved from another, in percent: `kvplan diff`'s change column, `check`'s
// change against the baseline, `calibrate`'s error of a modelled figure against a measured one.
// One formula, so that every front end rounds the same figure.

#include <optional>

namespace kvplan {

/// (after - before) / before x 100: how far `after` is from `before`, in percent of `before`;
/// nullopt when `before` is 0 (no ratio exists: a figure that appears, or stays 0).
[[nodiscard]] constexpr std::optional<double> change_percent(double before, double after) noexcept {
    if (before == 0.0) return std::nullopt;
    return (after - before) / before * 100.0;
}

}  // namespace kvplan
