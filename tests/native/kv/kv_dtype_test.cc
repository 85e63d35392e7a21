// bfloat16 and int8 KV caches (kv_storage.h, AttentionShape::kv_dtype):
// the rounding of a stored row (round-to-nearest-even edge cases, int8 zero
// and non-finite rows), Attention on such a cache against the double oracle
// run on the same stored values (AttentionReference dequantises with
// LoadKvRow), on every compiled SIMD target, including GQA, odd head sizes
// (1, 3, 96, 256), decode chunks, weights; the quantisation error against
// float32 keys and values; thread-count determinism; and the refusals.
// Tolerance against the oracle: |a - ref| <= 1e-5 (1 + |ref|), as gqa_test.

#include <stdint.h>
#include <string.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/causal_attention.h"
#include "src/kv/kv_storage.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::Describe;
using testing_util::ExpectStoredBitsForThreads;
using testing_util::NearReference;
using testing_util::Problem;
using testing_util::RunStored;
using testing_util::StoredKv;

constexpr KvDtype kQuantised[] = {KvDtype::kBFloat16, KvDtype::kInt8};

uint16_t Bf16OfBits(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof(x));
  return RoundToBFloat16(x);
}

TEST(KvStorage, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(Bf16OfBits(0x3F800000u), 0x3F80);    // 1.0: exact
  EXPECT_EQ(Bf16OfBits(0x3F808000u), 0x3F80);    // tie, even below
  EXPECT_EQ(Bf16OfBits(0x3F818000u), 0x3F82);    // tie, even above
  EXPECT_EQ(Bf16OfBits(0x3F808001u), 0x3F81);    // just past the tie
  EXPECT_EQ(Bf16OfBits(0x3F807FFFu), 0x3F80);    // just below it
  EXPECT_EQ(Bf16OfBits(0xBF818000u), 0xBF82);    // negative tie
  EXPECT_EQ(Bf16OfBits(0x80000000u), 0x8000);    // -0 keeps its sign
  EXPECT_EQ(Bf16OfBits(0x00008000u), 0x0000);    // subnormal tie to even 0
  EXPECT_EQ(Bf16OfBits(0x00018000u), 0x0002);    // subnormal tie up to even
  EXPECT_EQ(Bf16OfBits(0x7F7FFFFFu), 0x7F80);    // past the largest: +Inf
  EXPECT_EQ(Bf16OfBits(0x7F7F7FFFu), 0x7F7F);    // the largest stays finite
  EXPECT_EQ(Bf16OfBits(0x7F800000u), 0x7F80);    // +Inf
  EXPECT_EQ(Bf16OfBits(0xFF800000u), 0xFF80);    // -Inf
  const uint16_t nan = Bf16OfBits(0x7F800001u);  // a signalling NaN
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);  // still NaN, not Inf
}

TEST(KvStorage, Int8BlocksOf32HaveTheirOwnScale) {
  // 40 values: a block of 32 with an outlier, then one of 8 small ones.
  std::vector<float> row(40, 0.5f);
  row[3] = 12.7f;
  for (size_t i = 32; i < 40; ++i) row[i] = 0.01f * static_cast<float>(i);
  ASSERT_EQ(KvRowBytes(KvDtype::kInt8, 40), 40u + 8u);
  std::vector<uint8_t> bytes(48);
  StoreKvRows(KvDtype::kInt8, row.data(), 1, 40, bytes.data());
  float scales[2];
  memcpy(scales, bytes.data() + 40, sizeof(scales));
  EXPECT_EQ(scales[0], 12.7f / 127.0f);
  EXPECT_EQ(scales[1], 0.39f / 127.0f);
  std::vector<float> got(40);
  LoadKvRow(KvDtype::kInt8, bytes.data(), 40, got.data());
  for (size_t i = 0; i < 40; ++i) {
    EXPECT_LE(std::fabs(got[i] - row[i]), 0.5f * scales[i / 32] * 1.0001f) << i;
  }
}

