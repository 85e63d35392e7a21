// The attention backward pass:
//  * AttentionBackwardReference (the oracle) against central finite
//    differences of the forward computed here in double, on small shapes:
//    |g - fd| <= 1e-6 (1 + |fd|);
//  * AttentionBackward (every compiled SIMD target) against the oracle on
//    random and odd shapes: |g - ref| <= 2e-5 (1 + |ref|) elementwise, NaN
//    positions equal;
//  * the forward's log-sum-exp against the oracle's: |L - ref| <= 1e-5
//    (1 + |ref|);
//  * bit-identical results for 1, 2, 3 and 4 threads; the two mask
//    strategies; rows and keys outside the mask; non-finite inputs; bad
//    arguments.
// Each check prints the largest error it measured (error / (1 + |ref|)).

#include "src/attention/attention_backward.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/attention/attention.h"
#include "src/attention/visibility.h"
#include "src/simd/dropout.h"
#include "src/attention/internal.h"
#include "src/base/thread_pool.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::Describe;
using testing_util::NearReference;
using testing_util::RandomVector;

constexpr double kGradTolerance = 2e-5;
constexpr double kFiniteDifferenceTolerance = 1e-6;

// Largest |a - ref| / (1 + |ref|) over the non-NaN elements.
double WorstError(const std::vector<float>& got,
                  const std::vector<float>& ref) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) || std::isnan(ref[i])) continue;
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - ref[i]) /
                                (1.0 + std::fabs(static_cast<double>(ref[i]))));
  }
  return worst;
}

// One backward problem: inputs, the forward's output and log-sum-exp.
struct Problem {
  AttentionShape shape;
  AttentionOptions options;
  std::vector<float> q, k, v, dout, out, lse;

  Problem(const AttentionShape& s, const AttentionOptions& o, std::mt19937* rng,
          bool reference_forward = false)
      : shape(s), options(o) {
    const int64_t kvh = internal::KvHeads(s);
    q = RandomVector(s.batch * s.heads * s.query_len * s.head_dim, rng);
    k = RandomVector(s.batch * kvh * s.key_len * s.head_dim, rng);
    v = RandomVector(s.batch * kvh * s.key_len * s.value_dim, rng);
    dout = RandomVector(OutSize(), rng);
    Forward(reference_forward);
  }
  size_t OutSize() const {
    return static_cast<size_t>(shape.batch * shape.heads * shape.query_len *
                               shape.value_dim);
  }
  // out and lse from the forward (shared KV heads included).
  void Forward(bool reference) {
    out.assign(OutSize(), 0.0f);
    lse.assign(shape.batch * shape.heads * shape.query_len, 0.0f);
    const auto fn =
        reference ? AttentionWithLogSumExpReference : AttentionWithLogSumExp;
    ASSERT_EQ(fn(shape, options, q.data(), k.data(), v.data(), out.data(),
                 nullptr, lse.data()),
              Status::kOk);
  }
  struct Grads {
    std::vector<float> q, k, v;
  };
  template <class Fn>
  Status Run(Fn fn, Grads* g) const {
    g->q.assign(q.size(), -7.0f);  // poison: every element must be written
    g->k.assign(k.size(), -7.0f);
    g->v.assign(v.size(), -7.0f);
    return fn(shape, options, dout.data(), q.data(), k.data(), v.data(),
              out.data(), lse.data(), g->q.data(), g->k.data(), g->v.data(),
              nullptr);
  }
};

std::string DescribeGqa(const Problem& p) {
  return Describe(p.shape, p.options) +
         " kv_heads=" + std::to_string(internal::KvHeads(p.shape));
}

// ---------------------------------------------------------------------------
// The oracle against finite differences.

