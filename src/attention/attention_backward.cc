// The attention backward kernel (compiled once per SIMD target) and its
// dispatch: FlashAttention-2's backward on CPU threads.
//
// Shapes: dO, O [B, H, Tq, Dv], q [B, H, Tq, D], L [B, H, Tq],
//         k [B, kvH, Tk, D], v [B, kvH, Tk, Dv]; gradients like their inputs.
// Work items: (batch, kv head, key chunk). A chunk is a run of whole key
// tiles; the chunk count depends on the shape only (more chunks when
// batch · kvH is small, split so that each chunk sees about the same number
// of visible pairs), never on the thread count. An item owns the dK / dV of
// its keys, summed over the query heads that share them (no atomics), and
// adds its part of dQ for those heads into grad_q (the head's first chunk)
// or into its chunk's partial rows (the others).
// Per key tile (kKeyTile keys), per query head of the group, per query tile
// (kQueryTile queries) that sees any of its keys, in the transposed
// orientation (a row per key, a column per query):
//   1. Sᵀ = K·Qᵀ and dP̃ᵀ = V·dOᵀ with the tile's q and dO rows
//      transposed (queries in lanes: the GEMM microkernel's broadcast form,
//      LaneScores of matmul-inl.h, as the forward's transposed tiles),
//   2. per element: P = exp(min(scale·S - L, 0)), M = dropout factor
//      (regenerated from the seed), Sᵀ <- P∘M, dP̃ᵀ <- dS = P∘(dP̃∘M - D)
//      with D = dO·O per query,
//   3. dV += (P∘M)ᵀ·dO and dK += dSᵀ·Q over each key's visible queries
//      (broadcast microkernel, ragged begins),
//   4. dQ += dS·K over each query's visible keys (ragged ends), dS read
//      down dSᵀ's columns (LaneValuesRagged: no transposed copy).
// Query tiles before the first query that sees the key tile are skipped
// (the causal triangle); within a tile only visible pairs are multiplied
// in. dK = scale·dK when the sums are written; dQ's tile product, times
// scale, is added into grad_q's rows by the head's first chunk, and into
// partial rows by the others, added to grad_q afterwards in chunk order:
// bit-identical for any thread count. Per thread: tiles of scratch, and D
// (and the dropout row keys) of the item's query rows, computed once.

#include "src/attention/attention_backward.h"

#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <limits>

#include "src/attention/internal.h"
#include "src/attention/layout.h"
#include "src/base/size_math.h"
#include "src/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/attention/attention_backward.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/attention/attention_plan-inl.h"
#include "src/simd/dropout-inl.h"
#include "src/simd/exp-inl.h"
#include "src/gemm/matmul-inl.h"
#include "src/simd/row_passes-inl.h"
#include "src/base/simd-inl.h"
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

