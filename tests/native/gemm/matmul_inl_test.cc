// src/gemm/matmul-inl.h on every compiled target (src/gemm/matmul.h's MatMul has its
// own test): the broadcast microkernels against a plain scalar loop (in
// double, within 1e-5 of the magnitude), for 1 to 9 rows (every remainder
// of the 4-row blocks), depths of every length in KernelSizes(), column
// counts of 1 to 3 panels:
//  * MatMulPacked: c = a·b, b packed;
//  * MatMulAddRagged: c += a·b, row r over depth [0, ends[r]);
//  * MatMulAddRaggedBegin: c += a·b, row r over depth [begins[r], end);
//  * the transposed orientation's lane tiles: LaneScores (keys' rows
//    against transposed queries, 1 to 67 keys, key rows of the head size
//    64's constant stride and of others) and LaneValuesRagged (P stored
//    transposed, 1 to 32 rows with random ends), for every lane count;
// and a NaN in b outside a row's range never reaches that row.

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/gemm/matmul_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/gemm/matmul-inl.h"
#include "src/base/simd-inl.h"
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

// s = k · qt for kn keys (rows of ldk floats), qt [depth][L] for both lane
// strides (the forward's kLaneStride, the backward's kWideLaneStride).
void TestLaneScores() {
  std::mt19937 rng(63);
  for (size_t L : {kLaneStride, kWideLaneStride}) {
    for (size_t depth : {size_t{1}, size_t{3}, size_t{16}, size_t{64}}) {
      for (size_t ldk : {depth, depth + 5, size_t{64}}) {
        if (ldk < depth) continue;
        for (size_t kn :
             {size_t{1}, size_t{2}, size_t{5}, size_t{64}, size_t{67}}) {
          for (size_t lanes = PanelWidth(); lanes <= L;
               lanes += PanelWidth()) {
            const auto k = AlignedRandom(kn * ldk, &rng);
            const auto qt = AlignedRandom(depth * L, &rng);
            const auto s = AlignedRandom(kn * L, &rng);
            LaneScores(kn, depth, k.get(), ldk, qt.get(), lanes, s.get(), L);
            const std::vector<size_t> begin(kn, 0), end(kn, depth);
            const ScalarProduct ref(k.get(), ldk, kn, begin.data(), end.data(),
                                    qt.get(), L, lanes, nullptr, L);
            EXPECT_TRUE(ref.Matches(s.get(), kn, lanes))
                << hwy::TargetName(HWY_TARGET) << " L=" << L
                << " depth=" << depth << " ldk=" << ldk << " kn=" << kn
                << " lanes=" << lanes;
          }
        }
      }
    }
  }
}

// qt[c][i] = q[i·ldq + c] for i < rows, 0 up to qp; nothing written past qp.
template <size_t kL>
void CheckTransposeQueries(std::mt19937* rng) {
#if HWY_TARGET != HWY_SCALAR
  for (size_t d : {size_t{1}, size_t{3}, size_t{8}, size_t{17}, size_t{64}}) {
    for (size_t rows = 1; rows <= kL; rows += rows < 9 ? 1 : 7) {
      const size_t qp = RoundUp(rows, PanelWidth());
      if (qp > kL) continue;
      const size_t ldq = d + 2;
      const auto q = AlignedRandom(rows * ldq, rng);
      const auto qt = AlignedRandom(d * kL, rng);
      std::vector<float> before(qt.get(), qt.get() + d * kL);
      TransposeQueries<kL>(q.get(), ldq, d, rows, qp, qt.get());
      for (size_t c = 0; c < d; ++c) {
        for (size_t i = 0; i < kL; ++i) {
          const float want = i < rows ? q[i * ldq + c]
                             : i < qp ? 0.0f
                                      : before[c * kL + i];
          ASSERT_EQ(qt[c * kL + i], want)
              << "kL=" << kL << " d=" << d << " rows=" << rows << " c=" << c
              << " i=" << i;
        }
      }
    }
  }
#else
  (void)rng;
#endif
}

void TestTransposeQueries() {
  std::mt19937 rng(65);
  CheckTransposeQueries<kLaneStride>(&rng);
  CheckTransposeQueries<kWideLaneStride>(&rng);
}

// o += pᵀ · v, row r over keys [0, ends[r]), p stored [keys][L] for both
// lane strides (kLaneStride: the forward's P, kWideLaneStride: the
// backward's dSᵀ); a NaN in a value row past a row's end stays out of that
// row.
template <size_t L>
void CheckLaneValuesRagged(std::mt19937* rng_ptr) {
  std::mt19937& rng = *rng_ptr;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t rows = 1; rows <= L; rows += rows < 9 ? 1 : 7) {
    for (size_t keys : testing_util::KernelSizes()) {
      for (size_t panels = 1; panels <= 3; ++panels) {
        const size_t ncols = panels * PanelWidth(), ldv = ncols + 3;
        const auto pt = AlignedRandom(keys * L + 1, &rng);
        const auto v = AlignedRandom(keys * ldv + ncols, &rng);
        const auto o = AlignedRandom(rows * ncols, &rng);
        std::vector<float> o0(o.get(), o.get() + rows * ncols);
        std::vector<size_t> begin(rows, 0), end(rows);
        for (size_t& e : end) e = rng() % (keys + 1);
        end[rows / 2] = keys;
        // Row-major copy of P for the reference: a[r][j] = pt[j][r].
        std::vector<float> a(rows * (keys + 1));
        for (size_t r = 0; r < rows; ++r) {
          for (size_t j = 0; j < keys; ++j)
            a[r * (keys + 1) + j] = pt[j * L + r];
        }
        // The last key's value row is NaN for rows that end before it.
        const bool poison = keys > 1;
        if (poison) {
          for (size_t r = 0; r < rows; ++r) {
            if (end[r] == keys) continue;
            v[(keys - 1) * ldv] = nan;
            break;
          }
        }
        LaneValuesRagged(pt.get(), rows, end.data(), v.get(), ldv, ncols,
                         o.get(), ncols, L);
        for (size_t r = 0; r < rows; ++r) {
          const bool sees_nan =
              poison && std::isnan(v[(keys - 1) * ldv]) && end[r] == keys;
          if (sees_nan) {
            EXPECT_TRUE(std::isnan(o[r * ncols]));
            continue;
          }
          const ScalarProduct ref(a.data() + r * (keys + 1), keys + 1, 1,
                                  &begin[r], &end[r], v.get(), ldv, ncols,
                                  o0.data() + r * ncols, ncols);
          EXPECT_TRUE(ref.Matches(o.get() + r * ncols, 1, ncols))
              << hwy::TargetName(HWY_TARGET) << " L=" << L << " rows=" << rows
              << " keys=" << keys << " row=" << r << " end=" << end[r];
        }
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

void TestLaneValuesRagged() {
  std::mt19937 rng(64);
  CheckLaneValuesRagged<kLaneStride>(&rng);
  CheckLaneValuesRagged<kWideLaneStride>(&rng);
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
HWY_EXPORT_AND_TEST_P(MatMulInlTest, TestLaneScores);
HWY_EXPORT_AND_TEST_P(MatMulInlTest, TestTransposeQueries);
HWY_EXPORT_AND_TEST_P(MatMulInlTest, TestLaneValuesRagged);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
