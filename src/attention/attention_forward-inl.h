// The attention forward's own part of the plan, per SIMD target: its
// tile sizes, its Plan (the shared AttentionPlan plus the call's tensors),
// the work item's Block of query rows, the per-thread Workspace, and the
// tile steps both forward paths share: scores of a key tile (1-2), the
// query and value rows as the microkernels read them, and the score rules
// of one row (scale, softcap, additive mask, masked keys). Included by
// attention.cc only.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_ATTENTION_FORWARD_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_ATTENTION_FORWARD_INL_H_
#undef CAUSAL_ATTENTION_SRC_ATTENTION_FORWARD_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_ATTENTION_FORWARD_INL_H_
#endif

#include <stddef.h>
#include <string.h>

#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "src/attention/attention_plan-inl.h"
#include "src/simd/dot-inl.h"
#include "src/simd/exp-inl.h"
#include "src/gemm/few_rows-inl.h"
#include "src/attention/int16_rows-inl.h"
#include "src/kv/int8_rows-inl.h"
#include "src/attention/internal.h"
#include "src/kv/kv_rows-inl.h"
#include "src/kv/kv_storage.h"
#include "src/gemm/matmul-inl.h"
#include "src/simd/online_softmax-inl.h"
#include "src/simd/row_passes-inl.h"
#include "src/base/simd-inl.h"
#include "src/simd/softcap-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

constexpr size_t kQueryBlock = 32;  // query rows per work item
constexpr size_t kKeyBlock = 64;    // keys per tile (a multiple of 2 vectors)
constexpr float kRenormalizeGuard = -60.0f;
// A decode step's GQA groups read their value rows ahead (ScoreKeyTile)
// when the call's stored keys and values exceed this: they then come from
// L3 or memory, not from a core's own caches.
constexpr size_t kReadAheadBytes = size_t{4} << 20;

// The forward's additions to the shared plan (attention_plan-inl.h).
struct Plan : AttentionPlan {
  bool renormalize;
  KvDtype kv_dtype;     // how k and v are stored (kv_storage.h)
  size_t k_row, v_row;  // bytes per stored key / value row
  const float* q;
  const uint8_t* k;  // stored rows (float32 unless kv_dtype says not)
  const uint8_t* v;
  float* out;
  float* weights;
  float* lse;  // [B·H·Tq] log-sum-exp per row, or null
  bool read_ahead;  // the call's keys and values exceed kReadAheadBytes
  ScoreStage score_stage;
  float* scores;  // [B·H·Tq·Tk] scores before the softmax, or null
  // Precision::kInt8: every block takes the tile loop; k and v are the
  // prepared wide rows (int8_operands.h, `wide`) or an int8 cache's rows;
  // shift [B·H·Tq] (or null) is added to each row's scores (the smoothed
  // keys' q·mean).
  bool int8;
  bool wide;
  const float* shift;
  internal::OutlierChannels outliers;  // added to the scores before shift

  Plan(const AttentionShape& shape, const AttentionOptions& options,
       const float* q_, const float* k_, const float* v_, float* out_,
       float* weights_, float* lse_, const float* shift_ = nullptr,
       bool wide_ = false, const internal::OutlierChannels& outliers_ = {})
      : AttentionPlan(shape, options),
        renormalize(options.mask_strategy == MaskStrategy::kRenormalize &&
                    options.causal != CausalMask::kNone),
        kv_dtype(shape.kv_dtype),
        k_row(wide_ ? internal::WideRowBytes(d)
                    : KvRowBytes(shape.kv_dtype, d)),
        v_row(wide_ ? internal::WideRowBytes(dv)
                    : KvRowBytes(shape.kv_dtype, dv)),
        q(q_),
        k(reinterpret_cast<const uint8_t*>(k_)),
        v(reinterpret_cast<const uint8_t*>(v_)),
        out(out_),
        weights(weights_),
        lse(lse_),
        read_ahead(batch * kv_heads * tk * (k_row + v_row) > kReadAheadBytes),
        score_stage(options.score_stage),
        scores(options.score_stage != ScoreStage::kNone ? options.scores
                                                        : nullptr),
        int8(options.precision == Precision::kInt8),
        wide(wide_),
        shift(shift_),
        outliers(outliers_) {}
};

