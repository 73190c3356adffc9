#include "schedule/parallel_tasks.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <system_error>
#include <thread>

namespace terasim {

int TaskWorkers(int jobs, size_t tasks) {
  return static_cast<int>(std::max<size_t>(1, std::min<size_t>(std::max(jobs, 1), tasks)));
}

void RunTasks(int jobs, const std::vector<size_t>& order,
              const std::function<void(int worker, size_t task)>& body) {
  const int workers = TaskWorkers(jobs, order.size());
  size_t tasks = 0;
  for (size_t task : order) tasks = std::max(tasks, task + 1);
  std::vector<std::exception_ptr> errors(tasks);
  std::atomic<size_t> next{0};
  const auto work = [&](int worker) {
    for (size_t i = next++; i < order.size(); i = next++) {
      try {
        body(worker, order[i]);
      } catch (...) {
        errors[order[i]] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (int w = 1; w < workers; ++w) {
    try {
      threads.emplace_back(work, w);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones started (and this one) take every task
    }
  }
  work(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace terasim
