// The scalar oracles of Attention, MatMul and Linear (forward and backward),
// and the dropout mask as the kernels must reproduce it. Plain loops,
// everything accumulated in double.
//
// Attention. Shapes as in attention.h:
//   q [B, H, Tq, D], k [B, Hkv, cap, D], v [B, Hkv, cap, Dv] ->
//   out [B, H, Tq, Dv], weights [B, H, Tq, Tk]; query head h reads KV head
//   h / (H / Hkv), whose first Tk of cap rows are the keys (cap = Tk unless
//   a KV cache's capacity is given).
// One query row at a time, in five numbered passes, everything in double:
//   1. scores s_j = scale · q_i·k_j for the keys the row needs (every key
//      when options.scores asks for them)
//   2. the row max
//   3. exp and sum
//   4. normalise (and for kRenormalize: mask, then divide by the new sum)
//   5. dropout, then out_i = sum_j w_j v_j over the visible keys
// and the row's log-sum-exp over its visible scores when asked.
//
// AttentionBackward: per query row, per visible key, the formulas of
// attention_backward.h with double accumulators for grad_q, grad_k, grad_v.

#include <cmath>
#include <limits>
#include <vector>

#include "src/attention/attention.h"
#include "src/attention/attention_backward.h"
#include "src/simd/dropout.h"
#include "src/attention/internal.h"
#include "src/kv/kv_storage.h"
#include "src/gemm/linear.h"
#include "src/gemm/matmul.h"
#include "src/attention/visibility.h"

namespace causal_attention {
namespace {

// Softmax of s[0, n) into w (double), max-subtracted.
void SoftmaxRow(const double* s, size_t n, double* w) {
  double m = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < n; ++j) m = std::fmax(m, s[j]);
  double sum = 0.0;
  for (size_t j = 0; j < n; ++j) {
    w[j] = std::exp(s[j] - m);
    sum += w[j];
  }
  for (size_t j = 0; j < n; ++j) w[j] /= sum;
}

// The float32 values of a bfloat16 or int8 k (or v) [B, Hkv, cap, width]:
// the first key_len rows of each KV head, dense (LoadKvRow, the values the
// kernels read).
std::vector<float> DequantisedRows(const AttentionShape& shape,
                                   const float* rows, size_t width) {
  const size_t heads =
      static_cast<size_t>(shape.batch * internal::KvHeads(shape));
  const size_t tk = static_cast<size_t>(shape.key_len);
  const size_t cap = static_cast<size_t>(internal::KvCapacity(shape));
  const size_t row_bytes = KvRowBytes(shape.kv_dtype, width);
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(rows);
  std::vector<float> dense(heads * tk * width);
  for (size_t h = 0; h < heads; ++h) {
    for (size_t j = 0; j < tk; ++j) {
      LoadKvRow(shape.kv_dtype, bytes + (h * cap + j) * row_bytes, width,
                dense.data() + (h * tk + j) * width);
    }
  }
  return dense;
}

}  // namespace

Status AttentionReference(const AttentionShape& shape,
                          const AttentionOptions& options, const float* q,
                          const float* k, const float* v, float* out,
                          float* weights) {
  return AttentionWithLogSumExpReference(shape, options, q, k, v, out, weights,
                                         nullptr);
}

