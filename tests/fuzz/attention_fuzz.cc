// libFuzzer target over the C++ entry points: Attention (with grouped-query
// KV heads, a KV cache's capacity and decode-shaped calls whose keys are
// split into chunks; bfloat16 and int8 KV caches, int8 also at head sizes
// that take its integer route), Linear (MatMul) and its backward,
// AttentionLayerForward (what the JS modules call; with GQA, RoPE and a KV
// cache it appends to) and AttentionBackward, with random shapes, options
// (valid and not: the layout, query offset, key lengths, windows, softcap,
// sinks, masks and the scores before the softmax too) and data.
// Built with ASan + UBSan (-DCA_FUZZ=ON, clang), so any out-of-bounds access
// or UB aborts. Checks:
//   * the SIMD path and the scalar reference return the same Status;
//   * with finite data in [-1, 1], their results agree within
//     1e-5 (1 + |ref|) (weights and outputs; 2e-5 for gradients, times
//     dropout's 1 / (1 - p)), and NaN
//     exactly where the reference has NaN;
//   * with arbitrary bit patterns (NaN, Inf, huge values) nothing crashes.
// Every buffer is allocated at its exact size, so ASan sees any overrun.
// The same entry point runs the committed regression inputs in the native
// test suite (tests/native/attention/fuzz_regressions_test.cc).

#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "src/attention/attention.h"
#include "src/attention/attention_backward.h"
#include "src/kv/kv_storage.h"
#include "src/model/layer.h"
#include "src/gemm/linear.h"

namespace {

using causal_attention::Status;

// Decodes the fuzzer's bytes. Past the end of the input it continues with
// a xorshift stream seeded by everything read so far, so that even a short
// input yields full-sized shapes and data (otherwise every shape of a short
// input collapses to size 1 and the comparisons see almost nothing).
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | Byte();
    return v;
  }
  uint8_t Byte() {
    if (pos_ < size_) {
      const uint8_t b = data_[pos_++];
      state_ = (state_ ^ b) * 0x100000001B3ull;  // FNV-1a over the input
      return b;
    }
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return static_cast<uint8_t>(state_ >> 24);
  }
  int64_t Range(int64_t lo, int64_t hi) {  // inclusive; wide values rarely
    const uint32_t r = U32();
    return lo + static_cast<int64_t>(r % static_cast<uint32_t>(hi - lo + 1));
  }
  bool Bool() { return Byte() & 1; }
  // A float in [-1, 1], or (raw mode) any bit pattern.
  float Float(bool raw) {
    const uint32_t bits = U32();
    if (raw) {
      float f;
      memcpy(&f, &bits, 4);
      return f;
    }
    return static_cast<float>(bits) / 2147483648.0f - 1.0f;
  }
  std::vector<float> Floats(size_t n, bool raw) {
    std::vector<float> v(n);
    for (float& x : v) x = Float(raw);
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  uint64_t state_ = 0xCBF29CE484222325ull;
};

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// |got - ref| <= tol · (1 + |ref|) + of_largest · max |ref| (NaNs where the
// reference has them; equal infinities).
void CheckClose(const std::vector<float>& got, const std::vector<float>& ref,
                double tol = 1e-5, double of_largest = 0.0) {
  Check(got.size() == ref.size());
  double largest = 0.0;
  for (const float r : ref) {
    if (std::isfinite(r)) largest = std::max(largest, std::fabs(static_cast<double>(r)));
  }
  const double slack = of_largest * largest;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(ref[i]) || std::isnan(got[i])) {
      Check(std::isnan(ref[i]) && std::isnan(got[i]));
      continue;
    }
    if (got[i] == ref[i]) continue;  // equal infinities too (masked scores)
    Check(std::fabs(static_cast<double>(got[i]) - ref[i]) <=
          tol * (1.0 + std::fabs(static_cast<double>(ref[i]))) + slack);
  }
}

