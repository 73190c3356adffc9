// Tiny helpers to write schedules by hand in the simulator's tests.
#pragma once

#include <string>
#include <vector>

#include "schedule/schedule_ir.h"

namespace terasim::testing {

inline Op MakeOp(const std::string& key, OpKind kind, int device, const std::string& stream) {
  Op op;
  op.key = key;
  op.kind = kind;
  op.device = device;
  op.stream = stream;
  return op;
}

// A FWD of `tokens` tokens over `layers` layers.
inline Op Compute(const std::string& key, int device, const std::string& stream, int layers,
                  int tokens) {
  Op op = MakeOp(key, OpKind::kFwd, device, stream);
  op.stage = 0;
  op.layers = {0, layers};
  op.microbatch = 0;
  op.rows = 1;
  op.tokens = {0, tokens};
  return op;
}

inline Op P2p(const std::string& key, OpKind kind, int device, int peer, const std::string& tensor,
              Bytes bytes, const std::string& stream = "p2p") {
  Op op = MakeOp(key, kind, device, stream);
  op.peer = peer;
  op.tensor = tensor;
  op.bytes = bytes;
  return op;
}

// One collective of `kind` over `ranks` (group "g"), one op per member.
inline Schedule CollectiveSchedule(OpKind kind, const std::vector<int>& ranks, Bytes bytes,
                                   int devices, int root = -1) {
  Schedule schedule;
  schedule.devices = devices;
  schedule.groups.push_back(Group{"g", ranks, 0});
  for (int r : ranks) {
    Op op = MakeOp("C.d" + std::to_string(r), kind, r, "comm");
    op.group = "g";
    op.tensor = "x";
    op.bytes = bytes;
    op.peer = root;
    schedule.ops.push_back(op);
  }
  return schedule;
}

}  // namespace terasim::testing
