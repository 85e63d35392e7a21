// Attention (SIMD, every compiled target) against AttentionReference (scalar,
// double accumulation). Tolerance everywhere: |a - ref| <= 1e-5 (1 + |ref|),
// elementwise, on outputs and on weights; NaN positions must agree exactly.

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/causal_attention.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::Describe;
using testing_util::NearReference;
using testing_util::Problem;

class AttentionTest : public hwy::TestWithParamTarget {
 protected:
  // Runs the SIMD kernel with and without weights and the reference, and
  // checks all three agree.
  void CheckAgainstReference(Problem& p) {
    testing_util::ExpectMatchesReference(p);
  }
};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(AttentionTest);

TEST_P(AttentionTest, RunsOnTheTargetUnderTest) {
  // The dispatcher must honour the target this instance is testing.
  EXPECT_STREQ(ActiveTargetName(), hwy::TargetName(GetParam()));
}

TEST_P(AttentionTest, RandomShapesMatchReference) {
  std::mt19937 rng(1234);
  const int64_t head_dims[] = {1,  2,  3,  4,  5,  7,  8,  9,
                               15, 16, 17, 31, 32, 33, 64, 65};
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 220; ++iter) {
    AttentionShape s;
    s.batch = pick(1, 2);
    s.heads = pick(1, 3);
    s.query_len = iter % 7 == 0 ? 1 : pick(1, 150);
    s.key_len = iter % 3 == 0 ? s.query_len : pick(1, 150);
    s.head_dim = head_dims[pick(0, 15)];
    s.value_dim = iter % 2 ? s.head_dim : head_dims[pick(0, 15)];
    AttentionOptions o;
    o.causal = static_cast<CausalMask>(pick(0, 2));
    o.mask_strategy = static_cast<MaskStrategy>(pick(0, 1));
    if (iter % 5 == 0)
      o.scale = std::uniform_real_distribution<float>(-2, 2)(rng);
    if (iter % 4 == 0) {
      o.training = true;
      o.dropout = std::uniform_real_distribution<float>(0.0f, 0.9f)(rng);
      o.seed = rng();
    }
    Problem p(s, o, &rng);
    CheckAgainstReference(p);
    if (HasFailure()) return;  // one report is enough
  }
}

TEST_P(AttentionTest, OddAndExtremeShapes) {
  std::mt19937 rng(99);
  struct Case {
    int64_t b, h, tq, tk, d, dv;
  };
  const Case cases[] = {
      {1, 1, 1, 1, 1, 1},      {1, 1, 1, 7, 1, 3},      {1, 1, 7, 1, 3, 1},
      {3, 2, 33, 33, 1, 1},    {1, 1, 65, 65, 3, 5},    {2, 1, 64, 64, 64, 64},
      {1, 1, 129, 200, 16, 8}, {1, 1, 200, 129, 8, 16}, {1, 2, 97, 97, 96, 24},
      {1, 2, 131, 131, 256, 256}, {1, 1, 67, 150, 256, 3},
  };
  for (const Case& c : cases) {
    for (int causal = 0; causal <= 2; ++causal) {
      for (int strategy = 0; strategy <= 1; ++strategy) {
        AttentionShape s{c.b, c.h, c.tq, c.tk, c.d, c.dv};
        AttentionOptions o;
        o.causal = static_cast<CausalMask>(causal);
        o.mask_strategy = static_cast<MaskStrategy>(strategy);
        Problem p(s, o, &rng);
        CheckAgainstReference(p);
      }
    }
  }
}

// Scores whose row max keeps rising from key tile to key tile, slowly (the
// online softmax keeps its old max: exponentials above 1) and in jumps above
// its rescaling slack (a rescale per tile), up to scaled scores of about 20;
// and scores of both signs with a negative scale.
TEST_P(AttentionTest, RisingRowMaxima) {
  std::mt19937 rng(5);
  for (float trend : {0.002f, 0.03f, 0.1f}) {
    AttentionShape s{1, 2, 300, 300, 16, 16};
    AttentionOptions o;
    o.scale = trend == 0.1f ? -0.5f : 0.5f;
    Problem p(s, o, &rng);
    // q = (1, 0, ...) scaled by the sign of the scale: key j's score grows
    // with its first component, trend·j.
    for (size_t r = 0; r < p.q.size() / 16; ++r) {
      p.q[r * 16] = o.scale.value() > 0 ? 1.0f : -1.0f;
    }
    for (size_t j = 0; j < p.k.size() / 16; ++j) {
      p.k[j * 16] = trend * static_cast<float>(j % 300) * 2.0f;
    }
    CheckAgainstReference(p);
  }
}

