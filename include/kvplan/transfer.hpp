#pragma once

// Moving KV: the time to move one sequence's cache between tiers (GPU and host memory over PCIe,
// NVMe into the GPU), between GPUs (NVLink) and between nodes (InfiniBand, for prefill/decode
// disaggregation), and the KV cost of speculative decoding. Times are lower bounds: bytes over
// the link's one-way bandwidth, no latency, no protocol overhead.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "capacity.hpp"
#include "detail/checked.hpp"
#include "dtype.hpp"
#include "gpu.hpp"
#include "kv_bytes.hpp"
#include "layout.hpp"
#include "model.hpp"
#include "units.hpp"

namespace kvplan {

/// Whether every GPU has a link of its own or all of a replica's GPUs share one.
enum class LinkScope : std::uint8_t {
    per_gpu,  ///< each rank moves its share in parallel (a GPU's PCIe slot, NVLink, its own NIC)
    shared,   ///< the whole replica's bytes pass one link (a node's NVMe drive)
};

/// A link by its one-way bandwidth.
struct Link {
    std::string_view name{};
    BytesPerSecond bandwidth{};  ///< one direction
    LinkScope scope = LinkScope::per_gpu;
};

namespace links {

// PCIe moves 128 bits per 130 on the wire (PCIe 3.0 and later): 16 GT/s x 4 lanes x 128/130 / 8
// = 7.877 GB/s for Gen4 x4, the ceiling of any Gen4 NVMe drive; Gen5 doubles the rate (PCI-SIG
// base specification rates).

/// An NVMe drive on PCIe Gen4 x4: at most 7.877 GB/s, shared by the node's GPUs.
inline constexpr Link nvme_gen4_x4{"NVMe (PCIe Gen4 x4)", 16.0 * 4 * 128 / 130 / 8 * GB_per_s,
                                   LinkScope::shared};
/// An NVMe drive on PCIe Gen5 x4: at most 15.75 GB/s.
inline constexpr Link nvme_gen5_x4{"NVMe (PCIe Gen5 x4)", 32.0 * 4 * 128 / 130 / 8 * GB_per_s,
                                   LinkScope::shared};
/// InfiniBand NDR, 400 Gb/s per port (NVIDIA ConnectX-7): 50 GB/s each way, one NIC per GPU as in
/// a DGX H100.
inline constexpr Link infiniband_ndr{"InfiniBand NDR (400 Gb/s)", 50.0 * GB_per_s};
/// InfiniBand HDR, 200 Gb/s per port (ConnectX-6): 25 GB/s each way.
inline constexpr Link infiniband_hdr{"InfiniBand HDR (200 Gb/s)", 25.0 * GB_per_s};

/// The GPU's host link (its pcie_bandwidth), one per GPU.
[[nodiscard]] constexpr Link pcie(const GpuSpec& g) noexcept {
    return {"PCIe (GPU to host)", g.pcie_bandwidth, LinkScope::per_gpu};
}
/// The GPU's scale-up link (NVLink / Infinity Fabric, its scale_up_bandwidth).
[[nodiscard]] constexpr Link nvlink(const GpuSpec& g) noexcept {
    return {"NVLink (GPU to GPU)", g.scale_up_bandwidth, LinkScope::per_gpu};
}

}  // namespace links

/// The time to move one sequence's KV over a link, every term shown.
struct KvTransfer {
    std::uint64_t tokens = 0;
    Bytes bytes_per_rank{};  ///< the rank holding the most of it (its busiest stage)
    Bytes bytes_replica{};   ///< over the ranks of its dp rank: attention tp x each stage's share
    Link link{};
    std::uint32_t links_in_parallel = 1;  ///< ranks moving at once (1 for a shared link)
    Seconds
        time{};  ///< bytes_per_rank / bandwidth (per_gpu), or bytes_replica / bandwidth (shared)
};

/// Moving one sequence of `tokens` held under layout `l` over `link`; `block_size` > 1 moves whole
/// blocks, as paged engines do. Each GPU of the sequence's attention data-parallel rank moves its
/// own share at once (an MLA latent is whole on each of them; decode context parallelism splits
/// the tokens). Throws InvalidInput for a link without bandwidth.
[[nodiscard]] constexpr KvTransfer kv_transfer(const Model& m, KvFormat f, const Layout& l,
                                               std::uint64_t tokens, const Link& link,
                                               std::uint32_t block_size = 1) {
    if (!(link.bandwidth > BytesPerSecond{}))
        detail::throw_field_error<InvalidInput>(detail::model_where(m.config()), "link.bandwidth",
                                                "> 0", "0 for " + std::string(link.name));
    KvTransfer t;
    t.tokens = tokens;
    t.link = link;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const Bytes rank = reserved_per_sequence(m, f, tokens, block_size, l.stage(st));
        t.bytes_per_rank = std::max(t.bytes_per_rank, rank);
        t.bytes_replica += rank * l.attention_tp();
    }
    // A sequence lives on one attention data-parallel rank: its GPUs move it.
    t.links_in_parallel = link.scope == LinkScope::per_gpu ? l.dp_rank_gpus() : 1;
    t.time = link.scope == LinkScope::per_gpu ? t.bytes_per_rank / link.bandwidth
                                              : t.bytes_replica / link.bandwidth;
    return t;
}

