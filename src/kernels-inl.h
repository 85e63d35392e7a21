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
HWY_INLINE void ScoreTile(const float* HWY_RESTRICT q, size_t ldq,
                          size_t rows, const float* HWY_RESTRICT kt,
                          size_t ldk, size_t depth, size_t ncols,
                          float* HWY_RESTRICT s, size_t lds) {
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    ScoreMicrokernel<4>(q + r * ldq, ldq, kt, ldk, depth, ncols, s + r * lds,
                        lds);
  }
  switch (rows - r) {
    case 3:
      ScoreMicrokernel<3>(q + r * ldq, ldq, kt, ldk, depth, ncols,
                          s + r * lds, lds);
      break;
    case 2:
      ScoreMicrokernel<2>(q + r * ldq, ldq, kt, ldk, depth, ncols,
                          s + r * lds, lds);
      break;
    case 1:
      ScoreMicrokernel<1>(q + r * ldq, ldq, kt, ldk, depth, ncols,
                          s + r * lds, lds);
      break;
    default:
      break;
  }
}

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
HWY_INLINE void ValueTile(const float* HWY_RESTRICT p, size_t ldp,
                          size_t rows, const size_t* ends,
                          const float* HWY_RESTRICT v, size_t ldv,
                          size_t ncols, float* HWY_RESTRICT o, size_t ldo) {
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    size_t shared = ends[r];
    for (size_t i = 1; i < 4; ++i) shared = HWY_MIN(shared, ends[r + i]);
    if (shared > 0) {
      ValueMicrokernel<4>(p + r * ldp, ldp, shared, v, ldv, ncols,
                          o + r * ldo, ldo);
    }
    for (size_t i = 0; i < 4; ++i) {
      if (ends[r + i] > shared) {
        ValueMicrokernel<1>(p + (r + i) * ldp + shared, ldp,
                            ends[r + i] - shared, v + shared * ldv, ldv,
                            ncols, o + (r + i) * ldo, ldo);
      }
    }
  }
  for (; r < rows; ++r) {
    if (ends[r] > 0) {
      ValueMicrokernel<1>(p + r * ldp, ldp, ends[r], v, ldv, ncols,
                          o + r * ldo, ldo);
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
  for (; j + N <= n; j += N) hn::StoreU(f(df, hn::LoadU(df, x + j), j), df, x + j);
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

// x = exp(x - m); returns the sum.
HWY_INLINE float ExpSumRow(float* HWY_RESTRICT x, size_t n, float m) {
  const DF df;
  const D1 d1;
  const size_t N = hn::Lanes(df);
  auto vsum = hn::Zero(df);
  const auto vm = hn::Set(df, m);
  size_t j = 0;
  for (; j + N <= n; j += N) {
    const auto e = hn::Exp(df, hn::Sub(hn::LoadU(df, x + j), vm));
    hn::StoreU(e, df, x + j);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  for (; j < n; ++j) {
    const auto e = hn::Exp(d1, hn::Sub(hn::LoadU(d1, x + j), hn::Set(d1, m)));
    hn::StoreU(e, d1, x + j);
    sum += hn::GetLane(e);
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