// sum(dO ∘ O) with O = attention(q, k, v) in double: the loss whose
// gradient the backward computes. Same mask, scale and dropout mask (and
// the float keep scale) as the kernels.
double LossInDouble(const AttentionShape& s, const AttentionOptions& o,
                    const std::vector<double>& q, const std::vector<double>& k,
                    const std::vector<double>& v,
                    const std::vector<float>& dout) {
  const int64_t kvh = internal::KvHeads(s), group = s.heads / kvh;
  const int64_t tq = s.query_len, tk = s.key_len, d = s.head_dim,
                dv = s.value_dim;
  const double scale = internal::ResolvedScale(s, o);
  const bool drop = internal::DropoutActive(o);
  const double keep_scale = dropout::KeepScale(o.dropout);
  double loss = 0.0;
  const internal::Visibility vis(s, o);
  std::vector<double> w(tk);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t row0 = (b * s.heads + h) * tq;
      const int64_t kv = b * kvh + h / group;
      for (int64_t i = 0; i < tq; ++i) {
        const int64_t ve = static_cast<int64_t>(vis.End(b, i));
        if (ve == 0) continue;
        double m = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (int64_t j = 0; j < ve; ++j) {
          double dot = 0.0;
          for (int64_t c = 0; c < d; ++c) {
            dot += q[(row0 + i) * d + c] * k[(kv * tk + j) * d + c];
          }
          w[j] = dot * scale;
          m = std::max(m, w[j]);
        }
        for (int64_t j = 0; j < ve; ++j) sum += (w[j] = std::exp(w[j] - m));
        for (int64_t j = 0; j < ve; ++j) {
          w[j] /= sum;
          if (drop) {
            w[j] *= DropoutKeeps(o.seed, row0 + i, static_cast<uint32_t>(j),
                                 o.dropout)
                        ? keep_scale
                        : 0.0;
          }
          for (int64_t c = 0; c < dv; ++c) {
            loss +=
                w[j] * v[(kv * tk + j) * dv + c] * dout[(row0 + i) * dv + c];
          }
        }
      }
    }
  }
  return loss;
}

// Central differences of LossInDouble with respect to every element of
// one input (which = 0: q, 1: k, 2: v).
std::vector<double> FiniteDifferences(const Problem& p, int which) {
  std::vector<double> x[3] = {std::vector<double>(p.q.begin(), p.q.end()),
                              std::vector<double>(p.k.begin(), p.k.end()),
                              std::vector<double>(p.v.begin(), p.v.end())};
  constexpr double kStep = 1e-4;
  std::vector<double> grad(x[which].size());
  for (size_t e = 0; e < grad.size(); ++e) {
    const double saved = x[which][e];
    x[which][e] = saved + kStep;
    const double up =
        LossInDouble(p.shape, p.options, x[0], x[1], x[2], p.dout);
    x[which][e] = saved - kStep;
    const double down =
        LossInDouble(p.shape, p.options, x[0], x[1], x[2], p.dout);
    x[which][e] = saved;
    grad[e] = (up - down) / (2 * kStep);
  }
  return grad;
}

TEST(AttentionBackwardReference, MatchesFiniteDifferences) {
  std::mt19937 rng(2024);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  double worst = 0.0;
  for (int iter = 0; iter < 40; ++iter) {
    AttentionShape s;
    s.batch = pick(1, 2);
    s.kv_heads = pick(1, 2);
    s.heads = s.kv_heads * (iter % 3 == 0 ? pick(1, 3) : 1);
    s.query_len = iter % 8 == 0 ? 1 : pick(1, 7);
    s.key_len = iter % 3 == 0 ? s.query_len : pick(1, 7);
    s.head_dim = pick(1, 5);
    s.value_dim = pick(1, 4);
    AttentionOptions o;
    o.causal = static_cast<CausalMask>(iter % 3);
    if (iter % 4 == 1)
      o.scale = std::uniform_real_distribution<float>(-2, 2)(rng);
    if (iter % 5 == 2) {
      o.training = true;
      o.dropout = 0.4f;
      o.seed = rng();
    }
    Problem p(s, o, &rng, /*reference_forward=*/true);
    SCOPED_TRACE(DescribeGqa(p));
    Problem::Grads g;
    ASSERT_EQ(p.Run(AttentionBackwardReference, &g), Status::kOk);
    const std::vector<float>* got[3] = {&g.q, &g.k, &g.v};
    for (int which = 0; which < 3; ++which) {
      const std::vector<double> fd = FiniteDifferences(p, which);
      // Compare in double: fd rounded to float would add its own error.
      for (size_t e = 0; e < fd.size(); ++e) {
        const double err =
            std::fabs((*got[which])[e] - fd[e]) / (1.0 + std::fabs(fd[e]));
        worst = std::max(worst, err);
        ASSERT_LE(err, kFiniteDifferenceTolerance)
            << "input " << which << " element " << e << ": " << (*got[which])[e]
            << " vs " << fd[e];
      }
    }
  }
  printf("  reference vs finite differences: worst error %.3g (tolerance %g)\n",
         worst, kFiniteDifferenceTolerance);
}

