// The reproductions of issue 15 (items 2, 4-8), end to end through the terasim binary: each is
// refused with one clear line naming the place and the limit, and the documented exit code
// (docs/exit_codes.md: 1 bad input, 2 usage, 3 internal fault only).
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/tools/run_command.h"
#include "traces/result_store.h"
#include "traces/sqlite_handle.h"

namespace terasim {
namespace {

struct Result {
  int exit_code = -1;
  std::string err;
};

struct Dir {
  Dir() {
    path = (std::filesystem::temp_directory_path() / ("terasim-inputs-" + std::to_string(getpid())))
               .string();
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~Dir() { std::filesystem::remove_all(path); }
  std::string path;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// `terasim ARGS`, stdout discarded, stderr captured.
Result Terasim(const Dir& dir, const std::string& args) {
  const std::string err = dir.path + "/stderr.txt";
  std::string out;
  Result r;
  r.exit_code = testing::RunCommand(
      "cd " + dir.path + " && " + std::string(TERASIM_BINARY) + " " + args + " >/dev/null 2>" + err,
      &out);
  r.err = ReadAll(err);
  return r;
}

std::string Golden(const std::string& name) {
  return std::string(TERASIM_SOURCE_DIR) + "/tests/golden/" + name;
}

// Item 2: a huge --batch crashed Divisors() with SIGFPE.
TEST_CASE("plan and compare refuse --batch 2147483647 naming kMaxBatch (exit 1)") {
  Dir dir;
  for (const char* command : {"plan", "compare"}) {
    INFO(command);
    Result r = Terasim(
        dir, std::string(command) + " --model tiny --cluster p3.16xlarge:1 --batch 2147483647");
    CHECK(r.exit_code == 1);
    CHECK(r.err ==
          "terasim: --batch 2147483647: must be in [1, 65536] (kMaxBatch, "
          "models/limits.h)\n");
  }
}

// Items 5 and 6: integers cut to 32 bits, allocations sized by unchecked numbers.
TEST_CASE("A .pir with devices above the limit is refused at its line (exit 1)") {
  Dir dir;
  const std::string text = ReadAll(Golden("gpipe_p2_m2.pir"));
  for (const char* devices : {"2147483647", "4294967298"}) {
    INFO(devices);
    const std::string pir = dir.path + "/big.pir";
    WriteText(pir, std::regex_replace(text, std::regex("\ndevices [0-9]+\n"),
                                      std::string("\ndevices ") + devices + "\n"));
    Result r = Terasim(dir, "check " + pir);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "terasim: " + pir + ":5: devices: " + devices +
                       " exceeds the limit 1048576 (kMaxDevices, models/limits.h)\n");
  }
}

TEST_CASE("A model card with hidden 4294967360 is refused, not read as 64 (exit 1)") {
  Dir dir;
  std::string card = ReadAll(std::string(TERASIM_SOURCE_DIR) + "/models/data/tiny.json");
  card = std::regex_replace(card, std::regex("\"hidden\": 64"), "\"hidden\": 4294967360");
  const std::string path = dir.path + "/huge.json";
  WriteText(path, card);
  Result r = Terasim(dir, "memory --model " + path + " --cluster p3.16xlarge:1 --pp 1 --tp 1");
  CHECK(r.exit_code == 1);
  CHECK(r.err == "terasim: " + path +
                     ": hidden: 4294967360 exceeds the limit 131072 (kMaxHidden, "
                     "models/limits.h)\n");
}

TEST_CASE("schedule refuses a batch that overflows int and too many micro-batches (exit 1)") {
  Dir dir;
  // 2 x 2147483647 sequences wrapped to "batch -2" before.
  Result r = Terasim(dir,
                     "schedule --model tiny --strategy gpipe --pp 2 --microbatch-size 2147483647 "
                     "--microbatches 2 -o s.pir");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("--microbatch-size 2147483647: exceeds the limit 65536 "
                                    "(kMaxBatch, models/limits.h)"));
  r = Terasim(dir, "schedule --model tiny --strategy gpipe --pp 2 --microbatches 1000000 -o s.pir");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("--microbatches 1000000: exceeds the limit 65536 "
                                    "(kMaxMicrobatches, models/limits.h)"));
  CHECK_FALSE(std::filesystem::exists(dir.path + "/s.pir"));
}

TEST_CASE("memory refuses --batch 1000000 naming kMaxBatch (exit 1)") {
  Dir dir;
  Result r = Terasim(dir,
                     "memory --model tiny --cluster p3.16xlarge:1 --pp 2 --tp 1 --dp 1 "
                     "--batch 1000000");
  CHECK(r.exit_code == 1);
  CHECK(r.err ==
        "terasim: --batch 1000000: exceeds the limit 65536 (kMaxBatch, models/limits.h)\n");
}

TEST_CASE("A negative --nic-gbps is an error, not the instance's default (exit 1)") {
  Dir dir;
  Result r = Terasim(dir,
                     "simulate --strategy gpipe --model tiny --pp 2 --dp 1 --cluster p3.16xlarge:1 "
                     "--nic-gbps=-5");
  CHECK(r.exit_code == 1);
  CHECK(r.err == "terasim: --nic-gbps -5: must be a finite number > 0\n");
  r = Terasim(dir, "compare --model tiny --cluster p3.16xlarge:1 --nic-gbps=-5");
  CHECK(r.exit_code == 1);
  CHECK(r.err == "terasim: --nic-gbps -5: must be a finite number > 0\n");
  r = Terasim(dir, "topo show p3.16xlarge:2 --nic-gbps=-5");
  CHECK(r.exit_code == 1);
}

// Item 4: outputs written in place, over anything.
TEST_CASE("schedule -o replaces only a regular file and never touches PATH.tmp (exit 1)") {
  Dir dir;
  const std::string args = "schedule --model tiny --strategy gpipe --pp 2 -o ";
  WriteText(dir.path + "/keep.txt", "precious");
  std::filesystem::create_symlink(dir.path + "/keep.txt", dir.path + "/link.pir");
  Result r = Terasim(dir, args + "link.pir");
  CHECK(r.exit_code == 1);
  CHECK(r.err == "terasim: link.pir: is a symlink: terasim replaces only regular files\n");
  CHECK(ReadAll(dir.path + "/keep.txt") == "precious");

  r = Terasim(dir, args + "/dev/null");
  CHECK(r.exit_code == 1);
  CHECK(r.err ==
        "terasim: /dev/null: is a character device: terasim replaces only regular "
        "files\n");

  WriteText(dir.path + "/s.pir.tmp", "someone else's");
  r = Terasim(dir, args + "s.pir");
  CHECK(r.exit_code == 0);
  CHECK(ReadAll(dir.path + "/s.pir").rfind("terasim-pir 1\n", 0) == 0);
  CHECK(ReadAll(dir.path + "/s.pir.tmp") == "someone else's");
}

// Item 8: input errors that came out as internal errors (exit 3).
TEST_CASE("compare --out /proc/x is bad input, refused before the search (exit 1)") {
  Dir dir;
  Result r = Terasim(dir, "compare --model tiny --cluster p3.16xlarge:1 --db c.db --out /proc/x");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("terasim: --out: /proc/x: "));
}

