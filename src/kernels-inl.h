// Per-target building blocks of the attention kernels: register-blocked
// microkernels for Q·Kᵀ and P·V, whole-vector row passes (scale/max,
// exp/sum, scale, dropout), all written once with Highway and compiled for
// every target by foreach_target.h.
//
// Conventions: "packed" buffers are 64-byte aligned with row strides that are
// multiples of the vector width (aligned Load/Store); user tensors and the
// returned weights rows are not (LoadU/StoreU and one-lane tails, so nothing
// is read or written past a row's end).

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_KERNELS_INL_H_
#undef CAUSAL_ATTENTION_SRC_KERNELS_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_KERNELS_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>

#include <cmath>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "src/dropout.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using D1 = hn::CappedTag<float, 1>;

// Columns produced per microkernel pass: two vectors.
HWY_INLINE size_t PanelWidth() { return 2 * hn::Lanes(DF()); }

// ---------------------------------------------------------------------------
// Q·Kᵀ microkernel: s[r][j] = sum_c q[r][c] · kt[c][j] for r < MR and
// j < ncols (a multiple of PanelWidth()). kt is a packed, transposed key
// tile [depth][ldk]; q rows are user memory (broadcast one scalar at a time).
template <size_t MR>
HWY_INLINE void ScoreMicrokernel(const float* HWY_RESTRICT q, size_t ldq,
                                 const float* HWY_RESTRICT kt, size_t ldk,
                                 size_t depth, size_t ncols,
                                 float* HWY_RESTRICT s, size_t lds) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  for (size_t j = 0; j < ncols; j += 2 * N) {
    V acc0[MR], acc1[MR];
    for (size_t r = 0; r < MR; ++r) {
      acc0[r] = hn::Zero(df);
      acc1[r] = hn::Zero(df);
    }
    const float* HWY_RESTRICT kp = kt + j;
    for (size_t c = 0; c < depth; ++c, kp += ldk) {
      const V b0 = hn::Load(df, kp);
      const V b1 = hn::Load(df, kp + N);
      for (size_t r = 0; r < MR; ++r) {
        const V a = hn::Set(df, q[r * ldq + c]);
        acc0[r] = hn::MulAdd(a, b0, acc0[r]);
        acc1[r] = hn::MulAdd(a, b1, acc1[r]);
      }
    }
    for (size_t r = 0; r < MR; ++r) {
      hn::Store(acc0[r], df, s + r * lds + j);
      hn::Store(acc1[r], df, s + r * lds + j + N);
    }
  }
}

// Scores for `rows` query rows (any count) against a packed key tile.
HWY_INLINE void ScoreTile(const float* HWY_RESTRICT q, size_t ldq, size_t rows,
                          const float* HWY_RESTRICT kt, size_t ldk,
                          size_t depth, size_t ncols, float* HWY_RESTRICT s,
                          size_t lds) {
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    ScoreMicrokernel<4>(q + r * ldq, ldq, kt, ldk, depth, ncols, s + r * lds,
                        lds);
  }
  switch (rows - r) {
    case 3:
      ScoreMicrokernel<3>(q + r * ldq, ldq, kt, ldk, depth, ncols, s + r * lds,
                          lds);
      break;
    case 2:
      ScoreMicrokernel<2>(q + r * ldq, ldq, kt, ldk, depth, ncols, s + r * lds,
                          lds);
      break;
    case 1:
      ScoreMicrokernel<1>(q + r * ldq, ldq, kt, ldk, depth, ncols, s + r * lds,
                          lds);
      break;
    default:
      break;
  }
}

#if HWY_TARGET != HWY_SCALAR
// ---------------------------------------------------------------------------
// Q·Kᵀ as dot products along the head dimension: no transposed copy of K.
// Lane i of the result is the sum of all lanes of a_i (D has >= 4 lanes):
// halve wide vectors to 128 bits, then a 4x4 transpose-and-add.
template <class D, class V>
HWY_INLINE hn::Vec<hn::Full128<float>> SumOfFour(D /* d */, V a0, V a1, V a2,
                                                 V a3) {
  if constexpr (hn::MaxLanes(D()) > 4) {
    const hn::Half<D> dh;
    return SumOfFour(dh, hn::Add(hn::LowerHalf(dh, a0), hn::UpperHalf(dh, a0)),
                     hn::Add(hn::LowerHalf(dh, a1), hn::UpperHalf(dh, a1)),
                     hn::Add(hn::LowerHalf(dh, a2), hn::UpperHalf(dh, a2)),
                     hn::Add(hn::LowerHalf(dh, a3), hn::UpperHalf(dh, a3)));
  } else {
    const hn::Full128<float> d4;
    // [a0_0+a0_2, a1_0+a1_2, a0_1+a0_3, a1_1+a1_3] and the same for a2, a3.
    const auto s01 =
        hn::Add(hn::InterleaveLower(a0, a1), hn::InterleaveUpper(d4, a0, a1));
    const auto s23 =
        hn::Add(hn::InterleaveLower(a2, a3), hn::InterleaveUpper(d4, a2, a3));
    return hn::Add(hn::ConcatLowerLower(d4, s23, s01),
                   hn::ConcatUpperUpper(d4, s23, s01));
  }
}

