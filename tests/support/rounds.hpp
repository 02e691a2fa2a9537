#pragma once

// How many rounds a randomised property test runs: all of them in an ordinary build, an eighth
// under AddressSanitizer and UndefinedBehaviorSanitizer (KVPLAN_SANITIZE). A round there costs 10
// to 30 times as much, and what the sanitizers look for (a bad read, an overflow) shows in the
// first rounds that reach the code; the ordinary build still checks every round's figures.

#include <algorithm>

namespace kvplan::test {

[[nodiscard]] constexpr int rounds(int n) {
#ifdef KVPLAN_TEST_SANITIZED
    return std::max(1, n / 8);
#else
    return n;
#endif
}

}  // namespace kvplan::test
