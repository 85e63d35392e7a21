// A fixed pool of worker threads for data-parallel loops.
//
// Work items are handed out from an atomic counter, so which thread runs an
// item varies; callers keep results deterministic by making every item
// independent (the attention kernels split over batch x heads x query
// blocks, and each output element is computed by exactly one item).
//
// Waking: a worker that finishes a job spins for a while (kSpinMicros) on
// the job counter before it sleeps on a condition variable, so back-to-back
// jobs (MatMul's passes, a layer's projections and attention, consecutive
// calls from JS) start on every thread at once instead of after a futex
// wake-up (tens to hundreds of microseconds, more for a browser worker's
// Atomics.wait). The calling thread waits for the workers the same way:
// spin, then sleep (a browser page's thread cannot block: Emscripten spins
// there anyway). A worker that wakes after the caller has run out of items
// skips the job; the caller never waits for a sleeping worker.

#ifndef CAUSAL_ATTENTION_SRC_THREAD_POOL_H_
#define CAUSAL_ATTENTION_SRC_THREAD_POOL_H_

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace causal_attention {

class ThreadPool {
 public:
  // Starts up to num_threads - 1 workers (the thread calling Run is the
  // other one). Fewer are started if the platform refuses to create them
  // or was built without threads; size() tells.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Work below kMinParallelFlops runs on the calling thread: waking the
  // workers would cost more than it saves.
  static constexpr double kMinParallelFlops = 2e6;

  // The threads Run uses for this much work: callers size per-thread
  // scratch with it.
  int ThreadsFor(double flops) const {
    return flops < kMinParallelFlops ? 1 : size();
  }

  // Calls fn(item, thread) for every item in [0, num_items), thread in
  // [0, ThreadsFor(flops)), and returns when all calls have returned. Not
  // reentrant.
  template <class Fn>
  void Run(size_t num_items, double flops, const Fn& fn) {
    if (num_items <= 1 || ThreadsFor(flops) == 1) {
      for (size_t i = 0; i < num_items; ++i) fn(i, 0);
      return;
    }
    RunJob(num_items, &fn, [](const void* f, size_t item, int thread) {
      (*static_cast<const Fn*>(f))(item, thread);
    });
  }

 private:
  using Trampoline = void (*)(const void* fn, size_t item, int thread);
  void RunJob(size_t num_items, const void* fn, Trampoline trampoline);
  void RunItems(int thread);
  void WorkerLoop(int thread);
  // Waits until the job counter differs from `seen` (or stop_); returns
  // the new count.
  uint64_t AwaitJob(uint64_t seen);

  // How long an idle thread polls before sleeping.
  static constexpr int kSpinMicros = 500;

  std::vector<std::thread> workers_;
  // The current job: written by the caller before it opens the job
  // (release), read by workers after they enter it (acquire).
  const void* fn_ = nullptr;
  Trampoline trampoline_ = nullptr;
  size_t num_items_ = 0;
  std::atomic<size_t> next_item_{0};
  // Jobs started so far; workers poll it, then sleep on work_cv_.
  std::atomic<uint64_t> jobs_{0};
  // kOpen while workers may enter the current job, plus the number of
  // workers inside it.
  static constexpr uint32_t kOpen = 1u << 31;
  std::atomic<uint32_t> state_{0};
  std::atomic<bool> stop_{false};
  // Sleeping: workers waiting for a job, the caller waiting for workers.
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeps_{false};
};

// The process-wide pool used by Attention, Linear and the layer.
ThreadPool& GlobalPool();

// Threads used by the pool (the calling thread included). n < 1 is treated
// as 1. Creating threads can fail (e.g. a wasm build without pthreads): the
// return value is the number actually in use.
int SetNumThreads(int n);
int NumThreads();

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_THREAD_POOL_H_
