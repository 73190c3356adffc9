// libFuzzer target: the .pir reader (schedule/pir_format.h ReadPir) and, on what it reads, the
// checker (schedule/checker.h) and the writer's round trip. Bad input must end in InputError,
// never a crash, a hang, another exception or a sanitizer report. Built with -DTERASIM_FUZZ=ON
// by clang (tools/fuzz/libfuzzer.sh).
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/pir_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  terasim::Schedule schedule;
  try {
    schedule = terasim::ReadPir(text, "fuzz.pir");
  } catch (const terasim::InputError&) {
    return 0;  // the expected answer to bad input
  }
  // The checker's passes index by device and op; a header that declares millions of devices is
  // the reader's limit to enforce, not this target's to allocate.
  if (schedule.devices > 4096 || schedule.ops.size() > 100000) return 0;
  (void)terasim::CheckSchedule(schedule);
  // What the writer writes, the reader reads back (the format is its own fixed point).
  const std::string written = terasim::WritePir(schedule);
  try {
    (void)terasim::ReadPir(written, "fuzz-rewritten.pir");
  } catch (const terasim::InputError&) {
    __builtin_trap();  // the writer wrote something the reader refuses
  }
  return 0;
}
