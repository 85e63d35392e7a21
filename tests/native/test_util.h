// Helpers shared by the native tests.

#ifndef CAUSAL_ATTENTION_TESTS_NATIVE_TEST_UTIL_H_
#define CAUSAL_ATTENTION_TESTS_NATIVE_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/attention/attention.h"
#include "src/base/thread_pool.h"
#include "src/kv/kv_storage.h"
#include "src/model/layer.h"

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
         " scale=" + (o.scale ? std::to_string(*o.scale) : "default") +
         (s.kv_heads ? " kv_heads=" + std::to_string(s.kv_heads) : "") +
         (s.kv_capacity ? " kv_capacity=" + std::to_string(s.kv_capacity) : "");
}

// [heads, rows, d] -> [heads, cap, d], rows rows.. cap of each head NaN: a KV
// cache's unused capacity, which no computation may read.
inline std::vector<float> PadRows(const std::vector<float>& dense,
                                  int64_t heads, int64_t rows, int64_t cap,
                                  int64_t d) {
  std::vector<float> out(static_cast<size_t>(heads * cap * d),
                         std::numeric_limits<float>::quiet_NaN());
  for (int64_t h = 0; h < heads; ++h) {
    std::copy(dense.begin() + h * rows * d, dense.begin() + (h + 1) * rows * d,
              out.begin() + h * cap * d);
  }
  return out;
}

// Inputs and outputs of one attention call: q [B, H, Tq, D], k and v
// [B, Hkv, cap, ·] (with GQA and a cache's capacity; rows past key_len NaN).
struct Problem {
  AttentionShape shape;
  AttentionOptions options;
  std::vector<float> q, k, v;

