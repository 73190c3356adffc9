#include "schedule/comm_matching.h"

#include <functional>
#include <unordered_map>

#include <fmt/format.h>

#include "schedule/op_hash_index.h"

namespace terasim {
namespace {

// One direction of a point-to-point transfer: from `src` to `dst`, of `tensor`.
struct Transfer {
  int src = 0;
  int dst = 0;
  int tensor = -1;  // name id
  bool operator==(const Transfer&) const = default;
};

// The tensor's name id plus a mix of the two devices: a device's transfers to one peer, in
// op order, mostly have ascending name ids (names are interned in file order), so that their
// slots are visited nearly in order rather than at random (a cache miss per look-up in a
// million-op schedule); transfers of one tensor between other devices still spread.
struct TransferHash {
  size_t operator()(const Transfer& t) const {
    uint64_t h = static_cast<uint32_t>(t.src) * 0x9e3779b97f4a7c15ULL ^
                 static_cast<uint32_t>(t.dst) * 0xbf58476d1ce4e5b9ULL;
    return static_cast<size_t>(static_cast<uint32_t>(t.tensor) + (h ^ (h >> 31)));
  }
};

std::string LineOf(const CompactOp& op) {
  return op.line > 0 ? fmt::format("line {}", op.line) : std::string("generated");
}

std::string Describe(const CompactSchedule& s, const CompactOp& op) {
  std::string out =
      fmt::format("{} of {} ({} bytes", OpKindName(op.kind), s.Name(op.tensor), op.bytes);
  if (op.kind == OpKind::kBroadcast) out += fmt::format(", root {}", op.peer);
  return out + ")";
}

// Tensors are name ids, so equal ids are equal identities.
bool SameCollective(const CompactOp& a, const CompactOp& b) {
  return a.kind == b.kind && a.tensor == b.tensor && a.bytes == b.bytes &&
         (a.kind != OpKind::kBroadcast || a.peer == b.peer);
}

}  // namespace

void MatchPointToPoint(const CompactSchedule& s, ScheduleIndex& ix, std::vector<Diagnostic>& out) {
  auto transfer_of = [&s](int op) {
    const CompactOp& o = s.ops[op];
    return o.kind == OpKind::kSend ? Transfer{o.device, o.peer, o.tensor}
                                   : Transfer{o.peer, o.device, o.tensor};
  };
  const std::vector<int>& p2p = ix.p2p_ops;
  size_t send_count = 0;
  for (const int i : p2p) send_count += s.ops[i].kind == OpKind::kSend;
  OpHashIndex<Transfer, decltype(transfer_of), TransferHash> sends(send_count, transfer_of),
      recvs(p2p.size() - send_count, transfer_of);
  for (const int i : p2p) {
    const CompactOp& op = s.ops[i];
    const bool is_send = op.kind == OpKind::kSend;
    const int first = (is_send ? sends : recvs).Insert(i);
    if (first != i) {
      const Transfer t = transfer_of(i);
      out.push_back(
          OpDiagnostic(s, op,
                       fmt::format("tensor {} is {} from dev {} to dev {} twice (first by {}, {})",
                                   s.Name(op.tensor), is_send ? "sent" : "received", t.src, t.dst,
                                   s.Key(s.ops[first]), LineOf(s.ops[first]))));
    }
  }
  int hints_left = 16;  // each hint scans every SEND; a few suffice to show the pattern
  for (const int i : p2p) {
    const CompactOp& op = s.ops[i];
    if (op.kind != OpKind::kRecv) continue;
    const Transfer t = transfer_of(i);
    if (recvs.Find(t) != i) continue;  // a duplicate, reported above
    const int j = sends.Find(t);
    if (j < 0) {
      std::string hint;
      for (size_t x = 0; x < p2p.size() && hints_left > 0; ++x) {
        const CompactOp& send = s.ops[p2p[x]];
        if (send.kind != OpKind::kSend || send.tensor != op.tensor) continue;
        hint = fmt::format(" ({} on dev {} sends it to dev {}, {})", s.Key(send), send.device,
                           send.peer, LineOf(send));
        break;
      }
      --hints_left;
      out.push_back(OpDiagnostic(s, op,
                                 fmt::format("RECV of {} from dev {} has no matching SEND on "
                                             "dev {}{}",
                                             s.Name(op.tensor), op.peer, op.peer, hint)));
      continue;
    }
    const CompactOp& send = s.ops[j];
    if (send.bytes != op.bytes) {
      out.push_back(OpDiagnostic(
          s, op,
          fmt::format("RECV of {} expects {} bytes but its SEND {} ({}) sends {}",
                      s.Name(op.tensor), op.bytes, s.Key(send), LineOf(send), send.bytes)));
    }
    ix.partner[i] = j;
    ix.partner[j] = i;
  }
  for (const int i : p2p) {
    const CompactOp& op = s.ops[i];
    if (op.kind != OpKind::kSend || ix.partner[i] >= 0) continue;
    if (sends.Find(transfer_of(i)) != i) continue;
    out.push_back(OpDiagnostic(s, op,
                               fmt::format("SEND of {} to dev {} has no matching RECV on dev {}",
                                           s.Name(op.tensor), op.peer, op.peer)));
  }
}

void MatchCollectives(const CompactSchedule& s, ScheduleIndex& ix, std::vector<Diagnostic>& out) {
  // issued[g][r]: the collectives that the group's r-th rank issues on it, in issue order.
  std::vector<std::vector<std::vector<int>>> issued(s.groups.size());
  for (size_t g = 0; g < s.groups.size(); ++g) issued[g].resize(s.groups[g].ranks.size());
  for (const int i : ix.collective_ops) {
    const int g = ix.group_of[i];
    issued[g][RankInGroup(s.groups[g], s.ops[i].device)].push_back(i);
  }
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const Group& group = s.groups[g];
    const std::vector<int>& first = issued[g][0];
    const int first_dev = group.ranks[0];
    bool agree = true;
    for (size_t r = 1; r < group.ranks.size(); ++r) {
      const std::vector<int>& mine = issued[g][r];
      const int dev = group.ranks[r];
      const size_t common = std::min(mine.size(), first.size());
      size_t k = 0;
      while (k < common && SameCollective(s.ops[mine[k]], s.ops[first[k]])) ++k;
      if (k == mine.size() && k == first.size()) continue;
      agree = false;
      if (k < common) {
        const CompactOp& a = s.ops[mine[k]];
        const CompactOp& b = s.ops[first[k]];
        out.push_back(OpDiagnostic(
            s, a,
            fmt::format("group {}: collective #{} differs: dev {} issues {}, dev {} issues {} "
                        "({}, {})",
                        group.name, k + 1, dev, Describe(s, a), first_dev, Describe(s, b), s.Key(b),
                        LineOf(b))));
      } else if (mine.size() < first.size()) {
        const CompactOp& missing = s.ops[first[k]];
        out.push_back(OpDiagnostic(
            s, missing,
            fmt::format("group {}: dev {} issues only {} collectives on the group, dev {} "
                        "issues {}; dev {} never joins this one",
                        group.name, dev, mine.size(), first_dev, first.size(), dev)));
      } else {
        const CompactOp& extra = s.ops[mine[k]];
        out.push_back(OpDiagnostic(
            s, extra,
            fmt::format("group {}: dev {} issues only {} collectives on the group, dev {} "
                        "issues {}; dev {} never joins this one",
                        group.name, first_dev, first.size(), dev, mine.size(), first_dev)));
      }
    }
    if (!agree) continue;
    // Executors match a collective by its group and tensor identity (exec/transport.h), so an
    // identity names one instance of its group.
    std::unordered_map<int, int> identity;  // tensor name id -> its first op
    bool unique = true;
    for (int op : first) {
      auto [it, inserted] = identity.emplace(s.ops[op].tensor, op);
      if (inserted) continue;
      unique = false;
      const CompactOp& earlier = s.ops[it->second];
      out.push_back(OpDiagnostic(
          s, op,
          fmt::format("group {}: tensor {} is used by two collectives (first by {}, {}); "
                      "a tensor identity names one collective of its group",
                      group.name, s.Name(s.ops[op].tensor), s.Key(earlier), LineOf(earlier))));
    }
    if (!unique) continue;
    for (size_t k = 0; k < first.size(); ++k) {
      const int id = static_cast<int>(ix.instance_ops.size());
      std::vector<int> members;
      members.reserve(group.ranks.size());
      for (size_t r = 0; r < group.ranks.size(); ++r) {
        const int op = issued[g][r][k];
        members.push_back(op);
        ix.instance[op] = id;
      }
      ix.instance_ops.push_back(std::move(members));
    }
  }
}

}  // namespace terasim
