// The visibility rule of attention, written once for the scalar reference,
// the forward, the backward and the decode path (attention_plan-inl.h wraps
// it per target): which keys query i of batch item b sees.
//
// Query i sits at position p = i + offset_b (offset_b: options.query_offset,
// or its default, attention.h). Key j (at position j) is visible iff
//   j < key_lengths[b]                     (when key_lengths is set)
//   j <= p                                 (causal kTopLeft / kBottomRight)
//   p - window_left <= j <= p + window_right   (each bound when >= 0)
//   mask[b, h, i, j] != 0                  (a boolean mask)
// The first three make a contiguous range [Begin(b, i), End(b, i)) whose
// both ends never decrease with i; so the queries that see key j are a
// contiguous range [FirstQuery(b, j), QueryEnd(b, j)) whose ends never
// decrease with j. A boolean mask removes keys inside that range, element by
// element (MaskAllows); an additive mask adds MaskAdd to the visible scores.

#ifndef CAUSAL_ATTENTION_SRC_VISIBILITY_H_
#define CAUSAL_ATTENTION_SRC_VISIBILITY_H_

#include <stddef.h>
#include <stdint.h>

#include <limits>

#include "src/attention/attention.h"

namespace causal_attention {
namespace internal {

class Visibility {
 public:
  Visibility(const AttentionShape& s, const AttentionOptions& o)
      : tq_(s.query_len),
        tk_(s.key_len),
        causal_(o.causal != CausalMask::kNone),
        bottom_right_(o.causal == CausalMask::kBottomRight),
        offset_(o.query_offset),
        key_lengths_(o.key_lengths),
        left_(o.window_left),
        right_(o.window_right),
        mask_(o.mask) {
    for (int a = 0; a < 4; ++a) {
      mstride_[a] = 0;
    }
    if (mask_.kind != MaskKind::kNone) {
      // Row-major strides of the stored mask; 0 along broadcast dims.
      int64_t stride = 1;
      for (int a = 3; a >= 0; --a) {
        mstride_[a] = mask_.dims[a] == 1 ? 0 : stride;
        stride *= mask_.dims[a];
      }
    }
  }

  // Keys of batch item b: [0, KeyLength(b)).
  int64_t KeyLength(size_t b) const {
    return key_lengths_ ? key_lengths_[b] : tk_;
  }
  // The position of query 0 of batch item b.
  int64_t Offset(size_t b) const {
    if (offset_.has_value()) return *offset_;
    return bottom_right_ ? KeyLength(b) - tq_ : 0;
  }

  // Query i of batch item b sees keys [Begin, End) (before a boolean mask);
  // Begin >= End: none.
  size_t Begin(size_t b, size_t i) const {
    if (left_ < 0) return 0;
    return Clip(static_cast<int64_t>(i) + Offset(b) - left_, tk_);
  }
  size_t End(size_t b, size_t i) const {
    const int64_t p = static_cast<int64_t>(i) + Offset(b);
    int64_t end = KeyLength(b);
    if (causal_ && p + 1 < end) end = p + 1;
    if (right_ >= 0 && p + right_ + 1 < end) end = p + right_ + 1;
    return Clip(end, tk_);
  }
  // Key j of batch item b is seen by queries [FirstQuery, QueryEnd).
  size_t FirstQuery(size_t b, size_t j) const {
    if (static_cast<int64_t>(j) >= KeyLength(b)) return static_cast<size_t>(tq_);
    const int64_t rel = static_cast<int64_t>(j) - Offset(b);  // p = j at i
    int64_t first = 0;
    if (causal_ && rel > first) first = rel;
    if (right_ >= 0 && rel - right_ > first) first = rel - right_;
    return Clip(first, tq_);
  }
  size_t QueryEnd(size_t b, size_t j) const {
    if (left_ < 0) return static_cast<size_t>(tq_);
    return Clip(static_cast<int64_t>(j) - Offset(b) + left_ + 1, tq_);
  }

  // The mask, per element (b, h, i, j).
  bool HasBooleanMask() const { return mask_.kind == MaskKind::kBoolean; }
  bool HasAdditiveMask() const { return mask_.kind == MaskKind::kAdditive; }
  // Index into the stored mask of element (b, h, i, 0); add j * KeyStride().
  size_t MaskRow(size_t b, size_t h, size_t i) const {
    return static_cast<size_t>(mstride_[0]) * b +
           static_cast<size_t>(mstride_[1]) * h +
           static_cast<size_t>(mstride_[2]) * i;
  }
  size_t MaskKeyStride() const { return static_cast<size_t>(mstride_[3]); }
  bool MaskAllows(size_t row, size_t j) const {
    return static_cast<const uint8_t*>(mask_.data)[row + MaskKeyStride() * j] !=
           0;
  }
  float MaskAdd(size_t row, size_t j) const {
    return static_cast<const float*>(mask_.data)[row + MaskKeyStride() * j];
  }
  // Whether a boolean mask, if there is one, lets mask row `row` (MaskRow)
  // see key j.
  bool Allows(size_t row, size_t j) const {
    return !HasBooleanMask() || MaskAllows(row, j);
  }
  // The rule whole: query i of batch item b, head h, sees key j.
  bool Sees(size_t b, size_t h, size_t i, size_t j) const {
    return j >= Begin(b, i) && j < End(b, i) && Allows(MaskRow(b, h, i), j);
  }
  // Whether keys inside a run of a query's keys can be hidden from it, for
  // a run of queries whose latest Begin is `begin` that starts at key k0: a
  // boolean mask, or a window's begin past k0.
  bool HidesInsideRun(size_t begin, size_t k0) const {
    return HasBooleanMask() || begin > k0;
  }
  // The additive mask's stage of the scores: s[0, n) += mask row `row`'s
  // keys [j0, j0 + n). Returns false when a sum is NaN or +inf (the mask's
  // -inf hides a key; its NaN or +inf makes the row's softmax NaN, as in
  // PyTorch and ONNX): the row is then non-finite.
  bool AddMask(size_t row, size_t j0, float* s, size_t n) const {
    bool finite = true;
    for (size_t j = 0; j < n; ++j) {
      s[j] += MaskAdd(row, j0 + j);
      finite &= s[j] < std::numeric_limits<float>::infinity();
    }
    return finite;
  }

 private:
  static size_t Clip(int64_t x, int64_t hi) {
    return static_cast<size_t>(x < 0 ? 0 : x > hi ? hi : x);
  }

  int64_t tq_, tk_;
  bool causal_, bottom_right_;
  std::optional<int64_t> offset_;
  const int32_t* key_lengths_;
  int64_t left_, right_;
  AttentionMask mask_;
  int64_t mstride_[4];
};

}  // namespace internal
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_VISIBILITY_H_
