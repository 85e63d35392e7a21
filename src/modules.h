// The attention modules of chapter 3 (CausalAttention,
// MultiHeadAttentionWrapper, MultiHeadAttention, and SelfAttention_v2), with
// PyTorch's parameter names, layouts and seeded initialisation.
//
// Two levels:
//  * Functions on pointers (Linear, AttentionLayerForward): stateless, used by
//    the wasm bindings, where the JS classes own the parameters.
//  * Classes owning their parameters (CausalAttentionModule, ...), for native
//    users who link the library.
//
// Layouts (row-major float32): x [batch, tokens, d_in]; a Linear weight is
// [out_features, in_features] and its bias [out_features], as nn.Linear;
// y [batch, tokens, d_model] with d_model = num_heads * head_dim and the
// heads concatenated on the last axis; weights [batch, heads, tokens, tokens].

#ifndef CAUSAL_ATTENTION_SRC_MODULES_H_
#define CAUSAL_ATTENTION_SRC_MODULES_H_

#include <stddef.h>
#include <stdint.h>

#include <map>
#include <string>
#include <vector>

#include "src/causal_attention.h"

namespace causal_attention {

// y = x · weightᵀ + bias, as nn.Linear: x [rows, in], weight [out, in],
// bias [out] or null, y [rows, out]. SIMD (register-blocked Highway GEMM),
// threaded over row and column blocks; bit-identical for any thread count.
Status Linear(const float* x, int64_t rows, int64_t in, int64_t out,
              const float* weight, const float* bias, float* y);
// The oracle: scalar, double accumulation.
Status LinearReference(const float* x, int64_t rows, int64_t in, int64_t out,
                       const float* weight, const float* bias, float* y);

// Parameters of one attention layer (not owned). The Q/K/V projections
// produce all heads at once: w_* is [num_heads * head_dim, d_in] (the heads'
// rows stacked), b_* is [num_heads * head_dim] or null. w_out/b_out is the
// output projection [d_model, d_model] / [d_model]; null for none.
struct AttentionLayerParams {
  int64_t d_in = 1;
  int64_t num_heads = 1;
  int64_t head_dim = 1;
  const float* w_query = nullptr;
  const float* b_query = nullptr;
  const float* w_key = nullptr;
  const float* b_key = nullptr;
  const float* w_value = nullptr;
  const float* b_value = nullptr;
  const float* w_out = nullptr;
  const float* b_out = nullptr;
};

struct LayerOptions {
  int64_t batch = 1;
  int64_t tokens = 1;
  CausalMask causal = CausalMask::kTopLeft;
  MaskStrategy mask_strategy = MaskStrategy::kNegInf;
  float dropout = 0.0f;
  bool training = false;
  uint64_t seed = 0;
};

// One forward pass: project, split heads, scaled dot-product attention
// (scale 1/sqrt(head_dim)), merge heads, output projection.
// `weights` [batch, heads, tokens, tokens] (post-dropout) and `scores`
// [batch, heads, tokens, tokens] (raw Q·Kᵀ, before scaling and masking) are
// optional outputs.
Status AttentionLayerForward(const AttentionLayerParams& params,
                             const LayerOptions& options, const float* x,
                             float* y, float* weights, float* scores);
// The same with LinearReference and AttentionReference.
Status AttentionLayerReference(const AttentionLayerParams& params,
                               const LayerOptions& options, const float* x,
                               float* y, float* weights, float* scores);

// ---------------------------------------------------------------------------
// PyTorch's CPU generator: mt19937 seeded with the low 32 bits of the seed.
class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;  // torch's
  explicit Generator(uint64_t seed = kDefaultSeed) { ManualSeed(seed); }
  void ManualSeed(uint64_t seed);
  uint32_t NextUint32();
  // One float32 draw in [from, to), exactly as torch's uniform_ on CPU.
  float Uniform(float from, float to);
  // Fills like nn.Linear's reset_parameters: weight ~ U(-1/√in, 1/√in)
  // (kaiming_uniform_ with a = √5), then the bias (if any) the same way.
  void InitLinear(int64_t in, int64_t out, std::vector<float>* weight,
                  std::vector<float>* bias);