// The query rows of one work item: rows [row0, row0 + rows) of [B·H·Tq],
// all reading the same KV head, and that KV head's tensors. One query
// head's block, or (decode-shaped calls) a whole group: G heads' rows are
// consecutive in q and out.
struct Block {
  size_t row0, rows;
  // The query indices [i0, i1) of the rows: one head's block, or every
  // query of the group's heads (a group's block starts at a head's row 0).
  size_t i0, i1;
  size_t b, h;     // batch item and (first) query head of the block
  const float* q;  // the block's first query row
  const uint8_t* k;  // the KV head's stored key rows
  const uint8_t* v;  // the KV head's stored value rows

  Block(const Plan& p, size_t row0_, size_t rows_)
      : row0(row0_),
        rows(rows_),
        i0(row0_ % p.tq),
        i1(HWY_MIN(i0 + rows_, p.tq)),
        b(row0_ / p.tq / p.heads),
        h(row0_ / p.tq % p.heads),
        q(p.q + row0_ * p.d) {
    const size_t kv = internal::KvHeadOf(p.shape, row0_ / p.tq);
    k = p.k + kv * p.kv_stride * p.k_row;
    v = p.v + kv * p.kv_stride * p.v_row;
  }

  // Row index of query r of the block in [B·H·Tq] (dropout counter, output).
  size_t Row(size_t r) const { return row0 + r; }
  // Keys [VisibleBegin, VisibleEnd) that query r of the block sees.
  size_t VisibleBegin(const Plan& p, size_t r) const {
    return p.VisibleBegin(b, (row0 + r) % p.tq);
  }
  size_t VisibleEnd(const Plan& p, size_t r) const {
    return p.VisibleEnd(b, (row0 + r) % p.tq);
  }
  // The block's view of the tile [k0, k1): a decode group's block spans
  // G heads, so a mask with a heads dimension is read per row (partial).
  TileVisibility Tile(const Plan& p, size_t k0, size_t k1) const {
    const TileVisibility v = p.Tile(b, h, i0, i1, k0, k1);
    if (rows > i1 - i0 && p.vis.HasBooleanMask() && v != TileVisibility::kInvisible) {
      return TileVisibility::kPartial;
    }
    if (rows > i1 - i0 && p.vis.HasBooleanMask()) {
      // Invisible for head h only: check the group's other heads.
      for (size_t g = 1; g * (i1 - i0) < rows; ++g) {
        if (p.Tile(b, h + g, i0, i1, k0, k1) != TileVisibility::kInvisible) {
          return TileVisibility::kPartial;
        }
      }
    }
    return v;
  }
};

// Where a tiled work item leaves its rows: finished output rows, or (one
// chunk of a split decode call) partial states: state[r] and o + r·ldo for
// row r of the block.
struct PartialRows {
  SoftmaxState* state;
  float* o;
  size_t ldo;
};

// Per-thread scratch, carved from one allocation per call.
struct Workspace {
  float* keys;  // [kKeyBlock][d_pad] key tile rows padded to whole vectors
                // (SCALAR target: [d][kKeyBlock], the tile transposed)
  float* qpad;  // [kQueryBlock][d_pad] query rows, padded (odd head sizes)
  float* zero;  // [d_pad] zeros: the key row read for missing keys
  float* vp;    // [kKeyBlock][dv_panel] value tile, padded to the panel
  float* s;     // [kQueryBlock][kKeyBlock] score / probability tile
  float* o;     // [kQueryBlock][dv_panel] output accumulators
  float* rows;  // [kQueryBlock][tk]     weight rows when the caller has none
  float* deq;   // [kKeyBlock][d]  SCALAR target, bfloat16 / int8 k: the
                // tile's key values before PackKeys transposes them
  uint32_t* sink;  // [1] what ReadAhead read
  float* lanes;    // Precision::kInt8's wide rows: ValuesLanesWide's
                   // weights and scales (blocks·1056 floats)

