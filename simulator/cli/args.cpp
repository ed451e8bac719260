// Minimal command-line option parsing.
#include "cli/args.h"

#include <cstdio>

#include "core/error.h"
#include "core/text.h"

namespace trainsim::cli {

ArgParser::ArgParser(std::string command, std::string usage)
    : command_(std::move(command)), usage_(std::move(usage)) {
  flag("help", "show this help");
}

void ArgParser::option(const std::string& name, const std::string& help, bool repeatable) {
  specs_[name] = {help, true, repeatable};
  order_.push_back(name);
}

void ArgParser::flag(const std::string& name, const std::string& help) {
  specs_[name] = {help, false, false};
  order_.push_back(name);
}

void ArgParser::positional(const std::string& name, const std::string& help) {
  positional_help_.emplace_back(name, help);
}

std::string ArgParser::help() const {
  std::string out = "usage: " + usage_ + "\n";
  if (!positional_help_.empty()) {
    out += "\narguments:\n";
    for (const auto& [n, h] : positional_help_) out += strprintf("  %-24s %s\n", n.c_str(), h.c_str());
  }
  out += "\noptions:\n";
  for (const auto& n : order_) {
    const auto& s = specs_.at(n);
    std::string shown = "--" + n + (s.takes_value ? " VALUE" : "");
    out += strprintf("  %-24s %s\n", shown.c_str(), s.help.c_str());
  }
  return out;
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  std::vector<std::string> names(order_.begin(), order_.end());
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
      if (!a.empty() && a[0] == '-' && a != "-")
        throw UsageError(command_ + ": unknown option '" + a + "'; options start with '--'");
      positionals_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      inline_value = true;
    }
    auto it = specs_.find(name);
    if (it == specs_.end()) {
      std::string msg = command_ + ": unknown option '--" + name + "'";
      std::string s = suggest(name, names);
      if (!s.empty()) msg += "; did you mean '--" + s + "'?";
      msg += "\n" + help();
      throw UsageError(msg);
    }
    if (name == "help") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (it->second.takes_value) {
      if (!inline_value) {
        if (i + 1 >= args.size()) throw UsageError(command_ + ": option '--" + name + "' needs a value");
        value = args[++i];
      }
      if (!it->second.repeatable && values_.count(name))
        throw UsageError(command_ + ": option '--" + name + "' given twice");
      values_[name].push_back(value);
    } else {
      if (inline_value) throw UsageError(command_ + ": option '--" + name + "' takes no value");
      values_[name].push_back("1");
    }
  }
  return true;
}

bool ArgParser::has(const std::string& name) const { return values_.count(name) > 0; }

std::string ArgParser::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> ArgParser::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace trainsim::cli