 private:
  uint32_t state_[624];
  int index_ = 624;
};

// Parameters by PyTorch state_dict name ("W_query.weight", ...).
using StateDict = std::map<std::string, std::vector<float>>;

// The book's modules. Constructors draw from `gen` in the book's __init__
// order; forward() checks tokens <= context_length. Modules start in
// training mode, as nn.Module does (dropout acts only in training).
class AttentionModule {
 public:
  virtual ~AttentionModule() = default;
  // x [batch, tokens, d_in] -> y [batch, tokens, OutputDim()]; weights
  // [batch, heads, tokens, tokens] optional. Draws the dropout seed from
  // `seed`.
  Status Forward(const float* x, int64_t batch, int64_t tokens, float* y,
                 float* weights = nullptr, uint64_t seed = 0) const;
  void Train(bool mode = true) { training_ = mode; }
  void Eval() { training_ = false; }
  bool training() const { return training_; }
  int64_t OutputDim() const { return num_heads_ * head_dim_; }
  int64_t NumHeads() const { return num_heads_; }
  StateDict GetStateDict() const;
  // Checks every name and size; on any mismatch nothing is loaded and
  // `error` (if given) lists all mismatches.
  Status LoadStateDict(const StateDict& dict, std::string* error = nullptr);

 protected:
  struct Projection {
    std::string prefix;  // "W_query", "heads.0.W_query", "out_proj", ...
    std::vector<float> weight, bias;
  };
  AttentionModule(int64_t d_in, int64_t num_heads, int64_t head_dim,
                  int64_t context_length, float dropout, CausalMask causal)
      : d_in_(d_in),
        num_heads_(num_heads),
        head_dim_(head_dim),
        context_length_(context_length),
        dropout_(dropout),
        causal_(causal) {}
  // Appends W_query, W_key, W_value (prefix + "W_query", ...) drawn from gen.
  void AddQkv(const std::string& prefix, int64_t out, bool bias,
              Generator& gen);
  // The Q/K/V projections of every head (in state-dict order), and the
  // output projection if any.
  std::vector<Projection> qkv_;  // per head: query, key, value
  std::vector<Projection> out_;  // empty or one
  int64_t d_in_, num_heads_, head_dim_, context_length_;  // 0: no limit
  float dropout_;
  CausalMask causal_;
  bool training_ = true;
  bool valid_ = true;  // false if the constructor got invalid sizes
};

// SelfAttention_v2 of the book: no mask, no dropout, any number of tokens.
class SelfAttentionModule : public AttentionModule {
 public:
  SelfAttentionModule(int64_t d_in, int64_t d_out, bool qkv_bias,
                      Generator& gen);
};

class CausalAttentionModule : public AttentionModule {
 public:
  CausalAttentionModule(int64_t d_in, int64_t d_out, int64_t context_length,
                        float dropout, bool qkv_bias, Generator& gen);
};

// num_heads independent CausalAttention heads of width d_out, outputs
// concatenated (width num_heads * d_out); names "heads.<i>.W_query.weight".
class MultiHeadAttentionWrapperModule : public AttentionModule {
 public:
  MultiHeadAttentionWrapperModule(int64_t d_in, int64_t d_out,
                                  int64_t context_length, float dropout,
                                  int64_t num_heads, bool qkv_bias,
                                  Generator& gen);
};

// One projection per Q/K/V split into num_heads heads of d_out / num_heads,
// then out_proj (with bias). d_out must be divisible by num_heads.
class MultiHeadAttentionModule : public AttentionModule {
 public:
  MultiHeadAttentionModule(int64_t d_in, int64_t d_out, int64_t context_length,
                           float dropout, int64_t num_heads, bool qkv_bias,
                           Generator& gen);
};

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_MODULES_H_