// Attention options, valid and not: enums out of range, raw scales and
// dropout probabilities now and then.
causal_attention::AttentionOptions FuzzOptions(Input& in) {
  causal_attention::AttentionOptions o;
  o.causal = static_cast<causal_attention::CausalMask>(in.Range(-1, 3));
  o.mask_strategy = static_cast<causal_attention::MaskStrategy>(in.Range(0, 2));
  if (in.Bool()) o.scale = in.Bool() ? in.Float(true) : in.Float(false) * 2;
  o.training = in.Bool();
  o.dropout = in.Byte() < 16 ? in.Float(true) : (in.Float(false) + 1) * 0.45f;
  o.seed = (static_cast<uint64_t>(in.U32()) << 32) | in.U32();
  return o;
}

// The visibility rules for a shape: layout, query offset, key lengths, windows,
// softcap, sinks and a mask (boolean or additive, dims broadcast or not),
// valid and not; the buffers they point to, each at its exact size.
struct Rules {
  std::vector<int32_t> key_lengths;
  std::vector<float> sinks, additive;
  std::vector<uint8_t> allowed;
  std::vector<float> grad_sinks, grad_sinks_ref;

  void Draw(Input& in, bool raw, const causal_attention::AttentionShape& s,
            causal_attention::AttentionOptions* o) {
    using causal_attention::MaskKind;
    if (in.Byte() < 64) return;  // the plain call, often
    if (in.Bool()) {
      const int64_t layout = in.Byte() < 8 ? in.Range(-1, 3) : in.Range(0, 1);
      o->layout = static_cast<causal_attention::Layout>(layout);
    }
    if (in.Byte() < 64) {
      o->query_offset =
          in.Byte() < 8 ? static_cast<int64_t>(in.U32()) << in.Range(0, 31)
                        : in.Range(-80, 160) - 80;
    }
    const size_t batch = s.batch > 0 ? static_cast<size_t>(s.batch) : 0;
    if (in.Byte() < 80 && batch > 0) {
      key_lengths.resize(batch);
      for (int32_t& l : key_lengths) {
        l = static_cast<int32_t>(in.Range(in.Byte() < 8 ? -2 : 0,
                                          s.key_len + (in.Byte() < 8 ? 3 : 0)));
      }
      o->key_lengths = key_lengths.data();
    }
    if (in.Bool()) o->window_left = in.Range(-2, 90);
    if (in.Bool()) o->window_right = in.Range(in.Byte() < 8 ? -3 : -1, 90);
    if (in.Byte() < 80) {
      o->softcap = in.Byte() < 16 ? in.Float(true)
                                  : (in.Float(false) + 1.0f) * 5.0f + 0.1f;
    }
    const size_t heads = s.heads > 0 ? static_cast<size_t>(s.heads) : 1;
    if (in.Byte() < 80) {
      sinks = in.Floats(heads, raw);
      o->sinks = sinks.data();
    }
    if (in.Byte() < 100) {
      const int64_t full[4] = {s.batch, s.heads, s.query_len, s.key_len};
      size_t n = 1;
      for (int a = 0; a < 4; ++a) {
        const uint8_t mode = in.Byte();
        o->mask.dims[a] = mode < 8 ? in.Range(1, 5)
                          : mode < 128 ? 1
                                       : std::max<int64_t>(1, full[a]);
        n *= static_cast<size_t>(o->mask.dims[a]);
      }
      const uint8_t kind = in.Byte();
      o->mask.kind = static_cast<MaskKind>(kind < 8 ? in.Range(-1, 4)
                                                    : 1 + (kind & 1));
      if (o->mask.kind == MaskKind::kAdditive) {
        additive = in.Floats(n, raw);
        // -inf hides a key; NaN and +inf make the row NaN (the rule every
        // path must follow, checked against the reference's NaN).
        for (float& x : additive) {
          const uint8_t special = in.Byte();
          if (special < 24) x = -INFINITY;
          else if (special < 27) x = NAN;
          else if (special < 30) x = INFINITY;
        }
        o->mask.data = additive.data();
      } else if (in.Byte() >= 4) {  // else a null mask
        allowed.resize(n);
        // Runs of one value, so that whole tiles are all false or all true.
        uint8_t value = in.Byte() & 1;
        for (size_t i = 0; i < n; ++i) {
          if (in.Byte() < 6) value ^= 1;
          allowed[i] = value;
        }
        o->mask.data = allowed.data();
      }
    }
    grad_sinks.assign(heads, 0.0f);
    grad_sinks_ref.assign(heads, 0.0f);
  }
  float* GradSinks() {
    return grad_sinks.empty() ? nullptr : grad_sinks.data();
  }
  float* GradSinksRef() {
    return grad_sinks_ref.empty() ? nullptr : grad_sinks_ref.data();
  }
};

