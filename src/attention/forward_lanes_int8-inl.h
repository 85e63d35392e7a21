// A Precision::kInt8 prefill block on its wide rows (int8_operands.h) in the
// transposed orientation: queries in lanes, as forward_transposed-inl.h runs
// the float32 prefill. Per work item, the block's query rows quantised to
// 15 bits once (QuantizeQueryRows) and, on wasm, packed as pairs along d
// across the lanes (PackLaneQueries). Per key tile (shapes: S and P [kn][qp],
// one key per row of kLaneStride floats, qp the block's rows padded to whole
// panels with zero queries):
//   1-2. Sᵀ = K·Qᵀ in integer arithmetic (ScoreLanesWide,
//        int16_rows-inl.h): each stored key's int16 pairs splat against the
//        lanes' query pairs, no key tile packed; then the outlier channels'
//        float part and each row's q·mean shift (AddOutlierScoresLanes),
//   3-4. the online softmax down the columns (SoftmaxLanes of
//        forward_transposed-inl.h: no horizontal reductions),
//   5.   O += P·V in integer arithmetic (ValuesLanesWide): each lane's
//        weights quantised against its own bound, as the row kernels do per
//        row; tiles that hide keys inside a row's run (a window's begin) or
//        hold a non-finite value scale take the float32 tile instead
//        (dequantised rows), as TiledBlock's int8 route does.
// Each score is TiledBlock's int8 route's (the same integer sums and float
// operations); the softmax's sums run down the columns, so the outputs
// round as the float32 transposed path's do, not as the row route's.
// Included by attention.cc only.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_FORWARD_LANES_INT8_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_FORWARD_LANES_INT8_INL_H_
#undef CAUSAL_ATTENTION_SRC_FORWARD_LANES_INT8_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_FORWARD_LANES_INT8_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hwy/highway.h"
#include "src/attention/attention_forward-inl.h"
#include "src/attention/forward_transposed-inl.h"
#include "src/attention/int16_rows-inl.h"
#include "src/kv/int8_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

#if HWY_TARGET != HWY_SCALAR

// Whether a Precision::kInt8 work item runs in lanes: a prefill block of
// the wide rows that the float32 call would run transposed (UseTransposed),
// with the integer kernels' shapes.
HWY_INLINE bool UseLanesInt8(const Plan& p, const Block& b,
                             const PartialRows* partial) {
  return p.wide && b.rows % 4 == 0 && p.d % 16 == 0 && p.dv % 16 == 0 &&
         UseTransposed(p, b, partial);
}

// The block's KV head's outlier channels (Plan::outliers; 0: none).
HWY_INLINE size_t OutlierCount(const Plan& p, const Block& b) {
  if (!p.outliers.count) return 0;
  return p.outliers.count[internal::KvHeadOf(p.shape, b.Row(0) / p.tq)];
}

// Step 1-2's additions where the block's KV head has outlier channels: their
// part (Plan::outliers), then each row's shift (Plan::shift), to lanes
// [0, b.rows) of the tile's kn score rows (ShiftScores in lanes: the same
// operations per score). Without outlier channels the score kernel adds
// the shift itself.
HWY_NOINLINE inline void ShiftLanes(const Plan& p, const Block& b, size_t k0,
                                    size_t kn, float* HWY_RESTRICT s) {
  constexpr size_t kO = internal::kMaxOutlierChannels;
  const size_t x = internal::KvHeadOf(p.shape, b.Row(0) / p.tq);
  AddOutlierScoresLanes(p.outliers.q + b.Row(0) * kO, kO, b.rows,
                        p.outliers.k + x * kO * p.tk + k0, p.tk,
                        OutlierCount(p, b), kn, s, kLaneStride);
  if (!p.shift) return;
  const float* HWY_RESTRICT c = p.shift + b.Row(0);
  for (size_t j = 0; j < kn; ++j) {
    float* HWY_RESTRICT sj = s + j * kLaneStride;
    for (size_t i = 0; i < b.rows; ++i) sj[i] = sj[i] + c[i];
  }
}

