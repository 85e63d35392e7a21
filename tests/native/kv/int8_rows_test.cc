// The int8 route's kernels as native targets run them (src/kv/int8_rows-inl.h:
// the portable ones) on every compiled target, against the bits of the
// SIMD128 kernels (src/kv/wasm/int8_rows-inl.h) on the same inputs:
// tests/data/int8-rows-golden.json, written by tests/wasm/int8_rows_golden.cc
// on the cases of int8_rows_cases.h (head sizes 16-128, values wider than
// keys, tiles of 1-64 keys, an outlier token, zero rows, a NaN value block
// and a NaN query, which both routes refuse). Every query, scale, score and
// output must be the same bits.

#include <stdlib.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/native/kv/int8_rows_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "src/causal_attention.h"
#include "src/kv/int8_rows-inl.h"
#include "tests/native/golden_file.h"
#include "tests/native/kv/int8_rows_cases.h"

#ifndef CAUSAL_ATTENTION_TESTS_NATIVE_KV_INT8_ROWS_GOLDEN_ONCE_
#define CAUSAL_ATTENTION_TESTS_NATIVE_KV_INT8_ROWS_GOLDEN_ONCE_
namespace causal_attention {
namespace int8_rows_cases {

// The golden results by case name.
inline std::map<std::string, Results> ReadGolden() {
  std::map<std::string, Results> golden;
  for (const std::string& line : GoldenLines("int8-rows-golden.json")) {
    const std::string name = Field(line, "name");
    Results& r = golden[name];
    r.quantized = Field(line, "quantized") == "true";
    r.values_done = Field(line, "values_done") == "true";
    r.q16 = Field(line, "q16");
    r.qscale = Field(line, "qscale");
    r.scores = Field(line, "scores");
    r.out = Field(line, "out");
  }
  return golden;
}

// The first differing value's index in two hex strings of `digits` per
// value, or -1.
inline long FirstDifference(const std::string& a, const std::string& b,
                            size_t digits) {
  if (a.size() != b.size()) return -2;
  for (size_t i = 0; i < a.size(); i += digits) {
    if (a.compare(i, digits, b, i, digits) != 0) {
      return static_cast<long>(i / digits);
    }
  }
  return -1;
}

// A decode step of tests/data/int8-decode-golden.json (written through the
// public API by tests/node/int8-decode-golden.test.mjs): the shape, the
// kind of inputs and the wasm route's output bits.
struct DecodeCase {
  std::string name, kind;
  int64_t heads, kv_heads, head_dim, value_dim, keys;
  std::vector<float> out;
};

inline std::vector<DecodeCase> ReadDecodeGolden() {
  std::vector<DecodeCase> cases;
  for (const std::string& line : GoldenLines("int8-decode-golden.json")) {
    DecodeCase c;
    c.name = Field(line, "name");
    c.kind = Field(line, "kind");
    c.heads = atoll(Field(line, "heads").c_str());
    c.kv_heads = atoll(Field(line, "kvHeads").c_str());
    c.head_dim = atoll(Field(line, "headDim").c_str());
    c.value_dim = atoll(Field(line, "valueDim").c_str());
    c.keys = atoll(Field(line, "keys").c_str());
    c.out = HexFloats(Field(line, "out"));
    cases.push_back(c);
  }
  return cases;
}

// The case's q [H, D], k [KV, L, D], v [KV, L, Dv] as the node test makes
// them (case number `index`): q = 2u, k = u, v = u in that order, then the
// kind's change.
inline void DecodeInputs(const DecodeCase& c, size_t index,
                         std::vector<float>* q, std::vector<float>* k,
                         std::vector<float>* v) {
  Lcg u(Seed(index));
  q->resize(c.heads * c.head_dim);
  k->resize(c.kv_heads * c.keys * c.head_dim);
  v->resize(c.kv_heads * c.keys * c.value_dim);
  for (float& x : *q) x = 2.0f * u.Uniform();
  for (float& x : *k) x = u.Uniform();
  for (float& x : *v) x = u.Uniform();
  const int64_t t = c.keys / 2, dv = c.value_dim;
  if (c.kind == "outlier" || c.kind == "zeroQueryOutlier") {
    for (int64_t h = 0; h < c.kv_heads; ++h) {
      for (int64_t x = 0; x < dv; ++x)
        (*v)[(h * c.keys + t) * dv + x] *= 200.0f;
    }
  }
  if (c.kind == "zeroQuery" || c.kind == "zeroQueryOutlier") {
    for (float& x : *q) x = 0.0f;
  }
  if (c.kind == "nanValue") {
    (*v)[t * dv + dv - 1] = std::numeric_limits<float>::quiet_NaN();
  }
  if (c.kind == "nanQuery") {
    (*q)[c.head_dim + 5] = std::numeric_limits<float>::quiet_NaN();
  }
}

}  // namespace int8_rows_cases
}  // namespace causal_attention
#endif

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

