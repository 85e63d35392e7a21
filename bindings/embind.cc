// Embind registration: marshalling only. Pointers arrive as byte offsets
// into the wasm heap (the JS wrapper allocates and copies); shapes arrive
// as doubles (exact for every size a wasm32 heap can hold) and are
// range-checked again by the core; errors go back as Status codes, which
// bindings/errors.mjs turns into TypeError/RangeError.

#include <emscripten/bind.h>
#include <stdint.h>

#include "src/causal_attention.h"
#include "src/modules.h"

namespace causal_attention {
namespace {

const float* In(uintptr_t p) { return reinterpret_cast<const float*>(p); }
float* Out(uintptr_t p) { return reinterpret_cast<float*>(p); }

AttentionShape MakeShape(double b, double h, double tq, double tk, double d,
                         double dv) {
  AttentionShape s;
  s.batch = static_cast<int64_t>(b);
  s.heads = static_cast<int64_t>(h);
  s.query_len = static_cast<int64_t>(tq);
  s.key_len = static_cast<int64_t>(tk);
  s.head_dim = static_cast<int64_t>(d);
  s.value_dim = static_cast<int64_t>(dv);
  return s;
}

AttentionOptions MakeOptions(int causal, int strategy, float scale,
                             float dropout, bool training, double seed_lo,
                             double seed_hi) {
  AttentionOptions o;
  o.causal = static_cast<CausalMask>(causal);
  o.mask_strategy = static_cast<MaskStrategy>(strategy);
  o.scale = scale;
  o.dropout = dropout;
  o.training = training;
  o.seed =
      (static_cast<uint64_t>(seed_hi) << 32) | static_cast<uint64_t>(seed_lo);
  return o;
}

// One signature for both the SIMD kernel and the reference.
template <Status (*Fn)(const AttentionShape&, const AttentionOptions&,
                       const float*, const float*, const float*, float*,
                       float*)>
int Call(uintptr_t q, uintptr_t k, uintptr_t v, uintptr_t out,
         uintptr_t weights, double b, double h, double tq, double tk, double d,
         double dv, int causal, int strategy, float scale, float dropout,
         bool training, double seed_lo, double seed_hi) {
  return static_cast<int>(Fn(
      MakeShape(b, h, tq, tk, d, dv),
      MakeOptions(causal, strategy, scale, dropout, training, seed_lo, seed_hi),
      In(q), In(k), In(v), Out(out), Out(weights)));
}

// One layer forward; parameter pointers of 0 mean "none" (biases, output
// projection, the optional weights/scores outputs).
int LayerForward(uintptr_t x, uintptr_t y, uintptr_t weights, uintptr_t scores,
                 uintptr_t wq, uintptr_t bq, uintptr_t wk, uintptr_t bk,
                 uintptr_t wv, uintptr_t bv, uintptr_t wo, uintptr_t bo,
                 double batch, double tokens, double d_in, double heads,
                 double head_dim, int causal, int strategy, float dropout,
                 bool training, double seed_lo, double seed_hi) {
  AttentionLayerParams p;
  p.d_in = static_cast<int64_t>(d_in);
  p.num_heads = static_cast<int64_t>(heads);
  p.head_dim = static_cast<int64_t>(head_dim);
  p.w_query = In(wq);
  p.b_query = In(bq);
  p.w_key = In(wk);
  p.b_key = In(bk);
  p.w_value = In(wv);
  p.b_value = In(bv);
  p.w_out = In(wo);
  p.b_out = In(bo);
  const AttentionOptions a =
      MakeOptions(causal, strategy, 1.0f, dropout, training, seed_lo, seed_hi);
  LayerOptions o;
  o.batch = static_cast<int64_t>(batch);
  o.tokens = static_cast<int64_t>(tokens);
  o.causal = a.causal;
  o.mask_strategy = a.mask_strategy;
  o.dropout = a.dropout;
  o.training = a.training;
  o.seed = a.seed;
  return static_cast<int>(
      AttentionLayerForward(p, o, In(x), Out(y), Out(weights), Out(scores)));
}

int LinearForward(uintptr_t x, uintptr_t y, uintptr_t w, uintptr_t b,
                  double rows, double in, double out) {
  return static_cast<int>(
      Linear(In(x), static_cast<int64_t>(rows), static_cast<int64_t>(in),
             static_cast<int64_t>(out), In(w), In(b), Out(y)));
}

std::string TargetName() { return ActiveTargetName(); }
std::string Message(int status) {
  return StatusMessage(static_cast<Status>(status));
}

}  // namespace
}  // namespace causal_attention

EMSCRIPTEN_BINDINGS(causal_attention) {
  using namespace causal_attention;  // NOLINT
  emscripten::function("attention", &Call<Attention>);
  emscripten::function("attentionReference", &Call<AttentionReference>);
  emscripten::function("layerForward", &LayerForward);
  emscripten::function("linear", &LinearForward);
  emscripten::function("setNumThreads", &SetNumThreads);
  emscripten::function("numThreads", &NumThreads);
  emscripten::function("targetName", &TargetName);
  emscripten::function("statusMessage", &Message);
}