Status AttentionWithLogSumExpReference(const AttentionShape& shape,
                                       const AttentionOptions& options,
                                       const float* q, const float* k,
                                       const float* v, float* out,
                                       float* weights, float* log_sum_exp) {
  Status st = ValidateAttention(shape, options);
  if (st != Status::kOk) return st;
  if (weights && (st = ValidateAttentionWeights(shape)) != Status::kOk) {
    return st;
  }
  if (!q || !k || !v || !out) return Status::kNullPointer;
  if (shape.kv_dtype != KvDtype::kFloat32) {
    // The oracle of a bfloat16 or int8 cache: the float32 one on its values.
    const std::vector<float> kd =
        DequantisedRows(shape, k, static_cast<size_t>(shape.head_dim));
    const std::vector<float> vd =
        DequantisedRows(shape, v, static_cast<size_t>(shape.value_dim));
    AttentionShape dense = shape;
    dense.kv_dtype = KvDtype::kFloat32;
    dense.kv_capacity = 0;
    return AttentionWithLogSumExpReference(
        dense, options, q, kd.data(), vd.data(), out, weights, log_sum_exp);
  }

  const size_t batch = static_cast<size_t>(shape.batch);
  const size_t heads = static_cast<size_t>(shape.heads);
  const size_t tq = static_cast<size_t>(shape.query_len);
  const size_t tk = static_cast<size_t>(shape.key_len);
  const size_t d = static_cast<size_t>(shape.head_dim);
  const size_t dv = static_cast<size_t>(shape.value_dim);
  const Layout layout = options.layout;
  const double scale = internal::ResolvedScale(shape, options);
  const double cap = options.softcap;
  const bool renormalize =
      options.mask_strategy == MaskStrategy::kRenormalize &&
      options.causal != CausalMask::kNone;
  const bool drop = internal::DropoutActive(options);
  const uint32_t threshold = dropout::Threshold(options.dropout);
  const double keep_scale = dropout::KeepScale(options.dropout);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const internal::Visibility vis(shape, options);
  const ScoreStage stage = options.score_stage;

  std::vector<double> s(tk), w(tk), acc(dv);
  std::vector<char> seen(tk);
  for (size_t bh = 0; bh < batch * heads; ++bh) {
    const size_t b = bh / heads, h = bh % heads;
    const size_t kv = internal::KvHeadOf(shape, bh) % internal::KvHeads(shape);
    for (size_t i = 0; i < tq; ++i) {
      const float* qi =
          q + internal::QueryRowIndex(shape, layout, b, h, i) * d;
      const size_t row = bh * tq + i;  // [B, H, Tq] index
      const size_t lo = vis.Begin(b, i), hi = vis.End(b, i);
      const size_t mrow = vis.MaskRow(b, h, i);
      size_t n_seen = 0;
      for (size_t j = 0; j < tk; ++j) {
        seen[j] = j >= lo && j < hi && vis.Allows(mrow, j);
        n_seen += seen[j];
      }
      // kRenormalize scores every key (the book's first softmax sees them).
      // A row that sees no key is all zeros, whatever its scores.
      std::fill(w.begin(), w.end(), 0.0);
      bool non_finite = false;

      // 1. Scores (scale, softcap, additive mask); -inf where not seen.
      // The asked-for scores (options.scores) at their stage, every key.
      float* score_row =
          stage != ScoreStage::kNone ? options.scores + row * tk : nullptr;
      for (size_t j = 0; j < tk; ++j) {
        s[j] = -inf;
        const bool needed = n_seen > 0 && (seen[j] || renormalize);
        if (!needed && !score_row) continue;
        const float* kj =
            k + internal::KeyRowIndex(shape, layout, b, kv, j) * d;
        double dot = 0.0;
        for (size_t c = 0; c < d; ++c) {
          dot += static_cast<double>(qi[c]) * static_cast<double>(kj[c]);
        }
        double x = dot * scale;
        if (needed && !std::isfinite(x)) non_finite = true;
        if (stage == ScoreStage::kScaled) score_row[j] = static_cast<float>(x);
        if (cap > 0.0) x = cap * std::tanh(x / cap);
        if (stage == ScoreStage::kSoftcapped) {
          score_row[j] = static_cast<float>(x);
        }
        if (vis.HasAdditiveMask()) {
          x += vis.MaskAdd(mrow, j);
          // The mask's NaN or +inf on a seen key: the row's softmax is NaN.
          if (seen[j] && !(x < inf)) non_finite = true;
        }
        if (stage == ScoreStage::kMasked) {
          score_row[j] = static_cast<float>(seen[j] ? x : -inf);
        }
        if (needed) s[j] = x;
      }
      double row_max = -inf;
      for (size_t j = 0; j < tk; ++j) {
        if (seen[j]) row_max = std::fmax(row_max, s[j]);
      }
      // An additive mask of -inf on every seen key: the row sees nothing.
      const bool any = n_seen > 0 && row_max > -inf;
      const double sink =
          options.sinks ? static_cast<double>(options.sinks[h]) : -inf;
      double lse = -inf;

      if (any && !non_finite) {
        if (renormalize) {
          // 2-4. Softmax over all scored keys, mask, renormalise.
          SoftmaxRow(s.data(), tk, w.data());
          double visible = 0.0;
          for (size_t j = 0; j < tk; ++j) {
            if (!seen[j]) w[j] = 0.0;
            visible += w[j];
          }
          if (!(visible > 0.0)) {
            for (size_t j = 0; j < tk; ++j) {
              w[j] = seen[j] ? std::exp(s[j] - row_max) : 0.0;
              visible += w[j];
            }
          }
          for (size_t j = 0; j < tk; ++j) w[j] /= visible;
          double sum = 0.0;  // L over the seen keys (as for kNegInf)
          for (size_t j = 0; j < tk; ++j) {
            if (seen[j]) sum += std::exp(s[j] - row_max);
          }
          lse = row_max + std::log(sum);
        } else {
          // 2-4. Softmax over the seen keys (and the sink).
          const double m = std::fmax(row_max, sink);
          double sum = std::exp(sink - m);
          for (size_t j = 0; j < tk; ++j) {
            w[j] = seen[j] ? std::exp(s[j] - m) : 0.0;
            sum += w[j];
          }
          for (size_t j = 0; j < tk; ++j) w[j] /= sum;
          lse = m + std::log(sum);
        }
        // 5. Dropout.
        if (drop) {
          const dropout::RowKey key = dropout::MakeRowKey(options.seed, row);
          for (size_t j = 0; j < tk; ++j) {
            const bool keep =
                dropout::Hash24(key, static_cast<uint32_t>(j)) >= threshold;
            w[j] = keep ? w[j] * keep_scale : 0.0;
          }
        }
      }
      if (non_finite && n_seen > 0) lse = nan;

      // 5. Weighted sum of values over the seen keys.
      std::fill(acc.begin(), acc.end(), non_finite ? nan : 0.0);
      if (!non_finite) {
        for (size_t j = 0; j < tk; ++j) {
          if (!seen[j]) continue;
          const float* vj =
              v + internal::KeyRowIndex(shape, layout, b, kv, j) * dv;
          for (size_t c = 0; c < dv; ++c) {
            acc[c] += w[j] * static_cast<double>(vj[c]);
          }
        }
      }
      float* out_row =
          out + internal::QueryRowIndex(shape, layout, b, h, i) * dv;
      for (size_t c = 0; c < dv; ++c) out_row[c] = static_cast<float>(acc[c]);
      if (log_sum_exp) log_sum_exp[row] = static_cast<float>(lse);
      if (weights) {
        float* w_row = weights + row * tk;
        for (size_t j = 0; j < tk; ++j) {
          w_row[j] = non_finite && n_seen > 0
                         ? std::numeric_limits<float>::quiet_NaN()
                         : static_cast<float>(w[j]);
        }
      }
    }
  }
  return Status::kOk;
}

