#pragma once

// A quantized checkpoint's format read module by module, where its quantization names modules:
//
//   ModelOpt            hf_quant_config.json's "quantization" (or config.json's quantization_config
//                       with quant_method "modelopt"): quant_algo for every linear layer but those
//                       exclude_modules (or ignore) names, by fnmatch wildcard or by module prefix;
//                       MIXED_PRECISION lists each quantized module in quantized_layers with its
//                       own quant_algo, every other module staying unquantized.
//   compressed-tensors  config_groups, each a weights scheme and its targets ("Linear": every
//   linear
//                       layer; "re:" a regex matched from the name's start, as Python's re.match;
//                       else a module name), the first group that targets a module deciding its
//                       format; ignore lists modules left unquantized, in the same spellings.
//   fp8, awq, gptq      one format for every linear layer but modules_to_not_convert (or
//                       ignored_layers).
//
// kvplan's tensors do not carry the checkpoint's names, so each part of a layer (attention, its
// output projection, the dense MLP, routed and shared experts, the mixers, the LM head) is given
// the names the families' checkpoints use for it (model.layers.3.self_attn.q_proj,
// backbone.layers.3.mixer.experts.0.up_proj, language_model.model.layers.3.mlp.shared_experts...),
// and a part of a layer takes the format of the first of its names the lists decide. A part that
// differs from layer to layer (rare: checkpoints exclude a part everywhere, or whole layers that
// hold it alone, such as the dense layers before DeepSeek's MoE layers) takes the format of most
// of its layers, and a note says so.

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../error.hpp"
#include "../json.hpp"
#include "../model.hpp"
#include "../weight_format.hpp"
#include "checkpoint.hpp"

