#include "src/base/thread_pool.h"

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace causal_attention {
namespace {

TEST(ThreadPool, RunsEveryItemExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{1000}}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> bad_thread{0};
      pool.Run(n, 1e9, [&](size_t item, int thread) {
        hits[item].fetch_add(1);
        if (thread < 0 || thread >= threads) bad_thread.fetch_add(1);
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

TEST(ThreadPool, SmallWorkRunsOnTheCallingThread) {
  ThreadPool pool(3);
  std::vector<int> threads(50, -1);
  pool.Run(threads.size(), ThreadPool::kMinParallelFlops / 2,
           [&](size_t item, int thread) { threads[item] = thread; });
  for (int t : threads) EXPECT_EQ(t, 0);
}

TEST(ThreadPool, ManyConsecutiveJobs) {
  ThreadPool pool(3);
  std::atomic<long> total{0};
  for (int job = 0; job < 2000; ++job) {
    pool.Run(7, 1e9, [&](size_t item, int) {
      total.fetch_add(static_cast<long>(item));
    });
  }
  EXPECT_EQ(total.load(), 2000L * 21);
}

// Item 0 waits (up to 10 s) for another thread to take an item: true when
// a worker joined the job.
bool WorkerJoins(ThreadPool& pool) {
  std::atomic<bool> other{false};
  pool.Run(2, 1e9, [&](size_t item, int thread) {
    if (thread != 0) other.store(true);
    if (item != 0) return;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!other.load() && std::chrono::steady_clock::now() < end) {
      std::this_thread::yield();
    }
  });
  return other.load();
}

TEST(ThreadPool, WorkersWakeForAJobAfterSleeping) {
  ThreadPool pool(2);
  for (int round = 0; round < 3; ++round) {
    // Longer than the workers' spin: they are asleep on the condition
    // variable when the job comes.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(WorkerJoins(pool)) << "round " << round;
    // Right after a job: the worker is still spinning.
    EXPECT_TRUE(WorkerJoins(pool)) << "round " << round << ", back to back";
  }
}

TEST(ThreadPool, JobsWithGapsAroundTheSpinTime) {
  // Jobs whose workers are spinning, falling asleep or asleep, and jobs
  // the caller finishes before a late worker arrives (it must skip them).
  ThreadPool pool(4);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> gap_us(0, 1500), items(2, 40);
  long expected = 0;
  std::atomic<long> total{0};
  for (int job = 0; job < 300; ++job) {
    const int n = items(rng);
    std::vector<std::atomic<int>> hits(n);
    pool.Run(n, 1e9, [&](size_t item, int) {
      hits[item].fetch_add(1);
      total.fetch_add(static_cast<long>(item));
    });
    for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << job;
    expected += static_cast<long>(n) * (n - 1) / 2;
    std::this_thread::sleep_for(std::chrono::microseconds(gap_us(rng)));
  }
  EXPECT_EQ(total.load(), expected);
}

TEST(ThreadPool, GlobalPoolResizes) {
  EXPECT_EQ(SetNumThreads(3), 3);
  EXPECT_EQ(NumThreads(), 3);
  EXPECT_EQ(SetNumThreads(0), 1);
  EXPECT_EQ(NumThreads(), 1);
}

}  // namespace
}  // namespace causal_attention
