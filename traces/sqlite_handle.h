// Move-only RAII wrappers for SQLite's database and statement handles, and the one checking
// wrapper through which every SQLite call goes (STYLE.md: "Every ... SQLite ... call goes
// through one checking wrapper"). The result store (traces/result_store.h) is their only user.
//
// TERASIM_SQLITE(db, call) evaluates `call` (an sqlite3_* call returning a result code) and,
// unless the code is SQLITE_OK, SQLITE_ROW or SQLITE_DONE, throws SqliteError with the call's
// text, file:line, the database file and sqlite3_errmsg:
//   "terasim.db: sqlite3_step(stmt) failed at traces/result_store.cpp:120: UNIQUE constraint
//    failed: metrics.run_id, metrics.name"
//
// Thread safety: a Database and its Statements belong to one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "models/errors.h"

struct sqlite3;
struct sqlite3_stmt;

namespace terasim {

// A failed SQLite call. Most failures concern the file or the SQL a person gave (a file that
// is not a database, a locked or read-only file, bad SQL), so it is an InputError: main()
// prints it on one line and exits 1.
class SqliteError : public InputError {
 public:
  SqliteError(const std::string& what, int code, std::string sqlite_message)
      : InputError(what), code_(code), sqlite_message_(std::move(sqlite_message)) {}
  int code() const { return code_; }  // the SQLite (extended) result code
  // SQLite's own message alone, e.g. "near \"SELEC\": syntax error".
  const std::string& sqlite_message() const { return sqlite_message_; }

 private:
  int code_;
  std::string sqlite_message_;
};

// Returns `rc` when it is SQLITE_OK, SQLITE_ROW or SQLITE_DONE; otherwise throws SqliteError
// naming `call`, `file`:`line`, the database file of `db` and sqlite3_errmsg(db) (sqlite3_errstr
// of rc when db is null). Use through TERASIM_SQLITE.
int CheckSqlite(int rc, sqlite3* db, const char* call, const char* file, int line);

}  // namespace terasim

#define TERASIM_SQLITE(db, call) ::terasim::CheckSqlite((call), (db), #call, __FILE__, __LINE__)

namespace terasim {

class Statement;

// An open SQLite connection. Move-only; closes on destruction.
class Database {
 public:
  enum class Mode {
    kCreate,    // read-write, creating the file when it does not exist
    kExisting,  // read-write, the file must exist
    // Read-only, the file must exist. A WAL store in a folder this process cannot write (so
    // that SQLite cannot create its -shm file) is opened as immutable instead.
    kExistingReadOnly,
  };

  // Opens `path`. Throws InputError "PATH: no such database file" when the mode needs an
  // existing file and there is none (nothing is created then), SqliteError otherwise.
  // Sets a busy timeout so that concurrent writers (parallel sweeps) wait instead of failing.
  static Database Open(const std::string& path, Mode mode);

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more SQL statements that return no rows we need. Throws SqliteError.
  void Exec(std::string_view sql);
  // Compiles one SQL statement. Throws SqliteError on bad SQL or when `sql` holds more than
  // one statement (trailing whitespace and semicolons are fine).
  Statement Prepare(std::string_view sql);
  // Reads an integer PRAGMA such as user_version. Throws SqliteError.
  int64_t PragmaInt(std::string_view name);

  int64_t LastInsertRowId() const;
  // Whether the connection cannot write (opened read-only, or the file is not writable).
  bool ReadOnly() const;

  // For running SQL a person typed: PRAGMA query_only and an authorizer that refuses ATTACH,
  // DETACH and PRAGMA assignments. Throws SqliteError.
  void RestrictToQueries();
  // From now on, interrupts the running statement after `max_vm_steps` more virtual-machine
  // steps or `max_seconds` of wall time (it then fails with SqliteError "interrupted" and
  // WorkLimitHit() is true), until ClearWorkLimit().
  void SetWorkLimit(int64_t max_vm_steps, double max_seconds);
  void ClearWorkLimit();
  bool WorkLimitHit() const;
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  // The budget of RestrictToQueries; on the heap so that its address, given to SQLite's
  // progress handler, survives moves of the Database.
  struct WorkLimit {
    int64_t steps_left = 0;
    double deadline_s = 0;  // steady_clock seconds
    bool hit = false;
  };

  sqlite3* db_ = nullptr;
  std::string path_;
  std::unique_ptr<WorkLimit> work_limit_;
};

// A compiled statement. Move-only; finalized on destruction. Bind indexes start at 1, column
// indexes at 0 (SQLite's own convention).
class Statement {
 public:
  enum class ColumnType { kNull, kInteger, kReal, kText, kBlob };

  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Each Bind throws SqliteError (e.g. index out of range). Returns *this for chaining.
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view value);
  Statement& BindNull(int index);

  // Advances: returns true when a row is available, false when the statement is done.
  // Throws SqliteError on failure (constraint violation, busy, ...).
  bool Step();
  // Runs a statement that returns no rows, then resets it for the next use.
  void Run();
  // Resets the statement and clears its bindings so that it can run again.
  void Reset();

  int ColumnCount() const;
  std::string ColumnName(int column) const;
  ColumnType Type(int column) const;
  int64_t Int(int column) const;
  double Real(int column) const;
  std::string Text(int column) const;  // "" for NULL
  // Whether the statement leaves the database files unchanged (sqlite3_stmt_readonly).
  bool ReadOnly() const;

 private:
  friend class Database;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}

  sqlite3* db_ = nullptr;  // borrowed from the Database, which must outlive the statement
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE on construction; rolls back on destruction unless Commit() ran, so that an
// exception anywhere inside a write leaves the database as it was.
class Transaction {
 public:
  explicit Transaction(Database& db);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  // Commits. Throws SqliteError (the transaction is then rolled back by the destructor).
  void Commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace terasim
