// The attention layer (every SIMD target) against AttentionLayerReference
// (LinearReference + AttentionReference): |a - ref| <= 1e-5 (1 + |ref|) on
// outputs, weights, scores and the kept Q/K/V heads.

#include "src/model/layer.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/gemm/linear.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;

class LayerTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(LayerTest);

TEST_P(LayerTest, LayerMatchesReference) {
  std::mt19937 rng(17);
  for (const testing_util::LayerCase& c : testing_util::kLayerCases) {
    const testing_util::RandomLayer layer(c, &rng);
    SCOPED_TRACE(layer.Describe());
    const int64_t dm = c.heads * c.hd;
    const AttentionLayerParams& p = layer.params;
    const LayerOptions& o = layer.options;
    const std::vector<float>& x = layer.x;
    const size_t n = c.b * c.t * dm, nw = c.b * c.heads * c.t * c.t;
    std::vector<float> y(n), yr(n), wts(nw), wr(nw), s(nw), sr(nw);
    std::vector<float> qkv[3], qkv_ref[3];
    for (int i = 0; i < 3; ++i) {
      qkv[i].resize(n);
      qkv_ref[i].resize(n);
    }
    const LayerOutputs all{y.data(),      wts.data(),    s.data(),
                           qkv[0].data(), qkv[1].data(), qkv[2].data()};
    const LayerOutputs all_ref{yr.data(),         wr.data(),
                               sr.data(),         qkv_ref[0].data(),
                               qkv_ref[1].data(), qkv_ref[2].data()};
    ASSERT_EQ(AttentionLayerForward(p, o, x.data(), all), Status::kOk);
    ASSERT_EQ(AttentionLayerReference(p, o, x.data(), all_ref), Status::kOk);
    EXPECT_TRUE(NearReference(y, yr)) << "output";
    EXPECT_TRUE(NearReference(wts, wr)) << "weights";
    EXPECT_TRUE(NearReference(s, sr)) << "scores";
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(NearReference(qkv[i], qkv_ref[i])) << "Q, K, V " << i;
    }
    // Keeping Q/K/V, the context and the log-sum-exp (for a backward)
    // changes nothing (asking for weights does: it takes the rows path,
    // equal within the tolerance, not bit for bit).
    std::vector<float> y_only(n), y_kept(n), ctx(n), lse(c.b * c.heads * c.t);
    LayerOutputs just_y, kept = all;
    just_y.y = y_only.data();
    kept.y = y_kept.data();
    kept.weights = kept.scores = nullptr;
    kept.context = ctx.data();
    kept.log_sum_exp = lse.data();
    ASSERT_EQ(AttentionLayerForward(p, o, x.data(), just_y), Status::kOk);
    ASSERT_EQ(AttentionLayerForward(p, o, x.data(), kept), Status::kOk);
    EXPECT_EQ(y_only, y_kept);
  }
}

// The heads the layer hands back are the projections split as the book's
// .view(b, T, H, hd).transpose(1, 2): head h, token t holds columns
// [h·hd, (h+1)·hd) of x_t · Wᵀ + b.
TEST_P(LayerTest, KeptHeadsAreTheSplitProjections) {
  std::mt19937 rng(23);
  const int64_t b = 2, t = 5, d_in = 3, heads = 3, hd = 2, dm = heads * hd;
  const auto x = RandomVector(b * t * d_in, &rng);
  std::vector<float> w[3], bias[3];
  for (int i = 0; i < 3; ++i) {
    w[i] = RandomVector(dm * d_in, &rng);
    bias[i] = RandomVector(dm, &rng);
  }
  AttentionLayerParams p;
  p.d_in = d_in;
  p.num_heads = heads;
  p.head_dim = hd;
  p.w_query = w[0].data();
  p.b_query = bias[0].data();
  p.w_key = w[1].data();
  p.b_key = bias[1].data();
  p.w_value = w[2].data();
  p.b_value = bias[2].data();
  LayerOptions o;
  o.batch = b;
  o.tokens = t;
  const size_t n = b * t * dm;
  std::vector<float> y(n), kept[3];
  for (auto& k : kept) k.resize(n);
  const LayerOutputs out{y.data(),       nullptr,        nullptr,
                         kept[0].data(), kept[1].data(), kept[2].data()};
  ASSERT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kOk);
  for (int i = 0; i < 3; ++i) {
    std::vector<float> proj(n);
    ASSERT_EQ(LinearReference(x.data(), b * t, d_in, dm, w[i].data(),
                              bias[i].data(), proj.data()),
              Status::kOk);
    std::vector<float> split(n);
    for (int64_t ib = 0; ib < b; ++ib) {
      for (int64_t it = 0; it < t; ++it) {
        for (int64_t ih = 0; ih < heads; ++ih) {
          for (int64_t c = 0; c < hd; ++c) {
            split[((ib * heads + ih) * t + it) * hd + c] =
                proj[(ib * t + it) * dm + ih * hd + c];
          }
        }
      }
    }
    EXPECT_TRUE(NearReference(kept[i], split)) << i;
  }
}

TEST(Layer, RejectsBadArguments) {
  std::vector<float> x(6), w(6), y(6);
  AttentionLayerParams p;
  p.d_in = 3;
  p.w_query = p.w_key = p.w_value = w.data();
  p.head_dim = 2;
  LayerOptions o;
  o.tokens = 2;
  LayerOutputs out;
  out.y = y.data();
  EXPECT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kOk);
  LayerOutputs no_y;
  EXPECT_EQ(AttentionLayerForward(p, o, x.data(), no_y), Status::kNullPointer);
  LayerOptions bad = o;
  bad.tokens = 0;
  EXPECT_EQ(AttentionLayerForward(p, bad, x.data(), out),
            Status::kInvalidShape);
  bad = o;
  bad.attention.dropout = 1.0f;
  EXPECT_EQ(AttentionLayerForward(p, bad, x.data(), out),
            Status::kInvalidOption);
  AttentionLayerParams no_key = p;
  no_key.w_key = nullptr;
  EXPECT_EQ(AttentionLayerForward(no_key, o, x.data(), out),
            Status::kNullPointer);
}

// The [B, H, T, Tk] weights and scores are sized only when asked for, and
// refused before any work when they cannot exist: 2^20 heads × 2^22 tokens
// × 2^22 keys × 4 bytes is 2^66 (the projections themselves would fit).
TEST(Layer, RefusesWeightsThatCannotExist) {
  std::vector<float> x(1), w(1), y(1), weights(1);
  AttentionLayerParams p;
  p.d_in = 1;
  p.num_heads = int64_t{1} << 20;
  p.head_dim = 1;
  p.w_query = p.w_key = p.w_value = w.data();
  LayerOptions o;
  o.tokens = int64_t{1} << 22;
  LayerOutputs out;
  out.y = y.data();
  out.weights = weights.data();
  EXPECT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kTooLarge);
  out.weights = nullptr;
  out.scores = weights.data();
  EXPECT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kTooLarge);
}

}  // namespace
}  // namespace causal_attention
