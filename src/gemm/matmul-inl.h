// Register-blocked matrix-multiply microkernels of the broadcast kind: one
// scalar of A is broadcast and multiplied into two vectors (a panel) of B's
// row, MR rows of A at a time. Used by Linear (x · weightᵀ against the
// packed, transposed weight), the scalar target's Q·Kᵀ, and P·V.
//
// Conventions: "packed" buffers are 64-byte aligned with row strides that are
// multiples of the vector width (aligned Load/Store); user rows are not
// (LoadU), and A is read one scalar at a time, so any stride works.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_MATMUL_INL_H_
#undef CAUSAL_ATTENTION_SRC_MATMUL_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_MATMUL_INL_H_
#endif

#include <stddef.h>

#include "hwy/highway.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// c[r][j] (+)= sum_{i<depth} a[r][i] · b[i][j] for r < MR and j < ncols (a
// multiple of PanelWidth()). c is packed. kAccumulate: add to c, else
// overwrite it. kPackedB: b is packed (aligned loads); else b rows may be
// user memory (LoadU), as long as their width is a multiple of the panel.
template <size_t MR, bool kAccumulate, bool kPackedB>
HWY_INLINE void BroadcastMicrokernel(const float* HWY_RESTRICT a, size_t lda,
                                     const float* HWY_RESTRICT b, size_t ldb,
                                     size_t depth, size_t ncols,
                                     float* HWY_RESTRICT c, size_t ldc) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  for (size_t j = 0; j < ncols; j += 2 * N) {
    V acc0[MR], acc1[MR];
    for (size_t r = 0; r < MR; ++r) {
      acc0[r] = kAccumulate ? hn::Load(df, c + r * ldc + j) : hn::Zero(df);
      acc1[r] = kAccumulate ? hn::Load(df, c + r * ldc + j + N) : hn::Zero(df);
    }
    const float* HWY_RESTRICT bp = b + j;
    // Ends on a's address, not on a counter (StridedMicrokernel says why).
    for (const float* ai = a, *const a_end = a + depth; ai != a_end;
         ++ai, bp += ldb) {
      const V b0 = kPackedB ? hn::Load(df, bp) : hn::LoadU(df, bp);
      const V b1 = kPackedB ? hn::Load(df, bp + N) : hn::LoadU(df, bp + N);
      for (size_t r = 0; r < MR; ++r) {
        const V av = hn::Set(df, ai[r * lda]);
        acc0[r] = MulAddRelaxed(av, b0, acc0[r]);
        acc1[r] = MulAddRelaxed(av, b1, acc1[r]);
      }
    }
    for (size_t r = 0; r < MR; ++r) {
      hn::Store(acc0[r], df, c + r * ldc + j);
      hn::Store(acc1[r], df, c + r * ldc + j + N);
    }
  }
}

// The packed GEMM microkernel (MatMul): an MR x 2-vector tile of C held in
// 2·MR accumulators over kc steps of depth,
//   c[r][0..2N) = (c[r][..] if load_c, else 0) + Σ_i ap[i][r] · bp[i][0..2N)
//                 (+ bias[0..2N) if bias),
// ap packed [kc][MR] (one scalar per row and step: a load-splat each) and bp
// packed [kc][2N] (two aligned loads per step). c rows and bias are user
// memory (unaligned).
//
// Sized for wasm SIMD128 in V8 on x64 (MatMul uses MR = kGemmRows = 5): V8 allocates 15
// xmm registers and, without FMA, each mul+add needs a temporary, so 10
// accumulators + 2 vectors of B + a splat + the product fill 14 of them.
// MR = 6 (12 accumulators) spills one accumulator per step. Ten chains are
// enough: only the add is loop-carried. Not inlined: as its own function the
// loop has nesting depth 1, and V8 neither unrolls it (its unrolled copies
// hoisted the splats and spilled) nor mixes it with the caller's registers.
constexpr size_t kGemmRows = 5;  // the MR MatMul uses

