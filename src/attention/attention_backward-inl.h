// The attention backward's plan, workspace and per-tile kernels (steps 2
// to 4 of attention_backward.cc's file comment, and the pairs a rule hides
// inside a tile), per SIMD target. Included by attention_backward.cc only.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_ATTENTION_BACKWARD_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_ATTENTION_BACKWARD_INL_H_
#undef CAUSAL_ATTENTION_SRC_ATTENTION_BACKWARD_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_ATTENTION_BACKWARD_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <limits>

#include "hwy/highway.h"
#include "src/attention/attention_plan-inl.h"
#include "src/base/simd-inl.h"
#include "src/gemm/matmul-inl.h"
#include "src/simd/dropout-inl.h"
#include "src/simd/exp-inl.h"
#include "src/simd/row_passes-inl.h"
#include "src/simd/softcap-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {
// The backward's own Plan and Workspace (the forward's additions to the
// shared AttentionPlan have the same names in HWY_NAMESPACE, and one name
// must mean one type: ODR).
namespace backward {

constexpr size_t kKeyTile = 64;     // keys per tile (rows of the Sᵀ tile)
constexpr size_t kQueryTile = 64;   // queries per tile (its columns)
constexpr size_t kMaxChunks = 4;    // key chunks per (batch, kv head)
constexpr size_t kTargetItems = 8;  // split keys until about this many items

// The backward's additions to the shared plan (attention_plan-inl.h).
struct Plan : AttentionPlan {
  const float* dout;
  const float* q;
  const float* k;
  const float* v;
  const float* out;
  const float* lse;
  float* gq;
  float* gk;
  float* gv;
  // Key chunk c is key tiles [chunk_tile[c], chunk_tile[c + 1]); queries
  // [first_query[c], tq) see some of its keys.
  size_t chunks;
  size_t chunk_tile[kMaxChunks + 1];
  size_t first_query[kMaxChunks];
  // Chunks after the first: dQ partial sums, per query head
  // [rows_per_head][d], chunk c's rows at partial_row[c] (row i at
  // partial_row[c] + i - first_query[c]).
  size_t partial_row[kMaxChunks];
  size_t rows_per_head;
  float* partials;

  Plan(const AttentionShape& shape, const AttentionOptions& options,
       const float* dout_, const float* q_, const float* k_, const float* v_,
       const float* out_, const float* lse_, float* gq_, float* gk_, float* gv_)
      : AttentionPlan(shape, options),
        dout(dout_),
        q(q_),
        k(k_),
        v(v_),
        out(out_),
        lse(lse_),
        gq(gq_),
        gk(gk_),
        gv(gv_),
        chunks(1),
        rows_per_head(0),
        partials(nullptr) {}
};

// Per-thread scratch, carved from one allocation per call.
struct Workspace {
  float* kt;     // [kKeyTile][d_panel]    key tile, padded (when d is odd)
  float* vt;     // [kKeyTile][dv_panel]   value tile, padded
  float* qt;     // [kQueryTile][d_panel]  query tile, padded
  float* dot;    // [kQueryTile][dv_panel] dO tile, padded
  float* qlt;    // [d][kQueryTile]        query tile transposed (step 1)
  float* dolt;   // [dv][kQueryTile]       dO tile transposed
  float* zero;   // [max(d_panel, dv_panel)] zeros: rows past a tile's end
  float* st;     // [kKeyTile][kQueryTile] Sᵀ, then P∘M
  float* dpt;    // [kKeyTile][kQueryTile] dP̃ᵀ, then dSᵀ
  float* dk;     // [kKeyTile][d_panel]    dK sums of the key tile
  float* dvs;    // [kKeyTile][dv_panel]   dV sums
  float* dd;     // [group][tq] D = dO·O per query row of the item's heads
  uint32_t* rk;  // [2][group][tq] dropout row keys (k0s, then k1s)
  float* dqt;    // [kQueryTile][d_panel]  dS·K of the tile pair
  uint8_t* bad;  // [group][tq] 1 where a query's q or dO row is not finite