// Results are compared only where scores stay moderate.
bool ScaleIsModerate(const causal_attention::AttentionOptions& o) {
  return !o.scale || std::fabs(*o.scale) <= 2;
}

void FuzzAttention(Input& in, bool raw) {
  causal_attention::AttentionShape s;
  // Mostly valid sizes; sometimes zero or negative to exercise validation.
  const bool bad_shape = in.Byte() < 8;
  s.batch = bad_shape ? in.Range(-2, 2) : in.Range(1, 2);
  s.heads = in.Range(1, 3);
  s.query_len = in.Range(1, 80);
  s.key_len = in.Bool() ? s.query_len : in.Range(1, 80);
  s.head_dim = in.Range(1, 40);
  s.value_dim = in.Bool() ? s.head_dim : in.Range(1, 40);
  const causal_attention::AttentionOptions o = FuzzOptions(in);
  const bool weights = in.Bool();
  // Grouped-query / multi-query KV heads, sometimes ones that do not divide.
  const uint8_t kv_mode = in.Byte();
  if (kv_mode < 96) {
    s.kv_heads = s.heads;
    s.heads *= in.Range(1, 4);
  } else if (kv_mode < 100) {
    s.kv_heads = in.Range(-1, 5);
  }
  // Decode-shaped: a few queries against more keys than one chunk.
  if (in.Byte() < 64) {
    s.query_len = in.Range(1, 4);
    s.key_len = in.Range(1, 3 * causal_attention::kDecodeChunk);
  }
  // A KV cache's capacity (rows past key_len unused), sometimes too small.
  if (in.Bool()) s.kv_capacity = s.key_len + in.Range(-2, 9);
  const size_t bh = s.batch > 0 ? static_cast<size_t>(s.batch * s.heads) : 0;
  size_t kvh = s.batch > 0 && s.kv_heads > 0
                         ? static_cast<size_t>(s.batch * s.kv_heads)
                         : bh;
  const size_t cap = static_cast<size_t>(std::max(s.kv_capacity, s.key_len));
  auto q = in.Floats(bh * s.query_len * s.head_dim, raw);
  auto k = in.Floats(kvh * cap * s.head_dim, raw);
  auto v = in.Floats(kvh * cap * s.value_dim, raw);
  causal_attention::AttentionOptions o_rules = o;
  Rules rules;
  rules.Draw(in, raw, s, &o_rules);
  // A bfloat16 or int8 KV cache (kv_storage.h): k and v as stored rows; the
  // oracle reads the same rows. Drawn after the rules, so that older corpus inputs keep
  // their meaning; sometimes an unknown dtype.
  const uint8_t dtype = in.Byte();
  if (dtype >= 128) {
    s.kv_dtype = dtype == 255   ? static_cast<causal_attention::KvDtype>(3)
                 : dtype >= 192 ? causal_attention::KvDtype::kInt8
                                : causal_attention::KvDtype::kBFloat16;
  }
  // int8 as a decode step's integer route takes it (int8_rows-inl.h), which
  // the draws above rarely reach: head sizes that are multiples of 16 (up to
  // 128) and a block of 4 or 8 query rows on one KV head (G heads of a group
  // times Tq query rows, G the largest of 8, 4, 2 dividing the heads). New
  // data for the new sizes; batch, heads, keys and the rules stay (a mask
  // drawn for the old query length is refused alike by both).
  if (dtype >= 240 && dtype < 255 && s.head_dim > 0 && s.heads > 0 &&
      s.batch > 0) {
    const int64_t rows = in.Bool() ? 8 : 4;
    int64_t g = 1;
    for (const int64_t c : {8, 4, 2}) {
      if (c <= rows && s.heads % c == 0) {
        g = c;
        break;
      }
    }
    s.kv_heads = s.heads / g;
    s.query_len = rows / g;
    kvh = static_cast<size_t>(s.batch * s.kv_heads);
    s.head_dim = 16 * in.Range(1, 8);
    s.value_dim = in.Bool() ? s.head_dim : 16 * in.Range(1, 8);
    q = in.Floats(bh * s.query_len * s.head_dim, raw);
    k = in.Floats(kvh * cap * s.head_dim, raw);
    v = in.Floats(kvh * cap * s.value_dim, raw);
  }
  const size_t n_out = bh * s.query_len * s.value_dim;
  const size_t n_w = bh * s.query_len * s.key_len;
  std::vector<uint8_t> ks, vs;
  const float* kp = k.data();
  const float* vp = v.data();
  if (dtype >= 128 && dtype < 255 && s.head_dim > 0 && s.value_dim > 0) {
    const size_t d = static_cast<size_t>(s.head_dim);
    const size_t dv = static_cast<size_t>(s.value_dim);
    ks.resize(kvh * cap * causal_attention::KvRowBytes(s.kv_dtype, d));
    vs.resize(kvh * cap * causal_attention::KvRowBytes(s.kv_dtype, dv));
    causal_attention::StoreKvRows(s.kv_dtype, k.data(), kvh * cap, d,
                                  ks.data());
    causal_attention::StoreKvRows(s.kv_dtype, v.data(), kvh * cap, dv,
                                  vs.data());
    kp = reinterpret_cast<const float*>(ks.data());
    vp = reinterpret_cast<const float*>(vs.data());
  }
  // The scores before the softmax, now and then (a stage out of range or a
  // null buffer sometimes: refused alike by both).
  std::vector<float> scores, ref_scores;
  causal_attention::AttentionOptions o_ref = o_rules;
  if (in.Byte() < 64) {
    const int64_t stage = in.Byte() < 8 ? in.Range(-1, 5) : in.Range(1, 3);
    o_rules.score_stage = static_cast<causal_attention::ScoreStage>(stage);
    o_ref.score_stage = o_rules.score_stage;
    if (in.Byte() >= 4) {
      scores.resize(n_w);
      ref_scores.resize(n_w);
      o_rules.scores = scores.data();
      o_ref.scores = ref_scores.data();
    }
  }
  // Precision::kInt8 now and then (or a code out of range, refused alike).
  const uint8_t precision = in.Byte();
  if (precision >= 192) {
    o_rules.precision = static_cast<causal_attention::Precision>(
        precision == 255 ? 2 : 1);
    o_ref.precision = o_rules.precision;
  }
  const bool int8 = o_rules.precision == causal_attention::Precision::kInt8;
  std::vector<float> out(n_out), ref_out(n_out), w(n_w), ref_w(n_w);
  const Status a = causal_attention::Attention(
      s, o_rules, q.data(), kp, vp, out.data(), weights ? w.data() : nullptr);
  const Status b = causal_attention::AttentionReference(
      s, o_ref, q.data(), kp, vp, ref_out.data(), ref_w.data());
  Check(a == b);
  if (a != Status::kOk || raw || !ScaleIsModerate(o)) return;
  // An int8 cache's decode step may take the integer route (int8_rows-inl.h):
  // int16 queries and weights, rounded to 2^-16 of their row's (or tile's
  // bound's) largest magnitude, so its error scales with the largest value,
  // not each one: the bound kv-dtype.test.mjs asserts with outlier tokens,
  // 1e-3 of the largest |ref| (measured 2.0e-4 there). One drawn input (d 112,
  // 451 keys) was 1.4e-5 off at |ref| 0.13, past 1e-5 · (1 + |ref|); a wrong
  // key, row or tile is off by O(1).
  double of_largest =
      s.kv_dtype == causal_attention::KvDtype::kInt8 ? 1e-3 : 0.0;
  // Precision::kInt8: attention.h's bound (1e-3 of the largest |ref|) with
  // the default scale; NaN and infinities where the reference has them.
  if (int8) of_largest = o.scale ? 1e30 : 1e-3;
  CheckClose(out, ref_out, 1e-5, of_largest);
  if (weights) CheckClose(w, ref_w, 1e-5, of_largest);
  if (!scores.empty()) CheckClose(scores, ref_scores, 1e-5, of_largest);
}