TEST(KvStorage, Int8RowsScaleByTheirLargestMagnitude) {
  const size_t w = 5;
  const float rows[4][5] = {
      {1.27f, -0.635f, 0.0f, 0.01f, -1.27f},  // scale 0.01
      {0.0f, 0.0f, -0.0f, 0.0f, 0.0f},        // zero row: scale 0
      {1.0f, std::nanf(""), 0.0f, 0.0f, 0.0f},
      {3.0f, -std::numeric_limits<float>::infinity(), 0, 0, 0},
  };
  ASSERT_EQ(KvRowBytes(KvDtype::kInt8, w), w + 4);
  std::vector<uint8_t> bytes(4 * (w + 4));
  StoreKvRows(KvDtype::kInt8, &rows[0][0], 4, w, bytes.data());
  float got[5];
  LoadKvRow(KvDtype::kInt8, bytes.data(), w, got);
  const int8_t* q = reinterpret_cast<const int8_t*>(bytes.data());
  EXPECT_EQ(q[0], 127);
  EXPECT_EQ(q[1], -64);  // -63.5 rounds to the even -64
  EXPECT_EQ(q[2], 0);
  EXPECT_EQ(q[3], 1);
  EXPECT_EQ(q[4], -127);
  const float scale = 1.27f / 127.0f;
  for (size_t i = 0; i < w; ++i) {
    EXPECT_EQ(got[i], static_cast<float>(q[i]) * scale) << i;
    EXPECT_LE(std::fabs(got[i] - rows[0][i]), 0.5f * scale * 1.0001f) << i;
  }
  LoadKvRow(KvDtype::kInt8, bytes.data() + (w + 4), w, got);
  for (size_t i = 0; i < w; ++i) EXPECT_EQ(got[i], 0.0f) << "zero row " << i;
  for (size_t r = 2; r < 4; ++r) {
    LoadKvRow(KvDtype::kInt8, bytes.data() + r * (w + 4), w, got);
    for (size_t i = 0; i < w; ++i) {
      EXPECT_TRUE(std::isnan(got[i])) << "non-finite row " << r << " " << i;
    }
  }
}

class KvDtypeTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(KvDtypeTest);

TEST_P(KvDtypeTest, MatchesTheOracleOnTheStoredValues) {
  std::mt19937 rng(20);
  const int64_t head_dims[] = {1, 3, 8, 17, 96, 128, 256};
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 60; ++iter) {
    AttentionShape s;
    const int64_t groups[] = {1, 2, 4, 8};
    s.kv_heads = pick(1, 2);
    s.heads = s.kv_heads * groups[iter % 4];
    s.batch = pick(1, 2);
    s.query_len = iter % 3 ? pick(1, 3) : pick(1, 40);
    s.key_len = iter % 4 == 0 ? pick(1, 40) : pick(1, 700);
    s.head_dim = head_dims[iter % 7];
    s.value_dim = iter % 2 ? s.head_dim : head_dims[pick(0, 6)];
    s.kv_capacity = iter % 3 == 1 ? s.key_len + pick(0, 50) : 0;
    AttentionOptions o;
    o.causal = static_cast<CausalMask>(pick(0, 2));
    o.mask_strategy = static_cast<MaskStrategy>(iter % 7 == 0);
    if (iter % 5 == 3 && o.mask_strategy == MaskStrategy::kNegInf) {
      o.softcap = 0.5f;
    }
    Problem p(s, o, &rng);
    for (KvDtype dtype : kQuantised) {
      SCOPED_TRACE(Describe(p.shape, p.options) + " dtype " +
                   std::to_string(static_cast<int>(dtype)));
      const StoredKv kv(p, dtype);
      std::vector<float> ref, ref_w, out, w, tiled;
      ASSERT_EQ(RunStored(AttentionReference, p, dtype, kv, &ref, &ref_w),
                Status::kOk);
      ASSERT_EQ(RunStored(Attention, p, dtype, kv, &out, &w), Status::kOk);
      ASSERT_EQ(RunStored(Attention, p, dtype, kv, &tiled, nullptr),
                Status::kOk);
      EXPECT_TRUE(NearReference(out, ref)) << "output, with weights";
      EXPECT_TRUE(NearReference(w, ref_w)) << "weights";
      EXPECT_TRUE(NearReference(tiled, ref)) << "output, no weights";
      if (HasFailure()) return;
    }
  }
}

