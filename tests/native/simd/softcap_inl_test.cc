// SoftcapRow (src/attention/attention_forward-inl.h; its tanh is softcap-inl.h's
// TanhOverCap, which the backward uses too) on every compiled target:
// softcap · tanh(x / softcap) through ExpNonPositive, against double tanh.
// Stated accuracy: |error| <= softcap · 2.5e-7 (measured: softcap · 1.5e-7
// at most, near |x| = softcap, on every target); ±Inf gives ±softcap, NaN
// stays NaN, odd lengths take the one-lane tail.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/simd/softcap_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/attention/attention_forward-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

void TestSoftcapAccuracy() {
  for (const float cap : {0.5f, 1.0f, 20.0f, 50.0f}) {
    // A grid over ±4·cap (tanh saturates beyond), denser near 0, plus points
    // far out; an odd length, so that the tail runs too.
    std::vector<float> x;
    for (double v = -4.0 * cap; v <= 4.0 * cap; v += cap * 0.00037) {
      x.push_back(static_cast<float>(v));
    }
    for (float v : {0.0f, -0.0f, 1e-30f, -1e-7f, 3e-4f, 1e3f, -1e30f}) {
      x.push_back(v);
    }
    if (x.size() % 2 == 0) x.push_back(0.25f);
    std::vector<float> y = x;
    SoftcapRow(cap, y.data(), y.size());
    double worst = 0.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double ref = cap * std::tanh(static_cast<double>(x[i]) / cap);
      const double err = std::fabs(static_cast<double>(y[i]) - ref);
      if (err > worst) {
        worst = err;
        worst_i = i;
      }
    }
    EXPECT_LE(worst, cap * 2.5e-7)
        << hwy::TargetName(HWY_TARGET) << " softcap " << cap << " at x = "
        << x[worst_i] << ": " << y[worst_i];
  }
}

// Scores far below the cap (a cap of 1e3 over scores near 1, or a cap so
// large it does nothing: the fuzz input tests/fuzz/corpus/softcap-huge-cap): the result stays within 1e-6 of the score itself,
// where 1 - exp(-2y) alone would cancel to nothing.
void TestSoftcapFarBelowCap() {
  for (const float cap : {1.0f, 50.0f, 1e3f, 1e6f, 1.3e32f}) {
    std::vector<float> x;
    // From where x / cap is still a normal float (below it the quotient
    // itself underflows, before any tanh).
    for (double v = std::max(1e-30, cap * 1e-36); v < 4.0 * cap; v *= 1.37) {
      x.push_back(static_cast<float>(v));
      x.push_back(static_cast<float>(-v));
    }
    x.push_back(0.5f);
    std::vector<float> y = x;
    SoftcapRow(cap, y.data(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double ref = cap * std::tanh(static_cast<double>(x[i]) / cap);
      EXPECT_LE(std::fabs(static_cast<double>(y[i]) - ref),
                1e-6 * std::fabs(ref) + 1e-38)
          << hwy::TargetName(HWY_TARGET) << " softcap " << cap
          << " at x = " << x[i] << ": " << y[i];
    }
  }
}

void TestSoftcapEdges() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {inf, -inf, nan, 0.0f, inf};
  SoftcapRow(50.0f, x.data(), x.size());
  EXPECT_EQ(x[0], 50.0f) << hwy::TargetName(HWY_TARGET);
  EXPECT_EQ(x[1], -50.0f) << hwy::TargetName(HWY_TARGET);
  EXPECT_TRUE(std::isnan(x[2])) << hwy::TargetName(HWY_TARGET);
  EXPECT_EQ(x[3], 0.0f) << hwy::TargetName(HWY_TARGET);
  EXPECT_EQ(x[4], 50.0f) << hwy::TargetName(HWY_TARGET);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {
class SoftcapInlTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(SoftcapInlTest);
HWY_EXPORT_AND_TEST_P(SoftcapInlTest, TestSoftcapAccuracy);
HWY_EXPORT_AND_TEST_P(SoftcapInlTest, TestSoftcapFarBelowCap);
HWY_EXPORT_AND_TEST_P(SoftcapInlTest, TestSoftcapEdges);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
