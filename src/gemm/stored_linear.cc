// Linear on stored weights (stored_linear.h): the few-row kernels (GEMV)
// per SIMD target, the many-row path (float32 panels through MatMul) and the
// scalar oracle.
//
// Shapes: x [rows, in], W stored [out, in] (row_bytes = KvRowBytes(dtype,
// in) apart), y [rows, out].
// GEMV passes, per call:
//   1. x prepared once (PrepareInt8X / PrepareBf16X) into a workspace the
//      kernels read with whole-vector loads: int8 — int16 values per block
//      of 32 and a scale per block, zero-padded to whole blocks; bfloat16 —
//      each chunk of one uint16 vector's values split into its even- and
//      odd-indexed values (what a bfloat16 vector widens into, as two
//      float vectors, without a shuffle).
//   2. For each block of kColumnsPerItem output columns (a pool item) and
//      each group of up to four rows: every stored row read once, its
//      products with the group's rows summed per lane, the lanes summed,
//      plus the bias.

#include "src/gemm/stored_linear.h"

#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <memory>

#include "src/base/size_math.h"
#include "src/base/thread_pool.h"
#include "src/gemm/linear.h"
#include "src/gemm/matmul.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/gemm/stored_linear.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

namespace causal_attention {
namespace {
#ifndef CAUSAL_ATTENTION_STORED_LINEAR_ONCE
#define CAUSAL_ATTENTION_STORED_LINEAR_ONCE
struct FreeDeleter {
  void operator()(void* p) const { free(p); }
};
#endif
}  // namespace
}  // namespace causal_attention

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kGroupRows = 4;
constexpr size_t kColumnsPerItem = 32;

// What the kernels read besides W: the prepared rows of x (pass 1).
struct PreparedX {
  const int16_t* q = nullptr;  // int8: [rows, padded] int16
  const float* f = nullptr;    // bfloat16: [rows, padded] split chunks
  const float* scale = nullptr;  // int8: [rows, blocks]
  size_t padded = 0;
  size_t blocks = 0;
};

// Pass 1, int8: each block's largest |x| (NaN when a value is not finite)
// / 32767 as its scale, and round(x · 32767 / largest) to nearest even.
void PrepareInt8X(const float* x, size_t rows, size_t in, size_t padded,
                  int16_t* q, float* scale) {
  const size_t blocks = padded / kInt8Block;
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * in;
    for (size_t b = 0; b < blocks; ++b) {
      const size_t b0 = b * kInt8Block;
      const size_t b1 = HWY_MIN(b0 + kInt8Block, in);
      float m = 0.0f;
      for (size_t i = b0; i < b1; ++i) {
        m = std::isfinite(xr[i]) && !(m != m) ? HWY_MAX(m, std::fabs(xr[i]))
                                              : std::nanf("");
      }
      scale[r * blocks + b] = m / 32767.0f;
      const float inv = m > 0.0f ? 32767.0f / m : 0.0f;
      int16_t* qr = q + r * padded;
      for (size_t i = b0; i < b0 + kInt8Block; ++i) {
        const float v = i < b1 && m > 0.0f ? std::nearbyint(xr[i] * inv) : 0.0f;
        qr[i] = static_cast<int16_t>(HWY_MIN(32767.0f, HWY_MAX(-32767.0f, v)));
      }
    }
  }
}

// Pass 1, bfloat16: chunks of 2·half values as [even-indexed, odd-indexed]
// (half each); the tail (in % (2·half) values) as it is.
void PrepareBf16X(const float* x, size_t rows, size_t in, size_t half,
                  float* f) {
  const size_t chunk = 2 * half;
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * in;
    float* fr = f + r * in;
    size_t i = 0;
    for (; half && i + chunk <= in; i += chunk) {
      for (size_t j = 0; j < half; ++j) {
        fr[i + j] = xr[i + 2 * j];
        fr[i + half + j] = xr[i + 2 * j + 1];
      }
    }
    for (; i < in; ++i) fr[i] = xr[i];
  }
}

