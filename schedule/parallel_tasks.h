// RunTasks: a fixed number of independent tasks on a small pool of std::threads (the strategy
// search's families, schedule/strategy_search.h). Each worker takes the next task of `order`
// as it finishes one, so the longest tasks listed first balance best. Every task runs, even
// after one throws; then the exception of the lowest-numbered task that threw is rethrown (the
// one a serial loop in task order would have met first).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace terasim {

// Runs body(worker, task) for every task in `order` (indices, each once) on min(jobs,
// order.size()) threads; `worker` in [0, that count) names the thread, for per-thread state.
// jobs <= 1: all on the calling thread, in `order`. The calling thread is always worker 0.
void RunTasks(int jobs, const std::vector<size_t>& order,
              const std::function<void(int worker, size_t task)>& body);

// The workers RunTasks starts for `tasks` tasks: min(jobs, tasks), at least 1.
int TaskWorkers(int jobs, size_t tasks);

}  // namespace terasim
