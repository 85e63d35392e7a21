// AdamW's update (src/model/optim.h). The JS loop it replaced rounded each
// product and quotient to float32 and added in double before rounding
// (Math.fround around each JS expression): here every product and quotient
// is a float32 operation, every sum a double one of float32 values rounded
// to float32 (exact where the JS sum was a float32 one, since a double sum
// of two float32 values rounds to the same float32), and the conversions
// between them keep a compiler from contracting a product and a sum into
// one fused multiply-add, which would round once instead of twice.

#include "src/model/optim.h"

#include <cmath>

#include "hwy/base.h"

namespace causal_attention {
namespace {

inline float Sum(double a, double b) { return static_cast<float>(a + b); }

}  // namespace

void AdamWUpdate(const AdamWStep& s, const AdamWTensor* tensors,
                 size_t count) {
  for (size_t t = 0; t < count; ++t) {
    const AdamWTensor& x = tensors[t];
    float* HWY_RESTRICT p = x.p;
    const float* HWY_RESTRICT g = x.g;
    float* HWY_RESTRICT m = x.m;
    float* HWY_RESTRICT v = x.v;
    const float step = x.minus_step;
    const float c2 = x.correction2;
    for (size_t i = 0; i < x.n; ++i) {
      const float gi = g[i];
      const float decayed = p[i] * s.decay;
      // m + w1 · (g - m): JS's product of two float32 values is exact in
      // double, so the double multiply-add here rounds only the sum.
      const float mi = static_cast<float>(
          static_cast<double>(m[i]) +
          static_cast<double>(s.one_minus_beta1) *
              static_cast<double>(gi - m[i]));
      const float vi = Sum(v[i] * s.beta2, (s.one_minus_beta2 * gi) * gi);
      m[i] = mi;
      v[i] = vi;
      const float denom = Sum(std::sqrt(vi) / c2, s.eps);
      p[i] = Sum(decayed, (step * mi) / denom);
    }
  }
}

}  // namespace causal_attention