// Pass 2, int8, for R rows of x: integer dot products per block (16-bit
// products, int32 sums: |sum| <= 32 · 127 · 32767 < 2^31), times the
// weight's and the row's block scales, summed in float. One stored row at
// a time, read front to back: measured on wasm at GPT-2's out_head (768 ×
// 50257, 43 MB), four rows read at once streamed at a quarter of one row's
// rate.
#if HWY_TARGET == HWY_SCALAR
template <size_t R>
HWY_NOINLINE void Int8Columns(const PreparedX& px, size_t r0,
                              const uint8_t* w, size_t row_bytes, size_t in,
                              size_t o0, size_t o1, const float* bias,
                              float* y, size_t out) {
  const hn::Sisd<int16_t> d16;
  const hn::Repartition<int32_t, decltype(d16)> d32;
  const hn::Rebind<float, decltype(d32)> df;
  const int16_t* xq = px.q + r0 * px.padded;
  const float* xs = px.scale + r0 * px.blocks;
  for (size_t o = o0; o < o1; ++o) {
    const uint8_t* row = w + o * row_bytes;
    const int8_t* q = reinterpret_cast<const int8_t*>(row);
    hn::Vec<decltype(df)> acc[R];
    for (size_t r = 0; r < R; ++r) acc[r] = hn::Zero(df);
    for (size_t b = 0; b < px.blocks; ++b) {
      hn::Vec<decltype(d32)> sum0[R], sum1[R];
      for (size_t r = 0; r < R; ++r) sum0[r] = sum1[r] = hn::Zero(d32);
      const size_t b0 = b * kInt8Block;
      // The last block may run past `in`: those int8 values (the row's
      // scales, the next row, the padding) meet x's zero padding.
      for (size_t j = b0; j < b0 + kInt8Block; ++j) {
        const auto lo = hn::PromoteTo(d16, hn::LoadU(hn::Sisd<int8_t>(), q + j));
        for (size_t r = 0; r < R; ++r) {
          const int16_t* x = xq + r * px.padded + j;
          sum0[r] = hn::ReorderWidenMulAccumulate(d32, lo, hn::LoadU(d16, x),
                                                  sum0[r], sum1[r]);
        }
      }
      float ws;
      memcpy(&ws, row + in + b * sizeof(float), sizeof(ws));
      for (size_t r = 0; r < R; ++r) {
        const auto sums = hn::ConvertTo(
            df, hn::RearrangeToOddPlusEven(sum0[r], sum1[r]));
        acc[r] = hn::MulAdd(sums, hn::Set(df, ws * xs[r * px.blocks + b]),
                            acc[r]);
      }
    }
    const float bo = bias ? bias[o] : 0.0f;
    for (size_t r = 0; r < R; ++r) {
      y[(r0 + r) * out + o] = hn::GetLane(hn::SumOfLanes(df, acc[r])) + bo;
    }
  }
}
#else
using D16x8 = hn::FixedTag<int16_t, 8>;
using D32x4 = hn::FixedTag<int32_t, 4>;
using DFx4 = hn::FixedTag<float, 4>;

// Eight stored int8 values widened to int16 (wasm: one v128.load8x8_s).
HWY_INLINE hn::Vec<D16x8> LoadWidened(const int8_t* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_WASM
  return hn::Vec<D16x8>{wasm_i16x8_load8x8(p)};
#else
  return hn::PromoteTo(D16x8(), hn::LoadU(hn::FixedTag<int8_t, 8>(), p));
#endif
}

// {sum of a's lanes, of b's, of c's, of d's}: exact in int32.
HWY_INLINE hn::Vec<D32x4> SumsOfFour(hn::Vec<D32x4> a, hn::Vec<D32x4> b,
                                     hn::Vec<D32x4> c, hn::Vec<D32x4> d) {
  const D32x4 d32;
  const auto ab = hn::Add(hn::InterleaveLower(d32, a, b),
                          hn::InterleaveUpper(d32, a, b));
  const auto cd = hn::Add(hn::InterleaveLower(d32, c, d),
                          hn::InterleaveUpper(d32, c, d));
  return hn::Add(hn::ConcatLowerLower(d32, cd, ab),
                 hn::ConcatUpperUpper(d32, cd, ab));
}