TEST_P(KvDtypeTest, DecodeChunksAndThreadsAreBitIdentical) {
  // Llama-like groups over several decode chunks; 1, 2 and 3 threads.
  std::mt19937 rng(21);
  for (int64_t tk : {kDecodeChunk - 1, 3 * kDecodeChunk + 7}) {
    AttentionShape s{1, 8, 1, tk, 96, 96, 2, tk + 3};
    AttentionOptions o;
    o.causal = CausalMask::kBottomRight;
    Problem p(s, o, &rng);
    for (KvDtype dtype : kQuantised) {
      ASSERT_NO_FATAL_FAILURE(
          ExpectStoredBitsForThreads(p, dtype, StoredKv(p, dtype)));
    }
  }
}

// The error of a decode step on a stored cache against float64 on the
// unrounded keys and values, as a fraction of the output's largest value:
// the dtypes' bounds (bfloat16 1e-2, int8 3e-2). Data: N(0, 1) keys
// and values with a few outlier channels (x8), as real K caches have.
TEST(KvDtype, QuantisationErrorWithinBound) {
  std::mt19937 rng(22);
  AttentionShape s{1, 8, 1, 1000, 128, 128, 2, 0};
  AttentionOptions o;
  o.causal = CausalMask::kBottomRight;
  Problem p(s, o, &rng);
  std::normal_distribution<float> normal;
  for (float& x : p.q) x = normal(rng);
  for (std::vector<float>* t : {&p.k, &p.v}) {
    for (size_t i = 0; i < t->size(); ++i) {
      (*t)[i] = normal(rng) * (i % 128 < 4 ? 8.0f : 1.0f);
    }
  }
  std::vector<float> exact;
  ASSERT_EQ(p.Run(AttentionReference, &exact, nullptr), Status::kOk);
  double largest = 0.0;
  for (float x : exact) largest = std::fmax(largest, std::fabs(x));
  const double bounds[] = {1e-2, 3e-2};
  for (int i = 0; i < 2; ++i) {
    const StoredKv kv(p, kQuantised[i]);
    std::vector<float> out;
    ASSERT_EQ(RunStored(Attention, p, kQuantised[i], kv, &out, nullptr),
              Status::kOk);
    double worst = 0.0;
    for (size_t j = 0; j < out.size(); ++j) {
      worst = std::fmax(worst, std::fabs(out[j] - exact[j]));
    }
    EXPECT_LE(worst / largest, bounds[i]) << "dtype " << i + 1;
    RecordProperty(i == 0 ? "bfloat16_error" : "int8_error",
                   std::to_string(worst / largest));
    std::printf("decode step, dtype %d: largest error / largest output %.3g\n",
                i + 1, worst / largest);
    EXPECT_GT(worst, 0.0) << "rounding should change something";
  }
}

TEST(KvDtype, Refusals) {
  std::mt19937 rng(23);
  AttentionShape s{1, 2, 1, 4, 8, 8, 1, 0};
  AttentionOptions o;
  Problem p(s, o, &rng);
  std::vector<float> out(p.OutSize());
  s.kv_dtype = static_cast<KvDtype>(3);
  EXPECT_EQ(
      Attention(s, o, p.q.data(), p.k.data(), p.v.data(), out.data(), nullptr),
      Status::kInvalidShape);
  s.kv_dtype = KvDtype::kInt8;
  o.layout = Layout::kBSHD;
  EXPECT_EQ(
      Attention(s, o, p.q.data(), p.k.data(), p.v.data(), out.data(), nullptr),
      Status::kInvalidOption);
  EXPECT_NE(std::string(StatusDetail()).find("kv_dtype"), std::string::npos);
}