TEST_CASE("db export of an op that ends before it starts is bad input (exit 1)") {
  Dir dir;
  const std::string db = dir.path + "/s.db";
  Result r = Terasim(dir,
                     "simulate --strategy gpipe --model tiny --pp 2 --cluster p3.16xlarge:1 "
                     "--db s.db");
  REQUIRE(r.exit_code == 0);
  {
    ResultStore store = ResultStore::OpenExisting(db);
    store.Query("UPDATE ops SET end_ns = start_ns - 1 WHERE seq = 0");
  }
  r = Terasim(dir, "db export 1 --trace out.json --db s.db");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("is before start_ns"));
  CHECK_FALSE(std::filesystem::exists(dir.path + "/out.json"));
}

// Item 7: the store.
TEST_CASE("db query is read-only: DELETE, ATTACH and user_version resets fail (exit 1)") {
  Dir dir;
  REQUIRE(Terasim(dir,
                  "simulate --strategy gpipe --model tiny --pp 2 --cluster p3.16xlarge:1 "
                  "--db s.db")
              .exit_code == 0);
  for (const char* sql : {"DELETE FROM runs", "PRAGMA user_version = 0", "ATTACH 'other.db' AS o",
                          "VACUUM INTO 'copy.db'"}) {
    INFO(sql);
    Result r = Terasim(dir, std::string("db query \"") + sql + "\" --db s.db");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("terasim: s.db: SQL: "));
  }
  CHECK_FALSE(std::filesystem::exists(dir.path + "/other.db"));
  CHECK_FALSE(std::filesystem::exists(dir.path + "/copy.db"));
  std::string out;
  CHECK(testing::RunCommand("cd " + dir.path + " && " + TERASIM_BINARY +
                                " db query 'SELECT count(*) AS n FROM runs' --db s.db --csv",
                            &out) == 0);
  CHECK(out == "n\n1\n");
}