// ---------------------------------------------------------------------------
// The kernel against the oracle, on every target.

class AttentionBackwardTest : public hwy::TestWithParamTarget {
 protected:
  void CheckAgainstReference(const Problem& p, double* worst = nullptr) {
    SCOPED_TRACE(DescribeGqa(p));
    Problem::Grads ref, got;
    ASSERT_EQ(p.Run(AttentionBackwardReference, &ref), Status::kOk);
    ASSERT_EQ(p.Run(AttentionBackward, &got), Status::kOk);
    EXPECT_TRUE(NearReference(got.q, ref.q, kGradTolerance)) << "grad_q";
    EXPECT_TRUE(NearReference(got.k, ref.k, kGradTolerance)) << "grad_k";
    EXPECT_TRUE(NearReference(got.v, ref.v, kGradTolerance)) << "grad_v";
    if (worst) {
      *worst = std::max({*worst, WorstError(got.q, ref.q),
                         WorstError(got.k, ref.k), WorstError(got.v, ref.v)});
    }
  }
};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(AttentionBackwardTest);

TEST_P(AttentionBackwardTest, RandomShapesMatchReference) {
  std::mt19937 rng(4321);
  const int64_t head_dims[] = {1,  2,  3,  4,  5,  7,  8,  9,
                               15, 16, 17, 31, 32, 33, 64, 65};
  const int64_t heads[] = {1, 2, 3, 4, 6, 8};
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  double worst = 0.0;
  for (int iter = 0; iter < 150; ++iter) {
    AttentionShape s;
    s.batch = pick(1, 2);
    s.heads = heads[pick(0, 5)];
    // Every divisor of heads is a valid kv_heads; 0 means heads.
    std::vector<int64_t> divisors = {0};
    for (int64_t x = 1; x <= s.heads; ++x) {
      if (s.heads % x == 0) divisors.push_back(x);
    }
    s.kv_heads = divisors[pick(0, static_cast<int64_t>(divisors.size()) - 1)];
    s.query_len = iter % 7 == 0 ? 1 : pick(1, 150);
    s.key_len = iter % 3 == 0 ? s.query_len : pick(1, 150);
    s.head_dim = head_dims[pick(0, 15)];
    s.value_dim = iter % 2 ? s.head_dim : head_dims[pick(0, 15)];
    AttentionOptions o;
    o.causal = static_cast<CausalMask>(pick(0, 2));
    o.mask_strategy = static_cast<MaskStrategy>(pick(0, 1));
    if (iter % 5 == 0) {
      o.scale = std::uniform_real_distribution<float>(-2, 2)(rng);
    }
    if (iter % 4 == 0) {
      o.training = true;
      o.dropout = std::uniform_real_distribution<float>(0.0f, 0.9f)(rng);
      o.seed = rng();
    }
    Problem p(s, o, &rng);
    CheckAgainstReference(p, &worst);
    if (HasFailure()) return;  // one report is enough
  }
  printf("  %s: worst error over 150 random shapes %.3g (tolerance %g)\n",
         hwy::TargetName(GetParam()), worst, kGradTolerance);
}

