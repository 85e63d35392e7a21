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
#include "src/attention/attention_backward-inl.h"
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
namespace backward {

// One (batch, kv head, key chunk) item. Four instances (Run picks one per
// call): kScores where a score rule applies (softcap, a mask: RuledGradRow),
// kHides where pairs inside a key's or a query's run can be hidden (a
// boolean mask, a window's begin: zeroed scores past a key's window, the
// pair-by-pair products for non-finite rows); without either, none of their
// branches. Not a detail: with the rules' branches in its tile loop (even
// with them out of line) V8 runs the plain causal backward markedly slower;
// with --no-wasm-loop-unrolling both instances run alike, so it is V8's loop
// unrolling (by a loop's size and nesting depth) that the branches defeat
// (docs/performance.md).
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
