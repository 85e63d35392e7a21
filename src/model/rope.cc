// Rotary position embedding: plain loops (a small cost beside the
// projections and attention it sits between).
//
// Shapes: x [B, T, H, hd]. Passes:
//   1. inv_freq [hd/2] from the base and the scaling (compute_rope_params'
//      float32 ops),
//   2. cos, sin [T, hd/2] for positions start .. start + T - 1,
//   3. rotate every (i, i + hd/2) pair of every row.

#include "src/model/rope.h"

#include <stdlib.h>

#include <cmath>
#include <memory>

#include "src/base/size_math.h"

namespace causal_attention {
namespace {

struct FreeDeleter {
  void operator()(float* p) const { free(p); }
};

Status Rotate(float base, const RopeScaling& scaling, int64_t batch,
              int64_t tokens, int64_t heads, int64_t head_dim, int64_t start,
              bool transpose, float* x);

bool Positive(float x) { return std::isfinite(x) && x > 0.0f; }

}  // namespace

Status ValidateRope(float base, int64_t head_dim, int64_t start,
                    const RopeScaling& scaling) {
  if (head_dim < 2 || head_dim % 2 != 0 || start < 0) {
    return Status::kInvalidShape;
  }
  if (!Positive(base)) return Status::kInvalidOption;
  const RopeScaling& c = scaling;
  if (c.factor != 0.0f &&
      !(Positive(c.factor) && Positive(c.low_freq_factor) &&
        std::isfinite(c.high_freq_factor) &&
        c.high_freq_factor > c.low_freq_factor &&
        Positive(c.original_context_length))) {
    return Status::kInvalidOption;
  }
  return Status::kOk;
}

Status RopeInverseFrequencies(float base, int64_t head_dim, float* inv_freq,
                              const RopeScaling& scaling) {
  const Status st = ValidateRope(base, head_dim, 0, scaling);
  if (st != Status::kOk) return st;
  if (!inv_freq) return Status::kNullPointer;
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    // torch.arange(0, hd, 2).float() / hd, base ** that, 1.0 / that: each
    // a float32 op (pow correctly rounded via double).
    const float exponent =
        static_cast<float>(2 * i) / static_cast<float>(head_dim);
    const float power = static_cast<float>(
        std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    inv_freq[i] = 1.0f / power;
  }
  const RopeScaling& c = scaling;
  if (c.factor == 0.0f) return Status::kOk;
  // The Python scalars are doubles; each tensor op rounds to float32 with
  // the scalar cast to float.
  const double context = c.original_context_length;
  const float low_wavelen = static_cast<float>(context / c.low_freq_factor);
  const float high_wavelen = static_cast<float>(context / c.high_freq_factor);
  const float two_pi = static_cast<float>(2.0 * 3.14159265358979323846);
  const float span = static_cast<float>(static_cast<double>(c.high_freq_factor) -
                                        c.low_freq_factor);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float f = inv_freq[i];
    const float period = 1.0f / f;
    const float wavelen = period * two_pi;  // 2π / inv_freq
    const float divided = f / c.factor;
    if (wavelen > low_wavelen) {
      inv_freq[i] = divided;
    } else if (wavelen >= high_wavelen) {
      // smooth = (context / wavelen - low) / (high - low), then the book's
      // (1 - smooth) · (inv_freq / factor) + smooth · inv_freq; one float
      // op per statement, so no compiler contracts them into an FMA.
      const float ratio = (1.0f / wavelen) * c.original_context_length;
      const float smooth = (ratio - c.low_freq_factor) / span;
      const float kept = 1.0f - smooth;
      const float low_part = kept * divided;
      const float high_part = smooth * f;
      inv_freq[i] = low_part + high_part;
    }
  }
  return Status::kOk;
}

Status ApplyRope(float base, int64_t batch, int64_t tokens, int64_t heads,
                 int64_t head_dim, int64_t start, float* x,
                 const RopeScaling& scaling) {
  return Rotate(base, scaling, batch, tokens, heads, head_dim, start, false,
                x);
}

Status ApplyRopeTranspose(float base, int64_t batch, int64_t tokens,
                          int64_t heads, int64_t head_dim, int64_t start,
                          float* x, const RopeScaling& scaling) {
  return Rotate(base, scaling, batch, tokens, heads, head_dim, start, true, x);
}

namespace {

// The rotation by +angle (ApplyRope), or by -angle (its transpose).
Status Rotate(float base, const RopeScaling& scaling, int64_t batch,
              int64_t tokens, int64_t heads, int64_t head_dim, int64_t start,
              bool transpose, float* x) {
  Status st = ValidateRope(base, head_dim, start, scaling);
  if (st != Status::kOk) return st;
  if (batch < 1 || heads < 1 || tokens < 1) return Status::kInvalidShape;
  if (!x) return Status::kNullPointer;
  const size_t half = static_cast<size_t>(head_dim / 2);
  const size_t t = static_cast<size_t>(tokens);
  // Tables: cos and sin [T][hd/2], then inv_freq [hd/2].
  size_t table;
  if (!internal::MulSize(2 * t + 1, half * sizeof(float), &table)) {
    return Status::kTooLarge;
  }
  // 1-2. inv_freq, then cos and sin of float32 angles.
  std::unique_ptr<float, FreeDeleter> buffer(
      static_cast<float*>(malloc(table)));
  if (!buffer) return Status::kOutOfMemory;
  float* cos_t = buffer.get();
  float* sin_t = cos_t + t * half;
  float* inv_freq = sin_t + t * half;
  st = RopeInverseFrequencies(base, head_dim, inv_freq, scaling);
  if (st != Status::kOk) return st;
  for (size_t it = 0; it < t; ++it) {
    const float position = static_cast<float>(start + static_cast<int64_t>(it));
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(position * inv_freq[i]);
      cos_t[it * half + i] = static_cast<float>(std::cos(angle));
      sin_t[it * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  // 3. Rotate every head row of every token.
  const size_t h = static_cast<size_t>(heads);
  for (size_t ib = 0; ib < static_cast<size_t>(batch); ++ib) {
    for (size_t it = 0; it < t; ++it) {
      const float* c = cos_t + it * half;
      const float* s = sin_t + it * half;
      for (size_t ih = 0; ih < h; ++ih) {
        float* row = x + ((ib * t + it) * h + ih) * 2 * half;
        for (size_t i = 0; i < half; ++i) {
          const float x1 = row[i], x2 = row[i + half];
          if (transpose) {
            row[i] = x1 * c[i] + x2 * s[i];
            row[i + half] = x2 * c[i] - x1 * s[i];
          } else {
            row[i] = x1 * c[i] - x2 * s[i];
            row[i + half] = x2 * c[i] + x1 * s[i];
          }
        }
      }
    }
  }
  return Status::kOk;
}

}  // namespace

}  // namespace causal_attention