  // Assigns the buffers from carver (a null base: only counts).
  Workspace(const Plan& p, WorkspaceCarver* carver) {
    kt = carver->Take(kKeyTile * p.d_panel);
    vt = carver->Take(kKeyTile * p.dv_panel);
    qt = carver->Take(kQueryTile * p.d_panel);
    dot = carver->Take(kQueryTile * p.dv_panel);
    qlt = carver->Take(p.d * kQueryTile);
    dolt = carver->Take(p.dv * kQueryTile);
    const size_t wide = HWY_MAX(p.d_panel, p.dv_panel);
    zero = carver->Take(wide);
    st = carver->Take(kKeyTile * kQueryTile);
    dpt = carver->Take(kKeyTile * kQueryTile);
    dk = carver->Take(kKeyTile * p.d_panel);
    dvs = carver->Take(kKeyTile * p.dv_panel);
    dd = carver->Take(p.group * p.tq);
    rk = reinterpret_cast<uint32_t*>(
        carver->Take(p.drop ? 2 * p.group * p.tq : 0));
    dqt = carver->Take(kQueryTile * p.d_panel);
    bad = reinterpret_cast<uint8_t*>(
        carver->Take((p.group * p.tq + sizeof(float) - 1) / sizeof(float)));
    if (zero) memset(zero, 0, wide * sizeof(float));
  }
};

// What step 2 needs for one row of the tile (one key, column `col`).
struct RowTerms {
  float scale;
  const float* lse;  // per query of the tile
  const float* dd;
  bool drop;
  uint32_t col;
  const uint32_t* rk0;
  const uint32_t* rk1;
  uint32_t threshold;
  float keep_scale;
};

// Step 2 on the lanes of `d` at query i of one tile row.
template <class D>
HWY_INLINE void GradLanes(D d, const Exp2Constants<D>& e, const RowTerms& t,
                          float* HWY_RESTRICT st, float* HWY_RESTRICT dpt,
                          size_t i) {
  using V = hn::Vec<D>;
  const V x = hn::Sub(hn::Mul(hn::LoadU(d, st + i), hn::Set(d, t.scale)),
                      hn::LoadU(d, t.lse + i));
  // exp of min(x, 0) as 2^(min(x, 0)·log2 e), the forward's exponential
  // (Exp2Softmax: cheaper than ExpNonPositive), but NaN stays NaN (it
  // gives 0 there).
  const V p = hn::IfThenElse(
      hn::IsNaN(x), x,
      Exp2Softmax(d, hn::Mul(hn::Min(x, hn::Zero(d)), e.log2e), e));
  V dp = hn::LoadU(d, dpt + i);
  V pm = p;
  if (t.drop) {
    const hn::RebindToUnsigned<D> du;
    const hn::RebindToSigned<D> di;
    const auto hash =
        Hash24Lanes(du, hn::Set(du, t.col), hn::LoadU(du, t.rk0 + i),
                    hn::LoadU(du, t.rk1 + i));
    // A factor, not a select: NaN·0 stays NaN, as in the reference.
    const V m =
        hn::IfThenElseZero(DropoutKeeps(d, hn::BitCast(di, hash), t.threshold),
                           hn::Set(d, t.keep_scale));
    pm = hn::Mul(p, m);
    dp = hn::Mul(dp, m);
  }
  hn::StoreU(pm, d, st + i);
  hn::StoreU(hn::Mul(p, hn::Sub(dp, hn::LoadU(d, t.dd + i))), d, dpt + i);
}

// Step 2 on queries [i0, i1) of one tile row.
HWY_INLINE void GradRow(const RowTerms& t, float* st, float* dpt, size_t i0,
                        size_t i1) {
  const DF df;
  const size_t N = hn::Lanes(df);
  size_t i = i0;
  if (i + N <= i1) {
    const Exp2Constants<DF> e(df);
    for (; i + N <= i1; i += N) GradLanes(df, e, t, st, dpt, i);
  }
  if (i < i1) {
    const D1 d1;
    const Exp2Constants<D1> e1(d1);
    for (; i < i1; ++i) GradLanes(d1, e1, t, st, dpt, i);
  }
}

// GradRow for a key row when the score rules apply (softcap, a mask):
// queries [i0, i1) of the tile starting at query q0, key `key` of head h of
// batch item b. The scores become the forward's (scale, softcap, the
// additive mask), P and dS follow with the softcap's derivative
// 1 - tanh² applied to dS, and the pairs a mask hides get zeros.
HWY_INLINE void RuledGradRow(const Plan& p, size_t b, size_t h, size_t q0,
                             size_t key, RowTerms t, float* st, float* dpt,
                             size_t i0, size_t i1) {
  float slope[kQueryTile];
  bool hidden[kQueryTile];
  if (p.softcap > 0.0f) {
    // x = cap·tanh(scale·s / cap), slope = 1 - tanh² (vectors, then lanes):
    // the forward's own tanh (softcap-inl.h) on the forward's scale·s, so
    // P here is the forward's to the last bit of the score.
    const float cap = p.softcap, m2 = -2.0f / p.softcap, scale = p.scale;
    const auto capped = [&](auto d, const auto& e, size_t i) {
      const auto x = hn::Mul(hn::LoadU(d, st + i), hn::Set(d, scale));
      const auto th = TanhOverCap(d, x, hn::Set(d, m2), e);
      hn::StoreU(hn::Mul(th, hn::Set(d, cap)), d, st + i);
      hn::StoreU(hn::NegMulAdd(th, th, hn::Set(d, 1.0f)), d, slope + i);
    };
    const DF df;
    const D1 d1;
    size_t i = i0;
    if (i + hn::Lanes(df) <= i1) {
      const ExpConstants<DF> e(df);
      for (; i + hn::Lanes(df) <= i1; i += hn::Lanes(df)) capped(df, e, i);
    }
    if (i < i1) {
      const ExpConstants<D1> e1(d1);
      for (; i < i1; ++i) capped(d1, e1, i);
    }
  } else {
    for (size_t i = i0; i < i1; ++i) {
      st[i] *= p.scale;
      slope[i] = 1.0f;
    }
  }
  for (size_t i = i0; i < i1; ++i) {
    hidden[i] = false;
    if (p.has_mask) {
      const size_t mrow = p.vis.MaskRow(b, h, q0 + i);
      if (p.vis.HasAdditiveMask()) {
        st[i] += p.vis.MaskAdd(mrow, key);
        hidden[i] = st[i] == -std::numeric_limits<float>::infinity();
      } else {
        hidden[i] = !p.vis.Allows(mrow, key);
      }
    }
  }
  t.scale = 1.0f;
  GradRow(t, st, dpt, i0, i1);
  for (size_t i = i0; i < i1; ++i) {
    if (hidden[i]) {
      st[i] = dpt[i] = 0.0f;
    } else {
      dpt[i] *= slope[i];
    }
  }
}

// --- Pairs a mask or a window's begin hides inside a tile -----------------
// Steps 3 and 4 multiply over contiguous runs (a key's queries from
// start[j], a query's keys up to end[i]); the pairs hidden inside a run (a
// boolean mask, a window's begin) have P = dS = 0, but 0 · NaN is NaN: a
// non-finite q, dO or k row would reach gradients of rows that do not see
// it. Where a tile pair can hide pairs inside its runs and one of those
// rows is not finite (rare: checked only then), the products skip the
// hidden pairs one by one instead.


// dV += (P∘M)ᵀ·dO and dK += dSᵀ·Q over the pairs each key's queries
// [start[j], stop[j]) see.
void AddSeenKeyGrads(const Plan& p, size_t b, size_t h, size_t q0, size_t k0,
                     size_t kn, const size_t* start, const size_t* stop,
                     const float* st, const float* dpt, const float* do_rows,
                     size_t ldo, const float* q_rows, size_t ldq, float* dvs,
                     float* dk) {
  for (size_t j = 0; j < kn; ++j) {
    for (size_t i = start[j]; i < stop[j]; ++i) {
      if (!p.vis.Sees(b, h, q0 + i, k0 + j)) continue;
      const float pm = st[j * kQueryTile + i], ds = dpt[j * kQueryTile + i];
      for (size_t c = 0; c < p.dv; ++c) {
        dvs[j * p.dv_panel + c] += pm * do_rows[i * ldo + c];
      }
      for (size_t c = 0; c < p.d; ++c) {
        dk[j * p.d_panel + c] += ds * q_rows[i * ldq + c];
      }
    }
  }
}

// dQ += dS·K over the keys [0, end[i]) each query row i >= skip sees.
void AddSeenQueryGrads(const Plan& p, size_t b, size_t h, size_t q0, size_t qn,
                       size_t skip, size_t k0, const size_t* end,
                       const float* dst, const float* k_rows, size_t ldk,
                       float* dqt) {
  for (size_t i = skip; i < qn; ++i) {
    for (size_t j = 0; j < end[i]; ++j) {
      if (!p.vis.Sees(b, h, q0 + i, k0 + j)) continue;
      const float x = dst[j * kQueryTile + i];
      for (size_t c = 0; c < p.d; ++c) {
        dqt[i * p.d_panel + c] += x * k_rows[j * ldk + c];
      }
    }
  }
}

// Keys per LaneScores call in a tile with hidden pairs: each group of keys
// multiplies only the query panels its keys see (the causal diagonal: about
// half the tile's pairs, where the whole tile would be all of them).
constexpr size_t kLaneKeyGroup = 8;

// Step 1 of a tile pair: Sᵀ = K·Qᵀ into ws.st and dP̃ᵀ = V·dOᵀ into ws.dpt,
// over (at least) queries [start[j], stop[j]) of each key row j < kn.
// SIMD targets: the tile's q and dO rows transposed (queries in lanes), then
// each key's scalars broadcast against them (LaneScores: the GEMM
// microkernel's form, no horizontal sums); the scalar target: dot products.
// k_rows, v_rows, q_rows and do_rows are the rows as stored.
HWY_INLINE void LaneProducts(const Plan& p, bool full, const float* k_rows,
                             const float* v_rows, size_t kn,
                             const float* q_rows, const float* do_rows,
                             size_t qn, const size_t* start,
                             const size_t* stop, const Workspace& ws) {
#if HWY_TARGET == HWY_SCALAR
  (void)full;
  for (size_t j = 0; j < kn; ++j) {
    for (size_t i = start[j]; i < stop[j]; ++i) {
      float s = 0.0f, dp = 0.0f;
      for (size_t c = 0; c < p.d; ++c) s += k_rows[j * p.d + c] * q_rows[i * p.d + c];
      for (size_t c = 0; c < p.dv; ++c) {
        dp += v_rows[j * p.dv + c] * do_rows[i * p.dv + c];
      }
      ws.st[j * kQueryTile + i] = s;
      ws.dpt[j * kQueryTile + i] = dp;
    }
  }
#else
  static_assert(kQueryTile == kWideLaneStride, "a query tile fills the lanes");
  const size_t pw = PanelWidth();
  const size_t qp = RoundUp(qn, pw);
  TransposeQueries<kQueryTile>(q_rows, p.d, p.d, qn, qp, ws.qlt);
  TransposeQueries<kQueryTile>(do_rows, p.dv, p.dv, qn, qp, ws.dolt);
  const size_t group = full ? kn : kLaneKeyGroup;
  for (size_t j = 0; j < kn; j += group) {
    const size_t gn = HWY_MIN(group, kn - j);
    size_t i0 = qn, i1 = 0;
    for (size_t x = j; x < j + gn; ++x) {
      if (stop[x] <= start[x]) continue;
      i0 = HWY_MIN(i0, start[x]);
      i1 = HWY_MAX(i1, stop[x]);
    }
    if (i1 <= i0) continue;
    i0 = i0 / pw * pw;
    i1 = RoundUp(i1, pw);
    // Both products from one call site (one inlined copy of the kernels).
    for (int op = 0; op < 2; ++op) {
      const size_t depth = op == 0 ? p.d : p.dv;
      const float* keys = op == 0 ? k_rows : v_rows;
      const float* lanes = op == 0 ? ws.qlt : ws.dolt;
      float* out = op == 0 ? ws.st : ws.dpt;
      p.products.Scores(gn, depth, keys + j * depth, depth, lanes + i0,
                        i1 - i0, out + j * kQueryTile + i0, kQueryTile);
    }
  }
#endif
}

}  // namespace backward
// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
