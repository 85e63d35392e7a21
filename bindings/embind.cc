// Embind registration: marshalling only. The core's own structs cross the
// boundary as value objects (one JS object per struct, no copies on the
// way to the kernel); pointers arrive as byte offsets into the wasm heap
// (the JS wrapper allocates and copies), sizes as doubles (exact for every
// size a wasm32 heap can hold, range-checked again by the core), and errors
// go back as Status codes, which bindings/engine/codes.mjs turns into JS errors.

#include <emscripten/bind.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/attention/attention.h"
#include "src/attention/attention_backward.h"
#include "src/kv/kv_storage.h"
#include "src/model/layer.h"
#include "src/gemm/linear.h"
#include "src/gemm/stored_linear.h"
#include "src/model/norm.h"
#include "src/gemm/matmul.h"
#include "src/model/optim.h"
#include "src/model/rope.h"
#include "src/base/status.h"
#include "src/base/thread_pool.h"

namespace causal_attention {
namespace {

using emscripten::value_object;

// Field accessors for what Embind cannot map by itself: int64 sizes and
// uint64 seeds (no BigInt here) travel as doubles, enums as their int
// values, pointers as heap offsets, the optional scale as NaN = default.
template <class S, int64_t S::*F>
double GetSize(const S& s) {
  return static_cast<double>(s.*F);
}
template <class S, int64_t S::*F>
void SetSize(S& s, double v) {
  s.*F = static_cast<int64_t>(v);
}
template <class S, class E, E S::*F>
int GetEnum(const S& s) {
  return static_cast<int>(s.*F);
}
template <class S, class E, E S::*F>
void SetEnum(S& s, int v) {
  s.*F = static_cast<E>(v);
}
template <class S, class P, P S::*F>
double GetPointer(const S& s) {
  return static_cast<double>(reinterpret_cast<uintptr_t>(s.*F));
}
template <class S, class P, P S::*F>
void SetPointer(S& s, double v) {
  s.*F = reinterpret_cast<P>(static_cast<uintptr_t>(v));
}
float GetScale(const AttentionOptions& o) {
  return o.scale.value_or(std::nanf(""));
}
void SetScale(AttentionOptions& o, float v) {
  if (std::isnan(v)) {
    o.scale.reset();
  } else {
    o.scale = v;
  }
}
// The seed as two 32-bit halves (JS: checkSeed's [lo, hi]).
double GetSeedLo(const AttentionOptions& o) {
  return static_cast<double>(o.seed & 0xffffffffu);
}
double GetSeedHi(const AttentionOptions& o) {
  return static_cast<double>(o.seed >> 32);
}
void SetSeedLo(AttentionOptions& o, double v) {
  o.seed = (o.seed & ~uint64_t{0xffffffffu}) | static_cast<uint32_t>(v);
}
void SetSeedHi(AttentionOptions& o, double v) {
  o.seed = (o.seed & 0xffffffffu) |
           (static_cast<uint64_t>(static_cast<uint32_t>(v)) << 32);
}

// The optional query offset as NaN = empty (the default of the causal
// alignment); integers travel as doubles (exact below 2^53).
double GetQueryOffset(const AttentionOptions& o) {
  return o.query_offset.has_value() ? static_cast<double>(*o.query_offset)
                                    : std::nan("");
}
void SetQueryOffset(AttentionOptions& o, double v) {
  if (std::isnan(v)) {
    o.query_offset.reset();
  } else {
    o.query_offset = static_cast<int64_t>(v);
  }
}
// The mask's four parts as flat fields (kind, data, dims[4]).
int GetMaskKind(const AttentionOptions& o) {
  return static_cast<int>(o.mask.kind);
}
void SetMaskKind(AttentionOptions& o, int v) {
  o.mask.kind = static_cast<MaskKind>(v);
}
double GetMaskData(const AttentionOptions& o) {
  return static_cast<double>(reinterpret_cast<uintptr_t>(o.mask.data));
}
void SetMaskData(AttentionOptions& o, double v) {
  o.mask.data = reinterpret_cast<const void*>(static_cast<uintptr_t>(v));
}
template <int A>
double GetMaskDim(const AttentionOptions& o) {
  return static_cast<double>(o.mask.dims[A]);
}
template <int A>
void SetMaskDim(AttentionOptions& o, double v) {
  o.mask.dims[A] = static_cast<int64_t>(v);
}

#define CA_SIZE(S, f) &GetSize<S, &S::f>, &SetSize<S, &S::f>
#define CA_ENUM(S, E, f) &GetEnum<S, E, &S::f>, &SetEnum<S, E, &S::f>
#define CA_IN(S, f) \
  &GetPointer<S, const float*, &S::f>, &SetPointer<S, const float*, &S::f>
#define CA_KEY_LENGTHS(S, f)                     \
  &GetPointer<S, const int32_t*, &S::f>, \
      &SetPointer<S, const int32_t*, &S::f>
#define CA_OUT(S, f) \
  &GetPointer<S, float*, &S::f>, &SetPointer<S, float*, &S::f>

const float* In(uintptr_t p) { return reinterpret_cast<const float*>(p); }
float* Out(uintptr_t p) { return reinterpret_cast<float*>(p); }

// One signature for both the SIMD kernel and the reference; weights and
// log_sum_exp may be 0 (not computed).
template <Status (*Fn)(const AttentionShape&, const AttentionOptions&,
                       const float*, const float*, const float*, float*, float*,
                       float*)>
int CallAttention(const AttentionShape& shape, const AttentionOptions& options,
                  uintptr_t q, uintptr_t k, uintptr_t v, uintptr_t out,
                  uintptr_t weights, uintptr_t log_sum_exp) {
  return static_cast<int>(Fn(shape, options, In(q), In(k), In(v), Out(out),
                             Out(weights), Out(log_sum_exp)));
}

// grad_sinks may be 0 (no sinks).
template <Status (*Fn)(const AttentionShape&, const AttentionOptions&,
                       const float*, const float*, const float*, const float*,
                       const float*, const float*, float*, float*, float*,
                       float*)>
int CallAttentionBackward(const AttentionShape& shape,
                          const AttentionOptions& options, uintptr_t grad_out,
                          uintptr_t q, uintptr_t k, uintptr_t v, uintptr_t out,
                          uintptr_t log_sum_exp, uintptr_t grad_q,
                          uintptr_t grad_k, uintptr_t grad_v,
                          uintptr_t grad_sinks) {
  return static_cast<int>(Fn(shape, options, In(grad_out), In(q), In(k), In(v),
                             In(out), In(log_sum_exp), Out(grad_q), Out(grad_k),
                             Out(grad_v), Out(grad_sinks)));
}

int CallLayerForward(const AttentionLayerParams& params,
                     const LayerOptions& options, uintptr_t x,
                     const LayerOutputs& outputs) {
  return static_cast<int>(
      AttentionLayerForward(params, options, In(x), outputs));
}

int CallLayerBackward(const AttentionLayerParams& params,
                      const LayerOptions& options, uintptr_t x,
                      const LayerActivations& saved, uintptr_t grad_y,
                      uintptr_t grad_x, const AttentionLayerGrads& grads) {
  return static_cast<int>(AttentionLayerBackward(
      params, options, In(x), saved, In(grad_y), Out(grad_x), grads));
}

// The caller (bindings/engine/engine.mjs appendToCache) checked the sizes.
void CallStoreKvRows(int dtype, uintptr_t src, double rows, double width,
                     uintptr_t dst) {
  StoreKvRows(static_cast<KvDtype>(dtype), In(src), static_cast<size_t>(rows),
              static_cast<size_t>(width), reinterpret_cast<void*>(dst));
}
double CallKvRowBytes(int dtype, double width) {
  return static_cast<double>(
      KvRowBytes(static_cast<KvDtype>(dtype), static_cast<size_t>(width)));
}

int CallLinearBackward(uintptr_t x, double rows, double in, double out,
                       uintptr_t w, uintptr_t grad_y, uintptr_t grad_x,
                       uintptr_t grad_w, uintptr_t grad_b) {
  return static_cast<int>(
      LinearBackward(In(x), static_cast<int64_t>(rows),
                     static_cast<int64_t>(in), static_cast<int64_t>(out), In(w),
                     In(grad_y), Out(grad_x), Out(grad_w), Out(grad_b)));
}

// Linear on stored weights (src/gemm/stored_linear.h): their byte size, the
// rounding into a block the caller allocated, and the forward.
double CallStoredWeightsBytes(int dtype, double out, double in) {
  return static_cast<double>(StoredWeightsBytes(static_cast<KvDtype>(dtype),
                                                static_cast<int64_t>(out),
                                                static_cast<int64_t>(in)));
}
int CallStoreWeights(int dtype, uintptr_t w, double out, double in,
                     uintptr_t dst) {
  return static_cast<int>(StoreWeights(
      static_cast<KvDtype>(dtype), In(w), static_cast<int64_t>(out),
      static_cast<int64_t>(in), reinterpret_cast<void*>(dst)));
}
// Each row's stored values as floats (LoadKvRow, row by row): what the
// kernels multiply by.
void CallLoadStoredWeights(int dtype, uintptr_t src, double out, double in,
                           uintptr_t dst) {
  const KvDtype d = static_cast<KvDtype>(dtype);
  const size_t width = static_cast<size_t>(in);
  const size_t row_bytes = KvRowBytes(d, width);
  for (size_t o = 0; o < static_cast<size_t>(out); ++o) {
    LoadKvRow(d, reinterpret_cast<const uint8_t*>(src) + o * row_bytes, width,
              Out(dst) + o * width);
  }
}
int CallStoredLinear(uintptr_t x, double rows, double in, double out,
                     int dtype, uintptr_t w, uintptr_t b, uintptr_t y) {
  return static_cast<int>(StoredLinear(
      In(x), static_cast<int64_t>(rows), static_cast<int64_t>(in),
      static_cast<int64_t>(out), static_cast<KvDtype>(dtype),
      reinterpret_cast<const void*>(w), In(b), Out(y)));
}

int CallLinear(uintptr_t x, double rows, double in, double out, uintptr_t w,
               uintptr_t b, uintptr_t y) {
  return static_cast<int>(
      Linear(In(x), static_cast<int64_t>(rows), static_cast<int64_t>(in),
             static_cast<int64_t>(out), In(w), In(b), Out(y)));
}

// The models' normalisations and activations (src/model/norm.h); sizes as
// doubles (JS numbers), pointers as byte offsets.
int CallLayerNorm(uintptr_t x, double rows, double dim, uintptr_t scale,
                  uintptr_t shift, float eps, uintptr_t y, uintptr_t mean,
                  uintptr_t rstd) {
  return static_cast<int>(LayerNorm(
      In(x), static_cast<int64_t>(rows), static_cast<int64_t>(dim), In(scale),
      In(shift), eps, Out(y), Out(mean), Out(rstd)));
}

int CallLayerNormBackward(uintptr_t x, double rows, double dim,
                          uintptr_t scale, uintptr_t mean, uintptr_t rstd,
                          uintptr_t grad_y, uintptr_t grad_x,
                          uintptr_t grad_scale, uintptr_t grad_shift) {
  return static_cast<int>(LayerNormBackward(
      In(x), static_cast<int64_t>(rows), static_cast<int64_t>(dim), In(scale),
      In(mean), In(rstd), In(grad_y), Out(grad_x), Out(grad_scale),
      Out(grad_shift)));
}

int CallRmsNorm(uintptr_t x, double rows, double dim, uintptr_t weight,
                float eps, uintptr_t y, uintptr_t rstd) {
  return static_cast<int>(RmsNorm(In(x), static_cast<int64_t>(rows),
                                  static_cast<int64_t>(dim), In(weight), eps,
                                  Out(y), Out(rstd)));
}

int CallRmsNormBackward(uintptr_t x, double rows, double dim,
                        uintptr_t weight, uintptr_t rstd, uintptr_t grad_y,
                        uintptr_t grad_x, uintptr_t grad_weight) {
  return static_cast<int>(RmsNormBackward(
      In(x), static_cast<int64_t>(rows), static_cast<int64_t>(dim), In(weight),
      In(rstd), In(grad_y), Out(grad_x), Out(grad_weight)));
}

// kind: 0 GELU, 1 SiLU, 2 SiLU(a)·b (b only there). Forward: y.
int CallActivation(int kind, uintptr_t a, uintptr_t b, double n, uintptr_t y) {
  const int64_t count = static_cast<int64_t>(n);
  if (kind == 0) return static_cast<int>(Gelu(In(a), count, Out(y)));
  if (kind == 1) return static_cast<int>(Silu(In(a), count, Out(y)));
  return static_cast<int>(SiluMul(In(a), In(b), count, Out(y)));
}

// Backward: grad_a (and grad_b for SiLU(a)·b).
int CallActivationBackward(int kind, uintptr_t a, uintptr_t b,
                           uintptr_t grad_y, double n, uintptr_t grad_a,
                           uintptr_t grad_b) {
  const int64_t count = static_cast<int64_t>(n);
  if (kind == 0) {
    return static_cast<int>(GeluBackward(In(a), In(grad_y), count, Out(grad_a)));
  }
  if (kind == 1) {
    return static_cast<int>(SiluBackward(In(a), In(grad_y), count, Out(grad_a)));
  }
  return static_cast<int>(SiluMulBackward(In(a), In(b), In(grad_y), count,
                                          Out(grad_a), Out(grad_b)));
}

// AdamW.step's one call: `table` holds per tensor the staged p, g, m, v
// (byte addresses), n, and minus_step, correction2 (float bits): seven
// 32-bit words (bindings/engine/engine.mjs adamWUpdate).
void CallAdamWUpdate(float decay, float one_minus_beta1, float beta2,
                     float one_minus_beta2, float eps, double count,
                     uintptr_t table) {
  const AdamWStep step{decay, one_minus_beta1, beta2, one_minus_beta2, eps};
  const uint32_t* w = reinterpret_cast<const uint32_t*>(table);
  std::vector<AdamWTensor> tensors(static_cast<size_t>(count));
  for (AdamWTensor& t : tensors) {
    t.p = Out(w[0]);
    t.g = In(w[1]);
    t.m = Out(w[2]);
    t.v = Out(w[3]);
    t.n = w[4];
    memcpy(&t.minus_step, &w[5], sizeof(float));
    memcpy(&t.correction2, &w[6], sizeof(float));
    w += 7;
  }
  AdamWUpdate(step, tensors.data(), tensors.size());
}

std::string TargetName() { return ActiveTargetName(); }
std::string GemmKernelName() {
  return ActiveGemmKernel() == GemmKernel::kRelaxedSimd ? "relaxed-simd"
                                                         : "simd128";
}
std::string Message(int status) {
  return StatusMessage(static_cast<Status>(status));
}
// What the last refused call on this thread refused, naming the argument.
std::string Detail() { return StatusDetail(); }
float CallDefaultScale(double head_dim) {
  return DefaultScale(static_cast<int64_t>(head_dim));
}

// Every value object below default-constructed, by its registered name: the
// JS fills what a call leaves out (no cache, no RoPE scaling, ...) from
// these, so the core's defaults are written once, in its headers.
emscripten::val StructDefaults() {
  emscripten::val d = emscripten::val::object();
  d.set("AttentionShape", AttentionShape{});
  d.set("AttentionOptions", AttentionOptions{});
  d.set("RopeScaling", RopeScaling{});
  d.set("AttentionLayerParams", AttentionLayerParams{});
  d.set("KVCacheView", KVCacheView{});
  d.set("LayerOptions", LayerOptions{});
  d.set("LayerOutputs", LayerOutputs{});
  d.set("LayerActivations", LayerActivations{});
  d.set("AttentionLayerGrads", AttentionLayerGrads{});
  return d;
}

}  // namespace
}  // namespace causal_attention

