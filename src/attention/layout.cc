#include "src/attention/layout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/attention/internal.h"

namespace causal_attention {
namespace internal {

LayoutSizes::LayoutSizes(const AttentionShape& s)
    : b(static_cast<size_t>(s.batch)),
      h(static_cast<size_t>(s.heads)),
      kvh(static_cast<size_t>(KvHeads(s))),
      tq(static_cast<size_t>(s.query_len)),
      tk(static_cast<size_t>(s.key_len)),
      cap(static_cast<size_t>(KvCapacity(s))),
      d(static_cast<size_t>(s.head_dim)),
      dv(static_cast<size_t>(s.value_dim)) {}

void BshdToBhsd(const float* src, size_t batch, size_t seq, size_t seq_alloc,
                size_t heads, size_t width, float* dst) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t h = 0; h < heads; ++h) {
      for (size_t s = 0; s < seq; ++s) {
        memcpy(dst + ((b * heads + h) * seq + s) * width,
               src + ((b * seq_alloc + s) * heads + h) * width,
               width * sizeof(float));
      }
    }
  }
}

void BhsdToBshd(const float* src, size_t batch, size_t seq, size_t heads,
                size_t width, float* dst) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t s = 0; s < seq; ++s) {
      for (size_t h = 0; h < heads; ++h) {
        memcpy(dst + ((b * seq + s) * heads + h) * width,
               src + ((b * heads + h) * seq + s) * width,
               width * sizeof(float));
      }
    }
  }
}

Status ForwardInLayout(ForwardFn fn, const AttentionShape& shape,
                           const AttentionOptions& options, const float* q,
                           const float* k, const float* v, float* out,
                           float* weights, float* log_sum_exp) {
  if (options.layout == Layout::kBHSD) {
    return fn(shape, options, q, k, v, out, weights, log_sum_exp);
  }
  const LayoutSizes n(shape);
  FloatBuffer qb(n.Queries()), kb(n.Keys()), vb(n.Values()), ob(n.Outputs());
  if (!qb.get() || !kb.get() || !vb.get() || !ob.get()) {
    return Status::kOutOfMemory;
  }
  BshdToBhsd(q, n.b, n.tq, n.tq, n.h, n.d, qb.get());
  BshdToBhsd(k, n.b, n.tk, n.cap, n.kvh, n.d, kb.get());
  BshdToBhsd(v, n.b, n.tk, n.cap, n.kvh, n.dv, vb.get());
  AttentionShape dense = shape;  // the copies hold key_len rows per head
  dense.kv_capacity = 0;
  AttentionOptions bhsd = options;
  bhsd.layout = Layout::kBHSD;
  const Status st = fn(dense, bhsd, qb.get(), kb.get(), vb.get(), ob.get(),
                       weights, log_sum_exp);
  if (st == Status::kOk) BhsdToBshd(ob.get(), n.b, n.tq, n.h, n.dv, out);
  return st;
}

Status BackwardInLayout(BackwardFn fn, const AttentionShape& shape,
                            const AttentionOptions& options,
                            const float* grad_out, const float* q,
                            const float* k, const float* v, const float* out,
                            const float* log_sum_exp, float* grad_q,
                            float* grad_k, float* grad_v, float* grad_sinks) {
  if (options.layout == Layout::kBHSD) {
    return fn(shape, options, grad_out, q, k, v, out, log_sum_exp, grad_q,
              grad_k, grad_v, grad_sinks);
  }
  const LayoutSizes n(shape);
  const size_t nq = n.Queries(), nk = n.Keys(), nv = n.Values(),
               no = n.Outputs();
  // q, k, v, dO, O, then dQ, dK, dV.
  FloatBuffer buf(2 * (nq + nk + nv) + 2 * no);
  if (!buf.get()) return Status::kOutOfMemory;
  float* qb = buf.get();
  float* kb = qb + nq;
  float* vb = kb + nk;
  float* dob = vb + nv;
  float* ob = dob + no;
  float* gqb = ob + no;
  float* gkb = gqb + nq;
  float* gvb = gkb + nk;
  BshdToBhsd(q, n.b, n.tq, n.tq, n.h, n.d, qb);
  BshdToBhsd(k, n.b, n.tk, n.tk, n.kvh, n.d, kb);
  BshdToBhsd(v, n.b, n.tk, n.tk, n.kvh, n.dv, vb);
  BshdToBhsd(grad_out, n.b, n.tq, n.tq, n.h, n.dv, dob);
  BshdToBhsd(out, n.b, n.tq, n.tq, n.h, n.dv, ob);
  AttentionOptions bhsd = options;
  bhsd.layout = Layout::kBHSD;
  const Status st = fn(shape, bhsd, dob, qb, kb, vb, ob, log_sum_exp, gqb, gkb,
                       gvb, grad_sinks);
  if (st != Status::kOk) return st;
  BhsdToBshd(gqb, n.b, n.tq, n.h, n.d, grad_q);
  BhsdToBshd(gkb, n.b, n.tk, n.kvh, n.d, grad_k);
  BhsdToBshd(gvb, n.b, n.tk, n.kvh, n.dv, grad_v);
  return Status::kOk;
}

FloatBuffer::FloatBuffer(size_t floats)
    : data_(floats <= SIZE_MAX / sizeof(float)
                ? static_cast<float*>(malloc(floats * sizeof(float) + 1))
                : nullptr) {}
FloatBuffer::~FloatBuffer() { free(data_); }

}  // namespace internal
}  // namespace causal_attention
