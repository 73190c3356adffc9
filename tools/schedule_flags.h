// ScheduleOptionsFromFlags: the generator options that `terasim schedule` and
// `terasim simulate --strategy` read from the same flags (--strategy, --dp, --pp, --tp,
// --microbatches, --microbatch-size, --virtual-stages, --slicing, --slices, --order, --boundary,
// --no-optimizer). Throws InputError naming the flag on inconsistent flags.
#pragma once

#include <boost/program_options.hpp>

#include "models/model_card.h"
#include "schedule/generator.h"

namespace terasim::cli {

GenerateOptions ScheduleOptionsFromFlags(const boost::program_options::variables_map& vm,
                                         const ModelCard& model);

}  // namespace terasim::cli
