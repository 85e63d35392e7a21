// Shared by the SIMD kernels, the scalar reference and the validation (not
// installed): the causal mask rule, the scale, size arithmetic.

#ifndef CAUSAL_ATTENTION_SRC_INTERNAL_H_
#define CAUSAL_ATTENTION_SRC_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include <cmath>

#include "src/attention.h"

namespace causal_attention {
namespace internal {

// Number of keys visible to query `i`: keys [0, VisibleEnd) are visible.
inline size_t VisibleEnd(const AttentionShape& s, CausalMask causal, size_t i) {
  const int64_t tk = s.key_len;
  int64_t end;
  switch (causal) {
    case CausalMask::kTopLeft:
      end = static_cast<int64_t>(i) + 1;
      break;
    case CausalMask::kBottomRight:
      end = static_cast<int64_t>(i) + 1 + (s.key_len - s.query_len);
      break;
    default:
      end = tk;
  }
  if (end < 0) end = 0;
  if (end > tk) end = tk;
  return static_cast<size_t>(end);
}

inline float ResolvedScale(const AttentionShape& s, const AttentionOptions& o) {
  return o.scale.has_value() ? *o.scale : DefaultScale(s.head_dim);
}

inline bool DropoutActive(const AttentionOptions& o) {
  return o.training && o.dropout > 0.0f;
}

// a * b, false on size_t overflow.
inline bool MulSize(size_t a, size_t b, size_t* out) {
  if (a != 0 && b > SIZE_MAX / a) return false;
  *out = a * b;
  return true;
}

}  // namespace internal
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_INTERNAL_H_
