// Plan runner.
#include "runner.h"

#include <chrono>
#include <map>
#include <set>

#include "calibration/shape_key.h"
#include "core/error.h"
#include "core/text.h"
#include "device_errors.h"
#include "efficiency.h"
#include "result_store.h"

namespace trainsim::kb {
namespace {

std::string format_time(double s) {
  if (s >= 1) return strprintf("%.3f s", s);
  if (s >= 1e-3) return strprintf("%.3f ms", s * 1e3);
  return strprintf("%.2f us", s * 1e6);
}

}  // namespace

void fill_efficiency(KernelResult& r, const DeviceFacts& dev) {
  if (r.status != "ok") return;
  if (r.kind == "compute") {
    r.peak = is_fp8_op(r.op) ? dev.peak_fp8_flops : dev.peak_bf16_flops;
    r.efficiency = compute_efficiency(r.flops, r.time.median, r.peak);
  } else if (r.kind == "memory") {
    r.peak = dev.peak_mem_bytes_per_s;
    r.efficiency = memory_efficiency(r.bytes, r.time.median, r.peak, 0, static_cast<int>(r.launches)).value_or(0);
  }
}

RunSummary run_plan(const BenchPlan& plan, Backend& backend, const RunOptions& opt, std::FILE* progress) {
  ResultStore store(opt.out_path);
  if (store.partial_exists() && !opt.resume)
    throw UsageError(store.partial_path() +
                     " exists from an interrupted run; pass --resume to continue it, or delete it to start over");
  std::vector<std::string> notes;
  std::string prev_device;
  std::vector<KernelResult> previous;
  if (opt.resume) previous = store.load_previous(notes, prev_device);
  for (const auto& n : notes) std::fprintf(progress, "kernels_bench: %s\n", n.c_str());

  KernelsDoc doc;
  doc.device = backend.device();
  if (!prev_device.empty() && prev_device != doc.device.name)
    throw Error("cannot resume " + opt.out_path + ": it was measured on '" + prev_device + "', this device is '" +
                doc.device.name + "'");
  doc.method_json = backend.method_json(opt.measure);
  doc.provenance_json = opt.provenance_json;

  RunSummary sum;
  std::vector<KernelResult> kept;
  std::map<std::string, size_t> have;  // id -> index in kept
  for (auto& r : previous) {
    if (r.status == "failed") continue;
    have.emplace(r.id(), kept.size());
    kept.push_back(std::move(r));
  }
  store.begin(doc, kept);

  double est_todo = 0;
  for (const auto& it : plan.items)
    if (!have.count(it.id())) est_todo += it.est_s;
  std::function<double()> now = opt.now_s ? opt.now_s : [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  const double t0 = now();
  double est_done = 0;
  std::map<std::string, KernelResult> fresh;
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const BenchItem& item = plan.items[i];
    if (have.count(item.id())) {
      ++sum.reused;
      continue;
    }
    if (opt.deadline_s > 0 && now() - t0 >= opt.deadline_s) {
      ++sum.left;
      continue;
    }
    KernelResult r;
    std::string lost;
    try {
      r = backend.measure(item, opt.measure);
    } catch (const DeviceLostError& e) {
      r = KernelResult{};
      r.status = "failed";
      r.reason = e.what();
      lost = e.what();
    } catch (const Error& e) {
      r = KernelResult{};
      r.status = "failed";
      r.reason = e.what();
    }
    r.kind = item.kind;
    r.op = item.op;
    r.key = item.key;
    if (item.flops > 0) r.flops = item.flops;
    if (item.bytes > 0) r.bytes = item.bytes;
    r.launches = item.launches;
    fill_efficiency(r, doc.device);
    store.append(r);
    ++sum.measured;
    ++(r.status == "ok" ? sum.ok : r.status == "unsupported" ? sum.unsupported : sum.failed);
    if (!lost.empty())
      throw Error(strprintf("stopped at item %zu/%zu (%s %s): the GPU is in an unrecoverable state: %s; every "
                            "later CUDA call in this process would fail too. The results so far are in %s; check "
                            "the GPU (nvidia-smi, dmesg), then rerun with --resume",
                            i + 1, plan.items.size(), item.op.c_str(), item.key.c_str(), lost.c_str(),
                            store.partial_path().c_str()));

    est_done += item.est_s;
    double elapsed = now() - t0;
    double eta = est_done > 0 ? (est_todo - est_done) * elapsed / est_done : est_todo;
    std::string what = r.status == "ok" ? format_time(r.time.median) +
                                              strprintf(" (p10 %s, p90 %s)", format_time(r.time.p10).c_str(),
                                                        format_time(r.time.p90).c_str())
                                        : r.status + ": " + r.reason;
    if (r.status == "ok" && r.kind != "latency") what += strprintf(", efficiency %.3f", r.efficiency);
    std::fprintf(progress, "[%zu/%zu] %s %s: %s | elapsed %s, ETA %s\n", i + 1, plan.items.size(), item.op.c_str(),
                 item.key.c_str(), what.c_str(), format_duration(elapsed).c_str(), format_duration(eta).c_str());
    std::fflush(progress);
    fresh.emplace(r.id(), std::move(r));
  }

  if (sum.left > 0)
    std::fprintf(progress, "kernels_bench: time budget of %s reached: %lld items not measured; --resume measures them\n",
                 format_duration(opt.deadline_s).c_str(), static_cast<long long>(sum.left));
  // Plan order first, then earlier results that are no longer in the plan.
  std::set<std::string> placed;
  for (const auto& item : plan.items) {
    auto f = fresh.find(item.id());
    if (f != fresh.end()) {
      doc.results.push_back(f->second);
    } else if (auto k = have.find(item.id()); k != have.end()) {
      doc.results.push_back(kept[k->second]);
    }
    placed.insert(item.id());
  }
  for (const auto& r : kept)
    if (!placed.count(r.id())) doc.results.push_back(r);
  store.finish(doc);
  return sum;
}

}  // namespace trainsim::kb
