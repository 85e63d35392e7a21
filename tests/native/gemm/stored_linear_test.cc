// StoredLinear (every SIMD target) against StoredLinearReference (double
// sums of the stored values) on shapes whose `in` is not a multiple of 32,
// odd `out`, and 1 to many rows: the GEMV's int8 route within
// 1e-4 · sum_i |x_i w_i| + 1e-6, bfloat16 and the GEMM within
// 1e-5·(1 + |ref|) + 1e-7 · sum_i |x_i w_i| (float sums over `in` terms).

#include "src/gemm/stored_linear.h"

#include <cmath>
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

class StoredLinearTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(StoredLinearTest);

std::vector<uint8_t> Store(KvDtype dtype, const std::vector<float>& w,
                           int64_t out, int64_t in) {
  std::vector<uint8_t> stored(StoredWeightsBytes(dtype, out, in), 0xAB);
  EXPECT_EQ(StoreWeights(dtype, w.data(), out, in, stored.data()),
            Status::kOk);
  return stored;
}

// The stored values of W as floats (LoadKvRow, row by row).
std::vector<float> Dequantised(KvDtype dtype, const std::vector<uint8_t>& s,
                               int64_t out, int64_t in) {
  std::vector<float> w(out * in);
  for (int64_t o = 0; o < out; ++o) {
    LoadKvRow(dtype, s.data() + o * KvRowBytes(dtype, in), in,
              w.data() + o * in);
  }
  return w;
}

TEST_P(StoredLinearTest, MatchesReference) {
  std::mt19937 rng(17);
  struct Case {
    int64_t rows, in, out;
    bool bias;
  };
  const Case cases[] = {
      {1, 1, 1, false},    {1, 5, 3, true},     {1, 31, 7, false},
      {1, 33, 65, true},   {2, 100, 9, true},   {3, 64, 33, false},
      {4, 65, 31, true},   {5, 97, 17, true},   {7, 768, 5, false},
      {15, 40, 3, true},   {16, 40, 3, true},   {17, 129, 71, false},
      {40, 200, 45, true}, {1, 768, 257, true}, {6, 1000, 130, false}};
  for (KvDtype dtype : {KvDtype::kBFloat16, KvDtype::kInt8}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype == KvDtype::kInt8 ? "int8 " : "bf16 ") +
                   std::to_string(c.rows) + "x" + std::to_string(c.in) +
                   "->" + std::to_string(c.out));
      const auto x = RandomVector(c.rows * c.in, &rng, -2.0f, 2.0f);
      const auto w = RandomVector(c.out * c.in, &rng);
      const auto b = RandomVector(c.out, &rng);
      const float* bias = c.bias ? b.data() : nullptr;
      const auto stored = Store(dtype, w, c.out, c.in);
      std::vector<float> y(c.rows * c.out, -7.0f), ref(c.rows * c.out);
      ASSERT_EQ(StoredLinear(x.data(), c.rows, c.in, c.out, dtype,
                             stored.data(), bias, y.data()),
                Status::kOk);
      ASSERT_EQ(StoredLinearReference(x.data(), c.rows, c.in, c.out, dtype,
                                      stored.data(), bias, ref.data()),
                Status::kOk);
      // The reference is the float64 product with the stored values.
      const auto wd = Dequantised(dtype, stored, c.out, c.in);
      for (int64_t r = 0; r < c.rows; ++r) {
        for (int64_t o = 0; o < c.out; ++o) {
          double s = bias ? bias[o] : 0.0, mag = 0.0;
          for (int64_t i = 0; i < c.in; ++i) {
            s += static_cast<double>(x[r * c.in + i]) * wd[o * c.in + i];
            mag += std::fabs(static_cast<double>(x[r * c.in + i]) *
                             wd[o * c.in + i]);
          }
          ASSERT_EQ(ref[r * c.out + o], static_cast<float>(s));
          const double got = y[r * c.out + o];
          const double bound = dtype == KvDtype::kInt8 &&
                                       c.rows < kStoredGemmRows
                                   ? 1e-4 * mag + 1e-6
                                   : 1e-5 * (1.0 + std::fabs(s)) + 1e-7 * mag;
          ASSERT_LE(std::fabs(got - s), bound) << "row " << r << " col " << o;
        }
      }
    }
  }
}

