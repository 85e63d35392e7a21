// The tiled forward in the transposed orientation: queries in lanes. Per
// key tile of a block of query rows (shapes: qt [d][qp], the block's qp
// query lanes padded to whole panels; S and P [kn][qp], one key per row;
// rows of kLaneStride floats):
//   1-2. Sᵀ = K·Qᵀ: each key's scalars broadcast against the block's
//        transposed queries (the GEMM microkernel's form, StridedProduct of
//        matmul-inl.h, keys as they are stored: no transposed key tile),
//   3.   scale (softcap), the visible keys of each lane, the tile's max per
//        lane: elementwise down the columns, no horizontal reductions,
//   4.   FlashAttention-4's conditional rescaling per lane, P = exp(S - m)
//        and l += Σ P down the columns,
//   5.   O += P·V with P read transposed (StridedAddRagged), each row over
//        its visible keys only.
// Numbers as TiledBlock's (attention.cc): the same exp2, rescaling rule and
// non-finite rule (a NaN or ±Inf scaled score that a row sees makes its
// output NaN). Runs the work items TiledBlock would, except those with a
// rule it keeps per row (a mask, dropout), split decode chunks and blocks
// of fewer rows than a panel (UseTransposed). Included by attention.cc only.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_FORWARD_TRANSPOSED_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_FORWARD_TRANSPOSED_INL_H_
#undef CAUSAL_ATTENTION_SRC_FORWARD_TRANSPOSED_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_FORWARD_TRANSPOSED_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <limits>

#include "hwy/highway.h"
#include "src/attention/attention_forward-inl.h"
#include "src/simd/exp-inl.h"
#include "src/simd/online_softmax-inl.h"
#include "src/simd/row_passes-inl.h"
#include "src/base/simd-inl.h"
#include "src/simd/softcap-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

#if HWY_TARGET != HWY_SCALAR

static_assert(kQueryBlock <= kLaneStride, "a block's rows fit the lanes");

// Whether TiledBlock's work item runs transposed (see the file comment).
HWY_INLINE bool UseTransposed(const Plan& p, const Block& b,
                              const PartialRows* partial) {
  return partial == nullptr && !p.has_mask && !p.drop &&
         b.rows == b.i1 - b.i0 && b.rows >= PanelWidth();
}

// The per-lane running state of the block (m, l and the non-finite flag as
// a sum that turns NaN), and the lanes' visible keys in the current tile.
struct LaneState {
  float m[kQueryBlock], l[kQueryBlock], bad[kQueryBlock];
  int32_t lo[kQueryBlock], hi[kQueryBlock];  // visible keys [lo, hi) of tile
};

// Steps 3-4 for lanes [g, g + N) of the tile's kn score rows:
// leaves P in s and updates the lanes' state (rescaling their O rows, of
// which the block has `rows`, when their max grows by more than
// kRescaleSlack).
HWY_INLINE void SoftmaxLanes(const Plan& p, float* HWY_RESTRICT s, size_t kn,
                             size_t g, bool full, size_t rows, LaneState* ls,
                             float* HWY_RESTRICT o) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  using V = hn::Vec<DF>;
  const V neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  const V zero = hn::Zero(df);
  V vscale = hn::Set(df, p.scale);
  V tmax = neg_inf, vbad = zero;
  // 3. Scaled scores, the non-finite check, softcap, masked keys.
  const bool store = !full || p.softcap > 0.0f;
  if (!store) {
    for (size_t j = 0; j < kn; ++j) {
      const V x = hn::Mul(hn::LoadU(df, s + j * kLaneStride + g), vscale);
      vbad = hn::Add(vbad, hn::Mul(x, zero));
      tmax = hn::Max(tmax, x);
    }
  } else {
    const auto lo = hn::LoadU(di, ls->lo + g);
    const auto hi = hn::LoadU(di, ls->hi + g);
    const ExpConstants<DF> e(df);
    const V cap = hn::Set(df, p.softcap);
    const V m2 = hn::Set(df, p.softcap > 0.0f ? -2.0f / p.softcap : 0.0f);
    for (size_t j = 0; j < kn; ++j) {
      float* at = s + j * kLaneStride + g;
      V x = hn::Mul(hn::LoadU(df, at), vscale);
      const V bad = hn::Mul(x, zero);
      if (p.softcap > 0.0f) x = hn::Mul(cap, TanhOverCap(df, x, m2, e));
      if (!full) {
        const auto jv = hn::Set(di, static_cast<int32_t>(j));
        const auto seen = hn::RebindMask(  // lo <= j < hi
            df, hn::AndNot(hn::Lt(jv, lo), hn::Lt(jv, hi)));
        vbad = hn::Add(vbad, hn::IfThenElseZero(seen, bad));
        x = hn::IfThenElse(seen, x, neg_inf);
      } else {
        vbad = hn::Add(vbad, bad);
      }
      hn::StoreU(x, df, at);
      tmax = hn::Max(tmax, x);
    }
    vscale = hn::Set(df, 1.0f);  // s holds the final scores
  }
  hn::StoreU(hn::Add(hn::LoadU(df, ls->bad + g), vbad), df, ls->bad + g);
  // 4. Raise m where the tile's max exceeds it by more than the slack.
  V m = hn::LoadU(df, ls->m + g);
  if (!hn::AllFalse(df, hn::Gt(tmax, hn::Add(m, hn::Set(df, kRescaleSlack))))) {
    float t[hn::MaxLanes(df)];
    hn::StoreU(tmax, df, t);
    for (size_t i = 0; i < hn::Lanes(df); ++i) {
      float& mi = ls->m[g + i];
      if (!(t[i] > mi + kRescaleSlack)) continue;
      const float corr = std::exp(mi - t[i]);  // 0 on the first tile
      float& li = ls->l[g + i];
      if (li != 0.0f && g + i < rows) {
        ScaleRow(o + (g + i) * p.dv_panel, p.dv_panel, corr);
      }
      li *= corr;
      mi = t[i];
    }
    m = hn::LoadU(df, ls->m + g);
  }
  // Lanes that have seen nothing yet (m = -inf) see only -inf here: any
  // finite m gives them 0, not -inf - -inf.
  m = hn::IfThenElse(hn::Eq(m, neg_inf), zero, m);
  const Exp2Constants<DF> k(df);
  V sum = zero;
  for (size_t j = 0; j < kn; ++j) {
    float* at = s + j * kLaneStride + g;
    const V y = hn::Mul(hn::MulSub(hn::LoadU(df, at), vscale, m), k.log2e);
    const V e = Exp2Softmax(df, y, k);
    hn::StoreU(e, df, at);
    sum = hn::Add(sum, e);
  }
  hn::StoreU(hn::Add(hn::LoadU(df, ls->l + g), sum), df, ls->l + g);
}