/// The KV cost of speculative decoding per sequence, on the busiest rank: the target holds k more
/// positions (the verify pass writes KV for every draft token), and a draft model keeps its own
/// cache of the context and its drafts.
struct SpeculativeKv {
    std::uint32_t draft_tokens = 0;  ///< k, per sequence per step
    std::uint64_t context = 0;
    Bytes target{};         ///< the target's cache of the context, without drafts
    Bytes target_extra{};   ///< what k more positions add (whole blocks when paged)
    Bytes draft{};          ///< the draft model's cache of context + k (zero: no draft model)
    Bytes per_sequence{};   ///< target_extra + draft
    Bytes replica{};        ///< per_sequence x concurrency on that rank
    double overhead = 0.0;  ///< per_sequence / target
};

/// Options for speculative_kv: the draft model, if any (EAGLE heads and MTP layers are small
/// models of their own), its TP degree (default: the target's), and the block size.
struct SpeculativeOptions {
    std::optional<Model> draft{};
    std::uint32_t draft_tp = 0;  ///< 0: the target's tp
    KvFormat draft_kv{};
    std::uint32_t block_size = 1;
};

/// The KV cost of `k` draft tokens per sequence at `context` tokens, `concurrency` sequences, on
/// the busiest stage of the target under `l` (the draft's cache is counted on that stage's ranks).
[[nodiscard]] constexpr SpeculativeKv speculative_kv(const Model& target, KvFormat f,
                                                     const Layout& l, std::uint64_t context,
                                                     std::uint32_t k, std::uint64_t concurrency,
                                                     const SpeculativeOptions& o = {}) {
    SpeculativeKv s;
    s.draft_tokens = k;
    s.context = context;
    const Shard busiest = l.stage(busiest_stage(target, f, l, context + k));
    const std::uint32_t bs = std::max<std::uint32_t>(o.block_size, 1);
    s.target = reserved_per_sequence(target, f, context, bs, busiest);
    s.target_extra = reserved_per_sequence(target, f, context + k, bs, busiest) - s.target;
    if (o.draft) {
        const Shard d{.tp = o.draft_tp != 0 ? o.draft_tp : l.attention_tp()};
        s.draft = reserved_per_sequence(*o.draft, o.draft_kv, context + k, bs, d);
    }
    s.per_sequence = s.target_extra + s.draft;
    s.replica = s.per_sequence * concurrency;
    s.overhead = s.target.is_zero() ? 0.0
                                    : static_cast<double>(s.per_sequence.count()) /
                                          static_cast<double>(s.target.count());
    return s;
}

}  // namespace kvplan
