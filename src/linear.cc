// nn.Linear as a Highway GEMM, compiled once per SIMD target.
//
// Shapes: x [rows, in], weight [out, in] (PyTorch layout), bias [out] or
// null, y [rows, out]. Passes:
//   1. pack weightᵀ once into wt [in][out_pad] (panels of whole vectors),
//   2. per work item (a block of rows × a block of columns): the broadcast
//      microkernel of matmul-inl.h computes the tile (x rows broadcast, wt
//      panels loaded), 3. the tile plus bias is copied into y.
// Every element of y is computed by one item in a fixed order, so results
// do not depend on the thread count.

#include "src/linear.h"

#include <stdlib.h>
#include <string.h>

#include "src/internal.h"
#include "src/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/linear.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/matmul-inl.h"
#include "src/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

constexpr size_t kRowBlock = 32;   // rows per work item
constexpr size_t kColBlock = 128;  // columns per work item (whole panels)

Status LinearImpl(const float* x, int64_t rows_, int64_t in_, int64_t out_,
                  const float* weight, const float* bias, float* y) {
  const size_t rows = static_cast<size_t>(rows_);
  const size_t in = static_cast<size_t>(in_);
  const size_t out = static_cast<size_t>(out_);
  const size_t panel = PanelWidth();
  const size_t out_pad = RoundUp(out, panel);
  const size_t col_blocks = (out + kColBlock - 1) / kColBlock;
  const size_t row_blocks = (rows + kRowBlock - 1) / kRowBlock;

  ThreadPool& pool = GlobalPool();
  const double flops = 2.0 * static_cast<double>(rows) * in * out;
  // One tile per thread that may run an item.
  const int threads = pool.ThreadsFor(flops);
  size_t wt_floats, tile_floats = kRowBlock * kColBlock, total;
  if (!internal::MulSize(in, out_pad, &wt_floats) ||
      !internal::MulSize(tile_floats, static_cast<size_t>(threads), &total) ||
      wt_floats > SIZE_MAX / sizeof(float) / 2 - total) {
    return Status::kTooLarge;
  }
  total += wt_floats;
  float* buffer = static_cast<float*>(
      aligned_alloc(64, (total * sizeof(float) + 63) / 64 * 64));
  if (!buffer) return Status::kOutOfMemory;
  float* wt = buffer;
  float* tiles = buffer + wt_floats;

  // 1. wt[i][o] = weight[o][i], zero-padded to whole panels.
  for (size_t o = 0; o < out; ++o) {
    const float* row = weight + o * in;
    for (size_t i = 0; i < in; ++i) wt[i * out_pad + o] = row[i];
  }
  for (size_t i = 0; i < in; ++i) {
    memset(wt + i * out_pad + out, 0, (out_pad - out) * sizeof(float));
  }

  const auto run_item = [&](size_t item, int thread) {
    const size_t r0 = (item / col_blocks) * kRowBlock;
    const size_t c0 = (item % col_blocks) * kColBlock;
    const size_t nr = HWY_MIN(kRowBlock, rows - r0);
    const size_t nc = HWY_MIN(kColBlock, out - c0);
    float* tile = tiles + thread * tile_floats;
    // 2. The tile, over whole panels.
    MatMulPacked(x + r0 * in, in, nr, wt + c0, out_pad, in, RoundUp(nc, panel),
                 tile, kColBlock);
    // 3. Into y, with the bias.
    for (size_t r = 0; r < nr; ++r) {
      float* dst = y + (r0 + r) * out + c0;
      const float* src = tile + r * kColBlock;
      if (bias) {
        for (size_t c = 0; c < nc; ++c) dst[c] = src[c] + bias[c0 + c];
      } else {
        memcpy(dst, src, nc * sizeof(float));
      }
    }
  };
  const size_t items = row_blocks * col_blocks;
  pool.Run(items, flops, run_item);
  free(buffer);
  return Status::kOk;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {

HWY_EXPORT(LinearImpl);

Status Linear(const float* x, int64_t rows, int64_t in, int64_t out,
              const float* weight, const float* bias, float* y) {
  const Status st = ValidateLinear(x, rows, in, out, weight, y);
  if (st != Status::kOk) return st;
  return HWY_DYNAMIC_DISPATCH(LinearImpl)(x, rows, in, out, weight, bias, y);
}

}  // namespace causal_attention
#endif  // HWY_ONCE
