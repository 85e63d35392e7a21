// What the attention forward (attention.cc) and backward
// (attention_backward.cc) share, compiled once per SIMD target:
//  * AttentionPlan: the call resolved once (sizes, KV heads and group, the
//    scale, dropout's threshold / keep scale / seed, padded widths);
//  * the visibility rule: which keys a query sees (per element), which keys
//    a block of queries sees and which queries a block of keys is seen by
//    (loop bounds), and whether a (query block, key tile) pair is visible,
//    partly visible (the per-element rule applies inside) or invisible
//    (skipped). Causal top-left / bottom-right alignment today; sliding
//    windows, per-sequence key lengths and mask tiles become terms of these
//    functions, and both passes (and the decode split) follow;
//  * the work items: the forward's decode split (groups x fixed key chunks)
//    and query blocks, the backward's key chunks of about equal visible
//    work;
//  * per-thread workspace carving and the call's one allocation;
//  * padded-row copies for odd head sizes.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_ATTENTION_PLAN_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_ATTENTION_PLAN_INL_H_
#undef CAUSAL_ATTENTION_SRC_ATTENTION_PLAN_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_ATTENTION_PLAN_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <limits>

#include "hwy/highway.h"
#include "src/attention/attention.h"
#include "src/simd/dropout.h"
#include "src/attention/internal.h"
#include "src/base/simd-inl.h"
#include "src/base/size_math.h"
#include "src/base/status.h"
#include "src/gemm/tile_products-inl.h"
#include "src/attention/visibility.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// How much of a (query block, key tile) pair is visible.
enum class TileVisibility {
  kInvisible,  // no query of the block sees a key of the tile: skipped
  kPartial,    // some pairs: the per-element rule decides inside the tile
  kFull,       // every query sees every key: no per-element mask
};

// A half-open index range [begin, end).
struct IndexRange {
  size_t begin, end;
};

// Everything about a call that both passes need, resolved once.
struct AttentionPlan {
  AttentionShape shape;
  CausalMask causal;
  size_t batch, heads;
  size_t kv_heads;  // with 0 = heads resolved
  size_t group;     // query heads per KV head
  size_t bh_count;  // batch · heads
  size_t tq, tk, d, dv;
  size_t kv_stride;  // rows per KV head in k and v (>= tk: a cache's capacity)
  size_t d_pad;      // d rounded up to whole vectors (dot-product depth)
  size_t dv_pad;     // dv likewise
  size_t d_panel;    // d rounded up to whole panels (broadcast kernels)
  size_t dv_panel;   // dv likewise
  TileProducts products;  // the tiles' product kernels, chosen for the call
  float scale;
  internal::Visibility vis;  // the rule, per element (visibility.h)
  bool has_mask;   // a boolean or additive mask
  float softcap;   // > 0: scores become softcap·tanh(s / softcap)
  const float* sinks;  // [heads] or null
  // Scores need more than scale before the softmax (softcap, an additive
  // mask, keys masked inside a row's range).
  bool score_rules;
  bool drop;  // dropout active (training and p > 0)
  uint32_t threshold;
  float keep_scale;
  uint64_t seed;

  AttentionPlan(const AttentionShape& s, const AttentionOptions& o)
      : shape(s),
        causal(o.causal),
        batch(static_cast<size_t>(s.batch)),
        heads(static_cast<size_t>(s.heads)),
        kv_heads(static_cast<size_t>(internal::KvHeads(s))),
        group(heads / kv_heads),
        bh_count(batch * heads),
        tq(static_cast<size_t>(s.query_len)),
        tk(static_cast<size_t>(s.key_len)),
        d(static_cast<size_t>(s.head_dim)),
        dv(static_cast<size_t>(s.value_dim)),
        kv_stride(static_cast<size_t>(internal::KvCapacity(s))),
        d_pad(RoundUp(d, hn::Lanes(DF()))),
        dv_pad(RoundUp(dv, hn::Lanes(DF()))),
        d_panel(RoundUp(d, PanelWidth())),
        dv_panel(RoundUp(dv, PanelWidth())),
        scale(internal::ResolvedScale(s, o)),
        vis(s, o),
        has_mask(o.mask.kind != MaskKind::kNone),
        softcap(o.softcap),
        sinks(o.sinks),
        score_rules(has_mask || o.softcap > 0.0f),
        drop(internal::DropoutActive(o)),
        threshold(dropout::Threshold(o.dropout)),
        keep_scale(dropout::KeepScale(o.dropout)),
        seed(o.seed) {}

