// Linear and the attention layer (every SIMD target) against their scalar
// references (|a - ref| <= 1e-5 (1 + |ref|)), and the native module classes
// against the numbers printed in the book and the seeds (to 4 decimals).

#include "src/modules.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;

class ModulesTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(ModulesTest);

TEST_P(ModulesTest, LinearMatchesReference) {
  std::mt19937 rng(5);
  struct Case {
    int64_t rows, in, out;
    bool bias;
  };
  const Case cases[] = {{1, 1, 1, false},     {1, 3, 2, true},
                        {12, 3, 2, false},    {7, 5, 9, true},
                        {33, 17, 31, true},   {64, 64, 64, false},
                        {100, 65, 129, true}, {300, 200, 150, true},
                        {5, 768, 3, false},   {70, 96, 257, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.in) + "->" +
                 std::to_string(c.out));
    const auto x = RandomVector(c.rows * c.in, &rng);
    const auto w = RandomVector(c.out * c.in, &rng);
    const auto b = RandomVector(c.out, &rng);
    std::vector<float> y(c.rows * c.out, -7.0f), ref(c.rows * c.out);
    const float* bias = c.bias ? b.data() : nullptr;
    ASSERT_EQ(Linear(x.data(), c.rows, c.in, c.out, w.data(), bias, y.data()),
              Status::kOk);
    ASSERT_EQ(LinearReference(x.data(), c.rows, c.in, c.out, w.data(), bias,
                              ref.data()),
              Status::kOk);
    EXPECT_TRUE(NearReference(y, ref));
  }
}

TEST_P(ModulesTest, LayerMatchesReference) {
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
      o.training = true;
      o.dropout = 0.3f;
      o.seed = 77;
    }
    const size_t n = c.b * c.t * dm, nw = c.b * c.heads * c.t * c.t;
    std::vector<float> y(n), yr(n), wts(nw), wr(nw), s(nw), sr(nw);
    ASSERT_EQ(
        AttentionLayerForward(p, o, x.data(), y.data(), wts.data(), s.data()),
        Status::kOk);
    ASSERT_EQ(AttentionLayerReference(p, o, x.data(), yr.data(), wr.data(),
                                      sr.data()),
              Status::kOk);
    EXPECT_TRUE(NearReference(y, yr)) << "output";
    EXPECT_TRUE(NearReference(wts, wr)) << "weights";
    EXPECT_TRUE(NearReference(s, sr)) << "scores";
  }
}

// ---------------------------------------------------------------------------
// The book's numbers.

const float kInputs[] = {0.43f, 0.15f, 0.89f, 0.55f, 0.87f, 0.66f,
                         0.57f, 0.85f, 0.64f, 0.22f, 0.58f, 0.33f,
                         0.77f, 0.25f, 0.10f, 0.05f, 0.80f, 0.55f};

std::vector<std::string> Printed(const std::vector<float>& v) {
  std::vector<std::string> out;
  char buf[32];
  for (float x : v) {
    snprintf(buf, sizeof(buf), "%.4f", x);
    out.push_back(buf);
  }
  return out;
}

std::vector<std::string> Strings(std::initializer_list<const char*> list) {
  return std::vector<std::string>(list.begin(), list.end());
}

std::vector<float> Batch2() {
  std::vector<float> x(kInputs, kInputs + 18);
  x.insert(x.end(), kInputs, kInputs + 18);
  return x;
}

TEST(BookNumbers, Seed789SelfAttentionWeights) {
  Generator gen(789);
  SelfAttentionModule sa(3, 2, false, gen);
  std::vector<float> y(12), w(36);
  ASSERT_EQ(sa.Forward(kInputs, 1, 6, y.data(), w.data()), Status::kOk);
  const std::vector<float> first_rows(w.begin(), w.begin() + 12);
  EXPECT_EQ(
      Printed(first_rows),
      Strings({"0.1921", "0.1646", "0.1652", "0.1550", "0.1721", "0.1510",
               "0.2041", "0.1659", "0.1662", "0.1496", "0.1665", "0.1477"}));
  const std::vector<float> last_row(w.begin() + 30, w.end());
  EXPECT_EQ(Printed(last_row), Strings({"0.1935", "0.1663", "0.1666", "0.1542",
                                        "0.1666", "0.1529"}));
}

TEST(BookNumbers, CausalAttentionSeed123) {
  Generator gen(123);
  CausalAttentionModule ca(3, 2, 6, 0.0f, false, gen);
  const auto x = Batch2();
  std::vector<float> y(24);
  ASSERT_EQ(ca.Forward(x.data(), 2, 6, y.data()), Status::kOk);
  const auto expected = Strings({"-0.4519", "0.2216", "-0.5874", "0.0058",
                                 "-0.6300", "-0.0632", "-0.5675", "-0.0843",
                                 "-0.5526", "-0.0981", "-0.5299", "-0.1081"});
  const std::vector<float> first(y.begin(), y.begin() + 12),
      second(y.begin() + 12, y.end());
  EXPECT_EQ(Printed(first), expected);
  EXPECT_EQ(Printed(second), expected);
}