TEST(KvDtype, LayerAppendsRoundedRows) {
  // A GQA layer decoding token by token into a bfloat16 / int8 cache: each
  // step stores exactly its own projected keys and values, rounded
  // (StoreKvRows), and its outputs stay within the quantisation bound of the
  // same layer over a float32 cache.
  std::mt19937 rng(24);
  const int64_t d_in = 16, heads = 4, kvh = 2, hd = 40, cap = 20, steps = 12;
  std::vector<float> wq = testing_util::RandomVector(heads * hd * d_in, &rng),
                     wk = testing_util::RandomVector(kvh * hd * d_in, &rng),
                     wv = testing_util::RandomVector(kvh * hd * d_in, &rng),
                     x = testing_util::RandomVector(steps * d_in, &rng);
  const AttentionLayerParams params = testing_util::GqaRopeParams(
      d_in, heads, kvh, hd, wq.data(), wk.data(), wv.data());
  const KvDtype dtypes[] = {KvDtype::kFloat32, KvDtype::kBFloat16,
                            KvDtype::kInt8};
  std::vector<float> y[3];
  for (int di = 0; di < 3; ++di) {
    const KvDtype dtype = dtypes[di];
    const size_t row = KvRowBytes(dtype, hd);
    std::vector<uint8_t> ck(kvh * cap * row), cv(kvh * cap * row);
    y[di].assign(steps * heads * hd, 0.0f);
    for (int64_t t = 0; t < steps; ++t) {
      LayerOptions lo;
      lo.attention.causal = CausalMask::kBottomRight;
      lo.cache = KVCacheView{reinterpret_cast<float*>(ck.data()),
                             reinterpret_cast<float*>(cv.data()), cap, t};
      lo.cache.dtype = dtype;
      std::vector<float> keys(kvh * hd), values(kvh * hd);
      LayerOutputs outs;
      outs.y = y[di].data() + t * heads * hd;
      outs.keys = keys.data();
      outs.values = values.data();
      ASSERT_EQ(AttentionLayerForward(params, lo, x.data() + t * d_in, outs),
                Status::kOk);
      std::vector<uint8_t> want(kvh * row);
      for (const auto& [got, src] :
           {std::make_pair(&ck, &keys), std::make_pair(&cv, &values)}) {
        StoreKvRows(dtype, src->data(), kvh, hd, want.data());
        for (int64_t h = 0; h < kvh; ++h) {
          EXPECT_EQ(0, memcmp(got->data() + (h * cap + t) * row,
                              want.data() + h * row, row))
              << "dtype " << di << " step " << t << " head " << h;
        }
      }
    }
    // Raw scores need float32 keys.
    if (dtype == KvDtype::kFloat32) continue;
    LayerOptions lo;
    lo.cache = KVCacheView{reinterpret_cast<float*>(ck.data()),
                           reinterpret_cast<float*>(cv.data()), cap, 0};
    lo.cache.dtype = dtype;
    std::vector<float> scores(heads * cap), yy(heads * hd);
    LayerOutputs outs;
    outs.y = yy.data();
    outs.scores = scores.data();
    EXPECT_EQ(AttentionLayerForward(params, lo, x.data(), outs),
              Status::kInvalidOption);
  }
  double largest = 0.0, worst[3] = {0.0, 0.0, 0.0};
  for (size_t i = 0; i < y[0].size(); ++i) {
    largest = std::fmax(largest, std::fabs(y[0][i]));
    for (int di = 1; di < 3; ++di) {
      worst[di] = std::fmax(worst[di], std::fabs(y[di][i] - y[0][i]));
    }
  }
  EXPECT_LE(worst[1] / largest, 1e-2);
  EXPECT_LE(worst[2] / largest, 3e-2);
}

}  // namespace
}  // namespace causal_attention
