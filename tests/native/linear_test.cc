// Linear (every SIMD target) against LinearReference (scalar, double
// accumulation): |y - ref| <= 1e-5 (1 + |ref|).

#include "src/linear.h"

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

}  // namespace
}  // namespace causal_attention
