// The .pir text format: a Schedule as versioned, line-oriented, diffable text.
//
//   terasim-pir 1                         first line: format name and version
//   model gpt3-1b                         header lines, each once, in this order
//   layers 24
//   sequence 2048
//   devices 8
//   batch 8
//   shape strategy=1f1b dp=1 pp=4 tp=2 v=1
//   group tp.d0.s0 0,1                    a collective group: name, ranks in ring order
//   # device 0                            comments (#) and blank lines are ignored
//   op F.s0.m0.t0-2048.r0 FWD dev=0 stream=compute stage=0 layers=0-6 mb=0 rows=1 ...
//
// An op line is `op KEY KIND` followed by `name=value` fields: dev, stream, stage, layers
// (l0-l1), part (attn|mlp), mb, rows, tokens (t0-t1), group, peer, tensor, bytes, after
// (key,key,...). WritePir emits the fields in that order and omits defaults, so writing is
// deterministic and ReadPir followed by WritePir reproduces a written file byte for byte.
#pragma once

#include <string>

#include "schedule/schedule_ir.h"

namespace terasim {

// The canonical text of `schedule`.
std::string WritePir(const Schedule& schedule);

// Parses .pir text. Throws InputError "ORIGIN:LINE: what is wrong" (with the op key after the
// line where there is one) on a syntax error, an unknown kind or field, or a bad value.
// Records each op's and group's line. Semantic checks are CheckSchedule's job.
Schedule ReadPir(const std::string& text, const std::string& origin);

// Reads and parses a file; the path becomes Schedule::source. Throws InputError.
Schedule ReadPirFile(const std::string& path);

// Writes the canonical text to `path`. Throws InputError when the file cannot be written.
void WritePirFile(const Schedule& schedule, const std::string& path);

}  // namespace terasim
