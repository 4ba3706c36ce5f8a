// FlagSet: command-line values that CLI11 matches and swapplan parses, so
// that every command reads flags the same way (SPEC §10):
//
//  * a size, bandwidth or duration needs its unit ("600" is refused with
//    "'600' needs a unit, e.g. 600B or 600GiB"; "600B", "64GiB", "25GB/s",
//    "10us" are fine); a ratio takes "1.5x" or "1.5";
//  * a flag given with an empty value (`--device-memory ''`) is an error,
//    never "not given" — absence is the only way not to give a value;
//  * every problem is collected: a command with several wrong or missing
//    inputs reports all of them, one line each, and exits 2.
//
//   struct Args { FlagSet flags; std::optional<int64_t> memory; std::string trace; };
//   auto a = std::make_shared<Args>();
//   a->flags.Positional(sub, "trace", &a->trace, "Trace file", /*required=*/true);
//   a->flags.Size(sub, "--device-memory", &a->memory, "Device memory, e.g. 64GiB");
//   ...after CLI11 parsed the command line:
//   a->flags.Parse();                       // parses every given value
//   if (!a->memory) a->flags.Add("no device memory: give --device-memory");
//   SWAPPLAN_RETURN_IF_ERROR(a->flags.Status());   // all problems, one per line
//
// Values are kept as text by CLI11 (so its own conversion errors cannot stop
// at the first) and parsed in declaration order by Parse(). A FlagSet must
// outlive the CLI11 parse (it owns the text CLI11 writes into); it is
// neither copyable nor movable. Not thread-safe (one command line).
#ifndef SWAPPLAN_CLI_FLAGS_H_
#define SWAPPLAN_CLI_FLAGS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/status/status.h"

namespace swapplan::cli {

class FlagSet {
 public:
  // Parses one given value; returns the problem ("" = fine), without the
  // flag name (Parse() prefixes it).
  using Parser = std::function<std::string(const std::string& value)>;

  FlagSet() = default;
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // Each declares option `names` (CLI11 spelling, e.g. "-o,--output") on
  // `sub`, taking one value; Parse() stores a given value in *out and leaves
  // *out alone when the flag is absent. Returns the CLI11 option.
  // Size: "64GiB"; unit required.
  CLI::Option* Size(CLI::App* sub, const std::string& names, std::optional<int64_t>* out,
                    const std::string& help);
  // Bandwidth: "25GB/s"; unit required.
  CLI::Option* Bandwidth(CLI::App* sub, const std::string& names, std::optional<double>* out,
                         const std::string& help);
  // Duration in ns: "10us"; unit required.
  CLI::Option* Duration(CLI::App* sub, const std::string& names, std::optional<int64_t>* out,
                        const std::string& help);
  // Ratio: "1.5x" or "1.5", > 0.
  CLI::Option* Ratio(CLI::App* sub, const std::string& names, std::optional<double>* out,
                     const std::string& help);
  // Fraction: "20%" or "0.2", >= 0.
  CLI::Option* Fraction(CLI::App* sub, const std::string& names, std::optional<double>* out,
                        const std::string& help);
  // Integer in [min, max].
  CLI::Option* Int(CLI::App* sub, const std::string& names, std::optional<int64_t>* out,
                   const std::string& help, int64_t min, int64_t max);
  // Decimal number in [min, max].
  CLI::Option* Number(CLI::App* sub, const std::string& names, std::optional<double>* out,
                      const std::string& help, double min, double max);
  // Non-empty text.
  CLI::Option* Text(CLI::App* sub, const std::string& names, std::optional<std::string>* out,
                    const std::string& help);
  // One of `choices` (listed in the problem when it is none of them).
  CLI::Option* Choice(CLI::App* sub, const std::string& names, std::optional<std::string>* out,
                      std::vector<std::string> choices, const std::string& help);
  // Any value, handed to `parse` (e.g. a planner option's own parser).
  CLI::Option* Custom(CLI::App* sub, const std::string& names, Parser parse,
                      const std::string& help, const std::string& type = "VALUE");
  // A repeatable flag; every occurrence is handed to `parse`.
  CLI::Option* Repeated(CLI::App* sub, const std::string& names, Parser parse,
                        const std::string& help, const std::string& type = "VALUE");
  // Positional argument `name`; a missing required one is a problem.
  CLI::Option* Positional(CLI::App* sub, const std::string& name, std::string* out,
                          const std::string& help, bool required);

  // Parses every given value in declaration order and checks the required
  // positionals; problems are collected. Call once, after CLI11's parse.
  void Parse();
  // A problem found by the command itself (missing inputs, flags that
  // exclude each other), one line.
  void Add(std::string problem);
  bool ok() const { return problems_.empty(); }
  // True when flag `name` (e.g. "--device-memory") was given, whether or not
  // its value parsed.
  bool Given(const std::string& name) const;
  const std::vector<std::string>& problems() const { return problems_; }
  // OK, or a usage error (ErrorKind::kUsage, exit 2) whose message has one
  // line per problem.
  absl::Status Status() const;

 private:
  struct Entry {
    CLI::Option* option = nullptr;
    std::string flag;  // the name problems start with
    Parser parse;
    bool repeated = false;
    bool positional_required = false;
    // Where CLI11 writes a positional's value (nullptr for flags).
    std::string* positional = nullptr;
  };
  // `type` is the value's name in --help (SIZE, RATE, ...).
  Entry& Declare(CLI::App* sub, const std::string& names, const std::string& help, Parser parse,
                 const std::string& type);

  std::deque<std::string> values_;
  std::deque<std::vector<std::string>> repeated_values_;
  std::vector<Entry> entries_;
  std::vector<std::string> problems_;
};

// The message of a status with several lines as separate lines (the CLI
// prints each as "swapplan: <line>").
std::vector<std::string> StatusLines(const absl::Status& status);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_FLAGS_H_