template <size_t MR>
HWY_NOINLINE void GemmMicrokernel(size_t kc, const float* HWY_RESTRICT ap,
                                const float* HWY_RESTRICT bp,
                                float* HWY_RESTRICT c, size_t ldc, bool load_c,
                                const float* HWY_RESTRICT bias) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  V acc0[MR], acc1[MR];
  for (size_t r = 0; r < MR; ++r) {
    acc0[r] = load_c ? hn::LoadU(df, c + r * ldc) : hn::Zero(df);
    acc1[r] = load_c ? hn::LoadU(df, c + r * ldc + N) : hn::Zero(df);
  }
  for (size_t i = 0; i < kc; ++i) {
    const V b0 = hn::Load(df, bp);
    const V b1 = hn::Load(df, bp + N);
    for (size_t r = 0; r < MR; ++r) {
      const V av = hn::Set(df, ap[r]);
      acc0[r] = MulAddRelaxed(av, b0, acc0[r]);
      acc1[r] = MulAddRelaxed(av, b1, acc1[r]);
    }
    ap += MR;
    bp += 2 * N;
  }
  if (bias) {
    const V bias0 = hn::LoadU(df, bias);
    const V bias1 = hn::LoadU(df, bias + N);
    for (size_t r = 0; r < MR; ++r) {
      acc0[r] = hn::Add(acc0[r], bias0);
      acc1[r] = hn::Add(acc1[r], bias1);
    }
  }
  for (size_t r = 0; r < MR; ++r) {
    hn::StoreU(acc0[r], df, c + r * ldc);
    hn::StoreU(acc1[r], df, c + r * ldc + N);
  }
}

// The attention tiles of the transposed orientation (forward_transposed-
// inl.h, queries in lanes): a block's transposed queries qt [depth][lanes]
// and its scores / probabilities [keys][lanes] have rows of kLaneStride
// floats (a query block at most).
constexpr size_t kLaneStride = 32;

// The GEMM microkernel's loop (GemmMicrokernel) on operands where they lie:
// an MR x 2-vector tile
//   c[r][0..2N) = (c[r][..] if load_c, else 0)
//                 + Σ_{i<kc} a[r·a_row + i·a_step] · b[i·ldb + 0..2N),
// A read one scalar at a time (a load-splat each), b rows unaligned. A
// stride given as a template argument (kARow, kLdb; 0: the runtime one;
// a_step = kAStep always) becomes a constant offset in the loop instead of
// an address computed at every step (V8 does not fold the addresses). The
// loop's overhead (a stack check, V8's zero extension of each address, the
// increments and the exit test) is paid in the front end, which bounds
// these loops before the multiply-adds do, so the loop is shaped for V8:
// - it ends on a's address, not on a counter;
// - two steps per iteration, the second behind an exit test of its own: the
//   test puts the steps in basic blocks of their own, so that clang cannot
//   interleave them (interleaved, both steps' b vectors and splats are live
//   at once and an accumulator spills: its store and reload join the add
//   chain), and V8's stack check and zero extensions come once per two
//   steps;
// - the second step's a is a fresh value (the empty asm hides a + kAStep
//   from clang), so that its load-splats reuse the first step's offsets
//   (V8 keeps a base register per splat offset, and would add an lea per
//   splat for the second step's).
// V8's x64 loop before and after: docs/performance.md. Not inlined, for
// GemmMicrokernel's reasons.
template <size_t MR, size_t kARow, size_t kAStep, size_t kLdb>
HWY_NOINLINE void StridedMicrokernel(size_t kc, const float* HWY_RESTRICT a,
                                     size_t a_row,
                                     const float* HWY_RESTRICT b, size_t ldb,
                                     float* HWY_RESTRICT c, size_t ldc,
                                     bool load_c) {
  static_assert(kAStep > 0, "the loop ends on a's address");
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  if (kARow) a_row = kARow;
  if (kLdb) ldb = kLdb;
  V acc0[MR], acc1[MR];
  for (size_t r = 0; r < MR; ++r) {
    acc0[r] = load_c ? hn::LoadU(df, c + r * ldc) : hn::Zero(df);
    acc1[r] = load_c ? hn::LoadU(df, c + r * ldc + N) : hn::Zero(df);
  }
  const auto step = [&](const float* HWY_RESTRICT as,
                        const float* HWY_RESTRICT bs) HWY_ATTR {
    const V b0 = hn::LoadU(df, bs);
    const V b1 = hn::LoadU(df, bs + N);
    for (size_t r = 0; r < MR; ++r) {
      const V av = hn::Set(df, as[r * a_row]);
      acc0[r] = MulAddRelaxed(av, b0, acc0[r]);
      acc1[r] = MulAddRelaxed(av, b1, acc1[r]);
    }
  };
  const float* const a_end = a + kc * kAStep;
  while (a != a_end) {
    step(a, b);
    const float* a2 = a + kAStep;
    if (a2 == a_end) break;
    asm("" : "+r"(a2));
    step(a2, b + ldb);
    a += 2 * kAStep;
    b += 2 * ldb;
  }
  for (size_t r = 0; r < MR; ++r) {
    hn::StoreU(acc0[r], df, c + r * ldc);
    hn::StoreU(acc1[r], df, c + r * ldc + N);
  }
}

