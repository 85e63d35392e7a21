// Argument checks of every public entry point, before any work: shapes,
// sizes that must fit size_t (and the dropout counters), options, pointers.

#include <stdint.h>

#include <cmath>
#include <initializer_list>

#include "src/attention/attention.h"
#include "src/attention/attention_backward.h"
#include "src/attention/internal.h"
#include "src/base/size_math.h"
#include "src/gemm/linear.h"
#include "src/gemm/matmul.h"

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

Status ValidateAttention(const AttentionShape& s, const AttentionOptions& o) {
  using internal::Refuse;
  internal::Refuse(Status::kOk, "");
  if (s.batch < 1 || s.heads < 1 || s.query_len < 1 || s.key_len < 1 ||
      s.head_dim < 1 || s.value_dim < 1) {
    return Refuse(Status::kInvalidShape, "shape: every dimension must be >= 1");
  }
  // GQA: the KV heads divide the query heads; a KV cache holds its keys.
  if (s.kv_heads < 0 || s.kv_capacity < 0) {
    return Refuse(Status::kInvalidShape, "kv_heads / kv_capacity < 0");
  }
  const int dtype = static_cast<int>(s.kv_dtype);
  if (dtype < 0 || dtype > 2) {
    return Refuse(Status::kInvalidShape,
                  "kv_dtype: must be 0 (float32), 1 (bfloat16) or 2 (int8)");
  }
  const int64_t kvh = internal::KvHeads(s), cap = internal::KvCapacity(s);
  if (s.heads % kvh != 0) {
    return Refuse(Status::kInvalidShape, "kv_heads: must divide heads");
  }
  if (cap < s.key_len) {
    return Refuse(Status::kInvalidShape, "kv_capacity: must be >= key_len");
  }
  // Key indices must fit the dropout counter (32 bits; rows use 64) and
  // every tensor the call reads or writes must fit size_t. No [Tq, Tk]
  // tensor exists unless weights are asked for (ValidateAttentionWeights).
  if (s.key_len > static_cast<int64_t>(UINT32_MAX)) {
    return Refuse(Status::kTooLarge, "key_len: must be < 2^32");
  }
  const int64_t b = s.batch, h = s.heads, tq = s.query_len;
  if (!BytesFit({b, h, tq, s.head_dim})) {
    return Refuse(Status::kTooLarge, "q: byte size does not fit size_t");
  }
  if (!BytesFit({b, kvh, cap, s.head_dim})) {
    return Refuse(Status::kTooLarge, "k: byte size does not fit size_t");
  }
  if (!BytesFit({b, kvh, cap, s.value_dim})) {
    return Refuse(Status::kTooLarge, "v: byte size does not fit size_t");
  }
  if (!BytesFit({b, h, tq, s.value_dim})) {
    return Refuse(Status::kTooLarge, "out: byte size does not fit size_t");
  }
  const int causal = static_cast<int>(o.causal);
  const int strategy = static_cast<int>(o.mask_strategy);
  if (causal < 0 || causal > 2) {
    return Refuse(Status::kInvalidOption, "causal: must be 0, 1 or 2");
  }
  if (strategy < 0 || strategy > 1) {
    return Refuse(Status::kInvalidOption, "mask_strategy: must be 0 or 1");
  }
  if (!(o.dropout >= 0.0f && o.dropout < 1.0f)) {
    return Refuse(Status::kInvalidOption, "dropout: must be in [0, 1)");
  }
  if (o.scale.has_value() && !std::isfinite(*o.scale)) {
    return Refuse(Status::kInvalidOption, "scale: must be finite");
  }
  const int layout = static_cast<int>(o.layout);
  if (layout == 1 && s.kv_dtype != KvDtype::kFloat32) {
    return Refuse(Status::kInvalidOption,
                  "layout: a bfloat16 or int8 k/v (kv_dtype) needs bhsd");
  }
  if (layout < 0 || layout > 1) {
    return Refuse(Status::kInvalidOption,
                  "layout: must be 0 (bhsd) or 1 (bshd)");
  }
  // Positions i + offset stay far from int64 overflow.
  constexpr int64_t kMaxOffset = int64_t{1} << 60;
  if (o.query_offset.has_value() &&
      (*o.query_offset > kMaxOffset || *o.query_offset < -kMaxOffset)) {
    return Refuse(Status::kInvalidOption,
                  "query_offset: |offset| must be <= 2^60");
  }
  if (o.key_lengths) {
    for (int64_t i = 0; i < b; ++i) {
      if (o.key_lengths[i] < 0 || o.key_lengths[i] > s.key_len) {
        return Refuse(Status::kInvalidOption,
                      "key_lengths: each must be in [0, key_len]");
      }
    }
  }
  if (o.window_left < -1 || o.window_left > kMaxOffset) {
    return Refuse(Status::kInvalidOption,
                  "window_left: must be -1 or in [0, 2^60]");
  }
  if (o.window_right < -1 || o.window_right > kMaxOffset) {
    return Refuse(Status::kInvalidOption,
                  "window_right: must be -1 or in [0, 2^60]");
  }
  if (!(o.softcap >= 0.0f) || !std::isfinite(o.softcap)) {
    return Refuse(Status::kInvalidOption,
                  "softcap: must be finite and > 0 (0: off)");
  }
  const int kind = static_cast<int>(o.mask.kind);
  if (kind < 0 || kind > 2) {
    return Refuse(Status::kInvalidOption, "mask.kind: must be 0, 1 or 2");
  }
  if (o.mask.kind != MaskKind::kNone) {
    if (!o.mask.data) return Refuse(Status::kNullPointer, "mask.data: null");
    const int64_t full[4] = {b, h, tq, s.key_len};
    for (int a = 0; a < 4; ++a) {
      if (o.mask.dims[a] != 1 && o.mask.dims[a] != full[a]) {
        return Refuse(Status::kInvalidShape,
                      "mask.dims: each must be 1 or the full size of [batch, "
                      "heads, query_len, key_len]");
      }
    }
  }
  const int stage = static_cast<int>(o.score_stage);
  if (stage < 0 || stage > 3) {
    return Refuse(Status::kInvalidOption, "score_stage: must be 0 to 3");
  }
  if (o.score_stage != ScoreStage::kNone) {
    if (!o.scores) return Refuse(Status::kNullPointer, "scores: null");
    if (!BytesFit({b, h, tq, s.key_len})) {
      return Refuse(Status::kTooLarge,
                    "scores: batch·heads·query_len·key_len·4 bytes do not "
                    "fit size_t");
    }
  }
  const int precision = static_cast<int>(o.precision);
  if (precision < 0 || precision > 1) {
    return Refuse(Status::kInvalidOption,
                  "precision: must be 0 (float32) or 1 (int8)");
  }
  if (o.precision == Precision::kInt8 && o.training) {
    return Refuse(Status::kInvalidOption,
                  "precision: int8 is for inference; training needs float32");
  }
  if (o.mask_strategy == MaskStrategy::kRenormalize &&
      o.causal != CausalMask::kNone) {
    // The book's route (softmax over every key, mask, renormalise) is
    // defined here for a visible set [0, end) of each row only.
    if (o.sinks) {
      return Refuse(Status::kInvalidOption,
                    "mask_strategy: kRenormalize cannot take sinks");
    }
    if (o.mask.kind != MaskKind::kNone) {
      return Refuse(Status::kInvalidOption,
                    "mask_strategy: kRenormalize cannot take a mask");
    }
    if (o.window_left >= 0) {
      return Refuse(Status::kInvalidOption,
                    "mask_strategy: kRenormalize cannot take window_left");
    }
    if (o.softcap > 0.0f) {
      return Refuse(Status::kInvalidOption,
                    "mask_strategy: kRenormalize cannot take softcap");
    }
  }
  return Status::kOk;
}

