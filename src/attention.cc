// Attention kernels (compiled once per SIMD target) and their dispatch.
//
// Shapes: q [B, H, Tq, D], k [B, H, Tk, D], v [B, H, Tk, Dv],
//         out [B, H, Tq, Dv], weights [B, H, Tq, Tk] (optional).
// Work items: (b·H + h, query block of kQueryBlock rows), handed to the
// thread pool largest-first; each writes its own rows only, so results do
// not depend on the thread count.
//
// Two paths per work item:
//  * Tiled (no weights requested, mask strategy -inf): for each key tile
//    left of the causal diagonal
//      1-2. S = Q·Kᵀ (dot-product microkernel of dot-inl.h on the key rows as
//      they are;
//           odd head sizes are padded to whole vectors first),
//      3. scale, row max, running max/sum update (online softmax),
//      4. P = exp(S - m), dropout on P, 5. O = O·corr + P·V (matmul-inl.h);
//    finally O /= l. Key tiles right of the diagonal are never touched, and
//    extra memory is O(tile) per thread.
//  * Rows (weights requested, or the renormalise strategy): S is written
//    once into the weight rows (the caller's buffer, or a per-thread row
//    buffer), softmax runs in place, then P·V reads the finished rows.

#include "src/attention.h"

#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <limits>
#include <vector>

#include "src/dropout.h"
#include "src/internal.h"
#include "src/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/dot-inl.h"
#include "src/dropout-inl.h"
#include "src/matmul-inl.h"
#include "src/row_passes-inl.h"
#include "src/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

constexpr size_t kQueryBlock = 32;  // query rows per work item
constexpr size_t kKeyBlock = 64;    // keys per tile (a multiple of 2 vectors)
constexpr float kRenormalizeGuard = -60.0f;

// Everything a work item needs, resolved once per call.
struct Plan {
  AttentionShape shape;
  CausalMask causal;
  size_t bh_count, tq, tk, d, dv, dv_pad, num_qblocks;
  size_t d_pad;  // d rounded up to whole vectors (== d on SCALAR)
  float scale;
  bool renormalize;
  bool drop;
  uint32_t threshold;
  float keep_scale;
  uint64_t seed;
  const float* q;
  const float* k;
  const float* v;
  float* out;
  float* weights;

  size_t VisibleEnd(size_t i) const {
    return internal::VisibleEnd(shape, causal, i);
  }
};

// One work item: query rows [q0, q0 + rows) of head bh, and that head's
// tensors.
struct Block {
  size_t bh, q0, rows;
  const float* q;  // the block's first query row
  const float* k;  // the head's keys
  const float* v;  // the head's values

  Block(const Plan& p, size_t bh_, size_t q0_, size_t q1)
      : bh(bh_),
        q0(q0_),
        rows(q1 - q0_),
        q(p.q + (bh_ * p.tq + q0_) * p.d),
        k(p.k + bh_ * p.tk * p.d),
        v(p.v + bh_ * p.tk * p.dv) {}

  // Row index of query r of the block in [B·H·Tq] (dropout counter, output).
  size_t Row(const Plan& p, size_t r) const { return bh * p.tq + q0 + r; }
};

// Per-thread scratch, carved from one allocation per call.
struct Workspace {
  float* keys;  // [kKeyBlock][d_pad] key tile rows padded to whole vectors
                // (SCALAR target: [d][kKeyBlock], the tile transposed)
  float* qpad;  // [kQueryBlock][d_pad] query rows, padded (odd head sizes)
  float* zero;  // [d_pad] zeros: the key row read for missing keys
  float* vp;    // [kKeyBlock][dv_pad]   value tile, padded to the panel
  float* s;     // [kQueryBlock][kKeyBlock] score / probability tile
  float* o;     // [kQueryBlock][dv_pad] output accumulators
  float* rows;  // [kQueryBlock][tk]     weight rows when the caller has none

