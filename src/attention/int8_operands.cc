// Int8Operands (int8_operands.h): the smoothed int8 keys, the int8 values
// and the query rows' shifts of a Precision::kInt8 forward.

#include "src/attention/int8_operands.h"

#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <vector>

#include "src/attention/internal.h"
#include "src/base/size_math.h"
#include "src/kv/kv_storage.h"

namespace causal_attention {
namespace internal {
namespace {

// Pass 1 for one KV head: mean[c] over the head's tk key rows (stored as
// dtype, row_bytes apart), or zeros when a key value is not finite. row:
// [d] scratch.
void MeanKey(KvDtype dtype, const uint8_t* k, size_t row_bytes, size_t tk,
             size_t d, double* sum, float* row, float* mean) {
  for (size_t c = 0; c < d; ++c) sum[c] = 0.0;
  for (size_t j = 0; j < tk; ++j) {
    LoadKvRow(dtype, k + j * row_bytes, d, row);
    for (size_t c = 0; c < d; ++c) {
      if (!std::isfinite(row[c])) {
        for (size_t x = 0; x < d; ++x) mean[x] = 0.0f;
        return;
      }
      sum[c] += static_cast<double>(row[c]);
    }
  }
  for (size_t c = 0; c < d; ++c) {
    mean[c] = static_cast<float>(sum[c] / static_cast<double>(tk));
  }
}

size_t RoundUp4(size_t x) { return (x + 3) & ~size_t{3}; }

}  // namespace

Int8Operands::~Int8Operands() { free(owned_); }

Status Int8Operands::Prepare(const AttentionShape& shape, const float* q,
                             const void* k, const void* v) {
  shape_ = shape;
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
  const size_t out_k = KvRowBytes(KvDtype::kInt8, d);
  const size_t out_v = KvRowBytes(KvDtype::kInt8, dv);
  // The shifts are one float per query row (as q fits); int8 rows take
  // fewer bytes than float32 ones, but not always than bfloat16 ones.
  const size_t heads = b * kvh;
  size_t keys_bytes, values_bytes;
  if (!MulSize(heads * tk, out_k, &keys_bytes) ||
      !MulSize(heads * tk, out_v, &values_bytes) ||
      keys_bytes > SIZE_MAX / 4 || values_bytes > SIZE_MAX / 4) {
    return Status::kOutOfMemory;
  }
  const size_t rows = b * h * tq;  // a shift and a query row each
  size_t row_floats;
  if (!MulSize(rows, 1 + d, &row_floats) || row_floats > SIZE_MAX / 8) {
    return Status::kOutOfMemory;
  }
  owned_ = static_cast<uint8_t*>(malloc(RoundUp4(keys_bytes + values_bytes) +
                                        row_floats * sizeof(float) + 1));
  if (!owned_) return Status::kOutOfMemory;
  uint8_t* keys = owned_;
  uint8_t* values = owned_ + keys_bytes;
  shift_ = reinterpret_cast<float*>(owned_ +
                                    RoundUp4(keys_bytes + values_bytes));
  float* queries = shift_ + rows;
  std::vector<double> sum(d);
  std::vector<float> row(d > dv ? d : dv), mean(heads * d), amax(heads * d);
  const uint8_t* kin = static_cast<const uint8_t*>(k);
  const uint8_t* vin = static_cast<const uint8_t*>(v);
  for (size_t x = 0; x < heads; ++x) {
    const uint8_t* kh = kin + x * cap * in_k;
    const uint8_t* vh = vin + x * cap * in_v;
    float* m = mean.data() + x * d;
    float* a = amax.data() + x * d;
    MeanKey(shape.kv_dtype, kh, in_k, tk, d, sum.data(), row.data(), m);
    for (size_t c = 0; c < d; ++c) a[c] = 0.0f;
    for (size_t j = 0; j < tk; ++j) {
      LoadKvRow(shape.kv_dtype, kh + j * in_k, d, row.data());
      for (size_t c = 0; c < d; ++c) {
        a[c] = std::fmax(a[c], std::fabs(row[c] - m[c]));  // NaN: skipped
      }
    }
    for (size_t c = 0; c < d; ++c) {
      if (!(a[c] > 0.0f) || !std::isfinite(a[c])) a[c] = 1.0f;
    }
    for (size_t j = 0; j < tk; ++j) {
      LoadKvRow(shape.kv_dtype, kh + j * in_k, d, row.data());
      for (size_t c = 0; c < d; ++c) row[c] = (row[c] - m[c]) / a[c];
      StoreKvRows(KvDtype::kInt8, row.data(), 1, d,
                  keys + (x * tk + j) * out_k);
      LoadKvRow(shape.kv_dtype, vh + j * in_v, dv, row.data());
      StoreKvRows(KvDtype::kInt8, row.data(), 1, dv,
                  values + (x * tk + j) * out_v);
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    const size_t x = KvHeadOf(shape, r / tq);
    const float* m = mean.data() + x * d;
    const float* a = amax.data() + x * d;
    const float* qr = q + r * d;
    double s = 0.0;
    for (size_t c = 0; c < d; ++c) {
      s += static_cast<double>(qr[c]) * static_cast<double>(m[c]);
      queries[r * d + c] = qr[c] * a[c];
    }
    shift_[r] = static_cast<float>(s);
  }
  q_ = queries;
  k_ = keys;
  v_ = values;
  shape_.kv_dtype = KvDtype::kInt8;
  shape_.kv_capacity = 0;
  return Status::kOk;
}

}  // namespace internal
}  // namespace causal_attention
