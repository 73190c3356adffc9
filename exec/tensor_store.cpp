#include "exec/tensor_store.h"

namespace terasim {

void TensorStore::Put(const std::string& key, std::vector<float> values) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tensors_[key] = std::move(values);
  }
  cv_.notify_all();
}

std::vector<float> TensorStore::Get(const std::string& key) {
  std::unique_lock<std::mutex> lock(mutex_);
  WaitFor(
      cv_, lock, [&] { return tensors_.count(key) > 0; }, stop_, stall_timeout_, "tensor " + key);
  return tensors_.at(key);
}

bool TensorStore::Has(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return tensors_.count(key) > 0;
}

void TensorStore::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  tensors_.clear();
}

}  // namespace terasim