namespace kvplan {

namespace detail::hf {

/// Whether `name` matches `pattern` as Python's fnmatch does: `*` any run, `?` one character,
/// `[...]` one of a set (`[!...]` none of it), every other character itself.
[[nodiscard]] inline bool glob_match(std::string_view pattern, std::string_view name) {
    std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
    const auto class_match = [&](std::size_t& at, char c) {
        // pattern[at] == '['; on return `at` is past the closing ']'. Returns nullopt-like -1 when
        // the set is not closed (then '[' is a plain character).
        std::size_t i = at + 1;
        bool negate = false;
        if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
            negate = true;
            ++i;
        }
        bool found = false;
        bool first = true;
        while (i < pattern.size() && (first || pattern[i] != ']')) {
            first = false;
            if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
                found = found || (pattern[i] <= c && c <= pattern[i + 2]);
                i += 3;
            } else {
                found = found || pattern[i] == c;
                ++i;
            }
        }
        if (i >= pattern.size()) return -1;  // no closing ']'
        at = i + 1;
        return found != negate ? 1 : 0;
    };
    while (n < name.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = n;
            continue;
        }
        if (p < pattern.size()) {
            if (pattern[p] == '[') {
                std::size_t at = p;
                const int m = class_match(at, name[n]);
                if (m == 1) {
                    p = at;
                    ++n;
                    continue;
                }
                if (m == -1 && name[n] == '[') {
                    ++p;
                    ++n;
                    continue;
                }
            } else if (pattern[p] == '?' || pattern[p] == name[n]) {
                ++p;
                ++n;
                continue;
            }
        }
        if (star == std::string_view::npos) return false;
        p = star + 1;
        n = ++mark;
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

/// The parts of a layer a checkpoint's quantization may treat apart.
enum class QuantPart : std::uint8_t {
    attention,         ///< the attention projections but the output one (and MLA's, the indexer)
    attention_output,  ///< o_proj
    dense_mlp,
    routed_experts,
    shared_experts,
    mixers,  ///< Mamba and linear-attention mixers' projections; LatentMoE's latent projections
    lm_head,
};
inline constexpr std::size_t quant_part_count = 7;
inline constexpr const char* quant_part_names[quant_part_count] = {
    "attention",      "attention output projection",
    "dense MLP",      "routed experts",
    "shared experts", "mixers",
    "LM head"};

/// Module names (after the layer prefix) a family's checkpoint uses for each part.
[[nodiscard]] inline const std::vector<std::string_view>& part_bodies(QuantPart p) {
    static const std::vector<std::string_view> attention = {"self_attn.q_proj",
                                                            "self_attn.k_proj",
                                                            "self_attn.v_proj",
                                                            "self_attn.qkv_proj",
                                                            "self_attn.q_a_proj",
                                                            "self_attn.q_b_proj",
                                                            "self_attn.kv_a_proj_with_mqa",
                                                            "self_attn.kv_b_proj",
                                                            "self_attn.indexer.wq_b",
                                                            "self_attn.indexer.wk",
                                                            "self_attn.indexer.weights_proj",
                                                            "mixer.q_proj",
                                                            "mixer.k_proj",
                                                            "mixer.v_proj",
                                                            "attn.q_proj",
                                                            "attn.k_proj",
                                                            "attn.v_proj"};
    static const std::vector<std::string_view> output = {"self_attn.o_proj", "mixer.o_proj",
                                                         "attn.o_proj", "self_attn.dense"};
    static const std::vector<std::string_view> dense = {
        "mlp.gate_proj",        "mlp.up_proj",           "mlp.down_proj",
        "mixer.up_proj",        "mixer.down_proj",       "feed_forward.gate_proj",
        "feed_forward.up_proj", "feed_forward.down_proj"};
    static const std::vector<std::string_view> routed = {"mlp.experts",
                                                         "mlp.experts.0.gate_proj",
                                                         "mlp.experts.0.up_proj",
                                                         "mlp.experts.0.down_proj",
                                                         "block_sparse_moe.experts.0.w1",
                                                         "block_sparse_moe.experts.0.w2",
                                                         "block_sparse_moe.experts.0.w3",
                                                         "mixer.experts.0.up_proj",
                                                         "mixer.experts.0.down_proj",
                                                         "feed_forward.experts",
                                                         "ffn.experts"};
    static const std::vector<std::string_view> shared = {
        "mlp.shared_experts.gate_proj",
        "mlp.shared_experts.up_proj",
        "mlp.shared_experts.down_proj",
        "mlp.shared_expert.gate_proj",
        "mlp.shared_expert.up_proj",
        "mlp.shared_expert.down_proj",
        "block_sparse_moe.shared_experts.gate_proj",
        "block_sparse_moe.shared_experts.up_proj",
        "block_sparse_moe.shared_experts.down_proj",
        "mixer.shared_experts.up_proj",
        "mixer.shared_experts.down_proj",
        "feed_forward.shared_expert.gate_proj",
        "feed_forward.shared_expert.up_proj",
        "feed_forward.shared_expert.down_proj"};
    static const std::vector<std::string_view> mixers = {
        "mixer.in_proj",         "mixer.out_proj",           "mamba.in_proj",
        "mamba.out_proj",        "linear_attn.in_proj_qkvz", "linear_attn.in_proj_qkv",
        "linear_attn.in_proj_z", "linear_attn.in_proj_ba",   "linear_attn.out_proj",
        "mixer.fc1_latent_proj", "mixer.fc2_latent_proj"};
    static const std::vector<std::string_view> none = {};
    switch (p) {
        case QuantPart::attention:
            return attention;
        case QuantPart::attention_output:
            return output;
        case QuantPart::dense_mlp:
            return dense;
        case QuantPart::routed_experts:
            return routed;
        case QuantPart::shared_experts:
            return shared;
        case QuantPart::mixers:
            return mixers;
        case QuantPart::lm_head:
            return none;
    }
    return none;
}

/// The prefixes of a layer's modules across families: model.layers.N (Llama, Qwen, DeepSeek),
/// backbone.layers.N (Nemotron-H), language_model.model.layers.N and model.language_model.layers.N
/// (multimodal wrappers), layers.N (DeepSeek-V4).
inline constexpr std::string_view layer_prefixes[] = {"model.layers.", "backbone.layers.",
                                                      "language_model.model.layers.",
                                                      "model.language_model.layers.", "layers."};

/// The names of part `p` of layer `layer` of `m`, every family's spelling; empty when the layer
/// has no such part. `moe_beside_mlp`: Gemma 4's layout, its routed experts at layers.N.experts
/// beside a dense MLP at layers.N.mlp (kvplan's shared expert), where the other families' mlp
/// holds the experts.
[[nodiscard]] inline std::vector<std::string> part_names(const Model& m, std::uint32_t layer,
                                                         QuantPart p, bool moe_beside_mlp = false) {
    std::vector<std::string> out;
    const ModelConfig& c = m.config();
    const CacheKind kind = m.layer(layer).kind;
    const bool attention = kind == CacheKind::full_attention || kind == CacheKind::sliding_window ||
                           kind == CacheKind::chunked_local || kind == CacheKind::mla_latent ||
                           kind == CacheKind::shared;
    const bool moe = m.is_moe_layer(layer);
    bool holds = false;
    switch (p) {
        case QuantPart::attention:
        case QuantPart::attention_output:
            holds = attention;
            break;
        case QuantPart::dense_mlp:
            holds = m.has_mlp(layer) && !moe;
            break;
        case QuantPart::routed_experts:
            holds = moe;
            break;
        case QuantPart::shared_experts:
            holds = moe && (c.moe.shared_experts != 0 || c.moe.shared_intermediate_size != 0);
            break;
        case QuantPart::mixers:
            holds = kind == CacheKind::constant_state || (moe && c.moe.latent_size != 0);
            break;
        case QuantPart::lm_head:
            holds = false;
            break;
    }
    if (!holds) return out;
    // Kimi Linear's KDA layers (the recurrent layers of the one family that puts them beside MLA)
    // keep their projections under self_attn (vLLM's kimi_linear.py, SGLang's kimi_k3.py
    // load_weights), where the other families' mixers are mamba, mixer or linear_attn modules.
    static const std::vector<std::string_view> kda = {
        "self_attn.q_proj", "self_attn.k_proj",   "self_attn.v_proj",   "self_attn.b_proj",
        "self_attn.g_proj", "self_attn.f_a_proj", "self_attn.f_b_proj", "self_attn.o_proj"};
    const bool kda_layer = p == QuantPart::mixers && kind == CacheKind::constant_state &&
                           m.layers().layers_of_kind(CacheKind::mla_latent) != 0;
    // Gemma 4's checkpoint names (vLLM's gemma4.py _weight_iterator): the packed
    // experts.gate_up_proj and experts.down_proj, or per-expert experts.0.gate_proj once
    // quantized; the dense MLP's gate_proj, up_proj and down_proj under mlp. A ModelOpt list
    // that excludes "layers.N.mlp*" keeps the dense MLP, not the experts, in 16 bits.
    static const std::vector<std::string_view> gemma4_experts = {
        "experts",           "experts.gate_up_proj", "experts.down_proj", "experts.0.gate_proj",
        "experts.0.up_proj", "experts.0.down_proj"};
    static const std::vector<std::string_view> gemma4_mlp = {"mlp.gate_proj", "mlp.up_proj",
                                                             "mlp.down_proj"};
    const std::vector<std::string_view>* bodies = kda_layer ? &kda : &part_bodies(p);
    if (moe_beside_mlp && p == QuantPart::routed_experts) bodies = &gemma4_experts;
    if (moe_beside_mlp && p == QuantPart::shared_experts) bodies = &gemma4_mlp;
    const std::string index = std::to_string(layer) + ".";
    for (std::string_view prefix : layer_prefixes)
        for (std::string_view body : *bodies)
            out.push_back(std::string(prefix).append(index).append(body));
    return out;
}

/// One pattern of a module list: an fnmatch wildcard, a "re:" regex (matched from the name's
/// start), or a module name, which also covers the modules inside it.
class ModulePattern {
   public:
    ModulePattern(std::string text, const JsonReader& where, std::string_view key)
        : text_(std::move(text)) {
        if (text_.rfind("re:", 0) == 0) {
            try {
                regex_.emplace(text_.substr(3), std::regex::ECMAScript | std::regex::optimize);
            } catch (const std::regex_error&) {
                where.fail(key, "regular expressions kvplan can read (ECMAScript syntax)",
                           "\"" + text_ + "\"");
            }
        } else {
            const std::size_t wild = text_.find_first_of("*?[");
            glob_ = wild != std::string::npos;
            literal_size_ = glob_ ? wild : text_.size();
        }
    }
    /// Whether a name starting with `head` (a layer's prefix, "model.layers.3.") may match: the
    /// pattern's literal start and `head` agree as far as both go. Regexes may match anything.
    [[nodiscard]] bool may_match_under(std::string_view head) const {
        if (regex_) return true;
        const std::size_t n = std::min(head.size(), literal_size_);
        return head.compare(0, n, text_, 0, n) == 0;
    }
    [[nodiscard]] bool matches(std::string_view name) const {
        if (regex_)
            return std::regex_search(name.begin(), name.end(), *regex_,
                                     std::regex_constants::match_continuous);
        if (glob_) return glob_match(text_, name);
        return name == text_ ||
               (name.size() > text_.size() && name.compare(0, text_.size(), text_) == 0 &&
                name[text_.size()] == '.');
    }
    [[nodiscard]] const std::string& text() const { return text_; }

