// torch.optim.AdamW's update of many tensors in one call (bindings/nn/
// optim.mjs's AdamW.step runs it): the per-element rule of PyTorch's
// single-tensor loop, each operation rounded to float32 where PyTorch's
// float tensors round it, so the results are those of the JS loop it
// replaced, bit for bit (tests/node/training.test.mjs checks them against
// PyTorch's numbers).
#ifndef CAUSAL_ATTENTION_SRC_OPTIM_H_
#define CAUSAL_ATTENTION_SRC_OPTIM_H_

#include <stddef.h>

namespace causal_attention {

// The hyperparameters of one step (float32, as PyTorch rounds them where
// they meet a tensor) and, per tensor, what its own step count gives.
struct AdamWStep {
  float decay;            // 1 - lr · weight_decay
  float one_minus_beta1;  // 1 - β1
  float beta2;            // β2
  float one_minus_beta2;  // 1 - β2
  float eps;
};

// One tensor of a step: n values of the parameter p, its gradient g and
// AdamW's moments m and v, with minus_step = -lr / (1 - β1^t) and
// correction2 = sqrt(1 - β2^t) for the tensor's own step count t.
struct AdamWTensor {
  float* p;
  const float* g;
  float* m;
  float* v;
  size_t n;
  float minus_step;
  float correction2;
};

// Per element of each tensor:
//   p = p·decay
//   m = m + (1 - β1)·(g - m)
//   v = β2·v + (1 - β2)·g·g
//   p = p + minus_step · m / (sqrt(v) / correction2 + eps)
void AdamWUpdate(const AdamWStep& step, const AdamWTensor* tensors,
                 size_t count);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_OPTIM_H_
