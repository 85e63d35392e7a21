// The visibility rules in the forward (SIMD, every compiled target) against
// AttentionWithLogSumExpReference: layout, query offset, key lengths,
// windows, softcap, sinks, boolean and additive masks, alone and combined,
// with GQA, dropout, both mask strategies, decode-shaped calls, odd head
// sizes; results bit-identical for 1, 2 and 3 threads; long contexts run
// without weights. Tolerance as attention_test.cc: 1e-5 (1 + |ref|).

#include <stdint.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/causal_attention.h"
#include "tests/native/rules_test_util.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RuleMix;
using testing_util::RuleProblem;

class AttentionRulesTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(AttentionRulesTest);

// The kernel with and without weights against the reference: outputs,
// weights and log-sum-exp.
void ExpectRulesMatch(const RuleProblem& p) {
  SCOPED_TRACE(p.Describe());
  std::vector<float> ref_out, ref_w, ref_l, out, w, l;
  ASSERT_EQ(p.Run(AttentionWithLogSumExpReference, &ref_out, &ref_w, &ref_l),
            Status::kOk)
      << StatusDetail();
  ASSERT_EQ(p.Run(AttentionWithLogSumExp, &out, &w, &l), Status::kOk);
  EXPECT_TRUE(NearReference(out, ref_out)) << "output, with weights";
  EXPECT_TRUE(NearReference(w, ref_w)) << "weights";
  EXPECT_TRUE(NearReference(l, ref_l)) << "log-sum-exp, with weights";
  ASSERT_EQ(p.Run(AttentionWithLogSumExp, &out, nullptr, &l), Status::kOk);
  EXPECT_TRUE(NearReference(out, ref_out)) << "output, no weights";
  EXPECT_TRUE(NearReference(l, ref_l)) << "log-sum-exp, no weights";
}

// The scores before the softmax (options.scores) at each stage against the
// reference's, -inf (the keys a row does not see, kMasked) exactly where
// the reference has it; asking for them leaves the output as it was.
void ExpectScoresMatch(const RuleProblem& p) {
  for (const ScoreStage stage :
       {ScoreStage::kScaled, ScoreStage::kSoftcapped, ScoreStage::kMasked}) {
    SCOPED_TRACE("score stage " + std::to_string(static_cast<int>(stage)));
    std::vector<float> ref_s(p.WeightsSize(), -7.0f), s(p.WeightsSize(), -7.0f);
    std::vector<float> ref_out(p.OutSize()), out(p.OutSize());
    AttentionOptions o = p.options;
    o.score_stage = stage;
    o.scores = ref_s.data();
    ASSERT_EQ(AttentionReference(p.shape, o, p.q.data(), p.k.data(), p.v.data(),
                                 ref_out.data(), nullptr),
              Status::kOk);
    o.scores = s.data();
    ASSERT_EQ(Attention(p.shape, o, p.q.data(), p.k.data(), p.v.data(),
                        out.data(), nullptr),
              Status::kOk);
    EXPECT_TRUE(NearReference(s, ref_s)) << "scores";
    EXPECT_TRUE(NearReference(out, ref_out)) << "output, with scores";
    for (size_t i = 0; i < s.size(); ++i) {
      ASSERT_EQ(std::isinf(s[i]), std::isinf(ref_s[i])) << "score " << i;
    }
  }
}

AttentionShape RandomShape(std::mt19937* rng, int64_t max_t) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(*rng);
  };
  const int64_t dims[] = {1, 3, 4, 8, 17, 33, 64, 96};
  AttentionShape s;
  s.batch = pick(1, 3);
  s.kv_heads = pick(1, 2);
  s.heads = s.kv_heads * pick(1, 3);
  s.query_len = pick(0, 5) == 0 ? 1 : pick(1, max_t);
  s.key_len = pick(0, 3) == 0 ? s.query_len : pick(1, max_t);
  s.head_dim = dims[pick(0, 7)];
  s.value_dim = pick(0, 1) ? s.head_dim : dims[pick(0, 7)];
  return s;
}

TEST_P(AttentionRulesTest, EachRuleAloneMatchesReference) {
  std::mt19937 rng(19);
  for (int rule = 0; rule < 7; ++rule) {
    RuleMix mix{false, false, false, false, false, false, false, false, false};
    bool* flags[] = {&mix.layout,  &mix.offset, &mix.key_lengths, &mix.window,
                     &mix.softcap, &mix.sinks,  &mix.mask};
    *flags[rule] = true;
    for (int iter = 0; iter < 25; ++iter) {
      RuleProblem p(RandomShape(&rng, 150), &rng);
      p.DrawOptions(mix, &rng);
      ASSERT_NO_FATAL_FAILURE(ExpectRulesMatch(p)) << "rule " << rule;
      if (iter < 5) ASSERT_NO_FATAL_FAILURE(ExpectScoresMatch(p));
      if (HasFailure()) return;
    }
  }
}

