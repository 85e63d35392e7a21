// Whole-vector passes over one row of floats, the steps of a softmax:
// scale and max, exp and sum (e^x, and the online softmax's 2^y with the
// scale folded in), sum, scale (compiled once per SIMD target).

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_ROW_PASSES_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_ROW_PASSES_INL_H_
#undef CAUSAL_ATTENTION_SRC_ROW_PASSES_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_ROW_PASSES_INL_H_
#endif

#include <stddef.h>

#include <limits>

#include "hwy/highway.h"
#include "src/simd/exp-inl.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// Row passes over x[0, n) (unaligned, any n). Each runs whole vectors, then
// a one-lane tail with the same code, so results do not depend on where a
// row starts.

// Applies `f(d, v, j)` to every vector of x and stores the result.
template <class F>
HWY_INLINE void TransformRow(float* HWY_RESTRICT x, size_t n, const F& f) {
  const DF df;
  const D1 d1;
  const size_t N = hn::Lanes(df);
  size_t j = 0;
  for (; j + N <= n; j += N)
    hn::StoreU(f(df, hn::LoadU(df, x + j), j), df, x + j);
  for (; j < n; ++j) hn::StoreU(f(d1, hn::LoadU(d1, x + j), j), d1, x + j);
}

// max(x·scale) over x[0, n), storing x·scale into x when kStore; sets
// *non_finite if any x·scale is NaN or ±Inf.
template <bool kStore>
HWY_INLINE float ScaledMax(float* HWY_RESTRICT x, size_t n, float scale,
                           bool* non_finite) {
  const DF df;
  const D1 d1;
  const size_t N = hn::Lanes(df);
  auto vmax = hn::Set(df, -std::numeric_limits<float>::infinity());
  auto vbad = hn::Zero(df);  // x·0 is 0 for finite x, NaN otherwise
  const auto vscale = hn::Set(df, scale);
  size_t j = 0;
  for (; j + N <= n; j += N) {
    const auto v = hn::Mul(hn::LoadU(df, x + j), vscale);
    if (kStore) hn::StoreU(v, df, x + j);
    vmax = hn::Max(vmax, v);
    vbad = hn::Add(vbad, hn::Mul(v, hn::Zero(df)));
  }
  float m = hn::GetLane(hn::MaxOfLanes(df, vmax));
  float bad = hn::GetLane(hn::SumOfLanes(df, vbad));
  for (; j < n; ++j) {
    const auto v = hn::Mul(hn::LoadU(d1, x + j), hn::Set(d1, scale));
    if (kStore) hn::StoreU(v, d1, x + j);
    m = HWY_MAX(m, hn::GetLane(v));
    bad += hn::GetLane(v) * 0.0f;
  }
  if (bad != bad) *non_finite = true;
  return m;
}

// x *= scale. Returns max(x) and sets *non_finite if any x is NaN or ±Inf.
HWY_INLINE float ScaleMaxRow(float* HWY_RESTRICT x, size_t n, float scale,
                             bool* non_finite) {
  return ScaledMax<true>(x, n, scale, non_finite);
}

// max(x·scale) without storing x·scale (the online softmax applies the
// scale again inside its exponential); sets *non_finite as ScaleMaxRow.
HWY_INLINE float MaxScaledRow(float* HWY_RESTRICT x, size_t n, float scale,
                              bool* non_finite) {
  return ScaledMax<false>(x, n, scale, non_finite);
}

HWY_INLINE float MaxRow(const float* HWY_RESTRICT x, size_t n) {
  const DF df;
  const size_t N = hn::Lanes(df);
  auto vmax = hn::Set(df, -std::numeric_limits<float>::infinity());
  size_t j = 0;
  for (; j + N <= n; j += N) vmax = hn::Max(vmax, hn::LoadU(df, x + j));
  float m = hn::GetLane(hn::MaxOfLanes(df, vmax));
  for (; j < n; ++j) m = HWY_MAX(m, x[j]);
  return m;
}

// x = exp(x - m) for x <= m (m is the max of x); returns the sum.
HWY_INLINE float ExpSumRow(float* HWY_RESTRICT x, size_t n, float m) {
  const DF df;
  const D1 d1;
  const size_t N = hn::Lanes(df);
  const ExpConstants<DF> k(df);
  auto vsum = hn::Zero(df);
  const auto vm = hn::Set(df, m);
  size_t j = 0;
  for (; j + N <= n; j += N) {
    const auto e = ExpNonPositive(df, hn::Sub(hn::LoadU(df, x + j), vm), k);
    hn::StoreU(e, df, x + j);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  if (j < n) {
    const ExpConstants<D1> k1(d1);
    for (; j < n; ++j) {
      const auto e =
          ExpNonPositive(d1, hn::Sub(hn::LoadU(d1, x + j), hn::Set(d1, m)), k1);
      hn::StoreU(e, d1, x + j);
      sum += hn::GetLane(e);
    }
  }
  return sum;
}

// x = exp(x·scale - m) for x·scale - m <= the online softmax's rescaling
// slack, as 2^((x·scale - m)·log2 e) (Exp2Softmax); returns the sum. The
// scale is applied first, as ScaleMaxRow does: folding it into the base
// change (x·(scale·log2 e) - m·log2 e, one multiply-add) would round the
// large terms x·scale·log2 e and m·log2 e separately, doubling the error of
// the difference for large scores.
HWY_INLINE float Exp2SumRow(float* HWY_RESTRICT x, size_t n, float scale,
                            float m) {
  const DF df;
  const D1 d1;
  const size_t N = hn::Lanes(df);
  const Exp2Constants<DF> k(df);
  auto vsum = hn::Zero(df);
  const auto vscale = hn::Set(df, scale), vm = hn::Set(df, m);
  size_t j = 0;
  for (; j + N <= n; j += N) {
    const auto y =
        hn::Mul(hn::MulSub(hn::LoadU(df, x + j), vscale, vm), k.log2e);
    const auto e = Exp2Softmax(df, y, k);
    hn::StoreU(e, df, x + j);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  if (j < n) {
    const Exp2Constants<D1> k1(d1);
    for (; j < n; ++j) {
      const auto y = hn::Mul(
          hn::MulSub(hn::LoadU(d1, x + j), hn::Set(d1, scale), hn::Set(d1, m)),
          k1.log2e);
      const auto e = Exp2Softmax(d1, y, k1);
      hn::StoreU(e, d1, x + j);
      sum += hn::GetLane(e);
    }
  }
  return sum;
}

HWY_INLINE float SumRow(const float* HWY_RESTRICT x, size_t n) {
  const DF df;
  const size_t N = hn::Lanes(df);
  auto vsum = hn::Zero(df);
  size_t j = 0;
  for (; j + N <= n; j += N) vsum = hn::Add(vsum, hn::LoadU(df, x + j));
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  for (; j < n; ++j) sum += x[j];
  return sum;
}

// y += f·x over [0, n).
HWY_INLINE void AddScaledRow(float* HWY_RESTRICT y, const float* HWY_RESTRICT x,
                             size_t n, float f) {
  TransformRow(y, n, [x, f](auto d, auto v, size_t j) HWY_ATTR {
    return hn::MulAdd(hn::Set(d, f), hn::LoadU(d, x + j), v);
  });
}

HWY_INLINE void ScaleRow(float* HWY_RESTRICT x, size_t n, float f) {
  TransformRow(x, n, [f](auto d, auto v, size_t) HWY_ATTR {
    return hn::Mul(v, hn::Set(d, f));
  });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