  Problem(const AttentionShape& s, const AttentionOptions& o, std::mt19937* rng)
      : shape(s), options(o) {
    const int64_t kvh = s.batch * (s.kv_heads ? s.kv_heads : s.heads);
    const int64_t cap = s.kv_capacity ? s.kv_capacity : s.key_len;
    q = RandomVector(s.batch * s.heads * s.query_len * s.head_dim, rng);
    k = PadRows(RandomVector(kvh * s.key_len * s.head_dim, rng), kvh, s.key_len,
                cap, s.head_dim);
    v = PadRows(RandomVector(kvh * s.key_len * s.value_dim, rng), kvh,
                s.key_len, cap, s.value_dim);
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

// The Llama chapter's layer: grouped KV heads, RoPE (theta 10000), no
// biases; w_out left null.
inline AttentionLayerParams GqaRopeParams(int64_t d_in, int64_t heads,
                                          int64_t kv_heads, int64_t hd,
                                          const float* wq, const float* wk,
                                          const float* wv) {
  AttentionLayerParams p;
  p.d_in = d_in;
  p.num_heads = heads;
  p.head_dim = hd;
  p.num_kv_heads = kv_heads;
  p.rope_base = 10000.0f;
  p.w_query = wq;
  p.w_key = wk;
  p.w_value = wv;
  return p;
}

// One attention layer's configuration in the layer tests.
struct LayerCase {
  int64_t b, t, d_in, heads, hd;
  bool bias, out_proj, drop;
};

// The cases the forward and backward layer tests share.
inline constexpr LayerCase kLayerCases[] = {
    {2, 6, 3, 1, 2, false, false, false},
    {2, 6, 3, 2, 1, true, true, false},
    {1, 1, 1, 1, 1, false, false, false},
    {3, 37, 5, 3, 7, true, true, true},
    {1, 130, 48, 4, 12, false, true, true},
    {2, 70, 16, 8, 2, true, false, false},
};

// A layer with random parameters, its input x and options. Parameters at
// nn.Linear's scale, U(-1/sqrt(in), 1/sqrt(in)): with +-1 weights the
// scores reach ~30 and the softmax amplifies the float rounding of the
// projections beyond what the tolerances are about. params points into
// this object (not copyable).
struct RandomLayer {
  LayerCase c;
  std::vector<float> x, w[4], bias[4];
  AttentionLayerParams params;
  LayerOptions options;

  RandomLayer(const LayerCase& c_, std::mt19937* rng) : c(c_) {
    const int64_t dm = c.heads * c.hd;
    x = RandomVector(c.b * c.t * c.d_in, rng);
    for (int i = 0; i < 4; ++i) {
      const int64_t in = i < 3 ? c.d_in : dm;
      const float bound = 1.0f / std::sqrt(static_cast<float>(in));
      w[i] = RandomVector(dm * in, rng, -bound, bound);
      bias[i] = RandomVector(dm, rng, -bound, bound);
    }
    params.d_in = c.d_in;
    params.num_heads = c.heads;
    params.head_dim = c.hd;
    params.w_query = w[0].data();
    params.w_key = w[1].data();
    params.w_value = w[2].data();
    if (c.bias) {
      params.b_query = bias[0].data();
      params.b_key = bias[1].data();
      params.b_value = bias[2].data();
    }
    if (c.out_proj) {
      params.w_out = w[3].data();
      params.b_out = bias[3].data();
    }
    options.batch = c.b;
    options.tokens = c.t;
    if (c.drop) {
      options.attention.training = true;
      options.attention.dropout = 0.3f;
      options.attention.seed = 77;
    }
  }
  RandomLayer(const RandomLayer&) = delete;
  RandomLayer& operator=(const RandomLayer&) = delete;

  std::string Describe() const {
    return "B=" + std::to_string(c.b) + " T=" + std::to_string(c.t) +
           " H=" + std::to_string(c.heads);
  }
};

// p's k and v (float32, [B, Hkv, cap, ·]) stored as `dtype` rows
// (kv_storage.h; float32: as they are).
struct StoredKv {
  std::vector<uint8_t> k, v;
  StoredKv(const Problem& p, KvDtype dtype) {
    const size_t d = static_cast<size_t>(p.shape.head_dim);
    const size_t dv = static_cast<size_t>(p.shape.value_dim);
    const size_t rows = p.k.size() / d;
    k.resize(rows * KvRowBytes(dtype, d));
    v.resize(rows * KvRowBytes(dtype, dv));
    StoreKvRows(dtype, p.k.data(), rows, d, k.data());
    StoreKvRows(dtype, p.v.data(), rows, dv, v.data());
  }
  const float* K() const { return reinterpret_cast<const float*>(k.data()); }
  const float* V() const { return reinterpret_cast<const float*>(v.data()); }
};

// Attention (or the oracle) on p's queries and `kv`, as `dtype` rows.
inline Status RunStored(decltype(&Attention) fn, const Problem& p,
                        KvDtype dtype, const StoredKv& kv,
                        std::vector<float>* out, std::vector<float>* weights) {
  AttentionShape s = p.shape;
  s.kv_dtype = dtype;
  out->assign(p.OutSize(), -7.0f);
  if (weights) weights->assign(p.WeightsSize(), -7.0f);
  return fn(s, p.options, p.q.data(), kv.K(), kv.V(), out->data(),
            weights ? weights->data() : nullptr);
}

// Attention on the stored rows with 1, 2 and 3 threads: the same bits, and
// near the oracle's output on them (use with ASSERT_NO_FATAL_FAILURE).
inline void ExpectStoredBitsForThreads(const Problem& p, KvDtype dtype,
                                       const StoredKv& kv) {
  std::vector<float> ref, out[3];
  ASSERT_EQ(RunStored(AttentionReference, p, dtype, kv, &ref, nullptr),
            Status::kOk);
  for (int t = 1; t <= 3; ++t) {
    SetNumThreads(t);
    ASSERT_EQ(RunStored(Attention, p, dtype, kv, &out[t - 1], nullptr),
              Status::kOk);
  }
  SetNumThreads(1);
  EXPECT_TRUE(NearReference(out[0], ref));
  EXPECT_EQ(out[0], out[1]);
  EXPECT_EQ(out[0], out[2]);
}

// The SIMD kernel, with and without weights, against the reference (use
// with ASSERT_NO_FATAL_FAILURE or check HasFailure()).
inline void ExpectMatchesReference(Problem& p) {
  SCOPED_TRACE(Describe(p.shape, p.options));
  std::vector<float> ref_out, ref_w, out, w, out_tiled;
  ASSERT_EQ(p.Run(AttentionReference, &ref_out, &ref_w), Status::kOk);
  ASSERT_EQ(p.Run(Attention, &out, &w), Status::kOk);
  EXPECT_TRUE(NearReference(out, ref_out)) << "output, with weights";
  EXPECT_TRUE(NearReference(w, ref_w)) << "weights";
  ASSERT_EQ(p.Run(Attention, &out_tiled, nullptr), Status::kOk);
  EXPECT_TRUE(NearReference(out_tiled, ref_out)) << "output, no weights";
}

}  // namespace testing_util
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_TESTS_NATIVE_TEST_UTIL_H_
