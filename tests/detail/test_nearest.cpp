// detail/nearest.hpp: the distance behind every "did you mean", and which names it offers.

#include <array>
#include <catch2/catch.hpp>
#include <kvplan/detail/nearest.hpp>
#include <string>
#include <string_view>
#include <vector>

using namespace kvplan::detail;

namespace {
const std::vector<std::string> subcommands{"size",  "fit",   "plan",     "compare",
                                           "diff",  "check", "roofline", "list",
                                           "trace", "fleet", "calibrate"};
}  // namespace

TEST_CASE("the distance counts insertions, deletions, substitutions and neighbour swaps",
          "[nearest]") {
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("", "tp") == 2);  // two insertions
    CHECK(edit_distance("fit", "fit") == 0);
    CHECK(edit_distance("fti", "fit") == 1);                 // t and i swapped
    CHECK(edit_distance("llama-3-70", "llama-3-70b") == 1);  // b left out
    CHECK(edit_distance("vlm", "vllm") == 1);
    CHECK(edit_distance("h10", "h100") == 1);
    // "conccurency" -> "concurrency": drop the second c, add an r: two edits (no swap helps).
    CHECK(edit_distance("--conccurency", "--concurrency") == 2);
    // kitten -> sitting: k/s, e/i, + g: the textbook three.
    CHECK(edit_distance("kitten", "sitting") == 3);
    // Optimal string alignment edits no substring twice: "ca" -> "abc" is 3 (full
    // Damerau-Levenshtein would say 2: swap, then insert between the swapped letters).
    CHECK(edit_distance("ca", "abc") == 3);
    // Symmetric.
    CHECK(edit_distance("tensor_parallel", "tp") == edit_distance("tp", "tensor_parallel"));
}

TEST_CASE("the distance ignores case, and the cased one breaks ties", "[nearest]") {
    CHECK(edit_distance("GIB", "GiB") == 0);
    CHECK(edit_distance("kb", "kB") == 0);
    CHECK(edit_distance_cased("GIB", "GiB") == 1);
    CHECK(edit_distance_cased("KB", "kB") == 1);
    // "GIB" is 0 from GiB and 1 from GB when case is ignored: GiB.
    const std::array<std::string_view, 3> units{"GB", "GiB", "MiB"};
    CHECK(nearest_name("GIB", units) == "GiB");
    // "mib" is 0 from MiB ignoring case; "Mib" too.
    CHECK(nearest_name("mib", units) == "MiB");
}

TEST_CASE("long inputs are compared on their first 64 characters", "[nearest]") {
    const std::string a(10'000, 'a'), b(10'000, 'b');
    // 64 substitutions at most, however long the strings: the work is bounded.
    CHECK(edit_distance(a, b) == 64);
    CHECK(edit_distance(a, a) == 0);
}

TEST_CASE("a suggestion is offered within one edit per three characters", "[nearest]") {
    CHECK(suggestion_threshold(0) == 0);
    CHECK(suggestion_threshold(1) == 0);  // "-x" keeps nothing of "-h": no suggestion
    CHECK(suggestion_threshold(2) == 1);
    CHECK(suggestion_threshold(3) == 1);
    CHECK(suggestion_threshold(4) == 2);
    CHECK(suggestion_threshold(7) == 3);
    CHECK(suggestion_threshold(100) == 3);
    CHECK(without_dashes("--concurrency") == "concurrency");
    CHECK(without_dashes("-m") == "m");
    CHECK(without_dashes("--").empty());
}

TEST_CASE("the nearest known name is suggested, or none when nothing is near", "[nearest]") {
    CHECK(nearest_name("fti", subcommands) == "fit");
    CHECK(nearest_name("lst", subcommands) == "list");
    CHECK(nearest_name("chekc", subcommands) == "check");
    CHECK(nearest_name("rooflien", subcommands) == "roofline");
    CHECK_FALSE(nearest_name("xyzzy", subcommands).has_value());
    CHECK_FALSE(nearest_name("", subcommands).has_value());
    // Flags: dashes do not count towards the length that sets the threshold.
    const std::array<std::string_view, 4> flags{"--concurrency", "--context", "--help", "-h"};
    CHECK(nearest_name("--conccurency", flags) == "--concurrency");
    CHECK(nearest_name("--contxt", flags) == "--context");
    CHECK_FALSE(nearest_name("-x", flags).has_value());
}

TEST_CASE("a hint suggests the name an engine's spelling means", "[nearest]") {
    const std::array<std::string_view, 2> keys{"tp", "pp"};
    // "tensor_parallel" is 13 edits from "tp": only the hint finds it.
    CHECK_FALSE(nearest_name("tensor_parallel", keys).has_value());
    const std::vector<NameHint> hints{{"tensor_parallel_size", "tp"}, {"tensor_parallel", "tp"}};
    CHECK(nearest_name("tensor_parallel", keys, hints) == "tp");
    // Near a hint's spelling is near enough: "tensor_paralel_size" is 1 from the first.
    CHECK(nearest_name("tensor_paralel_size", keys, hints) == "tp");
    CHECK(did_you_mean("tensor_parallel", keys, hints) == "; did you mean 'tp'?");
    CHECK(did_you_mean("zzz", keys, hints).empty());
    CHECK(did_you_mean("sglnag", {"ideal", "vllm", "sglang", "trtllm"}) ==
          "; did you mean 'sglang'?");
}