constexpr size_t kStridedRows = 4;  // the MR of the lane tiles

// Rows [0, MR) of a lane tile, panel by panel over ncols (a multiple of
// PanelWidth(), > 0). The first panel's call is its own call site: binaryen
// (wasm-opt -O3) inlines a function called from one place, however large,
// and the microkernel inside its caller's loops spills.
template <size_t MR, size_t kARow, size_t kAStep, size_t kLdb>
HWY_INLINE void StridedPanels(size_t depth, const float* HWY_RESTRICT a,
                              size_t a_row, const float* HWY_RESTRICT b,
                              size_t ldb, size_t ncols, float* HWY_RESTRICT c,
                              size_t ldc, bool load_c) {
  StridedMicrokernel<MR, kARow, kAStep, kLdb>(depth, a, a_row, b, ldb, c, ldc,
                                              load_c);
  for (size_t j = PanelWidth(); j < ncols; j += PanelWidth()) {
    StridedMicrokernel<MR, kARow, kAStep, kLdb>(depth, a, a_row, b + j, ldb,
                                                c + j, ldc, load_c);
  }
}

// Rows of LaneScores with key rows kLdk apart (0: ldk) and lane rows of kL.
template <size_t kLdk, size_t kL>
HWY_INLINE void LaneScoreRows(size_t kn, size_t depth,
                              const float* HWY_RESTRICT k, size_t ldk,
                              const float* HWY_RESTRICT qt, size_t lanes,
                              float* HWY_RESTRICT s) {
  constexpr size_t MR = kStridedRows;
  size_t j = 0;
  for (; j + MR <= kn; j += MR) {
    StridedPanels<MR, kLdk, 1, kL>(depth, k + j * ldk, ldk, qt, kL, lanes,
                                   s + j * kL, kL, false);
  }
  for (; j + 2 <= kn; j += 2) {
    StridedPanels<2, kLdk, 1, kL>(depth, k + j * ldk, ldk, qt, kL, lanes,
                                  s + j * kL, kL, false);
  }
  if (j < kn) {
    StridedPanels<1, kLdk, 1, kL>(depth, k + j * ldk, ldk, qt, kL, lanes,
                                  s + j * kL, kL, false);
  }
}

// The backward's tiles in the same orientation (attention_backward.cc): a
// query tile's transposed q and dO rows and its Sᵀ / dP̃ᵀ have rows of
// kWideLaneStride floats (its 64 queries).
constexpr size_t kWideLaneStride = 64;

// s[j][0..lanes) = Σ_{c<depth} k[j·ldk + c] · qt[c][0..lanes) for j < kn:
// the scores of kn keys (rows of k, as stored) against transposed queries;
// qt and s have rows of `stride` floats (kLaneStride: the forward's blocks,
// kWideLaneStride: the backward's tiles), lanes is a multiple of
// PanelWidth(). Key rows of 64 floats (head size 64) get the constant
// offsets.
HWY_INLINE void LaneScores(size_t kn, size_t depth, const float* HWY_RESTRICT k,
                           size_t ldk, const float* HWY_RESTRICT qt,
                           size_t lanes, float* HWY_RESTRICT s, size_t stride) {
  constexpr size_t L = kLaneStride, W = kWideLaneStride;
  if (stride == W) {
    if (ldk == 64) return LaneScoreRows<64, W>(kn, depth, k, ldk, qt, lanes, s);
    return LaneScoreRows<0, W>(kn, depth, k, ldk, qt, lanes, s);
  }
  if (ldk == 64) return LaneScoreRows<64, L>(kn, depth, k, ldk, qt, lanes, s);
  LaneScoreRows<0, L>(kn, depth, k, ldk, qt, lanes, s);
}

