#include "replica.hpp"

#include <kvplan/detail/nearest.hpp>
#include <kvplan/error.hpp>
#include <string_view>
#include <vector>

#include "flags.hpp"
#include "parse.hpp"

namespace kvplan::cli {

EngineSetup engine_setup(const CommonOptions& o) {
    // The one parse of the engine's flags (flags.cpp), resolved by the library.
    const ResolvedServing r = resolve_serving(parse_serving(o));
    return EngineSetup{.engine = r.engine,
                       .budget = r.budget,
                       .options = r.options,
                       .block_size = r.block_size,
                       .block_size_given = r.block_size_given,
                       .utilization_given = r.fraction_given};
}

}  // namespace kvplan::cli
