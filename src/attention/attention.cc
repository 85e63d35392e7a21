// Attention kernels (compiled once per SIMD target) and their dispatch.
//
// Shapes: q [B, H, Tq, D], k [B, Hkv, cap, D], v [B, Hkv, cap, Dv],
//         out [B, H, Tq, Dv], weights [B, H, Tq, Tk] (optional); query head
//         h reads KV head h / G (G = H / Hkv, the group), whose keys are the
//         first Tk of its cap rows (cap = Tk unless a KV cache's capacity).
// A work item is a block of consecutive query rows of [B·H·Tq] that share
// one KV head, and a key range; it writes its own rows (or its own partial
// state) only, so results do not depend on the thread count.
//
// Work items (DecodeSplit and QueryBlockSplit of attention_plan-inl.h):
//  * Decode-shaped (tiled path, G·Tq <= kQueryBlock): the block is the
//    whole group, all G heads' Tq rows (contiguous in q and out), so each
//    key tile is read once per KV head for the group; the keys are split
//    into fixed chunks of kDecodeChunk, one item per (group, chunk). With
//    more than one chunk, items leave partial (m, l, o) states and a second
//    pass merges each row's chunks in chunk order (online_softmax-inl.h).
//  * Otherwise: (b·H + h, query block of kQueryBlock rows) over all keys,
//    handed to the pool largest-first.
//
// The rules of AttentionOptions (visibility.h; query offset, key lengths,
// windows, boolean masks) decide which (query block, key tile) pairs run at
// all (the plan's Tile rule: invisible pairs are skipped, in both paths and
// in the decode split) and, in partial tiles, which keys of a row count;
// rows that need more than a scale (softcap, a mask, a window's begin) take
// ScoreRulesRow (attention_forward-inl.h); sinks join a row's softmax state
// when it is finished (AddSink). Layout kBSHD runs on kBHSD copies.
//
// Two computations per work item:
//  * Tiled (no weights requested, mask strategy -inf): for each key tile
//    of the item's range that its block sees (the plan's Tile rule)
//      1-2. S = Q·Kᵀ (dot-product microkernel of dot-inl.h on the key rows as
//           they are; odd head sizes are padded to whole vectors first),
//      3. scale, row max, running max/sum update (online softmax),
//      4. P = exp(S - m), dropout on P, 5. O = O·corr + P·V (matmul-inl.h);
//    finally O /= l (or the partial state is kept; and, when asked, the
//    row's log-sum-exp L = m + log(l) for the backward). Blocks of at
//    least a panel of one head's rows without a mask or dropout (the
//    prefill's) run the same steps transposed, queries in lanes
//    (forward_transposed-inl.h: both products in the GEMM microkernel's
//    form, the softmax down the columns without horizontal reductions,
//    which costs less than the row orientation: docs/performance.md).
//    Invisible key
//    tiles are never touched; extra memory is O(tile) per thread (plus
//    O(rows · chunks · Dv) partial states for split decode calls).
//  * Rows (weights or scores requested, or the renormalise strategy): S is
//    written once into the weight rows (the caller's buffer, or a per-thread
//    row buffer) and, when asked, every key's into the scores
//    (FinishScoresRow brings them to the stage asked for), softmax runs in
//    place, then P·V reads the finished rows.

#include "src/attention/attention.h"

#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <limits>
#include <vector>

