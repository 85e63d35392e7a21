// Dropout on rows of attention weights: the vector form of the counter-based
// mask of dropout.h (compiled once per SIMD target).

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_DROPOUT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_DROPOUT_INL_H_
#undef CAUSAL_ATTENTION_SRC_DROPOUT_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_DROPOUT_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>

#include "hwy/highway.h"
#include "src/simd/dropout.h"
#include "src/simd/row_passes-inl.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// dropout::Hash24 on 32-bit lanes: lane i hashes key column cols[i] under
// the row key (k0[i], k1[i]). Uniform in [0, 2^24).
template <class DU>
HWY_INLINE hn::Vec<DU> Hash24Lanes(DU du, hn::Vec<DU> cols, hn::Vec<DU> k0,
                                   hn::Vec<DU> k1) {
  const auto fmix = [du](hn::Vec<DU> x) HWY_ATTR {
    x = hn::Xor(x, hn::ShiftRight<16>(x));
    x = hn::Mul(x, hn::Set(du, dropout::kFmixMul1));
    x = hn::Xor(x, hn::ShiftRight<13>(x));
    x = hn::Mul(x, hn::Set(du, dropout::kFmixMul2));
    return hn::Xor(x, hn::ShiftRight<16>(x));
  };
  auto x = hn::Mul(cols, hn::Set(du, dropout::kKeyMul));
  x = hn::Xor(x, k0);
  x = hn::Xor(fmix(x), k1);
  x = fmix(x);
  return hn::ShiftRight<32 - dropout::kHashBits>(x);
}

// Vector form of dropout::Hash24 for keys col0 + [0, Lanes(d)) of one row.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> Hash24(D /* d */, dropout::RowKey key,
                                                 uint32_t col0) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  return hn::BitCast(di, Hash24Lanes(du, hn::Iota(du, col0),
                                     hn::Set(du, key.k0), hn::Set(du, key.k1)));
}

// Lanes whose weight dropout keeps: hash >= threshold, written as
// hash > threshold - 1 (threshold may be 0; hashes fit 24 bits, so the
// signed compare is exact).
template <class D>
HWY_INLINE hn::Mask<D> DropoutKeeps(D d, hn::Vec<hn::RebindToSigned<D>> hash,
                                    uint32_t threshold) {
  const hn::RebindToSigned<D> di;
  return hn::RebindMask(
      d, hn::Gt(hash, hn::Set(di, static_cast<int32_t>(threshold) - 1)));
}

// Dropout on x[0, n), whose first element is key col0 of the row: kept
// values are multiplied by keep_scale, dropped ones become 0.
HWY_INLINE void DropoutRow(float* HWY_RESTRICT x, size_t n, uint32_t col0,
                           dropout::RowKey key, uint32_t threshold,
                           float keep_scale) {
  TransformRow(x, n, [=](auto d, auto v, size_t j) HWY_ATTR {
    const auto h = Hash24(d, key, col0 + static_cast<uint32_t>(j));
    return hn::IfThenElseZero(DropoutKeeps(d, h, threshold),
                              hn::Mul(v, hn::Set(d, keep_scale)));
  });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