namespace rc = int8_rows_cases;

void TestSameBitsAsTheSimd128Kernels() {
  const std::map<std::string, rc::Results> golden = rc::ReadGolden();
  const std::vector<rc::Case> cases = rc::Cases();
  ASSERT_EQ(golden.size(), cases.size()) << "tests/data/int8-rows-golden.json";
  size_t refused_queries = 0, refused_values = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const rc::Case& cs = cases[i];
    const auto it = golden.find(cs.name);
    ASSERT_NE(it, golden.end()) << cs.name;
    const rc::Results& want = it->second;
    const rc::Inputs in = rc::MakeInputs(cs, rc::Seed(i));
    // Lambdas: the kernels are inlined into this target's code.
    const rc::Results got = rc::RunCase(
        cs, in,
        [](const float* q, size_t ldq, size_t rows, size_t d, int16_t* out,
           float* scale) {
          return QuantizeQueryRows(q, ldq, rows, d, out, scale);
        },
        [](const int16_t* q, const float* s, const uint8_t* k, size_t row_bytes,
           size_t nb, size_t d, float* c, size_t ldc) {
          DotFourRowsInt8({q, s}, k, row_bytes, nb, d, c, ldc);
        },
        [](const float* p, size_t ldp, size_t n, const uint8_t* v,
           size_t row_bytes, size_t dv, void* work, float* c, size_t ldc) {
          return ValuesFourRowsInt8(p, ldp, n, v, row_bytes, dv, work, c, ldc);
        });
    const std::string at = cs.name + " on " + hwy::TargetName(HWY_TARGET);
    EXPECT_EQ(got.quantized, want.quantized) << at;
    EXPECT_EQ(rc::FirstDifference(got.q16, want.q16, 4), -1) << at << " q16";
    EXPECT_EQ(rc::FirstDifference(got.qscale, want.qscale, 8), -1)
        << at << " qscale";
    EXPECT_EQ(rc::FirstDifference(got.scores, want.scores, 8), -1)
        << at << " scores";
    EXPECT_EQ(got.values_done, want.values_done) << at;
    EXPECT_EQ(rc::FirstDifference(got.out, want.out, 8), -1) << at << " out";
    refused_queries += !got.quantized;
    refused_values += !got.values_done;
  }
  // The refusals are the NaN cases' (one query case, two value cases).
  EXPECT_EQ(refused_queries, 1u);
  EXPECT_EQ(refused_values, 2u);
}