#include "src/attention/int8_operands.h"
#include "src/attention/internal.h"
#include "src/attention/layout.h"
#include "src/base/size_math.h"
#include "src/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/attention/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/attention/attention_forward-inl.h"
#include "src/attention/attention_plan-inl.h"
#include "src/attention/decode_route-inl.h"
#include "src/simd/dot-inl.h"
#include "src/simd/dropout-inl.h"
#include "src/gemm/few_rows-inl.h"
#include "src/attention/forward_lanes_int8-inl.h"
#include "src/attention/forward_transposed-inl.h"
#include "src/gemm/matmul-inl.h"
#include "src/simd/online_softmax-inl.h"
#include "src/simd/row_passes-inl.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// ---------------------------------------------------------------------------
// Tiled path: online softmax over keys [key_begin, key_end), no weights.
// Writes finished rows to p.out, or partial states to *partial.
void TiledBlock(const Plan& p, const Block& b, size_t key_begin, size_t key_end,
                const Workspace& ws, const PartialRows* partial) {
  const Route route = ChooseRoute(p, b, key_begin, key_end, partial);
#if HWY_TARGET != HWY_SCALAR
  if (route.block == BlockRoute::kTransposed) {
    return TransposedBlock(p, b, key_begin, key_end, ws);
  }
  // Through a pointer: binaryen would inline the one caller's block here.
  static bool (*volatile lanes_int8)(const Plan&, const Block&, size_t, size_t,
                                     const Workspace&) = LanesInt8Block;
  if (route.block == BlockRoute::kLanesInt8 &&
      lanes_int8(p, b, key_begin, key_end, ws)) {
    return;
  }
  if (route.block == BlockRoute::kDecodeGroup) {
    return DecodeGroupBlock(p, b, key_begin, key_end, ws, partial, route.values);
  }
#endif
  const size_t rows = b.rows;
  size_t ldq;
  const float* q = QueryRows(p, b, ws, &ldq);
  Int8Queries q8_rows;
  const Int8Queries* q8 = Int8Route(route, p, b, ws, &q8_rows);

  SoftmaxState st[kQueryBlock];
  size_t begin[kQueryBlock], end[kQueryBlock], tile_end[kQueryBlock];
  for (size_t r = 0; r < rows; ++r) st[r] = SoftmaxState::Empty();
  const auto tile = [&](size_t k0, size_t kn, TileVisibility vis) {
    // 1-2. S = Q·Kᵀ for every row of the block.
    ScoreKeyTile(p, q, ldq, b.k + k0 * p.k_row, b.v + k0 * p.v_row, rows, kn,
                 ws, q8);
    ShiftScores(p, b, k0, kn, ws);
    // 3-4. Online softmax per row over its visible part of the tile.
    for (size_t r = 0; r < rows; ++r) {
      const bool full = vis == TileVisibility::kFull;
      const size_t vb = full ? 0 : BeginInTile(begin[r], k0, kn);
      const size_t ve = full ? kn : EndInTile(end[r], k0, kn);
      float* srow = ws.s + r * kKeyBlock;
      float* orow = ws.o + r * p.dv_panel;
      tile_end[r] = 0;
      if (ve <= vb || st[r].non_finite) continue;
      if (!p.score_rules && vb == 0) {
        if (!OnlineSoftmaxTile(srow, ve, p.scale, &st[r], orow, p.dv_panel)) {
          continue;
        }
      } else {
        bool non_finite = false;
        const float mx = ScoreRulesRow(p, b, r, k0, srow, vb, ve, &non_finite);
        if (non_finite) {
          st[r].non_finite = true;
          continue;
        }
        if (mx == -std::numeric_limits<float>::infinity()) continue;
        OnlineSoftmaxScaledTile(srow, ve, mx, &st[r], orow, p.dv_panel);
      }
      tile_end[r] = ve;
      if (p.drop) {
        DropoutRow(srow, ve, static_cast<uint32_t>(k0),
                   dropout::MakeRowKey(p.seed, b.Row(r)), p.threshold,
                   p.keep_scale);
      }
    }
    // 5. O += P·V over each row's visible keys (one or two rows sharing
    // their keys: blocked over columns instead of rows).
    if (route.values == ValueRoute::kBf16InRegisters &&
        ValuesInPlace(p, b, vis, begin, tile_end, k0)) {
      AddFourBf16(p, b, rows, k0, tile_end[0], ws);
      return;
    }
    if (q8 && Int8ValuesFourRows(p, b, vis, begin, tile_end, k0, ws)) return;
    size_t ldv;
    const float* vt = ValueRows(p, b.v, k0, kn, ws.vp, &ldv);
    if (vis == TileVisibility::kPartial &&
        MustSkipHidden(p, b, begin, k0, kn, vt, ldv)) {
      AddSeenProducts(p, b, ws.s, kKeyBlock, 1, tile_end, k0, vt, ldv, ws.o,
                      p.dv_panel);
    } else if (rows == 1 && tile_end[0] > 0) {
      MatMulAddFewRows<1>(ws.s, kKeyBlock, tile_end[0], vt, ldv, p.dv_panel,
                          ws.o, p.dv_panel);
    } else if (rows == 2 && tile_end[0] == tile_end[1] && tile_end[0] > 0) {
      MatMulAddFewRows<2>(ws.s, kKeyBlock, tile_end[0], vt, ldv, p.dv_panel,
                          ws.o, p.dv_panel);
    } else if (FourRowGroups(rows) && SameEnds(tile_end, rows)) {
      for (size_t r = 0; r < rows; r += 4) {  // a decode step's GQA group(s)
        p.products.AddFour(ws.s + r * kKeyBlock, kKeyBlock, tile_end[0], vt,
                           ldv, p.dv_panel, ws.o + r * p.dv_panel,
                           p.dv_panel);
      }
    } else {
      p.products.AddRagged(ws.s, kKeyBlock, rows, tile_end, vt, ldv,
                           p.dv_panel, ws.o, p.dv_panel);
    }
  };
  ForEachKeyTile(p, b, key_begin, key_end, ws, begin, end, tile);
  FinishRows(p, b, st, ws, partial);
}