  // Assigns the buffers from carver (a null base: only counts).
  Workspace(const Plan& p, bool need_rows, WorkspaceCarver* carver) {
    keys = carver->Take(kKeyBlock * p.d_pad);
    qpad = carver->Take(kQueryBlock * p.d_pad);
    zero = carver->Take(p.d_pad);
    vp = carver->Take(kKeyBlock * p.dv_panel);
    s = carver->Take(kQueryBlock * kKeyBlock);
    o = carver->Take(kQueryBlock * p.dv_panel);
    rows = carver->Take(need_rows ? kQueryBlock * RoundUp(p.tk, 16) : 0);
    const bool scalar = HWY_TARGET == HWY_SCALAR;
    deq = carver->Take(
        scalar && p.kv_dtype != KvDtype::kFloat32 ? kKeyBlock * p.d : 0);
    sink = reinterpret_cast<uint32_t*>(carver->Take(1));
    lanes = carver->Take(p.wide ? (p.dv + kInt8Block - 1) / kInt8Block *
                                      (kKeyBlock / 2 + 1) * kLaneStride
                                : 0);
    if (zero) memset(zero, 0, p.d_pad * sizeof(float));
  }
};

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

// Stored rows [0, n) of `width` values as float rows of `padded` floats
// (ld): the rows themselves for float32 without padding, else a padded
// float32 copy (a tile, at most) in buf.
HWY_INLINE const float* TileRows(const Plan& p, const uint8_t* src, size_t n,
                                 size_t width, size_t row_bytes, size_t padded,
                                 float* buf, size_t* ld) {
  if (p.kv_dtype == KvDtype::kFloat32) {
    return PaddedRows(reinterpret_cast<const float*>(src), n, width, padded,
                      buf, ld);
  }
  *ld = padded;
  if (p.wide) {
    DequantWideRows(src, n, width, row_bytes, padded, buf);
    return buf;
  }
  DequantRows(p.kv_dtype, src, n, width, row_bytes, padded, buf);
  return buf;
}

// Whether `rows` query rows are a decode step's GQA group(s) as the
// four-row kernels take them (few_rows-inl.h, int8_rows-inl.h): one or two
// groups of four query heads per KV head.
HWY_INLINE bool FourRowGroups(size_t rows) {
  return rows % 4 == 0 && rows <= 8;
}

