// Random problems with the visibility and score rules (layout,
// query offset, key lengths, windows, softcap, sinks, masks), shared by the
// forward and backward rule tests.

#ifndef CAUSAL_ATTENTION_TESTS_NATIVE_RULES_TEST_UTIL_H_
#define CAUSAL_ATTENTION_TESTS_NATIVE_RULES_TEST_UTIL_H_

#include <stdint.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "src/attention/attention.h"
#include "tests/native/test_util.h"

namespace causal_attention {
namespace testing_util {

// Which rules a random case may draw.
struct RuleMix {
  bool layout = true, offset = true, key_lengths = true, window = true,
       softcap = true, sinks = true, mask = true, dropout = true,
       renormalize = true;
};

// A problem whose options point into its own vectors (not copyable).
struct RuleProblem {
  AttentionShape shape;
  AttentionOptions options;
  std::vector<float> q, k, v, sinks, additive;
  std::vector<int32_t> key_lengths;
  std::vector<uint8_t> allowed;

  RuleProblem(const AttentionShape& s, std::mt19937* rng) : shape(s) {
    // A KV cache's unused rows (kv_capacity > key_len) hold values too: a
    // kernel that read them would differ from the reference.
    const int64_t kvh = s.kv_heads ? s.kv_heads : s.heads;
    const int64_t cap = s.kv_capacity ? s.kv_capacity : s.key_len;
    q = RandomVector(s.batch * s.heads * s.query_len * s.head_dim, rng);
    k = RandomVector(s.batch * kvh * cap * s.head_dim, rng);
    v = RandomVector(s.batch * kvh * cap * s.value_dim, rng);
  }
  RuleProblem(const RuleProblem&) = delete;
  RuleProblem& operator=(const RuleProblem&) = delete;

  // Draws options from `mix` with the generator.
  void DrawOptions(const RuleMix& mix, std::mt19937* rng) {
    auto pick = [&](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(*rng);
    };
    auto coin = [&](int in) { return pick(0, in - 1) == 0; };
    const AttentionShape& s = shape;
    AttentionOptions& o = options;
    o = AttentionOptions{};
    o.causal = static_cast<CausalMask>(pick(0, 2));
    if (mix.layout && coin(2)) o.layout = Layout::kBSHD;
    if (mix.offset && coin(4)) o.query_offset = pick(-s.query_len, s.key_len);
    if (mix.key_lengths && coin(3)) {
      key_lengths.resize(static_cast<size_t>(s.batch));
      for (int32_t& l : key_lengths) {
        l = static_cast<int32_t>(coin(6) ? pick(0, std::min<int64_t>(2, s.key_len))
                                         : pick(0, s.key_len));
      }
      o.key_lengths = key_lengths.data();
    }
    if (mix.window && coin(2)) {
      if (coin(3) == false) o.window_left = pick(0, 40);
      if (coin(3)) o.window_right = pick(0, 40);
    }
    if (mix.softcap && coin(3)) {
      o.softcap = std::uniform_real_distribution<float>(0.2f, 5.0f)(*rng);
    }
    if (mix.sinks && coin(3)) {
      sinks = RandomVector(static_cast<size_t>(s.heads), rng, -2.0f, 2.0f);
      o.sinks = sinks.data();
    }
    if (mix.mask && coin(2)) {
      const int64_t full[4] = {s.batch, s.heads, s.query_len, s.key_len};
      size_t n = 1;
      for (int a = 0; a < 4; ++a) {
        o.mask.dims[a] = coin(a >= 2 ? 4 : 2) ? 1 : full[a];
        n *= static_cast<size_t>(o.mask.dims[a]);
      }
      if (coin(2)) {
        o.mask.kind = MaskKind::kBoolean;
        allowed.resize(n);
        // Blocks of 16 keys: whole mask tiles all false or all true too.
        const int64_t tk = o.mask.dims[3];
        for (size_t i = 0; i < n; ++i) {
          const int64_t block = static_cast<int64_t>(i % tk) / 16;
          const int mode = (static_cast<int>(i / tk) / 7 + block) % 4;
          allowed[i] = mode == 0 ? 0 : mode == 1 ? 1 : pick(0, 3) != 0;
        }
        o.mask.data = allowed.data();
      } else {
        o.mask.kind = MaskKind::kAdditive;
        additive = RandomVector(n, rng, -3.0f, 1.0f);
        for (float& x : additive) {
          if (coin(8)) x = -std::numeric_limits<float>::infinity();
        }
        o.mask.data = additive.data();
      }
    }
    if (mix.dropout && coin(5)) {
      o.training = true;
      o.dropout = std::uniform_real_distribution<float>(0.0f, 0.6f)(*rng);
      o.seed = (*rng)();
    }
    if (mix.renormalize && coin(4) && !o.sinks &&
        o.mask.kind == MaskKind::kNone && o.window_left < 0 &&
        o.softcap == 0.0f) {
      o.mask_strategy = MaskStrategy::kRenormalize;
    }
  }

  std::string Describe() const {
    const AttentionOptions& o = options;
    std::string d = testing_util::Describe(shape, o);
    d += " layout=" + std::to_string(static_cast<int>(o.layout));
    if (o.query_offset) d += " offset=" + std::to_string(*o.query_offset);
    if (o.key_lengths) {
      d += " key_lengths=";
      for (int32_t l : key_lengths) d += std::to_string(l) + ",";
    }
    d += " window=" + std::to_string(o.window_left) + "/" +
         std::to_string(o.window_right);
    d += " softcap=" + std::to_string(o.softcap);
    d += o.sinks ? " sinks" : "";
    d += " mask=" + std::to_string(static_cast<int>(o.mask.kind)) + "[" +
         std::to_string(o.mask.dims[0]) + "," + std::to_string(o.mask.dims[1]) +
         "," + std::to_string(o.mask.dims[2]) + "," +
         std::to_string(o.mask.dims[3]) + "]";
    return d;
  }

  size_t OutSize() const {
    return static_cast<size_t>(shape.batch * shape.heads * shape.query_len *
                               shape.value_dim);
  }
  size_t RowCount() const {
    return static_cast<size_t>(shape.batch * shape.heads * shape.query_len);
  }
  size_t WeightsSize() const {
    return RowCount() * static_cast<size_t>(shape.key_len);
  }

  // Runs a forward (AttentionWithLogSumExp or its reference).
  template <class Fn>
  Status Run(Fn fn, std::vector<float>* out, std::vector<float>* weights,
             std::vector<float>* lse) const {
    out->assign(OutSize(), -7.0f);
    if (weights) weights->assign(WeightsSize(), -7.0f);
    lse->assign(RowCount(), -7.0f);
    return fn(shape, options, q.data(), k.data(), v.data(), out->data(),
              weights ? weights->data() : nullptr, lse->data());
  }
};

}  // namespace testing_util
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_TESTS_NATIVE_RULES_TEST_UTIL_H_
