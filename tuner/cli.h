// reduce-tune: what the command-line front ends share (tuner/main.cpp, tuner/cli_*.cpp).
#pragma once

#include "reduce_tune/config.h"
#include "tuner/report.h"
#include "tuner/sizes.h"

#include <boost/program_options.hpp>

#include <iostream>
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

/// "a,b" -> {parse("a"), parse("b")}; Usage naming the first token `parse` gives nullopt for
/// ("unknown <what> 'tok'").
template <typename T, typename Parse>
std::vector<T> parse_list(const std::string& text, Parse parse, const char* what) {
  std::vector<T> out;
  for (const auto& tok : split(text)) {
    auto v = parse(tok);
    if (!v) throw Usage("unknown " + std::string(what) + " '" + tok + "'");
    out.push_back(*v);
  }
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

/// Whether --help was given; if so, prints the command's options (the command then returns 0).
inline bool help_asked(const boost::program_options::variables_map& vm,
                       const boost::program_options::options_description& desc) {
  if (!vm.count("help")) return false;
  std::cout << desc << "\n";
  return true;
}

/// A size expression (2^20, 16M, 3*2^20+17), or Usage naming the problem.
inline std::uint64_t parse_n(const std::string& text) {
  std::string why;
  auto n = parse_size(text, &why);
  if (!n) throw Usage(why);
  return *n;
}


/// --problem's value, or Usage naming the choices.
inline Problem problem_option(const std::string& text) {
  auto p = parse_problem(text);
  if (!p) throw Usage("unknown problem '" + text + "' (array, rows, columns or segments)");
  return *p;
}

// "4096x1024,2^20x3": rows and columns take ROWSxCOLS (the matrix), segments SEGMENTSxMEAN.
inline std::vector<Shape> parse_shapes(const std::string& text, Problem problem) {
  std::vector<Shape> out;
  for (const auto& tok : split(text)) {
    const auto x = tok.find('x');
    if (x == std::string::npos)
      throw Usage("shape '" + tok + "' is not AxB (rows x cols, or segments x mean length)");
    const std::uint64_t a = parse_n(tok.substr(0, x)), b = parse_n(tok.substr(x + 1));
    if (a == 0 || b == 0) throw Usage("shape '" + tok + "' is empty");
    if (b > ~std::uint64_t(0) / a) throw Usage("shape '" + tok + "' overflows 64 bits");
    out.push_back(problem == Problem::columns ? Shape{b, a} : Shape{a, b});
  }
  return out;
}

} // namespace reduce_tune::cli