// One (batch, kv head, key chunk) item. Four instances (Run picks one per
// call): kScores where a score rule applies (softcap, a mask: RuledGradRow),
// kHides where pairs inside a key's or a query's run can be hidden (a
// boolean mask, a window's begin: zeroed scores past a key's window, the
// pair-by-pair products for non-finite rows); without either, none of their
// branches. Not a detail: with the rules' branches in its tile loop (even
// with them out of line) V8 (Node 20) ran the plain causal backward 1.35x
// as long, the issue 19 merge's regression (bench/studies/ab.mjs); with
// --no-wasm-loop-unrolling both instances run alike, so it is V8's loop
// unrolling (by a loop's size and nesting depth) that the branches defeat.
// Moving the tile's steps into a function of their own costs as much (less
// nesting: less unrolling).
template <bool kScores, bool kHides>
HWY_NOINLINE void ChunkItem(const Plan& p, size_t b, size_t kvh, size_t chunk,
                            const Workspace& ws) {
  // Where the dQ sums of the group's head g go: grad_q's rows for the
  // head's first chunk, else this chunk's partial rows. Row r holds query
  // first_row + r, for the rows [first_row, tq) that see the chunk.
  const size_t first_row = p.first_query[chunk];
  const size_t rows = p.tq - first_row;
  const auto dq_sums = [&](size_t g) {
    const size_t bh = b * p.heads + kvh * p.group + g;
    if (chunk == 0) return p.gq + (bh * p.tq + first_row) * p.d;
    return p.partials + (bh * p.rows_per_head + p.partial_row[chunk]) * p.d;
  };
  const size_t kv_row0 = (b * p.kv_heads + kvh) * p.kv_stride;
  const float* k_head = p.k + kv_row0 * p.d;
  const float* v_head = p.v + kv_row0 * p.dv;
  float* gk_head = p.gk + kv_row0 * p.d;
  float* gv_head = p.gv + kv_row0 * p.dv;

  // Per query row seen by the chunk, once: D = dO·O and the dropout row key.
  uint32_t* rk0 = p.drop ? ws.rk : nullptr;
  uint32_t* rk1 = p.drop ? ws.rk + p.group * p.tq : nullptr;
  for (size_t g = 0; g < p.group; ++g) {
    const size_t bh = b * p.heads + kvh * p.group + g;
    if (chunk == 0) {  // rows before first_row get no sum at all
      memset(p.gq + bh * p.tq * p.d, 0, first_row * p.d * sizeof(float));
    }
    memset(dq_sums(g), 0, rows * p.d * sizeof(float));
    for (size_t i = first_row; i < p.tq; ++i) {
      const size_t row = bh * p.tq + i;
      const float* o = p.out + row * p.dv;
      const float* dor = p.dout + row * p.dv;
      double dd = 0.0;
      for (size_t c = 0; c < p.dv; ++c) {
        dd += static_cast<double>(dor[c]) * static_cast<double>(o[c]);
      }
      ws.dd[g * p.tq + i] = static_cast<float>(dd);
      if (kHides) {
        ws.bad[g * p.tq + i] = !internal::AllFinite(dor, p.dv) ||
                               !internal::AllFinite(p.q + row * p.d, p.d);
      }
      if (p.drop) {
        const dropout::RowKey key = dropout::MakeRowKey(p.seed, row);
        rk0[g * p.tq + i] = key.k0;
        rk1[g * p.tq + i] = key.k1;
      }
    }
  }

  size_t start[kKeyTile], stop[kKeyTile], end[kQueryTile];
  for (size_t kt = p.chunk_tile[chunk]; kt < p.chunk_tile[chunk + 1]; ++kt) {
    const size_t k0 = kt * kKeyTile;
    const size_t kn = HWY_MIN(kKeyTile, p.tk - k0);
    const IndexRange seeing = p.QueriesSeeing(b, k0, k0 + kn);
    const size_t first = seeing.begin;
    memset(ws.dk, 0, kn * p.d_panel * sizeof(float));
    memset(ws.dvs, 0, kn * p.dv_panel * sizeof(float));
    size_t ldk, ldv;
    const float* kt_rows =
        PaddedRows(k_head + k0 * p.d, kn, p.d, p.d_panel, ws.kt, &ldk);
    const float* vt_rows =
        PaddedRows(v_head + k0 * p.dv, kn, p.dv, p.dv_panel, ws.vt, &ldv);
    // Hidden pairs inside the runs come from a mask or a window's begin.
    const bool may_hide =
        kHides && p.vis.HidesInsideRun(p.VisibleBegin(b, p.tq - 1), k0);
    const bool keys_finite =
        !may_hide || internal::AllFinite(k_head + k0 * p.d, kn * p.d);

    for (size_t g = 0; g < p.group && first < p.tq; ++g) {
      const size_t bh = b * p.heads + kvh * p.group + g;
      float* dq_rows = dq_sums(g);
      const size_t h = kvh * p.group + g;
      for (size_t q0 = first / kQueryTile * kQueryTile; q0 < seeing.end;
           q0 += kQueryTile) {
        const size_t qn = HWY_MIN(kQueryTile, p.tq - q0);
        const TileVisibility vis = p.Tile(b, h, q0, q0 + qn, k0, k0 + kn);
        if (vis == TileVisibility::kInvisible) continue;
        const bool full = vis == TileVisibility::kFull;
        const size_t row0 = bh * p.tq + q0;  // [B·H·Tq] index of query q0
        for (size_t j = 0; j < kn; ++j) {
          start[j] = full ? 0 : BeginInTile(p.FirstQuery(b, k0 + j), q0, qn);
          stop[j] = full ? qn : EndInTile(p.QueryEnd(b, k0 + j), q0, qn);
          if (stop[j] < start[j]) stop[j] = start[j];
        }
        for (size_t i = 0; i < qn; ++i) {
          end[i] = full ? kn : EndInTile(p.VisibleEnd(b, q0 + i), k0, kn);
        }
        size_t ldq, ldo;
        const float* q_rows =
            PaddedRows(p.q + row0 * p.d, qn, p.d, p.d_panel, ws.qt, &ldq);
        const float* do_rows = PaddedRows(p.dout + row0 * p.dv, qn, p.dv,
                                          p.dv_panel, ws.dot, &ldo);
        // 1. Sᵀ and dP̃ᵀ.
        LaneProducts(p, full, k_head + k0 * p.d, v_head + k0 * p.dv, kn,
                     p.q + row0 * p.d, p.dout + row0 * p.dv, qn, start, stop,
                     ws);
        // 2. P∘M and dS, over each key's visible queries.
        const size_t at = g * p.tq + q0;  // the tile's rows in dd, rk0, rk1
        RowTerms t{p.scale,
                   p.lse + row0,
                   ws.dd + at,
                   p.drop,
                   0,
                   p.drop ? rk0 + at : nullptr,
                   p.drop ? rk1 + at : nullptr,
                   p.threshold,
                   p.keep_scale};
        for (size_t j = 0; j < kn; ++j) {
          t.col = static_cast<uint32_t>(k0 + j);
          float* st_row = ws.st + j * kQueryTile;
          float* dp_row = ws.dpt + j * kQueryTile;
          if (!kScores) {
            GradRow(t, st_row, dp_row, start[j], stop[j]);
          } else {
            RuledGradRow(p, b, h, q0, k0 + j, t, st_row, dp_row, start[j],
                         stop[j]);
          }
          // Queries past the key's window see it not: no contribution.
          if (kHides) {
            for (size_t i = stop[j]; i < qn; ++i) st_row[i] = dp_row[i] = 0.0f;
          }
        }
        // 3. dV += (P∘M)ᵀ·dO, dK += dSᵀ·Q.
        bool rows_finite = true;
        if (may_hide && !full) {
          for (size_t i = 0; i < qn && rows_finite; ++i) {
            rows_finite = !ws.bad[at + i];
          }
        }
        if (kHides && !rows_finite) {
          AddSeenKeyGrads(p, b, h, q0, k0, kn, start, stop, ws.st, ws.dpt,
                          do_rows, ldo, q_rows, ldq, ws.dvs, ws.dk);
        } else {
          p.products.AddRaggedBegin(ws.st, kQueryTile, kn, start, qn, do_rows,
                                    ldo, p.dv_panel, ws.dvs, p.dv_panel);
          p.products.AddRaggedBegin(ws.dpt, kQueryTile, kn, start, qn, q_rows,
                                    ldq, p.d_panel, ws.dk, p.d_panel);
        }
        // 4. dQ += dS·K, dS read down dSᵀ's columns.
        // Rows before first_row see none of the chunk (their ends are 0).
        const size_t skip = first_row > q0 ? first_row - q0 : 0;
        memset(ws.dqt, 0, qn * p.d_panel * sizeof(float));
        if (kHides && !keys_finite && !full) {
          AddSeenQueryGrads(p, b, h, q0, qn, skip, k0, end, ws.dpt, kt_rows,
                            ldk, ws.dqt);
        } else {
          p.products.Values(ws.dpt + skip, qn - skip, end + skip, kt_rows, ldk,
                            p.d_panel, ws.dqt + skip * p.d_panel, p.d_panel,
                            kQueryTile);
        }
        for (size_t i = skip; i < qn; ++i) {
          if (end[i] == 0) continue;
          AddScaledRow(dq_rows + (q0 + i - first_row) * p.d,
                       ws.dqt + i * p.d_panel, p.d, p.scale);
        }
      }
    }
    // The key tile's gradients are complete: dK = scale·sums, dV = sums.
    for (size_t j = 0; j < kn; ++j) {
      float* gk = gk_head + (k0 + j) * p.d;
      float* gv = gv_head + (k0 + j) * p.dv;
      const float* sk = ws.dk + j * p.d_panel;
      const float* sv = ws.dvs + j * p.dv_panel;
      for (size_t c = 0; c < p.d; ++c) gk[c] = p.scale * sk[c];
      memcpy(gv, sv, p.dv * sizeof(float));
    }
  }
}

