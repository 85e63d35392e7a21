// The route a forward work item takes, decided in one place (ChooseRoute),
// and the decode kernels it names: the block as a whole (the transposed
// prefill of forward_transposed-inl.h, a decode step's rows of one KV head
// (a GQA group, MHA's lone row) in a loop of its own, or TiledBlock's
// rules-aware tile loop), and how P·V reads a decode group's stored value
// rows (the float32 tile, bfloat16 widened in registers, or int8 in
// integer arithmetic). Every route runs the same
// kernels in the same order where it applies: the bits do not depend on
// it. Included by attention.cc only.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_DECODE_ROUTE_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_DECODE_ROUTE_INL_H_
#undef CAUSAL_ATTENTION_SRC_DECODE_ROUTE_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_DECODE_ROUTE_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hwy/highway.h"
#include "src/attention/attention_forward-inl.h"
#include "src/attention/attention_plan-inl.h"
#include "src/attention/forward_lanes_int8-inl.h"
#include "src/attention/forward_transposed-inl.h"
#include "src/gemm/few_rows-inl.h"
#include "src/kv/int8_rows-inl.h"
#include "src/simd/online_softmax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// What TiledBlock's work item runs as a whole.
enum class BlockRoute {
  kTransposed,   // a prefill block, queries in lanes (TransposedBlock)
  kLanesInt8,    // Precision::kInt8's prefill block on its wide rows, queries
                 // in lanes (LanesInt8Block)
  kDecodeGroup,  // a decode step's rows of one KV head, all keys seen
                 // (DecodeGroupBlock)
  kTiles,        // the tile loop with every rule (TiledBlock)
};
// How P·V reads a decode group's stored value rows.
enum class ValueRoute {
  kTile,             // converted into a float32 tile first (ValueRows)
  kBf16InRegisters,  // bfloat16 rows widened inside the kernel (wasm SIMD128)
  kInt8Integer,      // int8 rows in integer dot products (int8_rows-inl.h)
};
struct Route {
  BlockRoute block;
  ValueRoute values;
};

// Which targets have each route: the transposed and decode-group loops need
// vectors (HWY_SCALAR has neither); the bfloat16 value kernel is wasm's
// SIMD128 one (relaxed SIMD keeps its FMA copy of MatMulAddFourRows); the
// int8 integer route is int8_rows-inl.h's kInt8IntegerRoute.
constexpr bool kBf16ValueKernel = HWY_TARGET == HWY_WASM;

// The one decision: the route of the work item of block b over keys
// [key_begin, key_end) (partial: its split decode state, or null).
HWY_INLINE Route ChooseRoute(const Plan& p, const Block& b, size_t key_begin,
                             size_t key_end, const PartialRows* partial) {
  Route route{BlockRoute::kTiles, ValueRoute::kTile};
  if (p.int8) {
    // Precision::kInt8 (int8 rows, int8_operands.h): the tile loop on every
    // target, integer products where the kernels' shapes allow (any
    // multiple of four rows: they take four at a time; a prefill block's
    // rows, more than 8, share each packed key and value tile).
    if (b.rows % 4 == 0 && p.d % 16 == 0 && p.dv % 16 == 0 && !p.drop) {
      route.values = ValueRoute::kInt8Integer;
#if HWY_TARGET != HWY_SCALAR
      if (UseLanesInt8(p, b, partial)) route.block = BlockRoute::kLanesInt8;
#endif
    }
    return route;
  }
  const bool group = FourRowGroups(b.rows);
  if (group && kBf16ValueKernel && p.kv_dtype == KvDtype::kBFloat16 &&
      p.dv % 8 == 0 && !p.products.relaxed) {
    route.values = ValueRoute::kBf16InRegisters;
  } else if (b.rows <= 8 && kInt8IntegerRoute &&
             p.kv_dtype == KvDtype::kInt8 && p.d % 16 == 0 &&
             p.dv % 16 == 0 && !p.drop) {
    // A decode step's rows of one KV head, any number: four at a time, the
    // rest (MHA's lone row) one at a time (int8_one_row-inl.h). Without
    // dropout the weights are at most 1, so p · s stays finite.
    route.values = ValueRoute::kInt8Integer;
  }
#if HWY_TARGET == HWY_SCALAR
  (void)key_begin, (void)key_end, (void)partial;
  return route;
#else
  if (UseTransposed(p, b, partial)) {
    route.block = BlockRoute::kTransposed;
    return route;
  }
  // A decode step's rows of one KV head (a GQA group of 4 or 8 rows,
  // MHA's lone row, or any other group size) on any cache, every row
  // seeing every key of [key_begin, key_end) up to one common end (the
  // tile loop's grid, every tile full: a ragged batch's shorter sequence
  // ends early), no score rule, mask or dropout.
  if (p.score_rules || p.drop || p.has_mask || key_end <= key_begin) {
    return route;
  }
  const size_t stop = HWY_MIN(b.VisibleEnd(p, 0), key_end);
  for (size_t r = 0; r < b.rows; ++r) {
    if (b.VisibleBegin(p, r) > key_begin ||
        HWY_MIN(b.VisibleEnd(p, r), key_end) != stop) {
      return route;
    }
  }
  route.block = BlockRoute::kDecodeGroup;
  return route;
#endif
}

