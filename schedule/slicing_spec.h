// The --slicing spec of `terasim schedule`: micro-batches and their token slices as text.
//
//   SPEC  = GROUP ('+' GROUP)*
//   GROUP = ROWS ':' '[' LEN (',' LEN)* ']' ('x' COUNT)?      COUNT defaults to 1
//
// e.g. "1:[704,688,656]x32" (32 micro-batches of one sequence, each cut into three slices)
// or "2:[16,16]x2+1:[32]". The slicing is that of one data-parallel replica; every replica
// gets the same micro-batches. Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace terasim {

// `count` micro-batches of `rows` sequences, each cut into token slices of these lengths.
struct MicrobatchSlicing {
  int rows = 1;
  std::vector<int> slices;
  int count = 1;
  bool operator==(const MicrobatchSlicing&) const = default;
};

// One micro-batch: its rows and token slice lengths (first to last).
struct MicrobatchSlices {
  int rows = 1;
  std::vector<int> slices;
  bool operator==(const MicrobatchSlices&) const = default;
};

// Parses a spec. Throws InputError "--slicing: ..." naming the offending group on a syntax
// error or a non-positive number. Does not know the sequence length (see ExpandSlicing).
std::vector<MicrobatchSlicing> ParseSlicingSpec(const std::string& spec);

// The spec text of `groups` (the inverse of ParseSlicingSpec, with "x1" left out).
std::string FormatSlicingSpec(const std::vector<MicrobatchSlicing>& groups);

// The micro-batches the groups describe, in order. Throws InputError "--slicing: group I
// (TEXT): ..." when a group's slices do not sum to `sequence` or a number is not positive.
std::vector<MicrobatchSlices> ExpandSlicing(const std::vector<MicrobatchSlicing>& groups,
                                            int sequence);

}  // namespace terasim