// chunks > 1: dQ of query rows [q0, q1) of head bh: the first chunk's sums
// (in grad_q) plus the others' partial sums, in chunk order.
void ReduceQueryRows(const Plan& p, size_t bh, size_t q0, size_t q1) {
  const float* head = p.partials + bh * p.rows_per_head * p.d;
  for (size_t i = q0; i < q1; ++i) {
    float* dst = p.gq + (bh * p.tq + i) * p.d;
    for (size_t c = 1; c < p.chunks; ++c) {
      if (i < p.first_query[c]) continue;
      const float* src = head + (p.partial_row[c] + i - p.first_query[c]) * p.d;
      for (size_t x = 0; x < p.d; ++x) dst[x] += src[x];
    }
  }
}

// Splits the key tiles into p.chunks runs of about equal work (visible
// pairs), from the shape alone: enough items for the threads when batch ·
// kv heads is small.
void SplitChunks(Plan* p) {
  const size_t items = p->batch * p->kv_heads;
  const size_t chunks = HWY_MIN((kTargetItems + items - 1) / items, kMaxChunks);
  p->chunks = SplitKeyTiles(*p, kKeyTile, chunks, p->chunk_tile);
  size_t row = 0;  // the first chunk writes into grad_q
  for (size_t i = 0; i < p->chunks; ++i) {
    const size_t k0 = p->chunk_tile[i] * kKeyTile;
    const size_t k1 = HWY_MIN(p->chunk_tile[i + 1] * kKeyTile, p->tk);
    size_t first = p->tq;  // the first query of any batch item
    for (size_t b = 0; b < p->batch; ++b) {
      first = HWY_MIN(first, p->QueriesSeeing(b, k0, k1).begin);
    }
    p->first_query[i] = first;
    p->partial_row[i] = row;
    if (i > 0) row += p->tq - p->first_query[i];
  }
  p->rows_per_head = row;
}