// Whether rows [0, n) all end their tile's keys at ends[0] > 0.
HWY_INLINE bool SameEnds(const size_t* ends, size_t n) {
  for (size_t r = 1; r < n; ++r) {
    if (ends[r] != ends[0]) return false;
  }
  return ends[0] > 0;
}

// Whether step 5 of TiledBlock may read a group's stored value rows in
// place (the bfloat16 and int8 value routes): its rows end their keys
// together and no hidden key inside the run may hold a non-finite value.
HWY_INLINE bool ValuesInPlace(const Plan& p, const Block& b,
                              TileVisibility vis, const size_t* begin,
                              const size_t* tile_end, size_t k0) {
  return SameEnds(tile_end, b.rows) &&
         !(vis == TileVisibility::kPartial && HidesInsideRun(p, b, begin, k0));
}

// O += P·V for `rows` (4 or 8) rows over the stored value rows of keys
// [k0, k0 + depth) (the ValueRoute kBf16InRegisters).
HWY_INLINE void AddFourBf16(const Plan& p, const Block& b, size_t rows,
                            size_t k0, size_t depth, const Workspace& ws) {
#if HWY_TARGET == HWY_WASM
  for (size_t r = 0; r < rows; r += 4) {
    MatMulAddFourRowsBf16(ws.s + r * kKeyBlock, kKeyBlock, depth,
                          b.v + k0 * p.v_row, p.v_row, p.dv,
                          ws.o + r * p.dv_panel, p.dv_panel);
  }
#else
  (void)p, (void)b, (void)rows, (void)k0, (void)depth, (void)ws;
#endif
}

// The ValueRoute kInt8Integer's queries: quantised to int16 once per work
// item into ws.qpad (unused then: d is a multiple of the vector length;
// kQueryBlock scales, then the rows: 128 + 64·d <= 128·d_pad bytes), for
// scores and P·V in integer arithmetic (int8_rows-inl.h). Returns null where
// the float32 tile route runs instead: another route, or a non-finite query.
HWY_INLINE const Int8Queries* Int8Route(const Route& route, const Plan& p,
                                        const Block& b, const Workspace& ws,
                                        Int8Queries* q8) {
  if (route.values != ValueRoute::kInt8Integer) return nullptr;
  float* scale = ws.qpad;  // [kQueryBlock] then the int16 rows
  int16_t* q = reinterpret_cast<int16_t*>(ws.qpad + kQueryBlock);
  if (!QuantizeQueryRows(b.q, p.d, b.rows, p.d, q, scale,
                         p.wide ? kWideQueryMax : kInt16Max)) {
    return nullptr;
  }
  *q8 = {q, scale};
  return q8;
}

