// Overflow-checked size arithmetic for allocations (not installed): used by
// every operation that sizes a buffer, below all of them.

#ifndef CAUSAL_ATTENTION_SRC_SIZE_MATH_H_
#define CAUSAL_ATTENTION_SRC_SIZE_MATH_H_

#include <stddef.h>
#include <stdint.h>

namespace causal_attention {
namespace internal {

// a * b, false on size_t overflow.
inline bool MulSize(size_t a, size_t b, size_t* out) {
  if (a != 0 && b > SIZE_MAX / a) return false;
  *out = a * b;
  return true;
}

}  // namespace internal
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_SIZE_MATH_H_
