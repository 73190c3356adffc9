// The text grid of `terasim show`: one row per device, its compute ops laid out in columns of
// logical time, so that a pipeline's shape (warm-up, steady 1F1B, cool-down, bubbles) reads at
// a glance:
//
//   dev 0 | F0 F1 F2 F3 .  .  .  B0 F4 B1 F5 B2 F6 B3 F7 B4 .  B5 .  B6 .  B7 O
//   dev 1 | .  F0 F1 F2 .  .  B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 .  B6 .  B7 .  O
//
// Time comes from a dry run (schedule/dry_run.h) in which each compute op takes one tick and
// communication none; a column is a tick at which some cell starts, and consecutive ops of one
// device with the same label (the layers or parts of one slice) merge into one cell. Labels:
// F / B / b / W (forward, backward, input-gradient, weight-gradient) + micro-batch, + ".slice"
// when some micro-batch has several token slices, + "'" per model chunk after a device's first
// (interleaved schedules); O for the optimizer; "." for idle.
#pragma once

#include <string>

#include "schedule/schedule_ir.h"

namespace terasim {

struct GridOptions {
  int width_chars = 120;   // longer rows wrap into blocks of columns
  bool show_comm = false;  // a row under each device: ">p" SEND to p, "<p" RECV from p,
                           // "*>" / "*<r" BROADCAST root / receiver of root r
};

// The grid, a blank line and a legend, each line ending in '\n'. Throws InputError naming the
// first problem when CheckSchedule finds any.
std::string RenderScheduleGrid(const Schedule& schedule, const GridOptions& options);

}  // namespace terasim