// Step 5 of TiledBlock on the int8 route (Int8Route): P·V on the stored
// value rows. Returns false where the tile path must run instead (see
// ValuesInPlace, or a non-finite value scale in the tile).
HWY_INLINE bool Int8ValuesFourRows(const Plan& p, const Block& b,
                                   TileVisibility vis, const size_t* begin,
                                   const size_t* tile_end, size_t k0,
                                   const Workspace& ws) {
  if (b.rows > 8 || p.wide) {
    // A prefill block (or any block of a Precision::kInt8 call's wide rows,
    // which have one kernel): the value tile packed once for all rows, over the
    // longest row's keys, each row's weights zero past its own (a causal
    // tile's diagonal: exact zeros in the integer sums; a non-finite value
    // shows as its block's scale, which sends the tile down the tile path).
    if (vis == TileVisibility::kPartial && HidesInsideRun(p, b, begin, k0)) {
      return false;
    }
    size_t n = 0;
    for (size_t r = 0; r < b.rows; ++r) n = HWY_MAX(n, tile_end[r]);
    if (n == 0) return true;
    for (size_t r = 0; r < b.rows; ++r) {
      float* srow = ws.s + r * kKeyBlock;
      for (size_t j = tile_end[r]; j < n; ++j) srow[j] = 0.0f;
    }
    // Called through a pointer the compiler cannot see through: binaryen's
    // inliner (wasm-opt at link, which ignores noinline) would put this one
    // caller's kernel inside TiledBlock, where V8 compiles it slower.
    static bool (*volatile kernel)(const float*, size_t, size_t, size_t,
                                   const uint8_t*, size_t, size_t, void*,
                                   float*, size_t) = ValuesRowsInt8Packed;
    static bool (*volatile wide)(const float*, size_t, size_t, size_t,
                                 const uint8_t*, size_t, size_t, void*,
                                 float*, size_t) = ValuesRowsWide;
    return (p.wide ? wide : kernel)(ws.s, kKeyBlock, b.rows, n, b.v + k0 * p.v_row, p.v_row,
                  p.dv, ws.vp, ws.o, p.dv_panel);
  }
  if (!ValuesInPlace(p, b, vis, begin, tile_end, k0)) return false;
  // Through a pointer as well (above): a decode group's kernel stays out of
  // TiledBlock.
  static bool (*volatile group)(const float*, size_t, size_t, const uint8_t*,
                                size_t, size_t, void*, float*, size_t) =
      ValuesFourRowsInt8;
  static bool (*volatile few)(const float*, size_t, size_t, size_t,
                              const uint8_t*, size_t, size_t, void*, float*,
                              size_t) = ValuesFewRowsInt8;
  size_t r = 0;
  for (; r + 4 <= b.rows; r += 4) {
    if (!group(ws.s + r * kKeyBlock, kKeyBlock, tile_end[0],
               b.v + k0 * p.v_row, p.v_row, p.dv, ws.vp,
               ws.o + r * p.dv_panel, p.dv_panel)) {
      // Only where a value scale is not finite, the same for every call
      // over the tile: the first returns before any product is added.
      return false;
    }
  }
  // The rows past the groups of four (MHA's lone row), one at a time.
  return r == b.rows ||
         few(ws.s + r * kKeyBlock, kKeyBlock, b.rows - r, tile_end[0],
             b.v + k0 * p.v_row, p.v_row, p.dv, ws.vp, ws.o + r * p.dv_panel,
             p.dv_panel);
}

#if HWY_TARGET != HWY_SCALAR
// O += P·V for the `rows` rows of the block over the value rows vt (stride
// ldv) of a full tile of kn keys: TiledBlock's kernel for the same rows
// (one or two rows blocked over columns, a GQA group's four-row kernel,
// else the ragged one with every row ending at kn).
HWY_INLINE void AddTileValues(const Plan& p, size_t rows, size_t kn,
                              const float* vt, size_t ldv,
                              const Workspace& ws) {
  if (rows == 1) {
    MatMulAddFewRows<1>(ws.s, kKeyBlock, kn, vt, ldv, p.dv_panel, ws.o,
                        p.dv_panel);
  } else if (rows == 2) {
    MatMulAddFewRows<2>(ws.s, kKeyBlock, kn, vt, ldv, p.dv_panel, ws.o,
                        p.dv_panel);
  } else if (FourRowGroups(rows)) {
    for (size_t r = 0; r < rows; r += 4) {
      p.products.AddFour(ws.s + r * kKeyBlock, kKeyBlock, kn, vt, ldv,
                         p.dv_panel, ws.o + r * p.dv_panel, p.dv_panel);
    }
  } else {
    size_t ends[kQueryBlock];
    for (size_t r = 0; r < rows; ++r) ends[r] = kn;
    p.products.AddRagged(ws.s, kKeyBlock, rows, ends, vt, ldv, p.dv_panel,
                         ws.o, p.dv_panel);
  }
}