   private:
    std::string text_;
    std::optional<std::regex> regex_;
    bool glob_ = false;
    std::size_t literal_size_ = 0;  ///< the length of the text before the first wildcard
};

/// A list of module patterns (exclude_modules, ignore, targets, modules_to_not_convert).
[[nodiscard]] inline std::vector<ModulePattern> module_patterns(const JsonReader& q,
                                                                std::string_view key) {
    std::vector<ModulePattern> out;
    if (const auto names = q.optional_string_array(key))
        for (const std::string& n : *names) out.emplace_back(n, q, key);
    return out;
}

[[nodiscard]] inline bool any_match(const std::vector<ModulePattern>& patterns,
                                    const std::vector<std::string>& names) {
    for (const ModulePattern& p : patterns)
        for (const std::string& n : names)
            if (p.matches(n)) return true;
    return false;
}

[[nodiscard]] inline bool any_match(const std::vector<const ModulePattern*>& patterns,
                                    const std::vector<std::string>& names) {
    for (const ModulePattern* p : patterns)
        for (const std::string& n : names)
            if (p->matches(n)) return true;
    return false;
}

/// The patterns of `all` that may match a module of layer `layer` under any layer prefix: a
/// long exclusion list names each layer's modules apart, and most of it cannot match a given
/// layer.
[[nodiscard]] inline std::vector<const ModulePattern*> patterns_for_layer(
    const std::vector<ModulePattern>& all, std::uint32_t layer) {
    std::vector<const ModulePattern*> out;
    const std::string index = std::to_string(layer) + ".";
    std::string heads[std::size(layer_prefixes)];
    for (std::size_t k = 0; k < std::size(layer_prefixes); ++k)
        heads[k] = std::string(layer_prefixes[k]) + index;
    for (const ModulePattern& p : all)
        for (const std::string& h : heads)
            if (p.may_match_under(h)) {
                out.push_back(&p);
                break;
            }
    return out;
}

/// How a checkpoint's quantization assigns formats to modules.
struct QuantScheme {
    WeightFormat unquantized = WeightFormat::bf16;
    /// The format of every linear layer not excluded (ModelOpt's quant_algo, fp8, awq...); empty
    /// when only `per_module` or `groups` quantize (MIXED_PRECISION, compressed-tensors).
    std::optional<WeightFormat> every_linear{};
    std::vector<ModulePattern> exclude{};
    /// MIXED_PRECISION: the format of each module it lists.
    std::unordered_map<std::string, WeightFormat> per_module{};
    /// compressed-tensors: each group's targets ("Linear" matching every linear layer) and format.
    struct Group {
        std::vector<ModulePattern> targets;
        bool every_linear = false;
        WeightFormat format;
    };
    std::vector<Group> groups{};
    /// Only the routed experts are quantized (transformers' Mxfp4HfQuantizer).
    bool experts_only = false;
    /// What the linear layers and the routed experts it leaves alone keep: the source checkpoint's
    /// formats (CheckpointFormat::kept_linear, kept_experts), else `unquantized`.
    WeightFormat kept_linear = WeightFormat::bf16;
    WeightFormat kept_experts = WeightFormat::bf16;
    /// The routed experts sit beside a dense MLP (Gemma 4's enable_moe_block): see part_names.
    bool moe_beside_mlp = false;
};

/// The format a module keeps where `s` leaves it alone: its linear layers' or its experts'.
[[nodiscard]] inline WeightFormat kept_format(const QuantScheme& s, bool experts) {
    return experts ? s.kept_experts : s.kept_linear;
}

/// The format `s` gives a module with any of `names` (a part of a layer, or the LM head), where
/// `exclude` holds those of s.exclude that may match them and `kept` is what the module keeps
/// where the scheme leaves it alone.
[[nodiscard]] inline WeightFormat format_of(const QuantScheme& s,
                                            const std::vector<const ModulePattern*>& exclude,
                                            const std::vector<std::string>& names, bool experts,
                                            WeightFormat kept) {
    if (s.experts_only && !experts) return kept;
    if (any_match(exclude, names)) return kept;
    for (const std::string& n : names)
        if (const auto it = s.per_module.find(n); it != s.per_module.end()) return it->second;
    for (const QuantScheme::Group& g : s.groups)
        if (g.every_linear || any_match(g.targets, names)) return g.format;
    return s.every_linear.value_or(kept);
}

/// `base` (its layout, source and rest already set) with each part's format as `s` assigns it on
/// the layers of `m`; a note for each part whose layers differ.
[[nodiscard]] inline CheckpointFormat formats_by_module(CheckpointFormat base, const QuantScheme& s,
                                                        const Model& m,
                                                        std::vector<std::string>& notes) {
    std::optional<WeightFormat> chosen[quant_part_count];
    // For each part, the layers of each format; the most common wins.
    std::vector<std::pair<WeightFormat, std::uint32_t>> counts[quant_part_count];
    std::uint32_t holders[quant_part_count] = {};
    for (std::uint32_t i = 0; i < m.num_layers(); ++i) {
        const std::vector<const ModulePattern*> exclude = patterns_for_layer(s.exclude, i);
        for (std::size_t k = 0; k < quant_part_count; ++k) {
            const auto part = static_cast<QuantPart>(k);
            const std::vector<std::string> names = part_names(m, i, part, s.moe_beside_mlp);
            if (names.empty()) continue;
            ++holders[k];
            const bool experts = part == QuantPart::routed_experts;
            const WeightFormat f = format_of(s, exclude, names, experts, kept_format(s, experts));
            auto it = std::find_if(counts[k].begin(), counts[k].end(),
                                   [&](const auto& e) { return e.first == f; });
            if (it == counts[k].end())
                counts[k].emplace_back(f, 1);
            else
                ++it->second;
        }
    }
    {
        std::vector<const ModulePattern*> all;
        for (const ModulePattern& p : s.exclude) all.push_back(&p);
        // A head the scheme leaves alone stays as embeddings are (DeepSeek-V4's bf16 head beside
        // its fp8 layers).
        chosen[static_cast<std::size_t>(QuantPart::lm_head)] =
            format_of(s, all, {"lm_head", "language_model.lm_head"}, false, s.unquantized);
    }
    for (std::size_t k = 0; k < quant_part_count; ++k) {
        if (counts[k].empty()) continue;
        const auto most =
            std::max_element(counts[k].begin(), counts[k].end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; });
        chosen[k] = most->first;
        if (counts[k].size() > 1)
            notes.push_back(std::string("quantization: the formats of the ") + quant_part_names[k] +
                            " differ across layers (" + std::to_string(counts[k].size()) +
                            " formats); all sized as " + name(most->first) + ", the format of " +
                            std::to_string(most->second) + " of " + std::to_string(holders[k]) +
                            " layers");
    }
    const auto at = [&](QuantPart p) { return chosen[static_cast<std::size_t>(p)]; };
    // The multi-token-prediction layers follow the model's layers (DeepSeek-V3's layer 61): where
    // the scheme leaves the MLP of the first of them alone while it quantizes the model's own, the
    // checkpoint stores them as it stores what it leaves alone.
    if (m.config().mtp_layers != 0 && m.num_layers() != 0) {
        const std::uint32_t last = m.num_layers() - 1;
        const QuantPart mlp =
            m.is_moe_layer(last) ? QuantPart::routed_experts : QuantPart::dense_mlp;
        const std::string index = std::to_string(m.num_layers()) + ".";
        std::vector<std::string> names;
        for (std::string_view prefix : layer_prefixes)
            for (std::string_view body : part_bodies(mlp))
                names.push_back(std::string(prefix).append(index).append(body));
        const bool experts = mlp == QuantPart::routed_experts;
        const WeightFormat kept = kept_format(s, experts);
        const WeightFormat own = at(mlp).value_or(kept);
        base.mtp_unquantized =
            own != kept && format_of(s, patterns_for_layer(s.exclude, m.num_layers()), names,
                                     experts, kept) == kept;
    }
    // `linear` names the blocks' linear layers outside the experts (as a config's dense format
    // reads, "bf16, experts mxfp4"): the dense MLP's format, else the shared experts', else
    // attention's; every part present is then set explicitly. extra_params outside any mixer
    // (attention sinks, Gemma-3n's per-layer tables) are not linear layers a scheme quantizes.
    std::optional<WeightFormat> first = at(QuantPart::dense_mlp);
    for (QuantPart p : {QuantPart::shared_experts, QuantPart::attention, QuantPart::routed_experts})
        if (!first) first = at(p);
    base.known = true;
    base.linear = first.value_or(s.every_linear.value_or(base.rest));
    base.experts = at(QuantPart::routed_experts).value_or(base.linear);
    base.attention = at(QuantPart::attention).value_or(base.linear);
    if (const auto f = at(QuantPart::attention_output)) base.attention_output = *f;
    if (const auto f = at(QuantPart::shared_experts)) base.shared_experts = *f;
    if (const auto f = at(QuantPart::dense_mlp)) base.dense_mlp = *f;
    if (const auto f = at(QuantPart::mixers))
        base.mixers = *f;
    else if (m.config().extra_params != 0)
        base.mixers = base.rest;
    if (const auto f = at(QuantPart::lm_head); f && *f != base.rest) base.lm_head = *f;
    return base;
}

}  // namespace detail::hf

