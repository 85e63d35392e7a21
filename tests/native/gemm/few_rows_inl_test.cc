// src/gemm/few_rows-inl.h on every compiled target, against a plain scalar loop
// (in double, within 1e-5 of the magnitude): DotOneRow's c[j] = a · b_j
// (vector targets; B holds exactly nb rows, the missing ones of the last
// group of eight read the zero row) for key counts of every length in
// KernelSizes() and head sizes 1, 3, 17, 64, 65 padded to whole vectors;
// MatMulAddFewRows<1> and <2>: c += a·b for depths of every length and 1 to
// 9 panels of columns (through both the wide and the two-vector passes).
// The GQA group's four-row kernels: DotFourRows (odd key counts: the last
// pair reads the zero row) and MatMulAddFourRows (depths across its blocks
// of 16 value rows), each also bit-identical to the kernel it replaces for
// four rows (DotTile, MatMulAddRagged with equal ends).

#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/gemm/few_rows_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/gemm/few_rows-inl.h"
#include "src/gemm/matmul-inl.h"
#include "src/base/simd-inl.h"
#include "tests/native/kernel_test_util.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

using testing_util::AlignedRandom;
using testing_util::ScalarProduct;

void TestDotOneRow() {
#if HWY_TARGET != HWY_SCALAR
  std::mt19937 rng(71);
  const size_t lanes = hn::Lanes(DF());
  for (size_t d : {size_t{1}, size_t{3}, size_t{17}, size_t{64}, size_t{65}}) {
    const size_t depth = RoundUp(d, lanes);
    const std::vector<float> zero(depth, 0.0f);
    for (size_t nb : testing_util::KernelSizes()) {
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> a(depth, 0.0f), b(nb * depth, 0.0f);
      for (size_t x = 0; x < d; ++x) a[x] = dist(rng);
      for (size_t j = 0; j < nb; ++j) {
        for (size_t x = 0; x < d; ++x) b[j * depth + x] = dist(rng);
      }
      std::vector<float> c(RoundUp(nb, 8), -7.0f), bt(depth * nb);
      DotOneRow(a.data(), b.data(), depth, nb, depth, zero.data(), c.data());
      for (size_t j = 0; j < nb; ++j) {
        for (size_t x = 0; x < depth; ++x) bt[x * nb + j] = b[j * depth + x];
      }
      const size_t begin = 0, end = depth;
      const ScalarProduct ref(a.data(), depth, 1, &begin, &end, bt.data(), nb,
                              nb, nullptr, nb);
      EXPECT_TRUE(ref.Matches(c.data(), 1, nb))
          << hwy::TargetName(HWY_TARGET) << " d=" << d << " nb=" << nb;
    }
  }
#endif
}

template <size_t MR>
void CheckFewRows() {
  std::mt19937 rng(72 + MR);
  for (size_t depth : testing_util::KernelSizes()) {
    for (size_t panels = 1; panels <= 9; ++panels) {
      const size_t ncols = panels * PanelWidth();
      const size_t lda = depth + 3, ldb = ncols + 1, ldc = RoundUp(ncols, 16);
      // b rows are user memory (unaligned stride); c is packed.
      const std::vector<float> a = [&] {
        auto p = AlignedRandom(MR * lda, &rng);
        return std::vector<float>(p.get(), p.get() + MR * lda);
      }();
      auto b = AlignedRandom(depth * ldb, &rng);
      auto c = AlignedRandom(MR * ldc, &rng);
      const std::vector<float> c0(c.get(), c.get() + MR * ldc);
      MatMulAddFewRows<MR>(a.data(), lda, depth, b.get(), ldb, ncols, c.get(),
                           ldc);
      const std::vector<size_t> begin(MR, 0), end(MR, depth);
      const ScalarProduct ref(a.data(), lda, MR, begin.data(), end.data(),
                              b.get(), ldb, ncols, c0.data(), ldc);
      EXPECT_TRUE(ref.Matches(c.get(), MR, ncols))
          << hwy::TargetName(HWY_TARGET) << " MR=" << MR << " depth=" << depth
          << " ncols=" << ncols;
    }
  }
}

void TestMatMulAddFewRows() {
  CheckFewRows<1>();
  CheckFewRows<2>();
}

