// Native Google Benchmark of Attention per compiled SIMD target, single
// thread, causal, no weights (and one run with weights, one on 2 threads):
//   build/native/native_bench [--benchmark_filter=AVX2]
// Reports effective GFLOP/s with causal FLOPs = 4·B·H·D·T(T+1)/2.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "hwy/highway.h"
#include "hwy/targets.h"
#include "src/causal_attention.h"

namespace causal_attention {
namespace {

struct Shape {
  int64_t b, h, t, d;
};

void Run(benchmark::State& state, int64_t target, Shape s, bool weights,
         int threads = 1) {
  hwy::SetSupportedTargetsForTest(target);
  SetNumThreads(threads);
  AttentionShape shape{s.b, s.h, s.t, s.t, s.d, s.d};
  const size_t n = static_cast<size_t>(s.b * s.h * s.t * s.d);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> q(n), k(n), v(n), out(n);
  for (size_t i = 0; i < n; ++i) q[i] = dist(rng), k[i] = dist(rng), v[i] = dist(rng);
  std::vector<float> w(weights ? static_cast<size_t>(s.b * s.h * s.t * s.t) : 0);
  for (auto _ : state) {
    const Status st = Attention(shape, AttentionOptions(), q.data(), k.data(),
                                v.data(), out.data(), weights ? w.data() : nullptr);
    if (st != Status::kOk) state.SkipWithError(StatusMessage(st));
    benchmark::DoNotOptimize(out.data());
  }
  const double flops = 4.0 * s.b * s.h * s.d * s.t * (s.t + 1) / 2.0;
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(ActiveTargetName());
  SetNumThreads(1);
  hwy::SetSupportedTargetsForTest(0);
}

// The visibility rules on the best target, one thread, causal, no weights:
// each against the plain call of the same shape (bench/README: the ratios).
// Decode rows: one query against t cached keys, GQA 4:1, bottom-right.
enum class Rule { kPlain, kWindow512, kHalfKeyLengths, kSoftcap, kSinks,
                  kFloatMask, kBshd, kDecodePlain, kDecodeWindow4096 };

void RunRule(benchmark::State& state, Shape s, Rule rule) {
  SetNumThreads(1);
  AttentionShape shape{s.b, s.h, s.t, s.t, s.d, s.d};
  const bool decode =
      rule == Rule::kDecodePlain || rule == Rule::kDecodeWindow4096;
  if (decode) {
    shape.query_len = 1;
    shape.kv_heads = s.h / 4;
  }
  const size_t n = static_cast<size_t>(s.b * s.h * s.t * s.d);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> q(n), k(n), v(n), out(n);
  for (size_t i = 0; i < n; ++i) q[i] = dist(rng), k[i] = dist(rng), v[i] = dist(rng);
  AttentionOptions o;
  std::vector<int32_t> lengths(static_cast<size_t>(s.b));
  std::vector<float> sinks(static_cast<size_t>(s.h), 0.5f), mask;
  switch (rule) {
    case Rule::kPlain:
      break;
    case Rule::kWindow512:  // Mistral's sliding_window 512: left = W - 1
      o.window_left = 511;
      break;
    case Rule::kHalfKeyLengths:  // lengths T/8 .. 7T/8, averaging T/2
      for (size_t b = 0; b < lengths.size(); ++b) {
        lengths[b] = static_cast<int32_t>(
            s.t / 8 + (s.t * 3 / 4) * static_cast<int64_t>(b) /
                          std::max<int64_t>(1, s.b - 1));
      }
      o.key_lengths = lengths.data();
      break;
    case Rule::kSoftcap:
      o.softcap = 50.0f;
      break;
    case Rule::kSinks:
      o.sinks = sinks.data();
      break;
    case Rule::kFloatMask:  // [Tq, Tk], broadcast over batch and heads
      mask.resize(static_cast<size_t>(s.t * s.t));
      for (float& x : mask) x = dist(rng);
      o.mask.kind = MaskKind::kAdditive;
      o.mask.data = mask.data();
      o.mask.dims[2] = s.t;
      o.mask.dims[3] = s.t;
      break;
    case Rule::kBshd:
      o.layout = Layout::kBSHD;
      break;
    case Rule::kDecodePlain:
      o.causal = CausalMask::kBottomRight;
      break;
    case Rule::kDecodeWindow4096:
      o.causal = CausalMask::kBottomRight;
      o.window_left = 4095;
      break;
  }
  for (auto _ : state) {
    const Status st = Attention(shape, o, q.data(), k.data(), v.data(),
                                out.data(), nullptr);
    if (st != Status::kOk) state.SkipWithError(StatusMessage(st));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(ActiveTargetName());
}

// The backward of a causal call, plain or with a window of 512 or a
// softcap of 50 (out and log-sum-exp from the forward, once).
void RunBackwardRule(benchmark::State& state, Shape s, Rule rule) {
  SetNumThreads(1);
  AttentionShape shape{s.b, s.h, s.t, s.t, s.d, s.d};
  const size_t n = static_cast<size_t>(s.b * s.h * s.t * s.d);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> q(n), k(n), v(n), out(n), dout(n), gq(n), gk(n), gv(n);
  std::vector<float> lse(static_cast<size_t>(s.b * s.h * s.t));
  for (size_t i = 0; i < n; ++i) {
    q[i] = dist(rng), k[i] = dist(rng), v[i] = dist(rng), dout[i] = dist(rng);
  }
  AttentionOptions o;
  if (rule == Rule::kWindow512) o.window_left = 511;
  if (rule == Rule::kSoftcap) o.softcap = 50.0f;
  if (AttentionWithLogSumExp(shape, o, q.data(), k.data(), v.data(),
                             out.data(), nullptr, lse.data()) != Status::kOk) {
    state.SkipWithError("forward");
  }
  for (auto _ : state) {
    const Status st =
        AttentionBackward(shape, o, dout.data(), q.data(), k.data(), v.data(),
                          out.data(), lse.data(), gq.data(), gk.data(),
                          gv.data());
    if (st != Status::kOk) state.SkipWithError(StatusMessage(st));
    benchmark::DoNotOptimize(gq.data());
  }
  state.SetLabel(ActiveTargetName());
}

void RegisterRules() {
  for (Rule rule : {Rule::kPlain, Rule::kWindow512, Rule::kSoftcap}) {
    const char* names[] = {"plain", "window512", "", "softcap"};
    const std::string name = std::string("Rules/Backward_T4096_H8_D64_") +
                             names[static_cast<int>(rule)];
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
      RunBackwardRule(st, Shape{1, 8, 4096, 64}, rule);
    })->Unit(benchmark::kMillisecond);
  }
  struct Case {
    const char* name;
    Shape shape;
    Rule rule;
  };
  const Case cases[] = {
      {"Rules/T8192_H8_D64_plain", {1, 8, 8192, 64}, Rule::kPlain},
      {"Rules/T8192_H8_D64_window512", {1, 8, 8192, 64}, Rule::kWindow512},
      {"Rules/B8_T1024_H8_D64_plain", {8, 8, 1024, 64}, Rule::kPlain},
      {"Rules/B8_T1024_H8_D64_keyLengthsHalf", {8, 8, 1024, 64},
       Rule::kHalfKeyLengths},
      {"Rules/T2048_H8_D64_plain", {1, 8, 2048, 64}, Rule::kPlain},
      {"Rules/T2048_H8_D64_softcap", {1, 8, 2048, 64}, Rule::kSoftcap},
      {"Rules/T2048_H8_D64_sinks", {1, 8, 2048, 64}, Rule::kSinks},
      {"Rules/T2048_H8_D64_floatMask", {1, 8, 2048, 64}, Rule::kFloatMask},
      {"Rules/T2048_H8_D64_bshd", {1, 8, 2048, 64}, Rule::kBshd},
      {"Rules/Decode_T32768_H32_KV8_D128_plain", {1, 32, 32768, 128},
       Rule::kDecodePlain},
      {"Rules/Decode_T32768_H32_KV8_D128_window4096", {1, 32, 32768, 128},
       Rule::kDecodeWindow4096},
  };
  for (const Case& c : cases) {
    benchmark::RegisterBenchmark(c.name, [=](benchmark::State& st) {
      RunRule(st, c.shape, c.rule);
    })->Unit(benchmark::kMillisecond);
  }
}

void RegisterAll() {
  RegisterRules();
  const Shape shapes[] = {
      {1, 12, 128, 64}, {1, 12, 512, 64}, {1, 12, 1024, 64}, {1, 1, 4096, 64},
  };
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    const std::string t = hwy::TargetName(target);
    for (const Shape& s : shapes) {
      const std::string name = t + "/B" + std::to_string(s.b) + "_H" +
                               std::to_string(s.h) + "_T" + std::to_string(s.t) +
                               "_D" + std::to_string(s.d);
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
        Run(st, target, s, false);
      })->Unit(benchmark::kMillisecond);
    }
    const Shape s{1, 12, 512, 64};
    benchmark::RegisterBenchmark((t + "/B1_H12_T512_D64_weights").c_str(),
                                 [=](benchmark::State& st) { Run(st, target, s, true); })
        ->Unit(benchmark::kMillisecond);
    // The thread pool's scaling without V8 in the way (bench/ reads the
    // real time; the calling thread works throughout, so its CPU time
    // paces the iterations well enough).
    const Shape s2{1, 12, 1024, 64};
    benchmark::RegisterBenchmark(
        (t + "/B1_H12_T1024_D64_threads2").c_str(),
        [=](benchmark::State& st) { Run(st, target, s2, false, 2); })
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace causal_attention

int main(int argc, char** argv) {
  causal_attention::RegisterAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
