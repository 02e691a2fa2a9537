// static_assert-only: the distance behind "did you mean" holds at compile time.

#include <kvplan/detail/nearest.hpp>

namespace kd = kvplan::detail;

static_assert(kd::edit_distance("fti", "fit") == 1);
static_assert(kd::edit_distance("--conccurency", "--concurrency") == 2);
static_assert(kd::edit_distance("GIB", "GiB") == 0);
static_assert(kd::edit_distance_cased("GIB", "GiB") == 1);
static_assert(kd::suggestion_threshold(1) == 0 && kd::suggestion_threshold(11) == 3);
