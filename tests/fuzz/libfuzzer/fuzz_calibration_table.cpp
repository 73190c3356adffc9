// libFuzzer target: ParseCalibrationTable (models/calibrated_cost.h) on arbitrary bytes. Bad input
// must end in InputError (one clear message), never a crash, a hang, another exception or a
// sanitizer report. Built with -DTERASIM_FUZZ=ON by clang (tools/fuzz/libfuzzer.sh).
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/calibrated_cost.h"
#include "models/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)terasim::ParseCalibrationTable(text, "fuzz.json");
  } catch (const terasim::InputError&) {
    // The expected answer to bad input.
  }
  return 0;
}
