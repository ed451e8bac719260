// System (hardware) description in the SimuMax-compatible JSON format, held in SI units.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/collective_model.h"
#include "compute/gemm_model.h"
#include "compute/grouped_model.h"
#include "compute/point_model.h"
#include "system/indexed_map.h"
#include "calibration/op_class.h"
#include "calibration/shape_key.h"
#include "core/units.h"

namespace trainsim {

/// Shape key → measured efficiency of one op class. Every estimate looks up hundreds of keys, so
/// keys are held packed (parsed once, when set); a text that no packed key prints (the loader
/// accepts any text) is kept as text, which no kernel can look up. Each key lives in one place.
class EfficiencyTable {
 public:
  /// Sets the efficiency of the key `text` (as written in the system JSON).
  void set(const std::string& text, double efficiency);
  [[nodiscard]] const double* find(const PackedKey& key) const { return find(key, PackedKeyHash{}(key)); }
  /// `hash` is PackedKeyHash{}(key), computed once by a caller that also needs it.
  [[nodiscard]] const double* find(const PackedKey& key, size_t hash) const;
  [[nodiscard]] const double* find(const std::string& text) const;
  [[nodiscard]] size_t count(const std::string& text) const { return find(text) ? 1 : 0; }
  /// Throws std::out_of_range when `text` is not in the table.
  [[nodiscard]] double at(const std::string& text) const;
  [[nodiscard]] size_t size() const { return entries_.size() + text_.size(); }
  [[nodiscard]] bool empty() const { return size() == 0; }
  /// Every (key text, efficiency), ordered by key text.
  [[nodiscard]] std::vector<std::pair<std::string, double>> entries() const;