void TestDotFourRows() {
#if HWY_TARGET != HWY_SCALAR
  std::mt19937 rng(73);
  const size_t lanes = hn::Lanes(DF());
  for (size_t d : {size_t{1}, size_t{3}, size_t{17}, size_t{65}, size_t{128}}) {
    const size_t depth = RoundUp(d, lanes), lda = depth + lanes;
    const std::vector<float> zero(depth, 0.0f);
    for (size_t nb : testing_util::KernelSizes()) {
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> a(4 * lda, 0.0f), b(nb * depth, 0.0f);
      for (size_t r = 0; r < 4; ++r) {
        for (size_t x = 0; x < d; ++x) a[r * lda + x] = dist(rng);
      }
      for (size_t j = 0; j < nb; ++j) {
        for (size_t x = 0; x < d; ++x) b[j * depth + x] = dist(rng);
      }
      const size_t ldc = RoundUp(nb, 8);
      std::vector<float> c(4 * ldc, -7.0f), tile(4 * ldc, -7.0f);
      std::vector<float> bt(depth * nb);
      DotFourRows(a.data(), lda, b.data(), depth, nb, depth, zero.data(),
                  c.data(), ldc);
      DotTile(a.data(), lda, 4, b.data(), depth, nb, depth, zero.data(),
              tile.data(), ldc);
      for (size_t j = 0; j < nb; ++j) {
        for (size_t x = 0; x < depth; ++x) bt[x * nb + j] = b[j * depth + x];
      }
      const std::vector<size_t> begin(4, 0), end(4, depth);
      const ScalarProduct ref(a.data(), lda, 4, begin.data(), end.data(),
                              bt.data(), nb, nb, nullptr, ldc);
      EXPECT_TRUE(ref.Matches(c.data(), 4, nb))
          << hwy::TargetName(HWY_TARGET) << " d=" << d << " nb=" << nb;
      for (size_t r = 0; r < 4; ++r) {
        for (size_t j = 0; j < nb; ++j) {
          ASSERT_EQ(c[r * ldc + j], tile[r * ldc + j])
              << hwy::TargetName(HWY_TARGET) << " d=" << d << " nb=" << nb;
        }
      }
    }
  }
#endif
}

void TestMatMulAddFourRows() {
  std::mt19937 rng(76);
  for (size_t depth : testing_util::KernelSizes()) {
    for (size_t panels : {size_t{1}, size_t{3}, size_t{8}}) {
      const size_t ncols = panels * PanelWidth();
      const size_t lda = depth + 3, ldb = ncols + 1, ldc = RoundUp(ncols, 16);
      const std::vector<float> a = [&] {
        auto p = AlignedRandom(4 * lda, &rng);
        return std::vector<float>(p.get(), p.get() + 4 * lda);
      }();
      auto b = AlignedRandom(depth * ldb, &rng);
      auto c = AlignedRandom(4 * ldc, &rng);
      auto ragged = AlignedRandom(4 * ldc, &rng);
      const std::vector<float> c0(c.get(), c.get() + 4 * ldc);
      for (size_t i = 0; i < 4 * ldc; ++i) ragged.get()[i] = c0[i];
      MatMulAddFourRows(a.data(), lda, depth, b.get(), ldb, ncols, c.get(),
                        ldc);
      const std::vector<size_t> begin(4, 0), end(4, depth);
      MatMulAddRagged(a.data(), lda, 4, end.data(), b.get(), ldb, ncols,
                      ragged.get(), ldc);
      const ScalarProduct ref(a.data(), lda, 4, begin.data(), end.data(),
                              b.get(), ldb, ncols, c0.data(), ldc);
      EXPECT_TRUE(ref.Matches(c.get(), 4, ncols))
          << hwy::TargetName(HWY_TARGET) << " depth=" << depth
          << " ncols=" << ncols;
      for (size_t r = 0; r < 4; ++r) {
        for (size_t j = 0; j < ncols; ++j) {
          ASSERT_EQ(c.get()[r * ldc + j], ragged.get()[r * ldc + j])
              << hwy::TargetName(HWY_TARGET) << " depth=" << depth;
        }
      }
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
class FewRowsInlTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(FewRowsInlTest);
HWY_EXPORT_AND_TEST_P(FewRowsInlTest, TestDotOneRow);
HWY_EXPORT_AND_TEST_P(FewRowsInlTest, TestMatMulAddFewRows);
HWY_EXPORT_AND_TEST_P(FewRowsInlTest, TestDotFourRows);
HWY_EXPORT_AND_TEST_P(FewRowsInlTest, TestMatMulAddFourRows);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