Status AttentionBackwardReference(const AttentionShape& shape,
                                  const AttentionOptions& options,
                                  const float* grad_out, const float* q,
                                  const float* k, const float* v,
                                  const float* out, const float* log_sum_exp,
                                  float* grad_q, float* grad_k, float* grad_v,
                                  float* grad_sinks) {
  const Status st =
      ValidateAttentionBackward(shape, options, grad_out, q, k, v, out,
                                log_sum_exp, grad_q, grad_k, grad_v);
  if (st != Status::kOk) return st;
  if (options.sinks && !grad_sinks) return Status::kNullPointer;

  const size_t batch = static_cast<size_t>(shape.batch);
  const size_t heads = static_cast<size_t>(shape.heads);
  const size_t kv_heads = static_cast<size_t>(internal::KvHeads(shape));
  const size_t group = heads / kv_heads;
  const size_t tq = static_cast<size_t>(shape.query_len);
  const size_t tk = static_cast<size_t>(shape.key_len);
  const size_t d = static_cast<size_t>(shape.head_dim);
  const size_t dv = static_cast<size_t>(shape.value_dim);
  const Layout layout = options.layout;
  const double scale = internal::ResolvedScale(shape, options);
  const double cap = options.softcap;
  const bool drop = internal::DropoutActive(options);
  const uint32_t threshold = dropout::Threshold(options.dropout);
  const double keep_scale = dropout::KeepScale(options.dropout);
  const internal::Visibility vis(shape, options);

  std::vector<double> dq(d), dk(batch * kv_heads * tk * d, 0.0),
      dvv(batch * kv_heads * tk * dv, 0.0), dsink(heads, 0.0);
  for (size_t b = 0; b < batch; ++b) {
    for (size_t h = 0; h < heads; ++h) {
      const size_t bh = b * heads + h;
      const size_t kvh = h / group;
      for (size_t i = 0; i < tq; ++i) {
        const size_t row = bh * tq + i;  // [B, H, Tq] index
        const size_t qrow = internal::QueryRowIndex(shape, layout, b, h, i);
        const float* qi = q + qrow * d;
        const float* doi = grad_out + qrow * dv;
        const float* oi = out + qrow * dv;
        const double lse = log_sum_exp[row];
        std::fill(dq.begin(), dq.end(), 0.0);
        double di = 0.0;  // D_i = dO_i · O_i
        for (size_t c = 0; c < dv; ++c) {
          di += static_cast<double>(doi[c]) * static_cast<double>(oi[c]);
        }
        // d L_i / d sink_h = exp(sink_h - L_i), and dLoss/dL_i = D_i. A row
        // that saw no key (L = -inf) adds nothing; a NaN row adds NaN.
        if (options.sinks && lse != -std::numeric_limits<double>::infinity()) {
          dsink[h] -= std::exp(options.sinks[h] - lse) * di;
        }
        const dropout::RowKey key = dropout::MakeRowKey(options.seed, row);
        const size_t mrow = vis.MaskRow(b, h, i);
        for (size_t j = vis.Begin(b, i); j < vis.End(b, i); ++j) {
          if (!vis.Allows(mrow, j)) continue;
          const size_t krow = internal::KeyRowIndex(shape, layout, b, kvh, j);
          const float* kj = k + krow * d;
          const float* vj = v + krow * dv;
          double s = 0.0;
          for (size_t c = 0; c < d; ++c) {
            s += static_cast<double>(qi[c]) * static_cast<double>(kj[c]);
          }
          s *= scale;
          double g = 1.0;  // d(score) / d(scale · q·k)
          if (cap > 0.0) {
            const double t = std::tanh(s / cap);
            s = cap * t;
            g = 1.0 - t * t;
          }
          if (vis.HasAdditiveMask()) s += vis.MaskAdd(mrow, j);
          if (s == -std::numeric_limits<double>::infinity()) continue;
          double x = s - lse;
          if (x > 0.0) x = 0.0;  // not fmin: NaN must stay NaN
          const double p = std::exp(x);
          double m = 1.0;
          if (drop) {
            m = dropout::Hash24(key, static_cast<uint32_t>(j)) >= threshold
                    ? keep_scale
                    : 0.0;
          }
          double dp = 0.0;  // dO_i · v_j
          for (size_t c = 0; c < dv; ++c) {
            dp += static_cast<double>(doi[c]) * static_cast<double>(vj[c]);
          }
          const double pm = p * m;
          double* dkj = dk.data() + krow * d;
          double* dvj = dvv.data() + krow * dv;
          for (size_t c = 0; c < dv; ++c) dvj[c] += pm * doi[c];
          const double ds = p * (dp * m - di) * g;
          for (size_t c = 0; c < d; ++c) {
            dq[c] += ds * static_cast<double>(kj[c]);
            dkj[c] += ds * static_cast<double>(qi[c]);
          }
        }
        for (size_t c = 0; c < d; ++c) {
          grad_q[qrow * d + c] = static_cast<float>(scale * dq[c]);
        }
      }
    }
  }
  for (size_t i = 0; i < dk.size(); ++i) {
    grad_k[i] = static_cast<float>(scale * dk[i]);
  }
  for (size_t i = 0; i < dvv.size(); ++i)
    grad_v[i] = static_cast<float>(dvv[i]);
  if (options.sinks) {
    for (size_t h = 0; h < heads; ++h) grad_sinks[h] = static_cast<float>(dsink[h]);
  }
  return Status::kOk;
}

