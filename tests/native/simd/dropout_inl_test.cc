// src/simd/dropout-inl.h on every compiled target against the scalar mask of
// src/simd/dropout.h (the reference's): Hash24Lanes equals dropout::Hash24 lane
// for lane, and DropoutRow keeps exactly the weights the scalar rule keeps
// (times keep_scale, bit-exact) and zeroes the others, for rows of every
// length in KernelSizes(), key offsets that wrap the 32-bit counter, and
// p = 0 (everything kept), 0.1, 0.5, 0.9.

#include <stdint.h>

#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/simd/dropout_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/simd/dropout-inl.h"
#include "src/simd/dropout.h"
#include "src/base/simd-inl.h"
#include "tests/native/kernel_test_util.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

void TestHash24Lanes() {
  const hn::ScalableTag<uint32_t> du;
  const size_t lanes = hn::Lanes(du);
  std::mt19937 rng(31);
  std::vector<uint32_t> cols(lanes), k0(lanes), k1(lanes), got(lanes);
  for (int round = 0; round < 200; ++round) {
    for (size_t i = 0; i < lanes; ++i) {
      cols[i] = rng();
      k0[i] = rng();
      k1[i] = rng();
    }
    hn::StoreU(Hash24Lanes(du, hn::LoadU(du, cols.data()),
                           hn::LoadU(du, k0.data()), hn::LoadU(du, k1.data())),
               du, got.data());
    for (size_t i = 0; i < lanes; ++i) {
      ASSERT_EQ(got[i], dropout::Hash24({k0[i], k1[i]}, cols[i]))
          << hwy::TargetName(HWY_TARGET) << " lane " << i;
      ASSERT_LT(got[i], 1u << dropout::kHashBits);
    }
  }
}

void TestDropoutRow() {
  std::mt19937 rng(32);
  for (float p : {0.0f, 0.1f, 0.5f, 0.9f}) {
    const uint32_t threshold = dropout::Threshold(p);
    const float keep_scale = dropout::KeepScale(p);
    for (size_t n : testing_util::KernelSizes()) {
      for (uint32_t col0 : {0u, 7u, 0xFFFFFFF0u}) {  // the last wraps
        const dropout::RowKey key = dropout::MakeRowKey(rng(), n);
        std::vector<float> x(n + 1);
        for (float& v : x) v = static_cast<float>(rng() % 1000) / 997.0f;
        const std::vector<float> before = x;
        DropoutRow(x.data() + 1, n, col0, key, threshold, keep_scale);
        EXPECT_EQ(x[0], before[0]);  // nothing before the row is touched
        for (size_t j = 0; j < n; ++j) {
          const uint32_t col = col0 + static_cast<uint32_t>(j);
          const bool keep = dropout::Hash24(key, col) >= threshold;
          const float want = keep ? before[j + 1] * keep_scale : 0.0f;
          ASSERT_EQ(x[j + 1], want)
              << hwy::TargetName(HWY_TARGET) << " p=" << p << " n=" << n
              << " col0=" << col0 << " j=" << j;
        }
      }
    }
  }
}

// The kept share of a long row is 1 - p (the mask is uniform).
void TestDropoutRate() {
  const size_t n = 100000;
  for (float p : {0.1f, 0.5f}) {
    std::vector<float> x(n, 1.0f);
    DropoutRow(x.data(), n, 0, dropout::MakeRowKey(5, 9), dropout::Threshold(p),
               1.0f);
    size_t kept = 0;
    for (float v : x) kept += v != 0.0f;
    EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - p, 0.01)
        << hwy::TargetName(HWY_TARGET);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {
class DropoutInlTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(DropoutInlTest);
HWY_EXPORT_AND_TEST_P(DropoutInlTest, TestHash24Lanes);
HWY_EXPORT_AND_TEST_P(DropoutInlTest, TestDropoutRow);
HWY_EXPORT_AND_TEST_P(DropoutInlTest, TestDropoutRate);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
