// src/simd/dot-inl.h on every compiled vector target (the scalar target has no
// dot-product kernels): SumOfFour's lane i is the sum of a_i's lanes, and
// DotTile's c[r][j] = a_r · b_j matches a plain scalar loop (in double,
// within 1e-5 of the magnitude) for 1 to 5 rows, key counts of every length
// in KernelSizes() and head sizes 1, 3, 4, 17, 64, 65 (padded to whole
// vectors, as the callers do). B holds exactly nb rows: the missing rows of
// the last group of four must read the zero row, never past B.

#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/simd/dot_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/simd/dot-inl.h"
#include "src/base/simd-inl.h"
#include "tests/native/kernel_test_util.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

void TestSumOfFour() {
#if HWY_TARGET != HWY_SCALAR
  const DF df;
  const size_t n = hn::Lanes(df);
  std::vector<float> in(4 * n);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 13);
  float got[4];
  hn::StoreU(
      SumOfFour(df, hn::LoadU(df, in.data()), hn::LoadU(df, in.data() + n),
                hn::LoadU(df, in.data() + 2 * n),
                hn::LoadU(df, in.data() + 3 * n)),
      hn::Full128<float>(), got);
  for (size_t i = 0; i < 4; ++i) {
    float want = 0.0f;  // small integers: exact in any order
    for (size_t x = 0; x < n; ++x) want += in[i * n + x];
    EXPECT_EQ(got[i], want) << hwy::TargetName(HWY_TARGET) << " lane " << i;
  }
#endif
}

void TestDotTile() {
#if HWY_TARGET != HWY_SCALAR
  std::mt19937 rng(51);
  const size_t lanes = hn::Lanes(DF());
  for (size_t d :
       {size_t{1}, size_t{3}, size_t{4}, size_t{17}, size_t{64}, size_t{65}}) {
    const size_t depth = RoundUp(d, lanes);
    const std::vector<float> zero(depth, 0.0f);
    for (size_t rows = 1; rows <= 5; ++rows) {
      for (size_t nb : testing_util::KernelSizes()) {
        // Rows padded with zeros past d, as attention pads odd head sizes.
        std::vector<float> a(rows * depth, 0.0f), b(nb * depth, 0.0f);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        for (size_t r = 0; r < rows; ++r) {
          for (size_t x = 0; x < d; ++x) a[r * depth + x] = dist(rng);
        }
        for (size_t j = 0; j < nb; ++j) {
          for (size_t x = 0; x < d; ++x) b[j * depth + x] = dist(rng);
        }
        const size_t ldc = RoundUp(nb, 4);
        std::vector<float> c(rows * ldc, -7.0f);
        DotTile(a.data(), depth, rows, b.data(), depth, nb, depth, zero.data(),
                c.data(), ldc);
        // b as [depth][nb] for the reference: bᵀ.
        std::vector<float> bt(depth * nb);
        for (size_t j = 0; j < nb; ++j) {
          for (size_t x = 0; x < depth; ++x) bt[x * nb + j] = b[j * depth + x];
        }
        const std::vector<size_t> begin(rows, 0), end(rows, depth);
        const testing_util::ScalarProduct ref(a.data(), depth, rows,
                                              begin.data(), end.data(),
                                              bt.data(), nb, nb, nullptr, ldc);
        EXPECT_TRUE(ref.Matches(c.data(), rows, nb))
            << hwy::TargetName(HWY_TARGET) << " d=" << d << " rows=" << rows
            << " nb=" << nb;
      }
    }
  }
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {
class DotInlTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(DotInlTest);
HWY_EXPORT_AND_TEST_P(DotInlTest, TestSumOfFour);
HWY_EXPORT_AND_TEST_P(DotInlTest, TestDotTile);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