// ws.s[r][j] = q row r · key j for the `kn` stored key rows starting at
// `k`. q has row stride ldq and, on vector targets, rows padded to whole
// vectors (see QueryRows). A decode step's GQA groups on a float32 cache
// with p.read_ahead and v_rows (the tile's stored value rows; null where
// P·V comes later) go down the keys two at a time and read the same two
// keys' value rows in between (ReadAhead): P·V reads the value tile in
// column passes, a row's stride apart, which the hardware prefetcher does
// not foresee. Each key's score is computed as in one call over the tile:
// the same bits. (bfloat16 and int8 tiles: not measured to gain, see
// bench/RESULTS.md.) q8: the rows as int16 (an int8 cache's decode groups,
// Int8Route in attention.cc): scored in integer arithmetic (int8_rows-inl.h;
// a Precision::kInt8 call's wide rows: int16_rows-inl.h).
HWY_INLINE void ScoreKeyTile(const Plan& p, const float* q, size_t ldq,
                             const uint8_t* k_rows, const uint8_t* v_rows,
                             size_t rows, size_t kn, const Workspace& ws,
                             const Int8Queries* q8 = nullptr) {
  if (q8 != nullptr && p.wide) {  // Precision::kInt8's wide rows
    DotRowsWide(*q8, rows, k_rows, p.k_row, kn, p.d, ws.keys, ws.s, kKeyBlock);
    return;
  }
  if (q8 != nullptr && rows > 8) {  // a prefill block: keys packed once
    DotRowsInt8Packed(*q8, rows, k_rows, p.k_row, kn, p.d, ws.keys, ws.s,
                      kKeyBlock);
    return;
  }
  if (q8 != nullptr) {  // a decode step's rows: four at a time, the rest one
    size_t r = 0;
    for (; r + 4 <= rows; r += 4) {
      DotFourRowsInt8({q8->q + r * p.d, q8->scale + r}, k_rows, p.k_row, kn,
                      p.d, ws.s + r * kKeyBlock, kKeyBlock);
    }
    if (r < rows) {
      DotFewRowsInt8({q8->q + r * p.d, q8->scale + r}, rows - r, k_rows,
                     p.k_row, kn, p.d, ws.s + r * kKeyBlock, kKeyBlock);
    }
    return;
  }
#if HWY_TARGET == HWY_SCALAR
  (void)v_rows;
  // One lane: the transposed-tile microkernel (broadcast q, load kᵀ).
  size_t ld;
  const float* k = TileRows(p, k_rows, kn, p.d, p.k_row, p.d, ws.deq, &ld);
  PackKeys(k, p.d, kn, ws.keys);
  MatMulPacked(q, ldq, rows, ws.keys, kKeyBlock, p.d, RoundUp(kn, PanelWidth()),
               ws.s, kKeyBlock);
#else
  const bool group = FourRowGroups(rows);
  const bool read_ahead =
      p.read_ahead && v_rows != nullptr && p.kv_dtype == KvDtype::kFloat32;
  const size_t step = read_ahead ? 2 : kKeyBlock;  // keys per step
#if HWY_TARGET == HWY_WASM
  if (p.kv_dtype == KvDtype::kBFloat16 && group &&
      p.d % 8 == 0) {  // a decode step's group(s): keys widened in registers
    for (size_t r = 0; r < rows; r += 4) {
      p.products.DotFourBf16(q + r * ldq, ldq, k_rows, p.k_row, kn, p.d,
                             ws.zero, ws.s + r * kKeyBlock, kKeyBlock);
    }
    return;
  }
#endif
  size_t ldk;
  const float* k =
      TileRows(p, k_rows, kn, p.d, p.k_row, p.d_pad, ws.keys, &ldk);
  if (rows == 1) {  // a decode step's lone row: block over keys instead
    DotOneRow(q, k, ldk, kn, p.d_pad, ws.zero, ws.s);
  } else if (group) {  // a decode step's GQA group(s)
    for (size_t j = 0; j < kn; j += step) {
      const size_t n = HWY_MIN(step, kn - j);
      if (read_ahead) ReadAhead(v_rows + j * p.v_row, n * p.v_row, ws.sink);
      for (size_t r = 0; r < rows; r += 4) {
        p.products.DotFour(q + r * ldq, ldq, k + j * ldk, ldk, n, p.d_pad,
                           ws.zero, ws.s + r * kKeyBlock + j, kKeyBlock);
      }
    }
  } else {
    p.products.Dot(q, ldq, rows, k, ldk, kn, p.d_pad, ws.zero, ws.s,
                   kKeyBlock);
  }
#endif
}

// Adds the outlier channels' part (Plan::outliers), then each row's shift
// (Plan::shift), to its scores of the tile's kn keys from k0.
HWY_INLINE void ShiftScores(const Plan& p, const Block& b, size_t k0,
                            size_t kn, const Workspace& ws) {
  if (p.outliers.count) {
    constexpr size_t kO = internal::kMaxOutlierChannels;
    const size_t x = internal::KvHeadOf(p.shape, b.Row(0) / p.tq);
    const size_t n = p.outliers.count[x];
    if (n > 0) {
      AddOutlierScores(p.outliers.q + b.Row(0) * kO, kO, b.rows,
                       p.outliers.k + x * kO * p.tk + k0, p.tk, n, kn, ws.s,
                       kKeyBlock);
    }
  }
  if (!p.shift) return;
  for (size_t r = 0; r < b.rows; ++r) {
    float* HWY_RESTRICT s = ws.s + r * kKeyBlock;
    const float c = p.shift[b.Row(r)];
    for (size_t j = 0; j < kn; ++j) s[j] = s[j] + c;
  }
}

// The block's query rows as ScoreKeyTile reads them: the user's rows, or a
// padded copy when the head size is not a multiple of the vector length.
HWY_INLINE const float* QueryRows(const Plan& p, const Block& b,
                                  const Workspace& ws, size_t* ldq) {
  return PaddedRows(b.q, b.rows, p.d, p.d_pad, ws.qpad, ldq);
}

