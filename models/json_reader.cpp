#include "models/json_reader.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "models/errors.h"

namespace terasim {

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ThrowInput("{}: cannot read", path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

nlohmann::json ParseJson(const std::string& text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // Turn the byte offset into a line and column.
    size_t offset = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
    size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
    size_t column = line_start == std::string::npos ? offset + 1 : offset - line_start;
    std::string message = e.what();
    size_t colon = message.find("syntax error");
    if (colon != std::string::npos) message = message.substr(colon);
    ThrowInput("{}: line {} column {}: invalid JSON: {}", origin, line, column, message);
  } catch (const nlohmann::json::exception& e) {
    // E.g. out_of_range 406, "number overflow parsing '1e999'": bad input, not a fault.
    ThrowInput("{}: invalid JSON: {}", origin, e.what());
  }
}

JsonReader::JsonReader(const nlohmann::json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) ThrowInput("{}: must be a JSON object", where_);
}

bool JsonReader::Has(const std::string& key) const { return object_.contains(key); }

const nlohmann::json& JsonReader::Get(const std::string& key) const {
  auto it = object_.find(key);
  if (it == object_.end()) ThrowInput("{}: {}: missing", where_, key);
  return *it;
}

std::string JsonReader::RequireString(const std::string& key) const {
  const auto& v = Get(key);
  if (!v.is_string()) ThrowInput("{}: {}: must be a string", where_, key);
  return v.get<std::string>();
}

int64_t JsonReader::RequireInt(const std::string& key, int64_t min_value, int64_t max_value,
                               const char* limit_name) const {
  const auto& v = Get(key);
  if (!v.is_number_integer()) ThrowInput("{}: {}: must be an integer", where_, key);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    ThrowInput("{}: {}: {} is out of range (at most {})", where_, key, v.get<uint64_t>(),
               max_value);
  }
  int64_t value = v.get<int64_t>();
  if (value < min_value)
    ThrowInput("{}: {}: must be >= {} (got {})", where_, key, min_value, value);
  if (value > max_value) {
    if (limit_name != nullptr) {
      ThrowInput("{}: {}: {} exceeds the limit {} ({}, models/limits.h)", where_, key, value,
                 max_value, limit_name);
    }
    ThrowInput("{}: {}: must be <= {} (got {})", where_, key, max_value, value);
  }
  return value;
}

double JsonReader::RequireDouble(const std::string& key) const {
  const auto& v = Get(key);
  if (!v.is_number()) ThrowInput("{}: {}: must be a number", where_, key);
  const double value = v.get<double>();
  // JSON has no infinity, but a literal such as 1e999 parses to one.
  if (!std::isfinite(value)) ThrowInput("{}: {}: must be finite (got {})", where_, key, value);
  return value;
}

double JsonReader::RequirePositive(const std::string& key) const {
  double value = RequireDouble(key);
  if (!(value > 0)) ThrowInput("{}: {}: must be > 0 (got {})", where_, key, value);
  return value;
}

double JsonReader::RequireDoubleIn(const std::string& key, double min_value,
                                   double max_value) const {
  double value = min_value > 0 ? RequirePositive(key) : RequireDouble(key);
  if (!(value >= min_value && value <= max_value)) {
    ThrowInput("{}: {}: must be in [{}, {}] (got {})", where_, key, min_value, max_value, value);
  }
  return value;
}

bool JsonReader::RequireBool(const std::string& key) const {
  const auto& v = Get(key);
  if (!v.is_boolean()) ThrowInput("{}: {}: must be true or false", where_, key);
  return v.get<bool>();
}

const nlohmann::json& JsonReader::RequireArray(const std::string& key) const {
  const auto& v = Get(key);
  if (!v.is_array()) ThrowInput("{}: {}: must be an array", where_, key);
  return v;
}

const nlohmann::json& JsonReader::RequireObject(const std::string& key) const {
  const auto& v = Get(key);
  if (!v.is_object()) ThrowInput("{}: {}: must be an object", where_, key);
  return v;
}

std::string JsonReader::OptionalString(const std::string& key, const std::string& fallback) const {
  return Has(key) ? RequireString(key) : fallback;
}

int64_t JsonReader::OptionalInt(const std::string& key, int64_t fallback, int64_t min_value,
                                int64_t max_value, const char* limit_name) const {
  return Has(key) ? RequireInt(key, min_value, max_value, limit_name) : fallback;
}

double JsonReader::OptionalDouble(const std::string& key, double fallback) const {
  return Has(key) ? RequireDouble(key) : fallback;
}

bool JsonReader::OptionalBool(const std::string& key, bool fallback) const {
  return Has(key) ? RequireBool(key) : fallback;
}

void JsonReader::RejectUnknown(const std::vector<std::string>& known) const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      ThrowInput("{}: {}: unknown field", where_, it.key());
    }
  }
}

JsonReader JsonReader::Child(const std::string& key) const {
  return JsonReader(RequireObject(key), where_ + ": " + key);
}

JsonReader JsonReader::Element(const nlohmann::json& array, size_t index, const std::string& where,
                               const std::string& key) {
  return JsonReader(array.at(index), fmt::format("{}: {}[{}]", where, key, index));
}

}  // namespace terasim