  static size_t Floats(const Plan& p, bool need_rows) {
    return kKeyBlock * p.d_pad + kQueryBlock * p.d_pad + RoundUp(p.d_pad, 16) +
           kKeyBlock * p.dv_pad + kQueryBlock * kKeyBlock +
           kQueryBlock * p.dv_pad +
           (need_rows ? kQueryBlock * RoundUp(p.tk, 16) : 0);
  }
  static Workspace Carve(const Plan& p, float* base) {
    Workspace w;
    w.keys = base;
    w.qpad = w.keys + kKeyBlock * p.d_pad;
    w.zero = w.qpad + kQueryBlock * p.d_pad;
    w.vp = w.zero + RoundUp(p.d_pad, 16);
    w.s = w.vp + kKeyBlock * p.dv_pad;
    w.o = w.s + kQueryBlock * kKeyBlock;
    w.rows = w.o + kQueryBlock * p.dv_pad;
    memset(w.zero, 0, p.d_pad * sizeof(float));
    return w;
  }
};

// Copies `rows` rows of width d into a buffer with row stride d_pad, zero-
// filling each row's tail.
HWY_INLINE void PadRows(const float* src, size_t rows, size_t d, size_t d_pad,
                        float* dst) {
  for (size_t r = 0; r < rows; ++r) {
    memcpy(dst + r * d_pad, src + r * d, d * sizeof(float));
    memset(dst + r * d_pad + d, 0, (d_pad - d) * sizeof(float));
  }
}

// kt[c][j] = k[k0 + j][c] for j < kn; zero up to the panel boundary.
HWY_INLINE void PackKeys(const float* HWY_RESTRICT k, size_t d, size_t kn,
                         float* HWY_RESTRICT kt) {
  const size_t width = RoundUp(kn, PanelWidth());
  for (size_t j = 0; j < kn; ++j) {
    const float* row = k + j * d;
    for (size_t c = 0; c < d; ++c) kt[c * kKeyBlock + j] = row[c];
  }
  for (size_t c = 0; c < d; ++c) {
    for (size_t j = kn; j < width; ++j) kt[c * kKeyBlock + j] = 0.0f;
  }
}

// ws.s[r][j] = q row r · key j for the `kn` keys starting at `k`. q has
// row stride ldq and, on vector targets, rows padded to whole vectors
// (see QueryRows).
HWY_INLINE void ScoreKeyTile(const Plan& p, const float* q, size_t ldq,
                             const float* k, size_t rows, size_t kn,
                             const Workspace& ws) {
#if HWY_TARGET == HWY_SCALAR
  // One lane: the transposed-tile microkernel (broadcast q, load kᵀ).
  PackKeys(k, p.d, kn, ws.keys);
  MatMulPacked(q, ldq, rows, ws.keys, kKeyBlock, p.d, RoundUp(kn, PanelWidth()),
               ws.s, kKeyBlock);
#else
  size_t ldk = p.d;
  if (p.d != p.d_pad) {
    PadRows(k, kn, p.d, p.d_pad, ws.keys);
    k = ws.keys;
    ldk = p.d_pad;
  }
  DotTile(q, ldq, rows, k, ldk, kn, p.d_pad, ws.zero, ws.s, kKeyBlock);
#endif
}

// The block's query rows as ScoreKeyTile reads them: the user's rows, or a
// padded copy when the head size is not a multiple of the vector length.
HWY_INLINE const float* QueryRows(const Plan& p, const Block& b,
                                  const Workspace& ws, size_t* ldq) {
  *ldq = p.d_pad;
  if (p.d == p.d_pad) return b.q;
  PadRows(b.q, b.rows, p.d, p.d_pad, ws.qpad);
  return ws.qpad;
}

// Returns the value rows for keys [k0, k0 + kn) with a stride that the
// microkernel can read whole panels from: the user's rows when Dv is already
// a multiple of the panel, else a padded copy.
HWY_INLINE const float* ValueRows(const Plan& p, const float* v_head, size_t k0,
                                  size_t kn, float* vp, size_t* ldv) {
  if (p.dv == p.dv_pad) {
    *ldv = p.dv;
    return v_head + k0 * p.dv;
  }
  for (size_t j = 0; j < kn; ++j) {
    memcpy(vp + j * p.dv_pad, v_head + (k0 + j) * p.dv, p.dv * sizeof(float));
    memset(vp + j * p.dv_pad + p.dv, 0, (p.dv_pad - p.dv) * sizeof(float));
  }
  *ldv = p.dv_pad;
  return vp;
}

