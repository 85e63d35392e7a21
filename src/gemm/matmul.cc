// MatMul, compiled once per SIMD target: a packed, register-blocked GEMM
// (the BLIS loop structure).
//
// Shapes: C [m, n] (+)= op(A) [m, k] · op(B) [k, n] (+ bias [n]).
// Blocking (fixed by the shape, never by the thread count):
//   microtile kMR (5) rows x nr (2 vectors: 8 floats on wasm) columns,
//   GemmMicrokernel of matmul-inl.h (why 5 rows: see there);
//   depth in passes of kc <= kMaxKC (256): a B micro-panel (kc x nr, 8 KiB)
//   stays in L1 while the item's micro-rows use it, the pass's packed B
//   (kc x n) in L2 for every item;
//   work items of kMC (40) rows x nc (<= kMaxNC) columns of C.
// Passes, for each depth pass in order (one pool job each, so one barrier):
//   1. pack the pass's rows of op(B) into panels [n/nr][kc][nr] (zero
//      padded), panels spread over the threads: the first pass's in a job
//      of its own, each next one into a second buffer within the job of the
//      pass before;
//   2. per work item: pack its rows of op(A) into micro-panels [kc][kMR]
//      (one scalar per row and step: the microkernel's splat loads);
//   3. microkernels over panels x micro-rows; C is loaded from the second
//      pass on (or when accumulating), the bias added in the last pass's
//      store; edge tiles go through a scratch tile.
// Every element of C is computed by one item per pass and the passes run in
// order, so results do not depend on the thread count.
// Fewer rows than a microtile (a decode step's single row): no packing;
// dot products against B's rows (op(B) = Bᵀ) or scaled rows of B added up,
// over column chunks.

#include "src/gemm/matmul.h"

#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "src/base/size_math.h"
#include "src/base/thread_pool.h"

#if defined(CA_GEMM_SIDE_MODULE)
// wasm builds with a newer clang at hand: GemmMicrokernel with
// f32x4.relaxed_madd, from a side module built from src/gemm/matmul_relaxed.cc
// (see there and CMakeLists.txt), where the engine has relaxed SIMD.
extern "C" int ca_gemm_relaxed_available(void);
extern "C" void ca_gemm_kernel_relaxed(size_t kc, const float* ap,
                                       const float* bp, float* c, size_t ldc,
                                       int load_c, const float* bias);
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/gemm/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/gemm/matmul-inl.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

constexpr size_t kMR = kGemmRows;  // rows of a microtile (GemmMicrokernel)
constexpr size_t kMaxKC = 256;    // depth per pass: a B micro-panel (kc x 2
                                  // vectors) stays in L1 across a block's rows
constexpr size_t kMC = 8 * kMR;   // rows of C per work item
constexpr size_t kMaxNC = 1024;   // columns of C per work item, at most
constexpr size_t kSkinnyRows = kMR;  // fewer rows: no packing (GEMV-like)
constexpr size_t kSkinnyCols = 128;  // columns per work item there

// Everything a work item needs, resolved once per call.
struct Plan {
  size_t m, n, k, lda, ldb, ldc;
  bool transpose_a, transpose_b, accumulate;
  const float* a;
  const float* b;
  const float* bias;
  float* c;
  size_t nr;          // panel width: the microtile's columns
  size_t n_pad;       // n rounded up to whole panels
  size_t kc;          // depth per pass
  size_t nc;          // columns per work item (whole panels)
  size_t row_blocks, col_blocks;
  bool relaxed;       // the relaxed-SIMD side module's kernel (wasm)
};

