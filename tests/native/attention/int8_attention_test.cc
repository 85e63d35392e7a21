// Precision::kInt8 (attention.h) on every compiled SIMD target against the
// float64 reference, with the bounds the header states: largest |out − ref|
// <= 1e-3 · the reference output's largest |value| (NaN positions agree) on
// N(0, 1) inputs, keys with a large per-channel offset (what smoothing is
// for) and keys with four channels x50 (what the outlier channels are for);
// odd shapes (d and dv not multiples
// of 16, T = 1, T not a multiple of the query block), GQA, a KV cache's
// capacity layout, and random draws of every rule (rules_test_util.h). The
// checker itself must reject a result just past the bound.

#include <stdint.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/attention/attention_backward.h"
#include "src/causal_attention.h"
#include "src/kv/kv_storage.h"
#include "tests/native/rules_test_util.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::Describe;
using testing_util::Problem;
using testing_util::RuleMix;
using testing_util::RuleProblem;

// The bound of attention.h's Precision::kInt8.
constexpr double kInt8Bound = 1e-3;

// Whether got is within bound · max|ref| of ref (NaN where ref is NaN).
::testing::AssertionResult WithinInt8Bound(const std::vector<float>& got,
                                           const std::vector<float>& ref,
                                           double bound = kInt8Bound) {
  if (got.size() != ref.size()) return ::testing::AssertionFailure() << "size";
  double largest = 0.0, worst = 0.0;
  size_t worst_i = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(ref[i])) {
      return ::testing::AssertionFailure()
             << "NaN mismatch at " << i << ": " << got[i] << " vs " << ref[i];
    }
    if (std::isnan(ref[i])) continue;
    largest = std::fmax(largest, std::fabs(static_cast<double>(ref[i])));
    const double e = std::fabs(static_cast<double>(got[i]) - ref[i]);
    if (!(e <= worst)) {
      worst = e;
      worst_i = i;
    }
  }
  if (!(worst <= bound * largest)) {
    return ::testing::AssertionFailure()
           << "element " << worst_i << ": " << got[worst_i] << " vs "
           << ref[worst_i] << ", error " << worst << " = "
           << worst / largest << " of the largest |ref| " << largest
           << " > " << bound;
  }
  return ::testing::AssertionSuccess() << "error/largest " << worst / largest;
}

std::vector<float> Normal(size_t n, std::mt19937* rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(*rng);
  return v;
}

enum class Keys { kNormal, kOffset, kOutliers };

// The problem's inputs as N(0, 1) values; keys with an offset per channel
// in [-20, 20] (kOffset) or four channels x50 (kOutliers).
void FillData(Problem* p, Keys keys, std::mt19937* rng) {
  const AttentionShape& s = p->shape;
  const size_t d = static_cast<size_t>(s.head_dim);
  p->q = Normal(p->q.size(), rng);
  p->v = Normal(p->v.size(), rng);
  std::vector<float> k = Normal(p->k.size(), rng);
  std::vector<float> offset(d);
  std::uniform_real_distribution<float> off(-20.0f, 20.0f);
  for (float& x : offset) x = off(*rng);
  for (size_t i = 0; i < k.size(); ++i) {
    const size_t c = i % d;
    if (keys == Keys::kOffset) k[i] += offset[c];
    if (keys == Keys::kOutliers && c % 17 == 3 && c < 4 * 17) k[i] *= 50.0f;
  }
  p->k = k;
}

class Int8AttentionTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(Int8AttentionTest);

TEST_P(Int8AttentionTest, WithinBoundOnShapesAndKeyKinds) {
  std::mt19937 rng(11);
  // {B, H, Tq, Tk, D, Dv, Hkv, cap}
  const AttentionShape shapes[] = {
      {1, 2, 64, 64, 64, 64, 0, 0},    {1, 4, 100, 100, 64, 64, 2, 0},
      {2, 3, 1, 77, 32, 32, 0, 0},     {1, 8, 1, 300, 128, 128, 2, 0},
      {1, 2, 37, 37, 24, 40, 1, 0},    {1, 1, 5, 9, 3, 5, 0, 0},
      {1, 2, 33, 70, 16, 16, 0, 90},   {2, 4, 12, 140, 48, 48, 1, 0},
  };
  for (const AttentionShape& s : shapes) {
    for (Keys keys : {Keys::kNormal, Keys::kOffset, Keys::kOutliers}) {
      for (int causal = 0; causal <= 2; ++causal) {
        AttentionOptions o;
        o.causal = static_cast<CausalMask>(causal);
        Problem p(s, o, &rng);
        FillData(&p, keys, &rng);
        std::vector<float> ref, ref_w, got, got_w;
        ASSERT_EQ(p.Run(AttentionReference, &ref, &ref_w), Status::kOk);
        p.options.precision = Precision::kInt8;
        ASSERT_EQ(p.Run(Attention, &got, nullptr), Status::kOk);
        const double bound = kInt8Bound;
        EXPECT_TRUE(WithinInt8Bound(got, ref, bound))
            << Describe(s, o) << " keys " << static_cast<int>(keys);
        // Its weights are its own softmax: the output they give is the
        // output, and they are within the bound of the reference's.
        std::vector<float> out_w;
        ASSERT_EQ(p.Run(Attention, &out_w, &got_w), Status::kOk);
        EXPECT_TRUE(WithinInt8Bound(out_w, ref, bound)) << Describe(s, o);
        EXPECT_TRUE(WithinInt8Bound(got_w, ref_w, bound)) << Describe(s, o);
      }
    }
  }
}

