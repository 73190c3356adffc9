#include "traces/trace_file.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "models/errors.h"
#include "traces/trace_csv.h"

namespace terasim {
namespace {

std::string Extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

Trace ReadTraceFile(const std::string& path) {
  std::string ext = Extension(path);
  if (ext == ".json") return ReadChromeTraceFile(path);
  if (ext == ".csv") return ReadTraceCsvFile(path);
  ThrowInput("{}: unknown trace format (expected .json or .csv)", path);
}

void WriteTraceFile(const std::string& path, const Trace& trace,
                    const std::vector<CounterSeries>& counters) {
  std::string ext = Extension(path);
  if (ext == ".json") {
    WriteChromeTraceFile(path, trace, counters);
  } else if (ext == ".csv") {
    WriteTraceCsvFile(path, trace);
  } else {
    ThrowInput("{}: unknown trace format (expected .json or .csv)", path);
  }
}

}  // namespace terasim
