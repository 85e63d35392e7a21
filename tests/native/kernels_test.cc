// Per-target tests of the kernel building blocks (src/*-inl.h).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/kernels_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/online_softmax-inl.h"
#include "src/row_passes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// Distance in units in the last place between two positive floats.
int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  return ia > ib ? static_cast<int64_t>(ia) - ib
                 : static_cast<int64_t>(ib) - ia;
}

// ExpSumRow = e^(x - max) for every element, on every target; compared with
// double exp rounded to float. Documented bound: 1 ULP on [-87.3, 0].
void TestExpNonPositive() {
  std::vector<float> x;
  for (double v = -87.3; v <= 0.0; v += 0.000731)
    x.push_back(static_cast<float>(v));
  for (float v : {0.0f, -1e-30f, -0.5f * 0.693147f, -0.693147f, -1.0f, -20.0f})
    x.push_back(v);
  x.push_back(0.0f);  // the row max, so ExpSumRow computes e^x itself
  std::vector<float> e = x;
  const float sum = ExpSumRow(e.data(), e.size(), 0.0f);
  int64_t worst = 0;
  double total = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float ref = static_cast<float>(std::exp(static_cast<double>(x[i])));
    total += std::exp(static_cast<double>(x[i]));
    worst = HWY_MAX(worst, UlpDistance(e[i], ref));
  }
  EXPECT_LE(worst, 1) << hwy::TargetName(HWY_TARGET);
  EXPECT_NEAR(sum, total, 1e-5 * total);
  EXPECT_EQ(e.back(), 1.0f);  // exp(0) is exactly 1

  // Beyond the normal range, and -inf: exactly 0.
  std::vector<float> tiny = {-87.4f, -100.0f, -1e30f,
                             -std::numeric_limits<float>::infinity(), 0.0f};
  ExpSumRow(tiny.data(), tiny.size(), 0.0f);
  for (size_t i = 0; i + 1 < tiny.size(); ++i) EXPECT_EQ(tiny[i], 0.0f) << i;
}

// The online-softmax state of a row built tile by tile, and the log-sum-exp
// merge of states over disjoint key ranges: both against the softmax in
// double, within 1e-6 relative (outputs) and 1e-6 absolute (log-sum-exp).
void TestOnlineSoftmaxMerge() {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  const size_t n = 777, dv = 11;
  const float scale = 0.7f;
  std::vector<float> s(n), v(n * dv);
  for (float& x : s) x = dist(rng);
  for (float& x : v) x = dist(rng);
  // Double reference: out = softmax(scale·s)·v, L = log Σ exp(scale·s).
  double m = -1e300, l = 0.0;
  for (float x : s) m = std::max(m, static_cast<double>(x) * scale);
  std::vector<double> o(dv, 0.0);
  for (size_t j = 0; j < n; ++j) {
    const double p = std::exp(static_cast<double>(s[j]) * scale - m);
    l += p;
    for (size_t c = 0; c < dv; ++c) o[c] += p * v[j * dv + c];
  }
  // A state over keys [k0, k1) in tiles of 64, o accumulated in scalar.
  auto part = [&](size_t k0, size_t k1, std::vector<float>* o_part) {
    SoftmaxState st = SoftmaxState::Empty();
    o_part->assign(dv, 0.0f);
    for (size_t t0 = k0; t0 < k1; t0 += 64) {
      const size_t tn = std::min<size_t>(64, k1 - t0);
      std::vector<float> tile(s.begin() + t0, s.begin() + t0 + tn);
      EXPECT_TRUE(
          OnlineSoftmaxTile(tile.data(), tn, scale, &st, o_part->data(), dv));
      for (size_t j = 0; j < tn; ++j) {
        for (size_t c = 0; c < dv; ++c) {
          (*o_part)[c] += tile[j] * v[(t0 + j) * dv + c];
        }
      }
    }
    return st;
  };
  for (size_t split : {size_t{1}, size_t{64}, size_t{300}, size_t{700}}) {
    std::vector<float> o1, o2, out(dv);
    SoftmaxState a = part(0, split, &o1);
    const SoftmaxState b = part(split, n, &o2);
    MergeSoftmaxState(&a, o1.data(), b, o2.data(), dv);
    FinishSoftmaxRow(a, o1.data(), dv, out.data());
    for (size_t c = 0; c < dv; ++c) {
      EXPECT_NEAR(out[c], o[c] / l, 1e-6 * (1.0 + std::fabs(o[c] / l)))
          << "split " << split << " column " << c;
    }
    EXPECT_NEAR(a.LogSumExp(), m + std::log(l), 1e-6) << "split " << split;
  }
  // An empty part changes nothing; a non-finite part poisons the row.
  std::vector<float> o1, out(dv), out_alone(dv);
  SoftmaxState a = part(0, n, &o1);
  FinishSoftmaxRow(a, o1.data(), dv, out_alone.data());
  const std::vector<float> zeros(dv, 0.0f);
  MergeSoftmaxState(&a, o1.data(), SoftmaxState::Empty(), zeros.data(), dv);
  FinishSoftmaxRow(a, o1.data(), dv, out.data());
  EXPECT_EQ(out, out_alone);
  SoftmaxState bad = SoftmaxState::Empty();
  bad.non_finite = true;
  MergeSoftmaxState(&a, o1.data(), bad, zeros.data(), dv);
  FinishSoftmaxRow(a, o1.data(), dv, out.data());
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(a.LogSumExp()));
  // A row that saw nothing: zeros and a log-sum-exp of -inf.
  FinishSoftmaxRow(SoftmaxState::Empty(), o1.data(), dv, out.data());
  EXPECT_EQ(out, zeros);
  EXPECT_EQ(SoftmaxState::Empty().LogSumExp(),
            -std::numeric_limits<float>::infinity());
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {
class KernelsTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(KernelsTest);
HWY_EXPORT_AND_TEST_P(KernelsTest, TestExpNonPositive);
HWY_EXPORT_AND_TEST_P(KernelsTest, TestOnlineSoftmaxMerge);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