// Panel jp of op(B), depth [p0, p0 + kc), into bp:
// bp[jp][i][l] = op(B)[p0 + i][jp·nr + l], zeros past n.
void PackPanelB(const Plan& p, float* bp, size_t jp, size_t p0, size_t kc) {
  float* HWY_RESTRICT dst = bp + jp * kc * p.nr;
  const size_t j0 = jp * p.nr;
  const size_t valid = HWY_MIN(p.nr, p.n - j0);
  if (p.transpose_b) {
    for (size_t l = 0; l < valid; ++l) {
      const float* HWY_RESTRICT src = p.b + (j0 + l) * p.ldb + p0;
      for (size_t i = 0; i < kc; ++i) dst[i * p.nr + l] = src[i];
    }
    for (size_t l = valid; l < p.nr; ++l) {
      for (size_t i = 0; i < kc; ++i) dst[i * p.nr + l] = 0.0f;
    }
  } else if (valid == p.nr) {
    // A whole panel (nr = two vectors): vector copies, not a memcpy call
    // per 32-byte row (the calls cost more than the copies at this size).
    const DF df;
    const size_t N = hn::Lanes(df);
    const float* HWY_RESTRICT src = p.b + p0 * p.ldb + j0;
    for (size_t i = 0; i < kc; ++i, src += p.ldb) {
      hn::StoreU(hn::LoadU(df, src), df, dst + i * p.nr);
      hn::StoreU(hn::LoadU(df, src + N), df, dst + i * p.nr + N);
    }
  } else {
    for (size_t i = 0; i < kc; ++i) {
      memcpy(dst + i * p.nr, p.b + (p0 + i) * p.ldb + j0,
             valid * sizeof(float));
      memset(dst + i * p.nr + valid, 0, (p.nr - valid) * sizeof(float));
    }
  }
}

#if HWY_TARGET != HWY_SCALAR
// kMR whole rows of A (row stride lda), depth [0, kc), into one micro-panel:
// ap[i][r] = a[r][i]. Four steps of depth at a time: rows 0-3 through a 4x4
// transpose (four loads, four stores), the others one float each; the
// scalar loop stored one float per row and step, which made packing a
// large share of a product with few columns (the Learn model's projections).
HWY_INLINE void PackWholePanelA(const float* HWY_RESTRICT a, size_t lda,
                                size_t kc, float* HWY_RESTRICT ap) {
  static_assert(kMR >= 4, "the transpose fills four rows");
  size_t i = 0;
  for (; i + 4 <= kc; i += 4) {
    float* HWY_RESTRICT dst = ap + i * kMR;
    Transpose4x4(a + i, lda, dst, kMR);
    for (size_t r = 4; r < kMR; ++r) {
      for (size_t x = 0; x < 4; ++x) dst[x * kMR + r] = a[r * lda + i + x];
    }
  }
  for (; i < kc; ++i) {
    for (size_t r = 0; r < kMR; ++r) ap[i * kMR + r] = a[r * lda + i];
  }
}
#endif

// Rows [r0, r0 + rows) of op(A), depth [p0, p0 + kc), into micro-panels of
// kMR rows: ap[q][i][r] = op(A)[r0 + q·kMR + r][p0 + i], zeros past the rows.
void PackBlockA(const Plan& p, size_t r0, size_t rows, size_t p0, size_t kc,
                float* HWY_RESTRICT ap) {
  for (size_t q = 0; q * kMR < rows; ++q, ap += kc * kMR) {
    const size_t valid = HWY_MIN(kMR, rows - q * kMR);
    const size_t row0 = r0 + q * kMR;
    if (p.transpose_a) {
      // op(A) row r is column r of A: kMR neighbours per step of depth.
      if (valid == kMR) {
        // Whole micro-panels: kMR floats per step of depth, copied without
        // a memcpy call per step (in wasm the calls cost more than the
        // copies; the weight gradients' Aᵀ takes this path).
        for (size_t i = 0; i < kc; ++i) {
          const float* HWY_RESTRICT src = p.a + (p0 + i) * p.lda + row0;
          float* HWY_RESTRICT dst = ap + i * kMR;
          float row[kMR];
          for (size_t r = 0; r < kMR; ++r) row[r] = src[r];
          for (size_t r = 0; r < kMR; ++r) dst[r] = row[r];
        }
        continue;
      }
      for (size_t i = 0; i < kc; ++i) {
        const float* HWY_RESTRICT src = p.a + (p0 + i) * p.lda + row0;
        float* HWY_RESTRICT dst = ap + i * kMR;
        for (size_t r = 0; r < valid; ++r) dst[r] = src[r];
        for (size_t r = valid; r < kMR; ++r) dst[r] = 0.0f;
      }
    } else {
#if HWY_TARGET != HWY_SCALAR
      if (valid == kMR) {
        PackWholePanelA(p.a + row0 * p.lda + p0, p.lda, kc, ap);
        continue;
      }
#endif
      for (size_t r = 0; r < valid; ++r) {
        const float* HWY_RESTRICT src = p.a + (row0 + r) * p.lda + p0;
        for (size_t i = 0; i < kc; ++i) ap[i * kMR + r] = src[i];
      }
      for (size_t r = valid; r < kMR; ++r) {
        for (size_t i = 0; i < kc; ++i) ap[i * kMR + r] = 0.0f;
      }
    }
  }
}

