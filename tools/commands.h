// The terasim subcommands. Each takes the words after its name and returns the exit code;
// errors are thrown (InputError for bad input) and reported by main().
#pragma once

#include <string>
#include <vector>

namespace terasim::cli {

using Args = std::vector<std::string>;

int RunModels(const Args& args);     // tools/cmd_models.cpp
int RunPlan(const Args& args);       // tools/cmd_plan.cpp
int RunCompare(const Args& args);    // tools/cmd_compare.cpp
int RunTopo(const Args& args);       // tools/cmd_topo.cpp
int RunCost(const Args& args);       // tools/cmd_cost.cpp
int RunMemory(const Args& args);     // tools/cmd_memory.cpp
int RunCheck(const Args& args);      // tools/cmd_check.cpp
int RunShow(const Args& args);       // tools/cmd_check.cpp
int RunSchedule(const Args& args);   // tools/cmd_schedule.cpp
int RunImport(const Args& args);     // tools/cmd_import.cpp
int RunDb(const Args& args);         // tools/cmd_db.cpp
int RunExec(const Args& args);       // tools/cmd_exec.cpp
int RunSimulate(const Args& args);   // tools/cmd_simulate.cpp
int RunCalibrate(const Args& args);  // tools/cmd_calibrate.cpp
int RunValidate(const Args& args);   // tools/cmd_validate.cpp
int RunSweep(const Args& args);      // tools/cmd_sweep.cpp
int RunPlot(const Args& args);       // tools/cmd_plot.cpp

int RunCollective(const Args& args);  // tools/cmd_collective.cpp

}  // namespace terasim::cli
