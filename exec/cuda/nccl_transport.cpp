#include "exec/cuda/nccl_transport.h"

#include <functional>

#include <fmt/format.h>

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

int64_t NameHash(const std::string& name) {
  return static_cast<int64_t>(std::hash<std::string>{}(name) >> 1);
}

}  // namespace

NcclTransport::NcclTransport(int ranks, int rank, const ncclUniqueId& id, int gpu,
                             std::chrono::milliseconds stall_timeout)
    : TransportBase(Delivery::kPulled, stall_timeout, fmt::format("NCCL rank {}", rank)),
      rank_(rank),
      gpu_(SelectGpu(gpu)),
      comm_(ranks, rank, id) {}

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
  Await(
      [&] {
        const cudaError_t status = cudaStreamQuery(stream_.get());
        if (status != cudaErrorNotReady) TERASIM_CUDA(status);
        return status == cudaSuccess;
      },
      what);
}

void NcclTransport::Post(int from, int to, const std::string& name, std::span<const float> data) {
  UseDevice(gpu_);
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t header_host[2] = {static_cast<int64_t>(data.size()), NameHash(name)};
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
  Wait(fmt::format("rank {} to receive {} from rank {}", to, name, from));
}

bool NcclTransport::Pull(int to, int from, const std::string& name) {
  UseDevice(gpu_);
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string what = fmt::format("rank {} to receive {} from rank {}", to, name, from);
  DeviceBuffer<int64_t> header(2, stream_.get());
  TERASIM_NCCL(ncclRecv(header.data(), 2, ncclInt64, from, comm_.get(), stream_.get()));
  Wait(what);
  const std::vector<int64_t> h = header.ToHost();
  if (h[1] != NameHash(name)) {
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
  Deliver(from, to, name, payload.ToHost());
  return true;
}

std::vector<std::vector<float>> NcclTransport::Gather(const CollectiveCall& call,
                                                      std::span<const float> data) {
  UseDevice(gpu_);
  std::lock_guard<std::mutex> lock(mutex_);
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
  std::vector<std::vector<float>> host;
  for (const Buffer& b : all) host.push_back(b.ToHost());
  return host;
}

}  // namespace terasim