// The value rows of keys [k0, k0 + kn) with a stride that the microkernel
// can read whole panels from (padded copies when Dv is not a multiple, or
// converted ones from a bfloat16 or int8 cache).
HWY_INLINE const float* ValueRows(const Plan& p, const uint8_t* v_head,
                                  size_t k0, size_t kn, float* vp,
                                  size_t* ldv) {
  return TileRows(p, v_head + k0 * p.v_row, kn, p.dv, p.v_row, p.dv_panel, vp,
                  ldv);
}

// x[0, n) = softcap · tanh(x / softcap) (TanhOverCap, softcap-inl.h).
HWY_INLINE void SoftcapRow(float softcap, float* HWY_RESTRICT x, size_t n) {
  const DF df;
  const size_t N = hn::Lanes(df);
  size_t j = 0;
  if (j + N <= n) {
    const ExpConstants<DF> e(df);
    const auto cap = hn::Set(df, softcap);
    const auto m2 = hn::Set(df, -2.0f / softcap);
    for (; j + N <= n; j += N) {
      const auto t = TanhOverCap(df, hn::LoadU(df, x + j), m2, e);
      hn::StoreU(hn::Mul(cap, t), df, x + j);
    }
  }
  if (j < n) {
    const D1 d1;
    const ExpConstants<D1> e(d1);
    const auto cap = hn::Set(d1, softcap);
    const auto m2 = hn::Set(d1, -2.0f / softcap);
    for (; j < n; ++j) {
      const auto t = TanhOverCap(d1, hn::LoadU(d1, x + j), m2, e);
      hn::StoreU(hn::Mul(cap, t), d1, x + j);
    }
  }
}

// Query r's scores of the tile [k0, k0 + kn) after the score rules: scaled,
// capped (softcap), the additive mask added, -inf for keys outside its
// visible part [vb, ve) of the tile or masked out by a boolean mask.
// Returns their max (-inf: nothing visible), or sets *non_finite when a
// visible raw score is NaN or ±Inf.
HWY_INLINE float ScoreRulesRow(const Plan& p, const Block& b, size_t r,
                               size_t k0, float* HWY_RESTRICT srow, size_t vb,
                               size_t ve, bool* non_finite) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t mrow = p.MaskRowOf(b.b, b.Row(r));
  // Keys a boolean mask hides are zeros first: their scores, non-finite or
  // not, play no part (as in the reference).
  const bool hides = p.vis.HasBooleanMask();
  if (hides) {
    for (size_t j = vb; j < ve; ++j) {
      if (!p.vis.Allows(mrow, k0 + j)) srow[j] = 0.0f;
    }
  }
  ScaleMaxRow(srow + vb, ve - vb, p.scale, non_finite);
  if (*non_finite) return kNegInf;
  if (p.softcap > 0.0f) SoftcapRow(p.softcap, srow + vb, ve - vb);
  if (p.vis.HasAdditiveMask()) {
    if (!p.vis.AddMask(mrow, k0 + vb, srow + vb, ve - vb)) {
      *non_finite = true;
      return kNegInf;
    }
  } else if (hides) {
    for (size_t j = vb; j < ve; ++j) {
      if (!p.vis.Allows(mrow, k0 + j)) srow[j] = kNegInf;
    }
  }
  for (size_t j = 0; j < vb; ++j) srow[j] = kNegInf;
  return MaxRow(srow, ve);
}

// The tile loop of a tiled work item over keys [key_begin, key_end): sets
// each row's visible keys [begin[r], end[r]) (end clipped to key_end),
// zeroes the output accumulators, then calls tile(k0, kn, vis) for the
// tiles [k0, k0 + kn) of the item's grid [key_begin, key_begin +
// n·kKeyBlock) that the block sees (the plan's Tile rule), from the first
// that holds a key any row sees.
template <class Tile>
HWY_INLINE void ForEachKeyTile(const Plan& p, const Block& b, size_t key_begin,
                               size_t key_end, const Workspace& ws,
                               size_t* begin, size_t* end, const Tile& tile) {
  for (size_t r = 0; r < b.rows; ++r) {
    begin[r] = b.VisibleBegin(p, r);
    end[r] = HWY_MIN(b.VisibleEnd(p, r), key_end);
  }
  const IndexRange seen = p.KeysSeenBy(b.b, b.i0, b.i1);
  const size_t range_end = HWY_MAX(key_begin, HWY_MIN(seen.end, key_end));
  const size_t first =
      seen.begin > key_begin
          ? key_begin + (seen.begin - key_begin) / kKeyBlock * kKeyBlock
          : key_begin;
  memset(ws.o, 0, b.rows * p.dv_panel * sizeof(float));
  for (size_t k0 = first; k0 < range_end; k0 += kKeyBlock) {
    const size_t kn = HWY_MIN(kKeyBlock, range_end - k0);
    const TileVisibility vis = b.Tile(p, k0, k0 + kn);
    if (vis != TileVisibility::kInvisible) tile(k0, kn, vis);
  }
}

