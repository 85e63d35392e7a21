// The layer's generation features on every SIMD target: grouped-query
// projections, RoPE (src/model/rope.h) and a KV cache the layer appends to.
//   * SIMD layer against AttentionLayerReference: |a - ref| <= 1e-5 (1 + |ref|)
//   * a prompt and then token-by-token calls through the cache give one full
//     forward's outputs (the book's ch04/03 KV-cache contract), same bound;
//   * RoPE against its formula (double) and its documented float32 rounding.

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/causal_attention.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;

// Parameters of one layer at nn.Linear's scale (see layer_test.cc).
struct Layer {
  std::vector<float> w[4], bias[4];
  AttentionLayerParams p;

  Layer(int64_t d_in, int64_t heads, int64_t kv_heads, int64_t hd,
        float rope_base, bool biases, std::mt19937* rng) {
    const int64_t dm = heads * hd, dkv = kv_heads * hd;
    const int64_t rows[4] = {dm, dkv, dkv, dm};
    for (int i = 0; i < 4; ++i) {
      const int64_t in = i < 3 ? d_in : dm;
      const float bound = 1.0f / std::sqrt(static_cast<float>(in));
      w[i] = RandomVector(rows[i] * in, rng, -bound, bound);
      bias[i] = RandomVector(rows[i], rng, -bound, bound);
    }
    p.d_in = d_in;
    p.num_heads = heads;
    p.num_kv_heads = kv_heads;
    p.head_dim = hd;
    p.rope_base = rope_base;
    p.w_query = w[0].data();
    p.w_key = w[1].data();
    p.w_value = w[2].data();
    p.w_out = w[3].data();
    if (biases) {
      p.b_query = bias[0].data();
      p.b_key = bias[1].data();
      p.b_value = bias[2].data();
      p.b_out = bias[3].data();
    }
  }
};

class GenerationLayerTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(GenerationLayerTest);