void FuzzLinear(Input& in, bool raw) {
  const int64_t rows = in.Range(0, 40), n_in = in.Range(1, 70),
                n_out = in.Range(1, 150);
  const bool bias = in.Bool();
  const size_t r = rows > 0 ? static_cast<size_t>(rows) : 0;
  const auto x = in.Floats(r * n_in, raw);
  const auto w = in.Floats(n_out * n_in, raw);
  const auto b = in.Floats(n_out, raw);
  std::vector<float> y(r * n_out), ref(r * n_out);
  const Status a =
      causal_attention::Linear(x.data(), rows, n_in, n_out, w.data(),
                               bias ? b.data() : nullptr, y.data());
  const Status c =
      causal_attention::LinearReference(x.data(), rows, n_in, n_out, w.data(),
                                        bias ? b.data() : nullptr, ref.data());
  Check(a == c);
  if (a == Status::kOk && !raw) CheckClose(y, ref);

  // The backward on the same sizes: grad_y random, gradients accumulated
  // onto random starting values; grad_x and grad_bias sometimes not asked.
  const auto gy = in.Floats(r * n_out, raw);
  auto gw = in.Floats(n_out * n_in, raw), gb = in.Floats(n_out, raw);
  auto gw_ref = gw, gb_ref = gb;
  const bool want_gx = in.Bool();
  std::vector<float> gx(r * n_in), gx_ref(r * n_in);
  const Status d = causal_attention::LinearBackward(
      x.data(), rows, n_in, n_out, w.data(), gy.data(),
      want_gx ? gx.data() : nullptr, gw.data(), bias ? gb.data() : nullptr);
  const Status e = causal_attention::LinearBackwardReference(
      x.data(), rows, n_in, n_out, w.data(), gy.data(),
      want_gx ? gx_ref.data() : nullptr, gw_ref.data(),
      bias ? gb_ref.data() : nullptr);
  Check(d == e);
  if (d != Status::kOk || raw) return;
  CheckClose(gx, gx_ref);
  CheckClose(gw, gw_ref);
  CheckClose(gb, gb_ref);
}

