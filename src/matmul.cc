// MatMul, compiled once per SIMD target.
//
// Shapes: C [m, n] (+)= op(A) [m, k] · op(B) [k, n] (+ bias [n]).
// Passes:
//   1. pack op(B) once into bp [k][n_pad] (rows of whole panels, zero
//      padded), shared by every work item;
//   2. per work item (a block of kRowBlock rows × kColBlock columns of C):
//      the rows of op(A) (packed from Aᵀ when transpose_a), then the
//      broadcast microkernel of matmul-inl.h computes the tile;
//   3. the tile (plus C when accumulating, plus the bias) is stored into C.
// Every element of C is computed by one item in a fixed order, so results
// do not depend on the thread count.

#include "src/matmul.h"

#include <stdlib.h>
#include <string.h>

#include "src/internal.h"
#include "src/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/matmul-inl.h"
#include "src/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

constexpr size_t kRowBlock = 32;   // rows of C per work item
constexpr size_t kColBlock = 128;  // columns of C per work item (whole panels)

// bp[i][j] = op(B)[i][j] for j < n, zero up to n_pad.
void PackB(const MatMulShape& s, const float* b, size_t ldb, size_t n_pad,
           float* bp) {
  const size_t n = static_cast<size_t>(s.n), k = static_cast<size_t>(s.k);
  if (s.transpose_b) {
    for (size_t j = 0; j < n; ++j) {
      const float* row = b + j * ldb;
      for (size_t i = 0; i < k; ++i) bp[i * n_pad + j] = row[i];
    }
  } else {
    for (size_t i = 0; i < k; ++i) {
      memcpy(bp + i * n_pad, b + i * ldb, n * sizeof(float));
    }
  }
  for (size_t i = 0; i < k; ++i) {
    memset(bp + i * n_pad + n, 0, (n_pad - n) * sizeof(float));
  }
}

Status MatMulImpl(const MatMulShape& s, const float* a, int64_t lda_,
                  const float* b, int64_t ldb_, const float* bias, float* c,
                  int64_t ldc_) {
  const size_t m = static_cast<size_t>(s.m), n = static_cast<size_t>(s.n),
               k = static_cast<size_t>(s.k);
  const size_t lda = static_cast<size_t>(lda_), ldb = static_cast<size_t>(ldb_),
               ldc = static_cast<size_t>(ldc_);
  const size_t panel = PanelWidth();
  const size_t n_pad = RoundUp(n, panel);
  const size_t col_blocks = (n + kColBlock - 1) / kColBlock;
  const size_t row_blocks = (m + kRowBlock - 1) / kRowBlock;

  ThreadPool& pool = GlobalPool();
  const double flops = 2.0 * static_cast<double>(m) * n * k;
  // Per thread that may run an item: a tile, and rows of op(A) when A is
  // transposed.
  const int threads = pool.ThreadsFor(flops);
  const size_t a_floats = s.transpose_a ? kRowBlock * k : 0;
  const size_t per_thread = kRowBlock * kColBlock + a_floats;
  size_t bp_floats, scratch, total;
  if (!internal::MulSize(k, n_pad, &bp_floats) ||
      !internal::MulSize(per_thread, static_cast<size_t>(threads), &scratch) ||
      bp_floats > SIZE_MAX / sizeof(float) / 2 - scratch) {
    return Status::kTooLarge;
  }
  total = bp_floats + scratch;
  float* buffer = static_cast<float*>(
      aligned_alloc(64, RoundUp(total * sizeof(float), 64)));
  if (!buffer) return Status::kOutOfMemory;
  float* bp = buffer;

  // 1. op(B), packed.
  PackB(s, b, ldb, n_pad, bp);

  const auto run_item = [&](size_t item, int thread) {
    const size_t r0 = (item / col_blocks) * kRowBlock;
    const size_t c0 = (item % col_blocks) * kColBlock;
    const size_t nr = HWY_MIN(kRowBlock, m - r0);
    const size_t nc = HWY_MIN(kColBlock, n - c0);
    float* tile = buffer + bp_floats + thread * per_thread;
    // 2. The block's rows of op(A), then the tile over whole panels.
    const float* rows = a + r0 * lda;
    size_t ld_rows = lda;
    if (s.transpose_a) {
      float* at = tile + kRowBlock * kColBlock;
      for (size_t i = 0; i < k; ++i) {
        const float* src = a + i * lda + r0;
        for (size_t r = 0; r < nr; ++r) at[r * k + i] = src[r];
      }
      rows = at;
      ld_rows = k;
    }
    MatMulPacked(rows, ld_rows, nr, bp + c0, n_pad, k, RoundUp(nc, panel), tile,
                 kColBlock);
    // 3. Into C.
    for (size_t r = 0; r < nr; ++r) {
      float* dst = c + (r0 + r) * ldc + c0;
      const float* src = tile + r * kColBlock;
      for (size_t j = 0; j < nc; ++j) {
        float v = src[j];
        if (s.accumulate) v = dst[j] + v;
        if (bias) v += bias[c0 + j];
        dst[j] = v;
      }
    }
  };
  pool.Run(row_blocks * col_blocks, flops, run_item);
  free(buffer);
  return Status::kOk;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {

HWY_EXPORT(MatMulImpl);

Status MatMul(const MatMulShape& shape, const float* a, int64_t lda,
              const float* b, int64_t ldb, const float* bias, float* c,
              int64_t ldc) {
  const Status st = ValidateMatMul(shape, a, lda, b, ldb, c, ldc);
  if (st != Status::kOk) return st;
  return HWY_DYNAMIC_DISPATCH(MatMulImpl)(shape, a, lda, b, ldb, bias, c, ldc);
}

}  // namespace causal_attention
#endif  // HWY_ONCE
