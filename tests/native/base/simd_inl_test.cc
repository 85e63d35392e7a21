// src/base/simd-inl.h on every compiled target: the tags' lane counts, the panel
// width, RoundUp, and MulAddRelaxed against a plain scalar loop (either
// rounding: fused, or a product then a sum).

#include <cmath>
#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/base/simd_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/base/simd-inl.h"
#include "tests/native/kernel_test_util.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

void TestTagsAndPanel() {
  const size_t n = hn::Lanes(DF());
  EXPECT_GE(n, 1u);
  EXPECT_EQ(hn::Lanes(D1()), 1u);
  EXPECT_EQ(PanelWidth(), 2 * n) << hwy::TargetName(HWY_TARGET);
  for (size_t m :
       {size_t{1}, size_t{3}, size_t{4}, n, PanelWidth(), size_t{16}}) {
    for (size_t x = 0; x < 100; ++x) {
      const size_t r = RoundUp(x, m);
      EXPECT_EQ(r % m, 0u);
      EXPECT_TRUE(r >= x && r < x + m) << x << " " << m;
    }
  }
}

void TestMulAddRelaxed() {
  std::mt19937 rng(11);
  const DF df;
  const size_t lanes = hn::Lanes(df);
  for (size_t n : testing_util::KernelSizes()) {
    const size_t padded = RoundUp(n, lanes);
    auto a = testing_util::AlignedRandom(padded, &rng, -4.0f, 4.0f);
    auto b = testing_util::AlignedRandom(padded, &rng, -4.0f, 4.0f);
    auto c = testing_util::AlignedRandom(padded, &rng, -4.0f, 4.0f);
    std::vector<float> got(padded);
    for (size_t i = 0; i < padded; i += lanes) {
      hn::StoreU(
          MulAddRelaxed(hn::Load(df, a.get() + i), hn::Load(df, b.get() + i),
                        hn::Load(df, c.get() + i)),
          df, got.data() + i);
    }
    for (size_t i = 0; i < n; ++i) {
      const float fused = std::fma(a[i], b[i], c[i]);
      const float unfused = a[i] * b[i] + c[i];
      EXPECT_TRUE(got[i] == fused || got[i] == unfused)
          << hwy::TargetName(HWY_TARGET) << " n=" << n << " i=" << i << ": "
          << got[i] << " vs " << fused << " / " << unfused;
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
class SimdInlTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(SimdInlTest);
HWY_EXPORT_AND_TEST_P(SimdInlTest, TestTagsAndPanel);
HWY_EXPORT_AND_TEST_P(SimdInlTest, TestMulAddRelaxed);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