TEST_CASE("compare and simulate refuse a foreign SQLite file before simulating (exit 1)") {
  Dir dir;
  const std::string db = dir.path + "/notes.db";
  {
    Database foreign = Database::Open(db, Database::Mode::kCreate);
    foreign.Exec("CREATE TABLE notes (text TEXT)");
  }
  const std::string before = ReadAll(db);
  for (const std::string& args :
       {std::string("compare --model tiny --cluster p3.16xlarge:1 --db notes.db"),
        std::string("simulate --strategy gpipe --model tiny --pp 2 --cluster p3.16xlarge:1 "
                    "--db notes.db")}) {
    INFO(args);
    Result r = Terasim(dir, args);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("notes.db: has tables of its own (e.g. 'notes')"));
  }
  CHECK(ReadAll(db) == before);
  CHECK_FALSE(std::filesystem::exists(db + "-wal"));
}

// Item 4: a signal at any moment of a compare (while simulating, storing or writing its
// outputs) leaves the outputs whole or absent and the store consistent. Where the signal lands
// depends on the machine's speed; the invariants hold wherever it lands.
void CheckCompareInterrupted(int signal_number, int delay_ms) {
  Dir dir;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (chdir(dir.path.c_str()) != 0) _exit(99);
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    if (freopen("/dev/null", "w", stdout) == nullptr) _exit(97);
    if (freopen("/dev/null", "w", stderr) == nullptr) _exit(97);
    execl(TERASIM_BINARY, TERASIM_BINARY, "compare", "--model", "gpt3-1b", "--cluster",
          "p3.16xlarge:24", "--batch", "8", "--db", "k.db", "--out", "out",
          static_cast<char*>(nullptr));
    _exit(98);
  }
  usleep(delay_ms * 1000);
  kill(child, signal_number);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  // Finished before the signal (0) or ended by it (the shell shows 128 + signal).
  const bool finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  CHECK((finished || (WIFSIGNALED(status) && WTERMSIG(status) == signal_number)));
  // No temporaries; any output there is whole.
  if (std::filesystem::exists(dir.path + "/out")) {
    for (const auto& entry : std::filesystem::directory_iterator(dir.path + "/out")) {
      const std::string name = entry.path().filename().string();
      INFO(name);
      CHECK_FALSE((name.size() >= 4 && name.substr(name.size() - 4) == ".tmp"));
      const std::string text = ReadAll(entry.path().string());
      if (name == "compare.svg") {
        CHECK((text.size() >= 7 && text.substr(text.size() - 7) == "</svg>\n"));
      }
      if (name == "winner.trace.json") CHECK_NOTHROW(nlohmann::json::parse(text));
    }
  }
  // The store: every run belongs to a whole comparison (all or nothing).
  if (std::filesystem::exists(dir.path + "/k.db")) {
    ResultStore store = ResultStore::OpenReadOnly(dir.path + "/k.db");
    const QueryResult orphans = store.Query(
        "SELECT count(*) FROM runs WHERE id NOT IN (SELECT run_id FROM comparison_runs)");
    CHECK(std::get<int64_t>(orphans.rows[0][0]) == 0);
  }
}

TEST_CASE("SIGTERM and SIGINT during compare leave outputs whole or absent, the store consistent") {
  CheckCompareInterrupted(SIGTERM, 1500);
  CheckCompareInterrupted(SIGINT, 3000);
}

}  // namespace
}  // namespace terasim
