#include "schedule/schedule_index.h"

#include <algorithm>

#include <fmt/format.h>

namespace terasim {

Diagnostic OpDiagnostic(const CompactSchedule& s, const CompactOp& op, std::string message) {
  return Diagnostic{op.line, std::string(s.Key(op)), std::move(message)};
}

Diagnostic OpDiagnostic(const CompactSchedule& s, int op, std::string message) {
  return OpDiagnostic(s, s.ops[op], std::move(message));
}

int RankInGroup(const Group& group, int device) {
  for (size_t i = 0; i < group.ranks.size(); ++i) {
    if (group.ranks[i] == device) return static_cast<int>(i);
  }
  return -1;
}

namespace {

// "line 12" for a parsed op, "op #3" for a generated one.
std::string Where(const CompactOp& op, int position) {
  return op.line > 0 ? fmt::format("line {}", op.line) : fmt::format("op #{}", position);
}

}  // namespace

ScheduleIndex IndexSchedule(const CompactSchedule& s, std::vector<Diagnostic>& diagnostics) {
  const int n = static_cast<int>(s.ops.size());
  ScheduleIndex ix;
  std::vector<int> op_of_name;  // name id -> the first op with that key
  AssignHuge(op_of_name, s.names.Size(), -1);
  GroupOfName group_of(s);
  // Fresh arrays of an int per op, in huge pages (a page fault per 4 kB was a tenth of this
  // pass on a million ops).
  AssignHuge(ix.stream_of, n, 0);
  AssignHuge(ix.position_in_stream, n, 0);
  AssignHuge(ix.group_of, n, -1);
  AssignHuge(ix.tp_rank, n, 0);
  AssignHuge(ix.partner, n, -1);
  AssignHuge(ix.instance, n, -1);

  // Streams per device: a device has a handful, so a linear scan beats a hash map.
  std::vector<std::vector<int>> device_streams(s.devices);
  std::vector<int> stream_name;  // stream -> name id
  int last_group_name = -1, last_device = -1, last_group = -1, last_rank = 0;
  for (int i = 0; i < n; ++i) {
    const CompactOp& op = s.ops[i];
    int& first = op_of_name[op.key];
    if (first < 0) {
      first = i;
    } else {
      diagnostics.push_back(OpDiagnostic(
          s, op, fmt::format("duplicate key (first used on {})", Where(s.ops[first], first))));
    }
    if (op.device < 0 || op.device >= s.devices) {
      ix.stream_of[i] = -1;  // reported by the field checks
      continue;
    }
    if (IsPointToPoint(op.kind)) ix.p2p_ops.push_back(i);
    if (IsCollective(op.kind)) ix.collective_ops.push_back(i);
    int stream = -1;
    for (int id : device_streams[op.device]) {
      if (stream_name[id] == op.stream) stream = id;
    }
    if (stream < 0) {
      stream = static_cast<int>(ix.streams.size());
      ix.streams.push_back({op.device, s.Name(op.stream), {}});
      stream_name.push_back(op.stream);
      device_streams[op.device].push_back(stream);
    }
    ix.stream_of[i] = stream;
    ix.position_in_stream[i] = static_cast<int>(ix.streams[stream].ops.size());
    ix.streams[stream].ops.push_back(i);
    // Ops come in runs of one device and group: the previous op's group and rank, else looked up.
    if (op.group != last_group_name || op.device != last_device) {
      last_group_name = op.group;
      last_device = op.device;
      last_group = group_of(op.group);
      if (last_group >= 0) last_rank = std::max(0, RankInGroup(s.groups[last_group], op.device));
    }
    if (last_group >= 0) {
      ix.group_of[i] = last_group;
      ix.tp_rank[i] = last_rank;
    }
  }

  // `after`, resolved in a second pass so that deps may name later ops (a cycle, found later).
  AssignHuge(ix.after_offset, n + 1, 0);
  ReserveHuge(ix.after_op, s.after_name.size());
  // The reverse (CSR) built in dependent_offset itself: op d's dependents counted at [d + 1],
  // summed into offsets, used as fill positions and shifted back (no count or fill array: two
  // fewer ints per op).
  AssignHuge(ix.dependent_offset, n + 1, 0);
  for (int i = 0; i < n; ++i) {
    const CompactOp& op = s.ops[i];
    ix.after_offset[i] = static_cast<int>(ix.after_op.size());
    for (const int32_t dep : s.AfterNames(i)) {
      const int d = op_of_name[dep];
      if (d < 0) {
        diagnostics.push_back(
            OpDiagnostic(s, op, fmt::format("after: no op has key '{}'", s.Name(dep))));
        continue;
      }
      if (d == i) {
        diagnostics.push_back(OpDiagnostic(s, op, "after: an op cannot wait for itself"));
        continue;
      }
      if (s.ops[d].device != op.device) {
        if (s.ops[d].device < 0 || s.ops[d].device >= s.devices) continue;
        diagnostics.push_back(OpDiagnostic(
            s, op,
            fmt::format("after: '{}' is on dev {}, not dev {} (devices order each other only "
                        "through SEND/RECV and collectives)",
                        s.Name(dep), s.ops[d].device, op.device)));
        continue;
      }
      ix.after_op.push_back(d);
      ++ix.dependent_offset[d + 1];
    }
  }
  ix.after_offset[n] = static_cast<int>(ix.after_op.size());

  std::vector<int>& offset = ix.dependent_offset;
  for (int i = 0; i < n; ++i) offset[i + 1] += offset[i];
  ix.dependent_op.resize(ix.after_op.size());
  for (int i = 0; i < n; ++i) {
    for (int d : ix.After(i)) ix.dependent_op[offset[d]++] = i;
  }
  // offset[d] is now where d's dependents end: the start of d + 1's.
  for (int i = n; i > 0; --i) offset[i] = offset[i - 1];
  offset[0] = 0;
  return ix;
}

}  // namespace terasim