#if HWY_TARGET != HWY_SCALAR
// qt[c][i] = q[i·ldq + c] for c < d and rows i < rows, 0 for rows <= i < qp
// (qt rows of kL floats, qp <= kL): the transposed queries LaneScores takes,
// in 4x4 blocks (Transpose4x4), then the edges.
template <size_t kL>
HWY_INLINE void TransposeQueries(const float* HWY_RESTRICT q, size_t ldq,
                                 size_t d, size_t rows, size_t qp,
                                 float* HWY_RESTRICT qt) {
  constexpr size_t L = kL;
  const size_t rows4 = rows / 4 * 4, d4_end = d / 4 * 4;
  for (size_t i = 0; i < rows4; i += 4) {
    const float* r0 = q + i * ldq;
    for (size_t c = 0; c < d4_end; c += 4) {
      Transpose4x4(r0 + c, ldq, qt + c * L + i, L);
    }
    for (size_t c = d4_end; c < d; ++c) {
      for (size_t k = 0; k < 4; ++k) qt[c * L + i + k] = r0[k * ldq + c];
    }
  }
  for (size_t c = 0; c < d; ++c) {
    for (size_t i = rows4; i < qp; ++i) {
      qt[c * L + i] = i < rows ? q[i * ldq + c] : 0.0f;
    }
  }
}
#endif

// Rows [0, MR) of LaneValuesRagged (pt rows of kL floats): the keys below
// their smallest end together, the rest row by row.
template <size_t MR, size_t kL>
HWY_INLINE void LaneValueRows(const float* HWY_RESTRICT pt, const size_t* ends,
                              const float* HWY_RESTRICT v, size_t ldv,
                              size_t ncols, float* HWY_RESTRICT o, size_t ldo) {
  size_t shared = ends[0];
  for (size_t i = 1; i < MR; ++i) shared = HWY_MIN(shared, ends[i]);
  if (shared > 0) {
    StridedPanels<MR, 1, kL, 0>(shared, pt, 1, v, ldv, ncols, o, ldo, true);
  }
  for (size_t i = 0; i < MR; ++i) {
    if (ends[i] > shared) {
      StridedPanels<1, 1, kL, 0>(ends[i] - shared, pt + i + shared * kL, 1,
                                 v + shared * ldv, ldv, ncols, o + i * ldo,
                                 ldo, true);
    }
  }
}

template <size_t kL>
HWY_INLINE void LaneValueTile(const float* HWY_RESTRICT pt, size_t rows,
                              const size_t* ends, const float* HWY_RESTRICT v,
                              size_t ldv, size_t ncols, float* HWY_RESTRICT o,
                              size_t ldo) {
  constexpr size_t MR = kStridedRows;
  size_t r = 0;
  for (; r + MR <= rows; r += MR) {
    LaneValueRows<MR, kL>(pt + r, ends + r, v, ldv, ncols, o + r * ldo, ldo);
  }
  for (; r + 2 <= rows; r += 2) {
    LaneValueRows<2, kL>(pt + r, ends + r, v, ldv, ncols, o + r * ldo, ldo);
  }
  if (r < rows) {
    LaneValueRows<1, kL>(pt + r, ends + r, v, ldv, ncols, o + r * ldo, ldo);
  }
}

// o[r][0..ncols) += Σ_{j<ends[r]} pt[j][r] · v[j·ldv + 0..ncols) for r <
// rows: P·V with P transposed (rows of `stride` floats, one per key:
// kLaneStride, the forward's, or kWideLaneStride, the backward's dQ += dS·K
// from dSᵀ), each row over its own keys only (as MatMulAddRagged: a value
// row past a row's end never reaches it; each sum in its order);
// ncols a multiple of PanelWidth().
HWY_INLINE void LaneValuesRagged(const float* HWY_RESTRICT pt, size_t rows,
                                 const size_t* ends,
                                 const float* HWY_RESTRICT v, size_t ldv,
                                 size_t ncols, float* HWY_RESTRICT o,
                                 size_t ldo, size_t stride) {
  if (stride == kWideLaneStride) {
    return LaneValueTile<kWideLaneStride>(pt, rows, ends, v, ldv, ncols, o,
                                          ldo);
  }
  LaneValueTile<kLaneStride>(pt, rows, ends, v, ldv, ncols, o, ldo);
}

template <size_t MR>
HWY_INLINE void MatMulPackedMicrokernel(const float* HWY_RESTRICT a, size_t lda,
                                        const float* HWY_RESTRICT b, size_t ldb,
                                        size_t depth, size_t ncols,
                                        float* HWY_RESTRICT c, size_t ldc) {
  BroadcastMicrokernel<MR, false, true>(a, lda, b, ldb, depth, ncols, c, ldc);
}