TEST_P(AttentionBackwardTest, OddAndLongShapes) {
  std::mt19937 rng(77);
  struct Case {
    int64_t b, h, kvh, tq, tk, d, dv;
  };
  const Case cases[] = {
      {1, 1, 0, 1, 1, 1, 1},         {1, 1, 0, 1, 9, 1, 3},
      {1, 1, 0, 9, 1, 3, 1},         {3, 2, 1, 33, 33, 1, 1},
      {1, 1, 0, 65, 65, 3, 5},       {2, 1, 0, 64, 64, 64, 64},
      {1, 1, 0, 129, 200, 16, 8},    {1, 1, 0, 200, 129, 8, 16},
      {1, 4, 2, 97, 97, 96, 24},     {1, 8, 1, 40, 300, 32, 32},
      {1, 1, 0, 1024, 1024, 64, 64}, {1, 2, 1, 700, 900, 24, 40},
  };
  double worst = 0.0;
  for (const Case& c : cases) {
    for (int causal = 0; causal <= 2; ++causal) {
      AttentionShape s{c.b, c.h, c.tq, c.tk, c.d, c.dv, c.kvh};
      AttentionOptions o;
      o.causal = static_cast<CausalMask>(causal);
      if (c.tq * c.tk > 100000) {
        o.training = true;
        o.dropout = 0.25f;
        o.seed = 5;
      }
      Problem p(s, o, &rng);
      CheckAgainstReference(p, &worst);
    }
  }
  printf("  %s: worst error on odd and long shapes %.3g\n",
         hwy::TargetName(GetParam()), worst);
}

TEST_P(AttentionBackwardTest, ResultsAreBitIdenticalForAnyThreadCount) {
  std::mt19937 rng(31);
  // One long head (its keys split into chunks) and many heads (one chunk).
  const AttentionShape shapes[] = {{1, 1, 600, 600, 32, 24, 0},
                                   {2, 6, 150, 150, 16, 16, 3}};
  for (const AttentionShape& s : shapes) {
    AttentionOptions o;
    o.training = true;
    o.dropout = 0.2f;
    o.seed = 9;
    Problem p(s, o, &rng);
    SetNumThreads(1);
    Problem::Grads one;
    ASSERT_EQ(p.Run(AttentionBackward, &one), Status::kOk);
    for (int threads : {2, 3, 4}) {
      ASSERT_EQ(SetNumThreads(threads), threads);
      Problem::Grads g;
      ASSERT_EQ(p.Run(AttentionBackward, &g), Status::kOk);
      EXPECT_EQ(g.q, one.q) << threads << " threads";
      EXPECT_EQ(g.k, one.k) << threads << " threads";
      EXPECT_EQ(g.v, one.v) << threads << " threads";
    }
  }
  SetNumThreads(1);
}

TEST_P(AttentionBackwardTest, MaskStrategiesHaveTheSameGradient) {
  std::mt19937 rng(11);
  for (int causal = 1; causal <= 2; ++causal) {
    AttentionShape s{2, 2, 45, 70, 16, 12, 0};
    AttentionOptions o;
    o.causal = static_cast<CausalMask>(causal);
    Problem neg_inf(s, o, &rng);
    Problem::Grads a, b;
    ASSERT_EQ(neg_inf.Run(AttentionBackward, &a), Status::kOk);
    // The same inputs: the strategy is not an input of the gradient.
    Problem same = neg_inf;
    same.options.mask_strategy = MaskStrategy::kRenormalize;
    ASSERT_EQ(same.Run(AttentionBackward, &b), Status::kOk);
    EXPECT_EQ(a.q, b.q);
    EXPECT_EQ(a.k, b.k);
    EXPECT_EQ(a.v, b.v);
    // Each strategy's own forward (the book's route for renormalize):
    // equal within the tolerance.
    same.Forward(false);
    EXPECT_TRUE(NearReference(same.lse, neg_inf.lse, 1e-6));
    ASSERT_EQ(same.Run(AttentionBackward, &b), Status::kOk);
    EXPECT_TRUE(NearReference(b.q, a.q, kGradTolerance));
    EXPECT_TRUE(NearReference(b.k, a.k, kGradTolerance));
    EXPECT_TRUE(NearReference(b.v, a.v, kGradTolerance));
  }
}