TEST_P(Int8AttentionTest, WithinBoundOnRandomRules) {
  std::mt19937 rng(23);
  RuleMix mix;
  mix.dropout = false;  // training: refused
  for (int trial = 0; trial < 120; ++trial) {
    auto pick = [&](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    const int64_t kvh = pick(1, 3), group = pick(1, 3);
    const int64_t d = pick(0, 1) ? 16 * pick(1, 4) : pick(1, 40);
    AttentionShape s{pick(1, 2), kvh * group, pick(1, 70), pick(1, 150), d,
                     pick(0, 1) ? d : 16 * pick(1, 3), kvh, 0};
    RuleProblem p(s, &rng);
    p.DrawOptions(mix, &rng);
    std::vector<float> ref, got, ref_w, got_w, lse;
    ASSERT_EQ(p.Run(AttentionWithLogSumExpReference, &ref, &ref_w, &lse),
              Status::kOk);
    p.options.precision = Precision::kInt8;
    const bool weights = trial % 3 == 0;
    got.assign(p.OutSize(), -7.0f);
    got_w.assign(p.WeightsSize(), -7.0f);
    ASSERT_EQ(Attention(p.shape, p.options, p.q.data(), p.k.data(), p.v.data(),
                        got.data(), weights ? got_w.data() : nullptr),
              Status::kOk)
        << p.Describe() << " " << StatusDetail();
    EXPECT_TRUE(WithinInt8Bound(got, ref)) << p.Describe();
    if (weights) EXPECT_TRUE(WithinInt8Bound(got_w, ref_w)) << p.Describe();
  }
}

// An int8 KV cache's rows are read in place (no smoothing): within the
// bound of the reference on the stored values.
TEST_P(Int8AttentionTest, ReadsAnInt8CacheInPlace) {
  std::mt19937 rng(5);
  AttentionShape s{1, 4, 40, 100, 64, 64, 2, 128};
  AttentionOptions o;
  o.causal = CausalMask::kBottomRight;
  Problem p(s, o, &rng);
  const size_t rows = static_cast<size_t>(2 * 128);
  std::vector<uint8_t> k8(rows * KvRowBytes(KvDtype::kInt8, 64));
  std::vector<uint8_t> v8(k8.size());
  std::vector<float> k = Normal(rows * 64, &rng), v = Normal(rows * 64, &rng);
  StoreKvRows(KvDtype::kInt8, k.data(), rows, 64, k8.data());
  StoreKvRows(KvDtype::kInt8, v.data(), rows, 64, v8.data());
  s.kv_dtype = KvDtype::kInt8;
  std::vector<float> ref(p.OutSize()), got(p.OutSize());
  const float* kp = reinterpret_cast<const float*>(k8.data());
  const float* vp = reinterpret_cast<const float*>(v8.data());
  ASSERT_EQ(AttentionReference(s, o, p.q.data(), kp, vp, ref.data(), nullptr),
            Status::kOk);
  o.precision = Precision::kInt8;
  ASSERT_EQ(Attention(s, o, p.q.data(), kp, vp, got.data(), nullptr),
            Status::kOk);
  EXPECT_TRUE(WithinInt8Bound(got, ref));
}

TEST(Int8Attention, CheckerRejectsAResultPastTheBound) {
  std::vector<float> ref = {0.5f, -2.0f, 1.0f, NAN};
  std::vector<float> got = ref;
  EXPECT_TRUE(WithinInt8Bound(got, ref));
  got[2] += 0.0019f;  // 0.95e-3 of 2
  EXPECT_TRUE(WithinInt8Bound(got, ref));
  got[2] += 0.0002f;  // 1.05e-3 of 2
  EXPECT_FALSE(WithinInt8Bound(got, ref));
  got = ref;
  got[3] = 1.0f;
  EXPECT_FALSE(WithinInt8Bound(got, ref));
}

TEST(Int8Attention, RefusesWhatTheBackwardNeeds) {
  std::mt19937 rng(3);
  AttentionShape s{1, 2, 8, 8, 16, 16, 0, 0};
  AttentionOptions o;
  o.precision = Precision::kInt8;
  Problem p(s, o, &rng);
  std::vector<float> out(p.OutSize()), lse(16), grad(p.OutSize());
  EXPECT_EQ(AttentionWithLogSumExp(s, o, p.q.data(), p.k.data(), p.v.data(),
                                   out.data(), nullptr, lse.data()),
            Status::kInvalidOption);
  EXPECT_NE(std::string(StatusDetail()).find("precision"), std::string::npos);
  o.training = true;
  EXPECT_EQ(Attention(s, o, p.q.data(), p.k.data(), p.v.data(), out.data(),
                      nullptr),
            Status::kInvalidOption);
  EXPECT_NE(std::string(StatusDetail()).find("precision"), std::string::npos);
  o.training = false;
  std::vector<float> gq(p.q.size()), gk(p.k.size()), gv(p.v.size());
  EXPECT_EQ(AttentionBackward(s, o, grad.data(), p.q.data(), p.k.data(),
                              p.v.data(), out.data(), lse.data(), gq.data(),
                              gk.data(), gv.data()),
            Status::kInvalidOption);
  o.precision = static_cast<Precision>(2);
  EXPECT_EQ(Attention(s, o, p.q.data(), p.k.data(), p.v.data(), out.data(),
                      nullptr),
            Status::kInvalidOption);
}

}  // namespace
}  // namespace causal_attention

