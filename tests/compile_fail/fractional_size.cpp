// A size is a whole number of bytes: 5.38 * GiB must not compile (use round_to_bytes).
#include <kvplan/units.hpp>
#ifdef KVPLAN_CF_TWIN
[[maybe_unused]] constexpr kvplan::Bytes b = 5 * kvplan::GiB;
#else
[[maybe_unused]] constexpr kvplan::Bytes b = 5.38 * kvplan::GiB;
#endif
