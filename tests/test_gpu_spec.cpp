#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/kv_support.hpp>
#include <kvplan/plan.hpp>
#include <kvplan/presets.hpp>
#include <kvplan/roofline.hpp>
#include <string>
#include <utility>
#include <vector>

using namespace kvplan;
namespace fs = std::filesystem;

namespace {
const fs::path config_dir{KVPLAN_CONFIG_DIR};
const fs::path bad_dir = fs::path{KVPLAN_TEST_DATA_DIR} / "bad";

std::string error_of(const fs::path& file) {
    try {
        (void)load_gpu_spec(file);
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

TEST_CASE("every bundled GPU spec file loads", "[gpu_spec]") {
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    // The twelve SKUs of the first issue and the six of issue 27.
    CHECK(reg.ids() == std::vector<std::string>{
                           "a100-pcie-80gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "b200", "b300",
                           "gb200", "gb300", "h100-nvl", "h100-pcie", "h100-sxm", "h20", "h200-sxm",
                           "l4", "l40s", "mi300x", "mi325x", "mi355x", "rtx-pro-6000"});
    for (const GpuSpecFile& g : reg.files()) {
        INFO(g.file.string());
        CHECK(g.file.stem().string() == g.spec.id.c_str());
        // Driver totals are at least the vendor's figure read in GB, less ECC on GDDR cards
        // (L40S, L4 lose about 1/16): never below 90% of it.
        CHECK(g.spec.memory_total.count() * 10 >= g.spec.memory_stated.count() * 9);
        // Every bundled file states the runtime's total, below the driver's by what the driver
        // reserves (450 to 770 MiB on the NVIDIA parts up to GB200, 926.56 MiB on B300 and about
        // 1,072 MiB on GB300, 0 on MI300X whose HIP and rocm-smi totals agree).
        CHECK(g.memory_basis == MemoryBasis::runtime);
        CHECK(g.spec.memory_total <= g.spec.memory_driver);
        CHECK(g.spec.memory_driver - g.spec.memory_total < 1100 * MiB);
        CHECK(g.spec.memory_bandwidth > BytesPerSecond{});
        CHECK(g.spec.dense(ComputeDtype::bf16).has_value());
        CHECK(g.spec.pcie_bandwidth > BytesPerSecond{});
        // Every file states its node and scale-up domain; a domain without a link is one GPU.
        CHECK(g.spec.scale_up_gpus >= 1);
        CHECK(g.spec.gpus_per_node >= 1);
        CHECK((g.spec.scale_up_bandwidth > BytesPerSecond{}) == (g.spec.scale_up_gpus > 1));
    }
}

TEST_CASE("GPUs per node and per scale-up domain are the systems' own", "[gpu_spec][node]") {
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    const auto node = [&](const char* id) {
        const GpuSpec g = *reg.find(id);
        return std::pair{g.gpus_per_node, g.scale_up_domain()};
    };
    // HGX/DGX boards: 8 GPUs joined by NVSwitch; AMD nodes: 8 joined by 7 Infinity Fabric links.
    for (const char* id : {"a100-sxm4-80gb", "h100-sxm", "h200-sxm", "h20", "b200", "b300",
                           "mi300x", "mi325x", "mi355x"})
        CHECK(node(id) == std::pair{8U, 8U});
    // NVL72 racks: 18 compute trays of 4 GPUs (2 superchips), 18 x 4 = 72 in one NVLink domain.
    CHECK(node("gb200") == std::pair{4U, 72U});
    CHECK(node("gb300") == std::pair{4U, 72U});
    // H100 NVL: bridged pairs; PCIe cards without NVLink: a domain of one.
    CHECK(node("h100-nvl") == std::pair{8U, 2U});
    for (const char* id : {"a100-pcie-80gb", "h100-pcie", "l40s", "l4", "rtx-pro-6000"})
        CHECK(node(id) == std::pair{8U, 1U});
    // Off the node-to-node network: the node, or the rack's 72 GPUs for an NVL72 tray.
    CHECK(reg.find("gb200")->fast_domain() == 72);
    CHECK(reg.find("h100-nvl")->fast_domain() == 8);
}

TEST_CASE("a scale-up domain must divide or be whole nodes, and needs a link", "[gpu_spec][node]") {
    Json doc = read_json_file(config_dir / "gpus" / "gb200.json");
    doc["node"]["scale_up_gpus"] = 6;  // one tray and half of another
    CHECK_THROWS_WITH(gpu_spec_from_json(doc, "gb200.json"),
                      Catch::Contains("node.scale_up_gpus: expected a divisor or a multiple of "
                                      "node.gpus (4), found 6"));
    doc = read_json_file(config_dir / "gpus" / "l40s.json");
    doc["node"]["scale_up_gpus"] = 8;
    CHECK_THROWS_WITH(gpu_spec_from_json(doc, "l40s.json"),
                      Catch::Contains("node.scale_up_gpus: expected 1 (no scale_up link joins "
                                      "the GPUs), found 8"));
}

TEST_CASE("the new GPUs carry their datasheet figures", "[gpu_spec][new]") {
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    // GB200 NVL72: 13.4 TB for 72 GPUs is 186 GB each; 576 TB/s / 72 = 8 TB/s; dense FP4 1,440 PF
    // (sparse) / 72 / 2 = 10 PF. The runtime's total as captured on GB200 trays (gb200.json's
    // source): vLLM's 'Free memory on device (181.84/184.31 GiB) ... (0.92, 169.56 GiB)' and
    // PyTorch's 'total capacity of 184.31 GiB'. 184.31 GiB to two decimals is 188,728.32 to
    // 188,738.56 MiB; 169.56 / 0.92 to two decimals is 188,722.09 to 188,733.22 MiB; kvplan takes
    // 188,731 MiB, inside both. The B200's 728 MiB reservation gave 188,743 MiB, outside both.
    const GpuSpec gb200 = *reg.find("gb200");
    CHECK(gb200.memory_stated == 186 * GB);
    CHECK(gb200.memory_total == 188'731 * MiB);
    const auto gib2 = [](Bytes b) {  // GiB to two decimals, as vLLM and PyTorch print them
        return std::round(static_cast<double>(b.count()) / 1073741824.0 * 100.0) / 100.0;
    };
    CHECK(gib2(gb200.memory_total) == 184.31);
    CHECK(gib2(Bytes::exactly(gb200.memory_total.count() * 92 / 100)) == 169.56);
    CHECK(gib2(Bytes::exactly(188'743ULL * 1'048'576)) == 184.32);  // the old derivation
    CHECK(gb200.memory_driver - gb200.memory_total == 740 * MiB);
    CHECK(gb200.memory_bandwidth.in(TB_per_s) == Approx(8.0));
    CHECK(gb200.dense(ComputeDtype::fp4)->in(TFLOP_per_s) == Approx(1'440'000.0 / 72 / 2));
    // B300: HGX B300's 105 PF dense FP4 for 8 GPUs is 13,125 TFLOP/s each; 288 GB of HBM3e.
    const GpuSpec b300 = *reg.find("b300");
    CHECK(b300.dense(ComputeDtype::fp4)->in(TFLOP_per_s) == Approx(105'000.0 / 8));
    CHECK(b300.memory_stated == 288 * GB);
    CHECK(b300.memory_driver == 275'040 * MiB);
    // The B300's runtime total, to the byte, from a trainer's 'device_total_bytes=287428771840' on
    // an HGX B300 node, which PyTorch's out-of-memory message prints as 'total capacity of 267.69
    // GiB' (b300.json's source): 274,113.4375 MiB, 926.5625 MiB below nvidia-smi's 275,040.
    CHECK(b300.memory_total == Bytes::exactly(287'428'771'840ULL));
    CHECK(gib2(b300.memory_total) == 267.69);
    CHECK(gib2(Bytes::exactly(b300.memory_total.count() * 92 / 100)) == 246.27);  // vLLM's line
    CHECK(b300.memory_driver - b300.memory_total == Bytes::exactly(926ULL * 1'048'576 + 589'824));
    // GB300: 1,080 PF dense FP4 / 72 = 15 PF. Runtime total: PyTorch's 'GPU 0 has a total
    // capacity of 276.50 GiB' on a 64 x GB300 NVL72 run (gb300.json's source), 283,136 MiB, 1,072
    // MiB below nvidia-smi's 284,208; the smaller of two captures (a vLLM worker on GB300 read
    // 276.62 GiB, 0.92 x 276.62 = 254.49 GiB as it printed).
    const GpuSpec gb300 = *reg.find("gb300");
    CHECK(gb300.dense(ComputeDtype::fp4)->in(TFLOP_per_s) == Approx(1'080'000.0 / 72));
    CHECK(gb300.memory_total == 283'136 * MiB);
    CHECK(gib2(gb300.memory_total) == 276.50);
    CHECK(gb300.memory_driver - gb300.memory_total == 1'072 * MiB);
    // MI355X: 8,192 FP8 FLOP per clock per CU x 256 CUs x 2.4 GHz = 5,033.2 TFLOP/s; 288 GiB less
    // MI300X's 16 MiB, which vLLM logs as 287.98 GiB.
    const GpuSpec mi355x = *reg.find("mi355x");
    CHECK(mi355x.dense(ComputeDtype::fp8)->in(TFLOP_per_s) ==
          Approx(8192.0 * 256 * 2.4e9 / 1e12).epsilon(1e-5));
    CHECK(mi355x.memory_total == 288 * GiB - 16 * MiB);
    // MI325X: 256 GiB less MI300X's 16 MiB, which PyTorch's out-of-memory message on an MI325X
    // prints as 'total capacity of 255.98 GiB' (vllm-project/vllm issue #41962).
    const GpuSpec mi325x = *reg.find("mi325x");
    CHECK(mi325x.memory_total == 256 * GiB - 16 * MiB);
    CHECK(gib2(mi325x.memory_total) == 255.98);
    // H20: 96 GB, 4.0 TB/s, 148 dense BF16, no FP4; the runtime's 97,285 MiB.
    const GpuSpec h20 = *reg.find("h20");
    CHECK(h20.memory_total == 97'285 * MiB);
    CHECK(h20.dense(ComputeDtype::bf16)->in(TFLOP_per_s) == Approx(148));
    CHECK_FALSE(h20.dense(ComputeDtype::fp4).has_value());
    // RTX PRO 6000 Server: 96 GB of GDDR7, no NVLink, the runtime's 97,250 MiB.
    const GpuSpec rtx = *reg.find("rtx-pro-6000");
    CHECK(rtx.memory_total == 97'250 * MiB);
    CHECK(rtx.scale_up_bandwidth == BytesPerSecond{});
    // gb200 is its own GPU now, no longer "did you mean 'b200'".
    CHECK(reg.resolve("gb200").id == "gb200");
    CHECK(reg.resolve("GB200-NVL72").id == "gb200");
}

TEST_CASE("GPU figures match the datasheet values in the files", "[gpu_spec]") {
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    // H100 SXM: 3.35 TB/s; the CUDA runtime's total 81,090 MiB = 81,090 x 1,048,576 =
    // 85,029,027,840 B (vLLM logs it as 79.19 GiB), 469 MiB below nvidia-smi's 81,559 MiB =
    // 85,520,809,984 B, which stays in the file beside it.
    const GpuSpec h100 = *reg.find("h100-sxm");
    CHECK(h100.memory_bandwidth.in(TB_per_s) == Approx(3.35));
    CHECK(h100.memory_total.count() == 81'090ULL * 1'048'576);
    CHECK(h100.memory_total.count() == 85'029'027'840ULL);
    CHECK(h100.memory_driver == 81'559 * MiB);
    CHECK(h100.memory_driver.count() == 85'520'809'984ULL);
    CHECK(h100.memory_stated == 80 * GB);
    // Dense, not sparse: BF16 989.4 TFLOP/s (the datasheet's 1,979 is with sparsity); no FP4.
    CHECK(h100.dense(ComputeDtype::bf16)->in(TFLOP_per_s) == Approx(989.4));
    CHECK_FALSE(h100.dense(ComputeDtype::fp4).has_value());
    // NVLink 4: 900 GB/s both ways = 450 GB/s per direction; PCIe Gen5 x16 64 GB/s.
    CHECK(h100.scale_up_bandwidth.in(GB_per_s) == Approx(450));
    CHECK(h100.pcie_bandwidth.in(GB_per_s) == Approx(64));
    // A100-SXM4-80GB: 2.039 TB/s, no FP8; CUDA's deviceQuery printed 85,100,068,864 bytes, 762.25
    // MiB below nvidia-smi's 81,920 MiB = 80 GiB (nvidia-smi -q: "Reserved : 763 MiB").
    const GpuSpec a100 = *reg.find("a100-sxm4-80gb");
    CHECK(a100.memory_bandwidth.in(TB_per_s) == Approx(2.039));
    CHECK(a100.memory_total.count() == 85'100'068'864ULL);
    CHECK(80 * GiB - a100.memory_total == 762 * MiB + 256 * KiB);
    CHECK_FALSE(a100.dense(ComputeDtype::fp8).has_value());
    // PCIe-only cards have no scale-up link.
    CHECK(reg.find("l40s")->scale_up_bandwidth == BytesPerSecond{});
    // MI300X: 206,141,652,992 B as HIP and rocm-smi report it (196,592 MiB).
    CHECK(reg.find("mi300x")->memory_total.count() == 196'592ULL * 1'048'576);
}

TEST_CASE("GPUs are found by id or alias, ignoring case", "[gpu_spec]") {
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    CHECK(reg.find("h100")->id == "h100-sxm");
    CHECK(reg.find("H100-SXM5-80GB")->id == "h100-sxm");
    CHECK(reg.find("H100-SXM")->id == "h100-sxm");
    CHECK(reg.find("h200")->id == "h200-sxm");
    CHECK(reg.find("MI300X")->id == "mi300x");
    CHECK_FALSE(reg.find("h300").has_value());
    CHECK(reg.resolve("h100").id == "h100-sxm");
    CHECK_THROWS_WITH(reg.resolve("h300"), Catch::Contains("expected a GPU id or alias") &&
                                               Catch::Contains("h100-sxm") &&
                                               Catch::Contains("found \"h300\""));
    // The folder of specs itself works as the directory too.
    CHECK(GpuRegistry::load(config_dir / "gpus").find("l4").has_value());
}

TEST_CASE("a user's own spec file loads the same way", "[gpu_spec]") {
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    const fs::path dir = fs::temp_directory_path() / "kvplan-test-gpus";
    fs::create_directories(dir);
    Json j = read_json_file(config_dir / "gpus" / "h100-sxm.json");
    j["id"] = "my-h100";
    j["aliases"] = Json::array();
    j["memory"]["runtime_total_bytes"] = 81'106ULL * 1'048'576;  // what CUDA saw, say
    std::ofstream(dir / "my-h100.json") << j.dump(2);
    const GpuSpec mine = reg.resolve((dir / "my-h100.json").string());
    CHECK(mine.id == "my-h100");
    CHECK(mine.memory_total.count() == 81'106ULL * 1'048'576);

    // A folder where two files claim one alias is refused, naming both files.
    std::ofstream(dir / "h100-sxm.json") << read_json_file(config_dir / "gpus" / "h100-sxm.json");
    j["aliases"] = {"h100"};
    std::ofstream(dir / "my-h100.json") << j.dump(2);
    CHECK_THROWS_WITH(GpuRegistry::load(dir),
                      Catch::Contains("expected a name no other GPU spec uses") &&
                          Catch::Contains("\"h100\", already used by") &&
                          Catch::Contains("h100-sxm.json"));
    fs::remove_all(dir);
}

TEST_CASE("bad GPU spec files get clear errors", "[gpu_spec][errors]") {
    CHECK_THAT(error_of(bad_dir / "gpu-bad-schema.json"),
               Catch::Contains("gpu-bad-schema.json: schema: expected \"kvplan-gpu/1\", found "
                               "\"kvplan-gpu/2\""));
    CHECK_THAT(error_of(bad_dir / "gpu-missing-memory-bytes.json"),
               Catch::Contains("gpu-missing-memory-bytes.json: memory.runtime_total_bytes: "
                               "expected the total the CUDA or HIP runtime reports, in bytes (or "
                               "driver_reported_bytes, or stated_bytes, the vendor's figure), "
                               "found nothing (the field is missing)"));
    CHECK_THAT(error_of(bad_dir / "gpu-negative-bandwidth.json"),
               Catch::Contains("memory_bandwidth.TB_per_s: expected a number > 0, found -3.35"));
    CHECK_THAT(error_of(bad_dir / "gpu-wrong-type.json"),
               Catch::Contains("dense_tflops.bf16: expected a number > 0, found the string "
                               "\"989.4\""));
    CHECK_THAT(error_of(bad_dir / "gpu-link-mismatch.json"),
               Catch::Contains("scale_up.GB_per_s_per_direction: expected null (the link is "
                               "\"none\")"));
    CHECK_THAT(error_of(bad_dir / "gpu-id-mismatch.json"),
               Catch::Contains("id: expected the file name without .json (\"gpu-id-mismatch\"), "
                               "found \"h100-custom\""));
    CHECK_THAT(error_of(bad_dir / "not_json.json"), Catch::Contains("line 3, column"));
    CHECK_THAT(error_of(bad_dir / "absent.json"),
               Catch::Contains("expected an existing JSON file"));
}

TEST_CASE("a TPU or a Gaudi is refused, saying what is and is not modelled",
          "[gpu_spec][errors][accelerators]") {
    // By the vendor the file names.
    const std::string tpu = error_of(bad_dir / "gpu-tpu-v6e.json");
    CHECK_THAT(tpu, Catch::Contains("gpu-tpu-v6e.json: vendor: expected an NVIDIA or AMD GPU: a "
                                    "Google TPU is not modelled") &&
                        Catch::Contains("CUDA or HIP runtime's total") &&
                        Catch::Contains("vLLM's TPU backend") &&
                        Catch::EndsWith("found \"google\""));
    // By the product name when no vendor is given.
    const std::string gaudi = error_of(bad_dir / "gpu-gaudi3.json");
    CHECK_THAT(gaudi, Catch::Contains("gpu-gaudi3.json: name: expected an NVIDIA or AMD GPU: an "
                                      "Intel Gaudi is not modelled") &&
                          Catch::Contains("vllm-gaudi") &&
                          Catch::EndsWith("found \"Intel Gaudi 3 HL-325L\""));
    // By the architecture alone.
    const Json j = {{"id", "x"},
                    {"name", "our accelerator"},
                    {"architecture", "trillium"},
                    {"memory", {{"stated_bytes", 32000000000}}},
                    {"memory_bandwidth", {{"TB_per_s", 1.64}}},
                    {"dense_tflops", {{"bf16", 918}}}};
    CHECK_THROWS_WITH(gpu_spec_from_json(j, "x.json"),
                      Catch::Contains("x.json: architecture: expected an NVIDIA or AMD GPU: a "
                                      "Google TPU is not modelled") &&
                          Catch::Contains("found \"trillium\""));
    // Every bundled GPU is NVIDIA or AMD: none is caught by the rule.
    for (const char* name : {"NVIDIA H100 SXM5 80GB", "AMD Instinct MI300X", "NVIDIA GB200"})
        CHECK(detail::unmodelled_accelerator("", name, "").empty());
}

TEST_CASE("the constexpr GPU presets equal their JSON files", "[gpu_spec][presets]") {
    // 81,090 MiB x 1,048,576 and 81,559 MiB x 1,048,576.
    static_assert(gpus::h100_sxm.memory_total.count() == 85'029'027'840ULL);
    static_assert(gpus::h100_sxm.memory_driver.count() == 85'520'809'984ULL);
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    REQUIRE(reg.files().size() == gpus::all.size());
    for (const GpuSpec* p : gpus::all) {
        INFO(p->id.c_str());
        const GpuSpec g = *reg.find(p->id.c_str());
        CHECK(g.name == p->name);
        CHECK(g.memory_stated == p->memory_stated);
        CHECK(g.memory_total == p->memory_total);
        CHECK(g.memory_driver == p->memory_driver);
        // Both are the same decimal literal times the same power of ten: equal doubles.
        CHECK(g.memory_bandwidth == p->memory_bandwidth);
        CHECK(g.scale_up_bandwidth == p->scale_up_bandwidth);
        CHECK(g.pcie_bandwidth == p->pcie_bandwidth);
        CHECK(g.gpus_per_node == p->gpus_per_node);
        CHECK(g.scale_up_gpus == p->scale_up_gpus);
        CHECK(g.scale_out_bandwidth == p->scale_out_bandwidth);
        CHECK(g.compute_units == p->compute_units);
        CHECK(g.capability == p->capability);
        for (ComputeDtype d : all_compute_dtypes) CHECK(g.dense(d) == p->dense(d));
    }
}

namespace {

/// The JSON block after the "minimal-spec" marker in configs/gpus/README.md.
Json readme_minimal_spec() {
    std::ifstream in(config_dir / "gpus" / "README.md");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const auto marker = text.find("<!-- minimal-spec");
    REQUIRE(marker != std::string::npos);
    const auto open = text.find("```json\n", marker);
    const auto close = text.find("```", open + 8);
    REQUIRE((open != std::string::npos && close != std::string::npos));
    return Json::parse(text.substr(open + 8, close - open - 8));
}

std::string json_error(const Json& doc) {
    try {
        (void)gpu_spec_from_json(doc, "my-gpu.json");
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("the minimal spec of configs/gpus/README.md loads with what it states",
          "[gpu_spec][minimal]") {
    const Json doc = readme_minimal_spec();
    // id, name, memory, bandwidth and one dense figure: five keys, nothing else.
    CHECK(doc.size() == 5);
    const GpuSpecFile g = gpu_spec_from_json(doc, "my-h100.json", "my-h100");
    CHECK(g.spec.id == "my-h100");
    // 81,090 MiB x 1,048,576 = 85,029,027,840 B, the H100 SXM's CUDA total.
    CHECK(g.spec.memory_total.count() == 85'029'027'840ULL);
    CHECK(g.memory_basis == MemoryBasis::runtime);
    CHECK(g.spec.memory_driver.is_zero());
    CHECK(g.spec.memory_bandwidth.in(TB_per_s) == Approx(3.35));
    CHECK(g.spec.dense(ComputeDtype::bf16)->in(TFLOP_per_s) == Approx(989.4));
    // What it leaves out is absent, not invented.
    CHECK_FALSE(g.spec.dense(ComputeDtype::fp8).has_value());
    CHECK(g.spec.memory_stated.is_zero());
    CHECK(g.spec.scale_up_bandwidth == BytesPerSecond{});
    CHECK(g.spec.pcie_bandwidth == BytesPerSecond{});
    CHECK(g.aliases.empty());
    CHECK(g.vendor.empty());
    CHECK_FALSE(g.tdp_W.has_value());

    // Saved as my-h100.json, the CLI's path look-up loads it too.
    const fs::path dir = fs::temp_directory_path() / "kvplan-test-minimal-gpu";
    fs::create_directories(dir);
    std::ofstream(dir / "my-h100.json") << doc.dump(2);
    CHECK(GpuRegistry::load(config_dir).resolve((dir / "my-h100.json").string()).memory_total ==
          g.spec.memory_total);
    fs::remove_all(dir);
}

TEST_CASE("a spec with only the stated memory budgets from it", "[gpu_spec][minimal]") {
    Json doc = readme_minimal_spec();
    doc["memory"] = {{"stated_bytes", 80'000'000'000ULL}};
    const GpuSpecFile g = gpu_spec_from_json(doc, "my-gpu.json");
    // 80 GB read in SI units, 5,029,027,840 B (5.9 %) below the CUDA total for the part.
    CHECK(g.spec.memory_total == 80 * GB);
    CHECK(g.spec.memory_stated == 80 * GB);
    CHECK(g.memory_basis == MemoryBasis::stated);
}

TEST_CASE("a spec with only the driver's total budgets from it, and says so",
          "[gpu_spec][minimal]") {
    // A file written before runtime_total_bytes existed: nvidia-smi's 81,559 MiB, which still
    // holds the driver's reservation, is the base rather than no figure at all.
    Json doc = readme_minimal_spec();
    doc["memory"] = {{"driver_reported_bytes", 81'559ULL * 1'048'576}};
    const GpuSpecFile g = gpu_spec_from_json(doc, "my-gpu.json");
    CHECK(g.spec.memory_total.count() == 85'520'809'984ULL);
    CHECK(g.memory_basis == MemoryBasis::driver);
}

TEST_CASE("a runtime total above the driver's is refused", "[gpu_spec][errors]") {
    // The runtime sees the driver's total less what the driver reserves: never more.
    Json doc = readme_minimal_spec();
    doc["memory"]["driver_reported_bytes"] = 81'000ULL * 1'048'576;  // 84,934,656,000 B
    CHECK(json_error(doc) ==
          "my-gpu.json: memory.runtime_total_bytes: expected at most driver_reported_bytes "
          "(84934656000), found 85029027840");
}

TEST_CASE("a spec needs memory, bandwidth and one dense figure", "[gpu_spec][minimal]") {
    Json doc = readme_minimal_spec();
    doc["memory"] = Json::object();
    CHECK(json_error(doc) ==
          "my-gpu.json: memory.runtime_total_bytes: expected the total the CUDA or HIP runtime "
          "reports, in bytes (or driver_reported_bytes, or stated_bytes, the vendor's figure), "
          "found nothing (the field is missing)");
    doc = readme_minimal_spec();
    doc["dense_tflops"] = {{"bf16", nullptr}};
    CHECK_THAT(json_error(doc), Catch::StartsWith("my-gpu.json: dense_tflops.bf16: expected one "
                                                  "dense figure in TFLOP/s"));
    doc = readme_minimal_spec();
    doc.erase("memory_bandwidth");
    CHECK(json_error(doc) ==
          "my-gpu.json: memory_bandwidth: expected an object, found nothing (the field is "
          "missing)");
    // One figure of any type is enough: an fp8-only part loads.
    doc = readme_minimal_spec();
    doc["dense_tflops"] = {{"fp8", 1978.9}};
    CHECK(gpu_spec_from_json(doc, "my-gpu.json").spec.dense(ComputeDtype::fp8).has_value());
}

TEST_CASE("an unknown key in a GPU spec is an error naming the nearest", "[gpu_spec][keys]") {
    Json doc = readme_minimal_spec();
    doc["memory"]["driver_bytes"] = doc["memory"]["runtime_total_bytes"];
    CHECK(json_error(doc) ==
          "my-gpu.json: memory.driver_bytes: expected a key of memory (stated, stated_bytes, "
          "runtime_total_bytes, driver_reported_bytes, source), found the unknown key "
          "'driver_bytes'; did you mean 'driver_reported_bytes'?");
    doc = readme_minimal_spec();
    doc["memory"]["cuda_total_bytes"] = doc["memory"]["runtime_total_bytes"];
    CHECK_THAT(json_error(doc), Catch::EndsWith("did you mean 'runtime_total_bytes'?"));
    doc = readme_minimal_spec();
    doc["dense_tflops"]["bfloat16"] = 989.4;
    CHECK_THAT(json_error(doc),
               Catch::Contains("dense_tflops.bfloat16") && Catch::EndsWith("did you mean 'bf16'?"));
    doc = readme_minimal_spec();
    doc["memory_bandwidth"]["TB_per_sec"] = 3.35;
    CHECK_THAT(json_error(doc), Catch::EndsWith("did you mean 'TB_per_s'?"));
    doc = readme_minimal_spec();
    doc["extra_field_we_do_not_know"] = "ignored before";
    CHECK_THAT(json_error(doc),
               Catch::StartsWith("my-gpu.json: extra_field_we_do_not_know: expected a key of a "
                                 "GPU spec (schema, id, aliases,"));
    doc = readme_minimal_spec();
    doc["scale_up"] = {{"name", "NVLink 4"}, {"GB_per_s", 450}};
    CHECK_THAT(json_error(doc), Catch::Contains("scale_up.GB_per_s") &&
                                    Catch::EndsWith("did you mean 'GB_per_s_per_direction'?"));
}

TEST_CASE("every key the README's schema table defines is accepted", "[gpu_spec][keys]") {
    // The table's keys, read from configs/gpus/README.md, are exactly those of the H100 file,
    // which loads: a key the table documents but the reader refused would fail here.
    std::ifstream in(config_dir / "gpus" / "README.md");
    std::string line;
    std::vector<std::string> documented;
    while (std::getline(in, line)) {
        if (line.rfind("| `", 0) != 0) continue;
        const std::string key = line.substr(3, line.find('`', 3) - 3);
        if (key == "dense_tflops.tf32") {  // the row "`dense_tflops.tf32` ... `fp4`"
            for (ComputeDtype d : all_compute_dtypes)
                documented.push_back("dense_tflops." + std::string(name(d)));
        } else {
            documented.push_back(key);
        }
    }
    const Json h100 = read_json_file(config_dir / "gpus" / "h100-sxm.json");
    std::vector<std::string> in_file;
    for (const auto& [k, v] : h100.items()) {
        if (v.is_object())
            for (const auto& [k2, v2] : v.items()) in_file.push_back(k + "." + k2);
        else
            in_file.push_back(k);
    }
    std::sort(documented.begin(), documented.end());
    std::sort(in_file.begin(), in_file.end());
    CHECK(documented == in_file);
    // 8 plain keys (schema, id, aliases, name, vendor, architecture, tdp_W, notes) and the fields
    // of 8 objects: compute_capability 2, memory 5, memory_bandwidth 2, dense_tflops 6 + source,
    // scale_up 3, pcie 4, node 5, compute_units 2 = 30; 8 + 30 = 38.
    CHECK(documented.size() == 38);
    CHECK_NOTHROW(gpu_spec_from_json(h100, "h100-sxm.json", "h100-sxm"));
}

TEST_CASE("a GPU spec error names the spec, never a model", "[gpu_spec][errors]") {
    // fp8 only: the roofline at its default bf16 needs a figure the file does not have.
    Json doc = readme_minimal_spec();
    doc["dense_tflops"] = {{"fp8", 1978.9}};
    const GpuSpec g = gpu_spec_from_json(doc, "my-h100.json").spec;
    const Replica r{.model = presets::llama_3_8b, .gpu = g};
    CHECK_THROWS_WITH(decode_bound(r, 1, 1024),
                      Catch::StartsWith("GPU spec 'my-h100': dense_tflops.bf16: expected") &&
                          !Catch::Contains("model") && !Catch::Contains("Llama"));
    CHECK_NOTHROW(decode_bound(r, 1, 1024, {.compute = ComputeDtype::fp8}));
}

TEST_CASE("a mistyped GPU name suggests the nearest id or alias", "[gpu_spec]") {
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    // One letter from an alias ("h10" is as near h20 as h100: no longer an example).
    CHECK_THROWS_WITH(reg.resolve("h100-sx"),
                      Catch::EndsWith("found \"h100-sx\"; did you mean 'h100-sxm'?"));
    CHECK_THROWS_WITH(reg.resolve("mi300"), Catch::EndsWith("did you mean 'mi300x'?"));
    CHECK_THROWS_WITH(reg.resolve("tpu-v5"), Catch::EndsWith("found \"tpu-v5\""));
}

TEST_CASE("the GPU spec fixtures are what their names say", "[gpu_spec][minimal]") {
    const fs::path dir = fs::path{KVPLAN_TEST_DATA_DIR} / "gpu_specs";
    // The fuzzer's minimal seed is the README's example.
    CHECK(read_json_file(dir / "minimal.json") == readme_minimal_spec());
    const GpuSpecFile stated =
        gpu_spec_from_json(read_json_file(dir / "stated_only_fp8.json"), "s");
    CHECK(stated.memory_basis == MemoryBasis::stated);
    CHECK(stated.spec.memory_total == 80 * GB);
    CHECK_FALSE(stated.spec.dense(ComputeDtype::bf16).has_value());
    const GpuSpecFile links =
        gpu_spec_from_json(read_json_file(dir / "links_without_sources.json"), "l");
    CHECK(links.spec.scale_up_bandwidth.in(GB_per_s) == Approx(450));
    CHECK(links.spec.pcie_bandwidth.in(GB_per_s) == Approx(64));
    CHECK_THROWS_WITH(gpu_spec_from_json(read_json_file(dir / "unknown_nested_key.json"), "u.json"),
                      Catch::StartsWith("u.json: memory.driver_bytes: expected a key of memory"));
}

TEST_CASE("each bundled GPU names its architecture", "[gpu_spec][kv_dtype]") {
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    for (const GpuSpecFile& g : reg.files()) {
        INFO(g.file.string());
        CHECK(g.spec.arch != GpuArch::unknown);
    }
    CHECK(reg.find("a100-sxm4-80gb")->arch == GpuArch::ampere);
    CHECK(reg.find("l40s")->arch == GpuArch::ada);
    CHECK(reg.find("h100")->arch == GpuArch::hopper);
    CHECK(reg.find("gb200")->arch == GpuArch::blackwell);
    CHECK(reg.find("mi300x")->arch == GpuArch::cdna3);
    CHECK(reg.find("mi355x")->arch == GpuArch::cdna4);
    Json doc = readme_minimal_spec();
    doc["architecture"] = "hoper";
    CHECK(json_error(doc) ==
          "my-gpu.json: architecture: expected ampere, ada, hopper, blackwell, cdna3 or cdna4, "
          "found \"hoper\"; did you mean 'hopper'?");
}

TEST_CASE("a KV dtype is refused on an architecture that cannot hold it", "[gpu_spec][kv_dtype]") {
    // NVFP4 needs Blackwell's FP4 tensor cores; MXFP4 needs FP4 with microscaling (Blackwell,
    // CDNA4): MI300X (CDNA3) has no FP4 at all.
    static_assert(kv_dtype_refusal(KvDtype::nvfp4, GpuArch::hopper, Engine::vllm).has_value());
    static_assert(!kv_dtype_refusal(KvDtype::nvfp4, GpuArch::blackwell, Engine::vllm));
    static_assert(kv_dtype_refusal(KvDtype::nvfp4, GpuArch::cdna4, Engine::vllm).has_value());
    static_assert(kv_dtype_refusal(KvDtype::mxfp4, GpuArch::cdna3, Engine::vllm).has_value());
    static_assert(!kv_dtype_refusal(KvDtype::mxfp4, GpuArch::cdna4, Engine::sglang));
    static_assert(!kv_dtype_refusal(KvDtype::mxfp4, GpuArch::blackwell, Engine::vllm));
    // FP8 on Ampere: vLLM and SGLang store it and attend in 16 bits; TensorRT-LLM needs SM 8.9.
    static_assert(!kv_dtype_refusal(KvDtype::fp8_e4m3, GpuArch::ampere, Engine::vllm));
    static_assert(!kv_dtype_refusal(KvDtype::fp8_e4m3, GpuArch::ampere, Engine::sglang));
    static_assert(kv_dtype_refusal(KvDtype::fp8_e4m3, GpuArch::ampere, Engine::trtllm).has_value());
    static_assert(!kv_dtype_refusal(KvDtype::fp8_e4m3, GpuArch::ada, Engine::trtllm));
    // 16-bit and integer caches, and a GPU whose architecture is not stated: no rule.
    static_assert(!kv_dtype_refusal(KvDtype::bf16, GpuArch::ampere, Engine::trtllm));
    static_assert(!kv_dtype_refusal(KvDtype::int4, GpuArch::cdna3, Engine::vllm));
    static_assert(!kv_dtype_refusal(KvDtype::nvfp4, GpuArch::unknown, Engine::vllm));

    // evaluate() refuses it as bad input, naming the GPU, its architecture and the reason.
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    const Deployment on_mi300x{
        .model = presets::llama_3_8b, .gpu = *reg.find("mi300x"), .kv = KvDtype::mxfp4};
    CHECK_THROWS_WITH(
        evaluate(on_mi300x, {.context = 8192}),
        Catch::StartsWith("GPU 'mi300x' (cdna3, gfx942): kv_dtype: expected a KV "
                          "dtype it can hold (an MXFP4 KV cache needs FP4 hardware") &&
            Catch::EndsWith("found mxfp4"));
    Deployment on_b200 = on_mi300x;
    on_b200.gpu = *reg.find("b200");
    on_b200.kv = KvDtype::nvfp4;
    CHECK(evaluate(on_b200, {.context = 8192}).starts());
    on_b200.gpu = *reg.find("h200");
    CHECK_THROWS_AS(evaluate(on_b200, {.context = 8192}), InvalidInput);
}

TEST_CASE("plan leaves out the GPUs that cannot hold a KV dtype", "[gpu_spec][kv_dtype]") {
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    SearchSpace space;
    space.gpus = {*reg.find("h100"), *reg.find("b200")};
    space.kv_formats = {KvFormat(KvDtype::nvfp4)};
    space.max_gpus = 1;
    const PlanAnswer p = plan_replicas(presets::llama_3_8b, space, {}, {.context = 8192});
    REQUIRE_FALSE(p.fits.empty());
    for (const PlanCandidate& c : p.fits) CHECK(c.gpu == 1);  // the B200 only
    // With no GPU that can hold it, the refusal is the answer.
    space.gpus = {*reg.find("h100")};
    CHECK_THROWS_WITH(
        plan_replicas(presets::llama_3_8b, space, {}, {.context = 8192}),
        Catch::StartsWith("GPU 'h100-sxm' (hopper, compute capability 9.0): kv_dtype:"));
}

TEST_CASE("compute capabilities parse as the runtime spells them", "[gpu_spec][capability]") {
    static_assert(parse_compute_capability("9.0") == sm(9, 0));
    static_assert(parse_compute_capability("12.0") == sm(12, 0));
    static_assert(parse_compute_capability("10.3") == sm(10, 3));
    static_assert(parse_compute_capability("gfx942") == gfx(9, 0x4, 0x2));
    static_assert(parse_compute_capability("gfx90a") == gfx(9, 0x0, 0xa));
    static_assert(parse_compute_capability("gfx1100") == gfx(11, 0x0, 0x0));
    static_assert(!parse_compute_capability("sm_90"));
    static_assert(!parse_compute_capability("9"));
    static_assert(!parse_compute_capability("9.10"));
    static_assert(!parse_compute_capability("gfx9"));
    static_assert(!parse_compute_capability("gfx94g"));
    // vLLM's is_device_capability_family(100): SM 10.0 and 10.3, not 12.0.
    static_assert(sm(10, 3).sm_family(10) && !sm(12, 0).sm_family(10));
    static_assert(sm(8, 9).sm_at_least(8, 9) && !sm(8, 6).sm_at_least(8, 9));
    static_assert(sm(12, 0).sm_at_least(8, 9) && !gfx(9, 4, 2).sm_at_least(8, 0));
    CHECK(text(sm(12, 0)) == "12.0");
    CHECK(text(gfx(9, 0x0, 0xa)) == "gfx90a");
    CHECK(text(ComputeCapability{}).empty());
}

TEST_CASE("every bundled GPU states its compute capability", "[gpu_spec][capability]") {
    // NVIDIA's CUDA GPUs list and ROCm's GPU hardware specifications (each file cites them).
    const std::pair<const char*, const char*> expected[] = {
        {"a100-sxm4-40gb", "8.0"}, {"a100-sxm4-80gb", "8.0"},
        {"a100-pcie-80gb", "8.0"}, {"l4", "8.9"},
        {"l40s", "8.9"},           {"h100-sxm", "9.0"},
        {"h100-pcie", "9.0"},      {"h100-nvl", "9.0"},
        {"h200-sxm", "9.0"},       {"h20", "9.0"},
        {"b200", "10.0"},          {"gb200", "10.0"},
        {"b300", "10.3"},          {"gb300", "10.3"},
        {"rtx-pro-6000", "12.0"},  {"mi300x", "gfx942"},
        {"mi325x", "gfx942"},      {"mi355x", "gfx950"}};
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    REQUIRE(reg.files().size() == std::size(expected));
    for (const auto& [id, cap] : expected) {
        INFO(id);
        CHECK(text(reg.find(id)->capability) == cap);
    }
}

TEST_CASE("a compute capability that contradicts the vendor or the architecture is refused",
          "[gpu_spec][capability]") {
    Json doc = read_json_file(config_dir / "gpus" / "h100-sxm.json");
    doc["compute_capability"]["value"] = "sm_90";
    CHECK_THROWS_WITH(gpu_spec_from_json(doc, "h100-sxm.json"),
                      Catch::Contains("compute_capability.value") &&
                          Catch::Contains("an NVIDIA compute capability") &&
                          Catch::Contains("found \"sm_90\""));
    doc["compute_capability"]["value"] = "gfx942";
    CHECK_THROWS_WITH(gpu_spec_from_json(doc, "h100-sxm.json"),
                      Catch::Contains("(vendor nvidia)") && Catch::Contains("found \"gfx942\""));
    doc["compute_capability"]["value"] = "10.0";
    CHECK_THROWS_WITH(gpu_spec_from_json(doc, "h100-sxm.json"),
                      Catch::Contains("a compute capability of architecture hopper") &&
                          Catch::Contains("found \"10.0\""));
    doc["compute_capability"] = {{"value", "9.0"}, {"sorce", "x"}};
    CHECK_THROWS_WITH(gpu_spec_from_json(doc, "h100-sxm.json"), Catch::Contains("sorce"));
    Json amd = read_json_file(config_dir / "gpus" / "mi355x.json");
    amd["compute_capability"]["value"] = "9.5";
    CHECK_THROWS_WITH(gpu_spec_from_json(amd, "mi355x.json"),
                      Catch::Contains("an AMD gfx target such as \"gfx942\" (vendor amd)"));
    amd["compute_capability"]["value"] = "gfx942";
    CHECK_THROWS_WITH(gpu_spec_from_json(amd, "mi355x.json"),
                      Catch::Contains("a compute capability of architecture cdna4"));
    // Without the field the spec loads, capability not stated.
    amd.erase("compute_capability");
    CHECK_FALSE(gpu_spec_from_json(amd, "mi355x.json").spec.capability.stated());
}

TEST_CASE("vLLM's NVFP4 KV cache: SM 10.x, not the RTX PRO 6000's 12.0", "[gpu_spec][capability]") {
    // TRTLLMBackend.supports_kv_cache_dtype("nvfp4") is is_device_capability_family(100): the
    // B200 and GB200 (10.0) and the B300 and GB300 (10.3) hold it; SM 12.0 does not, though it
    // is a Blackwell part too (the architecture-only rule accepts it).
    const GpuRegistry reg = GpuRegistry::load(config_dir);
    for (const char* id : {"b200", "gb200", "b300", "gb300"}) {
        INFO(id);
        CHECK_FALSE(kv_dtype_refusal(KvDtype::nvfp4, *reg.find(id), Engine::vllm));
    }
    const GpuSpec rtx = *reg.find("rtx-pro-6000");
    REQUIRE(rtx.arch == GpuArch::blackwell);
    CHECK_FALSE(kv_dtype_refusal(KvDtype::nvfp4, rtx.arch, Engine::vllm));
    const auto why = kv_dtype_refusal(KvDtype::nvfp4, rtx, Engine::vllm);
    REQUIRE(why);
    CHECK_THAT(std::string(*why), Catch::Contains("compute capability 10.x"));
    CHECK(kv_dtype_refusal(KvDtype::nvfp4_4over6, rtx, Engine::vllm));
    // Other engines keep the architecture's rule; fp8 stays fine on SM 12.0.
    CHECK_FALSE(kv_dtype_refusal(KvDtype::nvfp4, rtx, Engine::sglang));
    CHECK_FALSE(kv_dtype_refusal(KvDtype::fp8_e4m3, rtx, Engine::vllm));
    // TensorRT-LLM's FP8 cache: SM 8.9 or later (the L4 yes, the A100's 8.0 no).
    CHECK_FALSE(kv_dtype_refusal(KvDtype::fp8_e4m3, *reg.find("l4"), Engine::trtllm));
    CHECK(kv_dtype_refusal(KvDtype::fp8_e4m3, *reg.find("a100-sxm4-80gb"), Engine::trtllm));
    // A spec without a stated capability falls back to the architecture.
    GpuSpec bare = rtx;
    bare.capability = {};
    CHECK_FALSE(kv_dtype_refusal(KvDtype::nvfp4, bare, Engine::vllm));
    // evaluate() names the GPU with its capability.
    const Deployment d{.model = presets::llama_3_8b, .gpu = rtx, .kv = KvDtype::nvfp4};
    CHECK_THROWS_WITH(evaluate(d, {.context = 8192}),
                      Catch::StartsWith("GPU 'rtx-pro-6000' (blackwell, compute capability 12.0): "
                                        "kv_dtype: expected a KV dtype it can hold (vLLM's NVFP4"));
}
