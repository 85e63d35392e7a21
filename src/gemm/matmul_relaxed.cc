// The relaxed-SIMD kernels of the wasm builds, as a side module: the GEMM
// microkernel (GemmMicrokernel of matmul-inl.h) and the attention tiles'
// products (DotTile of dot-inl.h, MatMulAddRagged and MatMulAddRaggedBegin
// of matmul-inl.h) compiled for SIMD128 + relaxed SIMD, where MulAddRelaxed
// is one f32x4.relaxed_madd (an FMA on x64) instead of f32x4.mul +
// f32x4.add. The glue instantiates it where the engine validates relaxed
// SIMD (cmake/gemm_side_library.cmake); MatMul and the attention kernels
// (tile_products-inl.h) then call it instead of their own SIMD128 kernels.
//
// Why a side module: Emscripten 3.1.6 cannot build relaxed SIMD into the
// main module. Its clang 14 emits only the pre-standard opcodes, which
// browsers reject; with bookworm's clang 19 instead (EM_LLVM_ADD_VERSION=19)
// its post-link step, binaryen 108's wasm-emscripten-finalize, fails on the
// standard ones ("invalid code after SIMD prefix: 261"). So CMakeLists.txt
// compiles this file with that newer clang and links it with its wasm-ld
// (no binaryen) into a module of one function that imports the main
// module's memory; the main module imports the function. It must not use
// the stack or static data: it has no memory of its own.
//
// The SIMD128 kernel stays in the main module: compiled by clang 14 it runs
// in Chromium's V8 at least as fast as this one's SIMD128 form would (same
// source; docs/performance.md).

#include <stddef.h>

#include "hwy/highway.h"
#include "src/simd/dot-inl.h"
#include "src/gemm/few_rows-inl.h"
#include "src/gemm/matmul-inl.h"

namespace hn_ca = causal_attention::HWY_NAMESPACE;

extern "C" __attribute__((export_name("ca_gemm_kernel_relaxed"))) void
ca_gemm_kernel_relaxed(size_t kc, const float* ap, const float* bp, float* c,
                       size_t ldc, int load_c, const float* bias) {
  hn_ca::GemmMicrokernel<hn_ca::kGemmRows>(kc, ap, bp, c, ldc, load_c != 0,
                                           bias);
}

extern "C" __attribute__((export_name("ca_dot_tile_relaxed"))) void
ca_dot_tile_relaxed(const float* a, size_t lda, size_t rows, const float* b,
                    size_t ldb, size_t nb, size_t depth, const float* zero_row,
                    float* c, size_t ldc) {
  hn_ca::DotTile(a, lda, rows, b, ldb, nb, depth, zero_row, c, ldc);
}

extern "C" __attribute__((export_name("ca_add_ragged_relaxed"))) void
ca_add_ragged_relaxed(const float* a, size_t lda, size_t rows,
                      const size_t* ends, const float* b, size_t ldb,
                      size_t ncols, float* c, size_t ldc) {
  hn_ca::MatMulAddRagged(a, lda, rows, ends, b, ldb, ncols, c, ldc);
}

extern "C" __attribute__((export_name("ca_lane_scores_relaxed"))) void
ca_lane_scores_relaxed(size_t kn, size_t depth, const float* k, size_t ldk,
                       const float* qt, size_t lanes, float* s,
                       size_t stride) {
  hn_ca::LaneScores(kn, depth, k, ldk, qt, lanes, s, stride);
}

extern "C" __attribute__((export_name("ca_lane_values_relaxed"))) void
ca_lane_values_relaxed(const float* pt, size_t rows, const size_t* ends,
                       const float* v, size_t ldv, size_t ncols, float* o,
                       size_t ldo, size_t stride) {
  hn_ca::LaneValuesRagged(pt, rows, ends, v, ldv, ncols, o, ldo, stride);
}

extern "C" __attribute__((export_name("ca_add_ragged_begin_relaxed"))) void
ca_add_ragged_begin_relaxed(const float* a, size_t lda, size_t rows,
                            const size_t* begins, size_t end, const float* b,
                            size_t ldb, size_t ncols, float* c, size_t ldc) {
  hn_ca::MatMulAddRaggedBegin(a, lda, rows, begins, end, b, ldb, ncols, c,
                              ldc);
}

// The decode step's kernels for a GQA group of four query heads
// (few_rows-inl.h): Q·Kᵀ and P·V of a key tile.
extern "C" __attribute__((export_name("ca_decode_dot4_relaxed"))) void
ca_decode_dot4_relaxed(const float* a, size_t lda, const float* b, size_t ldb,
                       size_t nb, size_t depth, const float* zero_row, float* c,
                       size_t ldc) {
  hn_ca::DotFourRows(a, lda, b, ldb, nb, depth, zero_row, c, ldc);
}

extern "C" __attribute__((export_name("ca_decode_dot4_bf16_relaxed"))) void
ca_decode_dot4_bf16_relaxed(const float* a, size_t lda, const uint8_t* b,
                            size_t row_bytes, size_t nb, size_t depth,
                            const void* zero_row, float* c, size_t ldc) {
  causal_attention::HWY_NAMESPACE::DotFourRowsBf16(a, lda, b, row_bytes, nb,
                                                   depth, zero_row, c, ldc);
}

extern "C" __attribute__((export_name("ca_decode_pv4_relaxed"))) void
ca_decode_pv4_relaxed(const float* a, size_t lda, size_t depth, const float* b,
                      size_t ldb, size_t ncols, float* c, size_t ldc) {
  causal_attention::HWY_NAMESPACE::MatMulAddFourRows(a, lda, depth, b, ldb,
                                                     ncols, c, ldc);
}
