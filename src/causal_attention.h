// causal-attention: scaled dot-product attention with a causal mask, the
// core of "Build a Large Language Model (From Scratch)", chapter 3.
//
// Pure C++17 (no Emscripten): the same code is built natively (x86 runtime
// dispatch over SSSE3/SSE4/AVX2/AVX-512) and for WebAssembly (SIMD128).
// This header gathers the public API; each part has its own header, in
// dependency order:
//   status.h       Status codes (errors are values, never exceptions)
//   attention.h    shapes, options, Attention and its scalar oracle
//   attention_backward.h  its gradients (FlashAttention-2 style) and oracle
//   matmul.h       the general GEMM under Linear and the layer
//   linear.h       Linear (nn.Linear on pointers), its backward, oracles
//   rope.h         rotary position embedding (the Llama chapter)
//   layer.h        one attention layer of the book's modules
//   thread_pool.h  the thread pool and SetNumThreads / NumThreads

#ifndef CAUSAL_ATTENTION_SRC_CAUSAL_ATTENTION_H_
#define CAUSAL_ATTENTION_SRC_CAUSAL_ATTENTION_H_

#include "src/attention/attention.h"           // IWYU pragma: export
#include "src/attention/attention_backward.h"  // IWYU pragma: export
#include "src/model/layer.h"               // IWYU pragma: export
#include "src/gemm/linear.h"              // IWYU pragma: export
#include "src/gemm/matmul.h"              // IWYU pragma: export
#include "src/model/rope.h"                // IWYU pragma: export
#include "src/base/status.h"              // IWYU pragma: export
#include "src/base/thread_pool.h"         // IWYU pragma: export

#endif  // CAUSAL_ATTENTION_SRC_CAUSAL_ATTENTION_H_
