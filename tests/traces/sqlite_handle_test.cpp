// The SQLite wrappers: the checking wrapper's message, move-only handles, transactions.
#include "traces/sqlite_handle.h"

#include <stdexcept>
#include <type_traits>

#include <catch2/catch.hpp>

#include "tests/traces/sample_trace.h"

namespace terasim {
namespace {

using testing::TempPath;

static_assert(!std::is_copy_constructible_v<Database> && std::is_move_constructible_v<Database>);
static_assert(!std::is_copy_constructible_v<Statement> && std::is_move_constructible_v<Statement>);

int64_t CountRows(Database& db) {
  Statement s = db.Prepare("SELECT count(*) FROM t");
  s.Step();
  return s.Int(0);
}

TEST_CASE("A failed SQLite call reports the call, file:line, database and SQLite's message") {
  TempPath path("wrapper.db");
  Database db = Database::Open(path.str(), Database::Mode::kCreate);
  db.Exec("CREATE TABLE t (x INTEGER UNIQUE)");
  Statement insert = db.Prepare("INSERT INTO t (x) VALUES (?1)");
  insert.Bind(1, int64_t{7});
  insert.Run();
  insert.Bind(1, int64_t{7});
  try {
    insert.Step();
    FAIL("a duplicate insert must throw");
  } catch (const SqliteError& e) {
    std::string what = e.what();
    // "PATH: sqlite3_step(stmt_) failed at traces/sqlite_handle.cpp:LINE: UNIQUE constraint ..."
    CHECK_THAT(what, Catch::StartsWith(path.str() + ": sqlite3_step(stmt_) failed at "
                                                    "traces/sqlite_handle.cpp:"));
    CHECK_THAT(what, Catch::EndsWith(": UNIQUE constraint failed: t.x"));
    CHECK(e.sqlite_message() == "UNIQUE constraint failed: t.x");
  }
}

TEST_CASE("Moving a Database or Statement transfers the handle") {
  TempPath path("move.db");
  Database a = Database::Open(path.str(), Database::Mode::kCreate);
  Database b = std::move(a);
  CHECK(a.handle() == nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  CHECK(b.handle() != nullptr);
  Statement s = b.Prepare("SELECT 41 + 1");
  Statement t = std::move(s);
  REQUIRE(t.Step());
  // 41 + 1 = 42
  CHECK(t.Int(0) == 42);
}

TEST_CASE("A Transaction rolls back when it is left without Commit") {
  TempPath path("transaction.db");
  Database db = Database::Open(path.str(), Database::Mode::kCreate);
  db.Exec("CREATE TABLE t (x)");
  try {
    Transaction tx(db);
    db.Exec("INSERT INTO t VALUES (1)");
    throw std::runtime_error("interrupted");
  } catch (const std::runtime_error&) {
  }
  // Rolled back: no rows.
  CHECK(CountRows(db) == 0);
  {
    Transaction tx(db);
    db.Exec("INSERT INTO t VALUES (1)");
    tx.Commit();
  }
  // Committed: one row.
  CHECK(CountRows(db) == 1);
}

TEST_CASE("Prepare rejects a second statement but allows trailing comments") {
  TempPath path("prepare.db");
  Database db = Database::Open(path.str(), Database::Mode::kCreate);
  Statement ok = db.Prepare("SELECT 1; -- a comment\n");
  REQUIRE(ok.Step());
  CHECK(ok.Int(0) == 1);
  CHECK_THROWS_WITH(db.Prepare("SELECT 1; SELECT 2"),
                    path.str() + ": only one SQL statement at a time (extra text: ' SELECT 2')");
}

}  // namespace
}  // namespace terasim
