// The softcap's tanh, per SIMD target, written once for the forward
// (attention_forward-inl.h's SoftcapRow) and the backward
// (attention_backward.cc), so that both see the same capped scores.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_SOFTCAP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_SOFTCAP_INL_H_
#undef CAUSAL_ATTENTION_SRC_SOFTCAP_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_SOFTCAP_INL_H_
#endif

#include "hwy/highway.h"
#include "src/simd/exp-inl.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// tanh(x / softcap) on the lanes of d through the softmax's own exponential
// (exp-inl.h) instead of a general tanh: with y = |x| / softcap and
// e = exp(-2y) in [0, 1], tanh(y) = (1 - e) / (1 + e), the sign then
// restored. 1 - e cancels as y -> 0 (a score far below the cap would come
// out as 0), so below y = 1/4 the odd Taylor polynomial through y^9 gives
// tanh instead (truncation under 1e-8 relative there). minus_two_over_cap =
// -2 / softcap. Error: at most softcap · 2.5e-7 (measured 1.5e-7, near
// |x| = softcap), and within 1e-6 of |tanh| itself for any cap
// (tests/native/simd/softcap_inl_test.cc). ±Inf gives ±1; NaN stays NaN.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V TanhOverCap(D d, V x, V minus_two_over_cap,
                         const ExpConstants<D>& e) {
  const V minus_two_y = hn::Mul(hn::Abs(x), minus_two_over_cap);
  const V ex = ExpNonPositive(d, minus_two_y, e);
  const V large = hn::Div(hn::Sub(e.one, ex), hn::Add(e.one, ex));
  const V y = hn::Mul(minus_two_y, hn::Set(d, -0.5f));
  const V y2 = hn::Mul(y, y);
  V poly = hn::Set(d, 62.0f / 2835.0f);
  poly = hn::MulAdd(poly, y2, hn::Set(d, -17.0f / 315.0f));
  poly = hn::MulAdd(poly, y2, hn::Set(d, 2.0f / 15.0f));
  poly = hn::MulAdd(poly, y2, hn::Set(d, -1.0f / 3.0f));
  const V small = hn::MulAdd(hn::Mul(poly, y2), y, y);
  const V t = hn::IfThenElse(hn::Lt(y, hn::Set(d, 0.25f)), small, large);
  return hn::IfThenElse(hn::IsNaN(x), x, hn::CopySignToAbs(t, x));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