// Block `b` of the stored row q (32 int8 values, widened eight at a time)
// times block b of each of the R prepared rows of x: int32 lanes per row,
// whose sum is the block's integer product.
template <size_t R>
HWY_INLINE void BlockSums(const int8_t* HWY_RESTRICT q,
                          const int16_t* HWY_RESTRICT xq, size_t padded,
                          size_t b, hn::Vec<D32x4>* sums) {
  const D32x4 d32;
  const D16x8 d16;
  const size_t b0 = b * kInt8Block;
  hn::Vec<D32x4> unused = hn::Zero(d32);
  for (size_t r = 0; r < R; ++r) sums[r] = hn::Zero(d32);
  for (size_t j = b0; j < b0 + kInt8Block; j += 8) {
    const auto wv = LoadWidened(q + j);
    for (size_t r = 0; r < R; ++r) {
      sums[r] = hn::ReorderWidenMulAccumulate(
          d32, wv, hn::LoadU(d16, xq + r * padded + j), sums[r], unused);
    }
  }
}

// The vector targets: four blocks at a time, their integer sums reduced
// into one vector's lanes (block k in lane k), converted once and scaled by
// four blocks' scale products at once (one load each of the row's and x's
// consecutive scales): lane k of acc sums blocks k, k + 4, ... in order; the
// last 1–3 blocks fill the lanes they have (zero scales in the others).
template <size_t R>
HWY_NOINLINE void Int8Columns(const PreparedX& px, size_t r0,
                              const uint8_t* w, size_t row_bytes, size_t in,
                              size_t o0, size_t o1, const float* bias,
                              float* y, size_t out) {
  const D32x4 d32;
  const DFx4 df;
  const int16_t* xq = px.q + r0 * px.padded;
  const float* xs = px.scale + r0 * px.blocks;
  const size_t whole = px.blocks & ~size_t{3};
  for (size_t o = o0; o < o1; ++o) {
    const uint8_t* row = w + o * row_bytes;
    const int8_t* q = reinterpret_cast<const int8_t*>(row);
    // The row's block scales follow its `in` int8 values (kv_storage.h):
    // unaligned floats.
    const float* wscale = reinterpret_cast<const float*>(row + in);
    hn::Vec<DFx4> acc[R];
    for (size_t r = 0; r < R; ++r) acc[r] = hn::Zero(df);
    size_t b = 0;
    for (; b < whole; b += 4) {
      hn::Vec<D32x4> s0[R], s1[R], s2[R], s3[R];
      BlockSums<R>(q, xq, px.padded, b, s0);
      BlockSums<R>(q, xq, px.padded, b + 1, s1);
      BlockSums<R>(q, xq, px.padded, b + 2, s2);
      BlockSums<R>(q, xq, px.padded, b + 3, s3);
      const auto ws = hn::LoadU(df, wscale + b);
      for (size_t r = 0; r < R; ++r) {
        const auto sums = hn::ConvertTo(df, SumsOfFour(s0[r], s1[r], s2[r], s3[r]));
        acc[r] = hn::MulAdd(sums, hn::Mul(ws, hn::LoadU(df, xs + r * px.blocks + b)),
                            acc[r]);
      }
    }
    if (b < px.blocks) {
      // The last 1–3 blocks: missing ones are zero sums with zero scales.
      hn::Vec<D32x4> s[4][R];
      HWY_ALIGN float scales[R][4] = {};
      for (size_t k = 0; k < 4; ++k) {
        if (b + k < px.blocks) {
          BlockSums<R>(q, xq, px.padded, b + k, s[k]);
          float wk;
          memcpy(&wk, row + in + (b + k) * sizeof(float), sizeof(wk));
          for (size_t r = 0; r < R; ++r) scales[r][k] = wk * xs[r * px.blocks + b + k];
        } else {
          for (size_t r = 0; r < R; ++r) s[k][r] = hn::Zero(d32);
        }
      }
      for (size_t r = 0; r < R; ++r) {
        const auto sums = hn::ConvertTo(df, SumsOfFour(s[0][r], s[1][r], s[2][r], s[3][r]));
        acc[r] = hn::MulAdd(sums, hn::Load(df, scales[r]), acc[r]);
      }
    }
    const float bo = bias ? bias[o] : 0.0f;
    for (size_t r = 0; r < R; ++r) {
      y[(r0 + r) * out + o] = hn::GetLane(hn::SumOfLanes(df, acc[r])) + bo;
    }
  }
}
#endif

// Floats per half chunk of the bfloat16 kernel: 0 where one lane cannot
// hold two bfloat16 values (HWY_SCALAR: the scalar tail does all).
HWY_INLINE size_t Bf16Half() {
  return HWY_TARGET == HWY_SCALAR ? 0 : hn::Lanes(hn::ScalableTag<float>());
}