// out row = o row · inv_l (first dv columns), or NaN / zeros.
HWY_INLINE void WriteOutputRow(const Plan& p, const float* o, bool non_finite,
                               float l, float* out_row) {
  if (non_finite) {
    for (size_t c = 0; c < p.dv; ++c) {
      out_row[c] = std::numeric_limits<float>::quiet_NaN();
    }
    return;
  }
  if (l == 0.0f) {  // the row sees no key
    memset(out_row, 0, p.dv * sizeof(float));
    return;
  }
  const float inv = 1.0f / l;
  for (size_t c = 0; c < p.dv; ++c) out_row[c] = o[c] * inv;
}

// ---------------------------------------------------------------------------
// Tiled path: online softmax, no weights.
void TiledBlock(const Plan& p, const Block& b, const Workspace& ws) {
  const size_t rows = b.rows;
  size_t ldq;
  const float* q = QueryRows(p, b, ws, &ldq);
  const float neg_inf = -std::numeric_limits<float>::infinity();

  float m[kQueryBlock], l[kQueryBlock];
  bool bad[kQueryBlock];
  size_t end[kQueryBlock], tile_end[kQueryBlock];
  for (size_t r = 0; r < rows; ++r) {
    m[r] = neg_inf;
    l[r] = 0.0f;
    bad[r] = false;
    end[r] = p.VisibleEnd(b.q0 + r);
  }
  memset(ws.o, 0, rows * p.dv_pad * sizeof(float));
  // VisibleEnd grows with the row, so the last row bounds the key range.
  const size_t key_end = end[rows - 1];

  for (size_t k0 = 0; k0 < key_end; k0 += kKeyBlock) {
    const size_t kn = HWY_MIN(kKeyBlock, key_end - k0);
    // 1-2. S = Q·Kᵀ for every row of the block.
    ScoreKeyTile(p, q, ldq, b.k + k0 * p.d, rows, kn, ws);
    // 3-4. Online softmax per row over its visible part of the tile.
    for (size_t r = 0; r < rows; ++r) {
      const size_t ve = end[r] > k0 ? HWY_MIN(end[r] - k0, kn) : 0;
      tile_end[r] = ve;
      if (ve == 0 || bad[r]) {
        tile_end[r] = 0;
        continue;
      }
      float* srow = ws.s + r * kKeyBlock;
      const float tile_max = ScaleMaxRow(srow, ve, p.scale, &bad[r]);
      if (bad[r]) {
        tile_end[r] = 0;
        continue;
      }
      const float m_new = HWY_MAX(m[r], tile_max);
      const float corr = std::exp(m[r] - m_new);  // 0 on the first tile
      const float sum = ExpSumRow(srow, ve, m_new);
      if (corr != 1.0f) ScaleRow(ws.o + r * p.dv_pad, p.dv_pad, corr);
      l[r] = l[r] * corr + sum;
      m[r] = m_new;
      if (p.drop) {
        DropoutRow(srow, ve, static_cast<uint32_t>(k0),
                   dropout::MakeRowKey(p.seed, b.Row(p, r)), p.threshold,
                   p.keep_scale);
      }
    }
    // 5. O += P·V over each row's visible keys.
    size_t ldv;
    const float* vt = ValueRows(p, b.v, k0, kn, ws.vp, &ldv);
    MatMulAddRagged(ws.s, kKeyBlock, rows, tile_end, vt, ldv, p.dv_pad, ws.o,
                    p.dv_pad);
  }

  for (size_t r = 0; r < rows; ++r) {
    WriteOutputRow(p, ws.o + r * p.dv_pad, bad[r], l[r],
                   p.out + b.Row(p, r) * p.dv);
  }
}

