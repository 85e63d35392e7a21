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
#include "src/model/layer.h"
#include "src/model/rope.h"
#include "src/base/thread_pool.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;

constexpr double kTolerance = 2e-5;

// The outputs a training forward keeps (y and the activations).
LayerOutputs Kept(float* y, float* q, float* k, float* v, float* ctx,
                  float* lse) {
  LayerOutputs out;
  out.y = y;
  out.queries = q;
  out.keys = k;
  out.values = v;
  out.context = ctx;
  out.log_sum_exp = lse;
  return out;
}

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
    const LayerOutputs out =
        Kept(y.data(), q.data(), k.data(), v.data(), ctx.data(), lse.data());
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

// The backward and the reference backward on lp, every gradient compared.
void CompareBackward(const LayerProblem& lp, LayerProblem::Grads* got,
                     LayerProblem::Grads* ref) {
  ASSERT_EQ(lp.Backward(AttentionLayerBackward, got), Status::kOk);
  ASSERT_EQ(lp.Backward(AttentionLayerBackwardReference, ref), Status::kOk);
  EXPECT_TRUE(NearReference(got->x, ref->x, kTolerance)) << "grad_x";
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(NearReference(got->w[i], ref->w[i], kTolerance)) << "w " << i;
    EXPECT_TRUE(NearReference(got->bias[i], ref->bias[i], kTolerance))
        << "bias " << i;
  }
}

class LayerBackwardTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(LayerBackwardTest);