  // --- The visibility rule (visibility.h) ---------------------------------
  // Per element: query i of batch item b sees keys [VisibleBegin,
  // VisibleEnd) (a boolean mask removes some inside); key j is seen by
  // queries [FirstQuery, QueryEnd). All four never decrease with their
  // index (the block and tile rules below rely on it).
  size_t VisibleBegin(size_t b, size_t i) const { return vis.Begin(b, i); }
  size_t VisibleEnd(size_t b, size_t i) const { return vis.End(b, i); }
  size_t FirstQuery(size_t b, size_t j) const { return vis.FirstQuery(b, j); }
  size_t QueryEnd(size_t b, size_t j) const { return vis.QueryEnd(b, j); }
  // The mask row (visibility.h's MaskRow) of row `row` of [B·H·Tq] in batch
  // item b; 0 without a mask.
  size_t MaskRowOf(size_t b, size_t row) const {
    return has_mask ? vis.MaskRow(b, row / tq % heads, row % tq) : 0;
  }

  // The keys that any of queries [i0, i1) sees (i0 < i1); begin >= end: none.
  IndexRange KeysSeenBy(size_t b, size_t i0, size_t i1) const {
    return {VisibleBegin(b, i0), VisibleEnd(b, i1 - 1)};
  }
  // The queries that see any of keys [j0, j1) (j0 < j1).
  IndexRange QueriesSeeing(size_t b, size_t j0, size_t j1) const {
    return {FirstQuery(b, j0), QueryEnd(b, j1 - 1)};
  }

  // Query block [i0, i1) of head h of batch item b against key tile [j0,
  // j1) (both non-empty). A boolean mask tile that is all false is
  // invisible; one that is all true keeps the range rule's verdict.
  TileVisibility Tile(size_t b, size_t h, size_t i0, size_t i1, size_t j0,
                      size_t j1) const {
    if (VisibleEnd(b, i1 - 1) <= j0 || VisibleBegin(b, i0) >= j1) {
      return TileVisibility::kInvisible;
    }
    TileVisibility range = VisibleBegin(b, i1 - 1) <= j0 &&
                                   VisibleEnd(b, i0) >= j1
                               ? TileVisibility::kFull
                               : TileVisibility::kPartial;
    if (!vis.HasBooleanMask()) return range;
    bool any = false, all = true;
    for (size_t i = i0; i < i1 && (all || !any); ++i) {
      const size_t row = vis.MaskRow(b, h, i);
      for (size_t j = j0; j < j1; ++j) {
        const bool allows = vis.MaskAllows(row, j);
        any |= allows;
        all &= allows;
      }
    }
    if (!any) return TileVisibility::kInvisible;
    return all ? range : TileVisibility::kPartial;
  }

  // Visible pairs of key j over the batch (before a mask): the work it
  // brings (the chunk split's weight).
  size_t QueriesOfKey(size_t j) const {
    size_t n = 0;
    for (size_t b = 0; b < batch; ++b) {
      const size_t first = FirstQuery(b, j), end = QueryEnd(b, j);
      n += end > first ? end - first : 0;
    }
    return n;
  }
  // The keys any query of any batch item sees.
  IndexRange AllKeysSeen() const {
    IndexRange r{tk, 0};
    for (size_t b = 0; b < batch; ++b) {
      const IndexRange k = KeysSeenBy(b, 0, tq);
      if (k.begin >= k.end) continue;
      r.begin = HWY_MIN(r.begin, k.begin);
      r.end = HWY_MAX(r.end, k.end);
    }
    if (r.begin >= r.end) r = {0, 0};
    return r;
  }
  // The sink logit of query head bh (in [B·H]); -inf without sinks.
  float Sink(size_t bh) const {
    return sinks ? sinks[bh % heads] : -std::numeric_limits<float>::infinity();
  }
};

