// The canonical order in which the trace writers emit rows: by start time, then device,
// stream, end time, iteration and key. Producers may append rows in any order (the executor's
// device threads race); writing in this order makes the same trace give the same bytes.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "traces/trace.h"

namespace terasim {

// True when `a` comes before `b` in the canonical order (a strict weak order over every field).
bool TraceRowBefore(const TraceRow& a, const TraceRow& b);

// Indexes into `rows` in canonical order (stable for rows equal in every field).
std::vector<size_t> CanonicalRowOrder(const std::vector<TraceRow>& rows);

// Each row's stream as its rank among the distinct stream names in name order (equal names,
// equal ranks). `names`, when given, receives those names sorted (views into `rows`).
std::vector<int> StreamRanks(const std::vector<TraceRow>& rows,
                             std::vector<std::string_view>* names = nullptr);

}  // namespace terasim