TEST_P(LayerBackwardTest, MatchesReference) {
  std::mt19937 rng(17);
  double worst = 0.0;
  for (const testing_util::LayerCase& c : testing_util::kLayerCases) {
    const LayerProblem lp(c, &rng);
    SCOPED_TRACE(lp.layer.Describe());
    LayerProblem::Grads got, ref;
    ASSERT_NO_FATAL_FAILURE(CompareBackward(lp, &got, &ref));
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

// gpt-oss's layer: learned sinks (params.sinks, grads.sinks accumulated),
// with Gemma's softcap and a sliding window passed through the options.
TEST_P(LayerBackwardTest, SinksWindowAndSoftcapMatchReference) {
  std::mt19937 rng(23);
  testing_util::RandomLayer layer({2, 37, 5, 3, 7, true, true, false}, &rng);
  const std::vector<float> sinks = RandomVector(3, &rng);
  layer.params.sinks = sinks.data();
  layer.options.attention.window_left = 5;
  layer.options.attention.softcap = 2.0f;
  const size_t n = 2 * 37 * 3 * 7;
  std::vector<float> y(n), y_ref(n), q(n), k(n), v(n), ctx(n), lse(2 * 3 * 37);
  LayerOutputs ref;
  ref.y = y_ref.data();
  ASSERT_EQ(AttentionLayerReference(layer.params, layer.options,
                                    layer.x.data(), ref),
            Status::kOk);
  const LayerOutputs out =
      Kept(y.data(), q.data(), k.data(), v.data(), ctx.data(), lse.data());
  ASSERT_EQ(
      AttentionLayerForward(layer.params, layer.options, layer.x.data(), out),
      Status::kOk);
  EXPECT_TRUE(NearReference(y, y_ref));
  LayerActivations saved{q.data(), k.data(), v.data(), ctx.data(), lse.data()};
  const std::vector<float> grad_y = RandomVector(n, &rng);
  std::vector<float> gs[2], gx[2], gw[2][4], gb[2][4];
  for (int which = 0; which < 2; ++which) {
    AttentionLayerGrads g;
    gs[which].assign(3, 1.0f);  // accumulated onto
    g.sinks = gs[which].data();
    gx[which].resize(layer.x.size());
    float** w[4] = {&g.w_query, &g.w_key, &g.w_value, &g.w_out};
    float** b[4] = {&g.b_query, &g.b_key, &g.b_value, &g.b_out};
    for (int i = 0; i < 4; ++i) {
      gw[which][i].assign(layer.w[i].size(), 0.0f);
      gb[which][i].assign(layer.bias[i].size(), 0.0f);
      *w[i] = gw[which][i].data();
      *b[i] = gb[which][i].data();
    }
    const auto fn =
        which == 0 ? AttentionLayerBackward : AttentionLayerBackwardReference;
    ASSERT_EQ(fn(layer.params, layer.options, layer.x.data(), saved,
                 grad_y.data(), gx[which].data(), g),
              Status::kOk);
  }
  EXPECT_TRUE(NearReference(gs[0], gs[1], kTolerance)) << "sinks";
  EXPECT_TRUE(NearReference(gx[0], gx[1], kTolerance)) << "grad_x";
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(NearReference(gw[0][i], gw[1][i], kTolerance)) << "w " << i;
  }
  bool moved = false;
  for (float x : gs[0]) moved |= x != 1.0f;
  EXPECT_TRUE(moved);
  // Without a gradient for them, the sinks are refused.
  AttentionLayerGrads none;
  EXPECT_NE(AttentionLayerBackward(layer.params, layer.options,
                                   layer.x.data(), saved, grad_y.data(),
                                   gx[0].data(), none),
            Status::kOk);
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

// The Llama chapter's layer: grouped KV heads (K, V projections of
// kv_heads · head_dim rows), RoPE on Q and K, no biases, out_proj; the
// backward sums the gradients of shared KV heads and rotates dQ and dK back.
TEST_P(LayerBackwardTest, GroupedHeadsWithRopeMatchReference) {
  std::mt19937 rng(41);
  const int64_t b = 2, t = 37, d_in = 12, heads = 4, kv_heads = 2, hd = 6;
  const int64_t dm = heads * hd, dkv = kv_heads * hd;
  const float bound = 1.0f / std::sqrt(static_cast<float>(d_in));
  const auto x = RandomVector(b * t * d_in, &rng);
  const auto wq = RandomVector(dm * d_in, &rng, -bound, bound);
  const auto wk = RandomVector(dkv * d_in, &rng, -bound, bound);
  const auto wv = RandomVector(dkv * d_in, &rng, -bound, bound);
  const auto wo = RandomVector(dm * dm, &rng, -bound, bound);
  AttentionLayerParams p = testing_util::GqaRopeParams(
      d_in, heads, kv_heads, hd, wq.data(), wk.data(), wv.data());
  p.w_out = wo.data();
  LayerOptions o;
  o.batch = b;
  o.tokens = t;
  o.attention.training = true;
  o.attention.dropout = 0.2f;
  o.attention.seed = 3;
  std::vector<float> y(b * t * dm), q(b * t * dm), k(b * t * dkv),
      v(b * t * dkv), ctx(b * t * dm), lse(b * heads * t);
  LayerOutputs out;
  out.y = y.data();
  out.queries = q.data();
  out.keys = k.data();
  out.values = v.data();
  out.context = ctx.data();
  out.log_sum_exp = lse.data();
  ASSERT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kOk);
  LayerActivations saved;
  saved.queries = q.data();
  saved.keys = k.data();
  saved.values = v.data();
  saved.context = ctx.data();
  saved.log_sum_exp = lse.data();
  const auto gy = RandomVector(b * t * dm, &rng);
  struct Grads {
    std::vector<float> x, wq, wk, wv, wo;
  } got, ref;
  for (Grads* g : {&got, &ref}) {
    g->x.assign(x.size(), -7.0f);
    g->wq.assign(wq.size(), 0.0f);
    g->wk.assign(wk.size(), 0.0f);
    g->wv.assign(wv.size(), 0.0f);
    g->wo.assign(wo.size(), 0.0f);
  }
  const auto run = [&](auto fn, Grads* g) {
    AttentionLayerGrads lg;
    lg.w_query = g->wq.data();
    lg.w_key = g->wk.data();
    lg.w_value = g->wv.data();
    lg.w_out = g->wo.data();
    return fn(p, o, x.data(), saved, gy.data(), g->x.data(), lg);
  };
  ASSERT_EQ(run(AttentionLayerBackward, &got), Status::kOk);
  ASSERT_EQ(run(AttentionLayerBackwardReference, &ref), Status::kOk);
  EXPECT_TRUE(NearReference(got.x, ref.x, kTolerance)) << "grad_x";
  EXPECT_TRUE(NearReference(got.wq, ref.wq, kTolerance)) << "w_query";
  EXPECT_TRUE(NearReference(got.wk, ref.wk, kTolerance)) << "w_key";
  EXPECT_TRUE(NearReference(got.wv, ref.wv, kTolerance)) << "w_value";
  EXPECT_TRUE(NearReference(got.wo, ref.wo, kTolerance)) << "w_out";
  // A layer with a KV cache has no backward.
  std::vector<float> cache_k(b * kv_heads * 64 * hd), cache_v(cache_k.size());
  LayerOptions cached = o;
  cached.cache.keys = cache_k.data();
  cached.cache.values = cache_v.data();
  cached.cache.capacity = 64;
  AttentionLayerGrads lg;
  lg.w_query = got.wq.data();
  lg.w_key = got.wk.data();
  lg.w_value = got.wv.data();
  lg.w_out = got.wo.data();
  EXPECT_EQ(AttentionLayerBackward(p, cached, x.data(), saved, gy.data(),
                                   got.x.data(), lg),
            Status::kInvalidOption);
}

// RoPE's backward is its transpose: <R·x, y> = <x, Rᵀ·y> (in double), for
// positions from a start, and Rᵀ·R = identity.
TEST(RopeTranspose, IsTheAdjointOfRope) {
  std::mt19937 rng(12);
  const int64_t b = 2, t = 9, h = 3, hd = 10, start = 5;
  const size_t n = b * t * h * hd;
  const auto x = RandomVector(n, &rng);
  const auto y = RandomVector(n, &rng);
  std::vector<float> rx = x, rty = y;
  ASSERT_EQ(ApplyRope(500000.0f, b, t, h, hd, start, rx.data()), Status::kOk);
  ASSERT_EQ(ApplyRopeTranspose(500000.0f, b, t, h, hd, start, rty.data()),
            Status::kOk);
  double lhs = 0.0, rhs = 0.0;
  for (size_t i = 0; i < n; ++i) {
    lhs += static_cast<double>(rx[i]) * y[i];
    rhs += static_cast<double>(x[i]) * rty[i];
  }
  EXPECT_NEAR(lhs, rhs, 1e-5 * (1.0 + std::fabs(lhs)));
  std::vector<float> back = rx;
  ASSERT_EQ(ApplyRopeTranspose(500000.0f, b, t, h, hd, start, back.data()),
            Status::kOk);
  EXPECT_TRUE(NearReference(back, x, 1e-6));
  EXPECT_EQ(ApplyRopeTranspose(10000.0f, b, t, h, 7, 0, back.data()),
            Status::kInvalidShape);
}

// Hugging Face's head_mask (LayerOptions.head_mask): the forward against
// the kept (unscaled) context merged, scaled and projected in double; a
// mask of ones bit-identical to none; the backward against the reference
// with the same mask, on every case, per-sequence ([B, H]) and shared
// ([1, H]) masks. (Against float64 finite differences: tests/node.)
TEST_P(LayerBackwardTest, HeadMaskScalesEachHeadsOutput) {
  std::mt19937 rng(31);
  for (const testing_util::LayerCase& c : testing_util::kLayerCases) {
    if (c.drop) continue;  // the forward is compared across calls
    for (const bool per_sequence : {false, true}) {
      LayerProblem lp(c, &rng);
      SCOPED_TRACE(lp.layer.Describe() + (per_sequence ? " [B, H]" : " [1, H]"));
      const size_t b = c.b, t = c.t, h = c.heads, hd = c.hd, dm = h * hd;
      std::vector<float> mask = RandomVector((per_sequence ? b : 1) * h, &rng);
      mask[0] = 0.0f;  // one head knocked out
      std::vector<float> ones(h, 1.0f), y1(lp.y.size()), y(lp.y.size());
      LayerOptions& o = lp.layer.options;
      o.head_mask = ones.data();
      o.head_mask_batch = 1;
      LayerOutputs out;
      out.y = y1.data();
      ASSERT_EQ(AttentionLayerForward(lp.layer.params, o, lp.layer.x.data(), out),
                Status::kOk);
      EXPECT_EQ(y1, lp.y) << "a mask of ones changed y";
      o.head_mask = mask.data();
      o.head_mask_batch = per_sequence ? c.b : 1;
      out.y = y.data();
      ASSERT_EQ(AttentionLayerForward(lp.layer.params, o, lp.layer.x.data(), out),
                Status::kOk);
      std::vector<float> expect(y.size());
      for (size_t ib = 0; ib < b; ++ib) {
        for (size_t it = 0; it < t; ++it) {
          std::vector<double> merged(dm);
          for (size_t ih = 0; ih < h; ++ih) {
            const double f = mask[(per_sequence ? ib : 0) * h + ih];
            for (size_t e = 0; e < hd; ++e) {
              merged[ih * hd + e] = f * lp.ctx[((ib * h + ih) * t + it) * hd + e];
            }
          }
          for (size_t r = 0; r < dm; ++r) {
            double sum = c.out_proj ? lp.layer.bias[3][r] : merged[r];
            if (c.out_proj) {
              for (size_t e = 0; e < dm; ++e) sum += lp.layer.w[3][r * dm + e] * merged[e];
            }
            expect[(ib * t + it) * dm + r] = static_cast<float>(sum);
          }
        }
      }
      EXPECT_TRUE(NearReference(y, expect, 1e-5)) << "masked forward";
      LayerProblem::Grads got, ref;
      ASSERT_NO_FATAL_FAILURE(CompareBackward(lp, &got, &ref));
      o.head_mask_batch = c.b + 1;  // neither 1 nor batch
      EXPECT_EQ(AttentionLayerForward(lp.layer.params, o, lp.layer.x.data(), out),
                Status::kInvalidShape);
      EXPECT_EQ(lp.Backward(AttentionLayerBackward, &got), Status::kInvalidShape);
    }
  }
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
