// src/simd/row_passes-inl.h on every compiled target, each pass against a plain
// scalar loop on rows of every length in KernelSizes() (whole vectors, the
// one-lane tail, both), starting at an odd offset (unaligned):
//  * ScaleMaxRow, ScaleRow: x·scale bit-exact, the max exact, any NaN or
//    ±Inf (in the vector part or the tail) reported;
//  * MaxRow exact; SumRow within 1e-6 of the double sum;
//  * ExpSumRow: every e^(x - m) within 1 ULP of double exp rounded to float
//    (exp-inl.h's bound), the sum within 1e-5 relative;
//  * AddScaledRow: y + f·x, fused or not (either rounding).

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/simd/row_passes_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/simd/row_passes-inl.h"
#include "tests/native/kernel_test_util.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

using testing_util::KernelSizes;

// A row of n random values at offset 1 of its buffer (never aligned).
struct Row {
  std::vector<float> buf;
  float* x() { return buf.data() + 1; }
  Row(size_t n, std::mt19937* rng, float lo = -3.0f, float hi = 3.0f)
      : buf(n + 1) {
    std::uniform_real_distribution<float> dist(lo, hi);
    for (float& v : buf) v = dist(*rng);
  }
};

void TestScaleMaxAndScaleRow() {
  std::mt19937 rng(21);
  const float scale = 0.3f;
  for (size_t n : KernelSizes()) {
    Row row(n, &rng);
    const std::vector<float> x(row.x(), row.x() + n);
    bool non_finite = false;
    const float m = ScaleMaxRow(row.x(), n, scale, &non_finite);
    float want_max = -std::numeric_limits<float>::infinity();
    for (size_t j = 0; j < n; ++j) {
      ASSERT_EQ(row.x()[j], x[j] * scale) << "n=" << n << " j=" << j;
      want_max = std::max(want_max, x[j] * scale);
    }
    EXPECT_EQ(m, want_max) << hwy::TargetName(HWY_TARGET) << " n=" << n;
    EXPECT_FALSE(non_finite) << "n=" << n;

    Row again(n, &rng);
    const std::vector<float> y(again.x(), again.x() + n);
    ScaleRow(again.x(), n, -1.5f);
    for (size_t j = 0; j < n; ++j) ASSERT_EQ(again.x()[j], y[j] * -1.5f);

    // A NaN or an infinity anywhere: first element, middle, last (the tail).
    for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      for (size_t at : {size_t{0}, n / 2, n - 1}) {
        Row r(n, &rng);
        r.x()[at] = bad;
        bool flagged = false;
        ScaleMaxRow(r.x(), n, scale, &flagged);
        EXPECT_TRUE(flagged) << hwy::TargetName(HWY_TARGET) << " n=" << n
                             << " at " << at << " value " << bad;
      }
    }
  }
}

void TestMaxAndSumRow() {
  std::mt19937 rng(22);
  for (size_t n : KernelSizes()) {
    Row row(n, &rng);
    float want_max = -std::numeric_limits<float>::infinity();
    double want_sum = 0.0;
    for (size_t j = 0; j < n; ++j) {
      want_max = std::max(want_max, row.x()[j]);
      want_sum += row.x()[j];
    }
    EXPECT_EQ(MaxRow(row.x(), n), want_max) << "n=" << n;
    EXPECT_TRUE(
        testing_util::NearSum(SumRow(row.x(), n), want_sum, 1e-6 * n, "SumRow"))
        << hwy::TargetName(HWY_TARGET) << " n=" << n;
  }
}

void TestExpSumRow() {
  std::mt19937 rng(23);
  for (size_t n : KernelSizes()) {
    // Scores minus their max over the range where the 1 ULP bound holds.
    Row row(n, &rng, -87.3f, 0.0f);
    row.x()[n / 2] = 0.0f;  // the max
    const std::vector<float> x(row.x(), row.x() + n);
    const float sum = ExpSumRow(row.x(), n, 0.0f);
    double want_sum = 0.0;
    for (size_t j = 0; j < n; ++j) {
      const double e = std::exp(static_cast<double>(x[j]));
      want_sum += e;
      EXPECT_LE(testing_util::UlpDistance(row.x()[j], static_cast<float>(e)), 1)
          << hwy::TargetName(HWY_TARGET) << " n=" << n << " x=" << x[j];
    }
    EXPECT_EQ(row.x()[n / 2], 1.0f);
    EXPECT_TRUE(testing_util::NearSum(sum, want_sum, 1e-5, "ExpSumRow"))
        << hwy::TargetName(HWY_TARGET) << " n=" << n;
  }
  // A non-zero max is subtracted first.
  std::vector<float> shifted = {3.0f, 2.0f, 1.0f};
  const float s = ExpSumRow(shifted.data(), 3, 3.0f);
  EXPECT_EQ(shifted[0], 1.0f);
  EXPECT_NEAR(s, 1.0 + std::exp(-1.0) + std::exp(-2.0), 1e-6);
}

void TestAddScaledRow() {
  std::mt19937 rng(24);
  const float f = 0.7f;
  for (size_t n : KernelSizes()) {
    Row x(n, &rng), y(n, &rng);
    const std::vector<float> y0(y.x(), y.x() + n);
    AddScaledRow(y.x(), x.x(), n, f);
    for (size_t j = 0; j < n; ++j) {
      const float fused = std::fma(f, x.x()[j], y0[j]);
      const float unfused = f * x.x()[j] + y0[j];
      ASSERT_TRUE(y.x()[j] == fused || y.x()[j] == unfused)
          << hwy::TargetName(HWY_TARGET) << " n=" << n << " j=" << j;
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {
class RowPassesInlTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(RowPassesInlTest);
HWY_EXPORT_AND_TEST_P(RowPassesInlTest, TestScaleMaxAndScaleRow);
HWY_EXPORT_AND_TEST_P(RowPassesInlTest, TestMaxAndSumRow);
HWY_EXPORT_AND_TEST_P(RowPassesInlTest, TestExpSumRow);
HWY_EXPORT_AND_TEST_P(RowPassesInlTest, TestAddScaledRow);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