TEST(BookNumbers, MultiHeadAttentionSeed123) {
  Generator gen(123);
  MultiHeadAttentionModule mha(3, 2, 6, 0.0f, 2, false, gen);
  const auto x = Batch2();
  std::vector<float> y(24);
  ASSERT_EQ(mha.Forward(x.data(), 2, 6, y.data()), Status::kOk);
  const std::vector<float> first(y.begin(), y.begin() + 12);
  EXPECT_EQ(Printed(first), Strings({"0.3190", "0.4858", "0.2943", "0.3897",
                                     "0.2856", "0.3593", "0.2693", "0.3873",
                                     "0.2639", "0.3928", "0.2575", "0.4028"}));
}

TEST(BookNumbers, WrapperSeed123) {
  Generator gen(123);
  MultiHeadAttentionWrapperModule wrapper(3, 2, 6, 0.0f, 2, false, gen);
  const auto x = Batch2();
  std::vector<float> y(2 * 6 * 4);
  ASSERT_EQ(wrapper.Forward(x.data(), 2, 6, y.data()), Status::kOk);
  const std::vector<float> first(y.begin(), y.begin() + 4);
  EXPECT_EQ(Printed(first), Strings({"-0.4519", "0.2216", "0.4772", "0.1063"}));
}

TEST(BookNumbers, Seed002ContextVectors) {
  // torch.manual_seed(123); inputs = torch.rand(6, 3); three Linear(3, 3).
  Generator gen(123);
  std::vector<float> x(18);
  for (float& v : x) v = gen.Uniform(0.0f, 1.0f);
  CausalAttentionModule layer(3, 3, 6, 0.0f, false, gen);
  std::vector<float> y(18);
  ASSERT_EQ(layer.Forward(x.data(), 1, 6, y.data()), Status::kOk);
  EXPECT_EQ(Printed(y),
            Strings({"-0.3325", "-0.1223", "0.2555", "-0.5215", "-0.1879",
                     "0.1063", "-0.3994", "-0.1458", "0.0869", "-0.4794",
                     "-0.1667", "0.0904", "-0.4201", "-0.1554", "0.0910",
                     "-0.4472", "-0.1731", "0.0766"}));
}

TEST(Modules, ChecksContextLengthAndSizes) {
  Generator gen;
  CausalAttentionModule ca(3, 2, 4, 0.0f, false, gen);
  std::vector<float> x(3 * 5), y(2 * 5);
  EXPECT_EQ(ca.Forward(x.data(), 1, 5, y.data()), Status::kInvalidShape);
  EXPECT_EQ(ca.Forward(x.data(), 1, 4, y.data()), Status::kOk);
  MultiHeadAttentionModule bad(3, 5, 4, 0.0f, 2, false, gen);  // 5 % 2 != 0
  EXPECT_EQ(bad.Forward(x.data(), 1, 2, y.data()), Status::kInvalidShape);
}

TEST(Modules, StateDictRoundTripAndMismatches) {
  Generator gen(1);
  MultiHeadAttentionModule a(4, 6, 8, 0.0f, 3, true, gen);
  MultiHeadAttentionModule b(4, 6, 8, 0.0f, 3, true, gen);  // other weights
  const StateDict dict = a.GetStateDict();
  EXPECT_EQ(dict.size(), 8u);  // W_query/key/value + out_proj, weight + bias
  EXPECT_EQ(dict.at("W_query.weight").size(), 24u);
  EXPECT_EQ(dict.at("out_proj.bias").size(), 6u);
  ASSERT_EQ(b.LoadStateDict(dict), Status::kOk);
  std::mt19937 rng(3);
  const std::vector<float> x = RandomVector(2 * 5 * 4, &rng);
  std::vector<float> ya(60), yb(60);
  ASSERT_EQ(a.Forward(x.data(), 2, 5, ya.data()), Status::kOk);
  ASSERT_EQ(b.Forward(x.data(), 2, 5, yb.data()), Status::kOk);
  EXPECT_EQ(ya, yb);

  StateDict broken = dict;
  broken.erase("W_key.bias");
  broken["W_value.weight"].pop_back();
  broken["extra.weight"] = {1.0f};
  std::string error;
  EXPECT_EQ(b.LoadStateDict(broken, &error), Status::kInvalidShape);
  EXPECT_NE(error.find("missing W_key.bias"), std::string::npos) << error;
  EXPECT_NE(error.find("W_value.weight has 23 values, expected 24"),
            std::string::npos);
  EXPECT_NE(error.find("unexpected extra.weight"), std::string::npos);

  Generator g2(2);
  MultiHeadAttentionWrapperModule w(3, 2, 6, 0.0f, 2, false, g2);
  const StateDict wd = w.GetStateDict();
  EXPECT_EQ(wd.count("heads.1.W_value.weight"), 1u);
  EXPECT_EQ(wd.size(), 6u);
}

}  // namespace
}  // namespace causal_attention