TEST_P(GenerationLayerTest, GqaAndRopeMatchReference) {
  std::mt19937 rng(12);
  struct Case {
    int64_t b, t, d_in, heads, kv_heads, hd;
    float rope;
    bool biases, drop;
  };
  const Case cases[] = {
      {2, 6, 3, 2, 1, 2, 10000.0f, false, false},
      {1, 40, 16, 8, 2, 4, 500000.0f, false, false},
      {3, 17, 5, 4, 4, 6, 0.0f, true, true},
      {1, 70, 12, 6, 3, 8, 10000.0f, true, true},
      {2, 1, 4, 4, 1, 10, 10000.0f, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("B=" + std::to_string(c.b) + " T=" + std::to_string(c.t) +
                 " H=" + std::to_string(c.heads) +
                 " Hkv=" + std::to_string(c.kv_heads));
    Layer layer(c.d_in, c.heads, c.kv_heads, c.hd, c.rope, c.biases, &rng);
    const auto x = RandomVector(c.b * c.t * c.d_in, &rng);
    LayerOptions o;
    o.batch = c.b;
    o.tokens = c.t;
    o.attention.training = c.drop;
    o.attention.dropout = 0.2f;
    o.attention.seed = 3;
    const size_t n = c.b * c.t * c.heads * c.hd;
    const size_t nkv = c.b * c.t * c.kv_heads * c.hd;
    const size_t nw = c.b * c.heads * c.t * c.t;
    std::vector<float> out[6], ref[6];
    const size_t sizes[6] = {n, nw, nw, n, nkv, nkv};
    for (int i = 0; i < 6; ++i) {
      out[i].resize(sizes[i]);
      ref[i].resize(sizes[i]);
    }
    const LayerOutputs all{out[0].data(), out[1].data(), out[2].data(),
                           out[3].data(), out[4].data(), out[5].data()};
    const LayerOutputs all_ref{ref[0].data(), ref[1].data(), ref[2].data(),
                               ref[3].data(), ref[4].data(), ref[5].data()};
    ASSERT_EQ(AttentionLayerForward(layer.p, o, x.data(), all), Status::kOk);
    ASSERT_EQ(AttentionLayerReference(layer.p, o, x.data(), all_ref),
              Status::kOk);
    const char* names[6] = {"y", "weights", "scores", "Q", "K", "V"};
    for (int i = 0; i < 6; ++i) {
      EXPECT_TRUE(NearReference(out[i], ref[i])) << names[i];
    }
  }
}

// Prompt, then one token at a time through the cache, equals one forward
// over all tokens: positions (the mask, RoPE) continue from the cache.
TEST_P(GenerationLayerTest, CachedTokensEqualOneFullForward) {
  std::mt19937 rng(5);
  struct Case {
    int64_t b, d_in, heads, kv_heads, hd;
    float rope;
  };
  // MultiHeadAttention (no RoPE), GQA with RoPE, MQA with RoPE.
  const Case cases[] = {{2, 8, 4, 4, 4, 0.0f},
                        {1, 16, 8, 2, 8, 10000.0f},
                        {1, 6, 4, 1, 6, 500000.0f}};
  for (const Case& c : cases) {
    SCOPED_TRACE("H=" + std::to_string(c.heads) +
                 " Hkv=" + std::to_string(c.kv_heads));
    Layer layer(c.d_in, c.heads, c.kv_heads, c.hd, c.rope, true, &rng);
    const int64_t total = 300, prompt = 37, cap = 320;  // 37 + 263 singles
    const auto x = RandomVector(c.b * total * c.d_in, &rng);
    const int64_t dm = c.heads * c.hd;
    // One full forward (causal, top-left).
    std::vector<float> y_full(c.b * total * dm);
    LayerOptions full;
    full.batch = c.b;
    full.tokens = total;
    LayerOutputs out_full;
    out_full.y = y_full.data();
    ASSERT_EQ(AttentionLayerForward(layer.p, full, x.data(), out_full),
              Status::kOk);
    // The cache: the prompt, then one token per call (bottom-right).
    std::vector<float> keys(c.b * c.kv_heads * cap * c.hd, std::nanf("")),
        values(keys.size(), std::nanf(""));
    LayerOptions step;
    step.batch = c.b;
    step.attention.causal = CausalMask::kBottomRight;
    step.cache = {keys.data(), values.data(), cap, 0};
    std::vector<float> y_steps(y_full.size());
    for (int64_t t0 = 0; t0 < total;) {
      const int64_t t = t0 == 0 ? prompt : 1;
      std::vector<float> xs, ys(c.b * t * dm);
      for (int64_t ib = 0; ib < c.b; ++ib) {
        xs.insert(xs.end(), x.begin() + (ib * total + t0) * c.d_in,
                  x.begin() + (ib * total + t0 + t) * c.d_in);
      }
      step.tokens = t;
      LayerOutputs out;
      out.y = ys.data();
      ASSERT_EQ(AttentionLayerForward(layer.p, step, xs.data(), out),
                Status::kOk);
      for (int64_t ib = 0; ib < c.b; ++ib) {
        std::copy(ys.begin() + ib * t * dm, ys.begin() + (ib + 1) * t * dm,
                  y_steps.begin() + (ib * total + t0) * dm);
      }
      step.cache.length += t;
      t0 += t;
    }
    EXPECT_TRUE(NearReference(y_steps, y_full));
  }
}

// A sliding-window cache: when the next call would not fit, each
// KV head's newest W - 1 rows move to the front and `start` counts the rows
// dropped, so RoPE goes on at start + length. Equals one full forward with
// the window { left: W - 1 }.
TEST_P(GenerationLayerTest, WindowCacheWithStartEqualsFullForward) {
  std::mt19937 rng(8);
  const int64_t b = 2, d_in = 12, heads = 4, kv_heads = 2, hd = 6, w = 5;
  const int64_t total = 90, cap = 9, dm = heads * hd;
  Layer layer(d_in, heads, kv_heads, hd, 10000.0f, true, &rng);
  const auto x = RandomVector(b * total * d_in, &rng);
  std::vector<float> y_full(b * total * dm);
  LayerOptions full;
  full.batch = b;
  full.tokens = total;
  full.attention.window_left = w - 1;
  LayerOutputs out_full;
  out_full.y = y_full.data();
  ASSERT_EQ(AttentionLayerForward(layer.p, full, x.data(), out_full),
            Status::kOk);
  std::vector<float> keys(b * kv_heads * cap * hd, std::nanf("")),
      values(keys.size(), std::nanf(""));
  LayerOptions step;
  step.batch = b;
  step.attention.causal = CausalMask::kBottomRight;
  step.attention.window_left = w - 1;
  step.cache = {keys.data(), values.data(), cap, 0, 0};
  std::vector<float> y_steps(y_full.size());
  int64_t moves = 0;
  for (int64_t t0 = 0; t0 < total;) {
    const int64_t t = std::min<int64_t>(total - t0, t0 % 7 == 3 ? 4 : 1);
    KVCacheView& c = step.cache;
    if (c.length + t > cap) {
      const int64_t drop = c.length - (w - 1);
      for (int64_t h = 0; h < b * kv_heads; ++h) {
        for (std::vector<float>* rows : {&keys, &values}) {
          float* head = rows->data() + h * cap * hd;
          std::copy(head + drop * hd, head + c.length * hd, head);
        }
      }
      c.start += drop;
      c.length -= drop;
      ++moves;
    }
    std::vector<float> xs, ys(b * t * dm);
    for (int64_t ib = 0; ib < b; ++ib) {
      xs.insert(xs.end(), x.begin() + (ib * total + t0) * d_in,
                x.begin() + (ib * total + t0 + t) * d_in);
    }
    step.tokens = t;
    LayerOutputs out;
    out.y = ys.data();
    ASSERT_EQ(AttentionLayerForward(layer.p, step, xs.data(), out),
              Status::kOk);
    for (int64_t ib = 0; ib < b; ++ib) {
      std::copy(ys.begin() + ib * t * dm, ys.begin() + (ib + 1) * t * dm,
                y_steps.begin() + (ib * total + t0) * dm);
    }
    c.length += t;
    t0 += t;
  }
  EXPECT_GT(moves, 10);
  EXPECT_TRUE(NearReference(y_steps, y_full));
}

TEST(GenerationLayer, RejectsBadArguments) {
  std::mt19937 rng(3);
  Layer layer(3, 4, 2, 2, 10000.0f, false, &rng);
  std::vector<float> x(3 * 3), y(3 * 8), keys(2 * 4 * 2), values(keys.size());
  LayerOptions o;
  o.tokens = 3;
  o.attention.causal = CausalMask::kBottomRight;
  o.cache = {keys.data(), values.data(), 4, 0};
  LayerOutputs out;
  out.y = y.data();
  EXPECT_EQ(AttentionLayerForward(layer.p, o, x.data(), out), Status::kOk);
  LayerOptions full = o;
  full.cache.length = 2;  // 2 + 3 > capacity 4
  EXPECT_EQ(AttentionLayerForward(layer.p, full, x.data(), out),
            Status::kInvalidShape);
  full.cache.length = -1;
  EXPECT_EQ(AttentionLayerForward(layer.p, full, x.data(), out),
            Status::kInvalidShape);
  full = o;
  full.cache.start = -1;
  EXPECT_EQ(AttentionLayerForward(layer.p, full, x.data(), out),
            Status::kInvalidShape);
  LayerOptions half = o;
  half.cache.values = nullptr;
  EXPECT_EQ(AttentionLayerForward(layer.p, half, x.data(), out),
            Status::kNullPointer);
  AttentionLayerParams p = layer.p;
  p.num_kv_heads = 3;  // does not divide 4 heads
  EXPECT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kInvalidShape);
  p = layer.p;
  p.rope_base = -1.0f;
  EXPECT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kInvalidOption);
  p.rope_base = std::nanf("");
  EXPECT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kInvalidOption);
  p = layer.p;
  p.rope_scaling = {32.0f, 4.0f, 1.0f, 8192.0f};  // low > high
  EXPECT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kInvalidOption);
  p = layer.p;
  p.head_dim = 1;  // RoPE needs an even head size
  p.num_heads = 8;
  EXPECT_EQ(AttentionLayerForward(p, o, x.data(), out), Status::kInvalidShape);
  EXPECT_EQ(ApplyRope(10000.0f, 1, 1, 1, 3, 0, y.data()),
            Status::kInvalidShape);
  EXPECT_EQ(AttentionLayerForward(layer.p, o, x.data(), out), Status::kOk);
}

}  // namespace
}  // namespace causal_attention
