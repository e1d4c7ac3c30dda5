// reduce-tune: what the command-line front ends share (tuner/main.cpp, tuner/cli_compare.cpp).
#pragma once

#include "tuner/report.h"

#include <boost/program_options.hpp>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace reduce_tune::cli {

/// A usage error: the CLI prints it on one line and exits 2.
struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "a,b,,c" -> {"a", "b", "c"}.
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string tok; std::getline(in, tok, ',');)
    if (!tok.empty()) out.push_back(tok);
  return out;
}

inline Format parse_format(const std::string& f) {
  if (f == "md") return Format::md;
  if (f == "csv") return Format::csv;
  if (f == "json") return Format::json;
  throw Usage("unknown format '" + f + "' (md, csv or json)");
}

/// Parses a command's arguments against its options (and positional arguments, if any).
inline boost::program_options::variables_map
parse(const std::vector<std::string>& args, const boost::program_options::options_description& desc,
      const boost::program_options::positional_options_description* pos = nullptr) {
  namespace po = boost::program_options;
  po::variables_map vm;
  auto parser = po::command_line_parser(args).options(desc);
  if (pos) parser.positional(*pos);
  po::store(parser.run(), vm);
  po::notify(vm);
  return vm;
}

} // namespace reduce_tune::cli
