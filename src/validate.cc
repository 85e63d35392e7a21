// Argument checks of every public entry point, before any work: shapes,
// sizes that must fit size_t (and the dropout counters), options, pointers.

#include <stdint.h>

#include <cmath>
#include <initializer_list>

#include "src/attention.h"
#include "src/attention_backward.h"
#include "src/internal.h"
#include "src/size_math.h"
#include "src/linear.h"
#include "src/matmul.h"

namespace causal_attention {
namespace {

// The byte size of a tensor with these dimensions (all >= 1) fits size_t
// (which is 32 bits on wasm32).
bool BytesFit(std::initializer_list<int64_t> dims) {
  size_t bytes = sizeof(float);
  for (const int64_t d : dims) {
    if (static_cast<uint64_t>(d) > SIZE_MAX ||
        !internal::MulSize(bytes, static_cast<size_t>(d), &bytes)) {
      return false;
    }
  }
  return true;
}

}  // namespace

float DefaultScale(int64_t head_dim) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

Status ValidateAttention(const AttentionShape& s, const AttentionOptions& o,
                         bool weights) {
  if (s.batch < 1 || s.heads < 1 || s.query_len < 1 || s.key_len < 1 ||
      s.head_dim < 1 || s.value_dim < 1) {
    return Status::kInvalidShape;
  }
  // GQA: the KV heads divide the query heads; a KV cache holds its keys.
  if (s.kv_heads < 0 || s.kv_capacity < 0) return Status::kInvalidShape;
  const int64_t kvh = internal::KvHeads(s), cap = internal::KvCapacity(s);
  if (s.heads % kvh != 0 || cap < s.key_len) return Status::kInvalidShape;
  // Key indices must fit the dropout counter (32 bits; rows use 64) and
  // every size must fit size_t.
  if (s.key_len > static_cast<int64_t>(UINT32_MAX)) return Status::kTooLarge;
  const int64_t b = s.batch, h = s.heads, tq = s.query_len, tk = s.key_len;
  if (!BytesFit({b, h, tq, s.head_dim}) ||
      !BytesFit({b, kvh, cap, s.head_dim}) ||
      !BytesFit({b, kvh, cap, s.value_dim}) ||
      !BytesFit({b, h, tq, s.value_dim}) ||
      (weights && !BytesFit({b, h, tq, tk}))) {
    return Status::kTooLarge;
  }
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

Status ValidateAttentionBackward(const AttentionShape& s,
                                 const AttentionOptions& o,
                                 const float* grad_out, const float* q,
                                 const float* k, const float* v,
                                 const float* out, const float* log_sum_exp,
                                 const float* grad_q, const float* grad_k,
                                 const float* grad_v) {
  // The forward's checks (no weights: the backward recomputes them tile by
  // tile); k and v dense (a cache's capacity layout is the forward's only:
  // the backward trains on a call's own keys).
  const Status st = ValidateAttention(s, o, /*weights=*/false);
  if (st != Status::kOk) return st;
  if (s.kv_capacity != 0 && s.kv_capacity != s.key_len) {
    return Status::kInvalidShape;
  }
  if (!grad_out || !q || !k || !v || !out || !log_sum_exp || !grad_q ||
      !grad_k || !grad_v) {
    return Status::kNullPointer;
  }
  return Status::kOk;
}

Status ValidateLinear(const float* x, int64_t rows, int64_t in, int64_t out,
                      const float* weight, const float* y) {
  if (rows < 1 || in < 1 || out < 1) return Status::kInvalidShape;
  if (!BytesFit({rows, in}) || !BytesFit({rows, out}) || !BytesFit({in, out})) {
    return Status::kTooLarge;
  }
  if (!x || !weight || !y) return Status::kNullPointer;
  return Status::kOk;
}

Status ValidateLinearBackward(const float* x, int64_t rows, int64_t in,
                              int64_t out, const float* weight,
                              const float* grad_y, const float* grad_weight) {
  const Status st = ValidateLinear(x, rows, in, out, weight, grad_y);
  if (st != Status::kOk) return st;
  return grad_weight ? Status::kOk : Status::kNullPointer;
}

Status ValidateMatMul(const MatMulShape& s, const float* a, int64_t lda,
                      const float* b, int64_t ldb, const float* c,
                      int64_t ldc) {
  if (s.m < 1 || s.n < 1 || s.k < 1) return Status::kInvalidShape;
  // Stored shapes: A [rows_a, lda], B [rows_b, ldb], C [m, ldc], each row
  // at least as wide as the matrix it holds.
  const int64_t rows_a = s.transpose_a ? s.k : s.m;
  const int64_t cols_a = s.transpose_a ? s.m : s.k;
  const int64_t rows_b = s.transpose_b ? s.n : s.k;
  const int64_t cols_b = s.transpose_b ? s.k : s.n;
  if (lda < cols_a || ldb < cols_b || ldc < s.n) return Status::kInvalidShape;
  if (!BytesFit({rows_a, lda}) || !BytesFit({rows_b, ldb}) ||
      !BytesFit({s.m, ldc}) || !BytesFit({s.k, s.n})) {
    return Status::kTooLarge;
  }
  if (!a || !b || !c) return Status::kNullPointer;
  return Status::kOk;
}

}  // namespace causal_attention
