// Reading and checking a .pir schedule as a CompactSchedule (schedule/compact_schedule.h), what
// `terasim check` does: the same parser as ReadPir and the same passes as CheckSchedule
// (schedule/pir_format.h, schedule/checker.h), without a string per op.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "schedule/checker.h"
#include "schedule/compact_schedule.h"

namespace terasim {

// As ReadPir and ReadPirFile (schedule/pir_format.h; defined in pir_format.cpp, the one parser
// behind both: ReadPir converts its result). The file is streamed in blocks, so its text is
// never held whole; no string is allocated per line.
CompactSchedule ReadCompactPir(std::string_view text, const std::string& origin);
CompactSchedule ReadCompactPirFile(const std::string& path);

// As CheckSchedule and FormatDiagnostic (schedule/checker.h; defined in checker.cpp): the
// passes run on a CompactSchedule, and CheckSchedule(Schedule) converts to one first.
std::vector<Diagnostic> CheckSchedule(const CompactSchedule& schedule);
std::string FormatDiagnostic(const CompactSchedule& schedule, const Diagnostic& diagnostic);

}  // namespace terasim
