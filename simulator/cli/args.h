// Minimal command-line option parsing shared by the subcommands.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainsim::cli {

/// Parses `--name value`, `--name=value` and flags. Unknown options or a missing value are a
/// UsageError naming the option and the valid ones.
class ArgParser {
 public:
  ArgParser(std::string command, std::string usage);
  /// Declares an option taking a value; `repeatable` collects every occurrence.
  void option(const std::string& name, const std::string& help, bool repeatable = false);
  void flag(const std::string& name, const std::string& help);
  /// Declares the positional arguments (for help text only).
  void positional(const std::string& name, const std::string& help);
  /// Returns false when --help was given (help printed to stdout).
  [[nodiscard]] bool parse(const std::vector<std::string>& args);

  [[nodiscard]] bool has(const std::string& name) const;
  [[nodiscard]] std::string get(const std::string& name, const std::string& fallback = "") const;
  [[nodiscard]] std::vector<std::string> get_all(const std::string& name) const;
  [[nodiscard]] const std::vector<std::string>& positionals() const { return positionals_; }
  [[nodiscard]] std::string help() const;
  [[nodiscard]] const std::string& command() const { return command_; }

 private:
  struct Spec {
    std::string help;
    bool takes_value = true;
    bool repeatable = false;
  };
  std::string command_, usage_;
  std::vector<std::pair<std::string, std::string>> positional_help_;
  std::map<std::string, Spec> specs_;
  std::vector<std::string> order_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

}  // namespace trainsim::cli
