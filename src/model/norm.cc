// LayerNorm, RMSNorm, GELU, SiLU and SiLU(a) · b with their backward passes,
// compiled once per SIMD target (norm.h says what each computes).
//
// Rows: the mean is taken of x − x[0] (then x[0] added back), so a large
// common offset does not cost the float32 sum its digits; the variance is
// the mean of (x − mean)², a second pass. Parameter gradients are summed over
// rows in double (as LinearBackward's bias), one pass per row.
// Tails: the last partial vector of a row goes through a stack buffer
// (never a load past the end).

#include "src/model/norm.h"

#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/model/norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// f(i, vectors...) over n values in vectors of N lanes; the tail through
// zero-padded copies. `ins` are read, `outs` written (each may alias an in).
template <size_t kIns, size_t kOuts, class F>
HWY_INLINE void Elementwise(int64_t count, const float* const (&ins)[kIns],
                            float* const (&outs)[kOuts], const F& f) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t n = static_cast<size_t>(count);
  size_t i = 0;
  VF in[kIns], out[kOuts];
  for (; i + N <= n; i += N) {
    for (size_t a = 0; a < kIns; ++a) in[a] = hn::LoadU(d, ins[a] + i);
    f(in, out);
    for (size_t a = 0; a < kOuts; ++a) hn::StoreU(out[a], d, outs[a] + i);
  }
  if (i == n) return;
  HWY_ALIGN float buf[kIns > kOuts ? kIns : kOuts][HWY_MAX_BYTES / sizeof(float)] = {};
  for (size_t a = 0; a < kIns; ++a) {
    memcpy(buf[a], ins[a] + i, (n - i) * sizeof(float));
    in[a] = hn::Load(d, buf[a]);
  }
  f(in, out);
  for (size_t a = 0; a < kOuts; ++a) {
    hn::Store(out[a], d, buf[a]);
    memcpy(outs[a] + i, buf[a], (n - i) * sizeof(float));
  }
}

// Σ over a row of f(i-th vectors). Lanes past the end hold `pad` in every
// input: f must map it to zero.
template <size_t kIns, class F>
HWY_INLINE float RowSum(int64_t count, const float* const (&ins)[kIns],
                        const F& f, float pad = 0.0f) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t n = static_cast<size_t>(count);
  VF sum0 = hn::Zero(d), sum1 = hn::Zero(d);
  VF in[kIns];
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    for (size_t a = 0; a < kIns; ++a) in[a] = hn::LoadU(d, ins[a] + i);
    sum0 = hn::Add(sum0, f(in));
    for (size_t a = 0; a < kIns; ++a) in[a] = hn::LoadU(d, ins[a] + i + N);
    sum1 = hn::Add(sum1, f(in));
  }
  HWY_ALIGN float buf[kIns][HWY_MAX_BYTES / sizeof(float)];
  for (; i < n; i += N) {
    const size_t m = n - i < N ? n - i : N;
    for (size_t a = 0; a < kIns; ++a) {
      for (float& b : buf[a]) b = pad;
      memcpy(buf[a], ins[a] + i, m * sizeof(float));
      in[a] = hn::Load(d, buf[a]);
    }
    sum0 = hn::Add(sum0, f(in));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1)));
}

// The row's mean (through the offset x[0]) and 1 / sqrt(var + eps).
HWY_INLINE void RowMoments(const float* x, int64_t dim, float eps,
                           float* mean_out, float* rstd_out) {
  const DF d;
  const float x0 = x[0];
  const float* const ins[1] = {x};
  const VF first = hn::Set(d, x0);
  const float shifted = RowSum<1>(dim, ins, [&](const VF* v) {
    return hn::Sub(v[0], first);
  }, x0);
  const float mean = x0 + shifted / static_cast<float>(dim);
  const VF m = hn::Set(d, mean);
  const float squares = RowSum<1>(dim, ins, [&](const VF* v) {
    const VF c = hn::Sub(v[0], m);
    return hn::Mul(c, c);
  }, mean);
  const float var = squares / static_cast<float>(dim);
  *mean_out = mean;
  *rstd_out = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var) + eps));
}

void LayerNormImpl(const float* x, int64_t rows, int64_t dim,
                   const float* scale, const float* shift, float eps, float* y,
                   float* means, float* rstds) {
  const DF d;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float mean, rstd;
    RowMoments(xr, dim, eps, &mean, &rstd);
    if (means) means[r] = mean;
    if (rstds) rstds[r] = rstd;
    const VF m = hn::Set(d, mean), s = hn::Set(d, rstd);
    const float* const ins[3] = {xr, scale, shift};
    float* const outs[1] = {y + r * dim};
    Elementwise<3, 1>(dim, ins, outs, [&](const VF* v, VF* o) {
      o[0] = hn::MulAdd(hn::Mul(hn::Sub(v[0], m), s), v[1], v[2]);
    });
  }
}