TEST_P(AttentionRulesTest, CombinedRulesMatchReference) {
  std::mt19937 rng(2019);
  for (int iter = 0; iter < 200; ++iter) {
    RuleProblem p(RandomShape(&rng, 150), &rng);
    p.DrawOptions(RuleMix{}, &rng);
    ASSERT_NO_FATAL_FAILURE(ExpectRulesMatch(p));
    if (iter % 10 == 0) ASSERT_NO_FATAL_FAILURE(ExpectScoresMatch(p));
    if (HasFailure()) return;
  }
}

TEST_P(AttentionRulesTest, HeadSizesAndDecodeShapes) {
  std::mt19937 rng(7);
  const int64_t dims[] = {1, 3, 96, 256};
  for (int iter = 0; iter < 24; ++iter) {
    AttentionShape s;
    s.batch = 1 + iter % 2;
    s.kv_heads = 1 + iter % 2;
    s.heads = s.kv_heads * (1 + iter % 4);
    s.query_len = iter % 3 == 0 ? 1 : iter % 3 == 1 ? 3 : 67;
    s.key_len = iter % 2 ? 700 : 301;  // decode calls split into chunks
    if (iter % 3 != 2) s.kv_capacity = s.key_len + 9;  // a KV cache
    s.head_dim = s.value_dim = dims[iter % 4];
    RuleProblem p(s, &rng);
    p.DrawOptions(RuleMix{}, &rng);
    ASSERT_NO_FATAL_FAILURE(ExpectRulesMatch(p));
    if (HasFailure()) return;
  }
}

TEST_P(AttentionRulesTest, ResultsAreBitIdenticalForAnyThreadCount) {
  std::mt19937 rng(33);
  for (int iter = 0; iter < 12; ++iter) {
    AttentionShape s = RandomShape(&rng, 300);
    if (iter % 3 == 0) s.query_len = 1;
    s.key_len = 300 + iter * 37;
    RuleProblem p(s, &rng);
    p.DrawOptions(RuleMix{}, &rng);
    SCOPED_TRACE(p.Describe());
    std::vector<float> out[3], w[3], l[3];
    for (int t = 1; t <= 3; ++t) {
      SetNumThreads(t);
      ASSERT_EQ(p.Run(AttentionWithLogSumExp, &out[t - 1],
                      iter % 2 ? &w[t - 1] : nullptr, &l[t - 1]),
                Status::kOk);
    }
    SetNumThreads(1);
    for (int t = 1; t < 3; ++t) {
      EXPECT_EQ(0, memcmp(out[0].data(), out[t].data(),
                          out[0].size() * sizeof(float)));
      EXPECT_EQ(0, memcmp(l[0].data(), l[t].data(), l[0].size() * sizeof(float)));
      EXPECT_EQ(w[0], w[t]);
    }
  }
}

TEST_P(AttentionRulesTest, RowsThatSeeNothingAreZeroWithSinksToo) {
  std::mt19937 rng(5);
  AttentionShape s{2, 2, 9, 20, 4, 4};
  RuleProblem p(s, &rng);
  p.key_lengths = {0, 20};
  p.sinks = {1.0f, -1.0f};
  p.options.key_lengths = p.key_lengths.data();
  p.options.sinks = p.sinks.data();
  p.options.causal = CausalMask::kBottomRight;  // batch 1: offset 11
  std::vector<float> out, w, l;
  ASSERT_EQ(p.Run(AttentionWithLogSumExp, &out, &w, &l), Status::kOk);
  for (size_t r = 0; r < 2 * 9; ++r) {  // batch item 0: no key at all
    EXPECT_EQ(l[r], -std::numeric_limits<float>::infinity());
    for (size_t c = 0; c < 4; ++c) EXPECT_EQ(out[r * 4 + c], 0.0f);
    for (size_t j = 0; j < 20; ++j) EXPECT_EQ(w[r * 20 + j], 0.0f);
  }
  // Batch item 1 with sinks: weights sum to less than one.
  double sum = 0.0;
  for (size_t j = 0; j < 20; ++j) sum += w[(2 * 9) * 20 + j];
  EXPECT_LT(sum, 1.0);
  EXPECT_GT(sum, 0.0);
}

TEST_P(AttentionRulesTest, HiddenKeysPlayNoPartEvenWhenNonFinite) {
  // A NaN key that a boolean mask, a window or a key length hides leaves
  // every row finite, as in the reference.
  std::mt19937 rng(8);
  for (int rule = 0; rule < 3; ++rule) {
    RuleProblem p(AttentionShape{1, 1, 70, 70, 5, 5}, &rng);
    for (size_t c = 0; c < 5; ++c) {
      p.k[3 * 5 + c] = std::numeric_limits<float>::quiet_NaN();
    }
    p.options.causal = CausalMask::kNone;
    if (rule == 0) {
      p.allowed.assign(70, 1);
      p.allowed[3] = 0;
      p.options.mask = {MaskKind::kBoolean, p.allowed.data(), {1, 1, 1, 70}};
    } else if (rule == 1) {
      p.options.window_left = 0;
      p.options.query_offset = 4;  // query 0 at position 4 sees keys >= 4
    } else {
      p.key_lengths = {3};
      p.options.key_lengths = p.key_lengths.data();
    }
    SCOPED_TRACE(p.Describe());
    ExpectRulesMatch(p);
    std::vector<float> out, l;
    ASSERT_EQ(p.Run(AttentionWithLogSumExp, &out, nullptr, &l), Status::kOk);
    for (float x : out) ASSERT_FALSE(std::isnan(x));
  }
}