// ---------------------------------------------------------------------------
// Rows path: finished weight rows, then P·V.

// Softmax (and renormalisation) of one weight row in place. Keys [0, scored)
// hold raw scores; the row's visible keys are [0, ve). Entries in [ve, tk)
// are left for the caller. Returns false if the row saw a non-finite score.
HWY_INLINE bool FinishWeightRow(const Plan& p, float* w, size_t scored,
                                size_t ve) {
  bool non_finite = false;
  const float mx = ScaleMaxRow(w, scored, p.scale, &non_finite);
  if (non_finite) return false;
  if (p.renormalize) {
    const float visible_max = MaxRow(w, ve);
    // exp(-60) / (any row sum) stays a normal float: the book's route below
    // cannot underflow. Beyond that, take the visible keys' own max: the
    // same value in exact arithmetic.
    if (visible_max - mx >= kRenormalizeGuard) {
      // Softmax over all keys, multiply by the mask, renormalise the row.
      ScaleRow(w, scored, 1.0f / ExpSumRow(w, scored, mx));
      ScaleRow(w, ve, 1.0f / SumRow(w, ve));
      return true;
    }
    ScaleRow(w, ve, 1.0f / ExpSumRow(w, ve, visible_max));
    return true;
  }
  ScaleRow(w, ve, 1.0f / ExpSumRow(w, ve, mx));
  return true;
}