// s[r][0..4) = q_r · k_i for r < MR and the four key rows k[0..4);
// depth is a multiple of the vector length (callers pad odd head sizes).
// MR = 2 keeps 8 accumulators, 4 key vectors and a query vector in
// registers (wasm SIMD has 16).
template <size_t MR>
HWY_INLINE void DotScoreMicrokernel(const float* HWY_RESTRICT q, size_t ldq,
                                    const float* const* k, size_t depth,
                                    float* HWY_RESTRICT s, size_t lds) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  V acc[MR][4];
  for (size_t r = 0; r < MR; ++r) {
    for (size_t i = 0; i < 4; ++i) acc[r][i] = hn::Zero(df);
  }
  for (size_t c = 0; c < depth; c += N) {
    const V k0 = hn::LoadU(df, k[0] + c);
    const V k1 = hn::LoadU(df, k[1] + c);
    const V k2 = hn::LoadU(df, k[2] + c);
    const V k3 = hn::LoadU(df, k[3] + c);
    for (size_t r = 0; r < MR; ++r) {
      const V qv = hn::LoadU(df, q + r * ldq + c);
      acc[r][0] = hn::MulAdd(qv, k0, acc[r][0]);
      acc[r][1] = hn::MulAdd(qv, k1, acc[r][1]);
      acc[r][2] = hn::MulAdd(qv, k2, acc[r][2]);
      acc[r][3] = hn::MulAdd(qv, k3, acc[r][3]);
    }
  }
  const hn::Full128<float> d4;
  for (size_t r = 0; r < MR; ++r) {
    hn::StoreU(SumOfFour(df, acc[r][0], acc[r][1], acc[r][2], acc[r][3]), d4,
               s + r * lds);
  }
}

// s[r][j] = q_r · k_j for r < rows, j < nkeys (written up to a multiple of
// 4; missing keys read `zero_row`, so nothing past K's end is touched).
HWY_INLINE void DotScoreTile(const float* HWY_RESTRICT q, size_t ldq,
                             size_t rows, const float* HWY_RESTRICT k,
                             size_t ldk, size_t nkeys, size_t depth,
                             const float* zero_row, float* HWY_RESTRICT s,
                             size_t lds) {
  for (size_t j = 0; j < nkeys; j += 4) {
    const float* kr[4];
    for (size_t i = 0; i < 4; ++i) {
      kr[i] = j + i < nkeys ? k + (j + i) * ldk : zero_row;
    }
    size_t r = 0;
    for (; r + 2 <= rows; r += 2) {
      DotScoreMicrokernel<2>(q + r * ldq, ldq, kr, depth, s + r * lds + j, lds);
    }
    if (r < rows)
      DotScoreMicrokernel<1>(q + r * ldq, ldq, kr, depth, s + r * lds + j, lds);
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

// ---------------------------------------------------------------------------
// P·V microkernel: o[r][c] += sum_{j<nkeys} p[r][j] · v[j][c] for r < MR and
// c < ncols (a multiple of PanelWidth()). o is packed; v rows may be user
// memory (LoadU) when their width is already a multiple of the panel.
template <size_t MR>
HWY_INLINE void ValueMicrokernel(const float* HWY_RESTRICT p, size_t ldp,
                                 size_t nkeys, const float* HWY_RESTRICT v,
                                 size_t ldv, size_t ncols,
                                 float* HWY_RESTRICT o, size_t ldo) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  for (size_t c = 0; c < ncols; c += 2 * N) {
    V acc0[MR], acc1[MR];
    for (size_t r = 0; r < MR; ++r) {
      acc0[r] = hn::Load(df, o + r * ldo + c);
      acc1[r] = hn::Load(df, o + r * ldo + c + N);
    }
    const float* HWY_RESTRICT vp = v + c;
    for (size_t j = 0; j < nkeys; ++j, vp += ldv) {
      const V b0 = hn::LoadU(df, vp);
      const V b1 = hn::LoadU(df, vp + N);
      for (size_t r = 0; r < MR; ++r) {
        const V a = hn::Set(df, p[r * ldp + j]);
        acc0[r] = hn::MulAdd(a, b0, acc0[r]);
        acc1[r] = hn::MulAdd(a, b1, acc1[r]);
      }
    }
    for (size_t r = 0; r < MR; ++r) {
      hn::Store(acc0[r], df, o + r * ldo + c);
      hn::Store(acc1[r], df, o + r * ldo + c + N);
    }
  }
}

// Adds P·V for one key tile to `rows` output rows. Row r uses keys
// [0, ends[r]) of the tile (ends[r] <= tile width); the keys beyond a row's
// end are never multiplied in, so a NaN in a value row the query cannot see
// does not reach it. Rows share the keys below the group's smallest end.
HWY_INLINE void ValueTile(const float* HWY_RESTRICT p, size_t ldp, size_t rows,
                          const size_t* ends, const float* HWY_RESTRICT v,
                          size_t ldv, size_t ncols, float* HWY_RESTRICT o,
                          size_t ldo) {
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    size_t shared = ends[r];
    for (size_t i = 1; i < 4; ++i) shared = HWY_MIN(shared, ends[r + i]);
    if (shared > 0) {
      ValueMicrokernel<4>(p + r * ldp, ldp, shared, v, ldv, ncols, o + r * ldo,
                          ldo);
    }
    for (size_t i = 0; i < 4; ++i) {
      if (ends[r + i] > shared) {
        ValueMicrokernel<1>(p + (r + i) * ldp + shared, ldp,
                            ends[r + i] - shared, v + shared * ldv, ldv, ncols,
                            o + (r + i) * ldo, ldo);
      }
    }
  }
  for (; r < rows; ++r) {
    if (ends[r] > 0) {
      ValueMicrokernel<1>(p + r * ldp, ldp, ends[r], v, ldv, ncols, o + r * ldo,
                          ldo);
    }
  }
}

