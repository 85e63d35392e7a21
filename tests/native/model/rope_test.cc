// src/model/rope.h / rope.cc (plain C++, no SIMD targets): ApplyRope and
// ApplyRopeTranspose against a plain scalar loop of the formula (the angle
// rounded to float32 where rope.h says PyTorch rounds it, cos, sin and the
// rotation in double) on every head size 2 to 18 and 64, 1 and 3 tokens, 1
// and 5 heads, starts 0 and 1000, within 1e-5 · (1 + |x|); the transpose
// undoes the
// rotation; inverse frequencies and Llama 3.1 / 3.2 scaling; positions
// continue with start; scores depend on the distance only; bad arguments.

#include "src/model/rope.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;

// The rotation of the formula: x [b, t, h, hd], positions start + token,
// angle sign +1 (ApplyRope) or -1 (the transpose); the angle position ·
// inv_freq in float32 (each op of compute_rope_params rounded to float),
// the rest in double.
std::vector<float> ScalarRope(const std::vector<float>& x, double base,
                              int64_t b, int64_t t, int64_t h, int64_t hd,
                              int64_t start, double sign) {
  std::vector<float> y(x.size());
  for (int64_t row = 0; row < b * t * h; ++row) {
    const int64_t token = row / h % t;
    const float* r = x.data() + row * hd;
    float* w = y.data() + row * hd;
    for (int64_t i = 0; i < hd / 2; ++i) {
      const float exponent = static_cast<float>(2 * i) / static_cast<float>(hd);
      const float inv_freq = 1.0f / static_cast<float>(std::pow(
                                        base, static_cast<double>(exponent)));
      const float angle = static_cast<float>(start + token) * inv_freq;
      const double a = sign * static_cast<double>(angle);
      const double lo = r[i], hi = r[i + hd / 2];
      w[i] = static_cast<float>(lo * std::cos(a) - hi * std::sin(a));
      w[i + hd / 2] = static_cast<float>(hi * std::cos(a) + lo * std::sin(a));
    }
  }
  return y;
}

TEST(Rope, MatchesTheScalarLoopOnManySizes) {
  std::mt19937 rng(81);
  for (int64_t hd = 2; hd <= 64; hd += hd < 18 ? 2 : 46) {
    for (int64_t t : {1, 3}) {
      for (int64_t h : {1, 5}) {
        for (int64_t start : {0, 1000}) {
          const int64_t b = 2;
          const auto x = RandomVector(b * t * h * hd, &rng);
          std::vector<float> got = x, back = x;
          ASSERT_EQ(ApplyRope(10000.0f, b, t, h, hd, start, got.data()),
                    Status::kOk);
          ASSERT_EQ(
              ApplyRopeTranspose(10000.0f, b, t, h, hd, start, back.data()),
              Status::kOk);
          const std::string where =
              "hd=" + std::to_string(hd) + " t=" + std::to_string(t) +
              " h=" + std::to_string(h) + " start=" + std::to_string(start);
          EXPECT_TRUE(NearReference(
              got, ScalarRope(x, 10000.0, b, t, h, hd, start, 1.0)))
              << where;
          EXPECT_TRUE(NearReference(
              back, ScalarRope(x, 10000.0, b, t, h, hd, start, -1.0)))
              << where;
          // The transpose undoes the rotation.
          ASSERT_EQ(
              ApplyRopeTranspose(10000.0f, b, t, h, hd, start, got.data()),
              Status::kOk);
          EXPECT_TRUE(NearReference(got, x)) << where;
        }
      }
    }
  }
}

TEST(Rope, RejectsBadShapes) {
  std::vector<float> x(16, 1.0f);
  for (int64_t hd : {0, 1, 3, 7}) {
    EXPECT_EQ(ApplyRope(10000.0f, 1, 1, 1, hd, 0, x.data()),
              Status::kInvalidShape)
        << hd;
  }
  EXPECT_EQ(ApplyRope(10000.0f, 1, 1, 1, 4, -1, x.data()),
            Status::kInvalidShape);
  EXPECT_EQ(ApplyRope(10000.0f, 0, 1, 1, 4, 0, x.data()),
            Status::kInvalidShape);
  EXPECT_EQ(ApplyRope(0.0f, 1, 1, 1, 4, 0, x.data()), Status::kInvalidOption);
  EXPECT_EQ(ApplyRope(10000.0f, 1, 1, 1, 4, 0, nullptr), Status::kNullPointer);
}

TEST(Rope, InverseFrequenciesAndSmallPositionsFollowTheFormula) {
  std::vector<float> inv(4);
  ASSERT_EQ(RopeInverseFrequencies(10000.0f, 8, inv.data()), Status::kOk);
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(inv[i], static_cast<float>(std::pow(10000.0, -i / 4.0)));
  }
  // Positions 0..31, head_dim 16, base 500 000: the rotation of the formula
  // in double (the float32 angle is exact enough here).
  std::mt19937 rng(1);
  const int64_t b = 2, t = 32, h = 3, hd = 16;
  const auto x = RandomVector(b * t * h * hd, &rng);
  std::vector<float> got = x;
  ASSERT_EQ(ApplyRope(500000.0f, b, t, h, hd, 0, got.data()), Status::kOk);
  std::vector<float> want(x.size());
  for (int64_t ib = 0; ib < b; ++ib) {
    for (int64_t it = 0; it < t; ++it) {
      for (int64_t ih = 0; ih < h; ++ih) {
        const float* r = x.data() + ((ib * t + it) * h + ih) * hd;
        float* w = want.data() + ((ib * t + it) * h + ih) * hd;
        for (int64_t i = 0; i < hd / 2; ++i) {
          const double a = it * std::pow(500000.0, -2.0 * i / hd);
          w[i] = static_cast<float>(r[i] * std::cos(a) -
                                    r[i + hd / 2] * std::sin(a));
          w[i + hd / 2] = static_cast<float>(r[i + hd / 2] * std::cos(a) +
                                             r[i] * std::sin(a));
        }
      }
    }
  }
  EXPECT_TRUE(NearReference(got, want));
  // Position 0 is the identity.
  for (int64_t i = 0; i < h * hd; ++i) EXPECT_EQ(got[i], x[i]) << i;
}

