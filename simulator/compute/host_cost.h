// The host's side of a training step: what issuing an op costs the CPU, which ops a CUDA graph
// captures, and how a pass runs when the host must wait for the device inside it (sync points).
// The engine replays one host stream per rank beside its device streams (docs/cost-model.md §18):
// a device op starts no earlier than the host has issued it, the host otherwise runs ahead.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plan/settings.h"
#include "system/system_config.h"
#include "model/graph.h"

namespace trainsim {

/// Host seconds to issue one phase (kFwd, kBwdAct, kBwdW) of a leaf, by op kind and framework:
/// every kernel is one PyTorch eager op (Python, ATen dispatch, cudaLaunchKernel: `eager_op`),
/// every collective one torch.distributed call (`collective`), and a TransformerEngine module
/// (Leaf::te_module) adds its Python around the kernels once per call (`te_module`). A phase
/// without kernels or collectives costs nothing. Ops added to the graph later get their cost
/// from the same rule. `module_call` false: the phase runs in a module call counted with another
/// phase (TE runs a Linear's input and weight gradients in one backward call).
[[nodiscard]] double leaf_host_s(const HostFramework& f, const Leaf& l, int phase, bool module_call = true);

/// The parts of a transformer layer a CUDA graph scope captures (Megatron's CudaGraphScope).
struct GraphCapture {
  bool attn = false;    // input norm through the attention's bias-dropout-add
  bool mlp = false;     // the dense MLP part (pre-MLP norm on)
  bool moe = false;     // the MoE part (pre-MLP norm on, router, dispatch, experts, combine)
  bool router = false;  // the MoE router only (moe_router, moe_preprocess)
  bool all = false;     // full_iteration: every op of the step
  [[nodiscard]] bool any() const { return attn || mlp || moe || router || all; }
};

/// What `s` captures: nothing without CUDA graphs (Settings::cuda_graphs); an empty
/// scope, or 0.15's `full`, captures every transformer layer whole.
[[nodiscard]] GraphCapture graph_capture(const Settings& s);

/// Per leaf of a layer, whether its graphs hold it. A sync point cannot be captured (its
/// host read needs the data), nor can what follows it in the MoE part (shapes set by the read):
/// those stay eager.
[[nodiscard]] std::vector<bool> captured_leaves(const LayerTemplate& t, const GraphCapture& g);

/// Graph replays one pass of a layer needs: one per run of consecutive captured leaves.
[[nodiscard]] int64_t graph_launches(const std::vector<bool>& captured);

/// One stretch of a pass between sync points: host seconds to issue it, device seconds to run it.
struct HostSegment {
  double host = 0, device = 0;
};

/// A pass with sync points as the engine replays it: up to the first sync the host and the
/// device run as for any pass; from there on they run in lockstep, the rest of the pass a fixed
/// time for each.
struct SyncedPass {
  double host_first = 0, device_first = 0;  // before the first sync
  double host_rest = 0, device_rest = 0;    // from the first sync to the end of the pass
};

/// `segments`: the pass cut at its n ≥ 1 sync points (n + 1 segments). At each sync the host
/// waits until the device gets there, reads the value (`sync_s`) and launches the next kernel
/// (`launch_s`) while the device idles; a segment then takes max(launch + device, host). The
/// host ends the pass after the last segment's host time, the device after its device time.
[[nodiscard]] SyncedPass synced_pass(std::span<const HostSegment> segments, double sync_s, double launch_s);

}  // namespace trainsim
