// The attention layer's backward (every SIMD target) against
// AttentionLayerBackwardReference (LinearBackwardReference +
// AttentionBackwardReference) on the activations a training forward kept:
// |g - ref| <= 2e-5 (1 + |ref|) on grad_x and every parameter gradient,
// which accumulate (+=) onto what they held; bit-identical for any thread
// count. (End to end against float64 finite differences: the modules'
// tests in tests/node/training.test.mjs.)

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/layer.h"
#include "src/thread_pool.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;

constexpr double kTolerance = 2e-5;

// A layer (testing_util::RandomLayer), the forward's kept activations and
// dL/dy.
struct LayerProblem {
  testing_util::RandomLayer layer;
  std::vector<float> grad_y, q, k, v, ctx, lse, y;

  LayerProblem(const testing_util::LayerCase& c, std::mt19937* rng)
      : layer(c, rng) {
    const size_t n = c.b * c.t * c.heads * c.hd;
    grad_y = RandomVector(n, rng);
    for (auto* a : {&q, &k, &v, &ctx, &y}) a->resize(n);
    lse.resize(c.b * c.heads * c.t);
    LayerOutputs out;
    out.y = y.data();
    out.queries = q.data();
    out.keys = k.data();
    out.values = v.data();
    out.context = ctx.data();
    out.log_sum_exp = lse.data();
    EXPECT_EQ(
        AttentionLayerForward(layer.params, layer.options, layer.x.data(), out),
        Status::kOk);
  }

  // Gradients, each starting from the same nonzero values (to see the +=).
  struct Grads {
    std::vector<float> x, w[4], bias[4];
  };
  template <class Fn>
  Status Backward(Fn fn, Grads* g) const {
    std::mt19937 fill(5);
    g->x.assign(layer.x.size(), -7.0f);  // poison: overwritten
    AttentionLayerGrads lg;
    float** gw[4] = {&lg.w_query, &lg.w_key, &lg.w_value, &lg.w_out};
    float** gb[4] = {&lg.b_query, &lg.b_key, &lg.b_value, &lg.b_out};
    const bool has_bias[4] = {layer.c.bias, layer.c.bias, layer.c.bias,
                              layer.c.out_proj};
    for (int i = 0; i < 4; ++i) {
      g->w[i] = RandomVector(layer.w[i].size(), &fill);
      g->bias[i] = RandomVector(layer.bias[i].size(), &fill);
      if (i < 3 || layer.c.out_proj) *gw[i] = g->w[i].data();
      if (has_bias[i]) *gb[i] = g->bias[i].data();
    }
    LayerActivations saved;
    saved.queries = q.data();
    saved.keys = k.data();
    saved.values = v.data();
    saved.context = ctx.data();
    saved.log_sum_exp = lse.data();
    return fn(layer.params, layer.options, layer.x.data(), saved, grad_y.data(),
              g->x.data(), lg);
  }
};

class LayerBackwardTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(LayerBackwardTest);

TEST_P(LayerBackwardTest, MatchesReference) {
  std::mt19937 rng(17);
  double worst = 0.0;
  for (const testing_util::LayerCase& c : testing_util::kLayerCases) {
    const LayerProblem lp(c, &rng);
    SCOPED_TRACE(lp.layer.Describe());
    LayerProblem::Grads got, ref;
    ASSERT_EQ(lp.Backward(AttentionLayerBackward, &got), Status::kOk);
    ASSERT_EQ(lp.Backward(AttentionLayerBackwardReference, &ref), Status::kOk);
    EXPECT_TRUE(NearReference(got.x, ref.x, kTolerance)) << "grad_x";
    for (int i = 0; i < 4; ++i) {
      EXPECT_TRUE(NearReference(got.w[i], ref.w[i], kTolerance)) << "w " << i;
      EXPECT_TRUE(NearReference(got.bias[i], ref.bias[i], kTolerance))
          << "bias " << i;
    }
    const auto note = [&worst](const std::vector<float>& a,
                               const std::vector<float>& r) {
      for (size_t e = 0; e < a.size(); ++e) {
        worst = std::max(worst, std::fabs(static_cast<double>(a[e]) - r[e]) /
                                    (1.0 + std::fabs(r[e])));
      }
    };
    note(got.x, ref.x);
    for (int i = 0; i < 4; ++i) {
      note(got.w[i], ref.w[i]);
      note(got.bias[i], ref.bias[i]);
    }
  }
  printf("  %s: layer backward worst error %.3g (tolerance %g)\n",
         hwy::TargetName(GetParam()), worst, kTolerance);
}

TEST_P(LayerBackwardTest, BitIdenticalForAnyThreadCount) {
  std::mt19937 rng(3);
  const LayerProblem lp({2, 150, 24, 4, 8, true, true, true}, &rng);
  SetNumThreads(1);
  LayerProblem::Grads one;
  ASSERT_EQ(lp.Backward(AttentionLayerBackward, &one), Status::kOk);
  for (int threads : {2, 3}) {
    ASSERT_EQ(SetNumThreads(threads), threads);
    LayerProblem::Grads g;
    ASSERT_EQ(lp.Backward(AttentionLayerBackward, &g), Status::kOk);
    EXPECT_EQ(g.x, one.x) << threads;
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(g.w[i], one.w[i]) << threads;
      EXPECT_EQ(g.bias[i], one.bias[i]) << threads;
    }
  }
  SetNumThreads(1);
}

TEST(LayerBackwardStatus, RejectsMissingOrExtraGradients) {
  std::mt19937 rng(9);
  LayerProblem lp({1, 4, 3, 2, 2, true, true, false}, &rng);
  LayerProblem::Grads g;
  ASSERT_EQ(lp.Backward(AttentionLayerBackward, &g), Status::kOk);
  // A gradient without its parameter.
  AttentionLayerParams& p = lp.layer.params;
  p.b_key = nullptr;
  EXPECT_EQ(lp.Backward(AttentionLayerBackward, &g), Status::kNullPointer);
  p.b_key = lp.layer.bias[1].data();
  LayerOptions& o = lp.layer.options;
  o.tokens = 0;
  EXPECT_EQ(lp.Backward(AttentionLayerBackward, &g), Status::kInvalidShape);
  o.tokens = 4;
  o.attention.dropout = 2.0f;
  EXPECT_EQ(lp.Backward(AttentionLayerBackwardReference, &g),
            Status::kInvalidOption);
  o.attention.dropout = 0.0f;
  ASSERT_EQ(lp.Backward(AttentionLayerBackward, &g), Status::kOk);
}

}  // namespace
}  // namespace causal_attention