TEST_P(AttentionTest, LongSequences) {
  std::mt19937 rng(7);
  {
    AttentionShape s{1, 1, 2048, 2048, 64, 64};
    Problem p(s, AttentionOptions(), &rng);
    CheckAgainstReference(p);
  }
  {
    AttentionShape s{1, 1, 1500, 1700, 24, 40};
    AttentionOptions o;
    o.causal = CausalMask::kBottomRight;
    o.training = true;
    o.dropout = 0.3f;
    o.seed = 42;
    Problem p(s, o, &rng);
    CheckAgainstReference(p);
  }
}

TEST_P(AttentionTest, CausalWeightsAreTriangularAndRowsSumToOne) {
  std::mt19937 rng(3);
  AttentionShape s{2, 3, 37, 37, 8, 8};
  for (int strategy = 0; strategy <= 1; ++strategy) {
    AttentionOptions o;
    o.mask_strategy = static_cast<MaskStrategy>(strategy);
    Problem p(s, o, &rng);
    std::vector<float> out, w;
    ASSERT_EQ(p.Run(Attention, &out, &w), Status::kOk);
    for (size_t row = 0; row < static_cast<size_t>(2 * 3 * 37); ++row) {
      const size_t i = row % 37;
      double sum = 0.0;
      for (size_t j = 0; j < 37; ++j) {
        const float x = w[row * 37 + j];
        if (j > i) {
          ASSERT_EQ(x, 0.0f) << "row " << row << " key " << j;
        } else {
          ASSERT_GT(x, 0.0f);
        }
        sum += x;
      }
      EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << row;
    }
  }
}

TEST_P(AttentionTest, MaskStrategiesAgree) {
  std::mt19937 rng(11);
  for (int causal = 1; causal <= 2; ++causal) {
    AttentionShape s{2, 2, 45, 70, 16, 12};
    AttentionOptions neg_inf;
    neg_inf.causal = static_cast<CausalMask>(causal);
    Problem p(s, neg_inf, &rng);
    std::vector<float> out_a, w_a, out_b, w_b;
    ASSERT_EQ(p.Run(Attention, &out_a, &w_a), Status::kOk);
    p.options.mask_strategy = MaskStrategy::kRenormalize;
    ASSERT_EQ(p.Run(Attention, &out_b, &w_b), Status::kOk);
    EXPECT_TRUE(NearReference(w_b, w_a, 1e-6));
    EXPECT_TRUE(NearReference(out_b, out_a, 1e-6));
  }
}

TEST_P(AttentionTest, RenormalizeSurvivesUnderflow) {
  // The future key scores 200 above the visible one: the book's route would
  // compute 0/0; the kernel must still give the visible softmax.
  AttentionShape s{1, 1, 2, 2, 1, 1};
  AttentionOptions o;
  o.mask_strategy = MaskStrategy::kRenormalize;
  o.scale = 1.0f;
  const std::vector<float> q = {1.0f, 1.0f}, k = {-100.0f, 100.0f},
                           v = {3.0f, 5.0f};
  std::vector<float> out(2), w(4);
  ASSERT_EQ(Attention(s, o, q.data(), k.data(), v.data(), out.data(), w.data()),
            Status::kOk);
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(w[1], 0.0f);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_FALSE(std::isnan(out[1]));
}

