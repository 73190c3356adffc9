#include "exec/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#ifdef __linux__
#include <sched.h>
#endif

#include <fmt/format.h>

#include "exec/model_params.h"
#include "exec/stop_flag.h"
#include "exec/stream_runner.h"
#include "exec/tensor_id.h"
#include "exec/tensor_store.h"
#include "models/errors.h"

namespace terasim {

namespace run_detail {

void Runner::Fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = error;
  }
  stop_.Stop();
  transport_.Abort();
  for (auto& dev : devices_) {
    dev->store->Notify();
    dev->done_cv.notify_all();
  }
}

void Runner::MarkDone(DeviceState& dev, int index) {
  {
    std::lock_guard<std::mutex> lock(dev.done_mutex);
    done_[index] = 1;
  }
  dev.done_cv.notify_all();
}

void Runner::RunStream(DeviceState& dev, const std::vector<int>& ops, int iteration,
                       std::vector<TraceRow>& rows) {
  try {
    for (int index : ops) {
      const Op& op = schedule_.ops[index];
      if (!deps_[index].empty()) {
        std::unique_lock<std::mutex> lock(dev.done_mutex);
        for (int dep : deps_[index]) {
          WaitFor(
              dev.done_cv, lock, [&] { return done_[dep] != 0; }, stop_, stall_timeout_,
              fmt::format("device {}: {} after {}", dev.device, op.key, schedule_.ops[dep].key));
        }
      }
      const TimeNs start = Now();
      RunOp(dev, op, iteration);
      Record(dev, op, iteration, start, rows);
      MarkDone(dev, index);
    }
  } catch (const StoppedError&) {
    // Another thread failed first; its error is the one reported.
  } catch (...) {
    Fail(std::current_exception());
  }
}

bool Runner::CanRun(DeviceState& dev, int index) const {
  for (int dep : deps_[index]) {
    if (!done_[dep]) return false;  // deps are ops of this device: this thread set them
  }
  return input_keys_[index].empty() || dev.store->Has(input_keys_[index]);
}

std::string Runner::WhyWaiting(DeviceState& dev, int index) const {
  const Op& op = schedule_.ops[index];
  for (int dep : deps_[index]) {
    if (!done_[dep])
      return fmt::format("{} after {}", OpWhere(schedule_, op), schedule_.ops[dep].key);
  }
  if (!input_keys_[index].empty() && !dev.store->Has(input_keys_[index])) {
    return fmt::format("{} for tensor {}", OpWhere(schedule_, op), input_keys_[index]);
  }
  if (op.kind == OpKind::kRecv) {
    return fmt::format("{} for {} from device {}", OpWhere(schedule_, op), op.tensor, op.peer);
  }
  return OpWhere(schedule_, op);
}

void Runner::WaitForArrival(int device, uint64_t seen) {
  constexpr auto kSlice = std::chrono::milliseconds(20);  // then the caller checks for stalls
  if (!spin_) {
    transport_.WaitArrival(device, seen, kSlice);
    return;
  }
  const auto until = Clock::now() + kSlice;
  while (transport_.Arrivals(device) == seen && Clock::now() < until) {
    if (stop_.Stopped()) throw StoppedError();
    std::this_thread::yield();
  }
}

void Runner::RunDevice(DeviceState& dev, int iteration, std::vector<TraceRow>& rows) {
  try {
    const size_t streams = dev.streams.size();
    std::vector<size_t> next(streams, 0);         // per stream: its head
    std::vector<TimeNs> head_ready(streams, -1);  // when a RECV head's deps were first seen done
    size_t left = 0;
    for (const auto& stream : dev.streams) left += stream.second.size();
    auto last_progress = Clock::now();
    while (left > 0) {
      const uint64_t arrivals = transport_.Arrivals(dev.device);
      bool ran = false;
      for (int pass = 0; pass < 2 && !ran; ++pass) {  // 0: SEND and RECV; 1: the rest
        for (size_t s = 0; s < streams && !ran; ++s) {
          const std::vector<int>& ops = dev.streams[s].second;
          if (next[s] == ops.size()) continue;
          const int index = ops[next[s]];
          const Op& op = schedule_.ops[index];
          const bool comm = op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
          if (comm != (pass == 0) || !CanRun(dev, index)) continue;
          if (op.kind == OpKind::kRecv) {
            // A receive is posted once its deps are done, as a stream thread would post it.
            if (head_ready[s] < 0) head_ready[s] = Now();
            std::optional<std::vector<float>> data =
                transport_.TryRecv(dev.device, op.peer, op.tensor);
            if (!data) continue;
            dev.store->Put(ParseTensorId(op.tensor).store_key, std::move(*data));
            Record(dev, op, iteration, head_ready[s], rows);
          } else {
            const TimeNs start = Now();
            RunOp(dev, op, iteration);
            Record(dev, op, iteration, start, rows);
          }
          MarkDone(dev, index);
          next[s] += 1;
          head_ready[s] = -1;
          left -= 1;
          ran = true;
        }
      }
      if (ran) {
        last_progress = Clock::now();
        continue;
      }
      if (Clock::now() - last_progress >= stall_timeout_) {
        std::string heads;
        for (size_t s = 0; s < streams; ++s) {
          if (next[s] == dev.streams[s].second.size()) continue;
          heads += (heads.empty() ? "" : "; ") + WhyWaiting(dev, dev.streams[s].second[next[s]]);
        }
        throw InternalError(fmt::format("executor stalled for {} s: device {} waiting: {}",
                                        stall_timeout_.count() / 1000.0, dev.device, heads));
      }
      if (stop_.Stopped()) throw StoppedError();
      WaitForArrival(dev.device, arrivals);
    }
  } catch (const StoppedError&) {
    // Another thread failed first; its error is the one reported.
  } catch (...) {
    Fail(std::current_exception());
  }
}

