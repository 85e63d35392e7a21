// Int8Operands (int8_operands.h): the smoothed int8 keys, the int8 values
// and the query rows' shifts of a Precision::kInt8 forward.

#include "src/attention/int8_operands.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

#include "src/attention/internal.h"
#include "src/base/size_math.h"
#include "src/base/thread_pool.h"
#include "src/kv/kv_storage.h"

namespace causal_attention {
namespace internal {
namespace {

// Pass 1 for one KV head: mean[c] over its tk key rows (x + j·d), or zeros
// when a key value is not finite (a double sum of floats overflows only
// through a non-finite term).
void MeanKey(const float* x, size_t tk, size_t d, double* sum, float* mean) {
  for (size_t c = 0; c < d; ++c) sum[c] = 0.0;
  for (size_t j = 0; j < tk; ++j) {
    for (size_t c = 0; c < d; ++c) sum[c] += static_cast<double>(x[j * d + c]);
  }
  bool finite = true;
  for (size_t c = 0; c < d; ++c) finite &= std::isfinite(sum[c]);
  for (size_t c = 0; c < d; ++c) {
    mean[c] = finite ? static_cast<float>(sum[c] / static_cast<double>(tk))
                     : 0.0f;
  }
}

// Pass 2's channel scales for one KV head: inv[c] = 1 / max_j |x_jc −
// mean_c| (1 where that is 0 or not finite); amax[c] the divisor.
void ChannelScales(const float* x, size_t tk, size_t d, const float* mean,
                   float* amax, float* inv) {
  for (size_t c = 0; c < d; ++c) amax[c] = 0.0f;
  for (size_t j = 0; j < tk; ++j) {
    for (size_t c = 0; c < d; ++c) {
      const float m = std::fabs(x[j * d + c] - mean[c]);
      amax[c] = m > amax[c] ? m : amax[c];  // NaN: skipped
    }
  }
  for (size_t c = 0; c < d; ++c) {
    if (!(amax[c] > 0.0f) || !std::isfinite(amax[c])) amax[c] = 1.0f;
    inv[c] = 1.0f / amax[c];
  }
}

// x (|x| <= 32767) rounded to nearest even: x + 1.5 · 2^23 is rounded to an
// integer by the add itself, and for |x| < 2^22 the low 16 bits of its
// float's mantissa are that integer's two's complement. Not a float to int
// conversion: wasm's traps out of range, so compilers guard it value by value
// and keep the loop scalar.
int16_t RoundedInt16(float x) {
  const float shifted = x + 12582912.0f;
  uint32_t bits;
  memcpy(&bits, &shifted, sizeof(bits));
  return static_cast<int16_t>(static_cast<uint16_t>(bits & 0xFFFFu));
}

#if defined(__wasm_simd128__)
// StoreBlock (below) of a whole block of 32 values in SIMD128, the same
// operations per value: the largest |t| (NaN skipped, as the scalar max), whether
// every t is finite (the sum of t · 0 is 0), the scale, and the rounded
// values to dst[0, 64) (RoundedInt16's low halves); returns the scale.
// Compilers vectorise the scalar loops less well: each value takes a few
// lane extracts and scalar steps there.
float StoreBlock32(const float* tb, float limit, uint8_t* dst) {
  v128_t t[8];
  v128_t largest = wasm_f32x4_splat(0.0f), zero = wasm_f32x4_splat(0.0f);
  for (size_t k = 0; k < 8; ++k) {
    t[k] = wasm_v128_load(tb + 4 * k);
    largest = wasm_f32x4_pmax(largest, wasm_f32x4_abs(t[k]));
    zero = wasm_f32x4_add(zero, wasm_f32x4_mul(t[k], wasm_f32x4_splat(0.0f)));
  }
  float lanes[4], zeros[4];
  wasm_v128_store(lanes, largest);
  wasm_v128_store(zeros, zero);
  float m = 0.0f;
  bool finite = true;
  for (size_t k = 0; k < 4; ++k) {
    m = lanes[k] > m ? lanes[k] : m;
    finite &= zeros[k] == 0.0f;
  }
  const float scale = finite ? m / limit : std::nanf("");
  const v128_t to_int = wasm_f32x4_splat(m > 0.0f ? limit / m : 0.0f);
  const v128_t hi = wasm_f32x4_splat(limit), lo = wasm_f32x4_splat(-limit);
  const v128_t magic = wasm_f32x4_splat(12582912.0f);
  v128_t r[8];
  for (size_t k = 0; k < 8; ++k) {
    v128_t x = wasm_f32x4_mul(t[k], to_int);
    x = wasm_f32x4_pmin(x, hi);  // x > limit ? limit : x
    x = wasm_f32x4_pmax(x, lo);  // x < -limit ? -limit : x
    x = wasm_v128_and(x, wasm_f32x4_eq(x, x));  // NaN: 0
    r[k] = wasm_f32x4_add(x, magic);
  }
  for (size_t k = 0; k < 8; k += 2) {
    wasm_v128_store(dst + 8 * k,
                    wasm_i8x16_shuffle(r[k], r[k + 1], 0, 1, 4, 5, 8, 9, 12,
                                       13, 16, 17, 20, 21, 24, 25, 28, 29));
  }
  return scale;
}
#endif

// One block of n <= 32 values tb of StoreRow (below): the rounded values to
// dst[0, 2n) and the block's scale returned.
float StoreBlock(const float* tb, size_t n, float limit, uint8_t* dst) {
  // Eight running maxima and sums (lane k: the values c = k mod 8), which
  // compilers keep in vectors; the maximum, and whether the sum of t · 0
  // is NaN (unless every t is finite), do not depend on the order.
  float lane_max[8] = {}, lane_zero[8] = {};
  size_t c = 0;
  for (; c + 8 <= n; c += 8) {
    for (size_t k = 0; k < 8; ++k) {
      const float m = std::fabs(tb[c + k]);
      lane_max[k] = m > lane_max[k] ? m : lane_max[k];
      lane_zero[k] += tb[c + k] * 0.0f;
    }
  }
  for (; c < n; ++c) {
    const float m = std::fabs(tb[c]);
    lane_max[0] = m > lane_max[0] ? m : lane_max[0];
    lane_zero[0] += tb[c] * 0.0f;
  }
  float largest = 0.0f, zero = 0.0f;
  for (size_t k = 0; k < 8; ++k) {
    largest = lane_max[k] > largest ? lane_max[k] : largest;
    zero += lane_zero[k];
  }
  const float to_int = largest > 0.0f ? limit / largest : 0.0f;
  int16_t values[kInt8Block];  // then copied: dst is not aligned
  for (c = 0; c < n; ++c) {
    float r = tb[c] * to_int;
    r = r > limit ? limit : r;
    r = r < -limit ? -limit : r;
    values[c] = RoundedInt16(r == r ? r : 0.0f);
  }
  memcpy(dst, values, n * sizeof(int16_t));
  return zero == 0.0f ? largest / limit : std::nanf("");
}

// One int16 row (int8_operands.h's layout) of t_c = (x_c − mean_c) · inv_c
// (x_c itself where mean is null): per block of 32, scale = max|t| / limit
// (NaN when a t is not finite), q = round(t · (limit / max)) to nearest
// even, within ±limit. t: [width] scratch.
void StoreRow(const float* x, const float* mean, const float* inv,
              size_t width, float limit, float* t, uint8_t* dst) {
  if (mean) {
    for (size_t c = 0; c < width; ++c) t[c] = (x[c] - mean[c]) * inv[c];
  } else {
    for (size_t c = 0; c < width; ++c) t[c] = x[c];
  }
  for (size_t b0 = 0; b0 < width; b0 += kInt8Block) {
    const size_t n = width - b0 < kInt8Block ? width - b0 : kInt8Block;
    uint8_t* values = dst + b0 * sizeof(int16_t);
#if defined(__wasm_simd128__)
    const float scale = n == kInt8Block ? StoreBlock32(t + b0, limit, values)
                                        : StoreBlock(t + b0, n, limit, values);
#else
    const float scale = StoreBlock(t + b0, n, limit, values);
#endif
    memcpy(dst + WideRowValuesBytes(width) + b0 / kInt8Block * sizeof(float),
           &scale, sizeof(scale));
  }
}

// The outlier channels of one KV head (int8_operands.h) from its channels'
// largest magnitudes amax[0, d): into channel[0, n), ascending; returns n.
size_t FindOutliers(const float* amax, size_t d, uint8_t* channel) {
  std::vector<float> sorted(amax, amax + d);
  std::nth_element(sorted.begin(), sorted.begin() + d / 2, sorted.end());
  const float limit = sorted[d / 2] * kOutlierRatio;
  std::vector<size_t> found;
  for (size_t c = 0; c < d; ++c) {
    if (amax[c] > limit) found.push_back(c);
  }
  // The largest ones where there are more (ties: the lower channel first).
  std::stable_sort(found.begin(), found.end(),
                   [&](size_t a, size_t b) { return amax[a] > amax[b]; });
  if (found.size() > kMaxOutlierChannels) found.resize(kMaxOutlierChannels);
  std::sort(found.begin(), found.end());
  for (size_t o = 0; o < found.size(); ++o) {
    channel[o] = static_cast<uint8_t>(found[o]);
  }
  return found.size();
}

size_t RoundUp4(size_t x) { return (x + 3) & ~size_t{3}; }

}  // namespace

Int8Operands::~Int8Operands() { free(owned_); }

Status Int8Operands::Prepare(const AttentionShape& shape, const float* q,
                             const void* k, const void* v) {
  shape_ = shape;
  wide_ = false;
  outliers_ = {};
  q_ = q;
  k_ = static_cast<const uint8_t*>(k);
  v_ = static_cast<const uint8_t*>(v);
  if (shape.kv_dtype == KvDtype::kInt8) return Status::kOk;
  const size_t b = static_cast<size_t>(shape.batch);
  const size_t h = static_cast<size_t>(shape.heads);
  const size_t kvh = static_cast<size_t>(KvHeads(shape));
  const size_t tq = static_cast<size_t>(shape.query_len);
  const size_t tk = static_cast<size_t>(shape.key_len);
  const size_t cap = static_cast<size_t>(KvCapacity(shape));
  const size_t d = static_cast<size_t>(shape.head_dim);
  const size_t dv = static_cast<size_t>(shape.value_dim);
  const size_t in_k = KvRowBytes(shape.kv_dtype, d);
  const size_t in_v = KvRowBytes(shape.kv_dtype, dv);
  const size_t out_k = WideRowBytes(d);
  const size_t out_v = WideRowBytes(dv);
  // The shifts are one float per query row (as q fits); int16 rows take
  // fewer bytes than float32 ones, about as many as bfloat16 ones.
  const size_t heads = b * kvh;
  size_t keys_bytes, values_bytes;
  if (!MulSize(heads * tk, out_k, &keys_bytes) ||
      !MulSize(heads * tk, out_v, &values_bytes) ||
      keys_bytes > SIZE_MAX / 4 || values_bytes > SIZE_MAX / 4) {
    return Status::kOutOfMemory;
  }
  const size_t rows = b * h * tq;  // a shift and a query row each
  // Then the outlier channels' floats: kO per query row, kO rows of tk per
  // KV head (read only where a head has outlier channels).
  constexpr size_t kO = kMaxOutlierChannels;
  size_t row_floats, outlier_floats;
  if (!MulSize(rows, 1 + d + kO, &row_floats) || row_floats > SIZE_MAX / 16 ||
      !MulSize(heads * kO, tk, &outlier_floats) ||
      outlier_floats > SIZE_MAX / 16) {
    return Status::kOutOfMemory;
  }
  row_floats += outlier_floats;  // below SIZE_MAX / 8, as the bytes above
  owned_ = static_cast<uint8_t*>(malloc(RoundUp4(keys_bytes + values_bytes) +
                                        row_floats * sizeof(float) + 1));
  if (!owned_) return Status::kOutOfMemory;
  uint8_t* keys = owned_;
  uint8_t* values = owned_ + keys_bytes;
  shift_ = reinterpret_cast<float*>(owned_ +
                                    RoundUp4(keys_bytes + values_bytes));
  float* queries = shift_ + rows;
  std::vector<float> mean(heads * d), amax(heads * d);
  // Outlier channels: indices below 256 (uint8_t); wider heads have none.
  const bool split = d <= 256;
  outlier_count_.assign(heads, 0);
  outlier_channel_.assign(heads * kO, 0);
  float* outlier_q = queries + rows * d;
  float* outlier_k = outlier_q + rows * kO;
  const bool convert = shape.kv_dtype != KvDtype::kFloat32;
  const uint8_t* kin = static_cast<const uint8_t*>(k);
  const uint8_t* vin = static_cast<const uint8_t*>(v);
  // One item per KV head, then per query head: each writes its own rows
  // only (the same bytes for any thread count).
  ThreadPool& pool = GlobalPool();
  const double head_flops = 8.0 * static_cast<double>(tk * (d + dv));
  pool.Run(heads, head_flops * static_cast<double>(heads), [&](size_t x,
                                                               int) {
    std::vector<double> sum(d);
    std::vector<float> inv(d), t(d > dv ? d : dv);
    // bfloat16 rows: the head's keys and values as float32.
    std::vector<float> kf(convert ? tk * d : 0), vf(convert ? tk * dv : 0);
    const float* kh = reinterpret_cast<const float*>(kin + x * cap * in_k);
    const float* vh = reinterpret_cast<const float*>(vin + x * cap * in_v);
    if (convert) {
      for (size_t j = 0; j < tk; ++j) {
        LoadKvRow(shape.kv_dtype, kin + (x * cap + j) * in_k, d, &kf[j * d]);
        LoadKvRow(shape.kv_dtype, vin + (x * cap + j) * in_v, dv,
                  &vf[j * dv]);
      }
      kh = kf.data();
      vh = vf.data();
    }
    float* m = mean.data() + x * d;
    float* a = amax.data() + x * d;
    MeanKey(kh, tk, d, sum.data(), m);
    ChannelScales(kh, tk, d, m, a, inv.data());
    if (split) {
      uint8_t* channel = outlier_channel_.data() + x * kO;
      const size_t n = FindOutliers(a, d, channel);
      outlier_count_[x] = static_cast<uint8_t>(n);
      for (size_t o = 0; o < n; ++o) {
        const size_t c = channel[o];
        inv[c] = 0.0f;  // a zero in the key rows (NaN stays NaN)
        float* dst = outlier_k + (x * kO + o) * tk;
        for (size_t j = 0; j < tk; ++j) dst[j] = kh[j * d + c] - m[c];
      }
    }
    for (size_t j = 0; j < tk; ++j) {
      StoreRow(kh + j * d, m, inv.data(), d, kWideKeyMax, t.data(),
               keys + (x * tk + j) * out_k);
      StoreRow(vh + j * dv, nullptr, nullptr, dv, kWideValueMax, t.data(),
               values + (x * tk + j) * out_v);
    }
  });
  const double row_flops = 3.0 * static_cast<double>(tq * d);
  pool.Run(b * h, row_flops * static_cast<double>(b * h), [&](size_t bh,
                                                              int) {
    const size_t x = KvHeadOf(shape, bh);
    const float* m = mean.data() + x * d;
    const float* a = amax.data() + x * d;
    const size_t n = outlier_count_[x];
    const uint8_t* channel = outlier_channel_.data() + x * kO;
    for (size_t r = bh * tq; r < (bh + 1) * tq; ++r) {
      const float* qr = q + r * d;
      double s = 0.0;
      for (size_t c = 0; c < d; ++c) {
        s += static_cast<double>(qr[c]) * static_cast<double>(m[c]);
        queries[r * d + c] = qr[c] * a[c];
      }
      shift_[r] = static_cast<float>(s);
      for (size_t o = 0; o < n; ++o) {
        outlier_q[r * kO + o] = qr[channel[o]];
        queries[r * d + channel[o]] = 0.0f;
      }
    }
  });
  bool any = false;
  for (size_t x = 0; x < heads; ++x) any |= outlier_count_[x] > 0;
  if (any) outliers_ = {outlier_count_.data(), outlier_q, outlier_k};
  q_ = queries;
  k_ = keys;
  v_ = values;
  shape_.kv_dtype = KvDtype::kInt8;
  shape_.kv_capacity = 0;
  wide_ = true;
  return Status::kOk;
}

}  // namespace internal
}  // namespace causal_attention