bool DropoutKeeps(uint64_t seed, uint64_t row, uint32_t key, float p) {
  return dropout::Hash24(dropout::MakeRowKey(seed, row), key) >=
         dropout::Threshold(p);
}

// Linear: y[r][o] = bias[o] + sum_i x[r][i] · weight[o][i].
Status LinearReference(const float* x, int64_t rows, int64_t in, int64_t out,
                       const float* weight, const float* bias, float* y) {
  const Status st = ValidateLinear(x, rows, in, out, weight, y);
  if (st != Status::kOk) return st;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias ? bias[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) {
        acc += static_cast<double>(x[r * in + i]) * weight[o * in + i];
      }
      y[r * out + o] = static_cast<float>(acc);
    }
  }
  return Status::kOk;
}

// MatMul: c[r][j] = (c[r][j]) + sum_i op(a)[r][i] · op(b)[i][j] + bias[j].
Status MatMulReference(const MatMulShape& s, const float* a, int64_t lda,
                       const float* b, int64_t ldb, const float* bias, float* c,
                       int64_t ldc) {
  const Status st = ValidateMatMul(s, a, lda, b, ldb, c, ldc);
  if (st != Status::kOk) return st;
  for (int64_t r = 0; r < s.m; ++r) {
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = 0.0;
      for (int64_t i = 0; i < s.k; ++i) {
        const float x = s.transpose_a ? a[i * lda + r] : a[r * lda + i];
        const float y = s.transpose_b ? b[j * ldb + i] : b[i * ldb + j];
        acc += static_cast<double>(x) * y;
      }
      if (s.accumulate) acc += c[r * ldc + j];
      if (bias) acc += bias[j];
      c[r * ldc + j] = static_cast<float>(acc);
    }
  }
  return Status::kOk;
}

