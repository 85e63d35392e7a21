// MatMul alone, timed inside wasm (no JS marshalling): the GEMM shapes of the
// module and of Linear's backward, and the book's small ones. Prints one line
// per shape: median ms and GFLOP/s over repeated calls after a warm-up.
// Built by CMake in build/wasm as matmul_bench.js (not part of the package):
//   cmake --build build/wasm --target matmul_bench matmul_bench_threads
//   node --no-experimental-fetch build/wasm/bench/matmul_bench.js [filter]
//   node --no-experimental-fetch build/wasm/bench/matmul_bench_threads.js [filter] [threads]
// (--no-experimental-fetch: emcc 3.1.6's glue would fetch() the .wasm path.)
// Natively the same file is build/native/matmul_bench (SIMD target dispatch).

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "src/gemm/matmul.h"
#include "src/base/thread_pool.h"

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
// This process's CPU time (Node): on a shared machine it does not count the
// time other processes hold the cores, so single-thread rates from it are
// steadier than wall-clock ones.
EM_JS(double, CpuMs, (), {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
});
#else
#include <time.h>
double CpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
#endif

namespace ca = causal_attention;

namespace {

struct Case {
  const char* name;
  int64_t m, n, k;
  bool ta, tb, acc, bias;
};

// Linear forward at the module's shape: x [8192, 768] · Wᵀ (W [768, 768]);
// its backward: grad_x = grad_y · W, grad_W += grad_yᵀ · x; a Linear of
// GPT-2's MLP width; the book's chapter-3 toy; a decode-like single row.
const Case kCases[] = {
    {"linear 8192x768 . (768x768)T + b", 8192, 768, 768, false, true, false,
     true},
    {"dX 8192x768 . 768x768", 8192, 768, 768, false, false, false, false},
    {"dW += (8192x768)T . 8192x768", 768, 768, 8192, true, false, true,
     false},
    {"linear 1024x768 . (3072x768)T + b", 1024, 3072, 768, false, true, false,
     true},
    {"linear 1024x768 . (768x768)T", 1024, 768, 768, false, true, false, false},
    {"linear 256x64 . (64x64)T", 256, 64, 64, false, true, false, false},
    {"linear 6x3 . (2x3)T (book ch3)", 6, 2, 3, false, true, false, false},
    {"linear 1x768 . (768x768)T", 1, 768, 768, false, true, false, true},
};

double NowMs() {
  using C = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(C::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  const char* filter = argc > 1 ? argv[1] : "";
  const int threads = argc > 2 ? atoi(argv[2]) : 1;
  printf("threads: %d\n", ca::SetNumThreads(threads));
  for (const Case& c : kCases) {
    if (*filter && !strstr(c.name, filter)) continue;
    ca::MatMulShape s;
    s.m = c.m;
    s.n = c.n;
    s.k = c.k;
    s.transpose_a = c.ta;
    s.transpose_b = c.tb;
    s.accumulate = c.acc;
    std::vector<float> a(c.m * c.k), b(c.k * c.n), bias(c.n), out(c.m * c.n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = (i % 13) * 0.01f - 0.06f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = (i % 7) * 0.01f - 0.03f;
    const int64_t lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n;
    const double flops = 2.0 * c.m * c.n * c.k;
    const auto run = [&] {
      ca::MatMul(s, a.data(), lda, b.data(), ldb, c.bias ? bias.data() : nullptr,
                 out.data(), c.n);
    };
    // Warm-up: >= 1 s and >= 3 calls (V8 tiers up).
    const double end = NowMs() + 1000;
    for (int i = 0; i < 3 || NowMs() < end; ++i) run();
    // Calls are batched so that one sample lasts >= 20 ms (CPU-time
    // resolution).
    int batch = 1;
    for (;;) {
      const double t0 = NowMs();
      for (int i = 0; i < batch; ++i) run();
      if (NowMs() - t0 >= 20 || batch >= (1 << 20)) break;
      batch *= 2;
    }
    std::vector<double> ms, cpu;
    const double budget = NowMs() + 3000;
    while (ms.size() < 5 || (ms.size() < 51 && NowMs() < budget)) {
      const double t0 = NowMs(), c0 = CpuMs();
      for (int i = 0; i < batch; ++i) run();
      cpu.push_back((CpuMs() - c0) / batch);
      ms.push_back((NowMs() - t0) / batch);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(cpu.begin(), cpu.end());
    const double med = ms[ms.size() / 2], cmed = cpu[cpu.size() / 2];
    printf("%-40s %10.4f ms %6.1f GFLOP/s | cpu %10.4f ms %6.1f GFLOP/s (%zu)\n",
           c.name, med, flops / med / 1e6, cmed, flops / cmed / 1e6, ms.size());
    fflush(stdout);
  }
  return 0;
}