// c = a · b for any number of rows of a; b is packed [depth][ldb].
HWY_INLINE void MatMulPacked(const float* HWY_RESTRICT a, size_t lda,
                             size_t rows, const float* HWY_RESTRICT b,
                             size_t ldb, size_t depth, size_t ncols,
                             float* HWY_RESTRICT c, size_t ldc) {
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    MatMulPackedMicrokernel<4>(a + r * lda, lda, b, ldb, depth, ncols,
                               c + r * ldc, ldc);
  }
  switch (rows - r) {
    case 3:
      MatMulPackedMicrokernel<3>(a + r * lda, lda, b, ldb, depth, ncols,
                                 c + r * ldc, ldc);
      break;
    case 2:
      MatMulPackedMicrokernel<2>(a + r * lda, lda, b, ldb, depth, ncols,
                                 c + r * ldc, ldc);
      break;
    case 1:
      MatMulPackedMicrokernel<1>(a + r * lda, lda, b, ldb, depth, ncols,
                                 c + r * ldc, ldc);
      break;
    default:
      break;
  }
}

template <size_t MR>
HWY_INLINE void MatMulAddMicrokernel(const float* HWY_RESTRICT a, size_t lda,
                                     size_t depth, const float* HWY_RESTRICT b,
                                     size_t ldb, size_t ncols,
                                     float* HWY_RESTRICT c, size_t ldc) {
  BroadcastMicrokernel<MR, true, false>(a, lda, b, ldb, depth, ncols, c, ldc);
}

// c += a · b where row r of a uses only depth [0, ends[r]) (ends[r] <= the
// rows of b). Terms beyond a row's end are never multiplied in, so a NaN in
// a row of b that the row must not see does not reach it (attention: P·V
// with each query's visible keys). Rows share the depth below a group's
// smallest end.
HWY_INLINE void MatMulAddRagged(const float* HWY_RESTRICT a, size_t lda,
                                size_t rows, const size_t* ends,
                                const float* HWY_RESTRICT b, size_t ldb,
                                size_t ncols, float* HWY_RESTRICT c,
                                size_t ldc) {
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    size_t shared = ends[r];
    for (size_t i = 1; i < 4; ++i) shared = HWY_MIN(shared, ends[r + i]);
    if (shared > 0) {
      MatMulAddMicrokernel<4>(a + r * lda, lda, shared, b, ldb, ncols,
                              c + r * ldc, ldc);
    }
    for (size_t i = 0; i < 4; ++i) {
      if (ends[r + i] > shared) {
        MatMulAddMicrokernel<1>(a + (r + i) * lda + shared, lda,
                                ends[r + i] - shared, b + shared * ldb, ldb,
                                ncols, c + (r + i) * ldc, ldc);
      }
    }
  }
  for (; r < rows; ++r) {
    if (ends[r] > 0) {
      MatMulAddMicrokernel<1>(a + r * lda, lda, ends[r], b, ldb, ncols,
                              c + r * ldc, ldc);
    }
  }
}

// c += a · b where row r of a uses only depth [begins[r], end): terms
// before a row's begin are never multiplied in (attention backward: key j's
// gradient sums over the queries that see it, a suffix of the query tile).
// Rows share the depth above a group's largest begin.
HWY_INLINE void MatMulAddRaggedBegin(const float* HWY_RESTRICT a, size_t lda,
                                     size_t rows, const size_t* begins,
                                     size_t end, const float* HWY_RESTRICT b,
                                     size_t ldb, size_t ncols,
                                     float* HWY_RESTRICT c, size_t ldc) {
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    size_t shared = begins[r];
    for (size_t i = 1; i < 4; ++i) shared = HWY_MAX(shared, begins[r + i]);
    shared = HWY_MIN(shared, end);
    if (shared < end) {
      MatMulAddMicrokernel<4>(a + r * lda + shared, lda, end - shared,
                              b + shared * ldb, ldb, ncols, c + r * ldc, ldc);
    }
    for (size_t i = 0; i < 4; ++i) {
      const size_t begin = begins[r + i];
      if (begin < shared) {
        MatMulAddMicrokernel<1>(a + (r + i) * lda + begin, lda, shared - begin,
                                b + begin * ldb, ldb, ncols, c + (r + i) * ldc,
                                ldc);
      }
    }
  }
  for (; r < rows; ++r) {
    if (begins[r] < end) {
      MatMulAddMicrokernel<1>(a + r * lda + begins[r], lda, end - begins[r],
                              b + begins[r] * ldb, ldb, ncols, c + r * ldc,
                              ldc);
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
