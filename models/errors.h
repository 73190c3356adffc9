// Errors shared by every terasim library.
//
// InputError: bad input (a file, a flag, a schedule). Its message names the place, e.g.
// "topologies/data/p3.16xlarge.json: links[3]: bandwidth must be > 0". Thrown once, at
// load time; only main() catches it, prints the message on one line and exits non-zero.
//
// TERASIM_CHECK(cond, fmt, args...): a broken internal invariant. Throws InternalError
// with file:line, the condition and a formatted message. Never used for user input.
//
// This header lives in models/, the first library in the data flow (DESIGN.md section 1),
// so that every other library can include it without a dependency cycle.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace terasim {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

// Throws InputError with a formatted message.
template <typename... Args>
[[noreturn]] void ThrowInput(fmt::format_string<Args...> format, Args&&... args) {
  throw InputError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace terasim

#define TERASIM_CHECK(cond, ...)                                                                  \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      throw ::terasim::InternalError(::fmt::format("{}:{}: check failed: {}: {}", __FILE__,       \
                                                   __LINE__, #cond, ::fmt::format(__VA_ARGS__))); \
    }                                                                                             \
  } while (false)