// Long contexts: no [Tq, Tk] tensor is allocated without weights, so the
// shapes whose [Tq, Tk] would not fit run; a few rows checked against the
// reference on the keys they see.
void CheckLongRows(const AttentionShape& s) {
  std::mt19937 rng(1);
  RuleProblem p(s, &rng);
  std::vector<float> out(p.OutSize());
  ASSERT_EQ(Attention(s, p.options, p.q.data(), p.k.data(), p.v.data(),
                      out.data(), nullptr),
            Status::kOk)
      << StatusDetail();
  // The last query of the last head sees every key: a one-row reference.
  const size_t t = static_cast<size_t>(s.key_len), d = 8;
  const size_t head = static_cast<size_t>(s.heads - 1);
  AttentionShape one{1, 1, 1, s.key_len, s.head_dim, s.value_dim};
  AttentionOptions bottom;
  bottom.causal = CausalMask::kBottomRight;
  std::vector<float> ref(static_cast<size_t>(s.value_dim));
  const size_t dq = static_cast<size_t>(s.head_dim);
  const size_t kv = head / static_cast<size_t>(s.heads / (s.kv_heads ? s.kv_heads : s.heads));
  ASSERT_EQ(AttentionReference(one, bottom,
                               p.q.data() + ((head + 1) * t - 1) * dq,
                               p.k.data() + kv * t * dq,
                               p.v.data() + kv * t * dq, ref.data(), nullptr),
            Status::kOk);
  std::vector<float> got(out.end() - static_cast<long>(s.value_dim), out.end());
  EXPECT_TRUE(NearReference(got, ref));
  (void)d;
}

TEST(AttentionLongContext, RunsWithoutWeights) {
  // batch·heads·Tq·Tk·4 = 2^32 bytes: refused before, though never allocated.
  CheckLongRows(AttentionShape{1, 4, 16384, 16384, 8, 8});
  CheckLongRows(AttentionShape{1, 32, 8192, 8192, 4, 4});
}

TEST(AttentionRulesStatus, RejectsBadOptionsNamingThem) {
  std::vector<float> buf(256, 0.5f);
  const float* p = buf.data();
  float* out = buf.data();
  const AttentionShape good{2, 2, 3, 4, 2, 2};
  struct Bad {
    const char* name;
    void (*set)(AttentionOptions*);
    Status status;
  };
  static int32_t lengths[2] = {4, 5};
  static uint8_t mask[64] = {};
  const Bad bad[] = {
      {"layout", [](AttentionOptions* o) { o->layout = static_cast<Layout>(2); },
       Status::kInvalidOption},
      {"key_lengths",
       [](AttentionOptions* o) { o->key_lengths = lengths; },
       Status::kInvalidOption},
      {"window_left", [](AttentionOptions* o) { o->window_left = -2; },
       Status::kInvalidOption},
      {"window_right", [](AttentionOptions* o) { o->window_right = -5; },
       Status::kInvalidOption},
      {"softcap", [](AttentionOptions* o) { o->softcap = -1.0f; },
       Status::kInvalidOption},
      {"softcap",
       [](AttentionOptions* o) {
         o->softcap = std::numeric_limits<float>::infinity();
       },
       Status::kInvalidOption},
      {"mask.kind",
       [](AttentionOptions* o) { o->mask.kind = static_cast<MaskKind>(3); },
       Status::kInvalidOption},
      {"mask.data",
       [](AttentionOptions* o) { o->mask.kind = MaskKind::kBoolean; },
       Status::kNullPointer},
      {"mask.dims",
       [](AttentionOptions* o) {
         o->mask.kind = MaskKind::kBoolean;
         o->mask.data = mask;
         o->mask.dims[3] = 3;
       },
       Status::kInvalidShape},
      {"mask_strategy",
       [](AttentionOptions* o) {
         o->mask_strategy = MaskStrategy::kRenormalize;
         o->mask.kind = MaskKind::kBoolean;
         o->mask.data = mask;
       },
       Status::kInvalidOption},
  };
  for (const Bad& b : bad) {
    AttentionOptions o;
    b.set(&o);
    EXPECT_EQ(Attention(good, o, p, p, p, out, nullptr), b.status) << b.name;
    EXPECT_EQ(std::string(StatusDetail()).rfind(b.name, 0), 0u)
        << b.name << ": " << StatusDetail();
    EXPECT_EQ(AttentionReference(good, o, p, p, p, out, nullptr), b.status)
        << b.name;
  }
  EXPECT_EQ(Attention(good, AttentionOptions{}, p, p, p, out, nullptr),
            Status::kOk);
  EXPECT_STREQ(StatusDetail(), "");
}

}  // namespace
}  // namespace causal_attention