// The layer the JS modules call: random sizes (sometimes invalid), optional
// biases, output projection and outputs, grouped KV heads, RoPE, a KV
// cache (sometimes too full) and a head mask; the SIMD layer against the reference layer,
// as for Attention, and the cache rows each wrote.
void FuzzLayer(Input& in, bool raw) {
  causal_attention::AttentionLayerParams p;
  const bool bad_shape = in.Byte() < 8;
  p.d_in = in.Range(1, 12);
  p.num_heads = bad_shape ? in.Range(-1, 1) : in.Range(1, 4);
  p.head_dim = in.Range(1, 9);
  causal_attention::LayerOptions o;
  o.batch = in.Range(1, 3);
  o.tokens = in.Range(1, 45);
  o.attention.causal =
      static_cast<causal_attention::CausalMask>(in.Range(0, 2));
  o.attention.mask_strategy =
      static_cast<causal_attention::MaskStrategy>(in.Range(0, 1));
  o.attention.training = in.Bool();
  o.attention.dropout = (in.Float(false) + 1) * 0.45f;
  o.attention.seed = in.U32();
  if (in.Byte() < 96 && p.num_heads > 0) {
    p.num_kv_heads = p.num_heads;
    p.num_heads *= in.Range(1, 3);
  }
  if (in.Bool()) {
    p.rope_base = in.Bool() ? 10000.0f : 500000.0f;
    // Llama 3.2's and 3.1's frequency adjustment (src/model/rope.h).
    if (in.Byte() < 96) p.rope_scaling = {in.Bool() ? 32.0f : 8.0f, 1, 4, 8192};
  }
  const bool cached = in.Bool();
  int64_t capacity = 0, length = 0;
  if (cached) {
    capacity = o.tokens + in.Range(0, 30);
    length = in.Range(0, capacity - o.tokens + 1);  // one past: too full
    o.attention.causal = causal_attention::CausalMask::kBottomRight;
  }
  const size_t heads = p.num_heads > 0 ? static_cast<size_t>(p.num_heads) : 0;
  const size_t kv_heads =
      p.num_kv_heads > 0 ? static_cast<size_t>(p.num_kv_heads) : heads;
  const size_t dm = heads * p.head_dim, rows = o.batch * o.tokens;
  const size_t dkv = kv_heads * p.head_dim;
  const size_t d_in = static_cast<size_t>(p.d_in);
  // nn.Linear's scale keeps the scores moderate (see layer_test.cc).
  const float bound = 1.0f / std::sqrt(static_cast<float>(d_in));
  auto params = [&](size_t n) {
    auto v = in.Floats(n, raw);
    for (float& x : v) x *= raw ? 1.0f : bound;
    return v;
  };
  const auto x = in.Floats(rows * d_in, raw);
  const auto wq = params(dm * d_in), wk = params(dkv * d_in),
             wv = params(dkv * d_in), wo = params(dm * dm), bq = params(dm),
             bk = params(dkv), bv = params(dkv), bo = params(dm);
  // The cache before the call, one copy for each side (the layer writes it).
  const size_t cache_n = o.batch * dkv * static_cast<size_t>(capacity);
  std::vector<float> keys = in.Floats(cache_n, raw), values = keys;
  std::vector<float> keys_ref = keys, values_ref = keys;
  if (cached) {
    o.cache = {keys.data(), values.data(), capacity, length};
  }
  p.w_query = wq.data();
  p.w_key = wk.data();
  p.w_value = wv.data();
  if (in.Bool()) {
    p.b_query = bq.data();
    p.b_key = bk.data();
    p.b_value = bv.data();
  }
  if (in.Bool()) {
    p.w_out = wo.data();
    p.b_out = bo.data();
  }
  // The visibility options through the layer: the sinks as its parameter, the
  // layout left as drawn now and then (the layer refuses kBSHD).
  causal_attention::AttentionShape rules_shape{
      o.batch, p.num_heads, o.tokens, length + o.tokens, p.head_dim,
      p.head_dim};
  Rules rules;
  rules.Draw(in, raw, rules_shape, &o.attention);
  if (in.Byte() >= 8) o.attention.layout = causal_attention::Layout::kBHSD;
  if (in.Byte() >= 8) {
    p.sinks = o.attention.sinks;
    o.attention.sinks = nullptr;
  }
  const size_t n_w = o.batch * heads * o.tokens * (length + o.tokens);
  std::vector<float> y(rows * dm), y_ref(rows * dm), w(n_w), w_ref(n_w), s(n_w),
      s_ref(n_w), q(rows * dm), q_ref(rows * dm);
  const bool extras = in.Bool();
  causal_attention::LayerOutputs out, ref;
  out.y = y.data();
  ref.y = y_ref.data();
  if (extras) {
    out.weights = w.data();
    out.scores = s.data();
    out.queries = q.data();
    ref.weights = w_ref.data();
    ref.scores = s_ref.data();
    ref.queries = q_ref.data();
  }
  // A head mask now and then ([1 or batch, heads], or a batch of neither).
  std::vector<float> head_mask;
  if (in.Byte() < 64 && heads > 0) {
    o.head_mask_batch = in.Byte() < 16 ? o.batch + 1 : in.Bool() ? o.batch : 1;
    head_mask = in.Floats(static_cast<size_t>(o.head_mask_batch) * heads, raw);
    o.head_mask = head_mask.data();
  }
  const Status a = causal_attention::AttentionLayerForward(p, o, x.data(), out);
  if (cached) o.cache = {keys_ref.data(), values_ref.data(), capacity, length};
  const Status b =
      causal_attention::AttentionLayerReference(p, o, x.data(), ref);
  Check(a == b);
  if (a != Status::kOk || raw) return;
  CheckClose(y, y_ref);
  CheckClose(keys, keys_ref);
  CheckClose(values, values_ref);
  if (extras) {
    CheckClose(w, w_ref);
    CheckClose(s, s_ref);
    CheckClose(q, q_ref);
  }
}

