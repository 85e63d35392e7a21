// Linear and LinearBackward (every SIMD target) against their references
// (scalar, double accumulation): |y - ref| <= 1e-5 (1 + |ref|).

#include "src/gemm/linear.h"

#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;

class LinearTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(LinearTest);

TEST_P(LinearTest, LinearMatchesReference) {
  std::mt19937 rng(5);
  struct Case {
    int64_t rows, in, out;
    bool bias;
  };
  const Case cases[] = {{1, 1, 1, false},     {1, 3, 2, true},
                        {12, 3, 2, false},    {7, 5, 9, true},
                        {33, 17, 31, true},   {64, 64, 64, false},
                        {100, 65, 129, true}, {300, 200, 150, true},
                        {5, 768, 3, false},   {70, 96, 257, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.in) + "->" +
                 std::to_string(c.out));
    const auto x = RandomVector(c.rows * c.in, &rng);
    const auto w = RandomVector(c.out * c.in, &rng);
    const auto b = RandomVector(c.out, &rng);
    std::vector<float> y(c.rows * c.out, -7.0f), ref(c.rows * c.out);
    const float* bias = c.bias ? b.data() : nullptr;
    ASSERT_EQ(Linear(x.data(), c.rows, c.in, c.out, w.data(), bias, y.data()),
              Status::kOk);
    ASSERT_EQ(LinearReference(x.data(), c.rows, c.in, c.out, w.data(), bias,
                              ref.data()),
              Status::kOk);
    EXPECT_TRUE(NearReference(y, ref));
  }
}

TEST_P(LinearTest, BackwardMatchesReference) {
  std::mt19937 rng(9);
  struct Case {
    int64_t rows, in, out;
    bool bias, grad_x;
  };
  const Case cases[] = {{1, 1, 1, false, true},    {1, 3, 2, true, true},
                        {12, 3, 2, true, false},   {7, 5, 9, true, true},
                        {33, 17, 31, false, true}, {100, 65, 129, true, true},
                        {300, 40, 20, true, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.in) + "->" +
                 std::to_string(c.out));
    const auto x = RandomVector(c.rows * c.in, &rng);
    const auto w = RandomVector(c.out * c.in, &rng);
    const auto gy = RandomVector(c.rows * c.out, &rng);
    // Gradients accumulate: start from earlier values, as .grad does.
    std::vector<float> gw = RandomVector(c.out * c.in, &rng), gw_ref = gw;
    std::vector<float> gb = RandomVector(c.out, &rng), gb_ref = gb;
    std::vector<float> gx(c.rows * c.in, -7.0f), gx_ref(c.rows * c.in, -7.0f);
    float* gb_p = c.bias ? gb.data() : nullptr;
    float* gb_ref_p = c.bias ? gb_ref.data() : nullptr;
    ASSERT_EQ(LinearBackward(x.data(), c.rows, c.in, c.out, w.data(), gy.data(),
                             c.grad_x ? gx.data() : nullptr, gw.data(), gb_p),
              Status::kOk);
    ASSERT_EQ(LinearBackwardReference(
                  x.data(), c.rows, c.in, c.out, w.data(), gy.data(),
                  c.grad_x ? gx_ref.data() : nullptr, gw_ref.data(), gb_ref_p),
              Status::kOk);
    EXPECT_TRUE(NearReference(gx, gx_ref)) << "grad_x";
    EXPECT_TRUE(NearReference(gw, gw_ref)) << "grad_weight";
    EXPECT_TRUE(NearReference(gb, gb_ref)) << "grad_bias";
  }
}

// The reference itself against central finite differences of the loss
// L = sum(grad_y ∘ (x · wᵀ + b)), whose gradients are exactly what
// LinearBackward returns.
TEST(LinearBackward, ReferenceMatchesFiniteDifferences) {
  std::mt19937 rng(2);
  const int64_t rows = 3, in = 4, out = 5;
  auto x = RandomVector(rows * in, &rng), w = RandomVector(out * in, &rng),
       b = RandomVector(out, &rng);
  const auto gy = RandomVector(rows * out, &rng);
  const auto loss = [&]() {
    double sum = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < out; ++o) {
        double y = b[o];
        for (int64_t i = 0; i < in; ++i) {
          y += static_cast<double>(x[r * in + i]) * w[o * in + i];
        }
        sum += y * gy[r * out + o];
      }
    }
    return sum;
  };
  std::vector<float> gx(rows * in), gw(out * in, 0.0f), gb(out, 0.0f);
  ASSERT_EQ(LinearBackwardReference(x.data(), rows, in, out, w.data(),
                                    gy.data(), gx.data(), gw.data(), gb.data()),
            Status::kOk);
  // The loss is linear in each parameter, so a float step of 2^-4 is exact
  // up to the rounding of the perturbed value.
  const float h = 0.0625f;
  const auto numeric = [&](float* p) {
    const float saved = *p;
    *p = saved + h;
    const double up = loss();
    *p = saved - h;
    const double down = loss();
    *p = saved;
    return (up - down) / (2.0 * h);
  };
  for (int64_t i = 0; i < rows * in; ++i)
    EXPECT_NEAR(gx[i], numeric(&x[i]), 1e-5);
  for (int64_t i = 0; i < out * in; ++i)
    EXPECT_NEAR(gw[i], numeric(&w[i]), 1e-5);
  for (int64_t i = 0; i < out; ++i) EXPECT_NEAR(gb[i], numeric(&b[i]), 1e-5);
}

TEST(LinearBackward, RejectsBadArguments) {
  std::vector<float> v(64);
  EXPECT_EQ(LinearBackward(v.data(), 2, 3, 4, v.data(), v.data(), nullptr,
                           v.data(), nullptr),
            Status::kOk);
  EXPECT_EQ(LinearBackward(v.data(), 2, 3, 4, v.data(), v.data(), nullptr,
                           nullptr, nullptr),
            Status::kNullPointer);
  EXPECT_EQ(LinearBackward(v.data(), 0, 3, 4, v.data(), v.data(), nullptr,
                           v.data(), nullptr),
            Status::kInvalidShape);
}

}  // namespace
}  // namespace causal_attention