// Linear backward: grad_x = grad_y · weight, grad_weight += grad_yᵀ · x,
// grad_bias += column sums of grad_y.
Status LinearBackwardReference(const float* x, int64_t rows, int64_t in,
                               int64_t out, const float* weight,
                               const float* grad_y, float* grad_x,
                               float* grad_weight, float* grad_bias) {
  const Status st =
      ValidateLinearBackward(x, rows, in, out, weight, grad_y, grad_weight);
  if (st != Status::kOk) return st;
  for (int64_t r = 0; grad_x && r < rows; ++r) {
    for (int64_t i = 0; i < in; ++i) {
      double acc = 0.0;
      for (int64_t o = 0; o < out; ++o) {
        acc += static_cast<double>(grad_y[r * out + o]) * weight[o * in + i];
      }
      grad_x[r * in + i] = static_cast<float>(acc);
    }
  }
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) {
      double acc = grad_weight[o * in + i];
      for (int64_t r = 0; r < rows; ++r) {
        acc += static_cast<double>(grad_y[r * out + o]) * x[r * in + i];
      }
      grad_weight[o * in + i] = static_cast<float>(acc);
    }
    if (grad_bias) {
      double acc = grad_bias[o];
      for (int64_t r = 0; r < rows; ++r) acc += grad_y[r * out + o];
      grad_bias[o] = static_cast<float>(acc);
    }
  }
  return Status::kOk;
}

}  // namespace causal_attention
