// src/model/norm.h on every compiled target (hwy::TestWithParamTarget): the
// forward passes against the double oracles with the bounds norm.h states,
// the backward passes against the analytic float64 gradient, on odd row
// lengths (tails), a large common offset (LayerNorm's shifted mean), and
// values where exp and tanh saturate.

#include "src/model/norm.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "hwy/tests/hwy_gtest.h"

namespace causal_attention {
namespace {

std::vector<float> Normal(size_t n, uint32_t seed, float offset = 0.0f,
                          float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = offset + g(rng);
  return v;
}

void ExpectClose(const std::vector<float>& got, const std::vector<double>& ref,
                 double tol, const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::fabs(got[i] - ref[i]), tol * (1.0 + std::fabs(ref[i])))
        << what << " at " << i << ": " << got[i] << " vs " << ref[i];
  }
}

const int64_t kDims[] = {1, 3, 7, 16, 33, 64, 130, 768};

class NormTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(NormTest);

TEST_P(NormTest, LayerNormForwardAndBackwardMatchFloat64) {
  for (const int64_t dim : kDims) {
    for (const float offset : {0.0f, 1000.0f}) {
      const int64_t rows = 5;
      const size_t n = static_cast<size_t>(rows * dim);
      const std::vector<float> x = Normal(n, 1 + dim, offset);
      const std::vector<float> scale = Normal(dim, 2, 1.0f, 0.3f);
      const std::vector<float> shift = Normal(dim, 3, 0.0f, 0.3f);
      const std::vector<float> gy = Normal(n, 4);
      const float eps = 1e-5f;
      std::vector<float> y(n), mean(rows), rstd(rows), ref(n);
      ASSERT_EQ(LayerNorm(x.data(), rows, dim, scale.data(), shift.data(), eps,
                          y.data(), mean.data(), rstd.data()),
                Status::kOk);
      ASSERT_EQ(LayerNormReference(x.data(), rows, dim, scale.data(),
                                   shift.data(), eps, ref.data()),
                Status::kOk);
      // A row of one value: var 0, y = shift (rstd = 1 / sqrt(eps)).
      ExpectClose(y, std::vector<double>(ref.begin(), ref.end()),
                  offset == 0.0f ? 2e-6 : 5e-4, "LayerNorm");
      // The backward in double from the same x.
      std::vector<double> gx_ref(n), gs_ref(dim, 0.25), gb_ref(dim, -0.5);
      for (int64_t r = 0; r < rows; ++r) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < dim; ++j) m += x[r * dim + j];
        m /= dim;
        for (int64_t j = 0; j < dim; ++j) {
          v += (x[r * dim + j] - m) * (x[r * dim + j] - m);
        }
        const double s = 1.0 / std::sqrt(v / dim + eps);
        double mg = 0, mgx = 0;
        for (int64_t j = 0; j < dim; ++j) {
          const double g = static_cast<double>(gy[r * dim + j]) * scale[j];
          const double xh = (x[r * dim + j] - m) * s;
          mg += g;
          mgx += g * xh;
          gs_ref[j] += gy[r * dim + j] * xh;
          gb_ref[j] += gy[r * dim + j];
        }
        mg /= dim;
        mgx /= dim;
        for (int64_t j = 0; j < dim; ++j) {
          const double g = static_cast<double>(gy[r * dim + j]) * scale[j];
          const double xh = (x[r * dim + j] - m) * s;
          gx_ref[r * dim + j] = s * (g - mg - xh * mgx);
        }
      }
      std::vector<float> gx(n), gs(dim, 0.25f), gb(dim, -0.5f);
      ASSERT_EQ(LayerNormBackward(x.data(), rows, dim, scale.data(),
                                  mean.data(), rstd.data(), gy.data(),
                                  gx.data(), gs.data(), gb.data()),
                Status::kOk);
      // With an offset of 1000 the float32 x has 6e-5 of absolute rounding:
      // the bounds compare with what float32 input can mean there.
      const double tol = offset == 0.0f ? 1e-5 : 2e-3;
      ExpectClose(gx, gx_ref, tol * (dim == 1 ? 1e3 : 1), "grad_x");
      ExpectClose(gs, gs_ref, tol, "grad_scale");
      ExpectClose(gb, gb_ref, 1e-5, "grad_shift");
    }
  }
}

TEST_P(NormTest, RmsNormForwardAndBackwardMatchFloat64) {
  for (const int64_t dim : kDims) {
    const int64_t rows = 4;
    const size_t n = static_cast<size_t>(rows * dim);
    const std::vector<float> x = Normal(n, 10 + dim, 0.5f, 2.0f);
    const std::vector<float> w = Normal(dim, 11, 1.0f, 0.3f);
    const std::vector<float> gy = Normal(n, 12);
    const float eps = 1e-6f;
    std::vector<float> y(n), rstd(rows), ref(n);
    ASSERT_EQ(RmsNorm(x.data(), rows, dim, w.data(), eps, y.data(), rstd.data()),
              Status::kOk);
    ASSERT_EQ(RmsNormReference(x.data(), rows, dim, w.data(), eps, ref.data()),
              Status::kOk);
    ExpectClose(y, std::vector<double>(ref.begin(), ref.end()), 2e-6, "RmsNorm");
    std::vector<double> gx_ref(n), gw_ref(dim, 1.0);
    for (int64_t r = 0; r < rows; ++r) {
      double sq = 0;
      for (int64_t j = 0; j < dim; ++j) {
        sq += static_cast<double>(x[r * dim + j]) * x[r * dim + j];
      }
      const double s = 1.0 / std::sqrt(sq / dim + eps);
      double mgx = 0;
      for (int64_t j = 0; j < dim; ++j) {
        mgx += static_cast<double>(gy[r * dim + j]) * w[j] * x[r * dim + j] * s;
        gw_ref[j] += gy[r * dim + j] * (x[r * dim + j] * s);
      }
      mgx /= dim;
      for (int64_t j = 0; j < dim; ++j) {
        gx_ref[r * dim + j] = s * (static_cast<double>(gy[r * dim + j]) * w[j] -
                                   x[r * dim + j] * s * mgx);
      }
    }
    std::vector<float> gx(n), gw(dim, 1.0f);
    ASSERT_EQ(RmsNormBackward(x.data(), rows, dim, w.data(), rstd.data(),
                              gy.data(), gx.data(), gw.data()),
              Status::kOk);
    ExpectClose(gx, gx_ref, 1e-5, "grad_x");
    ExpectClose(gw, gw_ref, 1e-5, "grad_weight");
  }
}

