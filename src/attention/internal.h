// Shared by the SIMD kernels, the scalar reference and the validation (not
// installed): the causal mask rule, the scale, the KV-head defaults (size
// arithmetic: size_math.h).

#ifndef CAUSAL_ATTENTION_SRC_INTERNAL_H_
#define CAUSAL_ATTENTION_SRC_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include <cmath>

#include "src/attention/attention.h"

namespace causal_attention {
namespace internal {

// The one place of the rule "0 KV heads means one per query head" (the
// attention shape's kv_heads, the layer's num_kv_heads).
inline int64_t ResolveKvHeads(int64_t kv_heads, int64_t heads) {
  return kv_heads == 0 ? heads : kv_heads;
}
// KV heads and rows per KV head with the 0 = default rules resolved.
inline int64_t KvHeads(const AttentionShape& s) {
  return ResolveKvHeads(s.kv_heads, s.heads);
}
inline int64_t KvCapacity(const AttentionShape& s) {
  return s.kv_capacity == 0 ? s.key_len : s.kv_capacity;
}
// The KV head (in [B·kv_heads]) that query head bh (in [B·H]) reads.
inline size_t KvHeadOf(const AttentionShape& s, size_t bh) {
  const size_t h = static_cast<size_t>(s.heads);
  const size_t group = h / static_cast<size_t>(KvHeads(s));
  return bh / h * static_cast<size_t>(KvHeads(s)) + bh % h / group;
}

// The row (in units of the row's width) of query / output row (b, h, i) and
// of key / value row (b, kvh, j) in the layout of attention.h.
inline size_t QueryRowIndex(const AttentionShape& s, Layout layout, size_t b,
                            size_t h, size_t i) {
  const size_t heads = static_cast<size_t>(s.heads);
  const size_t tq = static_cast<size_t>(s.query_len);
  return layout == Layout::kBSHD ? (b * tq + i) * heads + h
                                 : (b * heads + h) * tq + i;
}
inline size_t KeyRowIndex(const AttentionShape& s, Layout layout, size_t b,
                          size_t kvh, size_t j) {
  const size_t kv_heads = static_cast<size_t>(KvHeads(s));
  const size_t cap = static_cast<size_t>(KvCapacity(s));
  return layout == Layout::kBSHD ? (b * cap + j) * kv_heads + kvh
                                 : (b * kv_heads + kvh) * cap + j;
}

inline float ResolvedScale(const AttentionShape& s, const AttentionOptions& o) {
  return o.scale.has_value() ? *o.scale : DefaultScale(s.head_dim);
}

inline bool DropoutActive(const AttentionOptions& o) {
  return o.training && o.dropout > 0.0f;
}

// Whether x[0, n) holds no NaN or ±Inf (x · 0 is 0 exactly for finite x).
// Eight independent sums, so that the loop is not one long add chain (and
// vectorises).
inline bool AllFinite(const float* x, size_t n) {
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t l = 0; l < 8; ++l) acc[l] += x[i + l] * 0.0f;
  }
  for (; i < n; ++i) acc[0] += x[i] * 0.0f;
  float sum = 0.0f;
  for (size_t l = 0; l < 8; ++l) sum += acc[l];
  return sum == 0.0f;
}

}  // namespace internal
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_INTERNAL_H_