TEST(Rope, Llama31ScalingKeepsHighDividesLowAndInterpolatesBetween) {
  // head_dim 16, base 500 000: wavelengths 2π·500000^(i/8) are 6.3, 33,
  // 168, 865 (below 8192 / 4: kept), 4443 (between: interpolated), 22 970,
  // 1.2e5, 6e5 (above 8192 / 1: divided by the factor).
  const int64_t hd = 16;
  std::vector<float> plain(hd / 2), scaled(hd / 2), none(hd / 2);
  ASSERT_EQ(RopeInverseFrequencies(500000.0f, hd, plain.data()), Status::kOk);
  RopeScaling llama32{32.0f, 1.0f, 4.0f, 8192.0f};
  ASSERT_EQ(RopeInverseFrequencies(500000.0f, hd, scaled.data(), llama32),
            Status::kOk);
  ASSERT_EQ(RopeInverseFrequencies(500000.0f, hd, none.data(), RopeScaling()),
            Status::kOk);
  EXPECT_EQ(none, plain);  // factor 0: no adjustment
  for (int i = 0; i < 4; ++i) EXPECT_EQ(scaled[i], plain[i]) << i;
  for (int i = 5; i < 8; ++i) EXPECT_EQ(scaled[i], plain[i] / 32.0f) << i;
  // Between: the book's formula in double agrees to float precision.
  const double wavelen = 2 * 3.14159265358979323846 / plain[4];
  const double smooth = (8192.0 / wavelen - 1.0) / 3.0;
  const double want = (1 - smooth) * plain[4] / 32.0 + smooth * plain[4];
  EXPECT_GT(smooth, 0.0);
  EXPECT_LT(smooth, 1.0);
  EXPECT_NEAR(scaled[4], want, 1e-6 * want);
  // ApplyRope and its transpose use the scaled frequencies: angle
  // position · inv_freq on the last pair, at position 1000.
  std::vector<float> x(hd, 0.0f);
  x[hd / 2 - 1] = 1.0f;
  ASSERT_EQ(ApplyRope(500000.0f, 1, 1, 1, hd, 1000, x.data(), llama32),
            Status::kOk);
  const float angle = 1000.0f * scaled[hd / 2 - 1];
  EXPECT_FLOAT_EQ(x[hd / 2 - 1], static_cast<float>(std::cos(angle)));
  EXPECT_FLOAT_EQ(x[hd - 1], static_cast<float>(std::sin(angle)));
  ASSERT_EQ(ApplyRopeTranspose(500000.0f, 1, 1, 1, hd, 1000, x.data(), llama32),
            Status::kOk);
  EXPECT_NEAR(x[hd / 2 - 1], 1.0f, 1e-6);
  EXPECT_NEAR(x[hd - 1], 0.0f, 1e-6);
  // Bad configurations.
  for (RopeScaling bad : {RopeScaling{-1.0f, 1.0f, 4.0f, 8192.0f},
                          RopeScaling{32.0f, 4.0f, 4.0f, 8192.0f},
                          RopeScaling{32.0f, 0.0f, 4.0f, 8192.0f},
                          RopeScaling{32.0f, 1.0f, 4.0f, 0.0f},
                          RopeScaling{std::nanf(""), 1.0f, 4.0f, 8192.0f},
                          RopeScaling{32.0f, 1.0f, INFINITY, 8192.0f}}) {
    EXPECT_EQ(RopeInverseFrequencies(500000.0f, hd, scaled.data(), bad),
              Status::kInvalidOption);
    EXPECT_EQ(ApplyRope(500000.0f, 1, 1, 1, hd, 0, x.data(), bad),
              Status::kInvalidOption);
  }
}

TEST(Rope, StartContinuesPositionsAndScoresDependOnDistance) {
  std::mt19937 rng(2);
  const int64_t hd = 8;
  const auto x = RandomVector(10 * hd, &rng);
  // Rotating tokens 4..9 with start 4 equals rows 4..9 of rotating all.
  std::vector<float> all = x, tail(x.begin() + 4 * hd, x.end());
  ASSERT_EQ(ApplyRope(10000.0f, 1, 10, 1, hd, 0, all.data()), Status::kOk);
  ASSERT_EQ(ApplyRope(10000.0f, 1, 6, 1, hd, 4, tail.data()), Status::kOk);
  EXPECT_EQ(tail, std::vector<float>(all.begin() + 4 * hd, all.end()));
  // q·k of RoPE(q, m) and RoPE(k, n) depends on m - n only.
  const auto q = RandomVector(hd, &rng), k = RandomVector(hd, &rng);
  auto score = [&](int64_t m, int64_t n) {
    std::vector<float> qm = q, kn = k;
    EXPECT_EQ(ApplyRope(10000.0f, 1, 1, 1, hd, m, qm.data()), Status::kOk);
    EXPECT_EQ(ApplyRope(10000.0f, 1, 1, 1, hd, n, kn.data()), Status::kOk);
    double s = 0;
    for (int64_t i = 0; i < hd; ++i) s += qm[i] * kn[i];
    return s;
  };
  EXPECT_NEAR(score(7, 3), score(107, 103), 1e-4);
  EXPECT_GT(std::fabs(score(7, 3) - score(7, 6)), 1e-3);  // it does rotate
}

}  // namespace
}  // namespace causal_attention