ExecResult Runner::Run(const BackendFactory& make_backend, const std::vector<int>& devices) {
  Prepare(make_backend, devices);
  std::string why;
  const bool possible = options_.threads != StreamThreads::kStream && DeviceThreadsPossible(&why);
  if (options_.threads == StreamThreads::kDevice && !possible) {
    ThrowInput("{}: cannot run one thread per device (--exec-threads device): {}",
               schedule_.source.empty() ? "schedule" : schedule_.source, why);
  }
  device_threads_ = possible;
  size_t threads = devices_.size();
  if (!device_threads_) {
    threads = 0;
    for (const auto& dev : devices_) threads += dev->streams.size();
  }
  if (threads > static_cast<size_t>(kMaxThreadsPerProcess)) {
    ThrowInput("{}: {} (device, stream) threads in one process; exec starts at most {}",
               schedule_.source.empty() ? "schedule" : schedule_.source, threads,
               kMaxThreadsPerProcess);
  }
  spin_ = device_threads_ &&
          static_cast<int>(devices_.size()) * options_.threads_per_device <= UsableCores();
  ExecResult result;
  result.threads = device_threads_ ? StreamThreads::kDevice : StreamThreads::kStream;
  result.trace.run_kind = "exec";
  run_start_ = Clock::now();
  for (int iteration = 0; iteration < options_.iterations; ++iteration) {
    std::fill(done_.begin(), done_.end(), 0);
    for (auto& dev : devices_) {
      dev->backend->BeginIteration();
      dev->store->Clear();
    }
    const auto start = Clock::now();
    std::vector<std::vector<TraceRow>> rows;
    std::vector<std::pair<DeviceState*, const std::vector<int>*>> work;  // ops null: kDevice
    for (auto& dev : devices_) {
      if (device_threads_) {
        work.emplace_back(dev.get(), nullptr);
        continue;
      }
      for (const auto& [name, ops] : dev->streams) work.emplace_back(dev.get(), &ops);
    }
    rows.resize(work.size());
    {
      std::vector<std::jthread> threads;
      threads.reserve(work.size());
      for (size_t i = 0; i < work.size(); ++i) {
        threads.emplace_back([this, &work, &rows, i, iteration] {
          if (work[i].second == nullptr) {
            RunDevice(*work[i].first, iteration, rows[i]);
          } else {
            RunStream(*work[i].first, *work[i].second, iteration, rows[i]);
          }
        });
      }
    }
    if (error_) std::rethrow_exception(error_);
    result.iteration_times_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    double loss = 0;
    for (auto& dev : devices_) {
      // A tp group's ranks compute the same loss, or with sequence parallelism each its rows'.
      if (dev->shard.tp_rank == 0 || dev->sequence_parallel) loss += dev->backend->LossSum();
      // Layers without an OPTIMIZER op keep this iteration's gradients as the snapshot.
      if (iteration == 0) dev->backend->SnapshotGradients(Range{0, card_.layers});
    }
    result.losses.push_back(loss);
    for (auto& r : rows) {
      for (auto& row : r) result.trace.rows.push_back(std::move(row));
    }
  }
  std::sort(result.trace.rows.begin(), result.trace.rows.end(),
            [](const TraceRow& a, const TraceRow& b) {
              return std::tie(a.iteration, a.start_ns, a.device, a.key) <
                     std::tie(b.iteration, b.start_ns, b.device, b.key);
            });
  for (auto& dev : devices_) {
    dev->backend->GatherSnapshot(result.gradients);
    result.resident_state[dev->device] = dev->backend->ResidentState();
  }
  result.grad_norm = GradNorm(result.gradients);
  result.trace.metadata["model"] = card_.name;
  result.trace.metadata["iterations"] = std::to_string(options_.iterations);
  result.trace.metadata["seed"] = std::to_string(options_.seed);
  result.trace.metadata["threads"] = StreamThreadsName(result.threads);
  return result;
}

}  // namespace run_detail

std::string StreamThreadsName(StreamThreads threads) {
  switch (threads) {
    case StreamThreads::kAuto:
      return "auto";
    case StreamThreads::kStream:
      return "stream";
    case StreamThreads::kDevice:
      return "device";
  }
  return "auto";
}

StreamThreads ParseStreamThreads(const std::string& name, const std::string& where) {
  for (StreamThreads t : {StreamThreads::kAuto, StreamThreads::kStream, StreamThreads::kDevice}) {
    if (name == StreamThreadsName(t)) return t;
  }
  ThrowInput("{}: unknown thread mode '{}' (known: auto, stream, device)", where, name);
}

ExecResult RunSchedule(const Schedule& schedule, const ModelCard& card, const ExecOptions& options,
                       const BackendFactory& make_backend, Transport& transport,
                       const std::vector<int>& devices) {
  if (options.iterations < 1)
    ThrowInput("exec: iterations must be >= 1, not {}", options.iterations);
  run_detail::Runner runner(schedule, card, options, transport);
  return runner.Run(make_backend, devices);
}

}  // namespace terasim