// A row's visible range [0, end) or [begin, n) as offsets into the tile
// [t0, t0 + n): clipped to the tile.
HWY_INLINE size_t EndInTile(size_t end, size_t t0, size_t n) {
  return end <= t0 ? 0 : HWY_MIN(end - t0, n);
}
HWY_INLINE size_t BeginInTile(size_t begin, size_t t0, size_t n) {
  return begin <= t0 ? 0 : HWY_MIN(begin - t0, n);
}

// Splits key tiles [0, ceil(tk / tile)) into at most max_chunks runs of
// about equal visible work, from the shape alone (never the thread count),
// leaving at least one tile per chunk. chunk_tile[c] is chunk c's first tile
// (chunk_tile[chunks] = the tile count); returns the number of chunks, which
// is smaller when the work sits in the last tiles.
inline size_t SplitKeyTiles(const AttentionPlan& p, size_t tile,
                            size_t max_chunks, size_t* chunk_tile) {
  const size_t tiles = (p.tk + tile - 1) / tile;
  const size_t chunks = HWY_MIN(max_chunks, tiles);
  double total = 0.0;
  for (size_t j = 0; j < p.tk; ++j) {
    total += static_cast<double>(p.QueriesOfKey(j));
  }
  chunk_tile[0] = 0;
  size_t c = 1;
  double seen = 0.0;
  for (size_t t = 0; t < tiles && c < chunks; ++t) {
    for (size_t j = t * tile; j < HWY_MIN(p.tk, (t + 1) * tile); ++j) {
      seen += static_cast<double>(p.QueriesOfKey(j));
    }
    // Close chunk c after tile t once it holds its share, leaving at least
    // one tile for each chunk still to come.
    if (seen >= total * static_cast<double>(c) / static_cast<double>(chunks) &&
        tiles - (t + 1) >= chunks - c) {
      chunk_tile[c++] = t + 1;
    }
  }
  chunk_tile[c] = tiles;
  return c;
}

// --- Work items --------------------------------------------------------------
// How a call is cut into items for the pool: from the shape alone, never the
// thread count, so results are bit-identical for any thread count.

// The forward's items when a group's rows fit one block (decode-shaped):
// the block is the whole group (its G heads' Tq rows, consecutive in q and
// out: each key tile is read once per KV head), and the keys any query sees
// are cut into chunks of kDecodeChunk; one item per (group, chunk). With
// more than one chunk the items leave partial states, merged afterwards.
struct DecodeSplit {
  struct Item {
    size_t group, chunk;
    IndexRange keys;
  };
  size_t groups;      // B · Hkv
  size_t group_rows;  // G · Tq
  size_t chunks;
  IndexRange keys;  // the keys any query sees

  explicit DecodeSplit(const AttentionPlan& p)
      : groups(p.bh_count / p.group),
        group_rows(p.group * p.tq),
        keys(p.AllKeysSeen()) {
    const size_t chunk = static_cast<size_t>(kDecodeChunk);
    chunks = HWY_MAX(size_t{1}, (keys.end - keys.begin + chunk - 1) / chunk);
  }
  size_t Items() const { return groups * chunks; }
  Item At(size_t item) const {
    const size_t chunk = item / groups;
    const size_t k0 = keys.begin + chunk * static_cast<size_t>(kDecodeChunk);
    const size_t k1 = HWY_MIN(k0 + static_cast<size_t>(kDecodeChunk), keys.end);
    return {item % groups, chunk, {k0, k1}};
  }
};

