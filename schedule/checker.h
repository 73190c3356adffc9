// CheckSchedule: proves a schedule well formed before anything runs it (DESIGN.md section 2,
// schedule/README.md for the conventions it enforces).
//
// It checks: header sanity; unique keys; fields that fit each op kind; deps that exist, sit
// on the same device and form no cycle; each RECV has exactly one matching SEND on its peer
// (same tensor identity, bytes agree) and the reverse; groups exist, contain the device, and
// every member issues the group's collectives with the same identities, kinds and bytes in
// the same order; every micro-batch's tokens x layers covered exactly once forward and once
// backward per tp rank; forward slices ascending and backward slices descending on each
// stage; a dry run (each communication op waits for its peer, each collective for all
// members) that completes without deadlock; and the data flow (schedule/data_flow.h): every
// input an op reads (an activation, a gradient, a tp partial sum, the keys and values of the
// previous token slice, the weight gradients) is written on its device by an op that the order
// puts before it, so that the executor never waits for data the order has not delivered.
// The rules are written once in docs/execution_rules.md.
#pragma once

#include <string>
#include <vector>

#include "schedule/schedule_ir.h"

namespace terasim {

struct Diagnostic {
  int line = 0;         // line in the .pir (0 when the schedule was generated)
  std::string key;      // the op (or group) concerned; empty for header problems
  std::string message;  // what is wrong
};

// "FILE:LINE: KEY: MESSAGE" (parts that are unknown are left out).
std::string FormatDiagnostic(const Schedule& schedule, const Diagnostic& diagnostic);

// Every problem found, in file order of the first op concerned; empty when the schedule is
// valid. Later checks (coverage, dry run) run only when the structural ones pass.
std::vector<Diagnostic> CheckSchedule(const Schedule& schedule);

// Throws InputError with every diagnostic (one per line) when CheckSchedule finds any.
void RequireValidSchedule(const Schedule& schedule);

}  // namespace terasim
