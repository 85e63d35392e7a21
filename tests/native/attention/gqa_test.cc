// Grouped-query attention, the KV-cache layout (kv_capacity) and the
// decode-shaped kernel (keys split into kDecodeChunk chunks, merged by
// log-sum-exp), on every compiled SIMD target, against AttentionReference.
// Tolerance: |a - ref| <= 1e-5 (1 + |ref|) elementwise; NaN positions agree.
// The reference itself is checked against repeated KV heads (the book's
// repeat_interleave), so the oracle's GQA is not taken on trust.

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/causal_attention.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::Describe;
using testing_util::NearReference;
using testing_util::Problem;
using testing_util::RandomVector;

// k [B, Hkv, rows, D] -> [B, H, rows, D]: KV head j repeated for the G query
// heads of its group (torch.repeat_interleave(G, dim=1)).
std::vector<float> RepeatKvHeads(const std::vector<float>& kv, int64_t b,
                                 int64_t kv_heads, int64_t group, size_t rows,
                                 int64_t d) {
  std::vector<float> out;
  const size_t head = rows * static_cast<size_t>(d);
  for (int64_t i = 0; i < b * kv_heads; ++i) {
    for (int64_t g = 0; g < group; ++g) {
      out.insert(out.end(), kv.begin() + i * head, kv.begin() + (i + 1) * head);
    }
  }
  return out;
}

class GqaTest : public hwy::TestWithParamTarget {
 protected:
  void CheckAgainstReference(Problem& p) {
    testing_util::ExpectMatchesReference(p);
  }
};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(GqaTest);

TEST(GqaReference, EqualsRepeatedKvHeadsAndIgnoresUnusedCapacity) {
  std::mt19937 rng(4);
  for (int64_t group : {1, 2, 4, 8}) {
    for (int causal = 0; causal <= 2; ++causal) {
      AttentionShape s{2, 8, 5, 9, 6, 3, 8 / group, 13};
      AttentionOptions o;
      o.causal = static_cast<CausalMask>(causal);
      o.training = causal == 1;
      o.dropout = 0.25f;
      o.seed = 5;
      Problem p(s, o, &rng);
      std::vector<float> out, w;
      ASSERT_EQ(p.Run(AttentionReference, &out, &w), Status::kOk);
      // The same call on dense, repeated heads (PyTorch's enable_gqa=False
      // after repeat_interleave).
      const int64_t kvh = 8 / group;
      const auto dense_k = RepeatKvHeads(p.k, 2, kvh, group, 13, 6);
      const auto dense_v = RepeatKvHeads(p.v, 2, kvh, group, 13, 3);
      AttentionShape r = s;
      r.kv_heads = 0;  // repeated: as many KV heads as query heads
      std::vector<float> out_r(out.size()), w_r(w.size());
      ASSERT_EQ(AttentionReference(r, o, p.q.data(), dense_k.data(),
                                   dense_v.data(), out_r.data(), w_r.data()),
                Status::kOk);
      EXPECT_EQ(out, out_r) << "group " << group;
      EXPECT_EQ(w, w_r) << "group " << group;
      for (float x : out) ASSERT_FALSE(std::isnan(x)) << "read unused rows";
    }
  }
}

TEST_P(GqaTest, RandomShapesMatchReference) {
  std::mt19937 rng(2024);
  const int64_t head_dims[] = {1, 3, 4, 7, 8, 16, 17, 32, 64, 65};
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 120; ++iter) {
    AttentionShape s;
    const int64_t groups[] = {1, 2, 4, 8};
    const int64_t group = groups[iter % 4];
    s.kv_heads = iter % 5 == 4 ? 1 : pick(1, 2);  // MQA every fifth
    s.heads = s.kv_heads * (iter % 5 == 4 ? pick(2, 8) : group);
    s.batch = pick(1, 2);
    // Decode-shaped (a few queries) two times in three, else prefill-like.
    s.query_len = iter % 3 ? pick(1, 4) : pick(1, 70);
    s.key_len = iter % 4 == 0 ? pick(1, 40) : pick(1, 1300);
    s.head_dim = head_dims[pick(0, 9)];
    s.value_dim = iter % 2 ? s.head_dim : head_dims[pick(0, 9)];
    s.kv_capacity = iter % 3 == 1 ? s.key_len + pick(0, 50) : 0;
    AttentionOptions o;
    o.causal = static_cast<CausalMask>(pick(0, 2));
    o.mask_strategy = static_cast<MaskStrategy>(iter % 7 == 0);
    if (iter % 5 == 0) {
      o.scale = std::uniform_real_distribution<float>(-2, 2)(rng);
    }
    if (iter % 4 == 1) {
      o.training = true;
      o.dropout = std::uniform_real_distribution<float>(0.0f, 0.8f)(rng);
      o.seed = rng();
    }
    Problem p(s, o, &rng);
    CheckAgainstReference(p);
    if (HasFailure()) return;
  }
}

