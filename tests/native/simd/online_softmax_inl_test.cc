// src/simd/online_softmax-inl.h on every compiled target: a row's state built
// tile by tile (tiles of 1, 3, 7 and 64 keys, value widths 1, 3, 11, 17),
// and the log-sum-exp merge of states over disjoint key ranges, against the
// softmax in double: outputs within 1e-6 relative, log-sum-exp within 1e-6
// absolute. Plus the edge rules: a non-finite tile changes nothing but the
// flag, an empty part changes nothing, a non-finite part poisons the row, a
// row without keys is zeros with log-sum-exp -inf.

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/simd/online_softmax_inl_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/simd/online_softmax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// Scores s and values v [n][dv] of one row, and its softmax in double.
struct RowProblem {
  size_t n, dv;
  float scale = 0.7f;
  std::vector<float> s, v;
  std::vector<double> out;  // softmax(scale·s)·v
  double lse;               // log Σ exp(scale·s)

  // Scores uniform in [-4, 4] plus trend·j for key j (a rising max: the
  // rescales that conditional rescaling skips or makes).
  RowProblem(size_t n_, size_t dv_, std::mt19937* rng, float trend = 0.0f)
      : n(n_), dv(dv_) {
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    s.resize(n);
    v.resize(n * dv);
    for (size_t j = 0; j < n; ++j) s[j] = dist(*rng) + trend * j;
    for (float& x : v) x = dist(*rng);
    Recompute();
  }

  // out and lse from s and v.
  void Recompute() {
    double m = -1e300, l = 0.0;
    for (float x : s) m = std::max(m, static_cast<double>(x) * scale);
    out.assign(dv, 0.0);
    for (size_t j = 0; j < n; ++j) {
      const double p = std::exp(static_cast<double>(s[j]) * scale - m);
      l += p;
      for (size_t c = 0; c < dv; ++c) out[c] += p * v[j * dv + c];
    }
    for (double& x : out) x /= l;
    lse = m + std::log(l);
  }

  // The state over keys [k0, k1) in tiles of `tile`, o accumulated in scalar.
  SoftmaxState Part(size_t k0, size_t k1, size_t tile,
                    std::vector<float>* o) const {
    SoftmaxState st = SoftmaxState::Empty();
    o->assign(dv, 0.0f);
    for (size_t t0 = k0; t0 < k1; t0 += tile) {
      const size_t tn = std::min(tile, k1 - t0);
      std::vector<float> p(s.begin() + t0, s.begin() + t0 + tn);
      EXPECT_TRUE(OnlineSoftmaxTile(p.data(), tn, scale, &st, o->data(), dv));
      for (size_t j = 0; j < tn; ++j) {
        for (size_t c = 0; c < dv; ++c) (*o)[c] += p[j] * v[(t0 + j) * dv + c];
      }
    }
    return st;
  }

  void Expect(const SoftmaxState& st, const std::vector<float>& o,
              const char* what, size_t arg, double tol = 1e-6) const {
    std::vector<float> got(dv);
    FinishSoftmaxRow(st, o.data(), dv, got.data());
    for (size_t c = 0; c < dv; ++c) {
      EXPECT_NEAR(got[c], out[c], tol * (1.0 + std::fabs(out[c])))
          << hwy::TargetName(HWY_TARGET) << " " << what << " " << arg
          << " dv=" << dv << " column " << c;
    }
    EXPECT_NEAR(st.LogSumExp(), lse, tol * (1.0 + std::fabs(lse)))
        << what << " " << arg;
  }
};

void TestOnlineSoftmaxTiles() {
  std::mt19937 rng(41);
  for (size_t dv : {size_t{1}, size_t{3}, size_t{11}, size_t{17}}) {
    const RowProblem row(257, dv, &rng);
    for (size_t tile : {size_t{1}, size_t{3}, size_t{7}, size_t{64}}) {
      std::vector<float> o;
      row.Expect(row.Part(0, row.n, tile, &o), o, "tile", tile);
    }
  }
}

// Maxima that rise slowly (within the rescaling slack: the old max kept,
// exponentials above 1) and fast (a rescale every tile), and by jumps of 7
// (scaled) per 64-key tile, above the slack. The scores reach 24, where
// float's rounding of s·scale alone is 1e-6 relative: held to the house
// tolerance, 1e-5.
void TestOnlineSoftmaxRisingMax() {
  std::mt19937 rng(42);
  for (float trend : {0.01f, 0.1f}) {
    const RowProblem row(300, 7, &rng, trend);
    for (size_t tile : {size_t{3}, size_t{64}}) {
      std::vector<float> o;
      row.Expect(row.Part(0, row.n, tile, &o), o, "trend·1000",
                 static_cast<size_t>(trend * 1000), 1e-5);
    }
  }
  RowProblem jumps(256, 5, &rng);
  for (size_t j = 0; j < jumps.n; ++j) jumps.s[j] += 10.0f * (j / 64);
  jumps.Recompute();
  std::vector<float> o;
  jumps.Expect(jumps.Part(0, jumps.n, 64, &o), o, "jumps", 10, 1e-5);
}

void TestOnlineSoftmaxMerge() {
  std::mt19937 rng(3);
  const RowProblem row(777, 11, &rng);
  for (size_t split : {size_t{1}, size_t{64}, size_t{300}, size_t{700}}) {
    std::vector<float> o1, o2;
    SoftmaxState a = row.Part(0, split, 64, &o1);
    const SoftmaxState b = row.Part(split, row.n, 64, &o2);
    MergeSoftmaxState(&a, o1.data(), b, o2.data(), row.dv);
    row.Expect(a, o1, "split", split);
  }
}

void TestOnlineSoftmaxEdges() {
  std::mt19937 rng(4);
  const RowProblem row(100, 5, &rng);
  const size_t dv = row.dv;
  std::vector<float> o1, out(dv), out_alone(dv);
  SoftmaxState a = row.Part(0, row.n, 64, &o1);
  FinishSoftmaxRow(a, o1.data(), dv, out_alone.data());

  // A tile with a NaN or an infinity: false, only the flag changes.
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
    SoftmaxState t = a;
    std::vector<float> o = o1, tile = {1.0f, bad, 2.0f};
    EXPECT_FALSE(OnlineSoftmaxTile(tile.data(), 3, 1.0f, &t, o.data(), dv));
    EXPECT_TRUE(t.non_finite);
    EXPECT_EQ(t.m, a.m);
    EXPECT_EQ(t.l, a.l);
    EXPECT_EQ(o, o1);
  }

  // An empty part changes nothing; a non-finite part poisons the row.
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
class OnlineSoftmaxInlTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(OnlineSoftmaxInlTest);
HWY_EXPORT_AND_TEST_P(OnlineSoftmaxInlTest, TestOnlineSoftmaxTiles);
HWY_EXPORT_AND_TEST_P(OnlineSoftmaxInlTest, TestOnlineSoftmaxRisingMax);
HWY_EXPORT_AND_TEST_P(OnlineSoftmaxInlTest, TestOnlineSoftmaxMerge);
HWY_EXPORT_AND_TEST_P(OnlineSoftmaxInlTest, TestOnlineSoftmaxEdges);
}  // namespace
}  // namespace causal_attention
#endif  // HWY_ONCE
