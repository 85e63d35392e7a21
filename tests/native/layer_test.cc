// The attention layer (every SIMD target) against AttentionLayerReference
// (LinearReference + AttentionReference): |a - ref| <= 1e-5 (1 + |ref|) on
// outputs, weights, scores and the kept Q/K/V heads.

#include "src/layer.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/linear.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;

class LayerTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(LayerTest);

TEST_P(LayerTest, LayerMatchesReference) {
  std::mt19937 rng(17);
  struct Case {
    int64_t b, t, d_in, heads, hd;
    bool bias, out_proj, drop;
  };
  const Case cases[] = {
      {2, 6, 3, 1, 2, false, false, false},
      {2, 6, 3, 2, 1, true, true, false},
      {1, 1, 1, 1, 1, false, false, false},
      {3, 37, 5, 3, 7, true, true, true},
      {1, 130, 48, 4, 12, false, true, true},
      {2, 70, 16, 8, 2, true, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("B=" + std::to_string(c.b) + " T=" + std::to_string(c.t) +
                 " H=" + std::to_string(c.heads));
    const int64_t dm = c.heads * c.hd;
    const auto x = RandomVector(c.b * c.t * c.d_in, &rng);
    // Parameters at nn.Linear's scale, U(-1/sqrt(in), 1/sqrt(in)): with
    // +-1 weights the scores reach ~30 and the softmax amplifies the float
    // rounding of the projections beyond what the tolerance is about.
    std::vector<float> w[4], bias[4];
    for (int i = 0; i < 4; ++i) {
      const int64_t in = i < 3 ? c.d_in : dm;
      const float bound = 1.0f / std::sqrt(static_cast<float>(in));
      w[i] = RandomVector(dm * in, &rng, -bound, bound);
      bias[i] = RandomVector(dm, &rng, -bound, bound);
    }
    AttentionLayerParams p;
    p.d_in = c.d_in;
    p.num_heads = c.heads;
    p.head_dim = c.hd;
    p.w_query = w[0].data();
    p.w_key = w[1].data();
    p.w_value = w[2].data();
    if (c.bias) {
      p.b_query = bias[0].data();
      p.b_key = bias[1].data();
      p.b_value = bias[2].data();
    }
    if (c.out_proj) {
      p.w_out = w[3].data();
      p.b_out = bias[3].data();
    }
    LayerOptions o;
    o.batch = c.b;
    o.tokens = c.t;
    if (c.drop) {
      o.attention.training = true;
      o.attention.dropout = 0.3f;
      o.attention.seed = 77;
    }
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
    // Keeping Q/K/V changes nothing (asking for weights does: it takes the
    // rows path, equal within the tolerance, not bit for bit).
    std::vector<float> y_only(n), y_kept(n);
    LayerOutputs just_y, kept = all;
    just_y.y = y_only.data();
    kept.y = y_kept.data();
    kept.weights = kept.scores = nullptr;
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

}  // namespace
}  // namespace causal_attention