TEST_P(GqaTest, ChunkBoundaries) {
  // Cache lengths around multiples of the decode chunk, Llama-like groups.
  std::mt19937 rng(77);
  const int64_t c = kDecodeChunk;
  for (int64_t tk : {c - 1, c, c + 1, 2 * c - 1, 2 * c, 3 * c + 7}) {
    for (int64_t tq : {1, 3}) {
      AttentionShape s{1, 8, tq, tk, 16, 16, 2, tk + 5};
      AttentionOptions o;
      o.causal = CausalMask::kBottomRight;
      Problem p(s, o, &rng);
      CheckAgainstReference(p);
    }
  }
}

TEST_P(GqaTest, DecodeAfterAppendsEqualsTheFullCall) {
  // A cache filled by appends of varying lengths (and a truncation), then a
  // decode step against it: the same as the last rows of one full causal
  // call on dense tensors.
  std::mt19937 rng(31);
  const int64_t b = 2, h = 8, kvh = 2, d = 24, dv = 20, cap = 900;
  std::vector<float> kc(b * kvh * cap * d, std::nanf("")),
      vc(b * kvh * cap * dv, std::nanf(""));
  std::vector<float> k_all[2 * kvh], v_all[2 * kvh];  // per (b, kv head)
  int64_t length = 0;
  auto append = [&](int64_t t) {
    for (int64_t i = 0; i < b * kvh; ++i) {
      const auto kn = RandomVector(t * d, &rng);
      const auto vn = RandomVector(t * dv, &rng);
      std::copy(kn.begin(), kn.end(), kc.begin() + (i * cap + length) * d);
      std::copy(vn.begin(), vn.end(), vc.begin() + (i * cap + length) * dv);
      k_all[i].resize(length * d);
      v_all[i].resize(length * dv);
      k_all[i].insert(k_all[i].end(), kn.begin(), kn.end());
      v_all[i].insert(v_all[i].end(), vn.begin(), vn.end());
    }
    length += t;
  };
  for (int64_t t : {37, 1, 1, 200, 5, 1, 64, 300}) append(t);
  length -= 120;  // truncate, then overwrite the tail
  append(97);
  append(1);
  ASSERT_LE(length, cap);

  // The full call: every position a query, dense K/V.
  const int64_t tq = 1;
  std::vector<float> q_full(b * h * length * d);
  for (float& x : q_full) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  std::vector<float> k_dense, v_dense;
  for (int64_t i = 0; i < b * kvh; ++i) {
    k_dense.insert(k_dense.end(), k_all[i].begin(), k_all[i].end());
    v_dense.insert(v_dense.end(), v_all[i].begin(), v_all[i].end());
  }
  AttentionShape full{b, h, length, length, d, dv, kvh, 0};
  AttentionOptions o;
  std::vector<float> out_full(b * h * length * dv);
  ASSERT_EQ(Attention(full, o, q_full.data(), k_dense.data(), v_dense.data(),
                      out_full.data(), nullptr),
            Status::kOk);
  // The decode step: the last query of every head against the cache.
  std::vector<float> q_last(b * h * tq * d);
  for (int64_t bh = 0; bh < b * h; ++bh) {
    std::copy(q_full.begin() + ((bh + 1) * length - tq) * d,
              q_full.begin() + (bh + 1) * length * d,
              q_last.begin() + bh * tq * d);
  }
  AttentionShape step{b, h, tq, length, d, dv, kvh, cap};
  AttentionOptions bottom_right;
  bottom_right.causal = CausalMask::kBottomRight;
  std::vector<float> out_step(b * h * tq * dv), want(b * h * tq * dv);
  ASSERT_EQ(Attention(step, bottom_right, q_last.data(), kc.data(), vc.data(),
                      out_step.data(), nullptr),
            Status::kOk);
  for (int64_t bh = 0; bh < b * h; ++bh) {
    std::copy(out_full.begin() + ((bh + 1) * length - tq) * dv,
              out_full.begin() + (bh + 1) * length * dv,
              want.begin() + bh * tq * dv);
  }
  EXPECT_TRUE(NearReference(out_step, want));
  std::vector<float> ref(out_step.size());
  ASSERT_EQ(AttentionReference(step, bottom_right, q_last.data(), kc.data(),
                               vc.data(), ref.data(), nullptr),
            Status::kOk);
  EXPECT_TRUE(NearReference(out_step, ref));
}

