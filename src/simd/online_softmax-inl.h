// Online softmax: the running state of one row of attention scores seen key
// tile by key tile (FlashAttention's m, l and unnormalised output o), and
// the log-sum-exp merge of two partial states of the same row over disjoint
// key ranges (flash-decoding: keys split across threads, merged after).
// Compiled once per SIMD target.
//
// After a row has seen keys J (scaled scores s_j, values v_j):
//   m = max_{j in J} s_j
//   l = sum_{j in J} exp(s_j - m)
//   o = sum_{j in J} drop_j · exp(s_j - m) · v_j     (drop_j: dropout's 0 or
//                                                     1/(1-p); 1 without)
// so the attention output is o / l and the row's log-sum-exp is m + log(l)
// (what a backward pass recomputes the probabilities from). Two states of
// the same row over disjoint key sets merge exactly (in exact arithmetic):
//   m = max(m1, m2), l = l1·e^(m1-m) + l2·e^(m2-m), o = o1·e^(m1-m) +
//   o2·e^(m2-m)
// Merging in a fixed order gives the same bits whichever thread computed
// which part.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_ONLINE_SOFTMAX_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_ONLINE_SOFTMAX_INL_H_
#undef CAUSAL_ATTENTION_SRC_ONLINE_SOFTMAX_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_ONLINE_SOFTMAX_INL_H_
#endif

#include <stddef.h>
#include <string.h>

#include <cmath>
#include <limits>

#include "hwy/highway.h"
#include "src/simd/row_passes-inl.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// m and l of one row (its o lives beside it, in the caller's buffer).
// non_finite: the row saw a NaN or ±Inf score; its output is NaN.
struct SoftmaxState {
  float m;
  float l;
  bool non_finite;

  static SoftmaxState Empty() {
    return {-std::numeric_limits<float>::infinity(), 0.0f, false};
  }
  // The log-sum-exp of the scores seen: -inf for none, NaN if non-finite.
  float LogSumExp() const {
    if (non_finite) return std::numeric_limits<float>::quiet_NaN();
    return l == 0.0f ? -std::numeric_limits<float>::infinity()
                     : m + std::log(l);
  }
};

// The online softmax rescales o and l only when a tile raises the row's
// max by more than this (FlashAttention-4's conditional rescaling): until
// then it keeps the old max, and the tile's exponentials, up to e^slack =
// 256, stay far from overflow. With scores drawn from one distribution the
// max settles after a few tiles, so most tiles skip the rescale.
constexpr float kRescaleSlack = 8.0f * 0.693147180559945f;  // ln 256

// Folds one tile s[0, n) whose scaled scores s·scale have max tile_max >
// -inf into a row's state: raises m when tile_max exceeds it by more than
// kRescaleSlack (rescaling o[0, o_len) and l), and leaves exp(s·scale - m)
// in s (Exp2SumRow).
HWY_INLINE void FoldTile(float* HWY_RESTRICT s, size_t n, float scale,
                         float tile_max, SoftmaxState* st,
                         float* HWY_RESTRICT o, size_t o_len) {
  if (tile_max > st->m + kRescaleSlack) {
    const float corr = std::exp(st->m - tile_max);  // 0 on the first tile
    if (st->l != 0.0f) ScaleRow(o, o_len, corr);     // (o is zeros before)
    st->l *= corr;
    st->m = tile_max;
  }
  st->l += Exp2SumRow(s, n, scale, st->m);
}

// Folds one tile of raw scores s[0, n) (n >= 1) into a row's state (see
// FoldTile), leaving exp(s·scale - m) in s (the caller applies dropout and
// adds P·V into o). Returns false, with st->non_finite set and nothing else
// changed, if a score is NaN or ±Inf.
HWY_INLINE bool OnlineSoftmaxTile(float* HWY_RESTRICT s, size_t n, float scale,
                                  SoftmaxState* st, float* HWY_RESTRICT o,
                                  size_t o_len) {
  bool non_finite = false;
  const float tile_max = MaxScaledRow(s, n, scale, &non_finite);
  if (non_finite) {
    st->non_finite = true;
    return false;
  }
  FoldTile(s, n, scale, tile_max, st, o, o_len);
  return true;
}

// As OnlineSoftmaxTile for scores s[0, n) already scaled (and capped and
// masked: -inf entries give 0) whose max is tile_max > -inf.
HWY_INLINE void OnlineSoftmaxScaledTile(float* HWY_RESTRICT s, size_t n,
                                        float tile_max, SoftmaxState* st,
                                        float* HWY_RESTRICT o, size_t o_len) {
  FoldTile(s, n, 1.0f, tile_max, st, o, o_len);
}

// Adds an attention sink (a logit with a zero value row) to a row that saw
// keys: l gains exp(sink - m) with m raised to the sink when larger (o
// rescaled). A row that saw nothing (l = 0) or a non-finite one is left
// alone: zero output and log-sum-exp -inf, with sinks too.
HWY_INLINE void AddSink(SoftmaxState* st, float sink, float* HWY_RESTRICT o,
                        size_t o_len) {
  if (st->non_finite || st->l == 0.0f ||
      sink == -std::numeric_limits<float>::infinity()) {
    return;
  }
  const float m_new = HWY_MAX(st->m, sink);
  const float corr = std::exp(st->m - m_new);
  if (corr != 1.0f) ScaleRow(o, o_len, corr);
  st->l = st->l * corr + std::exp(sink - m_new);
  st->m = m_new;
}

// acc ⊕= part, with their outputs o_acc, o_part [0, n).
HWY_INLINE void MergeSoftmaxState(SoftmaxState* acc, float* HWY_RESTRICT o_acc,
                                  const SoftmaxState& part,
                                  const float* HWY_RESTRICT o_part, size_t n) {
  if (part.non_finite) acc->non_finite = true;
  if (acc->non_finite || part.l == 0.0f) return;  // nothing to add
  const float m_new = HWY_MAX(acc->m, part.m);
  const float a = std::exp(acc->m - m_new);  // 0 while acc has seen nothing
  const float b = std::exp(part.m - m_new);
  const DF df;
  const D1 d1;
  const size_t N = hn::Lanes(df);
  size_t j = 0;
  for (; j + N <= n; j += N) {
    const auto v =
        hn::MulAdd(hn::LoadU(df, o_part + j), hn::Set(df, b),
                   hn::Mul(hn::LoadU(df, o_acc + j), hn::Set(df, a)));
    hn::StoreU(v, df, o_acc + j);
  }
  for (; j < n; ++j) {
    const auto v =
        hn::MulAdd(hn::LoadU(d1, o_part + j), hn::Set(d1, b),
                   hn::Mul(hn::LoadU(d1, o_acc + j), hn::Set(d1, a)));
    hn::StoreU(v, d1, o_acc + j);
  }
  acc->l = acc->l * a + part.l * b;
  acc->m = m_new;
}

// out[0, n) = o / l: NaN for a non-finite row, zeros for a row that saw no
// key.
HWY_INLINE void FinishSoftmaxRow(const SoftmaxState& st,
                                 const float* HWY_RESTRICT o, size_t n,
                                 float* HWY_RESTRICT out) {
  if (st.non_finite) {
    for (size_t c = 0; c < n; ++c) {
      out[c] = std::numeric_limits<float>::quiet_NaN();
    }
    return;
  }
  if (st.l == 0.0f) {
    memset(out, 0, n * sizeof(float));
    return;
  }
  const float inv = 1.0f / st.l;
  for (size_t c = 0; c < n; ++c) out[c] = o[c] * inv;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
