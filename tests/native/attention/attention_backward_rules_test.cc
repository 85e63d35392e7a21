// The visibility rules in the backward: AttentionBackward (every compiled
// target) against AttentionBackwardReference with every option and
// combinations (grad_sinks included), threads bit-identical, and the
// reference against float64 central differences of sum(dO ∘ O) for the new
// score rules (softcap, sinks, masks) and the visibility rules.

#include <stdint.h>
#include <string.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/causal_attention.h"
#include "src/attention/internal.h"
#include "src/attention/visibility.h"
#include "tests/native/rules_test_util.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::NearReference;
using testing_util::RandomVector;
using testing_util::RuleMix;
using testing_util::RuleProblem;

// A rule problem with the forward's out and log-sum-exp and a random dO.
struct BackwardCase {
  RuleProblem p;
  std::vector<float> out, lse, dout;

  BackwardCase(const AttentionShape& s, const RuleMix& mix, std::mt19937* rng)
      : p(s, rng) {
    p.DrawOptions(mix, rng);
    dout = RandomVector(p.OutSize(), rng);
  }
  Status Forward() {
    return p.Run(AttentionWithLogSumExpReference, &out, nullptr, &lse);
  }
  struct Grads {
    std::vector<float> q, k, v, sinks;
  };
  template <class Fn>
  Status Run(Fn fn, Grads* g) const {
    g->q.assign(p.q.size(), -7.0f);
    g->k.assign(p.k.size(), -7.0f);
    g->v.assign(p.v.size(), -7.0f);
    g->sinks.assign(static_cast<size_t>(p.shape.heads), -7.0f);
    return fn(p.shape, p.options, dout.data(), p.q.data(), p.k.data(),
              p.v.data(), out.data(), lse.data(), g->q.data(), g->k.data(),
              g->v.data(), p.options.sinks ? g->sinks.data() : nullptr);
  }
};

AttentionShape SmallShape(std::mt19937* rng, int64_t max_t) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(*rng);
  };
  const int64_t dims[] = {1, 3, 8, 17, 96};
  AttentionShape s;
  s.batch = pick(1, 2);
  s.kv_heads = pick(1, 2);
  s.heads = s.kv_heads * pick(1, 2);
  s.query_len = pick(1, max_t);
  s.key_len = pick(0, 2) == 0 ? s.query_len : pick(1, max_t);
  s.head_dim = dims[pick(0, 4)];
  s.value_dim = pick(0, 1) ? s.head_dim : dims[pick(0, 4)];
  return s;
}

class AttentionBackwardRulesTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(AttentionBackwardRulesTest);

TEST_P(AttentionBackwardRulesTest, MatchesReferenceWithEveryRule) {
  std::mt19937 rng(919);
  for (int iter = 0; iter < 120; ++iter) {
    RuleMix mix;
    mix.renormalize = false;
    BackwardCase c(SmallShape(&rng, iter % 4 == 0 ? 200 : 90), mix, &rng);
    SCOPED_TRACE(c.p.Describe());
    ASSERT_EQ(c.Forward(), Status::kOk) << StatusDetail();
    BackwardCase::Grads ref, got;
    ASSERT_EQ(c.Run(AttentionBackwardReference, &ref), Status::kOk);
    ASSERT_EQ(c.Run(AttentionBackward, &got), Status::kOk);
    EXPECT_TRUE(NearReference(got.q, ref.q, 2e-5)) << "grad_q";
    EXPECT_TRUE(NearReference(got.k, ref.k, 2e-5)) << "grad_k";
    EXPECT_TRUE(NearReference(got.v, ref.v, 2e-5)) << "grad_v";
    if (c.p.options.sinks) {
      EXPECT_TRUE(NearReference(got.sinks, ref.sinks, 2e-5)) << "grad_sinks";
    }
    if (HasFailure()) return;
  }
}

TEST_P(AttentionBackwardRulesTest, BitIdenticalForAnyThreadCount) {
  std::mt19937 rng(4);
  for (int iter = 0; iter < 8; ++iter) {
    RuleMix mix;
    mix.renormalize = false;
    AttentionShape s = SmallShape(&rng, 260);
    s.batch = 1;
    s.kv_heads = 1;
    BackwardCase c(s, mix, &rng);
    SCOPED_TRACE(c.p.Describe());
    ASSERT_EQ(c.Forward(), Status::kOk);
    BackwardCase::Grads g[3];
    for (int t = 1; t <= 3; ++t) {
      SetNumThreads(t);
      ASSERT_EQ(c.Run(AttentionBackward, &g[t - 1]), Status::kOk);
    }
    SetNumThreads(1);
    for (int t = 1; t < 3; ++t) {
      EXPECT_EQ(g[0].q, g[t].q);
      EXPECT_EQ(g[0].k, g[t].k);
      EXPECT_EQ(g[0].v, g[t].v);
      EXPECT_EQ(g[0].sinks, g[t].sinks);
    }
  }
}