TEST_P(AttentionBackwardTest, MaskedRowsAndKeysGetZeroGradient) {
  std::mt19937 rng(5);
  // Bottom-right with Tq > Tk: queries 0..5 see no key.
  {
    AttentionShape s{1, 2, 10, 4, 5, 3, 0};
    AttentionOptions o;
    o.causal = CausalMask::kBottomRight;
    Problem p(s, o, &rng);
    Problem::Grads g;
    ASSERT_EQ(p.Run(AttentionBackward, &g), Status::kOk);
    for (size_t h = 0; h < 2; ++h) {
      for (size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(p.lse[h * 10 + i] == -std::numeric_limits<float>::infinity(),
                  i < 6);
        for (size_t c = 0; c < 5; ++c) {
          const float x = g.q[(h * 10 + i) * 5 + c];
          // (Row 6 sees key 0 alone: its weight is 1 whatever q, so its
          // gradient is 0 up to rounding; the rows after it are not.)
          if (i < 6) EXPECT_EQ(x, 0.0f) << i;
          if (i > 6) EXPECT_NE(x, 0.0f) << i;
        }
      }
    }
  }
  // Top-left with Tk > Tq: keys 6..9 are seen by no query.
  {
    AttentionShape s{1, 1, 6, 10, 4, 3, 0};
    AttentionOptions o;
    Problem p(s, o, &rng);
    Problem::Grads g;
    ASSERT_EQ(p.Run(AttentionBackward, &g), Status::kOk);
    for (size_t j = 0; j < 10; ++j) {
      for (size_t c = 0; c < 3; ++c) {
        EXPECT_EQ(g.v[j * 3 + c] == 0.0f, j >= 6) << j;
      }
      for (size_t c = 0; c < 4; ++c) {
        if (j >= 6) EXPECT_EQ(g.k[j * 4 + c], 0.0f) << j;
      }
    }
  }
}

TEST_P(AttentionBackwardTest, NonFiniteValuesReachOnlyTheirPairs) {
  std::mt19937 rng(8);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const AttentionShape s{1, 1, 70, 70, 4, 4, 0};
  Problem p(s, AttentionOptions(), &rng);
  p.dout[10 * 4 + 2] = nan;  // row 10 of dO: dQ row 10, dK/dV rows 0..10
  p.v[65 * 4 + 1] = nan;     // value 65: dV row 65 stays finite (dO finite)
  Problem::Grads g, ref;
  ASSERT_EQ(p.Run(AttentionBackward, &g), Status::kOk);
  ASSERT_EQ(p.Run(AttentionBackwardReference, &ref), Status::kOk);
  EXPECT_TRUE(NearReference(g.q, ref.q, kGradTolerance));
  EXPECT_TRUE(NearReference(g.k, ref.k, kGradTolerance));
  EXPECT_TRUE(NearReference(g.v, ref.v, kGradTolerance));
  for (size_t i = 0; i < 70; ++i) {
    // dP of every row that sees key 65 is NaN: rows 65.. get NaN dQ, and
    // dK 65 is NaN; row 10's D is NaN: dQ row 10 and dK/dV 0..10.
    const bool q_nan = i == 10 || i >= 65;
    const bool k_nan = i <= 10 || i == 65;
    const bool v_nan = i <= 10;
    EXPECT_EQ(std::isnan(g.q[i * 4]), q_nan) << "grad_q row " << i;
    EXPECT_EQ(std::isnan(g.k[i * 4]), k_nan) << "grad_k row " << i;
    EXPECT_EQ(std::isnan(g.v[i * 4 + 2]), v_nan) << "grad_v row " << i;
  }
}