TEST_P(AttentionTest, BottomRightRowsWithoutKeysAreZero) {
  std::mt19937 rng(5);
  AttentionShape s{1, 2, 10, 4, 5, 3};  // rows 0..5 see no key
  AttentionOptions o;
  o.causal = CausalMask::kBottomRight;
  for (int strategy = 0; strategy <= 1; ++strategy) {
    o.mask_strategy = static_cast<MaskStrategy>(strategy);
    Problem p(s, o, &rng);
    std::vector<float> out, w, out_tiled;
    ASSERT_EQ(p.Run(Attention, &out, &w), Status::kOk);
    ASSERT_EQ(p.Run(Attention, &out_tiled, nullptr), Status::kOk);
    for (size_t h = 0; h < 2; ++h) {
      for (size_t i = 0; i < 10; ++i) {
        for (size_t c = 0; c < 3; ++c) {
          const float x = out[(h * 10 + i) * 3 + c];
          const float y = out_tiled[(h * 10 + i) * 3 + c];
          ASSERT_FALSE(std::isnan(x));
          if (i < 6) {
            ASSERT_EQ(x, 0.0f);
            ASSERT_EQ(y, 0.0f);
          }
        }
        for (size_t j = 0; j < 4; ++j) {
          const float x = w[(h * 10 + i) * 4 + j];
          ASSERT_EQ(x == 0.0f, i < 6 || j > i - 6) << i << "," << j;
        }
      }
    }
  }
}

TEST_P(AttentionTest, NonFiniteInputsStayInTheirRows) {
  std::mt19937 rng(8);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  AttentionShape s{1, 1, 70, 70, 4, 4};
  Problem p(s, AttentionOptions(), &rng);
  p.q[10 * 4 + 2] = nan;  // query 10: its row only
  p.k[40 * 4 + 1] = inf;  // key 40: rows 40.. see it
  p.v[65 * 4 + 3] = nan;  // value 65: rows 65.. see it
  std::vector<float> out, w, out_tiled, ref_out, ref_w;
  ASSERT_EQ(p.Run(Attention, &out, &w), Status::kOk);
  ASSERT_EQ(p.Run(Attention, &out_tiled, nullptr), Status::kOk);
  ASSERT_EQ(p.Run(AttentionReference, &ref_out, &ref_w), Status::kOk);
  EXPECT_TRUE(NearReference(out, ref_out));
  EXPECT_TRUE(NearReference(out_tiled, ref_out));
  EXPECT_TRUE(NearReference(w, ref_w));
  for (size_t i = 0; i < 70; ++i) {
    const bool row_nan = i == 10 || i >= 40;
    for (size_t c = 0; c < 4; ++c) {
      ASSERT_EQ(std::isnan(out[i * 4 + c]), row_nan) << i << "," << c;
    }
    ASSERT_EQ(std::isnan(w[i * 70]), row_nan) << i;
  }
}

