#include "traces/sqlite_handle.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

namespace terasim {

int CheckSqlite(int rc, sqlite3* db, const char* call, const char* file, int line) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return rc;
  std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const char* db_file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  std::string where = db_file != nullptr && *db_file != '\0' ? db_file : "sqlite";
#ifdef TERASIM_SOURCE_DIR
  // Name the source file from the repository root, as the rest of terasim's messages do.
  std::string_view source = file;
  std::string_view root = TERASIM_SOURCE_DIR "/";
  if (source.substr(0, root.size()) == root) file += root.size();
#endif
  // A build with relative source paths (ccache's CCACHE_BASEDIR) names "../../traces/x.cpp".
  while (std::string_view(file).substr(0, 3) == "../") file += 3;
  throw SqliteError(fmt::format("{}: {} failed at {}:{}: {}", where, call, file, line, message), rc,
                    message);
}

Database Database::Open(const std::string& path, Mode mode) {
  if (mode != Mode::kCreate && !std::filesystem::exists(path)) {
    ThrowInput("{}: no such database file", path);
  }
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case Mode::kCreate:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
    case Mode::kExisting:
      flags |= SQLITE_OPEN_READWRITE;
      break;
    case Mode::kExistingReadOnly:
      flags |= SQLITE_OPEN_READONLY;
      break;
  }
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Database db(raw, path);  // owns the handle even when opening failed
  if (rc != SQLITE_OK) {
    std::string message = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    throw SqliteError(fmt::format("{}: cannot open database: {}", path, message), rc, message);
  }
  TERASIM_SQLITE(db.db_, sqlite3_extended_result_codes(db.db_, 1));
  TERASIM_SQLITE(db.db_, sqlite3_busy_timeout(db.db_, 10000));
  if (mode == Mode::kExistingReadOnly) {
    // Reading a WAL database needs its -shm file; where it is missing and cannot be created (a
    // read-only folder, so no writer can be active either), read the file as immutable.
    const int probe =
        sqlite3_exec(db.db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
    if ((probe & 0xff) == SQLITE_CANTOPEN) {
      std::string uri = "file:";
      for (char c : path) {
        if (c == '%' || c == '?' || c == '#') {
          uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
        } else {
          uri += c;
        }
      }
      uri += "?immutable=1";
      sqlite3* immutable = nullptr;
      rc = sqlite3_open_v2(uri.c_str(), &immutable,
                           SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
      Database other(immutable, path);
      if (rc != SQLITE_OK) {
        std::string message = immutable != nullptr ? sqlite3_errmsg(immutable) : sqlite3_errstr(rc);
        throw SqliteError(fmt::format("{}: cannot open database: {}", path, message), rc, message);
      }
      TERASIM_SQLITE(other.db_, sqlite3_extended_result_codes(other.db_, 1));
      return other;
    }
  }
  return db;
}

bool Database::ReadOnly() const { return sqlite3_db_readonly(db_, "main") == 1; }

namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Refuses what would change the connection or a file outside the database's own statements.
int QueryOnlyAuthorizer(void*, int action, const char* arg1, const char* arg2, const char*,
                        const char*) {
  if (action == SQLITE_ATTACH || action == SQLITE_DETACH) return SQLITE_DENY;
  if (action == SQLITE_PRAGMA && arg2 != nullptr) {
    // A pragma with an argument sets something, except these lookups.
    const std::string_view name = arg1 != nullptr ? arg1 : "";
    for (std::string_view lookup : {"table_info", "table_xinfo", "index_list", "index_info",
                                    "index_xinfo", "foreign_key_list"}) {
      if (name == lookup) return SQLITE_OK;
    }
    return SQLITE_DENY;
  }
  return SQLITE_OK;
}

}  // namespace

void Database::RestrictToQueries() {
  Exec("PRAGMA query_only = 1");
  TERASIM_SQLITE(db_, sqlite3_set_authorizer(db_, QueryOnlyAuthorizer, nullptr));
}

void Database::ClearWorkLimit() {
  sqlite3_progress_handler(db_, 0, nullptr, nullptr);
  work_limit_.reset();
}

