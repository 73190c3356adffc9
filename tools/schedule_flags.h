// ScheduleOptionsFromFlags: the generator options that `terasim schedule` and
// `terasim simulate --strategy` read from the same flags (--strategy, --dp, --pp, --tp,
// --batch, --microbatches, --microbatch-size, --virtual-stages, --slicing, --slices, --order,
// --boundary, --no-optimizer, and the recipe flags below where declared). Throws InputError
// naming the flag on inconsistent flags.
//
// The global batch is dp x microbatches x microbatch-size. --batch, when given, sets
// --microbatches from --microbatch-size (or the reverse when only --microbatches is given).
// With `gpus` > 0 (a cluster is known) and --dp not given, dp is inferred as
// gpus / (pp x tp), as Megatron-LM does, and a line on stderr says so. --virtual-stages
// defaults to 2 for zb-v and dualpipe-v (their V placement).
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "models/model_card.h"
#include "schedule/generator.h"

namespace terasim::cli {

// Today's recipes, where the command declares them: --recompute none|selective|full,
// --sequence-parallel, --zero 0-3, --backward-order reverse|forward (gpipe), and the
// data-parallel step's --dp-step and --dp-bucket-mb (AddDpStepOptions).
void ReadRecipeFlags(const boost::program_options::variables_map& vm, GenerateOptions& options);

// Declares --dp-step auto|per-stage|flattened|bucketed and --dp-bucket-mb MiB (GenerateOptions::
// dp_step, dp_bucket_bytes; the help names each family's default and its source).
void AddDpStepOptions(boost::program_options::options_description& options);

GenerateOptions ScheduleOptionsFromFlags(const boost::program_options::variables_map& vm,
                                         const ModelCard& model, const std::string& command,
                                         int gpus = 0);

// The GPUs of a --cluster spec (INSTANCE:COUNT): count x the instance's GPUs.
int ClusterGpus(const std::string& spec);

}  // namespace terasim::cli