TEST_P(NormTest, ActivationsMatchFloat64IncludingSaturation) {
  std::vector<float> x = Normal(1000, 20, 0.0f, 3.0f);
  for (const float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 9.9f, -9.9f, 10.5f,
                        -10.5f, 30.0f, -30.0f, 90.0f, -90.0f, 200.0f, -200.0f,
                        1e20f, -1e20f}) {
    x.push_back(v);
  }
  const size_t n = x.size();
  const std::vector<float> gy = Normal(n, 21);
  std::vector<double> gelu(n), dgelu(n), silu(n), dsilu(n), sm(n), dsa(n), dsb(n);
  const std::vector<float> b = Normal(n, 22);
  for (size_t i = 0; i < n; ++i) {
    gelu[i] = GeluReference(x[i]);
    dgelu[i] = gy[i] * GeluDerivativeReference(x[i]);
    silu[i] = SiluReference(x[i]);
    dsilu[i] = gy[i] * SiluDerivativeReference(x[i]);
    sm[i] = silu[i] * b[i];
    dsa[i] = static_cast<double>(gy[i]) * b[i] * SiluDerivativeReference(x[i]);
    dsb[i] = gy[i] * silu[i];
  }
  // Every length up to 40 (each tail), then the whole array.
  for (size_t len = 1; len <= n; len = len < 40 ? len + 1 : n + 1) {
    const size_t m = len > 40 ? n : len;
    std::vector<float> y(m), g(m), ga(m), gb(m);
    auto head = [&](const std::vector<double>& v) {
      return std::vector<double>(v.begin(), v.begin() + m);
    };
    ASSERT_EQ(Gelu(x.data(), m, y.data()), Status::kOk);
    ExpectClose(y, head(gelu), 1e-6, "GELU");
    ASSERT_EQ(GeluBackward(x.data(), gy.data(), m, g.data()), Status::kOk);
    ExpectClose(g, head(dgelu), 1e-5, "GELU'");
    ASSERT_EQ(Silu(x.data(), m, y.data()), Status::kOk);
    ExpectClose(y, head(silu), 2e-6, "SiLU");
    ASSERT_EQ(SiluBackward(x.data(), gy.data(), m, g.data()), Status::kOk);
    ExpectClose(g, head(dsilu), 1e-5, "SiLU'");
    ASSERT_EQ(SiluMul(x.data(), b.data(), m, y.data()), Status::kOk);
    ExpectClose(y, head(sm), 2e-6, "SiLU(a)·b");
    ASSERT_EQ(SiluMulBackward(x.data(), b.data(), gy.data(), m, ga.data(),
                              gb.data()),
              Status::kOk);
    ExpectClose(ga, head(dsa), 1e-5, "grad a");
    ExpectClose(gb, head(dsb), 1e-5, "grad b");
  }
  // NaN stays NaN through every pass.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float out = 0.0f, one = 1.0f;
  ASSERT_EQ(Gelu(&nan, 1, &out), Status::kOk);
  EXPECT_TRUE(std::isnan(out));
  ASSERT_EQ(GeluBackward(&nan, &one, 1, &out), Status::kOk);
  EXPECT_TRUE(std::isnan(out));
  ASSERT_EQ(Silu(&nan, 1, &out), Status::kOk);
  EXPECT_TRUE(std::isnan(out));
}

TEST_P(NormTest, BadArgumentsAreRefused) {
  float x[4] = {1, 2, 3, 4}, p[2] = {1, 1}, y[4];
  EXPECT_EQ(LayerNorm(x, 0, 2, p, p, 1e-5f, y, nullptr, nullptr),
            Status::kInvalidShape);
  EXPECT_EQ(LayerNorm(x, 2, 2, p, nullptr, 1e-5f, y, nullptr, nullptr),
            Status::kNullPointer);
  EXPECT_EQ(LayerNorm(x, 2, 2, p, p, 0.0f, y, nullptr, nullptr),
            Status::kInvalidOption);
  EXPECT_EQ(RmsNorm(x, 2, 2, p, std::nanf(""), y, nullptr),
            Status::kInvalidOption);
  EXPECT_EQ(RmsNorm(x, 2, -1, p, 1e-5f, y, nullptr), Status::kInvalidShape);
  EXPECT_EQ(Gelu(x, -1, y), Status::kInvalidShape);
  EXPECT_EQ(Gelu(nullptr, 2, y), Status::kNullPointer);
  EXPECT_EQ(Gelu(nullptr, 0, nullptr), Status::kOk);
  EXPECT_EQ(SiluMulBackward(x, x, x, 4, nullptr, y), Status::kNullPointer);
}

}  // namespace
}  // namespace causal_attention