// ---------------------------------------------------------------------------
// Rows path: finished weight rows, then P·V.

// Softmax (and renormalisation) of one weight row in place. Keys [0, scored)
// hold raw scores; the row's visible keys are [0, ve). Entries in [ve, tk)
// are left for the caller. Returns false if the row saw a non-finite score.
// *lse receives the row's log-sum-exp over its visible keys (both
// strategies).
HWY_INLINE bool FinishWeightRow(const Plan& p, float* w, size_t scored,
                                size_t ve, float* lse) {
  bool non_finite = false;
  const float mx = ScaleMaxRow(w, scored, p.scale, &non_finite);
  if (non_finite) {
    *lse = SoftmaxState{0.0f, 0.0f, true}.LogSumExp();
    return false;
  }
  if (p.renormalize) {
    const float visible_max = MaxRow(w, ve);
    // exp(-60) / (any row sum) stays a normal float: the book's route below
    // cannot underflow. Beyond that, take the visible keys' own max: the
    // same value in exact arithmetic.
    if (visible_max - mx >= kRenormalizeGuard) {
      // Softmax over all keys, multiply by the mask, renormalise the row.
      const float total = ExpSumRow(w, scored, mx);
      ScaleRow(w, scored, 1.0f / total);
      const float visible = SumRow(w, ve);  // visible share of the total
      ScaleRow(w, ve, 1.0f / visible);
      *lse = SoftmaxState{mx, total, false}.LogSumExp() + std::log(visible);
      return true;
    }
    const float sum = ExpSumRow(w, ve, visible_max);
    ScaleRow(w, ve, 1.0f / sum);
    *lse = SoftmaxState{visible_max, sum, false}.LogSumExp();
    return true;
  }
  const float sum = ExpSumRow(w, ve, mx);
  ScaleRow(w, ve, 1.0f / sum);
  *lse = SoftmaxState{mx, sum, false}.LogSumExp();
  return true;
}

// FinishWeightRow for rows that need the score rules, a window's begin or a
// sink (mask strategy kNegInf): w[begin, end) holds the raw scores of query
// r's visible range. Writes the weights of [0, end) (zeros outside the
// visible keys). Returns false for a non-finite row; sets *end = 0 when no
// key is visible after the masks.
HWY_INLINE bool FinishRuledWeightRow(const Plan& p, const Block& b, size_t r,
                                     float* w, size_t begin, size_t* end,
                                     float* lse) {
  bool non_finite = false;
  const float mx = ScoreRulesRow(p, b, r, 0, w, begin, *end, &non_finite);
  if (non_finite) {
    *lse = SoftmaxState{0.0f, 0.0f, true}.LogSumExp();
    return false;
  }
  if (mx == -std::numeric_limits<float>::infinity()) {
    *end = 0;
    return true;
  }
  const float sink = p.Sink(b.Row(r) / p.tq);
  const float m = HWY_MAX(mx, sink);
  float sum = ExpSumRow(w, *end, m);
  if (p.sinks) sum += std::exp(sink - m);
  ScaleRow(w, *end, 1.0f / sum);
  *lse = SoftmaxState{m, sum, false}.LogSumExp();
  return true;
}