// grad_sinks[h] = -sum over rows i of head h (every batch item) of
// exp(sink_h - L_i) · D_i, D_i = dO_i·O_i: the sink's logit takes
// exp(sink - L) of each row's mass away from its keys. Rows that saw no key
// (L = -inf) add nothing. Accumulated in double in a fixed order.
void SinkGradients(const Plan& p, float* grad_sinks) {
  for (size_t h = 0; h < p.heads; ++h) {
    double sum = 0.0;
    for (size_t b = 0; b < p.batch; ++b) {
      for (size_t i = 0; i < p.tq; ++i) {
        const size_t row = (b * p.heads + h) * p.tq + i;
        const float l = p.lse[row];
        if (l == -std::numeric_limits<float>::infinity()) continue;
        double dd = 0.0;
        for (size_t c = 0; c < p.dv; ++c) {
          dd += static_cast<double>(p.dout[row * p.dv + c]) *
                static_cast<double>(p.out[row * p.dv + c]);
        }
        sum -= std::exp(static_cast<double>(p.sinks[h]) - l) * dd;
      }
    }
    grad_sinks[h] = static_cast<float>(sum);
  }
}

Status Run(const AttentionShape& shape, const AttentionOptions& options,
           const float* grad_out, const float* q, const float* k,
           const float* v, const float* out, const float* lse, float* grad_q,
           float* grad_k, float* grad_v, float* grad_sinks) {
  Plan p(shape, options, grad_out, q, k, v, out, lse, grad_q, grad_k, grad_v);
  if (p.sinks) SinkGradients(p, grad_sinks);
  SplitChunks(&p);

  ThreadPool& pool = GlobalPool();
  const size_t num_items = p.batch * p.kv_heads * p.chunks;
  // Five products per visible pair, at most Tq·Tk pairs per head.
  const double flops = 2.0 * static_cast<double>(p.batch * p.heads) * p.tq *
                       p.tk * static_cast<double>(2 * p.d + 3 * p.dv);
  const int threads = pool.ThreadsFor(flops);

  size_t partial_floats = 0;
  if (p.chunks > 1 &&
      (!internal::MulSize(p.bh_count, p.rows_per_head, &partial_floats) ||
       !internal::MulSize(partial_floats, p.d, &partial_floats))) {
    return Status::kOutOfMemory;
  }
  CallBuffer buffer;
  const Status st =
      buffer.Allocate(WorkspaceFloats<Workspace>(p),
                      static_cast<size_t>(threads), partial_floats);
  if (st != Status::kOk) return st;
  p.partials = p.chunks > 1 ? buffer.Extra() : nullptr;

  // ChunkItem's instance: kScores with a score rule, kHides with a boolean
  // mask or where a window's begin hides keys (then a key's queries can
  // also end before the tile does).
  bool hides = false;
  for (size_t b = 0; b < p.batch && !hides; ++b) {
    hides = p.vis.HidesInsideRun(p.VisibleBegin(b, p.tq - 1), 0);
  }
  using Item = void (*)(const Plan&, size_t, size_t, size_t, const Workspace&);
  const Item item_fn = p.score_rules ? (hides ? &ChunkItem<true, true>
                                               : &ChunkItem<true, false>)
                                     : (hides ? &ChunkItem<false, true>
                                              : &ChunkItem<false, false>);
  const auto run_item = [&](size_t item, int thread) {
    const size_t chunk = item % p.chunks;
    const size_t bkv = item / p.chunks;
    WorkspaceCarver carver(buffer.Thread(thread));
    const Workspace ws(p, &carver);
    item_fn(p, bkv / p.kv_heads, bkv % p.kv_heads, chunk, ws);
  };
  pool.Run(num_items, flops, run_item);

  if (p.chunks > 1) {
    const size_t qtiles = (p.tq + kQueryTile - 1) / kQueryTile;
    const double reduce_flops =
        static_cast<double>(p.batch * p.heads) * p.tq * p.d * p.chunks;
    pool.Run(p.batch * p.heads * qtiles, reduce_flops,
             [&](size_t item, int /*thread*/) {
               const size_t q0 = (item % qtiles) * kQueryTile;
               ReduceQueryRows(p, item / qtiles, q0,
                               HWY_MIN(q0 + kQueryTile, p.tq));
             });
  }
  return Status::kOk;
}

}  // namespace backward