// The forward's other items: (query head, block of `block` query rows),
// every key. The blocks that see the most keys (causal: the last) go
// first, across heads, so the pool's largest-first order balances them.
struct QueryBlockSplit {
  struct Item {
    size_t bh;      // query head in [B·H]
    size_t q0, q1;  // its query rows
  };
  size_t bh_count, tq, block, blocks;

  QueryBlockSplit(const AttentionPlan& p, size_t block_)
      : bh_count(p.bh_count),
        tq(p.tq),
        block(block_),
        blocks((p.tq + block_ - 1) / block_) {}
  size_t Items() const { return bh_count * blocks; }
  Item At(size_t item) const {
    const size_t q0 = (blocks - 1 - item / bh_count) * block;
    return {item % bh_count, q0, HWY_MIN(q0 + block, tq)};
  }
};

// --- Workspace -------------------------------------------------------------

// Hands out consecutive buffers of a per-thread workspace, each rounded up
// to 16 floats (64-byte aligned when the base is). With a null base it only
// counts: Used() after the same Take calls is the per-thread size.
class WorkspaceCarver {
 public:
  explicit WorkspaceCarver(float* base) : base_(base) {}
  float* Take(size_t floats) {
    float* at = base_ ? base_ + used_ : nullptr;
    used_ += RoundUp(floats, 16);
    return at;
  }
  size_t Used() const { return used_; }

 private:
  float* base_;
  size_t used_ = 0;
};

// Floats of one thread's workspace W: W's constructor, given `args` and a
// counting carver.
template <class W, class... Args>
size_t WorkspaceFloats(const Args&... args) {
  WorkspaceCarver counter(nullptr);
  const W counted(args..., &counter);
  (void)counted;
  return counter.Used();
}

// One 64-byte aligned allocation per call: `threads` workspaces of
// `per_thread` floats (a multiple of 16), then `extra` floats shared by the
// call (partial results). Freed on destruction.
class CallBuffer {
 public:
  CallBuffer() = default;
  CallBuffer(const CallBuffer&) = delete;
  CallBuffer& operator=(const CallBuffer&) = delete;
  ~CallBuffer() { free(base_); }

  // kOutOfMemory when the sizes overflow or the allocation fails.
  Status Allocate(size_t per_thread, size_t threads, size_t extra) {
    size_t work;
    if (!internal::MulSize(per_thread, threads, &work) ||
        extra > SIZE_MAX / sizeof(float) / 2 ||
        work > SIZE_MAX / sizeof(float) / 2 - extra - 64) {
      return Status::kOutOfMemory;
    }
    const size_t total = RoundUp(work + extra, 16);
    base_ = static_cast<float*>(aligned_alloc(64, total * sizeof(float)));
    if (!base_) return Status::kOutOfMemory;
    per_thread_ = per_thread;
    work_ = work;
    return Status::kOk;
  }
  float* Thread(int thread) const {
    return base_ + static_cast<size_t>(thread) * per_thread_;
  }
  float* Extra() const { return base_ + work_; }

 private:
  float* base_ = nullptr;
  size_t per_thread_ = 0, work_ = 0;
};

// --- Padded rows -----------------------------------------------------------

// Rows [0, rows) of width `width` as rows of `padded` floats: the user's
// rows when no padding is needed, else a zero-padded copy in `buf`.
HWY_INLINE const float* PaddedRows(const float* src, size_t rows, size_t width,
                                   size_t padded, float* buf, size_t* ld) {
  if (width == padded) {
    *ld = width;
    return src;
  }
  for (size_t r = 0; r < rows; ++r) {
    memcpy(buf + r * padded, src + r * width, width * sizeof(float));
    memset(buf + r * padded + width, 0, (padded - width) * sizeof(float));
  }
  *ld = padded;
  return buf;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
