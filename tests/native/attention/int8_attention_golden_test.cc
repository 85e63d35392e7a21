// Precision::kInt8 through the C++ API on every compiled target against
// tests/data/int8-attention-golden.json, which the wasm build wrote through
// the public API (tests/node/int8-attention-golden.test.mjs --write) on the
// same inputs (int8_rows_cases.h's LCG, built as that test builds them).
// The scaled scores (ScoreStage::kScaled) are integer products, scalar float
// steps and one multiply: the wasm bits on every target where each block of
// the scores' path (a head's query rows, 32 at a time) is a multiple of four
// rows (the integer kernels' unit; else float32 on the dequantised rows,
// within 1e-5 (1 + |x|)). The output is too where every weight is exactly 1
// (zero queries) and P·V is all integer (a decode step's group, whose rows
// end their keys together; a prefill's blocks in lanes, diagonal tiles
// included: forward_lanes_int8-inl.h); elsewhere the float softmax rounds
// differently per target
// (FMA, lanes per sum), and a P·V weight that then lands on the other side
// of its 15-bit rounding moves the output by up to 2^-14 of the tile's
// largest weight times a value (|v| < 1 here): within 1e-4 (1 + |x|) of the
// wasm output (measured 2.7e-5 where the outlier channels' scores span
// tens).

#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/causal_attention.h"
#include "tests/native/golden_file.h"
#include "tests/native/kv/int8_rows_cases.h"

namespace causal_attention {
namespace {

namespace rc = int8_rows_cases;

struct GoldenCase {
  std::string name, kind;
  int64_t heads, kv_heads, query_len, key_len, head_dim, value_dim;
  std::vector<float> out, scores;
};

std::vector<GoldenCase> ReadCases() {
  std::vector<GoldenCase> cases;
  for (const std::string& line :
       rc::GoldenLines("int8-attention-golden.json")) {
    GoldenCase c;
    c.name = rc::Field(line, "name");
    c.kind = rc::Field(line, "kind");
    c.heads = atoll(rc::Field(line, "heads").c_str());
    c.kv_heads = atoll(rc::Field(line, "kvHeads").c_str());
    c.query_len = atoll(rc::Field(line, "queryLength").c_str());
    c.key_len = atoll(rc::Field(line, "keyLength").c_str());
    c.head_dim = atoll(rc::Field(line, "headDim").c_str());
    c.value_dim = atoll(rc::Field(line, "valueDim").c_str());
    c.out = rc::HexFloats(rc::Field(line, "out"));
    c.scores = rc::HexFloats(rc::Field(line, "scores"));
    cases.push_back(c);
  }
  return cases;
}

// Case `index`'s q [H, Tq, D], k [KV, Tk, D], v [KV, Tk, Dv] as the node
// test's inputs(): q = 2u, k = u, v = u, then the kind's change.
void Inputs(const GoldenCase& c, size_t index, std::vector<float>* q,
            std::vector<float>* k, std::vector<float>* v) {
  rc::Lcg u(rc::Seed(index));
  const size_t d = static_cast<size_t>(c.head_dim);
  q->resize(static_cast<size_t>(c.heads * c.query_len) * d);
  k->resize(static_cast<size_t>(c.kv_heads * c.key_len) * d);
  v->resize(static_cast<size_t>(c.kv_heads * c.key_len * c.value_dim));
  for (float& x : *q) x = 2.0f * u.Uniform();
  for (float& x : *k) x = u.Uniform();
  for (float& x : *v) x = u.Uniform();
  if (c.kind == "offset") {
    std::vector<float> offset(d);
    for (float& x : offset) x = 20.0f * u.Uniform();
    for (size_t i = 0; i < k->size(); ++i) (*k)[i] += offset[i % d];
  }
  if (c.kind == "outlier") {
    for (size_t i = 0; i < k->size(); ++i) {
      if (i % d % 17 == 3) (*k)[i] *= 50.0f;
    }
  }
  if (c.kind == "zeroQuery") q->assign(q->size(), 0.0f);
}

class Int8AttentionGoldenTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(Int8AttentionGoldenTest);

TEST_P(Int8AttentionGoldenTest, MatchesTheWasmBuildThroughTheApi) {
  const std::vector<GoldenCase> cases = ReadCases();
  ASSERT_GE(cases.size(), 7u) << "tests/data/int8-attention-golden.json";
  for (size_t i = 0; i < cases.size(); ++i) {
    const GoldenCase& c = cases[i];
    std::vector<float> q, k, v;
    Inputs(c, i, &q, &k, &v);
    AttentionShape s;
    s.heads = c.heads;
    s.kv_heads = c.kv_heads;
    s.query_len = c.query_len;
    s.key_len = c.key_len;
    s.head_dim = c.head_dim;
    s.value_dim = c.value_dim;
    AttentionOptions o;
    o.causal = CausalMask::kBottomRight;
    o.precision = Precision::kInt8;
    std::vector<float> out(static_cast<size_t>(c.heads * c.query_len *
                                               c.value_dim));
    ASSERT_EQ(Attention(s, o, q.data(), k.data(), v.data(), out.data(),
                        nullptr),
              Status::kOk);
    std::vector<float> scores(
        static_cast<size_t>(c.heads * c.query_len * c.key_len)),
        scored_out(out.size());
    o.score_stage = ScoreStage::kScaled;
    o.scores = scores.data();
    ASSERT_EQ(Attention(s, o, q.data(), k.data(), v.data(), scored_out.data(),
                        nullptr),
              Status::kOk);
    ASSERT_EQ(out.size(), c.out.size()) << c.name;
    ASSERT_EQ(scores.size(), c.scores.size()) << c.name;
    if (c.query_len % 4 == 0) {
      ASSERT_EQ(memcmp(scores.data(), c.scores.data(),
                       scores.size() * sizeof(float)),
                0)
          << c.name << ": scores";
    } else {
      for (size_t j = 0; j < scores.size(); ++j) {
        ASSERT_LE(std::fabs(scores[j] - c.scores[j]),
                  1e-5f * (1.0f + std::fabs(c.scores[j])))
            << c.name << " score " << j;
      }
    }
    const bool exact = c.kind == "zeroQuery";
    for (size_t j = 0; j < out.size(); ++j) {
      if (exact) {
        ASSERT_EQ(memcmp(&out[j], &c.out[j], sizeof(float)), 0)
            << c.name << " " << j << ": " << out[j] << " vs " << c.out[j];
      } else {
        ASSERT_LE(std::fabs(out[j] - c.out[j]),
                  1e-4f * (1.0f + std::fabs(c.out[j])))
            << c.name << " " << j;
      }
    }
  }
}

}  // namespace
}  // namespace causal_attention
