// PyTorch-compatible generator and the book's module classes.

#include "src/modules.h"

#include <cmath>
#include <set>

namespace causal_attention {

// ---------------------------------------------------------------------------
// Generator: mt19937 with torch's seeding and float draw.

void Generator::ManualSeed(uint64_t seed) {
  state_[0] = static_cast<uint32_t>(seed);
  for (int i = 1; i < 624; ++i) {
    state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) +
                static_cast<uint32_t>(i);
  }
  index_ = 624;
}

uint32_t Generator::NextUint32() {
  if (index_ >= 624) {
    for (int i = 0; i < 624; ++i) {
      const uint32_t y =
          (state_[i] & 0x80000000u) | (state_[(i + 1) % 624] & 0x7fffffffu);
      state_[i] =
          state_[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

float Generator::Uniform(float from, float to) {
  // at::uniform_real_distribution<float>: 24 random bits, float arithmetic.
  // Separate statements keep the compiler from fusing into an FMA.
  const float x =
      static_cast<float>(NextUint32() & 0xFFFFFFu) * (1.0f / 16777216.0f);
  const float range = to - from;
  const float scaled = x * range;
  return scaled + from;
}

void Generator::InitLinear(int64_t in, int64_t out, std::vector<float>* weight,
                           std::vector<float>* bias) {
  // nn.Linear.reset_parameters in double, as Python computes it:
  // kaiming_uniform_(weight, a=sqrt(5)), then bias ~ U(-1/sqrt(in), ...).
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double std_dev = gain / std::sqrt(static_cast<double>(in));
  const float w_bound = static_cast<float>(std::sqrt(3.0) * std_dev);
  weight->resize(static_cast<size_t>(in * out));
  for (float& w : *weight) w = Uniform(-w_bound, w_bound);
  if (bias) {
    const float b_bound =
        static_cast<float>(1.0 / std::sqrt(static_cast<double>(in)));
    bias->resize(static_cast<size_t>(out));
    for (float& b : *bias) b = Uniform(-b_bound, b_bound);
  }
}

// ---------------------------------------------------------------------------
// Modules

void AttentionModule::AddQkv(const std::string& prefix, int64_t out, bool bias,
                             Generator& gen) {
  for (const char* name : {"W_query", "W_key", "W_value"}) {
    Projection p;
    p.prefix = prefix + name;
    gen.InitLinear(d_in_, out, &p.weight, bias ? &p.bias : nullptr);
    qkv_.push_back(std::move(p));
  }
}

namespace {
bool ValidSizes(int64_t d_in, int64_t d_out, int64_t context_length,
                float dropout, int64_t num_heads) {
  return d_in >= 1 && d_out >= 1 && context_length >= 1 && num_heads >= 1 &&
         dropout >= 0.0f && dropout < 1.0f;
}
}  // namespace

SelfAttentionModule::SelfAttentionModule(int64_t d_in, int64_t d_out,
                                         bool qkv_bias, Generator& gen)
    : AttentionModule(d_in, 1, d_out, 0, 0.0f, CausalMask::kNone) {
  valid_ = ValidSizes(d_in, d_out, 1, 0.0f, 1);
  if (valid_) AddQkv("", d_out, qkv_bias, gen);
}

CausalAttentionModule::CausalAttentionModule(int64_t d_in, int64_t d_out,
                                             int64_t context_length,
                                             float dropout, bool qkv_bias,
                                             Generator& gen)
    : AttentionModule(d_in, 1, d_out, context_length, dropout,
                      CausalMask::kTopLeft) {
  valid_ = ValidSizes(d_in, d_out, context_length, dropout, 1);
  if (valid_) AddQkv("", d_out, qkv_bias, gen);
}

MultiHeadAttentionWrapperModule::MultiHeadAttentionWrapperModule(
    int64_t d_in, int64_t d_out, int64_t context_length, float dropout,
    int64_t num_heads, bool qkv_bias, Generator& gen)
    : AttentionModule(d_in, num_heads, d_out, context_length, dropout,
                      CausalMask::kTopLeft) {
  valid_ = ValidSizes(d_in, d_out, context_length, dropout, num_heads);
  if (!valid_) return;
  for (int64_t h = 0; h < num_heads; ++h) {
    AddQkv("heads." + std::to_string(h) + ".", d_out, qkv_bias, gen);
  }
}

MultiHeadAttentionModule::MultiHeadAttentionModule(
    int64_t d_in, int64_t d_out, int64_t context_length, float dropout,
    int64_t num_heads, bool qkv_bias, Generator& gen)
    : AttentionModule(d_in, num_heads, num_heads > 0 ? d_out / num_heads : 0,
                      context_length, dropout, CausalMask::kTopLeft) {
  valid_ = ValidSizes(d_in, d_out, context_length, dropout, num_heads) &&
           d_out % num_heads == 0;
  if (!valid_) return;
  AddQkv("", d_out, qkv_bias, gen);
  Projection out;
  out.prefix = "out_proj";
  gen.InitLinear(d_out, d_out, &out.weight, &out.bias);
  out_.push_back(std::move(out));
}

Status AttentionModule::Forward(const float* x, int64_t batch, int64_t tokens,
                                float* y, float* weights, uint64_t seed) const {
  if (!valid_ || batch < 1 || tokens < 1) return Status::kInvalidShape;
  if (context_length_ > 0 && tokens > context_length_) {
    return Status::kInvalidShape;
  }
  // Stack the heads' projections when each head has its own (the wrapper).
  const size_t per_head = qkv_.size() / 3;
  std::vector<float> stacked[3][2];
  AttentionLayerParams p;
  p.d_in = d_in_;
  p.num_heads = num_heads_;
  p.head_dim = head_dim_;
  const float** w[3] = {&p.w_query, &p.w_key, &p.w_value};
  const float** b[3] = {&p.b_query, &p.b_key, &p.b_value};
  for (int which = 0; which < 3; ++which) {
    if (per_head == 1) {
      *w[which] = qkv_[which].weight.data();
      *b[which] = qkv_[which].bias.empty() ? nullptr : qkv_[which].bias.data();
      continue;
    }
    for (size_t h = 0; h < per_head; ++h) {
      const Projection& proj = qkv_[h * 3 + which];
      stacked[which][0].insert(stacked[which][0].end(), proj.weight.begin(),
                               proj.weight.end());
      stacked[which][1].insert(stacked[which][1].end(), proj.bias.begin(),
                               proj.bias.end());
    }
    *w[which] = stacked[which][0].data();
    *b[which] = stacked[which][1].empty() ? nullptr : stacked[which][1].data();
  }
  if (!out_.empty()) {
    p.w_out = out_[0].weight.data();
    p.b_out = out_[0].bias.data();
  }
  LayerOptions o;
  o.batch = batch;
  o.tokens = tokens;
  o.causal = causal_;
  o.dropout = dropout_;
  o.training = training_;
  o.seed = seed;
  return AttentionLayerForward(p, o, x, y, weights, nullptr);
}

StateDict AttentionModule::GetStateDict() const {
  StateDict dict;
  for (const std::vector<Projection>* group : {&qkv_, &out_}) {
    for (const Projection& p : *group) {
      dict[p.prefix + ".weight"] = p.weight;
      if (!p.bias.empty()) dict[p.prefix + ".bias"] = p.bias;
    }
  }
  return dict;
}

Status AttentionModule::LoadStateDict(const StateDict& dict,
                                      std::string* error) {
  if (!valid_) return Status::kInvalidShape;
  const StateDict current = GetStateDict();
  std::string problems;
  for (const auto& [name, values] : current) {
    const auto it = dict.find(name);
    if (it == dict.end()) {
      problems += "missing " + name + "; ";
    } else if (it->second.size() != values.size()) {
      problems += name + " has " + std::to_string(it->second.size()) +
                  " values, expected " + std::to_string(values.size()) + "; ";
    }
  }
  for (const auto& entry : dict) {
    if (!current.count(entry.first))
      problems += "unexpected " + entry.first + "; ";
  }
  if (!problems.empty()) {
    if (error) *error = problems.substr(0, problems.size() - 2);
    return Status::kInvalidShape;
  }
  for (std::vector<Projection>* group : {&qkv_, &out_}) {
    for (Projection& p : *group) {
      p.weight = dict.at(p.prefix + ".weight");
      if (!p.bias.empty()) p.bias = dict.at(p.prefix + ".bias");
    }
  }
  return Status::kOk;
}

}  // namespace causal_attention