 private:
  struct Entry {
    PackedKey key;
    double efficiency = 0;
  };
  // Open addressing over `entries_` (as EfficiencyLog): a slot holds the upper half of a key's
  // hash and 1 + the index of its entry (0: empty); a power of two, more than twice the entries.
  struct Slot {
    uint32_t hash = 0, at = 0;
  };
  // The slot of `key`: its entry's, else the empty slot where it would go.
  [[nodiscard]] size_t slot_of(const PackedKey& key, size_t hash) const;
  std::vector<Entry> entries_;
  std::vector<Slot> index_;
  std::map<std::string, double> text_;
};

/// One compute op class of the accelerator (`accelerator.op.<name>`).
struct ComputeOpConfig {
  double peak_flops = 0;         // FLOP/s (JSON `tflops` × 1e12)
  double efficient_factor = 0;   // fallback efficiency for shapes not in `accurate`
  bool has_accurate = false;     // the JSON had an `accurate_efficient_factor` member
  EfficiencyTable accurate;      // shape key → measured efficiency
  /// Efficiency model of the shapes `accurate` lacks (JSON `model`, trainsim extension; matmul
  /// and fp8_matmul: `kind` gemm_grid). Shared: systems are copied, models are not edited.
  std::shared_ptr<const GemmModel> gemm_model;
  /// Efficiency model of measured per-shape entries (JSON `model`, `kind` points: GEMM, grouped
  /// GEMM or attention keys, by the op class). At most one of the two models is set.
  std::shared_ptr<const PointModel> point_model;
  /// Grouped-GEMM model of measured expert shapes (JSON `model`, `kind` grouped_grid: group_matmul
  /// and fp8_group_matmul). At most one of the three models is set.
  std::shared_ptr<const GroupedModel> grouped_model;
};

/// A bandwidth class (`accelerator.bandwidth.<name>` or `networks.<group>.bandwidth`).
struct BandwidthConfig {
  double bytes_per_s = 0;        // JSON `gbps` is GiB/s (× 2^30)
  double efficient_factor = 1;
  double latency_s = 0;          // JSON `latency_us`
  double fixed_latency_s = 0;    // JSON `fixed_latency` (µs)
  bool has_fixed_latency = false;
  std::map<std::string, double, std::less<>> fixed_latency_s_by_comm_num;  // group size → s
  /// Memory-bound classes (`accelerator.bandwidth`): the floor per kernel replayed from a
  /// captured CUDA graph (JSON `graph_latency_us`, the device's alone), where `latency_s` is the
  /// floor per kernel launched eagerly. Absent: the class's `latency_s` (docs/config-reference.md).
  std::optional<double> graph_latency_s;
  /// The floor per kernel, eager or replayed from a graph.
  [[nodiscard]] double launch_floor_s(bool graphed) const {
    return graphed && graph_latency_s ? *graph_latency_s : latency_s;
  }
};

/// A collective on one network (`networks.<group>.op.<collective>`).
struct NetOpConfig {
  double scale = 1;
  double offset = 0;
  std::optional<double> efficient_factor;
  std::optional<double> latency_s;
  std::optional<double> fixed_latency_s;
  std::map<std::string, double, std::less<>> fixed_latency_s_by_comm_num;  // group size → s
  std::map<std::string, double, std::less<>> dp_fixed_bw;     // group size → bytes/s (GiB/s in JSON)
  bool has_fixed_by_comm_num = false;
  /// Size-dependent model of measured times (JSON `model`, `kind` collective_curve; trainsim
  /// extension): answers the default mode's collectives in its place (comm/collective.h).
  std::shared_ptr<const CollectiveModel> model;
};

/// The collectives of a network group (`networks.<group>.op.<name>`), in model/graph.h's
/// Collective order.
inline constexpr std::string_view kNetCollectives[] = {"all_reduce", "all_gather", "reduce_scatter", "p2p",
                                                       "all2all"};
inline constexpr size_t kNetCollectiveCount = std::size(kNetCollectives);

/// A network group's collectives by name; those of kNetCollectives also by their index there
/// (every plan asks for them; NetOps::index_of gives a name's index, or -1).
using NetOps = IndexedMap<NetOpConfig, kNetCollectives, kNetCollectiveCount>;

/// A network group (`networks.<group>`), e.g. high_intra_node or intra_node_pcie_4x.
struct NetworkConfig {
  double processor_usage = 0;
  BandwidthConfig bandwidth;
  NetOps ops;  // all_reduce, all_gather, reduce_scatter, p2p, all2all
};

/// The network groups a plan picks from (comm/collective.h Network order): found by index.
inline constexpr std::string_view kNetworkGroups[] = {"high_intra_node", "inter_node", "intra_node_pcie_2x",
                                                      "intra_node_pcie_4x", "intra_node_pcie_8x"};
using NetworkGroups = IndexedMap<NetworkConfig, kNetworkGroups, std::size(kNetworkGroups)>;

/// A system's op classes (calibration/op_class.h; load_system accepts no other name): by name,
/// and by their OpClass (`ops.known(op_index(c))`), matched once when an entry is added.
using ComputeOps = IndexedMap<ComputeOpConfig, kOpClassNames, kOpClassCount>;

enum class CostMode { Roofline, OnlyCompute };

/// Plausibility ranges of a system file's numbers (in the file's units), checked by load_system;
/// the calibration readers (kernels and comm files, calibration/) check their inputs against the
/// same, so a merge never writes a file the reader rejects. Beyond them the cost model's products
/// overflow or underflow: 1e300 TFLOPS gave a 1e300 ms step time, 1e300 GiB an infinite device.
inline constexpr double kSystemMaxRate = 1e6;       // TFLOPS, GiB/s (1 EFLOPS, 1 PiB/s per GPU)
inline constexpr double kSystemMaxFactor = 100;     // efficiency factors and scales
inline constexpr double kSystemMinPositive = 1e-6;  // smallest positive rate or factor
inline constexpr double kSystemMaxLatencyUs = 1e9;  // 1000 s

/// Default of `accelerator.unusable_mem_gbs` (GiB): the margin the peer's searches use.
inline constexpr double kDefaultUnusableMemGiB = 6;
/// Defaults of the default mode's memory terms (memory/non_tensor.h, docs/memory.md).
/// `accelerator.cuda_context_gbs`: assumed, the CUDA context of a PyTorch process with the kernel
/// images it loads lazily (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2); measure it.
inline constexpr double kDefaultCudaContextGiB = 0.5;
/// `accelerator.nccl_channels`: NCCL's MAXCHANNELS (32), the ring channels NCCL's topology search
/// reaches on NVSwitch nodes (H100, B200: "32 coll channels" in NCCL_DEBUG=INFO logs).
inline constexpr int64_t kDefaultNcclChannels = 32;
/// `accelerator.nccl_channel_buffer_mib`: SIMPLE 4 + LL128 4.6875 + LL 0.5 MiB per channel
/// (NCCL's default buffer sizes; memory/non_tensor.h).
inline constexpr double kDefaultNcclChannelBufferMiB = 9.1875;
/// `accelerator.allocator_fragmentation`: reserved / allocated − 1 of PyTorch's caching allocator,
/// the mean over the 10 memory runs of validation/b200_megatron (1.028–1.079; mean 1.0544).
inline constexpr double kDefaultAllocatorFragmentation = 0.0544;
/// `accelerator.nvls_channels`: NVLS channels per communicator; 0 = NVLS off. NCCL turns NVLS on
/// by default on NVSwitch nodes with multicast (NCCL_NVLS_ENABLE, 16 channels: NCCL_NVLS_NCHANNELS),
/// and NVIDIA's NeMo / Megatron-Bridge performance launchers export NCCL_NVLS_ENABLE=0; the
/// presets say which (memory/non_tensor.h).
inline constexpr int64_t kDefaultNvlsChannels = 0;
/// `accelerator.nvls_chunk_kib`: NCCL_NVLS_CHUNKSIZE, 128 KiB (NCCL 2.20+).
inline constexpr double kDefaultNvlsChunkKiB = 128;
/// `accelerator.cublas_workspace_mib`: one GEMM workspace per library and stream, 32 MiB on sm90+
/// (PyTorch's CUBLAS_WORKSPACE_CONFIG ":4096:8", TransformerEngine's cuBLASLt workspace).
inline constexpr double kDefaultCublasWorkspaceMiB = 32;
/// `accelerator.deepep_nvl_chunk_tokens` / `deepep_rdma_chunk_tokens`: DeepEP's receive slots per
/// channel and peer (get_dispatch_config / get_combine_config for 8 ranks: 256 NVLink, 128 RDMA).
inline constexpr int64_t kDefaultDeepepNvlChunkTokens = 256;
inline constexpr int64_t kDefaultDeepepRdmaChunkTokens = 128;

/// Host (CPU) seconds to issue work, by framework layer (JSON `host.framework`, in µs).
struct HostFramework {
  double eager_op_s = 0;        // one PyTorch eager op: Python, dispatcher and the kernel launch
  double te_module_s = 0;       // one TransformerEngine module call beyond its kernels' launches
  double megatron_layer_s = 0;  // Megatron's Python around one transformer layer's forward
  double collective_s = 0;      // one torch.distributed (NCCL) call
  double graph_launch_s = 0;    // one CUDA graph replay
  double sync_s = 0;            // a device-to-host read the host waits for, once the device is there
  bool operator==(const HostFramework&) const = default;
};

struct SystemConfig {
  std::string sys_name;
  int64_t num_per_node = 8;
  bool fc8 = false;
  bool has_fc8 = false;
  std::string backend = "cuda";
  double mem_bytes = 0;          // JSON `mem_gbs` (GiB)
  /// Memory outside PyTorch's caching allocator: CUDA context, NCCL buffers, kernel images
  /// (JSON `unusable_mem_gbs`, GiB; default 6, the peer's gmi_error). Fit verdicts subtract it.
  double unusable_mem_bytes = kDefaultUnusableMemGiB * kGiB;
  /// True when the file gives `unusable_mem_gbs`: in the default mode a given value (a measured
  /// total outside PyTorch) replaces the CUDA context and NCCL terms below.
  bool unusable_mem_given = false;
  /// Default-mode memory terms (trainsim extensions, JSON `accelerator.cuda_context_gbs` GiB,
  /// `nccl_channels`, `nccl_channel_buffer_mib` MiB, `allocator_fragmentation`).
  double cuda_context_bytes = kDefaultCudaContextGiB * kGiB;
  int64_t nccl_channels = kDefaultNcclChannels;
  double nccl_channel_buffer_bytes = kDefaultNcclChannelBufferMiB * kMiB;
  double allocator_fragmentation = kDefaultAllocatorFragmentation;
  /// JSON `accelerator.nvls_channels`, `nvls_chunk_kib` (KiB), `cublas_workspace_mib` (MiB),
  /// `deepep_nvl_chunk_tokens`, `deepep_rdma_chunk_tokens` (memory/non_tensor.h).
  int64_t nvls_channels = kDefaultNvlsChannels;
  double nvls_chunk_bytes = kDefaultNvlsChunkKiB * 1024;
  double cublas_workspace_bytes = kDefaultCublasWorkspaceMiB * 1024 * 1024;
  int64_t deepep_nvl_chunk_tokens = kDefaultDeepepNvlChunkTokens;
  int64_t deepep_rdma_chunk_tokens = kDefaultDeepepRdmaChunkTokens;
  /// Streaming multiprocessors of the accelerator (JSON `accelerator.sm_count`, trainsim
  /// extension; datasheet value): the share of them a communication kernel takes from compute.
  std::optional<int64_t> sm_count;
  /// Host side of one GPU (trainsim extension, JSON `host`; 0 = not given): the host link's
  /// bandwidth per direction (`link_gbps`, GiB/s: PCIe or NVLink-C2C) and the optimizer state a
  /// CPU Adam updates per second for this GPU (`cpu_adam_gbps`, GiB/s of fp32 master params,
  /// m and v).
  double host_link_bytes_per_s = 0;
  double host_adam_bytes_per_s = 0;
  /// The host's cost of issuing work (JSON `host.framework`, µs; trainsim extension): absent, the
  /// estimate has no host stream. compute/host_cost.h says how each op's cost is made of them.
  std::optional<HostFramework> host_framework;
  CostMode mode = CostMode::Roofline;
  // Looked up by string_view without building a string.
  ComputeOps ops;
  std::map<std::string, BandwidthConfig, std::less<>> bandwidths;
  bool intra_with_pcie = false;
  NetworkGroups networks;
  /// GPUs in one NVLink domain (JSON `nvlink_domain_size`; GB200 NVL72: 72): groups inside one
  /// domain use high_intra_node. Absent: the node (num_per_node), as the peer.
  std::optional<int64_t> nvlink_domain_size;
  /// Relative step-time jitter of one node (JSON `straggler_jitter`), the coefficient of the
  /// straggler tail model. Absent: kNodeStragglerJitter (default mode) or kDefaultStragglerJitter,
  /// the peer's constant (compat mode).
  std::optional<double> straggler_jitter;
  /// trainsim extensions (ignored by the peer): schema version, free-text description and
  /// provenance (JSON text) of measured files.
  std::string schema_version;
  std::string description;
  std::string provenance_json;
  /// Hash of the content (canonical JSON), set by load_system; code that edits a system in
  /// place calls refresh_fingerprint. Estimate caches key on it, so it must follow the content.
  uint64_t fingerprint = 0;
};

/// The peer's straggler coefficient (SimuMax v1.2, fitted by its authors with n = min(nodes, dp,
/// edp)), used in compat mode when the system file gives none.
inline constexpr double kDefaultStragglerJitter = 0.09;
/// The default mode's coefficient with n = the job's nodes, refitted on the development set's
/// multi-node whole runs (nemo2407_h100, megatron_bridge_2509_h100 and _b200: 18 runs, 12 of them
/// dense) by a scan of j (docs/cost-model.md §9): mean |step-time error| 8.65 % at 0.055 over
/// the 18 runs and 5.61 % over the 12 dense ones, the minimum of both (0.09: 9.10 / 5.90 %;
/// 0.045: 8.89 / 5.87 %; 0: 12.04 / 9.54 %).
inline constexpr double kNodeStragglerJitter = 0.055;
/// GPUs sharing one NVLink domain: nvlink_domain_size, or the node.
[[nodiscard]] int64_t nvlink_domain(const SystemConfig& sys);

/// Recomputes `sys.fingerprint` from its content.
void refresh_fingerprint(SystemConfig& sys);

/// Parses a system JSON document. Throws ConfigError listing every problem, each naming
/// `source` and the JSON path.
[[nodiscard]] SystemConfig load_system(const std::string& text, const std::string& source);

/// Serializes back to the SimuMax-compatible format (plus trainsim's extension keys).
[[nodiscard]] std::string system_to_json_text(const SystemConfig& sys, int indent = 1);

}  // namespace trainsim
