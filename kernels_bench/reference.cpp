// CPU references.
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/text.h"

namespace trainsim::kb {

float bf16_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

float round_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if (std::isnan(x)) return x;
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16_to_float(static_cast<uint16_t>(u >> 16));
}

namespace {

// Minifloat with `man` mantissa bits and exponent bias `bias`; `finite_only` (E4M3) has no
// infinities and only S.1111.111 is NaN.
float minifloat(uint8_t bits, int man, int bias, bool finite_only) {
  const int exp_bits = 7 - man;
  const int sign = bits >> 7;
  const int e = (bits >> man) & ((1 << exp_bits) - 1);
  const int m = bits & ((1 << man) - 1);
  const int e_max = (1 << exp_bits) - 1;
  float v;
  if (finite_only && e == e_max && m == (1 << man) - 1) {
    v = std::numeric_limits<float>::quiet_NaN();
  } else if (!finite_only && e == e_max) {
    v = m == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<float>(m), 1 - bias - man);
  } else {
    v = std::ldexp(static_cast<float>(m + (1 << man)), e - bias - man);
  }
  return sign ? -v : v;
}

}  // namespace

float e4m3_to_float(uint8_t bits) { return minifloat(bits, 3, 7, true); }
float e5m2_to_float(uint8_t bits) { return minifloat(bits, 2, 15, false); }

std::vector<float> gemm_ref(const GemmDims& g, const std::vector<float>& a, const std::vector<float>& b,
                            const std::vector<float>& c, float a_scale, float b_scale) {
  const auto m = static_cast<size_t>(g.m), n = static_cast<size_t>(g.n), k = static_cast<size_t>(g.k);
  const auto lda = static_cast<size_t>(g.lda()), ldb = static_cast<size_t>(g.ldb());
  if (a.size() < m * k || b.size() < k * n || (g.accumulate && c.size() < m * n))
    throw Error("gemm_ref: operand sizes do not match the GEMM dimensions");
  std::vector<float> d(m * n);
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < m; ++i) {
      double acc = 0;
      for (size_t l = 0; l < k; ++l) {
        double x = g.ta ? a[l + i * lda] : a[i + l * lda];
        double y = g.tb ? b[j + l * ldb] : b[l + j * ldb];
        acc += x * y;
      }
      acc *= static_cast<double>(a_scale) * b_scale;
      if (g.accumulate) acc += c[i + j * m];
      d[i + j * m] = static_cast<float>(acc);
    }
  }
  return d;
}

namespace {

size_t idx4(int64_t h_count, int64_t s, int64_t d, int64_t bi, int64_t h, int64_t i, int64_t x) {
  return static_cast<size_t>(((bi * h_count + h) * s + i) * d + x);
}

// Softmax probabilities of query row i of (bi, h): P[j] for j < s (0 where masked) and the stats.
std::vector<double> probs(const SdpaProblem& p, const std::vector<float>& q, const std::vector<float>& k, int64_t bi,
                          int64_t h, int64_t i, double* stats) {
  const int64_t kh = h / (p.hq / p.hkv);
  std::vector<double> sc(static_cast<size_t>(p.s), -std::numeric_limits<double>::infinity());
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < p.s; ++j) {
    if (p.causal && j > i) continue;
    double acc = 0;
    for (int64_t x = 0; x < p.dqk; ++x)
      acc += static_cast<double>(q[idx4(p.hq, p.s, p.dqk, bi, h, i, x)]) * k[idx4(p.hkv, p.s, p.dqk, bi, kh, j, x)];
    sc[static_cast<size_t>(j)] = acc * p.scale;
    mx = std::max(mx, sc[static_cast<size_t>(j)]);
  }
  double sum = 0;
  for (auto& v : sc) sum += std::isinf(v) ? 0 : std::exp(v - mx);
  *stats = mx + std::log(sum);
  for (auto& v : sc) v = std::isinf(v) ? 0 : std::exp(v - *stats);
  return sc;
}

void check_sdpa(const SdpaProblem& p) {
  if (p.hkv < 1 || p.hq % p.hkv != 0) throw Error("sdpa reference: hq must be a multiple of hkv");
}

}  // namespace

SdpaFwdRef sdpa_fwd_ref(const SdpaProblem& p, const std::vector<float>& q, const std::vector<float>& k,
                        const std::vector<float>& v) {
  check_sdpa(p);
  SdpaFwdRef r;
  r.o.assign(static_cast<size_t>(p.b * p.hq * p.s * p.dv), 0);
  r.stats.assign(static_cast<size_t>(p.b * p.hq * p.s), 0);
  for (int64_t bi = 0; bi < p.b; ++bi)
    for (int64_t h = 0; h < p.hq; ++h)
      for (int64_t i = 0; i < p.s; ++i) {
        double st = 0;
        std::vector<double> pr = probs(p, q, k, bi, h, i, &st);
        r.stats[static_cast<size_t>((bi * p.hq + h) * p.s + i)] = static_cast<float>(st);
        const int64_t kh = h / (p.hq / p.hkv);
        for (int64_t x = 0; x < p.dv; ++x) {
          double acc = 0;
          for (int64_t j = 0; j < p.s; ++j) acc += pr[static_cast<size_t>(j)] * v[idx4(p.hkv, p.s, p.dv, bi, kh, j, x)];
          r.o[idx4(p.hq, p.s, p.dv, bi, h, i, x)] = static_cast<float>(acc);
        }
      }
  return r;
}

