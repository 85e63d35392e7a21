// The softmax exponentials as Highway vector functions (compiled once per
// SIMD target): e^x for x <= 0 (max error 1 ULP on [-87.3, 0]), and the
// online softmax's cheaper 2^y for y <= 64 (max error 4 ULP).

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_EXP_INL_H_
#undef CAUSAL_ATTENTION_SRC_EXP_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_EXP_INL_H_
#endif

#include "hwy/highway.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// e^x for x <= 0, as the softmax needs it (every argument is a score minus
// its row max). Cody-Waite reduction x = n·ln2 + r, |r| <= ln2/2, then a
// degree-6 minimax polynomial for e^r on [-ln2/2, ln2/2] (max relative error
// of the polynomial 1.5e-8; coefficients fitted by Remez exchange, c1 = 1 and
// c2 = 1/2 exact), then scaling by 2^n through the exponent bits.
// Max error vs double exp rounded to float: 1 ULP over [-87.3, 0] (tested in
// tests/native/simd/exp_inl_test.cc). Below -87.33 (where 2^n would leave the
// normal range) the result is 0, as are -inf inputs.
//
// Two details matter for speed in V8: n is rounded with the 1.5·2^23 magic
// number (an add and a sub; its bit pattern also holds n for the exponent),
// not f32x4.nearest + i32x4.trunc_sat (which V8 expands into a long
// saturating sequence); and the constants are vectors built once per row
// (ExpConstants) from values the compiler cannot fold, because LLVM
// rematerialises every v128.const inside the loop and V8 spends several
// instructions on each.
constexpr float kExpConstants[] = {
    1.44269504088896341f,  // log2(e)
    12582912.0f,           // 1.5 · 2^23
    0.693359375f,          // ln2, high part: 9 significant bits, so n·it is
    -2.12194440e-4f,       //   exact for |n| < 2^15; low part
    1.402189373e-03f,
    8.368634619e-03f,
    4.166563228e-02f,
    1.666650176e-01f,
    0.5f,
    1.0f,                // polynomial c6 .. c2, c1 = c0 = 1
    -87.3365478515625f,  // ln(2^-126): below this the result is 0
};

template <class D>
struct ExpConstants {
  using V = hn::Vec<D>;
  V log2e, magic, ln2_hi, ln2_lo, c6, c5, c4, c3, c2, one, lower;
  hn::Vec<hn::RebindToSigned<D>> exponent_bias;
  explicit ExpConstants(D d) {
    const volatile float* k = kExpConstants;  // not foldable: see above
    log2e = hn::Set(d, k[0]);
    magic = hn::Set(d, k[1]);
    ln2_hi = hn::Set(d, k[2]);
    ln2_lo = hn::Set(d, k[3]);
    c6 = hn::Set(d, k[4]);
    c5 = hn::Set(d, k[5]);
    c4 = hn::Set(d, k[6]);
    c3 = hn::Set(d, k[7]);
    c2 = hn::Set(d, k[8]);
    one = hn::Set(d, k[9]);
    lower = hn::Set(d, k[10]);
    // (bits of magic + n) + bias = n + 127, the biased exponent of 2^n.
    const hn::RebindToSigned<D> di;
    exponent_bias = hn::Sub(hn::Set(di, 127), hn::BitCast(di, magic));
  }
};

template <class D, class V>
HWY_INLINE V ExpNonPositive(D d, V x, const ExpConstants<D>& k) {
  const hn::RebindToSigned<D> di;
  const V shifted =
      hn::Add(hn::Mul(x, k.log2e), k.magic);  // magic + round(x·log2e)
  const V n = hn::Sub(shifted, k.magic);
  V r = hn::Sub(x, hn::Mul(n, k.ln2_hi));
  r = hn::Sub(r, hn::Mul(n, k.ln2_lo));
  V p = hn::Add(hn::Mul(k.c6, r), k.c5);
  p = hn::Add(hn::Mul(p, r), k.c4);
  p = hn::Add(hn::Mul(p, r), k.c3);
  p = hn::Add(hn::Mul(p, r), k.c2);
  p = hn::Add(hn::Mul(p, r), k.one);
  p = hn::Add(hn::Mul(p, r), k.one);
  const V scale = hn::BitCast(
      d, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, shifted), k.exponent_bias)));
  (void)d;
  return hn::IfThenElseZero(hn::Ge(x, k.lower), hn::Mul(p, scale));
}

// 2^y for y <= 64, the online softmax's exponential: its scores arrive as
// y = (s·scale - m)·log2 e (Exp2SumRow), so the range reduction needs no
// ln 2 constants: n =
// round(y) (the 1.5·2^23 magic number, as above), r = y - n exactly, |r| <=
// 1/2, then a degree-5 minimax polynomial for 2^r on [-1/2, 1/2] (relative
// error of the polynomial 7.5e-8, fitted by Remez exchange; c0 free, so 2^0
// is 1 + 1 ULP), then 2^n through the exponent bits. XNNPACK's
// f32-raddstoreexpminusmax rr2-p5 is the same polynomial degree for e^x,
// which needs a two-constant reduction. Max error vs double exp2 rounded to
// float: 4 ULP over [-126, 64] (tests/native/simd/exp_inl_test.cc); 0 below -126
// (where 2^n would leave the normal range) and for -inf. Positive y (up to
// the online softmax's rescaling slack) is what lets that skip rescales.
constexpr float kExp2Constants[] = {
    12582912.0f,  // 1.5 · 2^23
    1.3276472454890609e-3f,  // c5 .. c0
    9.675540961325169e-3f,
    5.550713092088699e-2f,
    2.4022120237350464e-1f,
    6.931469440460205e-1f,
    1.0000001192092896f,
    -126.0f,  // below this the result is 0
    1.44269504088896341f,  // log2(e), for the callers' base change
};

template <class D>
struct Exp2Constants {
  using V = hn::Vec<D>;
  V magic, c5, c4, c3, c2, c1, c0, lower, log2e;
  hn::Vec<hn::RebindToSigned<D>> exponent_bias;
  explicit Exp2Constants(D d) {
    const volatile float* k = kExp2Constants;  // not foldable: see above
    magic = hn::Set(d, k[0]);
    c5 = hn::Set(d, k[1]);
    c4 = hn::Set(d, k[2]);
    c3 = hn::Set(d, k[3]);
    c2 = hn::Set(d, k[4]);
    c1 = hn::Set(d, k[5]);
    c0 = hn::Set(d, k[6]);
    lower = hn::Set(d, k[7]);
    log2e = hn::Set(d, k[8]);
    const hn::RebindToSigned<D> di;
    exponent_bias = hn::Sub(hn::Set(di, 127), hn::BitCast(di, magic));
  }
};

template <class D, class V>
HWY_INLINE V Exp2Softmax(D d, V y, const Exp2Constants<D>& k) {
  const hn::RebindToSigned<D> di;
  const V shifted = hn::Add(y, k.magic);  // magic + round(y)
  const V r = hn::Sub(y, hn::Sub(shifted, k.magic));
  V p = hn::MulAdd(k.c5, r, k.c4);
  p = hn::MulAdd(p, r, k.c3);
  p = hn::MulAdd(p, r, k.c2);
  p = hn::MulAdd(p, r, k.c1);
  p = hn::MulAdd(p, r, k.c0);
  const V scale = hn::BitCast(
      d, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, shifted), k.exponent_bias)));
  return hn::IfThenElseZero(hn::Ge(y, k.lower), hn::Mul(p, scale));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
