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
#include "src/exp-inl.h"
#include "src/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// tanh(x / softcap) on the lanes of d through the softmax's own exponential
// (exp-inl.h) instead of a general tanh: with e = exp(-2|x| / softcap) in
// [0, 1], tanh(|x| / softcap) = (1 - e) / (1 + e), the sign then restored.
// minus_two_over_cap = -2 / softcap. Max error of softcap times it:
// softcap · 2.5e-7 (measured 1.5e-7, near |x| = softcap;
// tests/native/softcap_inl_test.cc), about 1.5 ULP. ±Inf gives ±1; NaN
// stays NaN.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V TanhOverCap(D d, V x, V minus_two_over_cap,
                         const ExpConstants<D>& e) {
  const V ex = ExpNonPositive(d, hn::Mul(hn::Abs(x), minus_two_over_cap), e);
  const V t = hn::Div(hn::Sub(e.one, ex), hn::Add(e.one, ex));
  return hn::IfThenElse(hn::IsNaN(x), x, hn::CopySignToAbs(t, x));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