SdpaBwdRef sdpa_bwd_ref(const SdpaProblem& p, const std::vector<float>& q, const std::vector<float>& k,
                        const std::vector<float>& v, const std::vector<float>& d_o) {
  check_sdpa(p);
  std::vector<double> dq(q.size(), 0), dk(k.size(), 0), dv(v.size(), 0);
  const SdpaFwdRef fwd = sdpa_fwd_ref(p, q, k, v);
  for (int64_t bi = 0; bi < p.b; ++bi)
    for (int64_t h = 0; h < p.hq; ++h) {
      const int64_t kh = h / (p.hq / p.hkv);
      for (int64_t i = 0; i < p.s; ++i) {
        double st = 0;
        std::vector<double> pr = probs(p, q, k, bi, h, i, &st);
        // D = rowsum(dO * O); dP = dO V^T; dS = P (dP - D).
        double dsum = 0;
        for (int64_t x = 0; x < p.dv; ++x)
          dsum += static_cast<double>(d_o[idx4(p.hq, p.s, p.dv, bi, h, i, x)]) * fwd.o[idx4(p.hq, p.s, p.dv, bi, h, i, x)];
        for (int64_t j = 0; j < p.s; ++j) {
          const double pj = pr[static_cast<size_t>(j)];
          if (pj == 0) continue;
          double dp = 0;
          for (int64_t x = 0; x < p.dv; ++x) {
            const double g = d_o[idx4(p.hq, p.s, p.dv, bi, h, i, x)];
            dp += g * v[idx4(p.hkv, p.s, p.dv, bi, kh, j, x)];
            dv[idx4(p.hkv, p.s, p.dv, bi, kh, j, x)] += pj * g;
          }
          const double ds = pj * (dp - dsum) * p.scale;
          for (int64_t x = 0; x < p.dqk; ++x) {
            dq[idx4(p.hq, p.s, p.dqk, bi, h, i, x)] += ds * k[idx4(p.hkv, p.s, p.dqk, bi, kh, j, x)];
            dk[idx4(p.hkv, p.s, p.dqk, bi, kh, j, x)] += ds * q[idx4(p.hq, p.s, p.dqk, bi, h, i, x)];
          }
        }
      }
    }
  auto to_f = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  return {to_f(dq), to_f(dk), to_f(dv)};
}

CrossEntropyRef cross_entropy_ref(int64_t rows, int64_t vocab, const std::vector<float>& logits,
                                  const std::vector<int32_t>& target) {
  CrossEntropyRef r;
  r.grad.resize(static_cast<size_t>(rows * vocab));
  for (int64_t row = 0; row < rows; ++row) {
    const float* x = logits.data() + row * vocab;
    double mx = *std::max_element(x, x + vocab), sum = 0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(x[v] - mx);
    const double lse = mx + std::log(sum);
    const int32_t t = target[static_cast<size_t>(row)];
    r.lse.push_back(static_cast<float>(lse));
    r.loss.push_back(static_cast<float>(lse - x[t]));
    for (int64_t v = 0; v < vocab; ++v)
      r.grad[static_cast<size_t>(row * vocab + v)] = static_cast<float>(std::exp(x[v] - lse) - (v == t ? 1.0 : 0.0));
  }
  return r;
}

Comparison compare(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol) {
  Comparison c;
  if (got.size() != want.size()) {
    c.ok = false;
    c.detail = strprintf("size %zu, expected %zu", got.size(), want.size());
    return c;
  }
  double worst_excess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want[i], err = std::fabs(static_cast<double>(got[i]) - w);
    const double rel = err / std::max(std::fabs(w), atol);
    const double excess = std::isnan(err) ? INFINITY : err - (atol + rtol * std::fabs(w));
    if (std::isnan(err) || err > c.max_abs_err) c.max_abs_err = std::isnan(err) ? INFINITY : err;
    c.max_rel_err = std::max(c.max_rel_err, std::isnan(rel) ? INFINITY : rel);
    if (excess > worst_excess) {
      worst_excess = excess;
      c.worst = i;
    }
    if (excess > 0) c.ok = false;
  }
  c.detail = strprintf("max abs err %.2e, max rel err %.2e (atol %.0e, rtol %.0e)", c.max_abs_err, c.max_rel_err, atol,
                       rtol);
  if (!c.ok)
    c.detail += strprintf("; worst at [%zu]: got %.6g, expected %.6g", c.worst, static_cast<double>(got[c.worst]),
                          static_cast<double>(want[c.worst]));
  return c;
}

}  // namespace trainsim::kb
