// The backward pass of scaled dot-product attention (attention.h): the
// gradients of a loss with respect to q, k and v, given the gradient of the
// output, for training.
//
// Layouts (row-major float32, no padding), with kvH = KvHeads(shape):
//   grad_out, out   [batch, heads, query_len, value_dim]
//   q, grad_q       [batch, heads, query_len, head_dim]
//   k, grad_k       [batch, kvH,   key_len,   head_dim]
//   v, grad_v       [batch, kvH,   key_len,   value_dim]
//   log_sum_exp     [batch, heads, query_len]
// out and log_sum_exp are what AttentionWithLogSumExp returned for the same
// shape, options, q, k and v: the weights are recomputed from them, never
// stored (argument order as PyTorch's
// _scaled_dot_product_flash_attention_backward).

#ifndef CAUSAL_ATTENTION_SRC_ATTENTION_BACKWARD_H_
#define CAUSAL_ATTENTION_SRC_ATTENTION_BACKWARD_H_

#include "src/attention/attention.h"
#include "src/base/status.h"

namespace causal_attention {

// With S = scale · Q·Kᵀ, P = exp(min(S - L, 0)) on the visible (query, key)
// pairs (the softmax weights; the min is the identity for a consistent L),
// M the dropout mask of the forward (keep_scale where kept, 0 where dropped;
// regenerated from options.seed, only when options.training), and
// D_i = dO_i · O_i:
//   grad_v = (P∘M)ᵀ · dO
//   dP     = (dO · Vᵀ)∘M
//   dS     = P∘(dP - D)
//   grad_q = scale · dS · K,   grad_k = scale · dSᵀ · Q
// Only visible pairs contribute (masked key tiles are skipped). Query heads
// that share a key/value head (kv_heads < heads: head h uses kv head
// h / (heads / kv_heads)) have their grad_k / grad_v contributions summed.
// Both mask strategies have the same gradient (they compute the same
// weights); options.mask_strategy is validated and otherwise ignored.
// Rows that see no key get zero grad_q; keys that no query sees get zero
// grad_k and grad_v.
// Non-finite values propagate through the formulas above over the visible
// pairs only: a NaN or ±Inf in row i of grad_out, out or log_sum_exp
// reaches grad_q row i and the grad_k / grad_v rows of the keys row i sees;
// in q row i, also grad_k of those keys; in k or v row j, grad_q of the rows
// that see key j and grad_k / grad_v row j. Other elements stay finite,
// also where a mask or a window's begin hides pairs inside a tile (those
// pairs are skipped, not multiplied by 0).
// Tiled like FlashAttention-2's backward: for each tile of keys, the tiles
// of the queries that see them; P is recomputed from L tile by tile, no
// [query_len, key_len] matrix exists, and extra memory is O(tile +
// query_len · heads / kvH) per thread (plus, when batch · kvH < 8 and the
// keys are split into up to four chunks across threads, the grad_q partial
// sums of every chunk after the first, over the rows it sees: about 2.1 ×
// grad_q's size for four chunks of a causal head).
// Runs on NumThreads() threads; each thread owns the grad_k / grad_v of its
// key chunk and the grad_q partial sums are added in a fixed order, so the
// result is bit-identical for every thread count.
// The rules of AttentionOptions apply as in the forward: only visible pairs
// contribute (tiles outside a window, past key_lengths[b] or all false in
// a boolean mask are skipped); with softcap the scores are the capped ones
// and dS is multiplied by the cap's slope 1 - tanh²(s / softcap); an
// additive mask is part of S (its gradient is not computed). Gradients come
// back in the layout of the inputs (options.layout; kBSHD runs on kBHSD
// copies, layout.h). With options.sinks, grad_sinks [heads] is written (not
// accumulated): grad_sink_h = -Σ_{b,i} exp(sink_h - L_i)·D_i over the rows of
// head h that see a key; it may be null when options.sinks is null.
// Accuracy: |g - ref| <= 2e-5·(1 + |ref|) against AttentionBackwardReference
// on the tested shapes (tests/native/attention/attention_backward_test.cc).
Status AttentionBackward(const AttentionShape& shape,
                         const AttentionOptions& options, const float* grad_out,
                         const float* q, const float* k, const float* v,
                         const float* out, const float* log_sum_exp,
                         float* grad_q, float* grad_k, float* grad_v,
                         float* grad_sinks = nullptr);

// The oracle: the formulas above in plain scalar loops accumulating in
// double, one (query, key) pair at a time.
Status AttentionBackwardReference(const AttentionShape& shape,
                                  const AttentionOptions& options,
                                  const float* grad_out, const float* q,
                                  const float* k, const float* v,
                                  const float* out, const float* log_sum_exp,
                                  float* grad_q, float* grad_k, float* grad_v,
                                  float* grad_sinks = nullptr);

// Checks shape (kv_heads included), options and pointers without computing
// anything.
Status ValidateAttentionBackward(const AttentionShape& shape,
                                 const AttentionOptions& options,
                                 const float* grad_out, const float* q,
                                 const float* k, const float* v,
                                 const float* out, const float* log_sum_exp,
                                 const float* grad_q, const float* grad_k,
                                 const float* grad_v);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_ATTENTION_BACKWARD_H_