// The few-row kernels (MHA's lone row, a group's remainder rows) give each
// row the bits of the four-row kernels (which the golden file holds) on
// every target; tests/wasm/int8_rows_golden.cc checks the SIMD128 ones.
void TestFewRowsAsInGroupsOfFour() {
  const std::vector<rc::Case> cases = rc::Cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const rc::Case& cs = cases[i];
    const rc::Inputs in = rc::MakeInputs(cs, rc::Seed(i));
    const std::string differ = rc::FewRowsDiffer(
        cs, in,
        [](const float* q, size_t ldq, size_t rows, size_t d, int16_t* out,
           float* scale) {
          return QuantizeQueryRows(q, ldq, rows, d, out, scale);
        },
        [](const int16_t* q, const float* s, const uint8_t* k, size_t row_bytes,
           size_t nb, size_t d, float* c, size_t ldc) {
          DotFourRowsInt8({q, s}, k, row_bytes, nb, d, c, ldc);
        },
        [](const float* p, size_t ldp, size_t n, const uint8_t* v,
           size_t row_bytes, size_t dv, void* work, float* c, size_t ldc) {
          return ValuesFourRowsInt8(p, ldp, n, v, row_bytes, dv, work, c, ldc);
        },
        [](const int16_t* q, const float* s, size_t rows, const uint8_t* k,
           size_t row_bytes, size_t nb, size_t d, float* c, size_t ldc) {
          DotFewRowsInt8({q, s}, rows, k, row_bytes, nb, d, c, ldc);
        },
        [](const float* p, size_t ldp, size_t rows, size_t n, const uint8_t* v,
           size_t row_bytes, size_t dv, void* work, float* c, size_t ldc) {
          return ValuesFewRowsInt8(p, ldp, rows, n, v, row_bytes, dv, work, c,
                                   ldc);
        });
    EXPECT_EQ(differ, "") << cs.name << " on " << hwy::TargetName(HWY_TARGET);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {

namespace rc = int8_rows_cases;

// The decode steps of tests/data/int8-decode-golden.json through Attention
// on each compiled target (int8 cache, one query row per head, the cache's
// rows bottom-right). With zero queries every weight is 1 on every target
// (exp(0), sums of ones), so the output is the integer route's P·V alone:
// the wasm route's bits on the vector targets, which run the portable
// kernels. Elsewhere the float softmax differs by target (FMA, lanes per
// sum): within 1e-5 (1 + |x|) of the wasm output. NaN exactly where it has
// NaN on every target; HWY_SCALAR runs the float32 tile route, another
// rounding (kv_dtype_test.cc holds it to the oracle): NaN positions only.
class Int8DecodeTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(Int8DecodeTest);

TEST_P(Int8DecodeTest, MatchesTheWasmRouteThroughTheApi) {
  const std::vector<rc::DecodeCase> cases = rc::ReadDecodeGolden();
  ASSERT_GE(cases.size(), 10u) << "tests/data/int8-decode-golden.json";
  const bool vector_target = GetParam() != HWY_SCALAR;
  size_t exact_cases = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const rc::DecodeCase& c = cases[i];
    std::vector<float> q, k, v;
    rc::DecodeInputs(c, i, &q, &k, &v);
    AttentionShape s;
    s.heads = c.heads;
    s.kv_heads = c.kv_heads;
    s.query_len = 1;
    s.key_len = c.keys;
    s.head_dim = c.head_dim;
    s.value_dim = c.value_dim;
    s.kv_dtype = KvDtype::kInt8;
    std::vector<uint8_t> ks(k.size() / c.head_dim *
                            KvRowBytes(KvDtype::kInt8, c.head_dim));
    std::vector<uint8_t> vs(v.size() / c.value_dim *
                            KvRowBytes(KvDtype::kInt8, c.value_dim));
    StoreKvRows(KvDtype::kInt8, k.data(), c.kv_heads * c.keys, c.head_dim,
                ks.data());
    StoreKvRows(KvDtype::kInt8, v.data(), c.kv_heads * c.keys, c.value_dim,
                vs.data());
    AttentionOptions o;
    o.causal = CausalMask::kBottomRight;
    std::vector<float> out(c.heads * c.value_dim);
    ASSERT_EQ(
        Attention(s, o, q.data(), reinterpret_cast<const float*>(ks.data()),
                  reinterpret_cast<const float*>(vs.data()), out.data(),
                  nullptr),
        Status::kOk)
        << c.name;
    ASSERT_EQ(out.size(), c.out.size()) << c.name;
    const bool exact = vector_target && c.kind.rfind("zeroQuery", 0) == 0;
    exact_cases += exact;
    for (size_t j = 0; j < out.size(); ++j) {
      const float want = c.out[j];
      if (std::isnan(want) || exact) {
        ASSERT_EQ(std::isnan(out[j]), std::isnan(want)) << c.name << " " << j;
        if (!std::isnan(want)) {
          ASSERT_EQ(memcmp(&out[j], &want, sizeof(want)), 0)
              << c.name << " " << j << ": " << out[j] << " vs " << want;
        }
      } else if (vector_target) {
        ASSERT_LE(std::fabs(out[j] - want), 1e-5f * (1.0f + std::fabs(want)))
            << c.name << " " << j;
      } else {
        ASSERT_TRUE(std::isfinite(out[j])) << c.name << " " << j;
      }
    }
  }
  if (vector_target) EXPECT_EQ(exact_cases, 7u);
}
class Int8RowsTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(Int8RowsTest);
HWY_EXPORT_AND_TEST_P(Int8RowsTest, TestSameBitsAsTheSimd128Kernels);
HWY_EXPORT_AND_TEST_P(Int8RowsTest, TestFewRowsAsInGroupsOfFour);
}  // namespace
}  // namespace causal_attention
#endif