template <size_t R>
HWY_NOINLINE void Bf16Columns(const PreparedX& px, size_t r0,
                              const uint8_t* w, size_t row_bytes, size_t in,
                              size_t o0, size_t o1, const float* bias,
                              float* y, size_t out) {
  const hn::ScalableTag<float> df;
  const float* xf = px.f + r0 * in;
  for (size_t o = o0; o < o1; ++o) {
    const uint16_t* row = reinterpret_cast<const uint16_t*>(w + o * row_bytes);
    hn::Vec<decltype(df)> acc0[R], acc1[R];
    for (size_t r = 0; r < R; ++r) acc0[r] = acc1[r] = hn::Zero(df);
    size_t i = 0;
#if HWY_TARGET != HWY_SCALAR
    const hn::Repartition<uint16_t, decltype(df)> d16;
    const hn::Repartition<uint32_t, decltype(df)> d32;
    const size_t half = hn::Lanes(df);
    const size_t chunk = 2 * half;
    const auto high = hn::Set(d32, 0xFFFF0000u);
    for (; i + chunk <= in; i += chunk) {
      const auto v = hn::BitCast(d32, hn::LoadU(d16, row + i));
      const auto even = hn::BitCast(df, hn::ShiftLeft<16>(v));
      const auto odd = hn::BitCast(df, hn::And(v, high));
      for (size_t r = 0; r < R; ++r) {
        const float* xr = xf + r * in + i;
        acc0[r] = hn::MulAdd(even, hn::LoadU(df, xr), acc0[r]);
        acc1[r] = hn::MulAdd(odd, hn::LoadU(df, xr + half), acc1[r]);
      }
    }
#endif
    const float b = bias ? bias[o] : 0.0f;
    for (size_t r = 0; r < R; ++r) {
      float s = hn::GetLane(hn::SumOfLanes(df, hn::Add(acc0[r], acc1[r])));
      for (size_t t = i; t < in; ++t) {
        const uint32_t bits = static_cast<uint32_t>(row[t]) << 16;
        float wt;
        memcpy(&wt, &bits, sizeof(wt));
        s += wt * xf[r * in + t];
      }
      y[(r0 + r) * out + o] = s + b;
    }
  }
}

template <size_t R>
void Columns(KvDtype dtype, const PreparedX& px, size_t r0, const uint8_t* w,
             size_t row_bytes, size_t in, size_t o0, size_t o1,
             const float* bias, float* y, size_t out) {
  if (dtype == KvDtype::kInt8) {
    Int8Columns<R>(px, r0, w, row_bytes, in, o0, o1, bias, y, out);
  } else {
    Bf16Columns<R>(px, r0, w, row_bytes, in, o0, o1, bias, y, out);
  }
}

}  // namespace

// The GEMV (stored_linear.h): rows < kStoredGemmRows, dtype bfloat16 or
// int8, arguments validated.
Status StoredGemvImpl(const float* x, size_t rows, size_t in, size_t out,
                      KvDtype dtype, const uint8_t* w, const float* bias,
                      float* y) {
  const size_t row_bytes = KvRowBytes(dtype, in);
  const size_t padded = (in + kInt8Block - 1) / kInt8Block * kInt8Block;
  const size_t blocks = padded / kInt8Block;
  PreparedX px;
  size_t bytes = dtype == KvDtype::kInt8
                     ? rows * (padded * sizeof(int16_t) + blocks * sizeof(float))
                     : rows * in * sizeof(float);
  std::unique_ptr<void, FreeDeleter> buffer(malloc(bytes + 64));
  if (!buffer) return Status::kOutOfMemory;
  if (dtype == KvDtype::kInt8) {
    int16_t* q = static_cast<int16_t*>(buffer.get());
    float* scale = reinterpret_cast<float*>(q + rows * padded);
    PrepareInt8X(x, rows, in, padded, q, scale);
    px.q = q;
    px.scale = scale;
    px.padded = padded;
    px.blocks = blocks;
  } else {
    float* f = static_cast<float*>(buffer.get());
    PrepareBf16X(x, rows, in, Bf16Half(), f);
    px.f = f;
  }
  const size_t items = (out + kColumnsPerItem - 1) / kColumnsPerItem;
  const double flops = 2.0 * static_cast<double>(rows) * in * out;
  GlobalPool().Run(items, flops, [&](size_t item, int /*thread*/) {
    const size_t o0 = item * kColumnsPerItem;
    const size_t o1 = HWY_MIN(o0 + kColumnsPerItem, out);
    size_t r0 = 0;
    for (; r0 + kGroupRows <= rows; r0 += kGroupRows) {
      Columns<kGroupRows>(dtype, px, r0, w, row_bytes, in, o0, o1, bias, y,
                          out);
    }
    switch (rows - r0) {
      case 3:
        Columns<3>(dtype, px, r0, w, row_bytes, in, o0, o1, bias, y, out);
        break;
      case 2:
        Columns<2>(dtype, px, r0, w, row_bytes, in, o0, o1, bias, y, out);
        break;
      case 1:
        Columns<1>(dtype, px, r0, w, row_bytes, in, o0, o1, bias, y, out);
        break;
      default:
        break;
    }
  });
  return Status::kOk;
}

