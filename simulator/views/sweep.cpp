#include "views/sweep.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/fit.h"
#include "estimate/throughput.h"
#include "views/axis.h"
#include "views/html_report.h"
#include "views/predict.h"

namespace trainsim {

namespace {

// Bound on the points of one sweep (each is a whole prediction).
constexpr size_t kMaxSweepPoints = 4096;

std::string num(double v) { return strprintf("%.1f", v); }

}  // namespace

SweepAxis parse_sweep_axis(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError("--vary: expected KEY=V1,V2,..., got '" + text + "'");
  SweepAxis a;
  a.key = text.substr(0, eq);
  for (const std::string& v : split(text.substr(eq + 1), ',')) {
    if (v.empty()) throw UsageError("--vary " + a.key + ": an empty value in '" + text.substr(eq + 1) + "'");
    a.values.push_back(v);
  }
  (void)parse_set_option(a.key + "=" + a.values[0]);  // the key, checked as --set checks it
  return a;
}

std::vector<SweepPoint> run_sweep(const PlanRequest& base, const std::string& default_model,
                                  const std::string& default_strategy, const ConfigText& system, Mode mode,
                                  const std::vector<SweepAxis>& axes) {
  size_t total = 1;
  for (const auto& a : axes) total *= a.values.size();
  if (axes.empty() || total > kMaxSweepPoints)
    throw UsageError(strprintf("sweep: give 1 or 2 --vary keys with at most %zu combinations in all, got %zu",
                               kMaxSweepPoints, axes.empty() ? size_t{0} : total));
  std::vector<SweepPoint> out;
  std::vector<std::string> values(axes.size());
  std::function<void(size_t)> walk = [&](size_t depth) {
    if (depth < axes.size()) {
      for (const auto& v : axes[depth].values) {
        values[depth] = v;
        walk(depth + 1);
      }
      return;
    }
    SweepPoint p;
    p.values = values;
    PlanRequest r = base;
    for (size_t i = 0; i < axes.size(); ++i)
      r.overrides.push_back({axes[i].key, values[i], "--vary " + axes[i].key + "=" + values[i]});
    try {
      const Prediction pr = predict(r, default_model, default_strategy, system, MfuConvention::Megatron, mode);
      const Estimate& e = pr.estimate;
      p.step_ms = e.iteration_time_s * 1e3;
      p.mfu = megatron_throughput(pr.in.model, pr.in.settings, pr.in.system, e).mfu;
      p.peak_reserved_gib = e.peak_reserved_bytes() / kGiB;
      const FitVerdict v = fit_verdict(e, fit_rule(pr.in.system, e.mode));
      p.fits = v.fits;
      p.tight = v.tight();
      p.headroom_gib = v.headroom_bytes / kGiB;
    } catch (const Error& err) {
      p.error = err.what();
    }
    out.push_back(std::move(p));
  };
  walk(0);
  return out;
}

std::string sweep_csv(const std::vector<SweepAxis>& axes, const std::vector<SweepPoint>& points) {
  std::string o;
  for (const auto& a : axes) o += csv_escape(a.key) + ",";
  o += "step_time_ms,mfu,peak_reserved_gib,headroom_gib,fits,fit_state,error\n";
  for (const auto& p : points) {
    for (const auto& v : p.values) o += csv_escape(v) + ",";
    if (p.error.empty())
      o += strprintf("%.4f,%.5f,%.4f,%.4f,%s,%s,\n", p.step_ms, p.mfu, p.peak_reserved_gib, p.headroom_gib,
                     p.fits ? "true" : "false", p.tight ? "TIGHT" : p.fits ? "FITS" : "DOES NOT FIT");
    else
      o += ",,,,,," + csv_escape(p.error) + "\n";
  }
  return o;
}

std::string sweep_table(const std::vector<SweepAxis>& axes, const std::vector<SweepPoint>& points) {
  // A column per key, as wide as the key or its widest value.
  std::vector<int> w;
  for (const auto& a : axes) {
    size_t n = a.key.size();
    for (const auto& v : a.values) n = std::max(n, v.size());
    w.push_back(static_cast<int>(n));
  }
  std::string o;
  for (size_t i = 0; i < axes.size(); ++i) o += strprintf("%-*s  ", w[i], axes[i].key.c_str());
  o += "   step ms     MFU  reserved GiB  headroom GiB  fits\n";
  for (const auto& p : points) {
    for (size_t i = 0; i < std::min(p.values.size(), w.size()); ++i) o += strprintf("%-*s  ", w[i], p.values[i].c_str());
    if (p.error.empty())
      o += strprintf("%10.2f %7.4f %13.2f %13.2f  %s\n", p.step_ms, p.mfu, p.peak_reserved_gib, p.headroom_gib,
                     p.tight ? "tight" : p.fits ? "yes" : "NO");
    else
      o += "not a plan: " + p.error.substr(0, p.error.find('\n')) + "\n";  // the first issue (the CSV has all)
  }
  return o;
}

std::string sweep_html(const std::vector<SweepAxis>& axes, const std::vector<SweepPoint>& points,
                       const std::string& title) {
  const double width = 960, left = 80, top = 40, plot_w = 820, plot_h = 360;
  std::string svg;
  double lo = 1e300, hi = 0;
  for (const auto& p : points)
    if (p.error.empty()) {
      lo = std::min(lo, p.step_ms);
      hi = std::max(hi, p.step_ms);
    }
  if (hi <= 0) lo = hi = 0;
  if (axes.size() == 1) {
    // Step time along the key's values (in the order given), a point per value; an x position per value.
    const Ticks t = nice_ticks(std::min(lo, hi), hi);
    const size_t n = points.size();
    auto px = [&](size_t i) { return left + (n > 1 ? plot_w * static_cast<double>(i) / static_cast<double>(n - 1) : plot_w / 2); };
    auto py = [&](double v) { return top + plot_h - (v - t.lo) / (t.hi - t.lo) * plot_h; };
    const double height = top + plot_h + 70;
    svg = "<svg id=\"sweep-line\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) +
          "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" role=\"img\">";
    svg += "<text x=\"0\" y=\"18\" class=\"t\">step time (ms) vs " + html_escape(axes[0].key) + "</text>";
    svg += "<g class=\"axis\"><line x1=\"" + num(left) + "\" y1=\"" + num(top) + "\" x2=\"" + num(left) + "\" y2=\"" +
           num(top + plot_h) + "\" stroke=\"#666\"/>";
    for (double v : t.values)
      svg += "<text class=\"tick\" x=\"" + num(left - 8) + "\" y=\"" + num(py(v) + 4) + "\" text-anchor=\"end\">" +
             tick_label(t, v) + "</text>";
    svg += "<line x1=\"" + num(left) + "\" y1=\"" + num(top + plot_h) + "\" x2=\"" + num(left + plot_w) + "\" y2=\"" +
           num(top + plot_h) + "\" stroke=\"#666\"/>";
    for (size_t i = 0; i < n; ++i)
      svg += "<text class=\"tick\" x=\"" + num(px(i)) + "\" y=\"" + num(top + plot_h + 18) + "\" text-anchor=\"middle\">" +
             html_escape(points[i].values[0]) + "</text>";
    svg += "<text class=\"unit\" x=\"" + num(left + plot_w / 2) + "\" y=\"" + num(top + plot_h + 40) +
           "\" text-anchor=\"middle\">" + html_escape(axes[0].key) + "</text></g>";
    std::string path;
    for (size_t i = 0; i < n; ++i) {
      if (!points[i].error.empty()) continue;
      path += (path.empty() ? "M" : " L") + strprintf("%.1f %.1f", px(i), py(points[i].step_ms));
      svg += "<circle class=\"point\" cx=\"" + num(px(i)) + "\" cy=\"" + num(py(points[i].step_ms)) + "\" r=\"4\" fill=\"" +
             (points[i].tight ? "#f28e2b" : points[i].fits ? "#4e79a7" : "#e15759") + "\"><title>" +
             html_escape(axes[0].key + " " + points[i].values[0]) +
             strprintf(": %.2f ms, %s", points[i].step_ms,
                       points[i].tight ? "tight" : points[i].fits ? "fits" : "does not fit") +
             "</title></circle>";
    }
    if (!path.empty()) svg = svg + "<path d=\"" + path + "\" fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"2\"/>";
    svg += "</svg>\n";
  } else {
    // Heat map: the first key down, the second across; a cell per combination, darker = slower.
    const size_t rows = axes[0].values.size(), cols = axes[1].values.size();
    const double cw = std::min(120.0, plot_w / static_cast<double>(cols)), ch = 28;
    const double left2 = 180, height = top + 30 + ch * static_cast<double>(rows) + 50;
    svg = "<svg id=\"sweep-heatmap\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) +
          "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" role=\"img\">";
    svg += "<text x=\"0\" y=\"18\" class=\"t\">step time (ms): " + html_escape(axes[0].key) + " (rows) × " +
           html_escape(axes[1].key) + " (columns)</text>";
    svg += "<g class=\"axis\">";
    for (size_t c = 0; c < cols; ++c)
      svg += "<text class=\"tick\" x=\"" + num(left2 + cw * (static_cast<double>(c) + 0.5)) + "\" y=\"" + num(top + 20) +
             "\" text-anchor=\"middle\">" + html_escape(axes[1].values[c]) + "</text>";
    for (size_t r = 0; r < rows; ++r)
      svg += "<text class=\"tick\" x=\"" + num(left2 - 8) + "\" y=\"" + num(top + 30 + ch * static_cast<double>(r) + 18) +
             "\" text-anchor=\"end\">" + html_escape(axes[0].values[r]) + "</text>";
    svg += "</g>";
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c) {
        const SweepPoint& p = points[r * cols + c];
        const double x = left2 + cw * static_cast<double>(c), y = top + 30 + ch * static_cast<double>(r);
        const double f = p.error.empty() && hi > lo ? (p.step_ms - lo) / (hi - lo) : 0;
        const std::string fill = p.error.empty() ? strprintf("rgb(%d,%d,%d)", static_cast<int>(230 - 150 * f),
                                                             static_cast<int>(240 - 160 * f), 255)
                                                 : std::string("#eee");
        svg += "<rect class=\"cell\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(cw - 2) + "\" height=\"" +
               num(ch - 2) + "\" fill=\"" + fill + "\"><title>" +
               html_escape(axes[0].key + " " + p.values[0] + ", " + axes[1].key + " " + p.values[1]) + ": " +
               (p.error.empty() ? strprintf("%.2f ms", p.step_ms) : html_escape(p.error)) + "</title></rect>";
        svg += "<text x=\"" + num(x + (cw - 2) / 2) + "\" y=\"" + num(y + 18) + "\" text-anchor=\"middle\">" +
               (p.error.empty() ? strprintf("%.0f%s", p.step_ms, p.tight ? "°" : p.fits ? "" : "*") : std::string("–")) + "</text>";
      }
    svg += "<text x=\"0\" y=\"" + num(height - 10) + "\">* does not fit; ° tight (fits if the allocator releases its cache); – not a valid plan</text></svg>\n";
  }
  std::string table = "<pre id=\"sweep-table\">" + html_escape(sweep_table(axes, points)) + "</pre>\n";
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(title) +
         "</title>\n<style>body{font:14px sans-serif;margin:24px;color:#222}svg.plot{display:block;margin:18px 0;"
         "max-width:100%;height:auto}svg text{font:12px sans-serif}svg text.t{font-weight:bold;font-size:14px}"
         "</style></head>\n<body>\n<h1>" + html_escape(title) + "</h1>\n" + svg + table + "</body></html>\n";
}

}  // namespace trainsim