// sum(dO ∘ O) in double with every rule (no dropout): the loss whose
// gradient the backward computes.
double LossWithRules(const RuleProblem& p, const std::vector<double>& q,
                     const std::vector<double>& k,
                     const std::vector<double>& v,
                     const std::vector<double>& sinks,
                     const std::vector<float>& dout) {
  const AttentionShape& s = p.shape;
  const AttentionOptions& o = p.options;
  const internal::Visibility vis(s, o);
  const size_t heads = static_cast<size_t>(s.heads);
  const size_t group = heads / static_cast<size_t>(internal::KvHeads(s));
  const size_t tq = static_cast<size_t>(s.query_len);
  const size_t tk = static_cast<size_t>(s.key_len);
  const size_t d = static_cast<size_t>(s.head_dim);
  const size_t dv = static_cast<size_t>(s.value_dim);
  const double scale = internal::ResolvedScale(s, o);
  double loss = 0.0;
  std::vector<double> sc(tk), w(tk);
  for (size_t b = 0; b < static_cast<size_t>(s.batch); ++b) {
    for (size_t h = 0; h < heads; ++h) {
      for (size_t i = 0; i < tq; ++i) {
        const size_t qr = internal::QueryRowIndex(s, o.layout, b, h, i);
        const size_t mrow = vis.MaskRow(b, h, i);
        double m = -std::numeric_limits<double>::infinity();
        std::vector<size_t> seen;
        for (size_t j = vis.Begin(b, i); j < vis.End(b, i); ++j) {
          if (vis.HasBooleanMask() && !vis.MaskAllows(mrow, j)) continue;
          const size_t kr = internal::KeyRowIndex(s, o.layout, b, h / group, j);
          double dot = 0.0;
          for (size_t c = 0; c < d; ++c) dot += q[qr * d + c] * k[kr * d + c];
          double x = dot * scale;
          if (o.softcap > 0.0f) x = o.softcap * std::tanh(x / o.softcap);
          if (vis.HasAdditiveMask()) x += vis.MaskAdd(mrow, j);
          if (x == -std::numeric_limits<double>::infinity()) continue;
          sc[j] = x;
          m = std::max(m, x);
          seen.push_back(j);
        }
        if (seen.empty()) continue;
        const double sink =
            o.sinks ? sinks[h] : -std::numeric_limits<double>::infinity();
        m = std::max(m, sink);
        double sum = std::exp(sink - m);
        for (size_t j : seen) sum += (w[j] = std::exp(sc[j] - m));
        for (size_t j : seen) {
          const size_t kr = internal::KeyRowIndex(s, o.layout, b, h / group, j);
          for (size_t c = 0; c < dv; ++c) {
            loss += w[j] / sum * v[kr * dv + c] * dout[qr * dv + c];
          }
        }
      }
    }
  }
  return loss;
}

TEST(AttentionBackwardReferenceRules, MatchesFiniteDifferences) {
  std::mt19937 rng(77);
  for (int iter = 0; iter < 60; ++iter) {
    RuleMix mix;
    mix.dropout = false;
    mix.renormalize = false;
    AttentionShape s = SmallShape(&rng, 7);
    s.head_dim = 1 + iter % 4;
    s.value_dim = 1 + iter % 3;
    BackwardCase c(s, mix, &rng);
    // Each rule of the score at least every few cases.
    if (iter % 3 == 0 && !c.p.options.sinks) {
      c.p.sinks = RandomVector(static_cast<size_t>(s.heads), &rng, -1.f, 1.f);
      c.p.options.sinks = c.p.sinks.data();
    }
    if (iter % 3 == 1) c.p.options.softcap = 0.7f;
    SCOPED_TRACE(c.p.Describe());
    ASSERT_EQ(c.Forward(), Status::kOk) << StatusDetail();
    BackwardCase::Grads g;
    ASSERT_EQ(c.Run(AttentionBackwardReference, &g), Status::kOk);
    std::vector<double> x[4] = {
        std::vector<double>(c.p.q.begin(), c.p.q.end()),
        std::vector<double>(c.p.k.begin(), c.p.k.end()),
        std::vector<double>(c.p.v.begin(), c.p.v.end()),
        std::vector<double>(c.p.sinks.begin(), c.p.sinks.end())};
    const std::vector<float>* got[4] = {&g.q, &g.k, &g.v, &g.sinks};
    constexpr double kStep = 1e-5;
    for (int which = 0; which < (c.p.options.sinks ? 4 : 3); ++which) {
      for (size_t e = 0; e < x[which].size(); ++e) {
        const double saved = x[which][e];
        x[which][e] = saved + kStep;
        const double up = LossWithRules(c.p, x[0], x[1], x[2], x[3], c.dout);
        x[which][e] = saved - kStep;
        const double down = LossWithRules(c.p, x[0], x[1], x[2], x[3], c.dout);
        x[which][e] = saved;
        const double fd = (up - down) / (2 * kStep);
        const double ref = (*got[which])[e];
        EXPECT_NEAR(ref, fd, 2e-5 * (1.0 + std::fabs(fd)))
            << "input " << which << " element " << e;
      }
    }
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace causal_attention