void LayerNormBackwardImpl(const float* x, int64_t rows, int64_t dim,
                           const float* scale, const float* means,
                           const float* rstds, const float* grad_y,
                           float* grad_x, double* sum_scale,
                           double* sum_shift) {
  const DF d;
  const float inv_dim = 1.0f / static_cast<float>(dim);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    const float* gy = grad_y + r * dim;
    const VF m = hn::Set(d, means[r]), s = hn::Set(d, rstds[r]);
    const float* const ins[3] = {xr, gy, scale};
    // Padded lanes: grad_y = 0 there, so every product is 0.
    const float mean_g = RowSum<3>(dim, ins, [&](const VF* v) {
      return hn::Mul(v[1], v[2]);
    }) * inv_dim;
    const float mean_gx = RowSum<3>(dim, ins, [&](const VF* v) {
      return hn::Mul(hn::Mul(v[1], v[2]), hn::Mul(hn::Sub(v[0], m), s));
    }) * inv_dim;
    const VF mg = hn::Set(d, mean_g), mgx = hn::Set(d, mean_gx);
    float* const outs[1] = {grad_x + r * dim};
    Elementwise<3, 1>(dim, ins, outs, [&](const VF* v, VF* o) {
      const VF xhat = hn::Mul(hn::Sub(v[0], m), s);
      const VF g = hn::Mul(v[1], v[2]);
      o[0] = hn::Mul(s, hn::Sub(hn::Sub(g, mg), hn::Mul(xhat, mgx)));
    });
    const double mean = means[r], rstd = rstds[r];
    for (int64_t j = 0; j < dim; ++j) {
      const double g = gy[j];
      sum_scale[j] += g * ((xr[j] - mean) * rstd);
      sum_shift[j] += g;
    }
  }
}

void RmsNormImpl(const float* x, int64_t rows, int64_t dim,
                 const float* weight, float eps, float* y, float* rstds) {
  const DF d;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    const float* const ins[2] = {xr, weight};
    const float squares = RowSum<2>(dim, ins, [&](const VF* v) {
      return hn::Mul(v[0], v[0]);
    });
    const float rstd = static_cast<float>(
        1.0 / std::sqrt(static_cast<double>(squares / static_cast<float>(dim)) +
                        eps));
    if (rstds) rstds[r] = rstd;
    const VF s = hn::Set(d, rstd);
    float* const outs[1] = {y + r * dim};
    Elementwise<2, 1>(dim, ins, outs, [&](const VF* v, VF* o) {
      o[0] = hn::Mul(v[1], hn::Mul(v[0], s));
    });
  }
}

void RmsNormBackwardImpl(const float* x, int64_t rows, int64_t dim,
                         const float* weight, const float* rstds,
                         const float* grad_y, float* grad_x,
                         double* sum_weight) {
  const DF d;
  const float inv_dim = 1.0f / static_cast<float>(dim);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    const float* gy = grad_y + r * dim;
    const VF s = hn::Set(d, rstds[r]);
    const float* const ins[3] = {xr, gy, weight};
    const float mean_gx = RowSum<3>(dim, ins, [&](const VF* v) {
      return hn::Mul(hn::Mul(v[1], v[2]), hn::Mul(v[0], s));
    }) * inv_dim;
    const VF mgx = hn::Set(d, mean_gx);
    float* const outs[1] = {grad_x + r * dim};
    Elementwise<3, 1>(dim, ins, outs, [&](const VF* v, VF* o) {
      const VF xhat = hn::Mul(v[0], s);
      o[0] = hn::Mul(s, hn::Sub(hn::Mul(v[1], v[2]), hn::Mul(xhat, mgx)));
    });
    const double rstd = rstds[r];
    for (int64_t j = 0; j < dim; ++j) {
      sum_weight[j] += static_cast<double>(gy[j]) * (xr[j] * rstd);
    }
  }
}

// sqrt(2 / π) and the cubic's coefficient, as the book's GELU writes them.
constexpr float kGeluC = 0.7978845608028654f;
constexpr float kGeluA = 0.044715f;

// Highway's Exp and Tanh convert their argument to int on the way: NaN or a
// magnitude past the int range is undefined behaviour on the scalar target.
// So they only see finite arguments in a safe range: NaN lanes become 0
// (the result is NaN anyway, through x), tanh's argument is clamped to
// ±20 (tanh is ±1 in float32 from 9.1 on), exp's to >= −104 (below it
// returns 0).
HWY_INLINE VF NanToZero(DF d, VF x) { return hn::IfThenElse(hn::Eq(x, x), x, hn::Zero(d)); }