// AttentionBackward against its reference: random shapes (shared KV heads
// included, sometimes invalid), options, dO, and the forward's own output
// and log-sum-exp; in raw mode every input is arbitrary bits (out and
// log-sum-exp included).
void FuzzBackward(Input& in, bool raw) {
  causal_attention::AttentionShape s;
  causal_attention::AttentionOptions o;
  const bool bad_shape = in.Byte() < 8;
  s.batch = in.Range(1, 2);
  s.kv_heads = bad_shape ? in.Range(-1, 3) : in.Range(0, 2);
  s.heads = bad_shape ? in.Range(0, 4)
                      : (s.kv_heads > 0 ? s.kv_heads : 1) * in.Range(1, 3);
  s.query_len = in.Range(1, 80);
  s.key_len = in.Bool() ? s.query_len : in.Range(1, 80);
  s.head_dim = in.Range(1, 40);
  s.value_dim = in.Bool() ? s.head_dim : in.Range(1, 40);
  o = FuzzOptions(in);
  const size_t heads = s.heads > 0 ? static_cast<size_t>(s.heads) : 0;
  const size_t kvh = s.kv_heads > 0 ? static_cast<size_t>(s.kv_heads) : heads;
  const size_t b = static_cast<size_t>(s.batch);
  const size_t n_q = b * heads * s.query_len * s.head_dim;
  const size_t n_o = b * heads * s.query_len * s.value_dim;
  const size_t n_k = b * kvh * s.key_len * s.head_dim;
  const size_t n_v = b * kvh * s.key_len * s.value_dim;
  const auto q = in.Floats(n_q, raw), k = in.Floats(n_k, raw),
             v = in.Floats(n_v, raw), dout = in.Floats(n_o, raw);
  std::vector<float> out = in.Floats(n_o, raw),
                     lse = in.Floats(b * heads * s.query_len, raw);
  Rules rules;
  rules.Draw(in, raw, s, &o);
  const bool valid =
      causal_attention::ValidateAttentionBackward(
          s, o, dout.data(), q.data(), k.data(), v.data(), out.data(),
          lse.data(), q.data(), k.data(), v.data()) == Status::kOk;
  if (valid && !raw) {  // the forward's own output and log-sum-exp
    Check(causal_attention::AttentionWithLogSumExp(
              s, o, q.data(), k.data(), v.data(), out.data(), nullptr,
              lse.data()) == Status::kOk);
  }
  std::vector<float> gq(n_q), gk(n_k), gv(n_v), rq(n_q), rk(n_k), rv(n_v);
  const Status a = causal_attention::AttentionBackward(
      s, o, dout.data(), q.data(), k.data(), v.data(), out.data(), lse.data(),
      gq.data(), gk.data(), gv.data(), rules.GradSinks());
  const Status r = causal_attention::AttentionBackwardReference(
      s, o, dout.data(), q.data(), k.data(), v.data(), out.data(), lse.data(),
      rq.data(), rk.data(), rv.data(), rules.GradSinksRef());
  Check(a == r);
  if (a != Status::kOk || raw || !ScaleIsModerate(o)) return;
  // Dropout multiplies every kept weight, and so every term the gradients
  // sum, by 1 / (1 - p): float32's rounding error grows with it.
  const double tol =
      2e-5 * (o.training && o.dropout > 0.0f ? 1.0 / (1.0 - o.dropout) : 1.0);
  CheckClose(gq, rq, tol);
  CheckClose(gk, rk, tol);
  CheckClose(gv, rv, tol);
  CheckClose(rules.grad_sinks, rules.grad_sinks_ref, tol);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t what = in.Byte();
  const bool raw = (what & 0x80) != 0;
  switch (what % 4) {
    case 0:
      FuzzAttention(in, raw);
      break;
    case 1:
      FuzzLinear(in, raw);
      break;
    case 2:
      FuzzLayer(in, raw);
      break;
    default:
      FuzzBackward(in, raw);
      break;
  }
  return 0;
}