void RowsBlock(const Plan& p, const Block& b, const Workspace& ws) {
  const size_t rows = b.rows;
  size_t ldq;
  const float* q = QueryRows(p, b, ws, &ldq);
  float* w0;
  size_t ldw;
  if (p.weights) {
    w0 = p.weights + b.Row(p, 0) * p.tk;
    ldw = p.tk;
  } else {
    w0 = ws.rows;
    ldw = RoundUp(p.tk, 16);
  }

  size_t end[kQueryBlock], scored[kQueryBlock], tile_end[kQueryBlock];
  bool ok[kQueryBlock];
  for (size_t r = 0; r < rows; ++r) {
    end[r] = p.VisibleEnd(b.q0 + r);
    // A row that sees nothing is zeros; renormalise scores the full row.
    scored[r] = end[r] == 0 ? 0 : p.renormalize ? p.tk : end[r];
  }
  size_t score_end = 0;
  for (size_t r = 0; r < rows; ++r) score_end = HWY_MAX(score_end, scored[r]);

  // 1-2. Scores, tile by tile, copied into the weight rows.
  for (size_t k0 = 0; k0 < score_end; k0 += kKeyBlock) {
    const size_t kn = HWY_MIN(kKeyBlock, score_end - k0);
    ScoreKeyTile(p, q, ldq, b.k + k0 * p.d, rows, kn, ws);
    for (size_t r = 0; r < rows; ++r) {
      if (scored[r] > k0) {
        memcpy(w0 + r * ldw + k0, ws.s + r * kKeyBlock,
               HWY_MIN(kn, scored[r] - k0) * sizeof(float));
      }
    }
  }

  // 3-4. Softmax per row, dropout, zeros for the masked keys.
  for (size_t r = 0; r < rows; ++r) {
    float* w = w0 + r * ldw;
    ok[r] = end[r] == 0 || FinishWeightRow(p, w, scored[r], end[r]);
    if (ok[r] && end[r] > 0 && p.drop) {
      DropoutRow(w, end[r], 0, dropout::MakeRowKey(p.seed, b.Row(p, r)),
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
  memset(ws.o, 0, rows * p.dv_pad * sizeof(float));
  const size_t value_end = end[rows - 1];
  for (size_t k0 = 0; k0 < value_end; k0 += kKeyBlock) {
    const size_t kn = HWY_MIN(kKeyBlock, value_end - k0);
    for (size_t r = 0; r < rows; ++r) {
      tile_end[r] = (ok[r] && end[r] > k0) ? HWY_MIN(end[r] - k0, kn) : 0;
    }
    size_t ldv;
    const float* vt = ValueRows(p, b.v, k0, kn, ws.vp, &ldv);
    MatMulAddRagged(w0 + k0, ldw, rows, tile_end, vt, ldv, p.dv_pad, ws.o,
                    p.dv_pad);
  }
  for (size_t r = 0; r < rows; ++r) {
    WriteOutputRow(p, ws.o + r * p.dv_pad, !ok[r], end[r] > 0 ? 1.0f : 0.0f,
                   p.out + b.Row(p, r) * p.dv);
  }
}

// ---------------------------------------------------------------------------

Status AttentionImpl(const AttentionShape& shape,
                     const AttentionOptions& options, const float* q,
                     const float* k, const float* v, float* out,
                     float* weights) {
  Plan p;
  p.shape = shape;
  p.causal = options.causal;
  p.bh_count = static_cast<size_t>(shape.batch * shape.heads);
  p.tq = static_cast<size_t>(shape.query_len);
  p.tk = static_cast<size_t>(shape.key_len);
  p.d = static_cast<size_t>(shape.head_dim);
  p.dv = static_cast<size_t>(shape.value_dim);
  p.dv_pad = RoundUp(p.dv, PanelWidth());
  p.d_pad = RoundUp(p.d, hn::Lanes(hn::ScalableTag<float>()));
  p.num_qblocks = (p.tq + kQueryBlock - 1) / kQueryBlock;
  p.scale = internal::ResolvedScale(shape, options);
  p.renormalize = options.mask_strategy == MaskStrategy::kRenormalize &&
                  options.causal != CausalMask::kNone;
  p.drop = internal::DropoutActive(options);
  p.threshold = dropout::Threshold(options.dropout);
  p.keep_scale = dropout::KeepScale(options.dropout);
  p.seed = options.seed;
  p.q = q;
  p.k = k;
  p.v = v;
  p.out = out;
  p.weights = weights;

  const bool rows_path = weights != nullptr || p.renormalize;
  const bool need_rows = rows_path && weights == nullptr;

  ThreadPool& pool = GlobalPool();
  const size_t num_items = p.bh_count * p.num_qblocks;
  const double flops = 2.0 * static_cast<double>(p.bh_count) * p.tq * p.tk *
                       static_cast<double>(p.d + p.dv);
  // One workspace per thread that may run an item.
  const int threads = pool.ThreadsFor(flops);

  size_t per_thread = RoundUp(Workspace::Floats(p, need_rows), 16);
  size_t total_floats;
  if (!internal::MulSize(per_thread, static_cast<size_t>(threads),
                         &total_floats) ||
      total_floats > SIZE_MAX / sizeof(float) - 64) {
    return Status::kOutOfMemory;
  }
  float* buffer = static_cast<float*>(
      aligned_alloc(64, RoundUp(total_floats * sizeof(float), 64)));
  if (!buffer) return Status::kOutOfMemory;

  // Item order: all largest (last) query blocks first, across heads.
  const auto run_item = [&](size_t item, int thread) {
    const size_t qb = p.num_qblocks - 1 - item / p.bh_count;
    const size_t bh = item % p.bh_count;
    const size_t q0 = qb * kQueryBlock;
    const size_t q1 = HWY_MIN(q0 + kQueryBlock, p.tq);
    const Workspace ws = Workspace::Carve(p, buffer + thread * per_thread);
    const Block block(p, bh, q0, q1);
    if (rows_path) {
      RowsBlock(p, block, ws);
    } else {
      TiledBlock(p, block, ws);
    }
  };
  pool.Run(num_items, flops, run_item);
  free(buffer);
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
  const Status st = ValidateAttention(shape, options);
  if (st != Status::kOk) return st;
  if (!q || !k || !v || !out) return Status::kNullPointer;
  return HWY_DYNAMIC_DISPATCH(AttentionImpl)(shape, options, q, k, v, out,
                                             weights);
}

const char* ActiveTargetName() {
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

}  // namespace causal_attention
#endif  // HWY_ONCE