TEST_P(GqaTest, NonFiniteKeysReachOnlyTheirGroup) {
  // A NaN key in the third chunk of KV head 1: exactly the query heads of
  // group 1 get NaN rows; the others stay finite.
  std::mt19937 rng(8);
  AttentionShape s{1, 8, 1, 3 * kDecodeChunk, 8, 8, 4, 0};
  AttentionOptions o;
  o.causal = CausalMask::kBottomRight;
  Problem p(s, o, &rng);
  p.k[(1 * s.key_len + 2 * kDecodeChunk + 9) * 8 + 3] =
      std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out, ref;
  ASSERT_EQ(p.Run(Attention, &out, nullptr), Status::kOk);
  ASSERT_EQ(p.Run(AttentionReference, &ref, nullptr), Status::kOk);
  EXPECT_TRUE(NearReference(out, ref));
  for (int64_t h = 0; h < 8; ++h) {
    EXPECT_EQ(std::isnan(out[h * 8]), h / 2 == 1) << "head " << h;
  }
}

TEST_P(GqaTest, ResultsAreBitIdenticalForAnyThreadCount) {
  std::mt19937 rng(41);
  struct Case {
    AttentionShape s;
    bool drop;
  };
  const Case cases[] = {
      {{1, 32, 1, 4096, 32, 32, 8, 4100}, false},  // Llama-like, 16 chunks
      {{2, 12, 1, 1500, 16, 16, 0, 0}, true},      // GPT-2-like, dropout
      {{1, 4, 3, 2000, 8, 8, 1, 0}, false},        // MQA, 3 queries
      {{1, 2, 40, 700, 8, 8, 1, 0}, true},         // prefill-shaped
  };
  for (const Case& c : cases) {
    AttentionOptions o;
    o.causal = CausalMask::kBottomRight;
    o.training = c.drop;
    o.dropout = 0.2f;
    o.seed = 99;
    Problem p(c.s, o, &rng);
    SCOPED_TRACE(Describe(p.shape, p.options));
    std::vector<float> out1;
    SetNumThreads(1);
    ASSERT_EQ(p.Run(Attention, &out1, nullptr), Status::kOk);
    for (int threads : {2, 4}) {
      ASSERT_EQ(SetNumThreads(threads), threads);
      std::vector<float> out;
      ASSERT_EQ(p.Run(Attention, &out, nullptr), Status::kOk);
      EXPECT_EQ(out, out1) << threads << " threads";
    }
    SetNumThreads(1);
  }
}

TEST(GqaStatus, RejectsBadKvShapes) {
  std::vector<float> buf(256, 0.5f);
  const float* p = buf.data();
  float* out = buf.data();
  const AttentionOptions o;
  AttentionShape good{1, 4, 2, 3, 2, 2, 2, 5};
  EXPECT_EQ(Attention(good, o, p, p, p, out, nullptr), Status::kOk);
  AttentionShape s = good;
  s.kv_heads = 3;  // does not divide 4
  EXPECT_EQ(Attention(s, o, p, p, p, out, nullptr), Status::kInvalidShape);
  EXPECT_EQ(AttentionReference(s, o, p, p, p, out, nullptr),
            Status::kInvalidShape);
  s.kv_heads = 8;  // more KV heads than query heads
  EXPECT_EQ(Attention(s, o, p, p, p, out, nullptr), Status::kInvalidShape);
  s.kv_heads = -1;
  EXPECT_EQ(Attention(s, o, p, p, p, out, nullptr), Status::kInvalidShape);
  s = good;
  s.kv_capacity = 2;  // below key_len
  EXPECT_EQ(Attention(s, o, p, p, p, out, nullptr), Status::kInvalidShape);
  s.kv_capacity = -4;
  EXPECT_EQ(Attention(s, o, p, p, p, out, nullptr), Status::kInvalidShape);
  s = good;
  s.kv_capacity = int64_t{1} << 40;  // the cache's bytes do not fit
  s.head_dim = int64_t{1} << 30;
  EXPECT_EQ(Attention(s, o, p, p, p, out, nullptr), Status::kTooLarge);
  EXPECT_EQ(Attention(good, o, p, p, p, out, nullptr), Status::kOk);
}

}  // namespace
}  // namespace causal_attention
