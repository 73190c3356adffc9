// JsonReader: reads fields out of a JSON object with errors that name the file and the
// field ("models/data/x.json: hidden: must be a positive integer"). Used by every loader of
// data files (model cards, device specs, instance descriptions, calibration tables).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace terasim {

// Reads the whole file. Throws InputError "PATH: cannot read" when it cannot be opened.
std::string ReadTextFile(const std::string& path);

// Parses JSON text; throws InputError "ORIGIN: line L column C: MESSAGE" on a syntax error.
nlohmann::json ParseJson(const std::string& text, const std::string& origin);

class JsonReader {
 public:
  // `where` names the object in messages, e.g. "topologies/data/p3.16xlarge.json: links[3]".
  // Throws InputError if `object` is not a JSON object.
  JsonReader(const nlohmann::json& object, std::string where);

  const std::string& where() const { return where_; }
  bool Has(const std::string& key) const;

  // Each Require* throws InputError "WHERE: KEY: ..." when the key is missing or has the
  // wrong type or range; each Optional* returns `fallback` when the key is missing.
  std::string RequireString(const std::string& key) const;
  // An integer in [min_value, max_value] (never silently narrowed: a value beyond int64 is
  // refused). `limit_name`, when given, names max_value in the error ("hidden: 4294967360 exceeds
  // the limit 16777216 (kMaxModelDim, models/limits.h)").
  int64_t RequireInt(const std::string& key, int64_t min_value = INT64_MIN,
                     int64_t max_value = INT64_MAX, const char* limit_name = nullptr) const;
  double RequireDouble(const std::string& key) const;
  double RequirePositive(const std::string& key) const;  // a finite number > 0
  // A finite number in [min_value, max_value]; the error names the field and the range (or
  // says "must be > 0" for a value <= 0 when min_value > 0).
  double RequireDoubleIn(const std::string& key, double min_value, double max_value) const;
  bool RequireBool(const std::string& key) const;
  const nlohmann::json& RequireArray(const std::string& key) const;
  const nlohmann::json& RequireObject(const std::string& key) const;

  std::string OptionalString(const std::string& key, const std::string& fallback) const;
  int64_t OptionalInt(const std::string& key, int64_t fallback, int64_t min_value = INT64_MIN,
                      int64_t max_value = INT64_MAX, const char* limit_name = nullptr) const;
  double OptionalDouble(const std::string& key, double fallback) const;
  bool OptionalBool(const std::string& key, bool fallback) const;

  // Throws InputError naming the first key of the object that is not in `known`, so that a
  // misspelt field is reported instead of silently ignored.
  void RejectUnknown(const std::vector<std::string>& known) const;

  // A reader for a nested object: where() becomes "WHERE: KEY" or "WHERE: KEY[i]".
  JsonReader Child(const std::string& key) const;
  static JsonReader Element(const nlohmann::json& array, size_t index, const std::string& where,
                            const std::string& key);

 private:
  const nlohmann::json& Get(const std::string& key) const;

  const nlohmann::json& object_;
  std::string where_;
};

}  // namespace terasim
