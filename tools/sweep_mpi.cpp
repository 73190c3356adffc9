#include "tools/sweep_mpi.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "models/errors.h"
#include "schedule/op.h"
#include "traces/run_record_json.h"

#if TERASIM_HAVE_MPI
#include <mpi.h>

#include "exec/mpi_transport.h"  // TERASIM_MPI
#endif

namespace terasim::cli {
namespace {

using nlohmann::json;

// A number JSON can carry: null for NaN and infinities.
json Finite(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

double NumberOrNan(const json& value) {
  return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
}

std::string ThisHostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

#if TERASIM_HAVE_MPI
// Message tags; messages from one rank arrive in the order sent, whatever their tag.
constexpr int kResultTag = 1;
constexpr int kDoneTag = 2;
#endif

}  // namespace

std::string EncodeSweepResult(const SweepResult& result) {
  json out = {{"job", result.job}, {"rank", result.rank}};
  if (!result.record) {
    out["error"] = result.error;
  } else {
    out["record"] = RunRecordJson(*result.record);
    if (result.record->host.empty()) out["record"]["host"] = ThisHostName();
    // Rows as arrays: the trace is most of the message.
    json rows = json::array();
    for (const TraceRow& row : result.rows) {
      rows.push_back({row.iteration, row.key, OpKindName(row.kind), row.device, row.stream,
                      row.start_ns, row.end_ns, row.bytes, Finite(row.flops)});
    }
    out["rows"] = std::move(rows);
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

SweepResult DecodeSweepResult(std::string_view text) {
  const json in = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (in.is_discarded()) {
    throw InternalError(
        fmt::format("sweep: a rank sent a result that is not JSON ({} bytes)", text.size()));
  }
  SweepResult result;
  try {
    result.job = in.at("job").get<size_t>();
    result.rank = in.at("rank").get<int>();
    if (!in.contains("record")) {
      result.error = in.at("error").get<std::string>();
      return result;
    }
    const json& j = in.at("record");
    RunRecord r;
    r.kind = j.at("kind").get<std::string>();
    r.model = j.at("model").get<std::string>();
    r.cluster = j.at("cluster").get<std::string>();
    r.strategy = j.at("strategy").get<std::string>();
    r.dp = j.at("dp").get<int>();
    r.pp = j.at("pp").get<int>();
    r.tp = j.at("tp").get<int>();
    r.microbatches = j.at("microbatches").get<int>();
    r.slicing = j.at("slicing").get<std::string>();
    r.config = j.at("config");
    r.config_key = j.at("config_key").get<std::string>();
    r.code_version = j.at("code_version").get<std::string>();
    r.seed = j.at("seed").get<int64_t>();
    r.host = j.at("host").get<std::string>();
    r.label = j.at("label").get<std::string>();
    for (const auto& [name, value] : j.at("metrics").items()) {
      r.metrics[name] = NumberOrNan(value);
    }
    result.record = std::move(r);
    for (const json& row : in.at("rows")) {
      TraceRow t;
      t.iteration = row.at(0).get<int>();
      t.key = row.at(1).get<std::string>();
      const std::optional<OpKind> kind = ParseOpKind(row.at(2).get<std::string>());
      if (!kind) throw InternalError(fmt::format("unknown op kind {}", row.at(2).dump()));
      t.kind = *kind;
      t.device = row.at(3).get<int>();
      t.stream = row.at(4).get<std::string>();
      t.start_ns = row.at(5).get<TimeNs>();
      t.end_ns = row.at(6).get<TimeNs>();
      t.bytes = row.at(7).get<Bytes>();
      t.flops = NumberOrNan(row.at(8));
      result.rows.push_back(std::move(t));
    }
  } catch (const std::exception& e) {
    throw InternalError(fmt::format("sweep: a rank sent a malformed result: {}", e.what()));
  }
  return result;
}

bool SweepRanks::WouldJoin() {
#if TERASIM_HAVE_MPI
  return UnderMpirun();
#else
  return false;
#endif
}

SweepRanks::SweepRanks() {
#if TERASIM_HAVE_MPI
  if (!WouldJoin()) return;
  int provided = MPI_THREAD_SINGLE;
  TERASIM_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  joined_ = true;
  TERASIM_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  TERASIM_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  TERASIM_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
#endif
}

SweepRanks::~SweepRanks() {
#if TERASIM_HAVE_MPI
  if (joined_) MPI_Finalize();
#endif
}

std::string SweepRanks::Broadcast(const std::string& bytes) {
#if TERASIM_HAVE_MPI
  if (joined_) {
    // Small messages (a flag per grid point): the length, then the bytes.
    long long length = rank_ == 0 ? static_cast<long long>(bytes.size()) : 0;
    TERASIM_MPI(MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD));
    TERASIM_CHECK(length >= 0 && length <= std::numeric_limits<int>::max(),
                  "sweep broadcast of {} bytes", length);
    std::string out = rank_ == 0 ? bytes : std::string(static_cast<size_t>(length), '\0');
    TERASIM_MPI(MPI_Bcast(out.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD));
    return out;
  }
#endif
  return bytes;
}

void SweepRanks::SendResult(const SweepResult& result) {
  TERASIM_CHECK(joined_ && rank_ != 0, "SendResult on rank {} of {} (joined: {})", rank_, size_,
                joined_);
#if TERASIM_HAVE_MPI
  const std::string text = EncodeSweepResult(result);
  TERASIM_CHECK(text.size() <= static_cast<size_t>(std::numeric_limits<int>::max()),
                "sweep result of {} bytes", text.size());
  TERASIM_MPI(MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, kResultTag,
                       MPI_COMM_WORLD));
#endif
}

void SweepRanks::SendDone() {
  TERASIM_CHECK(joined_ && rank_ != 0, "SendDone on rank {} of {} (joined: {})", rank_, size_,
                joined_);
#if TERASIM_HAVE_MPI
  TERASIM_MPI(MPI_Send(nullptr, 0, MPI_CHAR, 0, kDoneTag, MPI_COMM_WORLD));
#endif
}

std::optional<SweepResult> SweepRanks::PollResult() {
  TERASIM_CHECK(rank_ == 0, "PollResult on rank {}", rank_);
#if TERASIM_HAVE_MPI
  while (joined_) {
    int arrived = 0;
    MPI_Status status;
    TERASIM_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status));
    if (!arrived) break;
    int count = 0;
    TERASIM_MPI(MPI_Get_count(&status, MPI_CHAR, &count));
    std::string text(static_cast<size_t>(count), '\0');
    // The first message from that source with that tag is the probed one (one thread here).
    TERASIM_MPI(MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    if (status.MPI_TAG == kDoneTag) {
      ++others_done_;
      continue;
    }
    TERASIM_CHECK(status.MPI_TAG == kResultTag, "sweep message with tag {} from rank {}",
                  status.MPI_TAG, status.MPI_SOURCE);
    return DecodeSweepResult(text);
  }
#endif
  return std::nullopt;
}

void SweepRanks::AbortJob(int exit_code) const {
#if TERASIM_HAVE_MPI
  if (joined_) MPI_Abort(MPI_COMM_WORLD, exit_code);
#endif
  std::exit(exit_code);  // without MPI, or should MPI_Abort return
}

}  // namespace terasim::cli