// Every lane unseen: m = -inf, l = 0, and no keys (padding lanes stay so).
HWY_INLINE void ClearLanes(size_t qp, LaneState* ls) {
  for (size_t i = 0; i < qp; ++i) {
    ls->m[i] = -std::numeric_limits<float>::infinity();
    ls->l[i] = 0.0f;
    ls->bad[i] = 0.0f;
    ls->lo[i] = ls->hi[i] = 0;
  }
}

// Each row's visible keys [lo, hi) of the tile of kn keys from k0 (all of
// them when full), and tile_end[r] = hi, or 0 where the row sees none.
// Returns the largest tile_end.
HWY_INLINE size_t LaneTileBounds(size_t rows, const size_t* begin,
                                 const size_t* end, size_t k0, size_t kn,
                                 bool full, LaneState* ls, size_t* tile_end) {
  size_t n = 0;
  for (size_t r = 0; r < rows; ++r) {
    const size_t vb = full ? 0 : BeginInTile(begin[r], k0, kn);
    const size_t ve = full ? kn : EndInTile(end[r], k0, kn);
    ls->lo[r] = static_cast<int32_t>(vb);
    ls->hi[r] = static_cast<int32_t>(ve);
    tile_end[r] = ve > vb ? ve : 0;
    n = HWY_MAX(n, tile_end[r]);
  }
  return n;
}

// Step 5 on the float32 value rows: O += P·V over each row's visible keys
// (P in lanes, stride kLaneStride).
HWY_INLINE void AddLaneValues(const Plan& p, const Block& b, size_t rows,
                              const size_t* begin, const size_t* tile_end,
                              size_t k0, size_t kn, bool full,
                              const Workspace& ws) {
  size_t ldv;
  const float* vt = ValueRows(p, b.v, k0, kn, ws.vp, &ldv);
  if (!full && MustSkipHidden(p, b, begin, k0, kn, vt, ldv)) {
    AddSeenProducts(p, b, ws.s, 1, kLaneStride, tile_end, k0, vt, ldv, ws.o,
                    p.dv_panel);
  } else {
    p.products.Values(ws.s, rows, tile_end, vt, ldv, p.dv_panel, ws.o,
                      p.dv_panel, kLaneStride);
  }
}

// The block's rows from their lanes' final state to p.out.
HWY_INLINE void FinishLanes(const Plan& p, const Block& b, const LaneState& ls,
                            const Workspace& ws) {
  SoftmaxState st[kQueryBlock];
  for (size_t r = 0; r < b.rows; ++r) {
    st[r] = {ls.m[r], ls.l[r], ls.bad[r] != ls.bad[r]};
  }
  FinishRows(p, b, st, ws, nullptr);
}

// A tiled work item over keys [key_begin, key_end) in the transposed
// orientation (see the file comment); finished rows to p.out.
inline void TransposedBlock(const Plan& p, const Block& b, size_t key_begin,
                            size_t key_end, const Workspace& ws) {
  const size_t rows = b.rows;
  const size_t qp = RoundUp(rows, PanelWidth());  // <= kQueryBlock
  const size_t N = hn::Lanes(DF());
  float* qt = ws.qpad;
  TransposeQueries<kLaneStride>(b.q, p.d, p.d, rows, qp, qt);
  LaneState ls;
  size_t begin[kQueryBlock], end[kQueryBlock], tile_end[kQueryBlock];
  ClearLanes(qp, &ls);
  const auto tile = [&](size_t k0, size_t kn, TileVisibility vis) {
    const bool full = vis == TileVisibility::kFull;
    // 1-2. Sᵀ = K·Qᵀ on the key rows as stored (converted from a bfloat16 or
    // int8 cache).
    size_t ldk;
    const float* k =
        TileRows(p, b.k + k0 * p.k_row, kn, p.d, p.k_row, p.d, ws.keys, &ldk);
    p.products.Scores(kn, p.d, k, ldk, qt, qp, ws.s, kLaneStride);
    LaneTileBounds(rows, begin, end, k0, kn, full, &ls, tile_end);
    // 3-4. Online softmax down the columns.
    for (size_t g = 0; g < qp; g += N) {
      SoftmaxLanes(p, ws.s, kn, g, full, rows, &ls, ws.o);
    }
    // 5. O += P·V over each row's visible keys.
    AddLaneValues(p, b, rows, begin, tile_end, k0, kn, full, ws);
  };
  ForEachKeyTile(p, b, key_begin, key_end, ws, begin, end, tile);
  FinishLanes(p, b, ls, ws);
}

#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
