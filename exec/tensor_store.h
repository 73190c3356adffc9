// TensorStore: one device's named tensors (activations, gradients, tp partial sums) for one
// iteration, keyed by identity (exec/tensor_id.h store_key). Get blocks until the tensor has
// been put, so a consumer on one stream may wait for a producer on another. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "exec/stop_flag.h"

namespace terasim {

class TensorStore {
 public:
  TensorStore(const StopFlag& stop, std::chrono::milliseconds stall_timeout)
      : stop_(stop), stall_timeout_(stall_timeout) {}

  // Stores (or replaces) `key`.
  void Put(const std::string& key, std::vector<float> values);
  // A copy of `key`, waiting until it is put. Throws StoppedError or InternalError (stall).
  std::vector<float> Get(const std::string& key);
  // Drops every tensor.
  void Clear();
  // Whether `key` has been put (does not wait).
  bool Has(const std::string& key);
  // Wakes waiters so they can see a stop.
  void Notify() { cv_.notify_all(); }

 private:
  const StopFlag& stop_;
  std::chrono::milliseconds stall_timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<float>> tensors_;
};

}  // namespace terasim
