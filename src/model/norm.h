// The models' normalisations and activations on pointers, row-major float32:
// the book's LayerNorm and GELU (ch. 4, GPTModel), Llama's RMSNorm and the
// SiLU-gated feed-forward's SiLU(a) · b (the book's Llama 3.2 bonus), each
// with its backward. SIMD per target (Highway), one pass per row; results
// do not depend on the thread count (there are no threads here: these are
// memory-bound passes beside the GEMMs).
//
// Accuracy against the float64 references below (tests/native/model/
// norm_test.cc): LayerNorm and RMSNorm within 2e-6 · (1 + |ref|) on rows of
// N(0, 1) and of a large common offset; GELU within 1e-6 · (1 + |ref|) and
// SiLU within 2e-6 · (1 + |ref|) (Highway's tanh and exp, a few ulp); the
// backward passes within 1e-5 · (1 + |ref|).

#ifndef CAUSAL_ATTENTION_SRC_MODEL_NORM_H_
#define CAUSAL_ATTENTION_SRC_MODEL_NORM_H_

#include <stdint.h>

#include "src/base/status.h"

namespace causal_attention {

// The book's LayerNorm (unbiased=False variance), per row of x [rows, dim]:
//   y = scale · (x − mean) / sqrt(var + eps) + shift
// mean and rstd = 1 / sqrt(var + eps) [rows] are written when not null (the
// backward needs them). scale and shift [dim]; eps > 0 and finite.
Status LayerNorm(const float* x, int64_t rows, int64_t dim, const float* scale,
                 const float* shift, float eps, float* y, float* mean,
                 float* rstd);

// Its backward from the forward's x, mean and rstd: grad_x = rstd · (g −
// mean(g) − x̂ · mean(g · x̂)) with g = grad_y · scale and x̂ = (x − mean) ·
// rstd (overwritten); grad_scale += Σ_rows grad_y · x̂, grad_shift += Σ_rows
// grad_y (accumulated, as PyTorch's .grad).
Status LayerNormBackward(const float* x, int64_t rows, int64_t dim,
                         const float* scale, const float* mean,
                         const float* rstd, const float* grad_y, float* grad_x,
                         float* grad_scale, float* grad_shift);

// RMSNorm (torch.nn.RMSNorm, Hugging Face's LlamaRMSNorm in float32): y =
// weight · x / sqrt(mean(x²) + eps); rstd [rows] written when not null.
Status RmsNorm(const float* x, int64_t rows, int64_t dim, const float* weight,
               float eps, float* y, float* rstd);

// grad_x = rstd · (g − x̂ · mean(g · x̂)), g = grad_y · weight, x̂ = x · rstd;
// grad_weight += Σ_rows grad_y · x̂.
Status RmsNormBackward(const float* x, int64_t rows, int64_t dim,
                       const float* weight, const float* rstd,
                       const float* grad_y, float* grad_x, float* grad_weight);

// The book's GELU (the tanh approximation): 0.5 · x · (1 + tanh(sqrt(2/π) ·
// (x + 0.044715 · x³))) for n values; y may be x.
Status Gelu(const float* x, int64_t n, float* y);
// grad_x = grad_y · GELU'(x); grad_x may be grad_y.
Status GeluBackward(const float* x, const float* grad_y, int64_t n,
                    float* grad_x);

// SiLU(x) = x · σ(x); y may be x.
Status Silu(const float* x, int64_t n, float* y);
Status SiluBackward(const float* x, const float* grad_y, int64_t n,
                    float* grad_x);

// The gated feed-forward's product, SiLU(a) · b (Llama's act_fn(gate) · up),
// and its backward: grad_a = grad_y · b · SiLU'(a), grad_b = grad_y ·
// SiLU(a). y may alias a or b; grad_a and grad_b may alias a and b.
Status SiluMul(const float* a, const float* b, int64_t n, float* y);
Status SiluMulBackward(const float* a, const float* b, const float* grad_y,
                       int64_t n, float* grad_a, float* grad_b);

// The oracles: scalar, double. Same signatures and rules.
Status LayerNormReference(const float* x, int64_t rows, int64_t dim,
                          const float* scale, const float* shift, float eps,
                          float* y);
Status RmsNormReference(const float* x, int64_t rows, int64_t dim,
                        const float* weight, float eps, float* y);
double GeluReference(double x);
double GeluDerivativeReference(double x);
double SiluReference(double x);
double SiluDerivativeReference(double x);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_MODEL_NORM_H_
