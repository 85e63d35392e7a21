// src/simd/exp-inl.h on every compiled target: ExpNonPositive on whole vectors
// and on one lane against double exp rounded to float. Stated accuracy (as
// hwy/contrib/math states its own): Max Error ULP = 1 on [-87.3, 0]; 0 below
// -87.34 and for -inf; e^0 exactly 1. Exp2Softmax the same way against double
// exp2: Max Error ULP = 4 on [-126, 64]; 0 below -126 and for -inf.

#include <cmath>
#include <limits>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/simd/exp_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/simd/exp-inl.h"
#include "src/base/simd-inl.h"
#include "tests/native/kernel_test_util.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// e^x for x[0, n) with tag D (n a multiple of its lanes).
template <class D>
std::vector<float> ExpOf(D d, const std::vector<float>& x) {
  const ExpConstants<D> k(d);
  const size_t lanes = hn::Lanes(d);
  std::vector<float> e(x.size());
  for (size_t i = 0; i + lanes <= x.size(); i += lanes) {
    hn::StoreU(ExpNonPositive(d, hn::LoadU(d, x.data() + i), k), d,
               e.data() + i);
  }
  return e;
}

// The inputs of one check: a dense grid over [-87.3, 0] and chosen points,
// padded with zeros to whole vectors of the widest tag.
std::vector<float> Grid(size_t lanes) {
  std::vector<float> x;
  for (double v = -87.3; v <= 0.0; v += 0.000731) {
    x.push_back(static_cast<float>(v));
  }
  for (float v : {0.0f, -1e-30f, -0.5f * 0.693147f, -0.693147f, -1.0f, -20.0f,
                  -87.0f, -1e-7f}) {
    x.push_back(v);
  }
  while (x.size() % lanes != 0) x.push_back(0.0f);
  return x;
}

// The largest ULP distance of e[i] from ref(x[i]) in double rounded to
// float, over i < n, and (in *at) the x where it occurs.
template <class F>
int64_t WorstUlp(const std::vector<float>& x, const std::vector<float>& e,
                 size_t n, F ref, float* at) {
  int64_t worst = 0;
  *at = x[0];
  for (size_t i = 0; i < n; ++i) {
    const float want = static_cast<float>(ref(static_cast<double>(x[i])));
    const int64_t ulp = testing_util::UlpDistance(e[i], want);
    if (ulp > worst) {
      worst = ulp;
      *at = x[i];
    }
  }
  return worst;
}

template <class D>
void CheckAccuracy(D d) {
  const std::vector<float> x = Grid(hn::Lanes(d));
  float at;
  const int64_t worst = WorstUlp(x, ExpOf(d, x), x.size(),
                                 [](double v) { return std::exp(v); }, &at);
  EXPECT_LE(worst, 1) << hwy::TargetName(HWY_TARGET) << " lanes "
                      << hn::Lanes(d) << " at x = " << at;
}

template <class D>
void CheckEdges(D d) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f, -87.4f, -100.0f, -1e30f, -inf};
  while (x.size() % hn::Lanes(d) != 0) x.push_back(0.0f);
  const std::vector<float> e = ExpOf(d, x);
  EXPECT_EQ(e[0], 1.0f) << hwy::TargetName(HWY_TARGET);
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(e[i], 0.0f) << hwy::TargetName(HWY_TARGET) << " x = " << x[i];
  }
}

// 2^y for y[0, n) with tag D (n a multiple of its lanes).
template <class D>
std::vector<float> Exp2Of(D d, const std::vector<float>& y) {
  const Exp2Constants<D> k(d);
  const size_t lanes = hn::Lanes(d);
  std::vector<float> e(y.size());
  for (size_t i = 0; i + lanes <= y.size(); i += lanes) {
    hn::StoreU(Exp2Softmax(d, hn::LoadU(d, y.data() + i), k), d, e.data() + i);
  }
  return e;
}

template <class D>
void CheckExp2(D d) {
  std::vector<float> y;
  for (double v = -126.0; v <= 64.0; v += 0.000917) {
    y.push_back(static_cast<float>(v));
  }
  for (float v : {0.0f, -1e-30f, 1e-7f, -0.5f, 0.5f, -0.49999997f, 8.0f,
                  -125.99999f}) {
    y.push_back(v);
  }
  const size_t edges = y.size();
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {-126.01f, -150.0f, -1e30f, -inf}) y.push_back(v);
  while (y.size() % hn::Lanes(d) != 0) y.push_back(0.0f);
  const std::vector<float> e = Exp2Of(d, y);
  float at;
  const int64_t worst =
      WorstUlp(y, e, edges, [](double v) { return std::exp2(v); }, &at);
  EXPECT_LE(worst, 4) << hwy::TargetName(HWY_TARGET) << " lanes "
                      << hn::Lanes(d) << " at y = " << at;
  for (size_t i = edges; i < edges + 4; ++i) {
    EXPECT_EQ(e[i], 0.0f) << hwy::TargetName(HWY_TARGET) << " y = " << y[i];
  }
}

void TestExp2Softmax() {
  CheckExp2(DF());
  CheckExp2(D1());
}

void TestExpAccuracy() {
  CheckAccuracy(DF());
  CheckAccuracy(D1());
}

void TestExpEdges() {
  CheckEdges(DF());
  CheckEdges(D1());
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {
class ExpInlTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(ExpInlTest);
HWY_EXPORT_AND_TEST_P(ExpInlTest, TestExpAccuracy);
HWY_EXPORT_AND_TEST_P(ExpInlTest, TestExpEdges);
HWY_EXPORT_AND_TEST_P(ExpInlTest, TestExp2Softmax);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
