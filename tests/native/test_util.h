// Helpers shared by the native tests.

#ifndef CAUSAL_ATTENTION_TESTS_NATIVE_TEST_UTIL_H_
#define CAUSAL_ATTENTION_TESTS_NATIVE_TEST_UTIL_H_

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/attention.h"

namespace causal_attention {
namespace testing_util {

inline std::vector<float> RandomVector(size_t n, std::mt19937* rng,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(*rng);
  return v;
}

// The tolerance every fast path is held to: |a - ref| <= 1e-5 (1 + |ref|).
constexpr double kTolerance = 1e-5;

// Compares element-wise; NaN must match NaN. Reports the worst element.
inline ::testing::AssertionResult NearReference(const std::vector<float>& got,
                                                const std::vector<float>& ref,
                                                double tol = kTolerance) {
  if (got.size() != ref.size()) {
    return ::testing::AssertionFailure()
           << "size " << got.size() << " vs " << ref.size();
  }
  double worst = 0.0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool gn = std::isnan(got[i]), rn = std::isnan(ref[i]);
    if (gn || rn) {
      if (gn != rn) {
        return ::testing::AssertionFailure()
               << "NaN mismatch at " << i << ": " << got[i] << " vs " << ref[i];
      }
      continue;
    }
    const double excess = std::fabs(static_cast<double>(got[i]) - ref[i]) /
                          (1.0 + std::fabs(static_cast<double>(ref[i])));
    if (excess > worst) {
      worst = excess;
      worst_i = i;
    }
  }
  if (worst > tol) {
    return ::testing::AssertionFailure()
           << "element " << worst_i << ": " << got[worst_i] << " vs "
           << ref[worst_i] << " (error/(1+|ref|) = " << worst << " > " << tol
           << ")";
  }
  return ::testing::AssertionSuccess();
}

inline std::string Describe(const AttentionShape& s,
                            const AttentionOptions& o) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) +
         " Tq=" + std::to_string(s.query_len) +
         " Tk=" + std::to_string(s.key_len) +
         " D=" + std::to_string(s.head_dim) +
         " Dv=" + std::to_string(s.value_dim) +
         " causal=" + std::to_string(static_cast<int>(o.causal)) +
         " strategy=" + std::to_string(static_cast<int>(o.mask_strategy)) +
         " dropout=" + std::to_string(o.dropout) +
         " training=" + std::to_string(o.training) +
         " scale=" + (o.scale ? std::to_string(*o.scale) : "default");
}

// Inputs and outputs of one attention call.
struct Problem {
  AttentionShape shape;
  AttentionOptions options;
  std::vector<float> q, k, v;

  Problem(const AttentionShape& s, const AttentionOptions& o, std::mt19937* rng)
      : shape(s), options(o) {
    const size_t bh = static_cast<size_t>(s.batch * s.heads);
    q = RandomVector(bh * s.query_len * s.head_dim, rng);
    k = RandomVector(bh * s.key_len * s.head_dim, rng);
    v = RandomVector(bh * s.key_len * s.value_dim, rng);
  }
  size_t OutSize() const {
    return static_cast<size_t>(shape.batch * shape.heads * shape.query_len *
                               shape.value_dim);
  }
  size_t WeightsSize() const {
    return static_cast<size_t>(shape.batch * shape.heads * shape.query_len *
                               shape.key_len);
  }
  // Runs `fn` (Attention or AttentionReference); weights only if asked.
  template <class Fn>
  Status Run(Fn fn, std::vector<float>* out, std::vector<float>* weights) {
    out->assign(OutSize(), -7.0f);  // poison: every element must be written
    if (weights) weights->assign(WeightsSize(), -7.0f);
    return fn(shape, options, q.data(), k.data(), v.data(), out->data(),
              weights ? weights->data() : nullptr);
  }
};

}  // namespace testing_util
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_TESTS_NATIVE_TEST_UTIL_H_
