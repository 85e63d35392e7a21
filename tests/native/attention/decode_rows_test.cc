// The decode route for any number of query rows per KV head (MHA's lone
// row, GQA groups of 2, 3, 4, 8, ...: decode_route-inl.h's
// DecodeGroupBlock, with its pre-read of a chunk's rows) on every compiled
// SIMD target, against the double oracle on the stored values
// (AttentionReference dequantises a bfloat16 or int8 cache with
// LoadKvRow): head sizes 3 to 128, 1 to 1000 keys (several decode
// chunks), float32, bfloat16 and int8 caches, with the rules the route
// must honour or hand back to the tile loop (windows, per-sequence key
// lengths of a ragged batch, softcap, sinks, a cache's spare capacity,
// both layouts); and bit-identical outputs for 1, 2 and 3 threads.
// Tolerance: |a - ref| <= 1e-5 (1 + |ref|) elementwise, as gqa_test (1e-4
// where an int8 cache's rows take the integer route, see below).

#include <stdint.h>

#include <random>
#include <string>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "src/causal_attention.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace {

using testing_util::Describe;
using testing_util::ExpectStoredBitsForThreads;
using testing_util::NearReference;
using testing_util::Problem;
using testing_util::RandomVector;
using testing_util::RunStored;
using testing_util::StoredKv;

constexpr KvDtype kDtypes[] = {KvDtype::kFloat32, KvDtype::kBFloat16,
                               KvDtype::kInt8};

// The options of case `rule` (pointers into the vectors given).
enum Rule {
  kPlain,
  kNoCausal,
  kWindow,
  kKeyLengths,
  kSoftcap,
  kSinks,
  kBshd,
  kRules
};

AttentionOptions OptionsOf(int rule, const AttentionShape& s,
                           std::vector<int32_t>* lengths,
                           std::vector<float>* sinks, std::mt19937* rng) {
  AttentionOptions o;
  o.causal = CausalMask::kBottomRight;
  switch (rule) {
    case kNoCausal:
      o.causal = CausalMask::kNone;
      break;
    case kWindow:  // the newest 40 keys (all of them below 40)
      o.window_left = 39;
      break;
    case kKeyLengths:  // a ragged batch: the second sequence shorter
      lengths->assign(static_cast<size_t>(s.batch),
                      static_cast<int32_t>(s.key_len));
      (*lengths)[1] = static_cast<int32_t>(s.key_len / 2 + 1);
      o.key_lengths = lengths->data();
      break;
    case kSoftcap:
      o.softcap = 1.5f;
      break;
    case kSinks:
      *sinks = RandomVector(static_cast<size_t>(s.heads), rng, -2.0f, 2.0f);
      o.sinks = sinks->data();
      break;
    case kBshd:
      o.layout = Layout::kBSHD;
      break;
  }
  return o;
}

class DecodeRowsTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(DecodeRowsTest);

TEST_P(DecodeRowsTest, MatchesTheOracle) {
  std::mt19937 rng(34);
  const int64_t head_dims[] = {3, 24, 40, 64, 80, 128};
  const int64_t key_lens[] = {1, 2, 31, 33, 1000};
  const int64_t groups[] = {1, 2, 3, 4, 8, 5, 6, 7};
  int iter = 0;
  for (int64_t d : head_dims) {
    for (int64_t tk : key_lens) {
      for (int rule = 0; rule < kRules; ++rule, ++iter) {
        const int64_t group = groups[iter % 8];
        AttentionShape s;
        s.batch = 2;
        s.kv_heads = 2;
        s.heads = 2 * group;
        s.query_len = 1;
        s.key_len = tk;
        s.head_dim = d;
        s.value_dim = iter % 4 == 3 ? 16 : d;
        s.kv_capacity = iter % 3 == 1 ? tk + 5 : 0;
        std::vector<int32_t> lengths;
        std::vector<float> sinks;
        const AttentionOptions o = OptionsOf(rule, s, &lengths, &sinks, &rng);
        Problem p(s, o, &rng);
        for (KvDtype dtype : kDtypes) {
          // kBSHD takes float32 k and v only (validate.cc refuses others).
          if (rule == kBshd && dtype != KvDtype::kFloat32) continue;
          SCOPED_TRACE(Describe(p.shape, p.options) + " rule " +
                       std::to_string(rule) + " dtype " +
                       std::to_string(static_cast<int>(dtype)));
          const StoredKv kv(p, dtype);
          std::vector<float> ref, out;
          ASSERT_EQ(RunStored(AttentionReference, p, dtype, kv, &ref, nullptr),
                    Status::kOk);
          ASSERT_EQ(RunStored(Attention, p, dtype, kv, &out, nullptr),
                    Status::kOk);
          // An int8 cache's rows of one KV head (up to 8: four at a time,
          // the rest one at a time) with head sizes that are multiples of 16
          // take the integer route (int8_rows-inl.h, int8_one_row-inl.h),
          // which rounds each query row to int16 (a relative error up to
          // 2^-16 per element, summed over D in the score): 1e-4 there.
          const bool integer = dtype == KvDtype::kInt8 && d % 16 == 0 &&
                               s.value_dim % 16 == 0;
          EXPECT_TRUE(NearReference(out, ref, integer ? 1e-4 : 1e-5));
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST_P(DecodeRowsTest, ThreadsAreBitIdentical) {
  // A GPT-2-small layer's step (12 heads, each its own KV head, D 64) and
  // groups of 3 and 6 (four rows and two) over several decode chunks, a
  // ragged batch among them: on an int8 cache the integer route.
  std::mt19937 rng(35);
  for (int64_t group : {1, 3, 6}) {
    for (int rule : {kPlain, kKeyLengths, kSinks}) {
      const int64_t tk = 3 * kDecodeChunk + 7;
      AttentionShape s{2, 12, 1, tk, 64, 64, 12 / group, tk + 3};
      std::vector<int32_t> lengths;
      std::vector<float> sinks;
      const AttentionOptions o = OptionsOf(rule, s, &lengths, &sinks, &rng);
      Problem p(s, o, &rng);
      for (KvDtype dtype : kDtypes) {
        SCOPED_TRACE(Describe(p.shape, p.options) + " dtype " +
                     std::to_string(static_cast<int>(dtype)));
        ASSERT_NO_FATAL_FAILURE(
            ExpectStoredBitsForThreads(p, dtype, StoredKv(p, dtype)));
      }
    }
  }
}

}  // namespace
}  // namespace causal_attention
