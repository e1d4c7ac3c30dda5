// reduce-tune: the command line. Picks the command and hands it its arguments (the commands'
// shells: tuner/cli_*.h); turns what they throw into a line on stderr and an exit code.
// Exit codes: 0 success, 1 runtime failure (no GPU, a failed compile, a store error), 2 usage.
#include "tuner/autotune_worker.h"
#include "tuner/cli.h"
#include "tuner/cli_catalogue.h"
#include "tuner/cli_compare.h"
#include "tuner/cli_coverage.h"
#include "tuner/cli_fleet.h"
#include "tuner/cli_info.h"
#include "tuner/cli_reduction.h"
#include "tuner/cli_replay.h"
#include "tuner/cli_tune.h"
#include "tuner/test_variants.h"

#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace reduce_tune;

namespace {

using cli::Usage;

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

constexpr const char* kUsage =
    "usage: reduce-tune [command] [options]\n\n"
    "commands:\n"
    "  tune       sweep the configuration space on one GPU (the default: reduce-tune --device 0)\n"
    "  variants   list the catalogue (--material: the course material's kernels and their keys)\n"
    "  compile    compile every valid configuration for an architecture, no GPU needed\n"
    "  query      the stored best configuration for (device, dtype, op, n); --lookup: the library's\n"
    "             graded choice\n"
    "  coverage   what the library runs on a GPU, per problem, dtype and op: tuned here, shipped,\n"
    "             carried, related or the built-in defaults, and the command that tunes the rest\n"
    "  reduction  a user reduction's file: its name (user:<hash>) and an NVRTC compile per dtype\n"
    "  devices    list the GPUs of this machine\n"
    "  nvrtc      the NVRTC version and the architectures it targets\n"
    "  compare    GPUs of the database and the material's published tables side by side (--static:\n"
    "             registers, spills, shared memory and instructions per architecture; --plot FILE)\n"
    "  replay     a search strategy replayed against a store's exhaustive measurements, no GPU\n"
    "  merge      bring other tuning databases into this one (reduce-tune merge OTHER.db...)\n"
    "  ship       write the shipped-tuning form of a store (reduce-tune ship --db S --out FILE)\n"
    "  fleet      tune a cluster's GPUs through Slurm: submit, status, merge (reduce-tune fleet --help)\n"
    "  import-reference  load the material's published figures into the database\n\n"
    "reduce-tune COMMAND --help for the options of a command.\n";

} // namespace

int main(int argc, char** argv) {
  register_test_variants_from_env(); // in the supervisor and in every worker it spawns
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string cmd = "tune";
  if (!args.empty() && args[0][0] != '-') {
    cmd = args[0];
    args.erase(args.begin());
  } else if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  try {
    if (cmd == "tune") return cmd_tune(args, command_line(argc, argv));
    if (cmd == "worker") return cmd_worker(args, command_line(argc, argv));
    // Not in the usage: started by the library for first-use tuning (tuner/autotune_worker.h).
    if (cmd == "autotune-worker") {
      if (!args.empty()) throw Usage("autotune-worker takes no options (the library starts it)");
      return serve_autotune();
    }
    if (cmd == "variants") return cmd_variants(args);
    if (cmd == "compile") return cmd_compile(args);
    if (cmd == "query") return cmd_query(args);
    if (cmd == "coverage") return cmd_coverage(args);
    if (cmd == "reduction") return cmd_reduction(args);
    if (cmd == "replay") return cmd_replay(args);
    if (cmd == "devices") return cmd_devices(args);
    if (cmd == "nvrtc") return cmd_nvrtc(args);
    if (cmd == "compare") return cmd_compare(args);
    if (cmd == "merge") return cmd_merge(args);
    if (cmd == "import-reference") return cmd_import_reference(args);
    if (cmd == "ship") return cmd_ship(args);
    if (cmd == "fleet")
      return cmd_fleet(args, tune_sweep);
    if (cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
    throw Usage("unknown command '" + cmd + "'");
  } catch (const Usage& e) {
    std::fprintf(stderr, "reduce-tune: %s\n", e.what());
    return 2;
  } catch (const po::error& e) {
    std::fprintf(stderr, "reduce-tune: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reduce-tune: %s\n", e.what());
    return 1;
  }
}