// ---------------------------------------------------------------------------
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

// x *= scale. Returns max(x) and sets *non_finite if any x is NaN or ±Inf.
HWY_INLINE float ScaleMaxRow(float* HWY_RESTRICT x, size_t n, float scale,
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
    hn::StoreU(v, df, x + j);
    vmax = hn::Max(vmax, v);
    vbad = hn::Add(vbad, hn::Mul(v, hn::Zero(df)));
  }
  float m = hn::GetLane(hn::MaxOfLanes(df, vmax));
  float bad = hn::GetLane(hn::SumOfLanes(df, vbad));
  for (; j < n; ++j) {
    const auto v = hn::Mul(hn::LoadU(d1, x + j), hn::Set(d1, scale));
    hn::StoreU(v, d1, x + j);
    m = HWY_MAX(m, hn::GetLane(v));
    bad += hn::GetLane(v) * 0.0f;
  }
  if (bad != bad) *non_finite = true;
  return m;
}

// e^x for x <= 0, as the softmax needs it (every argument is a score minus
// its row max). Cody-Waite reduction x = n·ln2 + r, |r| <= ln2/2, then a
// degree-6 minimax polynomial for e^r on [-ln2/2, ln2/2] (max relative error
// of the polynomial 1.5e-8; coefficients fitted by Remez exchange, c1 = 1 and
// c2 = 1/2 exact), then scaling by 2^n through the exponent bits.
// Max error vs double exp rounded to float: 1 ULP over [-87.3, 0] (tested in
// tests/native/kernels_test.cc). Below -87.33 (where 2^n would leave the
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

HWY_INLINE void ScaleRow(float* HWY_RESTRICT x, size_t n, float f) {
  TransformRow(x, n, [f](auto d, auto v, size_t) HWY_ATTR {
    return hn::Mul(v, hn::Set(d, f));
  });
}

// Vector form of dropout::Hash24 for keys col0 + [0, Lanes(d)).
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> Hash24(D /* d */, dropout::RowKey key,
                                                 uint32_t col0) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const auto fmix = [du](hn::Vec<decltype(du)> x) HWY_ATTR {
    x = hn::Xor(x, hn::ShiftRight<16>(x));
    x = hn::Mul(x, hn::Set(du, dropout::kFmixMul1));
    x = hn::Xor(x, hn::ShiftRight<13>(x));
    x = hn::Mul(x, hn::Set(du, dropout::kFmixMul2));
    return hn::Xor(x, hn::ShiftRight<16>(x));
  };
  auto x = hn::Mul(hn::Iota(du, col0), hn::Set(du, dropout::kKeyMul));
  x = hn::Xor(x, hn::Set(du, key.k0));
  x = hn::Xor(fmix(x), hn::Set(du, key.k1));
  x = fmix(x);
  return hn::BitCast(di, hn::ShiftRight<32 - dropout::kHashBits>(x));
}

// Dropout on x[0, n), whose first element is key col0 of the row: kept
// values are multiplied by keep_scale, dropped ones become 0.
HWY_INLINE void DropoutRow(float* HWY_RESTRICT x, size_t n, uint32_t col0,
                           dropout::RowKey key, uint32_t threshold,
                           float keep_scale) {
  TransformRow(x, n, [=](auto d, auto v, size_t j) HWY_ATTR {
    const hn::RebindToSigned<decltype(d)> di;
    const auto h = Hash24(d, key, col0 + static_cast<uint32_t>(j));
    // h >= threshold, written as h > threshold - 1 (threshold may be 0).
    const auto keep = hn::RebindMask(
        d, hn::Gt(h, hn::Set(di, static_cast<int32_t>(threshold) - 1)));
    return hn::IfThenElseZero(keep, hn::Mul(v, hn::Set(d, keep_scale)));
  });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