// Whether a decode item reads its n keys' stored rows once before its
// tiles (ReadAhead): from memory, as a model's other layers leave them,
// one pass streams them into L2 at about the read bandwidth, where the
// tiles' kernels, reading the key and value rows in turn with arithmetic
// between, keep too few lines in flight (wasm has no prefetch). float32
// and bfloat16 rows (an int8 cache's step is bound by its conversions),
// and only what L2 keeps (a decode item: kDecodeChunk keys).
HWY_INLINE bool PreRead(const Plan& p, size_t n) {
  constexpr size_t kL2Bytes = size_t{512} << 10;
  return p.kv_dtype != KvDtype::kInt8 && n * (p.k_row + p.v_row) <= kL2Bytes;
}

// TiledBlock's steps for the items ChooseRoute gives
// BlockRoute::kDecodeGroup (a decode step's rows of one KV head: a GQA
// group, MHA's lone row, any group size; an int8 cache's integer route
// too, its queries quantised once per item as there), in a loop of its own
// without the rules' branches: every tile is full for every row, so each
// tile is S = Q·Kᵀ (ScoreKeyTile), the online softmax of each row, and
// O += P·V for the rows (AddTileValues; a group: four rows per value
// read). The same kernels in the same order as TiledBlock: the same bits.
// Among the rules' branches of TiledBlock's shared loop V8 compiles the
// same kernels slower (docs/performance.md), as it did the backward's item
// loop before it had an instance per kind of rule (attention_backward.cc). The keys end at
// the rows' common end (ChooseRoute): a ragged batch's shorter sequence.
HWY_NOINLINE void DecodeGroupBlock(const Plan& p, const Block& b,
                                   size_t key_begin, size_t key_end,
                                   const Workspace& ws,
                                   const PartialRows* partial,
                                   ValueRoute values) {
  const size_t rows = b.rows;
  key_end = HWY_MIN(key_end, b.VisibleEnd(p, 0));
  size_t ldq;
  const float* q = QueryRows(p, b, ws, &ldq);
  Int8Queries q8_rows;
  const Int8Queries* q8 =
      Int8Route({BlockRoute::kDecodeGroup, values}, p, b, ws, &q8_rows);
  SoftmaxState st[kQueryBlock];
  size_t ends[kQueryBlock];
  for (size_t r = 0; r < rows; ++r) st[r] = SoftmaxState::Empty();
  memset(ws.o, 0, rows * p.dv_panel * sizeof(float));
  const bool bf16_values = values == ValueRoute::kBf16InRegisters;
  const bool pre_read = key_end > key_begin && PreRead(p, key_end - key_begin);
  if (pre_read) {
    ReadAhead(b.k + key_begin * p.k_row, (key_end - key_begin) * p.k_row,
              ws.sink);
    ReadAhead(b.v + key_begin * p.v_row, (key_end - key_begin) * p.v_row,
              ws.sink);
  }
  for (size_t k0 = key_begin; k0 < key_end; k0 += kKeyBlock) {
    const size_t kn = HWY_MIN(kKeyBlock, key_end - k0);
    // Value rows read already: no read-ahead inside Q·Kᵀ (same bits).
    ScoreKeyTile(p, q, ldq, b.k + k0 * p.k_row,
                 pre_read ? nullptr : b.v + k0 * p.v_row, rows, kn, ws, q8);
    bool any = false;
    for (size_t r = 0; r < rows; ++r) {
      float* srow = ws.s + r * kKeyBlock;
      ends[r] = kn;
      // A non-finite row's output is NaN whatever o holds: its P row is
      // zeros so that the rows' product stays one call.
      if (st[r].non_finite ||
          !OnlineSoftmaxTile(srow, kn, p.scale, &st[r], ws.o + r * p.dv_panel,
                             p.dv_panel)) {
        memset(srow, 0, kn * sizeof(float));
        ends[r] = 0;
      } else {
        any = true;
      }
    }
    if (!any) continue;  // every row non-finite (TiledBlock skips P·V too)
    // The int8 route's P·V where TiledBlock takes it (every row finite:
    // SameEnds), the same bits; else (a non-finite row or value scale) the
    // float32 tile.
    if (q8 && Int8ValuesFourRows(p, b, TileVisibility::kFull, ends, ends, k0,
                                 ws)) {
      continue;
    }
    if (bf16_values) {
      AddFourBf16(p, b, rows, k0, kn, ws);
      continue;
    }
    size_t ldv;
    const float* vt = ValueRows(p, b.v, k0, kn, ws.vp, &ldv);
    AddTileValues(p, rows, kn, vt, ldv, ws);
  }
  FinishRows(p, b, st, ws, partial);
}
#endif

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
