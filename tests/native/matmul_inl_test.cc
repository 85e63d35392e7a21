// src/matmul-inl.h on every compiled target (src/matmul.h's MatMul has its
// own test): the broadcast microkernels against a plain scalar loop (in
// double, within 1e-5 of the magnitude), for 1 to 9 rows (every remainder
// of the 4-row blocks), depths of every length in KernelSizes(), column
// counts of 1 to 3 panels:
//  * MatMulPacked: c = a·b, b packed;
//  * MatMulAddRagged: c += a·b, row r over depth [0, ends[r]);
//  * MatMulAddRaggedBegin: c += a·b, row r over depth [begins[r], end);
// and a NaN in b outside a row's range never reaches that row.

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/matmul_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/matmul-inl.h"
#include "src/simd-inl.h"
#include "tests/native/kernel_test_util.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

using testing_util::AlignedRandom;
using testing_util::ScalarProduct;

// Operands of one product: a [rows][lda] (lda = depth + 1: odd strides),
// b [depth][ldb] packed (aligned, ldb a multiple of 16 floats), c [rows][ldc]
// packed.
struct Operands {
  size_t rows, depth, ncols, lda, ldb, ldc;
  hwy::AlignedFreeUniquePtr<float[]> a, b, c, c0;

  Operands(size_t rows_, size_t depth_, size_t panels, std::mt19937* rng)
      : rows(rows_),
        depth(depth_),
        ncols(panels * PanelWidth()),
        lda(depth_ + 1),
        ldb(RoundUp(ncols, 16)),
        ldc(RoundUp(ncols, 16)),
        a(AlignedRandom(rows * lda, rng)),
        b(AlignedRandom(depth * ldb, rng)),
        c(AlignedRandom(rows * ldc, rng)),
        c0(AlignedRandom(rows * ldc, rng)) {
    for (size_t i = 0; i < rows * ldc; ++i) c0[i] = c[i];
  }
};

template <class Fn>
void ForEachShape(const Fn& fn) {
  std::mt19937 rng(61);
  for (size_t rows = 1; rows <= 9; ++rows) {
    for (size_t depth : testing_util::KernelSizes()) {
      for (size_t panels = 1; panels <= 3; ++panels) {
        Operands o(rows, depth, panels, &rng);
        fn(o, &rng);
      }
    }
  }
}

// o.c against the scalar loop: row r over depth [begin[r], end[r]), added
// to o.c0 when accumulating.
void ExpectProduct(const Operands& o, const std::vector<size_t>& begin,
                   const std::vector<size_t>& end, bool accumulate) {
  const ScalarProduct ref(o.a.get(), o.lda, o.rows, begin.data(), end.data(),
                          o.b.get(), o.ldb, o.ncols,
                          accumulate ? o.c0.get() : nullptr, o.ldc);
  EXPECT_TRUE(ref.Matches(o.c.get(), o.rows, o.ncols))
      << hwy::TargetName(HWY_TARGET) << " rows=" << o.rows
      << " depth=" << o.depth << " ncols=" << o.ncols;
}

void TestMatMulPacked() {
  ForEachShape([](Operands& o, std::mt19937*) {
    MatMulPacked(o.a.get(), o.lda, o.rows, o.b.get(), o.ldb, o.depth, o.ncols,
                 o.c.get(), o.ldc);
    ExpectProduct(o, std::vector<size_t>(o.rows, 0),
                  std::vector<size_t>(o.rows, o.depth), false);
  });
}

// Random ends (MatMulAddRagged) or begins (MatMulAddRaggedBegin) per row,
// one row using the whole depth.
void CheckRagged(bool begins) {
  ForEachShape([begins](Operands& o, std::mt19937* rng) {
    std::vector<size_t> begin(o.rows, 0), end(o.rows, o.depth);
    std::vector<size_t>& cut = begins ? begin : end;
    for (size_t& x : cut) x = (*rng)() % (o.depth + 1);
    cut[o.rows / 2] = begins ? 0 : o.depth;
    if (begins) {
      MatMulAddRaggedBegin(o.a.get(), o.lda, o.rows, begin.data(), o.depth,
                           o.b.get(), o.ldb, o.ncols, o.c.get(), o.ldc);
    } else {
      MatMulAddRagged(o.a.get(), o.lda, o.rows, end.data(), o.b.get(), o.ldb,
                      o.ncols, o.c.get(), o.ldc);
    }
    ExpectProduct(o, begin, end, true);
  });
}

void TestMatMulAddRagged() { CheckRagged(false); }
void TestMatMulAddRaggedBegin() { CheckRagged(true); }

// Row r must not see b's rows outside its range: NaN there stays out.
void TestRaggedNeverReadsMaskedTerms() {
  std::mt19937 rng(62);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Operands o(6, 33, 2, &rng);
  // Ends: only rows 0 and 4 reach depth 20, where b holds a NaN.
  const std::vector<size_t> end = {33, 5, 0, 17, 32, 1};
  o.b[20 * o.ldb] = nan;
  MatMulAddRagged(o.a.get(), o.lda, o.rows, end.data(), o.b.get(), o.ldb,
                  o.ncols, o.c.get(), o.ldc);
  EXPECT_TRUE(std::isnan(o.c[0])) << "row 0 sees depth 20";
  for (size_t r : {size_t{1}, size_t{2}, size_t{3}, size_t{5}}) {
    EXPECT_FALSE(std::isnan(o.c[r * o.ldc])) << "row " << r;
  }
  EXPECT_TRUE(std::isnan(o.c[4 * o.ldc])) << "row 4 sees depth 20";

  // Begins: only rows 0 and 4 start at or before depth 10, b's NaN.
  const std::vector<size_t> begin = {0, 28, 33, 16, 1, 32};
  Operands p(6, 33, 2, &rng);
  p.b[10 * p.ldb] = nan;
  MatMulAddRaggedBegin(p.a.get(), p.lda, p.rows, begin.data(), p.depth,
                       p.b.get(), p.ldb, p.ncols, p.c.get(), p.ldc);
  for (size_t r : {size_t{1}, size_t{2}, size_t{3}, size_t{5}}) {
    EXPECT_FALSE(std::isnan(p.c[r * p.ldc])) << "row " << r;
  }
  EXPECT_TRUE(std::isnan(p.c[0]) && std::isnan(p.c[4 * p.ldc]));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {
class MatMulInlTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(MatMulInlTest);
HWY_EXPORT_AND_TEST_P(MatMulInlTest, TestMatMulPacked);
HWY_EXPORT_AND_TEST_P(MatMulInlTest, TestMatMulAddRagged);
HWY_EXPORT_AND_TEST_P(MatMulInlTest, TestMatMulAddRaggedBegin);
HWY_EXPORT_AND_TEST_P(MatMulInlTest, TestRaggedNeverReadsMaskedTerms);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
