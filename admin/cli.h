// File: cli.h
//
// rangefs-admin's command line, parsed with CLI11: the global connection
// options, one subcommand per command (`node add`, `file put`, `fsck`, ...)
// with its own typed options and `--help`. Global options may come before
// or after the command words. The result is handed to the commands as Args
// (args.h), so commands and their unit tests do not depend on CLI11.
//
//   absl::StatusOr<CommandLine> cl = ParseCommandLine({"--json", "node",
//   "list"}); if (cl.ok() && cl->help) fputs(cl->help_text.c_str(), stdout);
#ifndef RANGEFS_ADMIN_CLI_H_
#define RANGEFS_ADMIN_CLI_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "admin/args.h"

namespace rangefs {
namespace admin {

struct CommandLine {
  // --help, `help [GROUP]` or no command at all: print help_text; the exit
  // code is 0, or 2 when no command was given.
  bool help = false;
  bool no_command = false;
  // --version: print base/version.h's VersionLine, exit 0.
  bool version = false;
  std::string help_text;
  // The global options given (--etcd, --json, ...), as --name=value.
  Args global;
  // doctor (which checks the connection itself) was given.
  bool doctor = false;
  // The command words, then its positionals and options ("node", "add",
  // "n1", --address=...). For doctor: its options plus the global ones.
  Args command;
};

// Parses argv (without the program name). INVALID_ARGUMENT (exit code 2)
// with CLI11's message for an unknown option, a missing or mistyped value
// (integers for --revision, --limit, --width, --replicas, --parallel,
// --if-revision); for an unknown command or command group word, a message
// naming it and the closest valid words ("unknown file command \"lss\";
// did you mean \"ls\"?").
absl::StatusOr<CommandLine> ParseCommandLine(
    const std::vector<std::string>& argv);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_CLI_H_
