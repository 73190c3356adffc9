// ScheduleOptionsFromFlags: the generator options that `terasim schedule` and
// `terasim simulate --strategy` read from the same flags (--strategy, --dp, --pp, --tp,
// --microbatches, --microbatch-size, --virtual-stages, --slicing, --slices, --order, --boundary,
// --no-optimizer, and the recipe flags below where declared). Throws InputError naming the flag on
// inconsistent flags.
#pragma once

#include <boost/program_options.hpp>

#include "models/model_card.h"
#include "schedule/generator.h"

namespace terasim::cli {

// Today's recipes, where the command declares them: --recompute none|selective|full,
// --sequence-parallel, --zero 0-3, --backward-order reverse|forward (gpipe).
void ReadRecipeFlags(const boost::program_options::variables_map& vm, GenerateOptions& options);

GenerateOptions ScheduleOptionsFromFlags(const boost::program_options::variables_map& vm,
                                         const ModelCard& model);

}  // namespace terasim::cli