HWY_INLINE VF SafeTanh(DF d, VF u) {
  const VF limit = hn::Set(d, 20.0f);
  return hn::Tanh(d, hn::Min(hn::Max(NanToZero(d, u), hn::Neg(limit)), limit));
}

HWY_INLINE VF GeluOf(DF d, VF x) {
  const VF xs = NanToZero(d, x);
  const VF x2 = hn::Mul(xs, xs);
  const VF u = hn::Mul(hn::Set(d, kGeluC),
                       hn::MulAdd(hn::Mul(hn::Set(d, kGeluA), x2), xs, xs));
  const VF half_x = hn::Mul(hn::Set(d, 0.5f), x);
  return hn::MulAdd(half_x, SafeTanh(d, u), half_x);
}

// GELU'(x) = 0.5 (1 + t) + 0.5 x (1 − t²) c (1 + 3 a x²), t = tanh(u). Beyond
// |x| = 10, t is ±1 in float32 and the second term 0: x is clamped there in
// it, so that 0 · ∞ never appears.
HWY_INLINE VF GeluSlope(DF d, VF x) {
  const VF half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f);
  const VF xc = hn::Min(hn::Max(NanToZero(d, x), hn::Set(d, -10.0f)), hn::Set(d, 10.0f));
  const VF x2 = hn::Mul(xc, xc);
  const VF u = hn::Mul(hn::Set(d, kGeluC),
                       hn::MulAdd(hn::Mul(hn::Set(d, kGeluA), x2), xc, xc));
  const VF t = SafeTanh(d, u);
  const VF du = hn::Mul(hn::Set(d, kGeluC),
                        hn::MulAdd(hn::Set(d, 3.0f * kGeluA), x2, one));
  const VF second = hn::Mul(hn::Mul(hn::Mul(half, xc), hn::NegMulAdd(t, t, one)), du);
  // NaN in x stays NaN (the clamp would turn it into ±10).
  return hn::IfThenElse(hn::Eq(x, x), hn::MulAdd(half, t, hn::Add(half, second)), x);
}

// σ(x) through exp(−|x|) (Highway's Exp holds for arguments >= −104 and is 0
// below): 1 / (1 + e) for x >= 0, e / (1 + e) below; no overflow anywhere.
HWY_INLINE VF Sigmoid(DF d, VF x) {
  const VF one = hn::Set(d, 1.0f);
  const VF e = hn::Exp(d, hn::Max(hn::Neg(hn::Abs(NanToZero(d, x))), hn::Set(d, -104.0f)));
  const VF inv = hn::Div(one, hn::Add(one, e));
  return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(e, inv), inv);
}

// SiLU'(x) = σ (1 + x (1 − σ)).
HWY_INLINE VF SiluSlope(DF d, VF x, VF sig) {
  const VF one = hn::Set(d, 1.0f);
  return hn::Mul(sig, hn::MulAdd(x, hn::Sub(one, sig), one));
}

void GeluImpl(const float* x, int64_t n, float* y) {
  const DF d;
  const float* const ins[1] = {x};
  float* const outs[1] = {y};
  Elementwise<1, 1>(n, ins, outs, [&](const VF* v, VF* o) { o[0] = GeluOf(d, v[0]); });
}

void GeluBackwardImpl(const float* x, const float* grad_y, int64_t n,
                      float* grad_x) {
  const DF d;
  const float* const ins[2] = {x, grad_y};
  float* const outs[1] = {grad_x};
  Elementwise<2, 1>(n, ins, outs, [&](const VF* v, VF* o) {
    o[0] = hn::Mul(v[1], GeluSlope(d, v[0]));
  });
}

void SiluImpl(const float* x, int64_t n, float* y) {
  const DF d;
  const float* const ins[1] = {x};
  float* const outs[1] = {y};
  Elementwise<1, 1>(n, ins, outs, [&](const VF* v, VF* o) {
    o[0] = hn::Mul(v[0], Sigmoid(d, v[0]));
  });
}

void SiluBackwardImpl(const float* x, const float* grad_y, int64_t n,
                      float* grad_x) {
  const DF d;
  const float* const ins[2] = {x, grad_y};
  float* const outs[1] = {grad_x};
  Elementwise<2, 1>(n, ins, outs, [&](const VF* v, VF* o) {
    o[0] = hn::Mul(v[1], SiluSlope(d, v[0], Sigmoid(d, v[0])));
  });
}