// The many-row path's panel: stored rows [o0, o1) as float32 rows of `in`
// values (dst), LoadKvRow's values, whole vectors within each block of 32
// and a scalar tail.
void WidenRowsImpl(KvDtype dtype, const uint8_t* w, size_t in, size_t o0,
                   size_t o1, float* dst) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const hn::Rebind<uint32_t, decltype(df)> du;
  const hn::Rebind<uint16_t, decltype(df)> d16;
  const size_t n = hn::Lanes(df);
  const size_t row_bytes = KvRowBytes(dtype, in);
  for (size_t o = o0; o < o1; ++o) {
    const uint8_t* row = w + o * row_bytes;
    float* out = dst + (o - o0) * in;
    size_t i = 0;
    if (dtype == KvDtype::kInt8) {
      const int8_t* q = reinterpret_cast<const int8_t*>(row);
      for (; i + n <= in; i += n) {
        float s;  // n divides 32: a vector never straddles two blocks
        memcpy(&s, row + in + i / kInt8Block * sizeof(float), sizeof(s));
        const auto v = hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, q + i)));
        hn::StoreU(hn::Mul(v, hn::Set(df, s)), df, out + i);
      }
    } else {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(row);
      for (; i + n <= in; i += n) {
        const auto bits = hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, h + i)));
        hn::StoreU(hn::BitCast(df, bits), df, out + i);
      }
    }
    for (; i < in; ++i) {  // the tail, as LoadKvRow reads it
      if (dtype == KvDtype::kInt8) {
        float s;
        memcpy(&s, row + in + i / kInt8Block * sizeof(float), sizeof(s));
        out[i] = static_cast<float>(reinterpret_cast<const int8_t*>(row)[i]) * s;
      } else {
        uint16_t b;
        memcpy(&b, row + 2 * i, sizeof(b));
        const uint32_t u = static_cast<uint32_t>(b) << 16;
        memcpy(out + i, &u, sizeof(float));
      }
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {

HWY_EXPORT(StoredGemvImpl);
HWY_EXPORT(WidenRowsImpl);

namespace {

// Floats of a many-row call's float32 panel of W: 2 MiB.
constexpr size_t kPanelFloats = size_t{1} << 19;

Status ValidateStored(const float* x, int64_t rows, int64_t in, int64_t out,
                      KvDtype dtype, const void* weight, const float* y) {
  if (dtype != KvDtype::kFloat32 && dtype != KvDtype::kBFloat16 &&
      dtype != KvDtype::kInt8) {
    return internal::Refuse(Status::kInvalidOption,
                            "dtype: not float32, bfloat16 or int8");
  }
  if (rows >= 1 && in >= 1 && out >= 1 && !StoredWeightsBytes(dtype, out, in)) {
    return Status::kTooLarge;
  }
  // Linear's checks on the sizes and pointers (the weight only for null).
  return ValidateLinear(x, rows, in, out, static_cast<const float*>(weight),
                        y);
}

// Many rows: panels of W widened to float32, each through MatMul into its
// columns of y.
Status StoredGemm(const float* x, int64_t rows, int64_t in, int64_t out,
                  KvDtype dtype, const uint8_t* w, const float* bias,
                  float* y) {
  const int64_t cols = HWY_MAX(int64_t{1},
      HWY_MIN(out, static_cast<int64_t>(kPanelFloats / in)));
  std::unique_ptr<float, FreeDeleter> panel(
      static_cast<float*>(malloc(cols * in * sizeof(float))));
  if (!panel) return Status::kOutOfMemory;
  for (int64_t o0 = 0; o0 < out; o0 += cols) {
    const int64_t n = HWY_MIN(cols, out - o0);
    // Widened in parallel, in pieces of 16 rows.
    const size_t pieces = static_cast<size_t>((n + 15) / 16);
    GlobalPool().Run(pieces, 2.0 * rows * n * in, [&](size_t item, int) {
      const size_t p0 = static_cast<size_t>(o0) + 16 * item;
      const size_t p1 = HWY_MIN(p0 + 16, static_cast<size_t>(o0 + n));
      HWY_DYNAMIC_DISPATCH(WidenRowsImpl)(dtype, w, static_cast<size_t>(in),
                                          p0, p1,
                                          panel.get() + (p0 - o0) * in);
    });
    MatMulShape s;
    s.m = rows;
    s.n = n;
    s.k = in;
    s.transpose_b = true;
    const Status st = MatMul(s, x, in, panel.get(), in,
                             bias ? bias + o0 : nullptr, y + o0, out);
    if (st != Status::kOk) return st;
  }
  return Status::kOk;
}

}  // namespace

size_t StoredWeightsBytes(KvDtype dtype, int64_t out, int64_t in) {
  if (out < 1 || in < 1) return 0;
  size_t rows_bytes;
  if (!internal::MulSize(static_cast<size_t>(out),
                         KvRowBytes(dtype, static_cast<size_t>(in)),
                         &rows_bytes) ||
      rows_bytes > SIZE_MAX - kStoredWeightsPad) {
    return 0;
  }
  return rows_bytes + kStoredWeightsPad;
}

Status StoreWeights(KvDtype dtype, const float* weight, int64_t out,
                    int64_t in, void* dst) {
  if (out < 1 || in < 1) return Status::kInvalidShape;
  const size_t bytes = StoredWeightsBytes(dtype, out, in);
  if (!bytes) return Status::kTooLarge;
  if (!weight || !dst) return Status::kNullPointer;
  StoreKvRows(dtype, weight, static_cast<size_t>(out), static_cast<size_t>(in),
              dst);
  memset(static_cast<uint8_t*>(dst) + bytes - kStoredWeightsPad, 0,
         kStoredWeightsPad);
  return Status::kOk;
}

Status StoredLinear(const float* x, int64_t rows, int64_t in, int64_t out,
                    KvDtype dtype, const void* weight, const float* bias,
                    float* y) {
  const Status st = ValidateStored(x, rows, in, out, dtype, weight, y);
  if (st != Status::kOk) return st;
  const uint8_t* w = static_cast<const uint8_t*>(weight);
  if (dtype == KvDtype::kFloat32) {
    return Linear(x, rows, in, out, static_cast<const float*>(weight), bias,
                  y);
  }
  if (rows >= kStoredGemmRows) {
    return StoredGemm(x, rows, in, out, dtype, w, bias, y);
  }
  return HWY_DYNAMIC_DISPATCH(StoredGemvImpl)(
      x, static_cast<size_t>(rows), static_cast<size_t>(in),
      static_cast<size_t>(out), dtype, w, bias, y);
}

Status StoredLinearReference(const float* x, int64_t rows, int64_t in,
                             int64_t out, KvDtype dtype, const void* weight,
                             const float* bias, float* y) {
  const Status st = ValidateStored(x, rows, in, out, dtype, weight, y);
  if (st != Status::kOk) return st;
  const size_t row_bytes = KvRowBytes(dtype, static_cast<size_t>(in));
  std::unique_ptr<float, FreeDeleter> w(
      static_cast<float*>(malloc(in * sizeof(float))));
  if (!w) return Status::kOutOfMemory;
  for (int64_t o = 0; o < out; ++o) {
    LoadKvRow(dtype, static_cast<const uint8_t*>(weight) + o * row_bytes,
              static_cast<size_t>(in), w.get());
    for (int64_t r = 0; r < rows; ++r) {
      double s = bias ? bias[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) {
        s += static_cast<double>(x[r * in + i]) * w.get()[i];
      }
      y[r * out + o] = static_cast<float>(s);
    }
  }
  return Status::kOk;
}

}  // namespace causal_attention
#endif  // HWY_ONCE
