#pragma once

// KV tiers beside the GPU: how many sequences of the demand's context host memory, an NVMe drive
// or a remote store hold (vLLM's --kv-offloading-size, LMCache's local CPU and disk sizes), and
// how long one of them takes to come back to the GPU compared with recomputing its prefill. An
// evicted sequence is worth keeping in a tier when it comes back faster than its prefill is
// recomputed: bytes over a link against FLOPs over the GPU (transfer.hpp, roofline/prefill.hpp).

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "../detail/checked.hpp"
#include "../layout.hpp"
#include "../roofline/prefill.hpp"
#include "../transfer.hpp"
#include "../units.hpp"
#include "evaluate.hpp"

namespace kvplan {

/// The KV memory of each tier beside the GPUs, per replica (vLLM's --kv-offloading-size is the
/// total over a replica's tensor-parallel ranks); unset: no such tier.
struct TierSizes {
    std::optional<Bytes> host{};    ///< host DRAM, reached over each GPU's PCIe link
    std::optional<Bytes> nvme{};    ///< a local NVMe drive (PCIe Gen4 x4), shared by the replica
    std::optional<Bytes> remote{};  ///< a remote store over RDMA (InfiniBand NDR, a NIC per GPU)
};

/// The tiers a replica's KV can live in.
enum class Tier : std::uint8_t { host, nvme, remote };

/// One tier's figures.
struct TierFigures {
    Tier tier = Tier::host;
    Bytes size{};                 ///< its KV memory, per replica
    std::uint64_t sequences = 0;  ///< sequences of the context it holds: size / bytes_replica
    KvTransfer back{};            ///< one sequence coming back to the GPUs
    /// back.time / the recompute bound: under 1, bringing it back beats recomputing it.
    std::optional<double> versus_recompute{};
};

/// The tiers beside a replica.
struct TierAnswer {
    std::uint64_t context = 0;  ///< tokens of the sequence moved (the demand's context)
    Bytes sequence_bytes{};     ///< one sequence over its GPUs (whole blocks)
    /// The prefill bound of one prompt of the context: what recomputing it takes at least.
    std::optional<Seconds> recompute{};
    std::array<TierFigures, 3> tiers{};
    std::uint32_t num_tiers = 0;
};

/// Why the tiers of `sizes` cannot sit beside the replica of an answer: the tier refused, what
/// it needs and what was found (kvplan fit and Python's fit name the tier's flag or keyword).
struct TierProblem {
    Tier tier = Tier::host;
    std::string_view expected;
    std::string_view found;  ///< a view into the answer given to tier_problem
};

/// The first reason the tiers of `sizes` cannot sit beside the replica of `a`, or nothing: a
/// replica that does not start has nothing for a tier to hold (a tier holds what its GPUs evict),
/// and a host tier needs the GPU's PCIe figure to time the way back.
[[nodiscard]] constexpr std::optional<TierProblem> tier_problem(const ReplicaAnswer& a,
                                                                const TierSizes& sizes) noexcept {
    if (!sizes.host && !sizes.nvme && !sizes.remote) return std::nullopt;
    if (!a.starts())
        return TierProblem{.tier = sizes.host   ? Tier::host
                                   : sizes.nvme ? Tier::nvme
                                                : Tier::remote,
                           .expected = "a replica that starts (tiers hold what its GPUs evict)",
                           .found = name(a.refusal)};
    if (sizes.host && !(a.replica.gpu.pcie_bandwidth > BytesPerSecond{}))
        return TierProblem{
            .tier = Tier::host,
            .expected = "a GPU spec with a PCIe figure (pcie.GB_per_s_per_direction)",
            .found = std::string_view(a.replica.gpu.id.data(), a.replica.gpu.id.size())};
    return std::nullopt;
}

/// The tiers of `sizes` beside the replica of `a` (an evaluate() answer), for one sequence of its
/// demand's context; the recompute bound is set when the GPU states its bandwidth and FLOP/s and
/// the answer its decode bound. Throws InvalidInput for a tier over a link without bandwidth (a
/// GPU without a PCIe figure behind a host tier).
[[nodiscard]] inline TierAnswer kv_tiers(const ReplicaAnswer& a, const TierSizes& sizes,
                                         const RooflineOptions& o = {}) {
    const Replica& r = a.replica;
    const Layout l(r.model, r.parallel);
    TierAnswer out;
    out.context = a.demand.context;
    if (a.decode) out.recompute = prefill_bound(r, a.demand.context, 1, o).ttft;
    const auto add = [&](Tier t, const std::optional<Bytes>& size, const Link& link) {
        if (!size) return;
        TierFigures f;
        f.tier = t;
        f.size = *size;
        f.back = kv_transfer(r.model, r.kv, l, a.demand.context, link, a.serving.block_size);
        out.sequence_bytes = f.back.bytes_replica;
        f.sequences = f.back.bytes_replica.is_zero() ? 0 : *size / f.back.bytes_replica;
        if (out.recompute && *out.recompute > Seconds{})
            f.versus_recompute = f.back.time / *out.recompute;
        out.tiers[out.num_tiers++] = f;
    };
    add(Tier::host, sizes.host, links::pcie(r.gpu));
    add(Tier::nvme, sizes.nvme, links::nvme_gen4_x4);
    add(Tier::remote, sizes.remote, links::infiniband_ndr);
    return out;
}

}  // namespace kvplan