namespace detail::hf {

/// `base` (checkpoint_format's reading of `top`, a config.json) refined module by module on the
/// layers of `m`, where the quantization_config names modules (see the top of this file); notes
/// for what it could not follow. An unknown `base`, or a config without quantization_config,
/// comes back unchanged.
[[nodiscard]] inline CheckpointFormat checkpoint_format_by_module(const JsonReader& top,
                                                                  const Model& m,
                                                                  CheckpointFormat base,
                                                                  std::vector<std::string>& notes) {
    const std::optional<JsonReader> q = quantization_section(top);
    if (!base.known || !q) return base;
    const std::string method = quant_method_of(*q);
    QuantScheme s;
    s.unquantized = base.rest;
    s.kept_linear = base.kept_linear.value_or(base.rest);
    s.kept_experts = base.kept_experts.value_or(s.kept_linear);
    {
        const std::optional<JsonReader> text = top.optional_object("text_config");
        s.moe_beside_mlp =
            (text ? *text : top).optional_boolean("enable_moe_block").value_or(false);
    }
    bool lm_head_linear = false;
    const auto excludes = [&](std::initializer_list<const char*> keys) {
        for (const char* key : keys)
            for (ModulePattern& p : module_patterns(*q, key)) s.exclude.push_back(std::move(p));
    };
    if (method == "modelopt") {
        // The lists name modules as the checkpoint does; ModelOpt quantizes every nn.Linear it does
        // not exclude, the LM head included.
        lm_head_linear = true;
        excludes({"exclude_modules", "ignore"});
        const std::string algo = upper_ascii(q->optional_string("quant_algo").value_or(""));
        if (algo == "MIXED_PRECISION") {
            const std::optional<JsonReader> layers = q->optional_object("quantized_layers");
            if (!layers) return base;
            // One note per algorithm kvplan does not model, not per module: a checkpoint may
            // list hundreds of modules in one (MiniMax-M3-NVFP4 lists 534 in MXFP8).
            struct Unmodelled {
                std::string algo, first;
                std::size_t modules = 0;
            };
            std::vector<Unmodelled> unmodelled;
            for (const auto& [module, spec] : layers->json().items()) {
                const JsonReader one = layers->object(module);
                const std::string a = upper_ascii(one.optional_string("quant_algo").value_or(""));
                const auto f =
                    modelopt_format(a, one.optional_positive_integer("group_size"), base.layout);
                if (f) {
                    s.per_module.emplace(module, *f);
                    continue;
                }
                auto u = std::find_if(unmodelled.begin(), unmodelled.end(),
                                      [&](const Unmodelled& e) { return e.algo == a; });
                if (u == unmodelled.end()) u = unmodelled.insert(u, {a, module, 0});
                ++u->modules;
            }
            for (const Unmodelled& u : unmodelled)
                notes.push_back(
                    "quantization: quantized_layers." + u.first +
                    (u.modules > 1 ? " and " + std::to_string(u.modules - 1) + " more modules are "
                                   : std::string(" is ")) +
                    u.algo + ", which kvplan does not model; sized as " + name(base.rest));
        } else {
            s.every_linear = base.linear;
        }
    } else if (method == "compressed-tensors") {
        lm_head_linear = true;
        excludes({"ignore"});
        const std::optional<JsonReader> groups = q->optional_object("config_groups");
        if (!groups) return base;
        for (const auto& [key, value] : groups->json().items()) {
            const JsonReader g = groups->object(key);
            const std::optional<JsonReader> w = g.optional_object("weights");
            if (!w) continue;
            const auto f = compressed_tensors_format(*w, base.layout);
            if (!f) {
                notes.push_back("quantization: config_groups." + key +
                                " is a scheme kvplan does not model; its modules sized as " +
                                name(base.rest));
                continue;
            }
            QuantScheme::Group group{module_patterns(g, "targets"), false, *f};
            const auto targets = g.optional_string_array("targets");
            group.every_linear =
                !targets || std::find(targets->begin(), targets->end(), "Linear") != targets->end();
            s.groups.push_back(std::move(group));
        }
        // "dense": weights stored unquantized, quantized as they load.
        if (q->optional_string("format").value_or("") == "dense") s.groups.clear();
    } else if (method == "fp8" && base.kept_experts) {
        // DeepSeek-V4's own format (checkpoint_format): its experts are not fp8, and its lists
        // (ModelOpt's ignore, beside moe_quant_algo) name what the expert conversion left alone.
        return base;
    } else if (method == "fp8" || method == "awq" || method == "gptq") {
        s.every_linear = base.linear;
        excludes({"modules_to_not_convert", "ignored_layers"});
    } else if (method == "mxfp4") {
        s.every_linear = WeightFormat::mxfp4;
        s.experts_only = true;
    } else {
        return base;
    }
    CheckpointFormat c = formats_by_module(base, s, m, notes);
    if (!lm_head_linear) c.lm_head = Optional<WeightFormat>{};
    return c;
}

}  // namespace detail::hf

}  // namespace kvplan
