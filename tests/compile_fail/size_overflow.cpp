// 2^34 GiB is 2^64 bytes: the overflow is a compile error in a constant expression.
#include <kvplan/units.hpp>
#ifdef KVPLAN_CF_TWIN
[[maybe_unused]] constexpr kvplan::Bytes b = ((1ULL << 34) - 1) * kvplan::GiB;
#else
[[maybe_unused]] constexpr kvplan::Bytes b = (1ULL << 34) * kvplan::GiB;
#endif
