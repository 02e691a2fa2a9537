// Adding a size to a time is meaningless and must not compile.
#include <kvplan/units.hpp>
using namespace kvplan;
#ifdef KVPLAN_CF_TWIN
[[maybe_unused]] constexpr auto x = (1 * GiB) + (2 * GiB);
#else
[[maybe_unused]] constexpr auto x = (1 * GiB) + (1.0 * seconds);
#endif
