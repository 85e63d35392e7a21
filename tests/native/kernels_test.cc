// Per-target tests of the kernel building blocks (src/*-inl.h).

#include <cmath>
#include <cstring>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/kernels_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/row_passes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// Distance in units in the last place between two positive floats.
int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  return ia > ib ? static_cast<int64_t>(ia) - ib
                 : static_cast<int64_t>(ib) - ia;
}

// ExpSumRow = e^(x - max) for every element, on every target; compared with
// double exp rounded to float. Documented bound: 1 ULP on [-87.3, 0].
void TestExpNonPositive() {
  std::vector<float> x;
  for (double v = -87.3; v <= 0.0; v += 0.000731)
    x.push_back(static_cast<float>(v));
  for (float v : {0.0f, -1e-30f, -0.5f * 0.693147f, -0.693147f, -1.0f, -20.0f})
    x.push_back(v);
  x.push_back(0.0f);  // the row max, so ExpSumRow computes e^x itself
  std::vector<float> e = x;
  const float sum = ExpSumRow(e.data(), e.size(), 0.0f);
  int64_t worst = 0;
  double total = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float ref = static_cast<float>(std::exp(static_cast<double>(x[i])));
    total += std::exp(static_cast<double>(x[i]));
    worst = HWY_MAX(worst, UlpDistance(e[i], ref));
  }
  EXPECT_LE(worst, 1) << hwy::TargetName(HWY_TARGET);
  EXPECT_NEAR(sum, total, 1e-5 * total);
  EXPECT_EQ(e.back(), 1.0f);  // exp(0) is exactly 1

  // Beyond the normal range, and -inf: exactly 0.
  std::vector<float> tiny = {-87.4f, -100.0f, -1e30f,
                             -std::numeric_limits<float>::infinity(), 0.0f};
  ExpSumRow(tiny.data(), tiny.size(), 0.0f);
  for (size_t i = 0; i + 1 < tiny.size(); ++i) EXPECT_EQ(tiny[i], 0.0f) << i;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {
class KernelsTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(KernelsTest);
HWY_EXPORT_AND_TEST_P(KernelsTest, TestExpNonPositive);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
