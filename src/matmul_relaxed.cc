// The relaxed builds' GEMM microkernel: GemmMicrokernel of matmul-inl.h
// compiled for wasm SIMD128 + relaxed SIMD, where MulAddRelaxed is one
// f32x4.relaxed_madd (an FMA on x64) instead of f32x4.mul + f32x4.add.
//
// Not part of the main modules: Emscripten 3.1.6's binaryen (108) cannot
// parse the standardized relaxed-SIMD opcodes (its post-link step fails with
// "invalid code after SIMD prefix: 261"), and its clang 14 emits only the
// pre-standard ones, which browsers reject. So CMakeLists.txt compiles this
// file with a newer clang (bookworm's clang 16 or 19) and links it with that
// LLVM's wasm-ld into a side module of one function that imports the main
// module's memory, with no binaryen step; the main module imports the
// function (cmake/relaxed_kernel_library.cmake). It must not use the stack
// or static data: it has no memory of its own.

#include <stddef.h>

#include "hwy/highway.h"
#include "src/matmul-inl.h"

extern "C" __attribute__((export_name("ca_gemm_kernel_relaxed"))) void
ca_gemm_kernel_relaxed(size_t kc, const float* ap, const float* bp, float* c,
                       size_t ldc, int load_c, const float* bias) {
  causal_attention::HWY_NAMESPACE::GemmMicrokernel<
      causal_attention::HWY_NAMESPACE::kGemmRows>(kc, ap, bp, c, ldc,
                                                   load_c != 0, bias);
}
