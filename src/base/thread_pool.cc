#include "src/base/thread_pool.h"

#include <chrono>
#include <memory>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace causal_attention {
namespace {

// One polling step: a pause hint where the CPU has one (wasm has none).
inline void Relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls `done` until it returns true or about `micros` have passed; the
// clock is read every 64 polls (in wasm it is a call into JS).
template <class Done>
bool SpinUntil(const Done& done, int micros) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::microseconds(micros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      Relax();
    }
    if (Clock::now() >= end) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
#ifndef CAUSAL_ATTENTION_NO_THREADS
  for (int t = 1; t < num_threads; ++t) {
#if defined(__cpp_exceptions)
    try {
      workers_.emplace_back([this, t] { WorkerLoop(t); });
    } catch (const std::system_error&) {
      break;  // keep the workers we have
    }
#else
    workers_.emplace_back([this, t] { WorkerLoop(t); });
#endif
  }
#else
  (void)num_threads;
#endif
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
  }
  work_cv_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::RunItems(int thread) {
  for (;;) {
    const size_t item = next_item_.fetch_add(1, std::memory_order_relaxed);
    if (item >= num_items_) return;
    trampoline_(fn_, item, thread);
  }
}

void ThreadPool::RunJob(size_t num_items, const void* fn,
                        Trampoline trampoline) {
  // No worker is inside a job here (the previous RunJob waited for them),
  // so the fields can be written; opening the job publishes them.
  fn_ = fn;
  trampoline_ = trampoline;
  num_items_ = num_items;
  next_item_.store(0, std::memory_order_relaxed);
  state_.store(kOpen, std::memory_order_release);
  jobs_.fetch_add(1);  // seq_cst: ordered against the read of sleepers_
  if (sleepers_.load() > 0) {
    // A worker between its last check of jobs_ and its wait holds the
    // mutex: taking it here means the notify cannot fall in between.
    { std::lock_guard<std::mutex> lock(mutex_); }
    work_cv_.notify_all();
  }
  RunItems(0);
  // Every item has been handed out: close the job (late workers skip it)
  // and wait for the workers inside it.
  // seq_cst, like the workers' exit and caller_sleeps_: of a worker leaving
  // and the caller going to sleep, one sees the other.
  const auto inside = [this] { return (state_.load() & ~kOpen) == 0; };
  state_.fetch_and(~kOpen, std::memory_order_acq_rel);
  if (!SpinUntil(inside, kSpinMicros)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeps_.store(true);
    done_cv_.wait(lock, inside);
    caller_sleeps_.store(false);
  }
}

uint64_t ThreadPool::AwaitJob(uint64_t seen) {
  const auto ready = [&] {
    return jobs_.load(std::memory_order_acquire) != seen ||
           stop_.load(std::memory_order_relaxed);
  };
  if (!SpinUntil(ready, kSpinMicros)) {
    std::unique_lock<std::mutex> lock(mutex_);
    sleepers_.fetch_add(1);  // seq_cst, before the re-check of jobs_
    work_cv_.wait(lock, [&] { return jobs_.load() != seen || stop_.load(); });
    sleepers_.fetch_sub(1);
  }
  return jobs_.load(std::memory_order_acquire);
}

void ThreadPool::WorkerLoop(int thread) {
  uint64_t seen = 0;
  for (;;) {
    seen = AwaitJob(seen);
    if (stop_.load()) return;
    // Enter the job while it is open; a closed one was finished without
    // this worker.
    uint32_t s = state_.load(std::memory_order_relaxed);
    bool entered = false;
    while (s & kOpen) {
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        entered = true;
        break;
      }
    }
    if (!entered) continue;
    RunItems(thread);
    // The last worker out of a closed job wakes a sleeping caller.
    if (state_.fetch_sub(1) == 1 &&
        caller_sleeps_.load()) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      done_cv_.notify_all();
    }
  }
}

namespace {
std::unique_ptr<ThreadPool>& PoolSlot() {
  static std::unique_ptr<ThreadPool> pool(new ThreadPool(1));
  return pool;
}
}  // namespace

ThreadPool& GlobalPool() { return *PoolSlot(); }

int SetNumThreads(int n) {
  if (n < 1) n = 1;
  std::unique_ptr<ThreadPool>& slot = PoolSlot();
  if (slot->size() != n) {
    slot.reset();  // join the old workers before starting new ones
    slot.reset(new ThreadPool(n));
  }
  return slot->size();
}

int NumThreads() { return GlobalPool().size(); }

}  // namespace causal_attention