// Per-thread scratch of the packed path.
struct Scratch {
  float* ap;    // [kMC][kc]: the item's rows of op(A), packed
  float* tile;  // [kMR][nr]: an edge tile of C
  float* bias;  // [nr]: an edge panel's bias, zero padded
  static size_t Floats(const Plan& p) {
    return RoundUp(kMC * p.kc, 16) + RoundUp(kMR * p.nr, 16) +
           RoundUp(p.nr, 16);
  }
  static Scratch Carve(const Plan& p, float* base) {
    Scratch s;
    s.ap = base;
    s.tile = s.ap + RoundUp(kMC * p.kc, 16);
    s.bias = s.tile + RoundUp(kMR * p.nr, 16);
    return s;
  }
};

// Whether MatMul runs the relaxed-SIMD side module's kernel (decided on the
// calling thread, once per call; the pool's items follow the plan).
HWY_INLINE bool RelaxedKernel() {
#if defined(CA_GEMM_SIDE_MODULE) && HWY_TARGET == HWY_WASM
  return ActiveGemmKernel() == GemmKernel::kRelaxedSimd;
#else
  return false;
#endif
}

// One microtile: GemmMicrokernel, or the same kernel compiled with
// f32x4.relaxed_madd in the side module.
HWY_INLINE void Microtile(const Plan& p, size_t kc, const float* ap,
                          const float* bp, float* c, size_t ldc, bool load_c,
                          const float* bias) {
#if defined(CA_GEMM_SIDE_MODULE) && HWY_TARGET == HWY_WASM
  if (p.relaxed) {
    ca_gemm_kernel_relaxed(kc, ap, bp, c, ldc, load_c ? 1 : 0, bias);
    return;
  }
#endif
  (void)p;
  GemmMicrokernel<kMR>(kc, ap, bp, c, ldc, load_c, bias);
}

// A tile of C that is not a whole kMR x nr microtile: computed in the
// scratch tile, then its valid part copied out.
void EdgeTile(const Plan& p, size_t kc, const float* ap, const float* bpan,
              float* c, size_t rows, size_t cols, bool load_c,
              const float* bias, const Scratch& s) {
  for (size_t r = 0; r < kMR; ++r) {
    for (size_t j = 0; j < p.nr; ++j) {
      s.tile[r * p.nr + j] =
          (load_c && r < rows && j < cols) ? c[r * p.ldc + j] : 0.0f;
    }
  }
  if (bias) {
    for (size_t j = 0; j < p.nr; ++j) s.bias[j] = j < cols ? bias[j] : 0.0f;
  }
  Microtile(p, kc, ap, bpan, s.tile, p.nr, load_c, bias ? s.bias : nullptr);
  if (cols == p.nr) {
    // Whole rows (the usual edge: fewer than kMR rows left): two vectors
    // each, not a memcpy call per row.
    const DF df;
    const size_t N = hn::Lanes(df);
    for (size_t r = 0; r < rows; ++r) {
      hn::StoreU(hn::LoadU(df, s.tile + r * p.nr), df, c + r * p.ldc);
      hn::StoreU(hn::LoadU(df, s.tile + r * p.nr + N), df, c + r * p.ldc + N);
    }
    return;
  }
  for (size_t r = 0; r < rows; ++r) {
    memcpy(c + r * p.ldc, s.tile + r * p.nr, cols * sizeof(float));
  }
}