TEST_P(StoredLinearTest, Int8BoundIsTight) {
  // The int16 rounding of x is what the bound allows for: on these inputs
  // the route's error is within a few times 2^-16 of the products' sum, so
  // a bound ten times smaller than the stated one would fail somewhere.
  std::mt19937 rng(3);
  const int64_t in = 300, out = 64;
  const auto x = RandomVector(in, &rng);
  const auto w = RandomVector(out * in, &rng);
  const auto stored = Store(KvDtype::kInt8, w, out, in);
  std::vector<float> y(out), ref(out);
  ASSERT_EQ(StoredLinear(x.data(), 1, in, out, KvDtype::kInt8, stored.data(),
                         nullptr, y.data()),
            Status::kOk);
  ASSERT_EQ(StoredLinearReference(x.data(), 1, in, out, KvDtype::kInt8,
                                  stored.data(), nullptr, ref.data()),
            Status::kOk);
  const auto wd = Dequantised(KvDtype::kInt8, stored, out, in);
  double worst = 0.0;
  for (int64_t o = 0; o < out; ++o) {
    double mag = 0.0;
    for (int64_t i = 0; i < in; ++i) mag += std::fabs(x[i] * wd[o * in + i]);
    worst = std::fmax(worst, std::fabs(y[o] - ref[o]) / mag);
  }
  EXPECT_GT(worst, 1e-7);  // it does round
  EXPECT_LT(worst, 1e-4);
}

TEST_P(StoredLinearTest, NonFiniteGivesNaN) {
  const int64_t in = 40, out = 3;
  std::vector<float> w(out * in, 0.5f), x(in, 1.0f), y(out);
  w[1 * in + 35] = INFINITY;  // row 1, second block
  for (KvDtype dtype : {KvDtype::kBFloat16, KvDtype::kInt8}) {
    const auto stored = Store(dtype, w, out, in);
    ASSERT_EQ(StoredLinear(x.data(), 1, in, out, dtype, stored.data(),
                           nullptr, y.data()),
              Status::kOk);
    EXPECT_EQ(y[0], 20.0f);
    EXPECT_TRUE(std::isnan(y[1]) || std::isinf(y[1]));
    if (dtype == KvDtype::kInt8) EXPECT_TRUE(std::isnan(y[1]));
    EXPECT_EQ(y[2], 20.0f);
  }
  const auto stored = Store(KvDtype::kInt8, std::vector<float>(out * in, 1.0f),
                            out, in);
  x[3] = NAN;
  ASSERT_EQ(StoredLinear(x.data(), 1, in, out, KvDtype::kInt8, stored.data(),
                         nullptr, y.data()),
            Status::kOk);
  for (float v : y) EXPECT_TRUE(std::isnan(v));
}

TEST_P(StoredLinearTest, SameBitsForAnyThreadCount) {
  std::mt19937 rng(8);
  const int64_t in = 768, out = 2305;
  const auto x = RandomVector(2 * in, &rng);
  const auto w = RandomVector(out * in, &rng);
  for (KvDtype dtype : {KvDtype::kBFloat16, KvDtype::kInt8}) {
    const auto stored = Store(dtype, w, out, in);
    std::vector<float> one(2 * out), two(2 * out);
    SetNumThreads(1);
    ASSERT_EQ(StoredLinear(x.data(), 2, in, out, dtype, stored.data(),
                           nullptr, one.data()),
              Status::kOk);
    SetNumThreads(2);
    ASSERT_EQ(StoredLinear(x.data(), 2, in, out, dtype, stored.data(),
                           nullptr, two.data()),
              Status::kOk);
    SetNumThreads(1);
    EXPECT_EQ(0, memcmp(one.data(), two.data(), one.size() * sizeof(float)));
  }
}

TEST(StoredLinearStatus, RefusesBadArguments) {
  std::vector<float> x(4), y(4), w(4);
  std::vector<uint8_t> s(StoredWeightsBytes(KvDtype::kInt8, 2, 2));
  EXPECT_EQ(StoredLinear(x.data(), 0, 2, 2, KvDtype::kInt8, s.data(), nullptr,
                         y.data()),
            Status::kInvalidShape);
  EXPECT_EQ(StoredLinear(x.data(), 1, 2, 2, KvDtype::kInt8, nullptr, nullptr,
                         y.data()),
            Status::kNullPointer);
  EXPECT_EQ(StoredLinear(x.data(), 1, 2, 2, static_cast<KvDtype>(7), s.data(),
                         nullptr, y.data()),
            Status::kInvalidOption);
  EXPECT_EQ(StoreWeights(KvDtype::kInt8, w.data(), 0, 2, s.data()),
            Status::kInvalidShape);
  EXPECT_EQ(StoredWeightsBytes(KvDtype::kInt8, 3, 40),
            3 * (40 + 2 * sizeof(float)) + kStoredWeightsPad);
  // float32 "stored" weights are the weights: Linear's result.
  std::vector<float> wf = {1, 2, 3, 4}, xf = {1, -1}, yf(2);
  ASSERT_EQ(StoredLinear(xf.data(), 1, 2, 2, KvDtype::kFloat32, wf.data(),
                         nullptr, yf.data()),
            Status::kOk);
  EXPECT_EQ(yf[0], -1.0f);
  EXPECT_EQ(yf[1], -1.0f);
}

}  // namespace
}  // namespace causal_attention
