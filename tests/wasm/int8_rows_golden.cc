// Writes tests/data/int8-rows-golden.json: the int8 route's SIMD128 kernels
// (src/kv/wasm/int8_rows-inl.h) on the cases of
// tests/native/kv/int8_rows_cases.h, as hex bits, for the native test that
// holds the portable kernels (src/kv/int8_rows-inl.h) to them on every
// target (tests/native/kv/int8_rows_test.cc). It runs the portable kernels
// here too and exits 1 when any result differs from the SIMD128 ones, or
// when the one-row kernels (int8_one_row-inl.h) differ from the four-row
// kernels' rows.
// npm test runs it (tests/wasm/run.mjs, which compares its output with the
// committed file). By hand, built in build/wasm (not part of the package):
//   cmake --build build/wasm --target int8_rows_golden
//   node --no-experimental-fetch build/wasm/tests/int8_rows_golden.js \
//     > tests/data/int8-rows-golden.json
// (--no-experimental-fetch: emcc 3.1.6's glue would fetch() the .wasm path.)

#include <stdio.h>

#include "hwy/highway.h"
#include "src/kv/int8_rows-inl.h"
#include "tests/native/kv/int8_rows_cases.h"

#if HWY_TARGET != HWY_WASM
#error "int8_rows_golden is built for wasm SIMD128 (-msimd128)"
#endif

namespace causal_attention {
namespace HWY_NAMESPACE {
namespace {

namespace rc = int8_rows_cases;

// The quantisers at their default limit (32767): a function pointer would
// not carry the default argument.
bool Quantize(const float* q, size_t ldq, size_t rows, size_t d, int16_t* out,
              float* scale) {
  return QuantizeQueryRows(q, ldq, rows, d, out, scale);
}
bool QuantizeRef(const float* q, size_t ldq, size_t rows, size_t d,
                 int16_t* out, float* scale) {
  return QuantizeQueryRowsRef(q, ldq, rows, d, out, scale);
}

rc::Results RunSimd(const rc::Case& cs, const rc::Inputs& in) {
  return rc::RunCase(
      cs, in, Quantize,
      [](const int16_t* q, const float* s, const uint8_t* k, size_t row_bytes,
         size_t nb, size_t d, float* c, size_t ldc) {
        DotFourRowsInt8({q, s}, k, row_bytes, nb, d, c, ldc);
      },
      ValuesFourRowsInt8);
}

rc::Results RunRef(const rc::Case& cs, const rc::Inputs& in) {
  return rc::RunCase(
      cs, in, QuantizeRef,
      [](const int16_t* q, const float* s, const uint8_t* k, size_t row_bytes,
         size_t nb, size_t d, float* c, size_t ldc) {
        DotFourRowsInt8Ref({q, s}, k, row_bytes, nb, d, c, ldc);
      },
      ValuesFourRowsInt8Ref);
}

// The one-row kernels (int8_one_row-inl.h) against the four-row ones' rows.
std::string FewRowsDiffer(const rc::Case& cs, const rc::Inputs& in) {
  return rc::FewRowsDiffer(
      cs, in, Quantize,
      [](const int16_t* q, const float* s, const uint8_t* k, size_t row_bytes,
         size_t nb, size_t d, float* c, size_t ldc) {
        DotFourRowsInt8({q, s}, k, row_bytes, nb, d, c, ldc);
      },
      ValuesFourRowsInt8,
      [](const int16_t* q, const float* s, size_t rows, const uint8_t* k,
         size_t row_bytes, size_t nb, size_t d, float* c, size_t ldc) {
        DotFewRowsInt8({q, s}, rows, k, row_bytes, nb, d, c, ldc);
      },
      ValuesFewRowsInt8);
}

int Main() {
  const std::vector<rc::Case> cases = rc::Cases();
  int differ = 0;
  printf("{\"writer\": \"tests/wasm/int8_rows_golden.cc\",\n \"cases\": [\n");
  for (size_t i = 0; i < cases.size(); ++i) {
    const rc::Case& cs = cases[i];
    const rc::Inputs in = rc::MakeInputs(cs, rc::Seed(i));
    const rc::Results simd = RunSimd(cs, in), ref = RunRef(cs, in);
    if (simd.quantized != ref.quantized || simd.q16 != ref.q16 ||
        simd.qscale != ref.qscale || simd.scores != ref.scores ||
        simd.values_done != ref.values_done || simd.out != ref.out) {
      fprintf(stderr, "%s: the portable kernels differ\n", cs.name.c_str());
      ++differ;
    }
    const std::string few = FewRowsDiffer(cs, in);
    if (!few.empty()) {
      fprintf(stderr, "%s: the one-row kernels differ: %s\n", cs.name.c_str(),
              few.c_str());
      ++differ;
    }
    printf(
        "  {\"name\": \"%s\", \"quantized\": %s, \"q16\": \"%s\", "
        "\"qscale\": \"%s\", \"scores\": \"%s\", \"values_done\": %s, "
        "\"out\": \"%s\"}%s\n",
        cs.name.c_str(), simd.quantized ? "true" : "false", simd.q16.c_str(),
        simd.qscale.c_str(), simd.scores.c_str(),
        simd.values_done ? "true" : "false", simd.out.c_str(),
        i + 1 < cases.size() ? "," : "");
  }
  printf("]}\n");
  fprintf(stderr, "%zu cases, %d with differences\n", cases.size(), differ);
  return differ == 0 ? 0 : 1;
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention

int main() { return causal_attention::HWY_NAMESPACE::Main(); }
