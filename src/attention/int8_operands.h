// The operands of a Precision::kInt8 forward (attention.h), prepared once
// per call before the kernels run: the keys smoothed by their KV head's mean
// key, each channel divided by its largest magnitude over the head's keys
// (the queries multiplied by it: q'·k' = q·(k − mean)), stored with the
// values as int8 KV cache rows (kv_storage.h), and each query row's q·mean,
// which the scores get back. The channel scaling keeps an outlier channel
// (keys x50 in a few channels, as LLMs' keys have) from coarsening the
// other 31 values of its int8 block (measured: 4x less error there). Plain
// scalar C++,
// compiled once: the same bytes on every target (wasm and native; checked
// against tests/data/int8-attention-golden.json).
//
// Shapes (layout kBHSD, as ForwardInLayout hands them on):
//   q [B, H, Tq, D]; k, v [B, Hkv, cap, D / Dv] stored as shape.kv_dtype.
// Passes:
//   1. mean[b, kvh, c] = (1 / Tk) · sum_j k[b, kvh, j, c] in double, rounded
//      once (0 for every channel of a head that holds a non-finite key: the
//      rows that see that key then give NaN, as in float32).
//   2. amax[b, kvh, c] = max_j |k_jc − mean_c| (1 where 0 or not finite);
//      keys[b, kvh, j] = int8 row of (k_j − mean) · (1 / amax) (a float
//      subtract and multiply per value); values[b, kvh, j] = int8 row of
//      v_j. The rows' layout and scales are kv_storage.h's; q is rounded as
//      round(t · (127 / max)) (StoreKvRows divides: t / (max / 127)).
//      Loops without branches per value, which compilers vectorise.
//   3. queries[b, h, i, c] = q · amax[kvh, c] (float);
//      shift[b, h, i] = sum_c q[b, h, i, c] · mean[kvh, c] in double (each
//      product exact), rounded once.
// An int8 KV cache's rows are used as they are: no copy, no shift.

#ifndef CAUSAL_ATTENTION_SRC_ATTENTION_INT8_OPERANDS_H_
#define CAUSAL_ATTENTION_SRC_ATTENTION_INT8_OPERANDS_H_

#include <stddef.h>
#include <stdint.h>

#include "src/attention/attention.h"
#include "src/base/status.h"

namespace causal_attention {
namespace internal {

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

  // The shape the kernels run: kv_dtype kInt8 (dense rows unless the
  // caller's int8 cache is read in place).
  const AttentionShape& shape() const { return shape_; }
  const float* queries() const { return q_; }
  const float* keys() const { return reinterpret_cast<const float*>(k_); }
  const float* values() const { return reinterpret_cast<const float*>(v_); }
  // [B·H·Tq] q·mean per query row, or null (an int8 cache: no smoothing).
  const float* shift() const { return shift_; }

 private:
  AttentionShape shape_;
  const float* q_ = nullptr;
  const uint8_t* k_ = nullptr;
  const uint8_t* v_ = nullptr;
  uint8_t* owned_ = nullptr;  // keys, values, then the shifts and queries
  float* shift_ = nullptr;
};

}  // namespace internal
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_ATTENTION_INT8_OPERANDS_H_