TEST_P(AttentionBackwardTest, ForwardLogSumExpMatchesReference) {
  std::mt19937 rng(3);
  double worst = 0.0;
  for (int strategy = 0; strategy <= 1; ++strategy) {
    for (int causal = 0; causal <= 2; ++causal) {
      for (bool weights : {false, true}) {
        AttentionShape s{2, 2, 77, 90, 9, 7, 0};
        AttentionOptions o;
        o.causal = static_cast<CausalMask>(causal);
        o.mask_strategy = static_cast<MaskStrategy>(strategy);
        o.training = true;
        o.dropout = 0.3f;  // dropout does not change L
        o.seed = 1;
        testing_util::Problem p(s, o, &rng);
        p.q[5 * 9] = std::numeric_limits<float>::infinity();  // row 5: NaN
        std::vector<float> out(p.OutSize()), w(p.WeightsSize()),
            lse(2 * 2 * 77), ref_out(p.OutSize()), ref_lse(2 * 2 * 77);
        ASSERT_EQ(AttentionWithLogSumExp(
                      s, o, p.q.data(), p.k.data(), p.v.data(), out.data(),
                      weights ? w.data() : nullptr, lse.data()),
                  Status::kOk);
        ASSERT_EQ(AttentionWithLogSumExpReference(s, o, p.q.data(), p.k.data(),
                                                  p.v.data(), ref_out.data(),
                                                  nullptr, ref_lse.data()),
                  Status::kOk);
        EXPECT_TRUE(NearReference(lse, ref_lse));
        EXPECT_TRUE(std::isnan(lse[5]));
        worst = std::max(worst, WorstError(lse, ref_lse));
      }
    }
  }
  printf("  %s: log-sum-exp worst error %.3g\n", hwy::TargetName(GetParam()),
         worst);
}

TEST(AttentionBackwardStatus, RejectsBadArguments) {
  std::vector<float> buf(256, 0.5f);
  const float* in = buf.data();
  float* out = buf.data();
  const AttentionShape good{1, 2, 2, 2, 2, 2, 0};
  const AttentionOptions opts;
  const auto call = [&](const AttentionShape& s, const AttentionOptions& o) {
    const Status a =
        AttentionBackward(s, o, in, in, in, in, in, in, out, out, out);
    EXPECT_EQ(a, AttentionBackwardReference(s, o, in, in, in, in, in, in, out,
                                            out, out));
    return a;
  };
  EXPECT_EQ(call(good, opts), Status::kOk);
  for (int64_t kvh : {int64_t{3}, int64_t{-1}, int64_t{4}}) {
    AttentionShape s = good;
    s.kv_heads = kvh;
    EXPECT_EQ(call(s, opts), Status::kInvalidShape) << kvh;
  }
  AttentionShape zero = good;
  zero.query_len = 0;
  EXPECT_EQ(call(zero, opts), Status::kInvalidShape);
  AttentionOptions o = opts;
  o.dropout = 1.0f;
  EXPECT_EQ(call(good, o), Status::kInvalidOption);
  o = opts;
  o.mask_strategy = static_cast<MaskStrategy>(5);
  EXPECT_EQ(call(good, o), Status::kInvalidOption);
  for (int missing = 0; missing < 9; ++missing) {
    const float* p[6] = {in, in, in, in, in, in};
    float* g[3] = {out, out, out};
    if (missing < 6) p[missing] = nullptr;
    if (missing >= 6) g[missing - 6] = nullptr;
    EXPECT_EQ(AttentionBackward(good, opts, p[0], p[1], p[2], p[3], p[4], p[5],
                                g[0], g[1], g[2]),
              Status::kNullPointer)
        << missing;
  }
  // Shared key/value heads, but k and v dense: no KV cache capacity.
  AttentionShape gqa = good;
  gqa.kv_heads = 1;
  EXPECT_EQ(call(gqa, opts), Status::kOk);
  gqa.kv_capacity = 3;
  EXPECT_EQ(Attention(gqa, opts, in, in, in, out, nullptr), Status::kOk);
  EXPECT_EQ(call(gqa, opts), Status::kInvalidShape);
}

}  // namespace
}  // namespace causal_attention
