// How a KV cache stores its keys and values: float32 (the default),
// bfloat16 or int8, row by row. One stored row holds one token's keys (or
// values) of one KV head; its size in bytes is KvRowBytes(dtype, width) and
// rows follow each other with no padding:
//   kFloat32:  width floats.
//   kBFloat16: width bfloat16 values (the upper half of a float32's bits),
//              rounded to nearest, ties to even.
//   kInt8:     width int8 values q, then one scale s per block of
//              kInt8Block values (floats, not aligned; the last block may be
//              shorter): value i is float(q_i) · s_(i / 32), computed in
//              float. s is the block's largest magnitude / 127 (symmetric,
//              as llama.cpp's q8_0); q = round(x / s) to nearest even, in
//              [-127, 127]. An all-zero block stores s = 0. A block holding
//              NaN or ±Inf stores s = NaN: its values read NaN, so the rows
//              that see that key give NaN (attention.h's rule for non-finite
//              keys and values).
// Why blocks of 32 and not one scale per token: keys have outlier channels
// (a few dimensions several times larger than the rest); one scale per row
// then leaves the other channels a few quantisation steps. Measured on a
// decode step (bench/studies/int8-scale-block.mjs: 8 heads, 2 KV heads, D 128, 1000
// keys, N(0, 1) data with 4 key channels x8): largest error / largest
// output 0.12 per token, 0.028 per block of 32; on plain N(0, 1) data 0.007
// both (with queries x3, 0.015 per token and 0.021 per block: no gain
// without outliers). The cost: 4 bytes per 32 values (1.125 bytes a value
// instead of 1.03); the kernels multiply every value by its scale either
// way.
// Attention reads such rows where they are (AttentionShape::kv_dtype): the
// kernels convert one key tile at a time into their per-thread workspace,
// never the cache into a float32 copy; a wasm decode step's four-row kernels
// widen bfloat16 keys and values in registers instead (few_rows-inl.h), and
// a decode step's groups multiply int8 ones as integers on every vector
// target (src/kv/int8_rows-inl.h: SIMD128 kernels on wasm, portable ones
// with the same bits elsewhere).

#ifndef CAUSAL_ATTENTION_SRC_KV_STORAGE_H_
#define CAUSAL_ATTENTION_SRC_KV_STORAGE_H_

#include <stddef.h>
#include <stdint.h>

namespace causal_attention {

enum class KvDtype : int32_t { kFloat32 = 0, kBFloat16 = 1, kInt8 = 2 };

// Values per int8 scale.
constexpr size_t kInt8Block = 32;

// Bytes of one stored row of `width` values (see above).
inline size_t KvRowBytes(KvDtype dtype, size_t width) {
  switch (dtype) {
    case KvDtype::kBFloat16:
      return 2 * width;
    case KvDtype::kInt8:
      return width + (width + kInt8Block - 1) / kInt8Block * sizeof(float);
    case KvDtype::kFloat32:
    default:
      return 4 * width;
  }
}

// Stores `rows` rows of `width` floats (src, rows contiguous) as stored rows
// at dst (KvRowBytes apart), rounding as above.
void StoreKvRows(KvDtype dtype, const float* src, size_t rows, size_t width,
                 void* dst);

// The values of one stored row as attention reads them (exactly: the SIMD
// kernels' conversion gives the same floats).
void LoadKvRow(KvDtype dtype, const void* src, size_t width, float* dst);

// float32 -> bfloat16 bits, round to nearest even (NaN stays a quiet NaN of
// the same sign; values past the largest bfloat16 round to ±Inf).
uint16_t RoundToBFloat16(float x);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_KV_STORAGE_H_