EMSCRIPTEN_BINDINGS(causal_attention) {
  using namespace causal_attention;  // NOLINT
  using emscripten::enum_;
  using emscripten::function;

  // The codes themselves, so that a test can check bindings/engine/codes.mjs.
  enum_<Status>("Status")
      .value("kOk", Status::kOk)
      .value("kInvalidShape", Status::kInvalidShape)
      .value("kTooLarge", Status::kTooLarge)
      .value("kInvalidOption", Status::kInvalidOption)
      .value("kNullPointer", Status::kNullPointer)
      .value("kOutOfMemory", Status::kOutOfMemory);
  enum_<CausalMask>("CausalMask")
      .value("kNone", CausalMask::kNone)
      .value("kTopLeft", CausalMask::kTopLeft)
      .value("kBottomRight", CausalMask::kBottomRight);
  enum_<MaskStrategy>("MaskStrategy")
      .value("kNegInf", MaskStrategy::kNegInf)
      .value("kRenormalize", MaskStrategy::kRenormalize);
  enum_<Layout>("Layout")
      .value("kBHSD", Layout::kBHSD)
      .value("kBSHD", Layout::kBSHD);
  enum_<KvDtype>("KvDtype")
      .value("kFloat32", KvDtype::kFloat32)
      .value("kBFloat16", KvDtype::kBFloat16)
      .value("kInt8", KvDtype::kInt8);
  enum_<ScoreStage>("ScoreStage")
      .value("kNone", ScoreStage::kNone)
      .value("kScaled", ScoreStage::kScaled)
      .value("kSoftcapped", ScoreStage::kSoftcapped)
      .value("kMasked", ScoreStage::kMasked);
  enum_<Precision>("Precision")
      .value("kFloat32", Precision::kFloat32)
      .value("kInt8", Precision::kInt8);
  enum_<MaskKind>("MaskKind")
      .value("kNone", MaskKind::kNone)
      .value("kBoolean", MaskKind::kBoolean)
      .value("kAdditive", MaskKind::kAdditive);

  using Shape = AttentionShape;
  value_object<Shape>("AttentionShape")
      .field("batch", CA_SIZE(Shape, batch))
      .field("heads", CA_SIZE(Shape, heads))
      .field("queryLength", CA_SIZE(Shape, query_len))
      .field("keyLength", CA_SIZE(Shape, key_len))
      .field("headDim", CA_SIZE(Shape, head_dim))
      .field("valueDim", CA_SIZE(Shape, value_dim))
      .field("kvHeads", CA_SIZE(Shape, kv_heads))
      .field("kvCapacity", CA_SIZE(Shape, kv_capacity))
      .field("kvDtype", CA_ENUM(Shape, KvDtype, kv_dtype));
  using Options = AttentionOptions;
  value_object<Options>("AttentionOptions")
      .field("causal", CA_ENUM(Options, CausalMask, causal))
      .field("maskStrategy", CA_ENUM(Options, MaskStrategy, mask_strategy))
      .field("scale", &GetScale, &SetScale)
      .field("dropout", &Options::dropout)
      .field("training", &Options::training)
      .field("seedLo", &GetSeedLo, &SetSeedLo)
      .field("seedHi", &GetSeedHi, &SetSeedHi)
      .field("layout", CA_ENUM(Options, Layout, layout))
      .field("queryOffset", &GetQueryOffset, &SetQueryOffset)
      .field("keyLengths", CA_KEY_LENGTHS(Options, key_lengths))
      .field("windowLeft", CA_SIZE(Options, window_left))
      .field("windowRight", CA_SIZE(Options, window_right))
      .field("softcap", &Options::softcap)
      .field("sinks", CA_IN(Options, sinks))
      .field("maskKind", &GetMaskKind, &SetMaskKind)
      .field("mask", &GetMaskData, &SetMaskData)
      .field("maskBatch", &GetMaskDim<0>, &SetMaskDim<0>)
      .field("maskHeads", &GetMaskDim<1>, &SetMaskDim<1>)
      .field("maskQueries", &GetMaskDim<2>, &SetMaskDim<2>)
      .field("maskKeys", &GetMaskDim<3>, &SetMaskDim<3>)
      .field("scoreStage", CA_ENUM(Options, ScoreStage, score_stage))
      .field("scores", CA_OUT(Options, scores))
      .field("precision", CA_ENUM(Options, Precision, precision));
  value_object<RopeScaling>("RopeScaling")
      .field("factor", &RopeScaling::factor)
      .field("lowFreqFactor", &RopeScaling::low_freq_factor)
      .field("highFreqFactor", &RopeScaling::high_freq_factor)
      .field("originalContextLength", &RopeScaling::original_context_length);
  using Params = AttentionLayerParams;
  value_object<Params>("AttentionLayerParams")
      .field("dIn", CA_SIZE(Params, d_in))
      .field("numHeads", CA_SIZE(Params, num_heads))
      .field("headDim", CA_SIZE(Params, head_dim))
      .field("numKVHeads", CA_SIZE(Params, num_kv_heads))
      .field("ropeBase", &Params::rope_base)
      .field("ropeScaling", &Params::rope_scaling)
      .field("wQuery", CA_IN(Params, w_query))
      .field("bQuery", CA_IN(Params, b_query))
      .field("wKey", CA_IN(Params, w_key))
      .field("bKey", CA_IN(Params, b_key))
      .field("wValue", CA_IN(Params, w_value))
      .field("bValue", CA_IN(Params, b_value))
      .field("wOut", CA_IN(Params, w_out))
      .field("bOut", CA_IN(Params, b_out))
      .field("weightsDtype", CA_ENUM(Params, KvDtype, weights_dtype))
      .field("sinks", CA_IN(Params, sinks));
  value_object<KVCacheView>("KVCacheView")
      .field("keys", CA_OUT(KVCacheView, keys))
      .field("values", CA_OUT(KVCacheView, values))
      .field("capacity", CA_SIZE(KVCacheView, capacity))
      .field("length", CA_SIZE(KVCacheView, length))
      .field("start", CA_SIZE(KVCacheView, start))
      .field("dtype", CA_ENUM(KVCacheView, KvDtype, dtype));
  value_object<LayerOptions>("LayerOptions")
      .field("batch", CA_SIZE(LayerOptions, batch))
      .field("tokens", CA_SIZE(LayerOptions, tokens))
      .field("attention", &LayerOptions::attention)
      .field("cache", &LayerOptions::cache)
      .field("headMask", CA_IN(LayerOptions, head_mask))
      .field("headMaskBatch", CA_SIZE(LayerOptions, head_mask_batch));
  using Outputs = LayerOutputs;
  value_object<Outputs>("LayerOutputs")
      .field("y", CA_OUT(Outputs, y))
      .field("weights", CA_OUT(Outputs, weights))
      .field("scores", CA_OUT(Outputs, scores))
      .field("queries", CA_OUT(Outputs, queries))
      .field("keys", CA_OUT(Outputs, keys))
      .field("values", CA_OUT(Outputs, values))
      .field("context", CA_OUT(Outputs, context))
      .field("logSumExp", CA_OUT(Outputs, log_sum_exp));
  using Saved = LayerActivations;
  value_object<Saved>("LayerActivations")
      .field("queries", CA_IN(Saved, queries))
      .field("keys", CA_IN(Saved, keys))
      .field("values", CA_IN(Saved, values))
      .field("context", CA_IN(Saved, context))
      .field("logSumExp", CA_IN(Saved, log_sum_exp));
  using Grads = AttentionLayerGrads;
  value_object<Grads>("AttentionLayerGrads")
      .field("wQuery", CA_OUT(Grads, w_query))
      .field("bQuery", CA_OUT(Grads, b_query))
      .field("wKey", CA_OUT(Grads, w_key))
      .field("bKey", CA_OUT(Grads, b_key))
      .field("wValue", CA_OUT(Grads, w_value))
      .field("bValue", CA_OUT(Grads, b_value))
      .field("wOut", CA_OUT(Grads, w_out))
      .field("bOut", CA_OUT(Grads, b_out))
      .field("sinks", CA_OUT(Grads, sinks));

  function("attention", &CallAttention<AttentionWithLogSumExp>);
  function("attentionReference",
           &CallAttention<AttentionWithLogSumExpReference>);
  function("attentionBackward", &CallAttentionBackward<AttentionBackward>);
  function("attentionBackwardReference",
           &CallAttentionBackward<AttentionBackwardReference>);
  function("layerForward", &CallLayerForward);
  function("storeKvRows", &CallStoreKvRows);
  function("kvRowBytes", &CallKvRowBytes);
  function("layerBackward", &CallLayerBackward);
  function("linear", &CallLinear);
  function("linearBackward", &CallLinearBackward);
  function("storedWeightsBytes", &CallStoredWeightsBytes);
  function("storeWeights", &CallStoreWeights);
  function("storedLinear", &CallStoredLinear);
  function("loadStoredWeights", &CallLoadStoredWeights);
  function("adamWUpdate", &CallAdamWUpdate);
  function("layerNorm", &CallLayerNorm);
  function("layerNormBackward", &CallLayerNormBackward);
  function("rmsNorm", &CallRmsNorm);
  function("rmsNormBackward", &CallRmsNormBackward);
  function("activation", &CallActivation);
  function("activationBackward", &CallActivationBackward);
  function("defaultScale", &CallDefaultScale);
  function("structDefaults", &StructDefaults);
  function("setNumThreads", &SetNumThreads);
  function("numThreads", &NumThreads);
  function("targetName", &TargetName);
  function("allowRelaxedGemmKernel", &AllowRelaxedGemmKernel);
  function("gemmKernelName", &GemmKernelName);
  function("statusMessage", &Message);
  function("statusDetail", &Detail);
}
