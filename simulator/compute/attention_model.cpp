// Fused-attention time structure and its fit (attention_model.h).
#include "compute/attention_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainsim {

AttentionShape attention_shape(const PackedKey& key) {
  const double* v = key.num;  // batch, seq, heads, KV heads, d_qk, d_v
  return {v[0], v[1], v[2], v[3], v[4], v[5]};
}

double attention_flops(const AttentionShape& s) {
  return 2 * s.batch * s.seq * s.seq * std::max(s.heads, s.kv_heads) * (s.d_qk + s.d_v);
}

void attention_terms(const AttentionShape& s, double parallel, double out[kAttentionTerms]) {
  const double q = std::ceil(s.seq / kAttentionTile);
  const double rows = s.batch * std::max(s.heads, s.kv_heads);
  const double ctas = rows * q, pairs = rows * q * (q + 1) / 2;
  const double span = std::max(pairs / parallel, q);
  out[0] = 1;
  out[1] = std::ceil(ctas / parallel);
  out[2] = span;
  out[3] = span * (s.d_qk + s.d_v) / 256;
}

double AttentionFit::time(const AttentionShape& s) const {
  double x[kAttentionTerms];
  attention_terms(s, parallel, x);
  double t = 0;
  for (int j = 0; j < kAttentionTerms; ++j) t += c[j] * x[j];
  return t;
}

double AttentionFit::log_efficiency(const AttentionShape& s) const { return std::log(attention_flops(s) / time(s)); }

namespace {

// Solves the normal equations g·c = r of the terms in `mask` (Gaussian elimination with partial
// pivoting); false when singular.
bool solve(const double g[kAttentionTerms][kAttentionTerms], const double r[kAttentionTerms], unsigned mask,
           double c[kAttentionTerms]) {
  int idx[kAttentionTerms], n = 0;
  for (int j = 0; j < kAttentionTerms; ++j)
    if (mask >> j & 1u) idx[n++] = j;
  double a[kAttentionTerms][kAttentionTerms + 1];
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) a[i][j] = g[idx[i]][idx[j]];
    a[i][n] = r[idx[i]];
  }
  for (int col = 0; col < n; ++col) {
    int piv = col;
    for (int i = col + 1; i < n; ++i)
      if (std::fabs(a[i][col]) > std::fabs(a[piv][col])) piv = i;
    if (!(std::fabs(a[piv][col]) > 1e-12)) return false;
    for (int j = 0; j <= n; ++j) std::swap(a[col][j], a[piv][j]);
    for (int i = 0; i < n; ++i) {
      if (i == col) continue;
      const double f = a[i][col] / a[col][col];
      for (int j = col; j <= n; ++j) a[i][j] -= f * a[col][j];
    }
  }
  for (int j = 0; j < kAttentionTerms; ++j) c[j] = 0;
  for (int i = 0; i < n; ++i) c[idx[i]] = a[i][n] / a[i][i];
  return true;
}

}  // namespace

AttentionFit fit_attention(const std::vector<AttentionShape>& shapes, const std::vector<double>& eff) {
  AttentionFit best;
  const size_t np = std::min(shapes.size(), eff.size());
  std::vector<double> seqs;
  for (size_t i = 0; i < np; ++i) seqs.push_back(shapes[i].seq);
  std::sort(seqs.begin(), seqs.end());
  const auto distinct = static_cast<size_t>(std::unique(seqs.begin(), seqs.end()) - seqs.begin());
  if (np < kAttentionStructurePoints || distinct < kAttentionStructureSeqs) return best;
  std::vector<double> t(np);
  for (size_t i = 0; i < np; ++i) t[i] = attention_flops(shapes[i]) / eff[i];
  double best_sse = std::numeric_limits<double>::infinity();
  for (int k = kAttentionParallelFrom; k <= kAttentionParallelTo; ++k) {
    const double parallel = std::exp2(static_cast<double>(k) / kAttentionParallelSteps);
    // Relative error: rows x/t against 1; each term scaled by its largest value (conditioning).
    std::vector<double> rows(np * kAttentionTerms);
    double scale[kAttentionTerms] = {};
    for (size_t i = 0; i < np; ++i) {
      attention_terms(shapes[i], parallel, &rows[i * kAttentionTerms]);
      for (int j = 0; j < kAttentionTerms; ++j) {
        rows[i * kAttentionTerms + j] /= t[i];
        scale[j] = std::max(scale[j], rows[i * kAttentionTerms + j]);
      }
    }
    double g[kAttentionTerms][kAttentionTerms] = {}, r[kAttentionTerms] = {};
    for (size_t i = 0; i < np; ++i) {
      const double* x = &rows[i * kAttentionTerms];
      for (int a = 0; a < kAttentionTerms; ++a) {
        r[a] += x[a] / scale[a];
        for (int b = 0; b < kAttentionTerms; ++b) g[a][b] += x[a] / scale[a] * x[b] / scale[b];
      }
    }
    // Every non-empty subset of terms; the best whose coefficients are all ≥ 0.
    for (unsigned mask = 1; mask < (1u << kAttentionTerms); ++mask) {
      double c[kAttentionTerms];
      if (!solve(g, r, mask, c)) continue;
      bool ok = true;
      for (double v : c) ok = ok && v >= 0;
      if (!ok) continue;
      double sse = 0;
      for (size_t i = 0; i < np; ++i) {
        double p = 0;
        for (int j = 0; j < kAttentionTerms; ++j) p += c[j] * rows[i * kAttentionTerms + j] / scale[j];
        sse += (p - 1) * (p - 1);
      }
      if (sse < best_sse) {
        best_sse = sse;
        best.parallel = parallel;
        for (int j = 0; j < kAttentionTerms; ++j) best.c[j] = c[j] / scale[j];
      }
    }
  }
  if (best.fitted()) {
    best.rms = std::sqrt(best_sse / static_cast<double>(np));
    best.points = np;
  }
  return best;
}

}  // namespace trainsim
