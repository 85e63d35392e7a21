// The operands of a Precision::kInt8 forward (attention.h), prepared once
// per call before the kernels run: the keys smoothed by their KV head's mean
// key, each channel divided by its largest magnitude over the head's keys
// (the queries multiplied by it: q'·k' = q·(k − mean)), stored with the
// values as "wide" integer rows (below), and each query row's q·mean, which
// the scores get back. The channel scaling keeps an outlier channel (keys
// x50 in a few channels, as LLMs' keys have) from coarsening the other 31
// values of its block. Plain scalar C++, compiled once: the same bytes on
// every target (wasm and native; checked against
// tests/data/int8-attention-golden.json).
//
// Wide rows: int16 values (keys 13-bit, within ±kWideKeyMax; values 12-bit,
// within ±kWideValueMax) then a float scale per block of kInt8Block = 32
// values (WideRowBytes). Why not int8 (kv_storage.h's rows, which an int8
// KV cache keeps): measured in float64 on N(0, 1) data, int8 keys and int8
// values each cost about 4e-3 of the output's largest value (int8's step is
// 1/254 of a block's largest value, and a row that sees one key returns
// that key's value), and int8 keys 3-7e-2 with outlier channels x50 (the
// logits span ±50); the 13/12-bit rows give 2-4e-4, and 1-3.2e-3 there
// unless the outlier channels are kept in float32 (below): 2-3e-4 then.
// The integer kernels widen int8 to int16 anyway (i32x4.dot_i16x8_s), so the
// products cost the same; the bits are chosen so that no int32 sum can
// overflow (src/attention/int16_rows-inl.h: queries 15-bit, weights 15-bit).
//
// Shapes (layout kBHSD, as ForwardInLayout hands them on):
//   q [B, H, Tq, D]; k, v [B, Hkv, cap, D / Dv] stored as shape.kv_dtype.
// Passes:
//   1. mean[b, kvh, c] = (1 / Tk) · sum_j k[b, kvh, j, c] in double, rounded
//      once (0 for every channel of a head that holds a non-finite key: the
//      rows that see that key then give NaN, as in float32).
//   2. amax[b, kvh, c] = max_j |k_jc − mean_c| (1 where 0 or not finite);
//      keys[b, kvh, j] = wide row of (k_j − mean) · (1 / amax) (a float
//      subtract and multiply per value); values[b, kvh, j] = wide row of
//      v_j. Per block: scale = max / limit, value = round(t · (limit / max))
//      to nearest even. Loops without branches per value, which compilers
//      vectorise.
//      Outlier channels (amax above kOutlierRatio times the median channel's,
//      the largest kMaxOutlierChannels of them): zeros in the key rows, their
//      k − mean kept in float32 (OutlierChannels).
//   3. queries[b, h, i, c] = q · amax[kvh, c] (float; 0 in an outlier
//      channel, whose q is kept in float32 instead);
//      shift[b, h, i] = sum_c q[b, h, i, c] · mean[kvh, c] in double (each
//      product exact), rounded once.
// An int8 KV cache's rows are used as they are: no copy, no shift, int8
// rows (wide() false).

#ifndef CAUSAL_ATTENTION_SRC_ATTENTION_INT8_OPERANDS_H_
#define CAUSAL_ATTENTION_SRC_ATTENTION_INT8_OPERANDS_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "src/attention/attention.h"
#include "src/base/status.h"
#include "src/kv/kv_storage.h"

namespace causal_attention {
namespace internal {

// At most this many outlier key channels per KV head (OutlierChannels).
constexpr size_t kMaxOutlierChannels = 8;
// A key channel is an outlier when its largest magnitude (after smoothing)
// exceeds this many times the median channel's.
constexpr float kOutlierRatio = 6.0f;

// The outlier key channels of a Precision::kInt8 call (LLM.int8()'s
// decomposition): their part of each score, q_c · (k_c − mean_c) summed over
// the head's outlier channels in order, in float32; their values are zeros
// in the wide key rows and in the queries. count null: none anywhere.
struct OutlierChannels {
  const uint8_t* count = nullptr;  // [B·Hkv] outlier channels per KV head
  const float* q = nullptr;  // [B·H·Tq][kMaxOutlierChannels] q_c
  const float* k = nullptr;  // [B·Hkv][kMaxOutlierChannels][Tk] k_c − mean_c
};

// The wide rows' limits (above).
constexpr float kWideKeyMax = 4095.0f;
constexpr float kWideValueMax = 2047.0f;

// Bytes of a wide row's int16 values, then of the whole row (values, then
// one float scale per block of kInt8Block values, not aligned).
inline size_t WideRowValuesBytes(size_t width) {
  return width * sizeof(int16_t);
}
inline size_t WideRowBytes(size_t width) {
  return WideRowValuesBytes(width) +
         (width + kInt8Block - 1) / kInt8Block * sizeof(float);
}

class Int8Operands {
 public:
  Int8Operands() = default;
  Int8Operands(const Int8Operands&) = delete;
  Int8Operands& operator=(const Int8Operands&) = delete;
  ~Int8Operands();

  // Prepares the operands of `shape` (layout kBHSD). kOutOfMemory when a
  // buffer cannot be allocated.
  Status Prepare(const AttentionShape& shape, const float* q, const void* k,
                 const void* v);

  // The shape the kernels run: kv_dtype kInt8 (wide rows, or the caller's
  // int8 cache's rows read in place).
  const AttentionShape& shape() const { return shape_; }
  const float* queries() const { return q_; }
  const float* keys() const { return reinterpret_cast<const float*>(k_); }
  const float* values() const { return reinterpret_cast<const float*>(v_); }
  // [B·H·Tq] q·mean per query row, or null (an int8 cache: no smoothing).
  const float* shift() const { return shift_; }
  // The outlier channels (count null where there are none).
  const OutlierChannels& outliers() const { return outliers_; }
  // Whether keys() and values() are wide rows (false: an int8 cache's).
  bool wide() const { return wide_; }

 private:
  AttentionShape shape_;
  const float* q_ = nullptr;
  const uint8_t* k_ = nullptr;
  const uint8_t* v_ = nullptr;
  uint8_t* owned_ = nullptr;  // keys, values, shifts, queries, outliers_' q, k
  float* shift_ = nullptr;
  bool wide_ = false;
  OutlierChannels outliers_;
  std::vector<uint8_t> outlier_count_;
  std::vector<uint8_t> outlier_channel_;  // [B·Hkv][kMaxOutlierChannels]
};

}  // namespace internal
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_ATTENTION_INT8_OPERANDS_H_
