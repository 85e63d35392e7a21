// What the per-header kernel tests (tests/native/*_inl_test.cc) share: the
// row lengths they try, aligned buffers, and comparisons with a plain scalar
// loop. Not per-target: no vector types here.

#ifndef CAUSAL_ATTENTION_TESTS_NATIVE_KERNEL_TEST_UTIL_H_
#define CAUSAL_ATTENTION_TESTS_NATIVE_KERNEL_TEST_UTIL_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"

namespace causal_attention {
namespace testing_util {

// Lengths 1 and 3, around every vector width (4, 8, 16 floats), and long
// rows: whole vectors, one-lane tails and both together.
inline const std::vector<size_t>& KernelSizes() {
  static const std::vector<size_t> sizes = {1,  2,  3,  4,   5,   7,  8,
                                            9,  15, 16, 17,  31,  32, 33,
                                            63, 64, 65, 100, 255, 257};
  return sizes;
}

// n floats from [lo, hi), 64-byte aligned (the packed buffers' contract).
inline hwy::AlignedFreeUniquePtr<float[]> AlignedRandom(size_t n,
                                                        std::mt19937* rng,
                                                        float lo = -1.0f,
                                                        float hi = 1.0f) {
  auto p = hwy::AllocateAligned<float>(n == 0 ? 1 : n);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (size_t i = 0; i < n; ++i) p[i] = dist(*rng);
  return p;
}

// Distance in units in the last place between two floats of the same sign.
inline int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  return ia > ib ? static_cast<int64_t>(ia) - ib
                 : static_cast<int64_t>(ib) - ia;
}

// |got - want| <= tol · (1 + |want|) for a value computed in double (the
// caller streams the target's name: this header is not per-target).
inline ::testing::AssertionResult NearSum(float got, double want, double tol,
                                          const std::string& where) {
  if (std::fabs(static_cast<double>(got) - want) <=
      tol * (1.0 + std::fabs(want))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << where << ": " << got << " vs " << want;
}

// The plain scalar loop the matrix kernels are held to, in double:
// want[r][j] = c0[r][j] + sum_{i in [begin[r], end[r])} a[r][i] · b[i][j]
// (b row-major [depth][ldb]), and the bound on the float kernel's error:
// 1e-5 · (1 + sum |a[r][i] · b[i][j]|) per element.
struct ScalarProduct {
  std::vector<double> want, bound;
  size_t ldc;

  ScalarProduct(const float* a, size_t lda, size_t rows, const size_t* begin,
                const size_t* end, const float* b, size_t ldb, size_t ncols,
                const float* c0, size_t ldc_)
      : want(rows * ncols), bound(rows * ncols), ldc(ldc_) {
    for (size_t r = 0; r < rows; ++r) {
      for (size_t j = 0; j < ncols; ++j) {
        double acc = c0 ? c0[r * ldc + j] : 0.0, mag = std::fabs(acc);
        for (size_t i = begin[r]; i < end[r]; ++i) {
          const double t = static_cast<double>(a[r * lda + i]) * b[i * ldb + j];
          acc += t;
          mag += std::fabs(t);
        }
        want[r * ncols + j] = acc;
        bound[r * ncols + j] = 1e-5 * (1.0 + mag);
      }
    }
  }

  // c[r][j] for r < rows, j < ncols within the bound (NaN fails).
  ::testing::AssertionResult Matches(const float* c, size_t rows,
                                     size_t ncols) const {
    for (size_t r = 0; r < rows; ++r) {
      for (size_t j = 0; j < ncols; ++j) {
        const double got = c[r * ldc + j], w = want[r * ncols + j];
        if (!(std::fabs(got - w) <= bound[r * ncols + j])) {
          return ::testing::AssertionFailure()
                 << "c[" << r << "][" << j << "] = " << got << ", want " << w;
        }
      }
    }
    return ::testing::AssertionSuccess();
  }
};

}  // namespace testing_util
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_TESTS_NATIVE_KERNEL_TEST_UTIL_H_
