// Validation and small helpers shared by every entry point.

#include <cmath>

#include "src/causal_attention.h"
#include "src/dropout.h"
#include "src/internal.h"

namespace causal_attention {

const char* StatusMessage(Status status) {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kInvalidShape:
      return "invalid shape: every dimension must be >= 1";
    case Status::kTooLarge:
      return "tensor too large: its byte size does not fit in size_t";
    case Status::kInvalidOption:
      return "invalid option: causal/mask strategy out of range, dropout "
             "outside [0, 1) or non-finite scale";
    case Status::kNullPointer:
      return "null pointer for a required tensor";
    case Status::kOutOfMemory:
      return "out of memory while allocating the workspace";
  }
  return "unknown status";
}

namespace internal {

bool ComputeSizes(const AttentionShape& s, TensorSizes* sizes) {
  const size_t b = static_cast<size_t>(s.batch);
  const size_t h = static_cast<size_t>(s.heads);
  const size_t tq = static_cast<size_t>(s.query_len);
  const size_t tk = static_cast<size_t>(s.key_len);
  const size_t d = static_cast<size_t>(s.head_dim);
  const size_t dv = static_cast<size_t>(s.value_dim);
  size_t bh, rows_q, rows_k;
  if (!MulSize(b, h, &bh) || !MulSize(bh, tq, &rows_q) ||
      !MulSize(bh, tk, &rows_k)) {
    return false;
  }
  // Every tensor is checked in bytes so that a caller can allocate it.
  size_t bytes;
  return MulSize(rows_q, d, &sizes->q) && MulSize(sizes->q, 4, &bytes) &&
         MulSize(rows_k, d, &sizes->k) && MulSize(sizes->k, 4, &bytes) &&
         MulSize(rows_k, dv, &sizes->v) && MulSize(sizes->v, 4, &bytes) &&
         MulSize(rows_q, dv, &sizes->out) && MulSize(sizes->out, 4, &bytes) &&
         MulSize(rows_q, tk, &sizes->weights) &&
         MulSize(sizes->weights, 4, &bytes);
}

}  // namespace internal

Status ValidateAttention(const AttentionShape& s, const AttentionOptions& o) {
  if (s.batch < 1 || s.heads < 1 || s.query_len < 1 || s.key_len < 1 ||
      s.head_dim < 1 || s.value_dim < 1) {
    return Status::kInvalidShape;
  }
  // Row indices and key indices must fit the dropout counter (64/32 bits)
  // and every size must fit size_t.
  if (s.key_len > static_cast<int64_t>(UINT32_MAX)) return Status::kTooLarge;
  internal::TensorSizes sizes;
  if (!internal::ComputeSizes(s, &sizes)) return Status::kTooLarge;
  const int causal = static_cast<int>(o.causal);
  const int strategy = static_cast<int>(o.mask_strategy);
  if (causal < 0 || causal > 2 || strategy < 0 || strategy > 1) {
    return Status::kInvalidOption;
  }
  if (!(o.dropout >= 0.0f && o.dropout < 1.0f)) return Status::kInvalidOption;
  if (o.scale.has_value() && !std::isfinite(*o.scale)) {
    return Status::kInvalidOption;
  }
  return Status::kOk;
}

bool DropoutKeeps(uint64_t seed, uint64_t row, uint32_t key, float p) {
  return dropout::Hash24(dropout::MakeRowKey(seed, row), key) >=
         dropout::Threshold(p);
}

}  // namespace causal_attention
