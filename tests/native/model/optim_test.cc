// AdamWUpdate (src/model/optim.h): the float32 rounding of PyTorch's single-tensor
// loop, bit for bit (each product and quotient rounded to float32, each sum
// rounded from its exact double value: the JS loop it replaced), and within
// 1e-5 relative of the rule in double, on odd lengths and two tensors of
// different step counts in one call. tests/node/training.test.mjs checks the
// wasm build against the JS loop, bit for bit, through AdamW.step.

#include "src/model/optim.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace causal_attention {
namespace {

struct Tensor {
  std::vector<float> p, g, m, v;
};

TEST(OptimTest, AdamWUpdateMatchesTheFloat32LoopAndDouble) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const double lr = 3e-3, beta1 = 0.85, beta2 = 0.995, eps = 1e-6, wd = 0.05;
  const AdamWStep s{static_cast<float>(1 - lr * wd),
                    static_cast<float>(1 - beta1), static_cast<float>(beta2),
                    static_cast<float>(1 - beta2), static_cast<float>(eps)};
  const size_t sizes[] = {1, 5, 130};
  const int steps[] = {1, 7, 40};  // each tensor's own step count
  std::vector<Tensor> tensors;
  std::vector<AdamWTensor> call;
  for (size_t k = 0; k < 3; ++k) {
    Tensor t;
    for (size_t i = 0; i < sizes[k]; ++i) {
      t.p.push_back(u(rng));
      t.g.push_back(u(rng) * std::pow(10.0f, static_cast<float>(i % 5) - 3));
      t.m.push_back(u(rng) * 0.1f);
      t.v.push_back(std::fabs(u(rng)) * 1e-3f);
    }
    tensors.push_back(t);
  }
  std::vector<Tensor> before = tensors;
  for (size_t k = 0; k < 3; ++k) {
    Tensor& t = tensors[k];
    call.push_back({t.p.data(), t.g.data(), t.m.data(), t.v.data(), sizes[k],
                    static_cast<float>(-(lr / (1 - std::pow(beta1, steps[k])))),
                    static_cast<float>(std::sqrt(1 - std::pow(beta2, steps[k])))});
  }
  AdamWUpdate(s, call.data(), call.size());
  for (size_t k = 0; k < 3; ++k) {
    for (size_t i = 0; i < sizes[k]; ++i) {
      SCOPED_TRACE(testing::Message() << "tensor " << k << " value " << i);
      const Tensor& b = before[k];
      const float g = b.g[i];
      // The float32 loop: fl(x) rounds the exact (double) value.
      const auto fl = [](double x) { return static_cast<float>(x); };
      const float p0 = fl(static_cast<double>(b.p[i]) * s.decay);
      const float m = fl(b.m[i] + static_cast<double>(s.one_minus_beta1) * fl(static_cast<double>(g) - b.m[i]));
      const float v = fl(static_cast<double>(fl(static_cast<double>(b.v[i]) * s.beta2)) +
                         fl(static_cast<double>(fl(static_cast<double>(s.one_minus_beta2) * g)) * g));
      const float denom = fl(static_cast<double>(fl(fl(std::sqrt(static_cast<double>(v))) /
                                                     static_cast<double>(call[k].correction2))) + s.eps);
      const float p = fl(static_cast<double>(p0) +
                         fl(static_cast<double>(fl(static_cast<double>(call[k].minus_step) * m)) / denom));
      EXPECT_EQ(tensors[k].m[i], m);
      EXPECT_EQ(tensors[k].v[i], v);
      EXPECT_EQ(tensors[k].p[i], p);
      // The rule in double, from the same inputs.
      const double md = b.m[i] + (1 - beta1) * (g - static_cast<double>(b.m[i]));
      const double vd = beta2 * b.v[i] + (1 - beta2) * static_cast<double>(g) * g;
      const double bc1 = 1 - std::pow(beta1, steps[k]);
      const double bc2 = 1 - std::pow(beta2, steps[k]);
      const double pd = b.p[i] * (1 - lr * wd) - lr / bc1 * md / (std::sqrt(vd) / std::sqrt(bc2) + eps);
      EXPECT_NEAR(tensors[k].m[i], md, 1e-5 * (1 + std::fabs(md)));
      EXPECT_NEAR(tensors[k].v[i], vd, 1e-5 * (1 + std::fabs(vd)));
      EXPECT_NEAR(tensors[k].p[i], pd, 1e-5 * (1 + std::fabs(pd)));
    }
  }
}

}  // namespace
}  // namespace causal_attention
