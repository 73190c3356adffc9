// SweepDir: a private folder for one `terasim sweep` test case (removed afterwards) with the
// spec written into it, the store's path, and a one-number query of that store. Shared by
// sweep_cli_test.cpp and sweep_mpi_test.cpp.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "traces/query_result.h"
#include "traces/result_store.h"

namespace terasim::testing {

struct SweepDir {
  std::string dir;
  std::string spec;  // dir/spec.json, holding the spec text
  std::string db;    // dir/sweep.db (not created here)
  SweepDir(const std::string& name, const std::string& spec_text) {
    dir = (std::filesystem::temp_directory_path() /
           ("terasim_sweep_" + name + "_" + std::to_string(getpid())))
              .string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    spec = dir + "/spec.json";
    db = dir + "/sweep.db";
    std::ofstream(spec) << spec_text;
  }
  ~SweepDir() { std::filesystem::remove_all(dir); }
  SweepDir(const SweepDir&) = delete;
  SweepDir& operator=(const SweepDir&) = delete;
  // The first cell of `sql`'s first row, as an integer (e.g. "SELECT count(*) FROM runs").
  int64_t Count(const std::string& sql) const {
    ResultStore store = ResultStore::OpenExisting(db);
    return std::stoll(SqlValueText(store.Query(sql).rows.at(0).at(0)));
  }
};

}  // namespace terasim::testing
