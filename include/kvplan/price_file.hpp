#pragma once

// A price file: US$ per GPU-hour by GPU id, with the date the prices were read and their source.
// A price is a snapshot of one offer, so the file says when and where; "example": true marks
// figures that illustrate the method and quote nobody.
//
//   {"schema": "kvplan-prices/1", "example": true, "date": "2026-11-01",
//    "source": "...", "dollars_per_gpu_hour": {"h100-sxm": 2.99, "h200-sxm": 3.79}}

#include <cmath>
#include <filesystem>
#include <string>

#include "json.hpp"
#include "plan/review.hpp"

namespace kvplan {

/// The price table in `root`, read from `source` (named in errors). Throws InvalidInput naming the
/// field for an unknown key, a missing date or source, or a price that is not a finite number > 0.
[[nodiscard]] inline PriceTable price_table_from_json(const Json& root, const std::string& source) {
    const JsonReader r(root, source);
    r.only_keys(
        {"schema", "example", "date", "source", "currency", "notes", "dollars_per_gpu_hour"},
        "a price file",
        {{"prices", "dollars_per_gpu_hour"}, {"usd_per_gpu_hour", "dollars_per_gpu_hour"}});
    if (const auto schema = r.optional_string("schema"); schema && *schema != "kvplan-prices/1")
        r.fail("schema", "\"kvplan-prices/1\"", "\"" + detail::printable(*schema) + "\"");
    if (const auto currency = r.optional_string("currency"); currency && *currency != "USD")
        r.fail("currency", "\"USD\" (prices are US$ per GPU-hour)",
               "\"" + detail::printable(*currency) + "\"");
    PriceTable t;
    t.date = r.string("date");
    t.source = r.string("source");
    t.example = r.optional_boolean("example").value_or(false);
    (void)r.optional_string("notes");
    const JsonReader prices = r.object("dollars_per_gpu_hour");
    for (const auto& item : prices.json().items()) {
        const double v = prices.positive_number(item.key());
        if (!std::isfinite(v))
            prices.fail(item.key(), "a finite number of US$ per GPU-hour", "infinity");
        t.prices.push_back({item.key(), v});
    }
    if (t.prices.empty())
        r.fail("dollars_per_gpu_hour", "at least one GPU id with its price", "none");
    return t;
}

/// The price file `file`. Throws InvalidInput naming the file as read_json_file and
/// price_table_from_json do.
[[nodiscard]] inline PriceTable load_price_table(const std::filesystem::path& file) {
    return price_table_from_json(read_json_file(file), file.string());
}

}  // namespace kvplan
