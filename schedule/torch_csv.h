// PyTorch pipelining's per-rank action table (torch.distributed.pipelining, the CSV its
// schedules dump and load) as a terasim schedule: `terasim import torch-csv`.
//
// The format: one row per pipeline rank, row r = rank r; each cell one action written
// {stage}{type}{micro-batch}, e.g. "0F0" (stage 0 forward of micro-batch 0), "1B0" (full
// backward), "0I0" / "0W0" (backward input / weight), "0SEND_F0", "1RECV_B3", "0UNSHARD",
// "0RESHARD", "0REDUCE_GRAD", or several actions run together "(0F1;1B0)OVERLAP_F_B". An empty
// cell is an idle step. Cells may be double-quoted as Python's csv writer quotes them.
//
// The compute actions F, B, I and W become the schedule's order; the communication and
// FSDP actions are dropped: terasim generates its own stage-boundary SEND / RECV (and, with
// --zero 3, its own all-gathers) from the order. OVERLAP_F_B runs its sub-actions in order.
// The table must give every stage to exactly one rank, the same number of stages to every
// rank, and each (stage, micro-batch) exactly one F and then either one B or one I followed
// by one W on that rank; errors name the file, row and column.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "schedule/generator.h"

namespace terasim {

enum class TorchActionKind { kForward, kBackward, kBackwardInput, kBackwardWeight };

struct TorchAction {
  int stage = 0;
  TorchActionKind kind = TorchActionKind::kForward;
  int microbatch = 0;
  int row = 0;     // 1-based, for messages
  int column = 0;  // 1-based
};

struct TorchActionTable {
  std::vector<std::vector<TorchAction>> ranks;  // compute actions of each rank, in order
  int stages = 0;                               // 1 + the largest stage index
  int microbatches = 0;                         // 1 + the largest micro-batch index
};

// Parses the CSV text. Throws InputError "ORIGIN:ROW:COLUMN: ..." on an action it cannot read.
TorchActionTable ParseTorchCsv(const std::string& text, const std::string& origin);

// The generator options that replay `table` with the degrees, model and recipe of `base`
// (base.pp and base.microbatches are set from the table; V = stages / ranks). Throws
// InputError naming ORIGIN and the cell when the table breaks the rules above.
GenerateOptions ImportedOptions(const TorchActionTable& table, const GenerateOptions& base,
                                const std::string& origin);

// The table back as CSV in PyTorch's compute-only form ("0F0,0F1,...\n" per rank), for tests and
// for exporting terasim's own orders.
std::string FormatTorchCsv(const TorchActionTable& table);

}  // namespace terasim
