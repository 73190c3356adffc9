#include "exec/cuda/nccl_transport.h"

#include <algorithm>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "exec/cuda/cuda_kernels.cuh"
#include "models/errors.h"

#ifdef TERASIM_HAVE_NCCL_MPI_BOOTSTRAP
#include <mpi.h>
#endif

namespace terasim {

namespace {

int SelectGpu(int gpu) {
  UseDevice(gpu);
  return gpu;
}

int64_t TensorHash(const std::string& tensor) {
  return static_cast<int64_t>(std::hash<std::string>{}(tensor) >> 1);
}

}  // namespace

NcclTransport::NcclTransport(int ranks, int rank, const ncclUniqueId& id, int gpu,
                             std::chrono::milliseconds stall_timeout)
    : rank_(rank), gpu_(SelectGpu(gpu)), stall_timeout_(stall_timeout), comm_(ranks, rank, id) {}

#ifdef TERASIM_HAVE_NCCL_MPI_BOOTSTRAP
std::unique_ptr<NcclTransport> NcclTransport::OverMpi(std::chrono::milliseconds stall_timeout) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id{};
  if (rank == 0) id = NewNcclUniqueId();
  const int status = MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (status != MPI_SUCCESS) {
    throw CudaError(fmt::format("MPI_Bcast of the NCCL unique id failed on rank {}", rank));
  }
  const int devices = CudaDeviceCount();
  if (devices == 0) throw CudaError(fmt::format("rank {}: no CUDA device for NCCL", rank));
  return std::make_unique<NcclTransport>(size, rank, id, rank % devices, stall_timeout);
}
#endif

void NcclTransport::Wait(const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + stall_timeout_;
  while (true) {
    const cudaError_t status = cudaStreamQuery(stream_.get());
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) TERASIM_CUDA(status);
    if (stop_.Stopped()) throw StoppedError();
    if (std::chrono::steady_clock::now() >= deadline) {
      throw InternalError(fmt::format("executor stalled for {} s waiting for rank {}: {}",
                                      stall_timeout_.count() / 1000.0, rank_, what));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void NcclTransport::Send(int from, int to, const std::string& tensor, std::span<const float> data) {
  UseDevice(gpu_);
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t header_host[2] = {static_cast<int64_t>(data.size()), TensorHash(tensor)};
  DeviceBuffer<int64_t> header = DeviceBuffer<int64_t>::FromHost(header_host, stream_.get());
  Buffer payload = Buffer::FromHost(data, stream_.get());
  TERASIM_NCCL(ncclGroupStart());
  TERASIM_NCCL(ncclSend(header.data(), 2, ncclInt64, to, comm_.get(), stream_.get()));
  if (!data.empty()) {
    TERASIM_NCCL(
        ncclSend(payload.data(), data.size(), ncclFloat32, to, comm_.get(), stream_.get()));
  }
  TERASIM_NCCL(ncclGroupEnd());
  // NCCL sends complete when the receiver takes them: the generators' schedules pair them.
  Wait(fmt::format("rank {} to receive {} from rank {}", to, tensor, from));
}

std::vector<float> NcclTransport::Recv(int to, int from, const std::string& tensor) {
  UseDevice(gpu_);
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string what = fmt::format("rank {} to receive {} from rank {}", to, tensor, from);
  DeviceBuffer<int64_t> header(2, stream_.get());
  TERASIM_NCCL(ncclRecv(header.data(), 2, ncclInt64, from, comm_.get(), stream_.get()));
  Wait(what);
  const std::vector<int64_t> h = header.ToHost();
  if (h[1] != TensorHash(tensor)) {
    throw InternalError(fmt::format(
        "NCCL transport: {}: the next message from rank {} is another tensor (sends and "
        "receives between two ranks must be issued in the same order)",
        what, from));
  }
  Buffer payload(h[0], stream_.get());
  if (h[0] > 0) {
    TERASIM_NCCL(ncclRecv(payload.data(), h[0], ncclFloat32, from, comm_.get(), stream_.get()));
  }
  Wait(what);
  return payload.ToHost();
}

std::vector<NcclTransport::Buffer> NcclTransport::Exchange(const CollectiveCall& call,
                                                           std::span<const float> data) {
  const int n = static_cast<int>(call.ranks.size());
  const int me = GroupPosition(call, call.device);
  const cudaStream_t stream = stream_.get();
  const std::string what =
      fmt::format("rank {}: collective {} on group {}", call.device, call.tensor, call.group);
  // Round 1: every member's element count.
  DeviceBuffer<int64_t> counts(n, stream);
  const int64_t mine = static_cast<int64_t>(data.size());
  TERASIM_CUDA(
      cudaMemcpyAsync(counts.data() + me, &mine, sizeof(mine), cudaMemcpyHostToDevice, stream));
  TERASIM_NCCL(ncclGroupStart());
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    TERASIM_NCCL(ncclSend(counts.data() + me, 1, ncclInt64, call.ranks[p], comm_.get(), stream));
    TERASIM_NCCL(ncclRecv(counts.data() + p, 1, ncclInt64, call.ranks[p], comm_.get(), stream));
  }
  TERASIM_NCCL(ncclGroupEnd());
  Wait(what);
  const std::vector<int64_t> sizes = counts.ToHost();
  // Round 2: the payloads.
  std::vector<Buffer> all;
  for (int p = 0; p < n; ++p) all.emplace_back(sizes[p], stream);
  all[me].CopyFromHost(data);
  TERASIM_NCCL(ncclGroupStart());
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    if (mine > 0) {
      TERASIM_NCCL(ncclSend(all[me].data(), mine, ncclFloat32, call.ranks[p], comm_.get(), stream));
    }
    if (sizes[p] > 0) {
      TERASIM_NCCL(
          ncclRecv(all[p].data(), sizes[p], ncclFloat32, call.ranks[p], comm_.get(), stream));
    }
  }
  TERASIM_NCCL(ncclGroupEnd());
  Wait(what);
  return all;
}

void NcclTransport::AllReduce(const CollectiveCall& call, std::span<float> data) {
  UseDevice(gpu_);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Buffer> all = Exchange(call, data);
  for (const Buffer& b : all) {
    TERASIM_CHECK(b.size() == static_cast<int64_t>(data.size()),
                  "all-reduce {} sizes differ: {} vs {}", call.tensor, b.size(), data.size());
  }
  // Fixed rank order: every member computes the same bits.
  for (size_t m = 1; m < all.size(); ++m) {
    gpu::AddInPlace(stream_.get(), all[0].size(), all[m].data(), all[0].data());
  }
  all[0].CopyToHost(data);
}

void NcclTransport::Broadcast(const CollectiveCall& call, int root, std::vector<float>& data) {
  UseDevice(gpu_);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Buffer> all = Exchange(call, data);
  data = all[GroupPosition(call, root)].ToHost();
}

std::vector<float> NcclTransport::AllGather(const CollectiveCall& call,
                                            std::span<const float> data) {
  UseDevice(gpu_);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<float> out;
  for (const Buffer& b : Exchange(call, data)) {
    const std::vector<float> part = b.ToHost();
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

void NcclTransport::Abort() {
  stop_.Stop();
  // Not under mutex_: a waiting operation holds it; ncclCommAbort unblocks its kernels.
  comm_.Abort();
}

}  // namespace terasim