Status AttentionBackwardImpl(const AttentionShape& shape,
                             const AttentionOptions& options,
                             const float* grad_out, const float* q,
                             const float* k, const float* v, const float* out,
                             const float* lse, float* grad_q, float* grad_k,
                             float* grad_v, float* grad_sinks) {
  return backward::Run(shape, options, grad_out, q, k, v, out, lse, grad_q,
                       grad_k, grad_v, grad_sinks);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {

HWY_EXPORT(AttentionBackwardImpl);


Status AttentionBackward(const AttentionShape& shape,
                         const AttentionOptions& options, const float* grad_out,
                         const float* q, const float* k, const float* v,
                         const float* out, const float* log_sum_exp,
                         float* grad_q, float* grad_k, float* grad_v,
                         float* grad_sinks) {
  const Status st =
      ValidateAttentionBackward(shape, options, grad_out, q, k, v, out,
                                log_sum_exp, grad_q, grad_k, grad_v);
  if (st != Status::kOk) return st;
  if (options.sinks && !grad_sinks) return Status::kNullPointer;
  return internal::BackwardInLayout(
      &HWY_DYNAMIC_DISPATCH(AttentionBackwardImpl), shape, options, grad_out,
      q, k, v, out, log_sum_exp, grad_q, grad_k, grad_v, grad_sinks);
}

}  // namespace causal_attention
#endif  // HWY_ONCE
