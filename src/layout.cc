#include "src/layout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/internal.h"

namespace causal_attention {
namespace internal {

LayoutSizes::LayoutSizes(const AttentionShape& s)
    : b(static_cast<size_t>(s.batch)),
      h(static_cast<size_t>(s.heads)),
      kvh(static_cast<size_t>(KvHeads(s))),
      tq(static_cast<size_t>(s.query_len)),
      tk(static_cast<size_t>(s.key_len)),
      cap(static_cast<size_t>(KvCapacity(s))),
      d(static_cast<size_t>(s.head_dim)),
      dv(static_cast<size_t>(s.value_dim)) {}

void BshdToBhsd(const float* src, size_t batch, size_t seq, size_t seq_alloc,
                size_t heads, size_t width, float* dst) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t h = 0; h < heads; ++h) {
      for (size_t s = 0; s < seq; ++s) {
        memcpy(dst + ((b * heads + h) * seq + s) * width,
               src + ((b * seq_alloc + s) * heads + h) * width,
               width * sizeof(float));
      }
    }
  }
}

void BhsdToBshd(const float* src, size_t batch, size_t seq, size_t heads,
                size_t width, float* dst) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t s = 0; s < seq; ++s) {
      for (size_t h = 0; h < heads; ++h) {
        memcpy(dst + ((b * seq + s) * heads + h) * width,
               src + ((b * heads + h) * seq + s) * width,
               width * sizeof(float));
      }
    }
  }
}

FloatBuffer::FloatBuffer(size_t floats)
    : data_(floats <= SIZE_MAX / sizeof(float)
                ? static_cast<float*>(malloc(floats * sizeof(float) + 1))
                : nullptr) {}
FloatBuffer::~FloatBuffer() { free(data_); }

}  // namespace internal
}  // namespace causal_attention
