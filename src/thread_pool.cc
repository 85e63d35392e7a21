#include "src/thread_pool.h"

#include <memory>
#include <system_error>

namespace causal_attention {

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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = fn;
    trampoline_ = trampoline;
    num_items_ = num_items;
    next_item_.store(0, std::memory_order_relaxed);
    job_active_ = true;
    ++generation_;
  }
  work_cv_.notify_all();
  RunItems(0);
  // Every item has been handed out; wait for workers still inside one. A
  // worker that wakes after job_active_ is cleared never touches this job.
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [this] { return in_job_ == 0; });
  job_active_ = false;
}

void ThreadPool::WorkerLoop(int thread) {
  size_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(
        lock, [&] { return stop_ || (job_active_ && generation_ != seen); });
    if (stop_) return;
    seen = generation_;
    ++in_job_;
    lock.unlock();
    RunItems(thread);
    lock.lock();
    if (--in_job_ == 0) done_cv_.notify_all();
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