void SiluMulImpl(const float* a, const float* b, int64_t n, float* y) {
  const DF d;
  const float* const ins[2] = {a, b};
  float* const outs[1] = {y};
  Elementwise<2, 1>(n, ins, outs, [&](const VF* v, VF* o) {
    o[0] = hn::Mul(hn::Mul(v[0], Sigmoid(d, v[0])), v[1]);
  });
}

void SiluMulBackwardImpl(const float* a, const float* b, const float* grad_y,
                         int64_t n, float* grad_a, float* grad_b) {
  const DF d;
  const float* const ins[3] = {a, b, grad_y};
  float* const outs[2] = {grad_a, grad_b};
  Elementwise<3, 2>(n, ins, outs, [&](const VF* v, VF* o) {
    const VF sig = Sigmoid(d, v[0]);
    o[0] = hn::Mul(hn::Mul(v[2], v[1]), SiluSlope(d, v[0], sig));
    o[1] = hn::Mul(v[2], hn::Mul(v[0], sig));
  });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {

HWY_EXPORT(LayerNormImpl);
HWY_EXPORT(LayerNormBackwardImpl);
HWY_EXPORT(RmsNormImpl);
HWY_EXPORT(RmsNormBackwardImpl);
HWY_EXPORT(GeluImpl);
HWY_EXPORT(GeluBackwardImpl);
HWY_EXPORT(SiluImpl);
HWY_EXPORT(SiluBackwardImpl);
HWY_EXPORT(SiluMulImpl);
HWY_EXPORT(SiluMulBackwardImpl);

namespace {

Status CheckRows(const float* x, int64_t rows, int64_t dim, const float* p,
                 float eps, const float* y) {
  if (rows < 1 || dim < 1) return Status::kInvalidShape;
  if (rows > INT64_MAX / dim ||
      static_cast<uint64_t>(rows * dim) > SIZE_MAX / sizeof(float)) {
    return Status::kTooLarge;
  }
  if (!x || !p || !y) return Status::kNullPointer;
  if (!(std::isfinite(eps) && eps > 0.0f)) return Status::kInvalidOption;
  return Status::kOk;
}

Status CheckCount(int64_t n, const float* a, const float* b, const float* c) {
  if (n < 0) return Status::kInvalidShape;
  if (static_cast<uint64_t>(n) > SIZE_MAX / sizeof(float)) {
    return Status::kTooLarge;
  }
  if (n > 0 && (!a || !b || !c)) return Status::kNullPointer;
  return Status::kOk;
}

// Σ_rows into double, then added to the float gradient (+=, as .grad).
void AddInto(const std::vector<double>& sums, float* grad) {
  for (size_t j = 0; j < sums.size(); ++j) {
    grad[j] = static_cast<float>(grad[j] + sums[j]);
  }
}

}  // namespace

Status LayerNorm(const float* x, int64_t rows, int64_t dim, const float* scale,
                 const float* shift, float eps, float* y, float* mean,
                 float* rstd) {
  Status st = CheckRows(x, rows, dim, scale, eps, y);
  if (st != Status::kOk) return st;
  if (!shift) return Status::kNullPointer;
  HWY_DYNAMIC_DISPATCH(LayerNormImpl)(x, rows, dim, scale, shift, eps, y, mean,
                                      rstd);
  return Status::kOk;
}

Status LayerNormBackward(const float* x, int64_t rows, int64_t dim,
                         const float* scale, const float* mean,
                         const float* rstd, const float* grad_y, float* grad_x,
                         float* grad_scale, float* grad_shift) {
  Status st = CheckRows(x, rows, dim, scale, 1.0f, grad_x);
  if (st != Status::kOk) return st;
  if (!mean || !rstd || !grad_y || !grad_scale || !grad_shift) {
    return Status::kNullPointer;
  }
  std::vector<double> sum_scale(static_cast<size_t>(dim));
  std::vector<double> sum_shift(static_cast<size_t>(dim));
  HWY_DYNAMIC_DISPATCH(LayerNormBackwardImpl)(x, rows, dim, scale, mean, rstd,
                                              grad_y, grad_x, sum_scale.data(),
                                              sum_shift.data());
  AddInto(sum_scale, grad_scale);
  AddInto(sum_shift, grad_shift);
  return Status::kOk;
}

Status RmsNorm(const float* x, int64_t rows, int64_t dim, const float* weight,
               float eps, float* y, float* rstd) {
  const Status st = CheckRows(x, rows, dim, weight, eps, y);
  if (st != Status::kOk) return st;
  HWY_DYNAMIC_DISPATCH(RmsNormImpl)(x, rows, dim, weight, eps, y, rstd);
  return Status::kOk;
}

Status RmsNormBackward(const float* x, int64_t rows, int64_t dim,
                       const float* weight, const float* rstd,
                       const float* grad_y, float* grad_x, float* grad_weight) {
  const Status st = CheckRows(x, rows, dim, weight, 1.0f, grad_x);
  if (st != Status::kOk) return st;
  if (!rstd || !grad_y || !grad_weight) return Status::kNullPointer;
  std::vector<double> sum_weight(static_cast<size_t>(dim));
  HWY_DYNAMIC_DISPATCH(RmsNormBackwardImpl)(x, rows, dim, weight, rstd, grad_y,
                                            grad_x, sum_weight.data());
  AddInto(sum_weight, grad_weight);
  return Status::kOk;
}

Status Gelu(const float* x, int64_t n, float* y) {
  const Status st = CheckCount(n, x, y, y);
  if (st == Status::kOk) HWY_DYNAMIC_DISPATCH(GeluImpl)(x, n, y);
  return st;
}

Status GeluBackward(const float* x, const float* grad_y, int64_t n,
                    float* grad_x) {
  const Status st = CheckCount(n, x, grad_y, grad_x);
  if (st == Status::kOk) {
    HWY_DYNAMIC_DISPATCH(GeluBackwardImpl)(x, grad_y, n, grad_x);
  }
  return st;
}

Status Silu(const float* x, int64_t n, float* y) {
  const Status st = CheckCount(n, x, y, y);
  if (st == Status::kOk) HWY_DYNAMIC_DISPATCH(SiluImpl)(x, n, y);
  return st;
}

Status SiluBackward(const float* x, const float* grad_y, int64_t n,
                    float* grad_x) {
  const Status st = CheckCount(n, x, grad_y, grad_x);
  if (st == Status::kOk) {
    HWY_DYNAMIC_DISPATCH(SiluBackwardImpl)(x, grad_y, n, grad_x);
  }
  return st;
}

Status SiluMul(const float* a, const float* b, int64_t n, float* y) {
  const Status st = CheckCount(n, a, b, y);
  if (st == Status::kOk) HWY_DYNAMIC_DISPATCH(SiluMulImpl)(a, b, n, y);
  return st;
}

Status SiluMulBackward(const float* a, const float* b, const float* grad_y,
                       int64_t n, float* grad_a, float* grad_b) {
  Status st = CheckCount(n, a, b, grad_y);
  if (st == Status::kOk) st = CheckCount(n, grad_a, grad_b, grad_b);
  if (st == Status::kOk) {
    HWY_DYNAMIC_DISPATCH(SiluMulBackwardImpl)(a, b, grad_y, n, grad_a, grad_b);
  }
  return st;
}

// The oracles.

Status LayerNormReference(const float* x, int64_t rows, int64_t dim,
                          const float* scale, const float* shift, float eps,
                          float* y) {
  Status st = CheckRows(x, rows, dim, scale, eps, y);
  if (st != Status::kOk) return st;
  if (!shift) return Status::kNullPointer;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < dim; ++j) mean += xr[j];
    mean /= static_cast<double>(dim);
    for (int64_t j = 0; j < dim; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= static_cast<double>(dim);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < dim; ++j) {
      y[r * dim + j] = static_cast<float>(
          static_cast<double>(scale[j]) * ((xr[j] - mean) * rstd) + shift[j]);
    }
  }
  return Status::kOk;
}

Status RmsNormReference(const float* x, int64_t rows, int64_t dim,
                        const float* weight, float eps, float* y) {
  const Status st = CheckRows(x, rows, dim, weight, eps, y);
  if (st != Status::kOk) return st;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    double squares = 0.0;
    for (int64_t j = 0; j < dim; ++j) squares += static_cast<double>(xr[j]) * xr[j];
    const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(dim) + eps);
    for (int64_t j = 0; j < dim; ++j) {
      y[r * dim + j] = static_cast<float>(static_cast<double>(weight[j]) * (xr[j] * rstd));
    }
  }
  return Status::kOk;
}

double GeluReference(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

double GeluDerivativeReference(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  const double t = std::tanh(c * (x + 0.044715 * x * x * x));
  if (std::fabs(x) > 1e6) return x > 0 ? 1.0 : 0.0;
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

double SiluReference(double x) { return x / (1.0 + std::exp(-x)); }

double SiluDerivativeReference(double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return s * (1.0 + x * (1.0 - s));
}

}  // namespace causal_attention
#endif  // HWY_ONCE