TEST_P(AttentionTest, DropoutMaskIsTheReferenceMaskOnEveryPath) {
  std::mt19937 rng(21);
  AttentionShape s{2, 2, 150, 150, 8, 8};
  AttentionOptions o;
  o.training = true;
  o.dropout = 0.5f;
  o.seed = 123456789012345ull;
  Problem p(s, o, &rng);
  std::vector<float> out, w;
  ASSERT_EQ(p.Run(Attention, &out, &w), Status::kOk);
  size_t checked = 0;
  for (size_t row = 0; row < 2 * 2 * 150; ++row) {
    for (size_t j = 0; j <= row % 150; ++j) {
      const bool keeps =
          DropoutKeeps(o.seed, row, static_cast<uint32_t>(j), o.dropout);
      ASSERT_EQ(w[row * 150 + j] != 0.0f, keeps) << row << "," << j;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4u * 150 * 151 / 2);
  // Not training: no dropout at all.
  p.options.training = false;
  std::vector<float> out_eval, w_eval;
  ASSERT_EQ(p.Run(Attention, &out_eval, &w_eval), Status::kOk);
  for (size_t row = 0; row < 600; ++row) {
    for (size_t j = 0; j <= row % 150; ++j)
      ASSERT_GT(w_eval[row * 150 + j], 0.0f);
  }
}

TEST_P(AttentionTest, ResultsAreBitIdenticalForAnyThreadCount) {
  std::mt19937 rng(31);
  AttentionShape s{2, 3, 300, 300, 32, 32};
  AttentionOptions o;
  o.training = true;
  o.dropout = 0.2f;
  o.seed = 9;
  Problem p(s, o, &rng);
  std::vector<float> out1, w1, tiled1;
  SetNumThreads(1);
  ASSERT_EQ(p.Run(Attention, &out1, &w1), Status::kOk);
  ASSERT_EQ(p.Run(Attention, &tiled1, nullptr), Status::kOk);
  for (int threads : {2, 3, 5}) {
    ASSERT_EQ(SetNumThreads(threads), threads);
    std::vector<float> out, w, tiled;
    ASSERT_EQ(p.Run(Attention, &out, &w), Status::kOk);
    ASSERT_EQ(p.Run(Attention, &tiled, nullptr), Status::kOk);
    EXPECT_EQ(out, out1) << threads << " threads";
    EXPECT_EQ(w, w1) << threads << " threads";
    EXPECT_EQ(tiled, tiled1) << threads << " threads";
  }
  SetNumThreads(1);
}

TEST(AttentionStatus, RejectsBadArguments) {
  std::vector<float> buf(64, 0.5f);
  const float* p = buf.data();
  float* out = buf.data();
  AttentionShape good{1, 1, 2, 2, 2, 2};
  AttentionOptions opts;
  EXPECT_EQ(Attention(good, opts, p, p, p, out, nullptr), Status::kOk);

  for (int field = 0; field < 6; ++field) {
    for (int64_t bad : {int64_t{0}, int64_t{-3}}) {
      AttentionShape s = good;
      int64_t* dims[] = {&s.batch,   &s.heads,    &s.query_len,
                         &s.key_len, &s.head_dim, &s.value_dim};
      *dims[field] = bad;
      EXPECT_EQ(Attention(s, opts, p, p, p, out, nullptr),
                Status::kInvalidShape);
      EXPECT_EQ(AttentionReference(s, opts, p, p, p, out, nullptr),
                Status::kInvalidShape);
    }
  }
  AttentionShape huge = good;
  huge.query_len = int64_t{1} << 61;  // q's bytes overflow size_t
  EXPECT_EQ(Attention(huge, opts, p, p, p, out, nullptr), Status::kTooLarge);
  EXPECT_STREQ(StatusDetail(), "q: byte size does not fit size_t");
  // [Tq, Tk] weights that do not fit: refused only when asked for.
  huge = good;
  huge.query_len = int64_t{1} << 32;
  huge.key_len = int64_t{1} << 31;
  EXPECT_EQ(ValidateAttention(huge, opts), Status::kOk);
  EXPECT_EQ(Attention(huge, opts, p, p, p, out, out), Status::kTooLarge);
  EXPECT_EQ(std::string(StatusDetail()).rfind("weights:", 0), 0u)
      << StatusDetail();

  AttentionOptions o = opts;
  o.dropout = 1.0f;
  EXPECT_EQ(Attention(good, o, p, p, p, out, nullptr), Status::kInvalidOption);
  o.dropout = -0.1f;
  EXPECT_EQ(Attention(good, o, p, p, p, out, nullptr), Status::kInvalidOption);
  o.dropout = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Attention(good, o, p, p, p, out, nullptr), Status::kInvalidOption);
  o = opts;
  o.scale = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Attention(good, o, p, p, p, out, nullptr), Status::kInvalidOption);
  o = opts;
  o.causal = static_cast<CausalMask>(7);
  EXPECT_EQ(Attention(good, o, p, p, p, out, nullptr), Status::kInvalidOption);
  o = opts;
  o.mask_strategy = static_cast<MaskStrategy>(-1);
  EXPECT_EQ(Attention(good, o, p, p, p, out, nullptr), Status::kInvalidOption);
  EXPECT_EQ(Attention(good, opts, nullptr, p, p, out, nullptr),
            Status::kNullPointer);
  EXPECT_EQ(Attention(good, opts, p, p, p, nullptr, nullptr),
            Status::kNullPointer);
  EXPECT_STRNE(StatusMessage(Status::kInvalidShape),
               StatusMessage(Status::kOk));
  // Still works after every error.
  EXPECT_EQ(Attention(good, opts, p, p, p, out, nullptr), Status::kOk);
}

TEST(Dropout, FractionDroppedMatchesP) {
  for (float p : {0.1f, 0.5f, 0.9f}) {
    size_t dropped = 0;
    const size_t rows = 400, cols = 1000, n = rows * cols;
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint32_t j = 0; j < cols; ++j) dropped += !DropoutKeeps(77, r, j, p);
    }
    const double sigma = std::sqrt(n * p * (1.0 - p));
    EXPECT_NEAR(static_cast<double>(dropped), n * p, 4 * sigma) << "p=" << p;
  }
}

}  // namespace
}  // namespace causal_attention
