// Schedule: a whole iteration as one program per device (DESIGN.md section 2).
//
// ops holds every op in file order; a device's issue order is the order of its ops in this
// list, and each stream runs its ops in that order. Generators list the ops device by device.
// Groups (collective rank lists) are declared once and referenced by name. A Schedule that passed
// CheckSchedule is treated as immutable: the simulator and the executor keep run-time state in
// their own arrays indexed by op position.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "schedule/op.h"

namespace terasim {

inline constexpr int kPirFormatVersion = 1;

struct Group {
  std::string name;        // e.g. "tp.d0.s1" or "dp.s3"
  std::vector<int> ranks;  // devices, in ring order
  int line = 0;            // line in the .pir file; 0 when generated
};

// How the schedule was generated; informational except where noted.
struct ScheduleShape {
  std::string strategy;  // "gpipe", "1f1b", "interleaved", "terapipe", or "" (hand written)
  int dp = 1;
  int pp = 1;
  int tp = 1;
  int virtual_stages = 1;  // model chunks per device (interleaved)
};

// A generator's promise that the iteration is symmetric (GenerateOptions::representatives_only,
// schedule/generator.h): renaming device d to (d + replica_block) mod devices (a data-parallel
// replica shift), or rotating the tp ranks inside each block of `tp` consecutive devices by one,
// maps every device's program onto another's. With representatives_only, ops holds the programs
// of replica 0's tp ranks 0..tp_ranks-1 only (the others are their images), or of the tp ranks
// in tp_set where it is given; groups keep every member and `devices` counts every device. The
// tp ranks reach other groups only through the same rank (SEND / RECV peers) or whole groups, so
// any permutation of the tp ranks applied in every tp group maps the programs onto each other
// too. sim/symmetry_fold.h (SymmetryFold::Declared) checks the placement and the network
// against it instead of comparing ops.
struct DeclaredSymmetry {
  bool representatives_only = false;
  int replica_block = 0;  // > 0: the replica shift is declared (P x T devices per replica)
  int tp = 0;             // > 1: the tp rotation is declared (T)
  int tp_ranks = 0;       // with tp > 1: the tp ranks present (a divisor of tp, or tp_set's size)
  // With tp > 1: when not empty, the tp ranks present (ascending, 0 first) instead of
  // 0..tp_ranks-1: one per orbit of a group of tp-rank permutations (sim/fold_permutations.h).
  std::vector<int> tp_set;

  // Whether `device`'s ops are in the schedule (every device when not representatives_only).
  bool Present(int device) const;
  // The present device whose program is `device`'s up to renaming (device itself if present).
  int PresentImage(int device) const;
};

// The `after` deps as op positions, in compressed rows: op i's deps are
// op[begin[i] .. begin[i + 1]), in the order of ops[i].after, each the position of the op whose
// key it names. Generate records it while it emits (it refers to ops by position); a schedule
// read from .pir or built by hand leaves it empty, and a consumer resolves its keys instead.
// It describes the ops as generated: code that reorders, inserts or removes ops of a generated
// schedule, or edits their keys or `after` lists, clears it (Schedule::after_ops = {}).
// BuildReplayGraph (sim/replay_graph.h) checks it against the keys before use.
struct AfterOps {
  std::vector<int> begin;  // ops + 1 entries when set; empty when not
  std::vector<int> op;

  bool Empty() const { return begin.empty(); }
  // Whether it has the shape of `ops`' after lists (one row per op, as many deps as keys, every
  // position in range); not whether each position names its key.
  bool Fits(const std::vector<Op>& ops) const;
};

struct Schedule {
  std::string model;  // model card name
  int layers = 0;     // transformer layers in the stack (checked for coverage)
  int sequence = 0;   // tokens per sequence (checked for coverage)
  int devices = 0;    // GPU ranks 0..devices-1
  int batch = 0;      // sequences per iteration (all data-parallel replicas together)
  ScheduleShape shape;
  std::vector<Group> groups;
  std::vector<Op> ops;
  DeclaredSymmetry symmetry;  // generated schedules only; the default declares nothing
  std::string source;         // file it was read from, for messages ("" when generated)
  AfterOps after_ops;         // generated schedules only; empty otherwise

  // Index of the group named `name` in groups, or -1.
  int FindGroup(const std::string& name) const;
  // Index of the op with `key`, or -1. Linear; build a KeyIndex for repeated look-ups.
  int FindOp(const std::string& key) const;
  // Positions in ops of each device's ops, in issue order (size == devices).
  std::vector<std::vector<int>> OpsByDevice() const;
};

// Maps each key to its position in Schedule::ops. Duplicate keys keep the first position.
std::map<std::string, int> KeyIndex(const Schedule& schedule);

}  // namespace terasim