Status ValidateAttentionWeights(const AttentionShape& s) {
  if (!BytesFit({s.batch, s.heads, s.query_len, s.key_len})) {
    return internal::Refuse(Status::kTooLarge,
                            "weights: batch·heads·query_len·key_len·4 bytes "
                            "do not fit size_t");
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
  // The forward's checks; k and v dense (a cache's capacity layout is the
  // forward's only: the backward trains on a call's own keys).
  const Status st = ValidateAttention(s, o);
  if (st != Status::kOk) return st;
  if (o.precision != Precision::kFloat32) {
    return internal::Refuse(Status::kInvalidOption,
                            "precision: the backward takes float32 only");
  }
  if (s.kv_dtype != KvDtype::kFloat32) {
    return internal::Refuse(Status::kInvalidShape,
                            "kv_dtype: the backward takes float32 k and v");
  }
  if (s.kv_capacity != 0 && s.kv_capacity != s.key_len) {
    return internal::Refuse(Status::kInvalidShape,
                            "kv_capacity: the backward takes dense k and v");
  }
  if (!grad_out || !q || !k || !v || !out || !log_sum_exp || !grad_q ||
      !grad_k || !grad_v) {
    return internal::Refuse(Status::kNullPointer,
                            "a required tensor of the backward is null");
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