// Query r's row of p.scores, which holds its raw dot products q·k_j for
// every key, brought to p.score_stage by the forward's own steps (the
// scale, SoftcapRow, the masks of ScoreRulesRow): -inf for the keys the row
// does not see when kMasked.
HWY_INLINE void FinishScoresRow(const Plan& p, const Block& b, size_t r) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float* s = p.scores + b.Row(r) * p.tk;
  ScaleRow(s, p.tk, p.scale);
  if (p.score_stage == ScoreStage::kScaled) return;
  if (p.softcap > 0.0f) SoftcapRow(p.softcap, s, p.tk);
  if (p.score_stage == ScoreStage::kSoftcapped) return;
  const size_t begin = b.VisibleBegin(p, r), end = b.VisibleEnd(p, r);
  const size_t mrow = p.MaskRowOf(b.b, b.Row(r));
  if (p.vis.HasAdditiveMask() && begin < end) {
    p.vis.AddMask(mrow, begin, s + begin, end - begin);
  }
  for (size_t j = 0; j < p.tk; ++j) {
    if (j < begin || j >= end || !p.vis.Allows(mrow, j)) s[j] = kNegInf;
  }
}

void RowsBlock(const Plan& p, const Block& b, const Workspace& ws) {
  const size_t rows = b.rows;
  size_t ldq;
  const float* q = QueryRows(p, b, ws, &ldq);
  Int8Queries q8_rows;
  const Int8Queries* q8 =
      Int8Route(ChooseRoute(p, b, 0, p.tk, nullptr), p, b, ws, &q8_rows);
  float* w0;
  size_t ldw;
  if (p.weights) {
    w0 = p.weights + b.Row(0) * p.tk;
    ldw = p.tk;
  } else {
    w0 = ws.rows;
    ldw = RoundUp(p.tk, 16);
  }

  size_t begin[kQueryBlock], end[kQueryBlock], scored[kQueryBlock],
      tile_end[kQueryBlock];
  bool ok[kQueryBlock];
  for (size_t r = 0; r < rows; ++r) {
    begin[r] = b.VisibleBegin(p, r);
    end[r] = b.VisibleEnd(p, r);
    if (end[r] <= begin[r]) end[r] = 0;
    // A row that sees nothing is zeros; renormalise scores the full row.
    scored[r] = end[r] == 0 ? 0 : p.renormalize ? p.tk : end[r];
  }
  // Asked-for scores cover every key of every row.
  size_t score_end = p.scores ? p.tk : 0;
  for (size_t r = 0; r < rows; ++r) score_end = HWY_MAX(score_end, scored[r]);

  // 1-2. Scores, tile by tile, copied into the weight rows (and the scores).
  for (size_t k0 = 0; k0 < score_end; k0 += kKeyBlock) {
    const size_t kn = HWY_MIN(kKeyBlock, score_end - k0);
    ScoreKeyTile(p, q, ldq, b.k + k0 * p.k_row, nullptr, rows, kn, ws, q8);
    ShiftScores(p, b, k0, kn, ws);
    for (size_t r = 0; r < rows; ++r) {
      if (scored[r] > k0) {
        memcpy(w0 + r * ldw + k0, ws.s + r * kKeyBlock,
               HWY_MIN(kn, scored[r] - k0) * sizeof(float));
      }
      if (p.scores) {
        memcpy(p.scores + b.Row(r) * p.tk + k0, ws.s + r * kKeyBlock,
               kn * sizeof(float));
      }
    }
  }
  if (p.scores) {
    for (size_t r = 0; r < rows; ++r) FinishScoresRow(p, b, r);
  }

  // 3-4. Softmax per row, dropout, zeros for the masked keys.
  for (size_t r = 0; r < rows; ++r) {
    float* w = w0 + r * ldw;
    float lse = SoftmaxState::Empty().LogSumExp();  // -inf: no visible key
    if (end[r] == 0) {
      ok[r] = true;
    } else if (p.score_rules || p.sinks || begin[r] > 0) {
      ok[r] = FinishRuledWeightRow(p, b, r, w, begin[r], &end[r], &lse);
    } else {
      ok[r] = FinishWeightRow(p, w, scored[r], end[r], &lse);
    }
    if (p.lse) p.lse[b.Row(r)] = lse;
    if (ok[r] && end[r] > 0 && p.drop) {
      DropoutRow(w, end[r], 0, dropout::MakeRowKey(p.seed, b.Row(r)),
                 p.threshold, p.keep_scale);
    }
    if (!p.weights) continue;
    if (!ok[r]) {
      for (size_t j = 0; j < p.tk; ++j) {
        w[j] = std::numeric_limits<float>::quiet_NaN();
      }
    } else if (end[r] < p.tk) {
      memset(w + end[r], 0, (p.tk - end[r]) * sizeof(float));
    }
  }

  // 5. O = W·V over each row's visible keys.
  memset(ws.o, 0, rows * p.dv_panel * sizeof(float));
  const size_t value_end = p.KeysSeenBy(b.b, b.i0, b.i1).end;
  for (size_t k0 = 0; k0 < value_end; k0 += kKeyBlock) {
    const size_t kn = HWY_MIN(kKeyBlock, value_end - k0);
    for (size_t r = 0; r < rows; ++r) {
      tile_end[r] = ok[r] ? EndInTile(end[r], k0, kn) : 0;
    }
    size_t ldv;
    const float* vt = ValueRows(p, b.v, k0, kn, ws.vp, &ldv);
    if (MustSkipHidden(p, b, begin, k0, kn, vt, ldv)) {
      AddSeenProducts(p, b, w0 + k0, ldw, 1, tile_end, k0, vt, ldv, ws.o,
                      p.dv_panel);
    } else {
      p.products.AddRagged(w0 + k0, ldw, rows, tile_end, vt, ldv, p.dv_panel,
                           ws.o, p.dv_panel);
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    // The weights are normalised already: l = 1 (0 for a row without keys).
    const SoftmaxState done{0.0f, end[r] > 0 ? 1.0f : 0.0f, !ok[r]};
    FinishSoftmaxRow(done, ws.o + r * p.dv_panel, p.dv,
                     p.out + b.Row(r) * p.dv);
  }
}

// ---------------------------------------------------------------------------

void MergeDecodeChunks(const Plan& p, const DecodeSplit& split,
                       const SoftmaxState* states, float* partial_o,
                       size_t group) {
  const size_t total_rows = p.bh_count * p.tq;
  for (size_t r = 0; r < split.group_rows; ++r) {
    const size_t row = group * split.group_rows + r;
    SoftmaxState acc = states[row];
    float* o_acc = partial_o + row * p.dv;
    for (size_t c = 1; c < split.chunks; ++c) {
      const size_t at = c * total_rows + row;
      MergeSoftmaxState(&acc, o_acc, states[at], partial_o + at * p.dv, p.dv);
    }
    AddSink(&acc, p.Sink(row / p.tq), o_acc, p.dv);
    FinishSoftmaxRow(acc, o_acc, p.dv, p.out + row * p.dv);
    if (p.lse) p.lse[row] = acc.LogSumExp();
  }
}

Status AttentionImpl(const AttentionShape& shape,
                     const AttentionOptions& options, const float* q,
                     const float* k, const float* v, float* out, float* weights,
                     float* lse) {
  internal::Int8Operands int8;
  if (options.precision == Precision::kInt8) {
    const Status prepared = int8.Prepare(shape, q, k, v);
    if (prepared != Status::kOk) return prepared;
    q = int8.queries();
    k = int8.keys();
    v = int8.values();
  }
  const Plan p(options.precision == Precision::kInt8 ? int8.shape() : shape,
               options, q, k, v, out, weights, lse, int8.shift(), int8.wide(),
               int8.outliers());
  const bool rows_path =
      weights != nullptr || p.renormalize || p.scores != nullptr;
  const bool need_rows = rows_path && weights == nullptr;
  // Decided by the shape alone (never the thread count): bit-identical
  // results for any thread count.
  const bool decode = !rows_path && p.group * p.tq <= kQueryBlock;
  const DecodeSplit split(p);
  const QueryBlockSplit blocks(p, kQueryBlock);

  ThreadPool& pool = GlobalPool();
  const size_t num_items = decode ? split.Items() : blocks.Items();
  const double flops = 2.0 * static_cast<double>(p.bh_count) * p.tq *
                       (decode ? split.keys.end - split.keys.begin : p.tk) *
                       static_cast<double>(p.d + p.dv);
  // One workspace per thread that may run an item; partial states after
  // them when a decode call is split.
  const int threads = pool.ThreadsFor(flops);
  const size_t total_rows = p.bh_count * p.tq;
  const bool merge = decode && split.chunks > 1;
  size_t partial_floats = 0;
  if (merge &&
      !internal::MulSize(total_rows * split.chunks, p.dv, &partial_floats)) {
    return Status::kOutOfMemory;
  }
  CallBuffer buffer;
  const Status st =
      buffer.Allocate(WorkspaceFloats<Workspace>(p, need_rows),
                      static_cast<size_t>(threads), partial_floats);
  if (st != Status::kOk) return st;
  SoftmaxState* states =
      merge ? static_cast<SoftmaxState*>(
                  malloc(total_rows * split.chunks * sizeof(SoftmaxState)))
            : nullptr;
  if (merge && !states) return Status::kOutOfMemory;
  float* partial_o = buffer.Extra();

  const auto run_item = [&](size_t item, int thread) {
    WorkspaceCarver carver(buffer.Thread(thread));
    const Workspace ws(p, need_rows, &carver);
    if (decode) {
      const DecodeSplit::Item it = split.At(item);
      const Block block(p, it.group * split.group_rows, split.group_rows);
      if (!merge) {
        TiledBlock(p, block, split.keys.begin, split.keys.end, ws, nullptr);
        return;
      }
      const size_t at = it.chunk * total_rows + block.row0;
      const PartialRows partial{states + at, partial_o + at * p.dv, p.dv};
      TiledBlock(p, block, it.keys.begin, it.keys.end, ws, &partial);
      return;
    }
    const QueryBlockSplit::Item it = blocks.At(item);
    const Block block(p, it.bh * p.tq + it.q0, it.q1 - it.q0);
    if (rows_path) {
      RowsBlock(p, block, ws);
    } else {
      TiledBlock(p, block, 0, p.tk, ws, nullptr);
    }
  };
  pool.Run(num_items, flops, run_item);
  if (merge) {
    const double merge_flops =
        4.0 * static_cast<double>(total_rows) * split.chunks * p.dv;
    pool.Run(split.groups, merge_flops, [&](size_t group, int) {
      MergeDecodeChunks(p, split, states, partial_o, group);
    });
  }
  free(states);
  return Status::kOk;
}

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {

HWY_EXPORT(AttentionImpl);
HWY_EXPORT(TargetNameImpl);


Status Attention(const AttentionShape& shape, const AttentionOptions& options,
                 const float* q, const float* k, const float* v, float* out,
                 float* weights) {
  return AttentionWithLogSumExp(shape, options, q, k, v, out, weights, nullptr);
}

Status AttentionWithLogSumExp(const AttentionShape& shape,
                              const AttentionOptions& options, const float* q,
                              const float* k, const float* v, float* out,
                              float* weights, float* log_sum_exp) {
  Status st = ValidateAttention(shape, options);
  if (st != Status::kOk) return st;
  if (weights && (st = ValidateAttentionWeights(shape)) != Status::kOk) {
    return st;
  }
  if (!q || !k || !v || !out) return Status::kNullPointer;
  if (log_sum_exp && options.precision != Precision::kFloat32) {
    return internal::Refuse(Status::kInvalidOption,
                            "precision: int8 gives no log-sum-exp (the "
                            "backward's input): use float32");
  }
  return internal::ForwardInLayout(&HWY_DYNAMIC_DISPATCH(AttentionImpl), shape,
                                   options, q, k, v, out, weights,
                                   log_sum_exp);
}

const char* ActiveTargetName() {
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

}  // namespace causal_attention
#endif  // HWY_ONCE
