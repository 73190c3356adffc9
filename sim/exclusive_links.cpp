#include "sim/exclusive_links.h"

#include "models/errors.h"

namespace terasim {

ExclusiveLinks::ExclusiveLinks(int num_groups, int num_channels)
    : owner_(num_channels, kNone),
      group_channels_(num_groups),
      members_(num_groups),
      instances_(num_groups, 0) {}

void ExclusiveLinks::ClaimGroup(int group, const std::vector<int>& channels) {
  for (int c : channels) {
    TERASIM_CHECK(c >= 0 && c < static_cast<int>(owner_.size()), "unknown channel {}", c);
    int& owner = owner_[c];
    owner = owner == kNone || owner == group ? group : kShared;
    group_channels_[group].push_back(c);
  }
}

void ExclusiveLinks::ClaimShared(const std::vector<int>& channels) {
  for (int c : channels) {
    TERASIM_CHECK(c >= 0 && c < static_cast<int>(owner_.size()), "unknown channel {}", c);
    owner_[c] = kShared;
  }
}

std::vector<char> ExclusiveLinks::Finish() const {
  std::vector<char> exclusive(group_channels_.size(), 0);
  for (size_t g = 0; g < group_channels_.size(); ++g) {
    const Member& member = members_[g];
    const bool serialized = member.one_stream && member.ops == instances_[g];
    bool owned = true;
    for (int c : group_channels_[g]) owned = owned && owner_[c] == static_cast<int>(g);
    exclusive[g] = serialized && owned && instances_[g] > 0;
  }
  return exclusive;
}

}  // namespace terasim
