#pragma once

// Which changed config.json fields moved a policy's outcomes: `kvplan check --baseline`'s
// attribution as a library call. The fields of the model's config.json that differ from the
// baseline's are found (json_field_changes), and each is reverted alone and the policy judged
// again (plan/check.hpp): an outcome whose figure or status then differs was moved by that field.
// The CLI points annotations and SARIF results at each field's line; serving code and the Python
// module get the same answer.
//
// Opt-in (needs nlohmann_json and the config.json import).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../gpu.hpp"
#include "../hf_config/import.hpp"
#include "../json.hpp"
#include "../json_position.hpp"
#include "../model.hpp"
#include "../plan/check.hpp"
#include "requirements.hpp"

namespace kvplan {

/// One changed config.json field and the outcomes it moves.
struct ConfigChange {
    std::vector<std::string> steps{};  ///< its path, key by key
    std::string path{};                ///< "text_config.num_key_value_heads"
    std::optional<Json> before{};      ///< the baseline's value; none: the field is new
    std::optional<Json> after{};       ///< the model's value; none: the field was removed
    std::uint32_t line = 0;            ///< in the model's config.json (a removed key: its parent's)
    std::vector<bool> moves{};         ///< per outcome: reverting this field alone changes it

    [[nodiscard]] bool moves_any() const {
        return std::find(moves.begin(), moves.end(), true) != moves.end();
    }
    /// The outcomes it moves.
    [[nodiscard]] std::size_t moved() const {
        return static_cast<std::size_t>(std::count(moves.begin(), moves.end(), true));
    }
};

/// Reverting more fields than this one by one is not worth it: the baseline is another model.
inline constexpr std::size_t max_changes_traced = 32;

/// Nor judging more checks again than this (changed fields x checks, a millisecond each): a policy
/// of many checks traces fewer fields, so that a gate answers in seconds.
inline constexpr std::size_t max_checks_retraced = 2048;

/// The changed fields of a config against its baseline, each with the outcomes it moves.
struct ConfigAttribution {
    std::vector<ConfigChange> changes{};  ///< empty when too_many or too_many_checks
    std::size_t fields = 0;               ///< the fields that changed
    bool too_many = false;                ///< more changed fields than max_changes_traced
    bool too_many_checks = false;         ///< more fields x checks than max_checks_retraced
};

/// What the attribution reads: the model's config.json (its parsed JSON and its text, for the
/// lines), the baseline's config.json, and the judged result.
struct AttributionRequest {
    const Json* config = nullptr;    ///< the model's config.json
    std::string_view config_text{};  ///< its text, for each field's line
    std::string_view source{};       ///< its file name, as the import names it in errors
    std::string_view model_name{};   ///< the model's name, as it was imported
    const Json* baseline = nullptr;  ///< the baseline's config.json
};

namespace detail::attribution {

[[nodiscard]] inline std::string dotted(const std::vector<std::string>& steps) {
    std::string s;
    for (const std::string& k : steps) s += (s.empty() ? "" : ".") + k;
    return s;
}

/// `doc` with change `c` undone: its value from before, or removed when it is new.
[[nodiscard]] inline Json reverted(const Json& doc, const ConfigChange& c) {
    Json out = doc;
    Json* node = &out;
    for (std::size_t i = 0; i + 1 < c.steps.size(); ++i) node = &(*node)[c.steps[i]];
    if (c.before)
        (*node)[c.steps.back()] = *c.before;
    else
        node->erase(c.steps.back());
    return out;
}

/// Per outcome, whether two results differ in its status or figure.
[[nodiscard]] inline std::vector<bool> moved(const CheckResult& a, const CheckResult& b) {
    std::vector<bool> moves(a.outcomes.size(), false);
    for (std::size_t i = 0; i < a.outcomes.size() && i < b.outcomes.size(); ++i) {
        const CheckOutcome& x = a.outcomes[i];
        const CheckOutcome& y = b.outcomes[i];
        const bool same = x.status == y.status &&
                          x.measured.has_value() == y.measured.has_value() &&
                          (!x.measured || (x.measured->unbounded == y.measured->unbounded &&
                                           x.measured->value() == y.measured->value()));
        moves[i] = !same;
    }
    return moves;
}

}  // namespace detail::attribution

/// The fields of `r.config` that differ from `r.baseline`, each with its line and the outcomes of
/// `result` (check_policy(p, model, gpus, &base)) it moves: `p` judged again on the config with
/// that field alone reverted. A config that does not import with a field reverted has that field
/// bound up with every figure: it moves every outcome. Precondition: r.config and r.baseline set.
[[nodiscard]] inline ConfigAttribution attribute_config_changes(const AttributionRequest& r,
                                                                const Policy& p,
                                                                std::span<const GpuSpec> gpus,
                                                                const Model& base,
                                                                const CheckResult& result) {
    ConfigAttribution t;
    for (JsonFieldChange& f : json_field_changes(*r.baseline, *r.config)) {
        ConfigChange c;
        c.path = detail::attribution::dotted(f.steps);
        c.steps = std::move(f.steps);
        if (f.before != nullptr) c.before = *f.before;
        if (f.after != nullptr) c.after = *f.after;
        t.changes.push_back(std::move(c));
    }
    t.fields = t.changes.size();
    t.too_many = t.fields > max_changes_traced;
    t.too_many_checks = !t.too_many && t.fields * result.outcomes.size() > max_checks_retraced;
    if (t.too_many || t.too_many_checks) {
        t.changes.clear();
        return t;
    }
    for (ConfigChange& c : t.changes) {
        std::vector<std::string> where = c.steps;
        if (!c.after && !where.empty()) where.pop_back();  // removed: its parent's line
        const auto at = json_position(r.config_text, std::span<const std::string>(where));
        c.line = at ? at->line : 1;
        try {
            const Model m = model_from_hf_json(detail::attribution::reverted(*r.config, c),
                                               r.source, r.model_name);
            c.moves = detail::attribution::moved(result, check_policy(p, m, gpus, &base));
        } catch (const Error&) {
            c.moves.assign(result.outcomes.size(), true);
        }
    }
    return t;
}

}  // namespace kvplan
