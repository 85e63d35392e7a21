// MatMul (every SIMD target) against MatMulReference (scalar, double
// accumulation): |C - ref| <= 1e-5 (1 + |ref|), every transpose, accumulate
// and bias combination, odd sizes, row strides wider than the matrix; and
// bit-identical results for any thread count.

#include "src/gemm/matmul.h"

#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/base/thread_pool.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;

class MatMulTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(MatMulTest);

struct Case {
  int64_t m, n, k;
  int64_t pad;  // extra elements per stored row (strides wider than needed)
};

// Runs MatMul and MatMulReference on the same random operands.
void Check(const MatMulShape& s, int64_t pad, bool bias, std::mt19937* rng) {
  const int64_t rows_a = s.transpose_a ? s.k : s.m;
  const int64_t lda = (s.transpose_a ? s.m : s.k) + pad;
  const int64_t rows_b = s.transpose_b ? s.n : s.k;
  const int64_t ldb = (s.transpose_b ? s.k : s.n) + pad;
  const int64_t ldc = s.n + pad;
  const auto a = RandomVector(rows_a * lda, rng);
  const auto b = RandomVector(rows_b * ldb, rng);
  const auto bv = RandomVector(s.n, rng);
  std::vector<float> c = RandomVector(s.m * ldc, rng), ref = c;
  const float* bias_p = bias ? bv.data() : nullptr;
  ASSERT_EQ(MatMul(s, a.data(), lda, b.data(), ldb, bias_p, c.data(), ldc),
            Status::kOk);
  ASSERT_EQ(
      MatMulReference(s, a.data(), lda, b.data(), ldb, bias_p, ref.data(), ldc),
      Status::kOk);
  // Padding columns of C are left alone (they start equal).
  EXPECT_TRUE(NearReference(c, ref));
}

TEST_P(MatMulTest, MatchesReference) {
  std::mt19937 rng(11);
  const Case cases[] = {{1, 1, 1, 0},      {1, 7, 3, 2},     {5, 1, 9, 0},
                        {12, 3, 2, 1},     {33, 17, 31, 0},  {64, 64, 64, 3},
                        {100, 129, 65, 0}, {37, 300, 70, 5}, {3, 5, 768, 0},
                        // Packed path: several depth passes (uneven), row
                        // blocks with a partial microtile, column blocks.
                        {41, 1100, 300, 1}, {97, 33, 513, 2},
                        // Skinny path (fewer rows than a microtile): column
                        // chunks, depth not a multiple of any vector.
                        {1, 300, 70, 0},   {4, 129, 257, 3},  {2, 1, 1, 0}};
  for (const Case& c : cases) {
    for (int variant = 0; variant < 16; ++variant) {
      MatMulShape s;
      s.m = c.m;
      s.n = c.n;
      s.k = c.k;
      s.transpose_a = variant & 1;
      s.transpose_b = variant & 2;
      s.accumulate = variant & 4;
      const bool bias = variant & 8;
      SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + "·" +
                   std::to_string(c.k) + "x" + std::to_string(c.n) +
                   " variant " + std::to_string(variant));
      Check(s, c.pad, bias, &rng);
    }
  }
}

TEST(MatMul, BitIdenticalForAnyThreadCount) {
  std::mt19937 rng(4);
  // {m, n, k}: one depth pass; three passes with row and column blocks and
  // edge tiles; the skinny path's column chunks.
  const int64_t shapes[][3] = {{200, 300, 150}, {203, 1100, 600}, {3, 700, 900}};
  for (const auto& shape : shapes) {
    MatMulShape s;
    s.m = shape[0];
    s.n = shape[1];
    s.k = shape[2];
    s.transpose_a = true;
    s.accumulate = true;
    const auto a = RandomVector(s.k * s.m, &rng),
               b = RandomVector(s.k * s.n, &rng), bias = RandomVector(s.n, &rng);
    const auto c0 = RandomVector(s.m * s.n, &rng);
    std::vector<float> first;
    for (int threads : {1, 2, 4}) {
      ASSERT_EQ(SetNumThreads(threads), threads);
      std::vector<float> c = c0;
      ASSERT_EQ(MatMul(s, a.data(), s.m, b.data(), s.n, bias.data(), c.data(),
                       s.n),
                Status::kOk);
      if (first.empty()) {
        first = c;
      } else {
        EXPECT_EQ(c, first) << threads << " threads, m=" << s.m;
      }
    }
  }
  SetNumThreads(1);
}

TEST(MatMul, RejectsBadArguments) {
  std::vector<float> a(12), b(12), c(12);
  MatMulShape s;
  s.m = 3;
  s.n = 4;
  s.k = 2;
  EXPECT_EQ(MatMul(s, a.data(), 2, b.data(), 4, nullptr, c.data(), 4),
            Status::kOk);
  EXPECT_EQ(MatMul(s, a.data(), 1, b.data(), 4, nullptr, c.data(), 4),
            Status::kInvalidShape);  // lda < k
  EXPECT_EQ(MatMul(s, a.data(), 2, b.data(), 3, nullptr, c.data(), 4),
            Status::kInvalidShape);  // ldb < n
  EXPECT_EQ(MatMul(s, a.data(), 2, b.data(), 4, nullptr, c.data(), 3),
            Status::kInvalidShape);  // ldc < n
  EXPECT_EQ(MatMul(s, nullptr, 2, b.data(), 4, nullptr, c.data(), 4),
            Status::kNullPointer);
  MatMulShape empty = s;
  empty.k = 0;
  EXPECT_EQ(MatMul(empty, a.data(), 2, b.data(), 4, nullptr, c.data(), 4),
            Status::kInvalidShape);
  MatMulShape huge = s;
  huge.m = int64_t{1} << 62;
  EXPECT_EQ(MatMul(huge, a.data(), 2, b.data(), 4, nullptr, c.data(), 4),
            Status::kTooLarge);
}

}  // namespace
}  // namespace causal_attention