// One work item of one pass: rows [r0, r0 + kMC) x columns [c0, c0 + nc) of
// C, depth [p0, p0 + kc). Passes run in order (each a pool.Run of its own),
// so every element's sum has a fixed order.
void GemmItem(const Plan& p, const float* bp, size_t item, size_t p0,
              size_t kc, const Scratch& s) {
  // Column block major: consecutive items (on any thread) share the same
  // nc columns of the pass's packed B, which then stay in L2.
  const size_t r0 = (item % p.row_blocks) * kMC;
  const size_t c0 = (item / p.row_blocks) * p.nc;
  const size_t rows = HWY_MIN(kMC, p.m - r0);
  const size_t c1 = HWY_MIN(c0 + p.nc, p.n);
  PackBlockA(p, r0, rows, p0, kc, s.ap);
  const bool load_c = p0 > 0 || p.accumulate;
  const bool last = p0 + kc == p.k;
  for (size_t j = c0; j < c1; j += p.nr) {
    const float* bpan = bp + (j / p.nr) * kc * p.nr;
    const size_t cols = HWY_MIN(p.nr, p.n - j);
    const float* bias = (last && p.bias) ? p.bias + j : nullptr;
    for (size_t q = 0; q * kMR < rows; ++q) {
      const float* ap = s.ap + q * kc * kMR;
      float* c = p.c + (r0 + q * kMR) * p.ldc + j;
      const size_t mr = HWY_MIN(kMR, rows - q * kMR);
      if (mr == kMR && cols == p.nr) {
        Microtile(p, kc, ap, bpan, c, p.ldc, load_c, bias);
      } else {
        EdgeTile(p, kc, ap, bpan, c, mr, cols, load_c, bias, s);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Skinny path (m < kSkinnyRows: a decode step's single row, a few rows):
// packing B would cost more than the product. Work items are column chunks.

// c[r][j] for columns [j0, j1) when op(B) = Bᵀ: dot products of op(A) rows
// (contiguous) with B's rows. arows: m rows of op(A), row stride k.
void SkinnyDotItem(const Plan& p, const float* arows, size_t j0, size_t j1) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  for (size_t j = j0; j < j1; ++j) {
    const float* HWY_RESTRICT brow = p.b + j * p.ldb;
    for (size_t r = 0; r < p.m; ++r) {
      const float* HWY_RESTRICT arow = arows + r * p.k;
      V s0 = hn::Zero(df), s1 = hn::Zero(df), s2 = hn::Zero(df),
        s3 = hn::Zero(df);
      size_t i = 0;
      for (; i + 4 * N <= p.k; i += 4 * N) {
        s0 = hn::MulAdd(hn::LoadU(df, arow + i), hn::LoadU(df, brow + i), s0);
        s1 = hn::MulAdd(hn::LoadU(df, arow + i + N),
                        hn::LoadU(df, brow + i + N), s1);
        s2 = hn::MulAdd(hn::LoadU(df, arow + i + 2 * N),
                        hn::LoadU(df, brow + i + 2 * N), s2);
        s3 = hn::MulAdd(hn::LoadU(df, arow + i + 3 * N),
                        hn::LoadU(df, brow + i + 3 * N), s3);
      }
      for (; i + N <= p.k; i += N) {
        s0 = hn::MulAdd(hn::LoadU(df, arow + i), hn::LoadU(df, brow + i), s0);
      }
      float sum = hn::GetLane(
          hn::SumOfLanes(df, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
      for (; i < p.k; ++i) sum += arow[i] * brow[i];
      float* out = p.c + r * p.ldc + j;
      float v = sum;
      if (p.accumulate) v = *out + v;
      if (p.bias) v += p.bias[j];
      *out = v;
    }
  }
}

// c[r][j0, j1) when op(B) = B: rows of B scaled by op(A)[r][i] and added,
// in order of i. acc: [m][kSkinnyCols] scratch.
void SkinnyAxpyItem(const Plan& p, const float* arows, size_t j0, size_t j1,
                    float* HWY_RESTRICT acc) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t cols = j1 - j0;
  const size_t vec_cols = cols / N * N;
  for (size_t r = 0; r < p.m; ++r) {
    memset(acc + r * kSkinnyCols, 0, kSkinnyCols * sizeof(float));
  }
  for (size_t i = 0; i < p.k; ++i) {
    const float* HWY_RESTRICT brow = p.b + i * p.ldb + j0;
    for (size_t r = 0; r < p.m; ++r) {
      const float av = arows[r * p.k + i];
      float* HWY_RESTRICT arow_acc = acc + r * kSkinnyCols;
      const auto vav = hn::Set(df, av);
      size_t j = 0;
      for (; j < vec_cols; j += N) {
        hn::Store(hn::MulAdd(vav, hn::LoadU(df, brow + j),
                             hn::Load(df, arow_acc + j)),
                  df, arow_acc + j);
      }
      for (; j < cols; ++j) arow_acc[j] += av * brow[j];
    }
  }
  for (size_t r = 0; r < p.m; ++r) {
    float* out = p.c + r * p.ldc + j0;
    for (size_t j = 0; j < cols; ++j) {
      float v = acc[r * kSkinnyCols + j];
      if (p.accumulate) v = out[j] + v;
      if (p.bias) v += p.bias[j0 + j];
      out[j] = v;
    }
  }
}

Status SkinnyMatMul(const Plan& p) {
  // op(A)'s rows made contiguous (m·k floats), then per thread the
  // accumulator rows of the axpy form.
  const size_t per_thread = kSkinnyRows * kSkinnyCols;
  ThreadPool& pool = GlobalPool();
  const double flops = 2.0 * static_cast<double>(p.m) * p.n * p.k;
  const int threads = pool.ThreadsFor(flops);
  size_t a_floats;
  if (!internal::MulSize(p.m, p.k, &a_floats) ||
      a_floats > SIZE_MAX / sizeof(float) / 2) {
    return Status::kTooLarge;
  }
  const size_t total = RoundUp(a_floats, 16) + per_thread * threads;
  float* buffer = static_cast<float*>(
      aligned_alloc(64, RoundUp(total * sizeof(float), 64)));
  if (!buffer) return Status::kOutOfMemory;
  float* arows = buffer;
  for (size_t r = 0; r < p.m; ++r) {
    for (size_t i = 0; i < p.k; ++i) {
      arows[r * p.k + i] =
          p.transpose_a ? p.a[i * p.lda + r] : p.a[r * p.lda + i];
    }
  }
  float* acc = buffer + RoundUp(a_floats, 16);
  const size_t chunks = (p.n + kSkinnyCols - 1) / kSkinnyCols;
  pool.Run(chunks, flops, [&](size_t item, int thread) {
    const size_t j0 = item * kSkinnyCols;
    const size_t j1 = HWY_MIN(j0 + kSkinnyCols, p.n);
    if (p.transpose_b) {
      SkinnyDotItem(p, arows, j0, j1);
    } else {
      SkinnyAxpyItem(p, arows, j0, j1, acc + thread * per_thread);
    }
  });
  free(buffer);
  return Status::kOk;
}

Status MatMulImpl(const MatMulShape& s, const float* a, int64_t lda,
                  const float* b, int64_t ldb, const float* bias, float* c,
                  int64_t ldc) {
  Plan p;
  p.m = static_cast<size_t>(s.m);
  p.n = static_cast<size_t>(s.n);
  p.k = static_cast<size_t>(s.k);
  p.lda = static_cast<size_t>(lda);
  p.ldb = static_cast<size_t>(ldb);
  p.ldc = static_cast<size_t>(ldc);
  p.transpose_a = s.transpose_a;
  p.transpose_b = s.transpose_b;
  p.accumulate = s.accumulate;
  p.a = a;
  p.b = b;
  p.bias = bias;
  p.c = c;
  if (p.m < kSkinnyRows) return SkinnyMatMul(p);

  // Blocking depends on the shape only, never on the thread count.
  p.relaxed = RelaxedKernel();
  p.nr = PanelWidth();
  p.n_pad = RoundUp(p.n, p.nr);
  const size_t passes = (p.k + kMaxKC - 1) / kMaxKC;
  p.kc = (p.k + passes - 1) / passes;
  const size_t col_blocks = (p.n_pad + kMaxNC - 1) / kMaxNC;
  p.nc = RoundUp((p.n_pad + col_blocks - 1) / col_blocks, p.nr);
  p.col_blocks = (p.n + p.nc - 1) / p.nc;
  p.row_blocks = (p.m + kMC - 1) / kMC;

  ThreadPool& pool = GlobalPool();
  const double flops = 2.0 * static_cast<double>(p.m) * p.n * p.k;
  const int threads = pool.ThreadsFor(flops);
  const size_t per_thread = RoundUp(Scratch::Floats(p), 16);
  size_t bp_floats, scratch;
  if (!internal::MulSize(p.kc, p.n_pad, &bp_floats) ||
      !internal::MulSize(per_thread, static_cast<size_t>(threads), &scratch) ||
      bp_floats > SIZE_MAX / sizeof(float) / 4 - scratch) {
    return Status::kTooLarge;
  }
  // Two buffers of one pass's packed op(B) ([n_pad / nr][kc][nr]), then the
  // threads' scratch.
  const size_t bp_stride = RoundUp(bp_floats, 16);
  const size_t total = 2 * bp_stride + scratch;
  float* buffer = static_cast<float*>(
      aligned_alloc(64, RoundUp(total * sizeof(float), 64)));
  if (!buffer) return Status::kOutOfMemory;
  float* const bps[2] = {buffer, buffer + bp_stride};
  float* scratch_base = buffer + 2 * bp_stride;

  // Packing op(B) for a pass: groups of panels, spread over the threads.
  const size_t panels = p.n_pad / p.nr;
  constexpr size_t kPanelsPerItem = 8;
  const size_t pack_items = (panels + kPanelsPerItem - 1) / kPanelsPerItem;
  const auto pack = [&](float* bp, size_t p0, size_t kc, size_t item) {
    const size_t end = HWY_MIN(panels, (item + 1) * kPanelsPerItem);
    for (size_t jp = item * kPanelsPerItem; jp < end; ++jp) {
      PackPanelB(p, bp, jp, p0, kc);
    }
  };
  const size_t blocks = p.row_blocks * p.col_blocks;

  // 1. The first pass's op(B).
  const size_t kc0 = HWY_MIN(p.kc, p.k);
  pool.Run(pack_items, flops,
           [&](size_t item, int) { pack(bps[0], 0, kc0, item); });
  size_t pass = 0;
  for (size_t p0 = 0; p0 < p.k; p0 += p.kc, ++pass) {
    const size_t kc = HWY_MIN(p.kc, p.k - p0);
    const size_t next_p0 = p0 + kc;
    const size_t next_items = next_p0 < p.k ? pack_items : 0;
    const size_t next_kc = next_items ? HWY_MIN(p.kc, p.k - next_p0) : 0;
    // 2-3. One job per pass (one barrier): blocks of C (pack their rows of
    // op(A), microkernels over the panels of this pass's op(B)), and the
    // next pass's op(B) packed into the other buffer, first.
    const float* bp = bps[pass & 1];
    float* next_bp = bps[(pass + 1) & 1];
    pool.Run(next_items + blocks, flops, [&](size_t item, int thread) {
      if (item < next_items) {
        pack(next_bp, next_p0, next_kc, item);
      } else {
        GemmItem(p, bp, item - next_items, p0, kc,
                 Scratch::Carve(p, scratch_base + thread * per_thread));
      }
    });
  }
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

namespace {
std::atomic<bool> relaxed_gemm_allowed{true};
}  // namespace

void AllowRelaxedGemmKernel(bool allowed) {
  relaxed_gemm_allowed.store(allowed, std::memory_order_relaxed);
}

GemmKernel ActiveGemmKernel() {
#if defined(CA_GEMM_SIDE_MODULE)
  // The same answer in every thread's copy of the glue (one engine).
  static const bool available = ca_gemm_relaxed_available() != 0;
  if (available && relaxed_gemm_allowed.load(std::memory_order_relaxed)) {
    return GemmKernel::kRelaxedSimd;
  }
#endif
  return GemmKernel::kSimd;
}

Status MatMul(const MatMulShape& shape, const float* a, int64_t lda,
              const float* b, int64_t ldb, const float* bias, float* c,
              int64_t ldc) {
  const Status st = ValidateMatMul(shape, a, lda, b, ldb, c, ldc);
  if (st != Status::kOk) return st;
  return HWY_DYNAMIC_DISPATCH(MatMulImpl)(shape, a, lda, b, ldb, bias, c, ldc);
}

}  // namespace causal_attention
#endif  // HWY_ONCE
