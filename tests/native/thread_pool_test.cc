#include "src/thread_pool.h"

#include <atomic>
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

TEST(ThreadPool, GlobalPoolResizes) {
  EXPECT_EQ(SetNumThreads(3), 3);
  EXPECT_EQ(NumThreads(), 3);
  EXPECT_EQ(SetNumThreads(0), 1);
  EXPECT_EQ(NumThreads(), 1);
}

}  // namespace
}  // namespace causal_attention