// Steps 3-4 for the tile's kn score rows in s, lanes [0, qp) (see
// SoftmaxLanes).
HWY_NOINLINE inline void SoftmaxAllLanes(const Plan& p, float* HWY_RESTRICT s,
                                         size_t kn, size_t qp, bool full,
                                         size_t rows, LaneState* ls,
                                         float* HWY_RESTRICT o) {
  const size_t N = hn::Lanes(DF());
  for (size_t g = 0; g < qp; g += N) SoftmaxLanes(p, s, kn, g, full, rows, ls, o);
}

// The work item of block b over keys [key_begin, key_end) in lanes (see the
// file comment); finished rows to p.out. Returns false, having done
// nothing, when a query value is not finite: TiledBlock's float32 tiles
// then give its NaN rows.
inline bool LanesInt8Block(const Plan& p, const Block& b, size_t key_begin,
                           size_t key_end, const Workspace& ws) {
  const size_t rows = b.rows;
  const size_t qp = RoundUp(rows, PanelWidth());  // <= kQueryBlock
  // ws.qpad: kQueryBlock scales, then kQueryBlock int16 rows (Int8Route's).
  float* scale = ws.qpad;
  int16_t* q16 = reinterpret_cast<int16_t*>(ws.qpad + kQueryBlock);
  if (!QuantizeQueryRows(b.q, p.d, rows, p.d, q16, scale, kWideQueryMax)) {
    return false;
  }
  for (size_t r = rows; r < qp; ++r) scale[r] = 0.0f;
  memset(q16 + rows * p.d, 0, (qp - rows) * p.d * sizeof(int16_t));
  LaneQueries lq{q16, scale, nullptr, qp};
  PackLaneQueries(p.d, ws.keys, &lq);  // wasm: the lanes' pairs in ws.keys
  LaneState ls;
  size_t begin[kQueryBlock], end[kQueryBlock], tile_end[kQueryBlock];
  ClearLanes(qp, &ls);
  // The kernels through pointers the compiler cannot see through:
  // binaryen's inliner (wasm-opt at link, which ignores noinline) would put
  // each one-caller kernel inside this loop, where V8 compiles it slower.
  static void (*volatile scores)(const LaneQueries&, const float*,
                                 const uint8_t*, size_t, size_t, size_t,
                                 float*, size_t) = ScoreLanesWide;
  static bool (*volatile values)(const float*, size_t, size_t, size_t,
                                 const uint8_t*, size_t, size_t, void*, void*,
                                 float*, size_t) = ValuesLanesWide;
  const bool outliers = OutlierCount(p, b) > 0;
  const float* shift = outliers || !p.shift ? nullptr : p.shift + b.Row(0);
  static void (*volatile softmax)(const Plan&, float*, size_t, size_t, bool,
                                  size_t, LaneState*, float*) = SoftmaxAllLanes;
  const auto tile = [&](size_t k0, size_t kn, TileVisibility vis) {
    const bool full = vis == TileVisibility::kFull;
    // 1-2. Sᵀ = K·Qᵀ on the stored wide key rows, then the shifts.
    scores(lq, shift, b.k + k0 * p.k_row, p.k_row, kn, p.d, ws.s,
                   kLaneStride);
    if (outliers) ShiftLanes(p, b, k0, kn, ws.s);
    // n: the longest run of the tile's keys a row sees.
    const size_t n = LaneTileBounds(rows, begin, end, k0, kn, full, &ls, tile_end);
    // 3-4. Online softmax down the columns (P = 0 where a lane does not
    // see the key).
    softmax(p, ws.s, kn, qp, full, rows, &ls, ws.o);
    if (n == 0) return;
    // 5. O += P·V: integer products over the keys [0, n), or the float32
    // tile.
    if ((full || !HidesInsideRun(p, b, begin, k0)) &&
        values(ws.s, kLaneStride, rows, n, b.v + k0 * p.v_row,
                        p.v_row, p.dv, ws.vp, ws.lanes, ws.o, p.dv_panel)) {
      return;
    }
    AddLaneValues(p, b, rows, begin, tile_end, k0, kn, full, ws);
  };
  ForEachKeyTile(p, b, key_begin, key_end, ws, begin, end, tile);
  FinishLanes(p, b, ls, ws);
  return true;
}

#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
