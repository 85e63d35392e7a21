// The int8 route's kernels as native targets run them (src/kv/int8_rows-inl.h:
// the portable ones) on every compiled target, against the bits of the
// SIMD128 kernels (src/kv/wasm/int8_rows-inl.h) on the same inputs:
// tests/data/int8-rows-golden.json, written by tests/wasm/int8_rows_golden.cc
// on the cases of int8_rows_cases.h (head sizes 16-128, values wider than
// keys, tiles of 1-64 keys, an outlier token, zero rows, a NaN value block
// and a NaN query, which both routes refuse). Every query, scale, score and
// output must be the same bits.

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
#include "src/kv/int8_rows-inl.h"
#include "tests/native/kv/int8_rows_cases.h"

#ifndef CAUSAL_ATTENTION_TESTS_NATIVE_KV_INT8_ROWS_GOLDEN_ONCE_
#define CAUSAL_ATTENTION_TESTS_NATIVE_KV_INT8_ROWS_GOLDEN_ONCE_
namespace causal_attention {
namespace int8_rows_cases {

// The golden file's field `key` of a case's line ("key": "..." or "key":
// true/false), or "" when absent.
inline std::string Field(const std::string& line, const std::string& key) {
  const std::string tag = "\"" + key + "\": ";
  const size_t at = line.find(tag);
  if (at == std::string::npos) return "";
  size_t begin = at + tag.size();
  if (line[begin] == '"') {
    ++begin;
    return line.substr(begin, line.find('"', begin) - begin);
  }
  const size_t end = line.find_first_of(",}", begin);
  return line.substr(begin, end - begin);
}

// The golden results by case name.
inline std::map<std::string, Results> ReadGolden() {
  std::ifstream file(std::string(CA_SOURCE_DIR) +
                     "/tests/data/int8-rows-golden.json");
  std::map<std::string, Results> golden;
  std::string line;
  while (std::getline(file, line)) {
    const std::string name = Field(line, "name");
    if (name.empty()) continue;
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

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace causal_attention {
namespace {
class Int8RowsTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(Int8RowsTest);
HWY_EXPORT_AND_TEST_P(Int8RowsTest, TestSameBitsAsTheSimd128Kernels);
}  // namespace
}  // namespace causal_attention
#endif
