// tp = 3 cannot split Llama-3-70B's 8 KV heads: a compile error in a constant expression.
#include <kvplan/layout.hpp>
#include <kvplan/presets.hpp>
#ifdef KVPLAN_CF_TWIN
[[maybe_unused]] constexpr kvplan::Layout l{kvplan::presets::llama_3_70b, {.tp = 4}};
#else
[[maybe_unused]] constexpr kvplan::Layout l{kvplan::presets::llama_3_70b, {.tp = 3}};
#endif