void Database::SetWorkLimit(int64_t max_vm_steps, double max_seconds) {
  work_limit_ = std::make_unique<WorkLimit>();
  // The handler runs every kStride steps.
  constexpr int kStride = 1000;
  work_limit_->steps_left = max_vm_steps / kStride + 1;
  work_limit_->deadline_s = SteadySeconds() + max_seconds;
  sqlite3_progress_handler(
      db_, kStride,
      [](void* data) -> int {
        auto* limit = static_cast<WorkLimit*>(data);
        if (--limit->steps_left < 0 || SteadySeconds() > limit->deadline_s) {
          limit->hit = true;
          return 1;
        }
        return 0;
      },
      work_limit_.get());
}

bool Database::WorkLimitHit() const { return work_limit_ != nullptr && work_limit_->hit; }

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      work_limit_(std::move(other.work_limit_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    work_limit_ = std::move(other.work_limit_);
  }
  return *this;
}

Database::~Database() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

void Database::Exec(std::string_view sql) {
  std::string text(sql);
  TERASIM_SQLITE(db_, sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr));
}

Statement Database::Prepare(std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  TERASIM_SQLITE(db_,
                 sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &raw, &tail));
  Statement stmt(db_, raw);
  if (raw == nullptr) ThrowInput("{}: empty SQL statement", path_);
  // Compiling the rest finds a second statement; whitespace, semicolons and comments compile
  // to nothing.
  if (tail != nullptr && tail < sql.data() + sql.size()) {
    std::string_view rest(tail, sql.data() + sql.size() - tail);
    sqlite3_stmt* extra = nullptr;
    TERASIM_SQLITE(
        db_, sqlite3_prepare_v2(db_, rest.data(), static_cast<int>(rest.size()), &extra, nullptr));
    if (extra != nullptr) {
      sqlite3_finalize(extra);
      ThrowInput("{}: only one SQL statement at a time (extra text: '{}')", path_, rest);
    }
  }
  return stmt;
}

int64_t Database::PragmaInt(std::string_view name) {
  Statement stmt = Prepare(fmt::format("PRAGMA {}", name));
  TERASIM_CHECK(stmt.Step(), "PRAGMA {} returned no row", name);
  return stmt.Int(0);
}

int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement& Statement::Bind(int index, int64_t value) {
  TERASIM_SQLITE(db_, sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  TERASIM_SQLITE(db_, sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  TERASIM_SQLITE(db_, sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                                          SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::BindNull(int index) {
  TERASIM_SQLITE(db_, sqlite3_bind_null(stmt_, index));
  return *this;
}

bool Statement::Step() { return TERASIM_SQLITE(db_, sqlite3_step(stmt_)) == SQLITE_ROW; }

void Statement::Run() {
  while (Step()) {
  }
  Reset();
}

void Statement::Reset() {
  // sqlite3_reset repeats the error of the last step, which Step() has already reported.
  sqlite3_reset(stmt_);
  TERASIM_SQLITE(db_, sqlite3_clear_bindings(stmt_));
}

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }

std::string Statement::ColumnName(int column) const {
  const char* name = sqlite3_column_name(stmt_, column);
  return name != nullptr ? name : "";
}

Statement::ColumnType Statement::Type(int column) const {
  switch (sqlite3_column_type(stmt_, column)) {
    case SQLITE_INTEGER:
      return ColumnType::kInteger;
    case SQLITE_FLOAT:
      return ColumnType::kReal;
    case SQLITE_TEXT:
      return ColumnType::kText;
    case SQLITE_BLOB:
      return ColumnType::kBlob;
    default:
      return ColumnType::kNull;
  }
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::Real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, column));
}

bool Statement::ReadOnly() const { return sqlite3_stmt_readonly(stmt_) != 0; }

Transaction::Transaction(Database& db) : db_(db) { db_.Exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  // A destructor cannot throw; a failed rollback leaves SQLite to roll back when the
  // connection closes, which has the same effect.
  if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::Commit() {
  db_.Exec("COMMIT");
  done_ = true;
}

}  // namespace terasim