// The end of a tiled work item: row r's state st[r] and output
// accumulators (ws.o, rows of dv_panel) become a finished output row (sink
// added, o / l, its log-sum-exp when asked), or a partial state.
HWY_INLINE void FinishRows(const Plan& p, const Block& b, SoftmaxState* st,
                           const Workspace& ws, const PartialRows* partial) {
  for (size_t r = 0; r < b.rows; ++r) {
    float* o = ws.o + r * p.dv_panel;
    if (partial) {
      partial->state[r] = st[r];
      memcpy(partial->o + r * partial->ldo, o, p.dv * sizeof(float));
    } else {
      AddSink(&st[r], p.Sink(b.Row(r) / p.tq), o, p.dv);
      FinishSoftmaxRow(st[r], o, p.dv, p.out + b.Row(r) * p.dv);
      if (p.lse) p.lse[b.Row(r)] = st[r].LogSumExp();
    }
  }
}

// --- Keys a row does not see, with non-finite values ------------------------
// P·V multiplies each row's P over a contiguous run of the tile, [0, end);
// keys inside it that the row does not see (before a window's begin, or
// hidden by a boolean mask) have P = 0, but 0 · NaN is NaN: a non-finite
// value row would reach rows that do not see it. So where a tile can hide
// keys inside a run and its value rows are not all finite (rare: checked
// only then), P·V skips each row's hidden keys one by one instead.

// Whether row r of the block sees key j (the rule, visibility.h).
HWY_INLINE bool Sees(const Plan& p, const Block& b, size_t r, size_t j) {
  const size_t row = b.Row(r);
  return p.vis.Sees(b.b, row / p.tq % p.heads, row % p.tq, j);
}

// Whether some row of the block hides a key inside its run of the tile
// starting at k0 (visibility.h's HidesInsideRun, for the latest begin).
HWY_INLINE bool HidesInsideRun(const Plan& p, const Block& b,
                               const size_t* begin, size_t k0) {
  size_t latest = 0;
  for (size_t r = 0; r < b.rows; ++r) latest = HWY_MAX(latest, begin[r]);
  return p.vis.HidesInsideRun(latest, k0);
}

// Whether P·V of keys [k0, k0 + kn) must skip hidden keys: some row hides
// a key inside its run and a value row of the tile (vt: kn rows of stride
// ldv, as ValueRows gives them, i.e. after a bfloat16 or int8 cache's rows
// were converted) is not finite.
HWY_INLINE bool MustSkipHidden(const Plan& p, const Block& b,
                               const size_t* begin, size_t k0, size_t kn,
                               const float* vt, size_t ldv) {
  if (!HidesInsideRun(p, b, begin, k0)) return false;
  for (size_t j = 0; j < kn; ++j) {
    if (!internal::AllFinite(vt + j * ldv, p.dv)) return true;
  }
  return false;
}

// O += P·V over the keys [k0, k0 + end[r]) that row r sees (P of row r and
// key j at pr[r·p_row + j·p_key], value rows of stride ldv, O rows of
// stride ldo).
inline void AddSeenProducts(const Plan& p, const Block& b, const float* pr,
                            size_t p_row, size_t p_key, const size_t* end,
                            size_t k0, const float* vt, size_t ldv, float* o,
                            size_t ldo) {
  for (size_t r = 0; r < b.rows; ++r) {
    for (size_t j = 0; j < end[r]; ++j) {
      if (!Sees(p, b, r, k0 + j)) continue;
      const float w = pr[r * p_row + j * p_key];
      for (size_t c = 0; c < p.dv; ++c) o[r * ldo + c] += w * vt[j * ldv + c];
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
