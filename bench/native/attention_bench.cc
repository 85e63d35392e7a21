// Native Google Benchmark of Attention per compiled SIMD target, single
// thread, causal, no weights (and one run with weights, one on 2 threads):
//   build/native/native_bench [--benchmark_filter=AVX2]
// Reports effective GFLOP/s with causal FLOPs = 4·B·H·D·T(T+1)/2.

#include <benchmark/benchmark.h>

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

void RegisterAll() {
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
