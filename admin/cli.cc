#include "admin/cli.h"

#include <map>
#include <memory>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "admin/commands.h"

namespace rangefs {
namespace admin {
namespace {

enum class Kind { kString, kInt, kRepeated, kFlag };

struct OptionSpec {
  const char* name;  // without "--"
  Kind kind;
  const char* help;
  const char* short_name = nullptr;  // a flag's one-letter form, or null
};

struct CommandSpec {
  const char* group;  // "" for a top-level command
  const char* name;
  const char* alias;  // "" if none
  const char* positionals;
  const char* help;
  std::vector<OptionSpec> options;
};

const std::vector<OptionSpec>& GlobalOptions() {
  static const auto* kOptions = new std::vector<OptionSpec>{
      {"etcd", Kind::kString, "etcd endpoints HOST:PORT,... ($RANGEFS_ETCD)"},
      {"cluster", Kind::kString, "cluster name ($RANGEFS_CLUSTER)"},
      {"json", Kind::kFlag, "print JSON"},
      {"ca", Kind::kString, "etcd TLS CA (PEM)"},
      {"cert", Kind::kString, "etcd TLS client certificate (PEM)"},
      {"key", Kind::kString, "etcd TLS client key (PEM)"},
      {"user", Kind::kString, "etcd user"},
      {"password", Kind::kString, "etcd password"},
      {"timeout", Kind::kString, "etcd call timeout, seconds > 0"},
      {"no-progress", Kind::kFlag, "no progress line on stderr"},
      {"config", Kind::kString, "config file ($RANGEFS_CONFIG)"},
      {"agent-ca", Kind::kString, "CA of the agents' certificates (PEM)"},
      {"agent-cert", Kind::kString, "client certificate for the agents"},
      {"agent-key", Kind::kString, "key of --agent-cert"},
  };
  return *kOptions;
}

const std::vector<CommandSpec>& Commands() {
  const OptionSpec rev{"revision", Kind::kInt, "read at etcd revision R"};
  const OptionSpec if_rev{"if-revision", Kind::kInt,
                          "only if the file is at revision R"};
  static const auto* kCommands = new std::vector<CommandSpec>{
      {"node",
       "add",
       "",
       "ID",
       "register a storage node",
       {{"address", Kind::kRepeated, "agent HOST:PORT (repeatable)"},
        {"export", Kind::kString, "export directory on the node"},
        {"mount", Kind::kString, "client mount point"},
        {"zone", Kind::kString, "zone"},
        {"rack", Kind::kString, "rack"},
        {"capacity", Kind::kString, "capacity in bytes (10G, 512MiB)"},
        {"state", Kind::kString, "active|draining|disabled"}}},
      {"node", "list", "ls", "", "list nodes", {}},
      {"node", "show", "", "ID", "show a node record (JSON)", {}},
      {"node",
       "drain",
       "",
       "ID",
       "stop placing data on a node; rangefs-keeper moves its data off",
       {}},
      {"node", "disable", "", "ID", "take a node out of service", {}},
      {"node", "enable", "", "ID", "put a node back in service", {}},
      {"node",
       "remove",
       "rm",
       "ID",
       "remove a draining/disabled node that holds no replica",
       {}},
      {"file",
       "ls",
       "list",
       "[DIR]",
       "list files",
       {rev, {"limit", Kind::kInt, "at most N entries"}}},
      {"file",
       "dataset",
       "",
       "[DIR]",
       "files, bytes and revision of DIR as a pinned dataset",
       {rev}},
      {"file", "stat", "", "PATH", "show a file", {rev}},
      {"file", "layout", "", "PATH", "print a file's layout (JSON)", {rev}},
      {"file",
       "create",
       "",
       "PATH",
       "create a file from a layout",
       {{"layout", Kind::kString, "LAYOUT.json"}}},
      {"file", "rm", "", "PATH", "remove a file", {if_rev}},
      {"file", "mv", "", "FROM TO", "rename a file", {if_rev}},
      {"file",
       "put",
       "",
       "LOCAL|DIR|- PATH|DIR/",
       "ingest a local file, a directory (recursive) or stdin",
       {{"recursive", Kind::kFlag, "accepted; a directory is always put whole",
         "r"},
        {"jobs", Kind::kInt, "files put at once (default 32)"},
        {"stripe-unit", Kind::kString, "stripe unit (default 1M)"},
        {"width", Kind::kInt, "stripe columns (default: live nodes)"},
        {"replicas", Kind::kInt, "replicas (default 2)"},
        {"overwrite", Kind::kFlag, "replace an existing file"},
        {"parallel", Kind::kInt, "concurrent object writes (default 8)"}}},
      {"file",
       "get",
       "",
       "PATH|DIR LOCAL|LOCALDIR/",
       "copy a file or directory out, verified",
       {{"recursive", Kind::kFlag, "accepted; a directory is always copied",
         "r"},
        {"jobs", Kind::kInt, "files copied at once (default 8)"},
        {"overwrite", Kind::kFlag, "replace existing local files"}}},
      {"file", "cat", "", "PATH...", "write files to stdout, verified", {}},
      {"file",
       "register",
       "",
       "PATH",
       "record objects already on the nodes as PATH",
       {{"replica", Kind::kRepeated, "NODE:OBJECT[,NODE:OBJECT]"},
        {"size", Kind::kString, "expected size in bytes"}}},
      {"",
       "status",
       "",
       "",
       "nodes, live state, capacity, rangefs-keeper's last round (the "
       "keeper row; --json: node rows, then one \"kind\": \"keeper\" row)",
       {}},
      {"",
       "fsck",
       "",
       "[DIR]",
       "check every replica object (exit 4)",
       {{"checksums", Kind::kFlag, "recompute block checksums on the agents"},
        {"parallel", Kind::kInt, "concurrent checks"}}},
      {"",
       "repair",
       "",
       "",
       "print the moves rangefs-keeper would make now",
       {{"dry-run", Kind::kFlag, "print the plan, change nothing"},
        {"rebalance-tolerance", Kind::kString,
         "rebalancing band around the mean fill (default 0.10)"}}},
      {"",
       "dump",
       "",
       "",
       "whole namespace as JSON",
       {{"out", Kind::kString, "output file (default stdout)"}}},
      {"",
       "restore",
       "",
       "",
       "re-create nodes and files from a dump",
       {{"in", Kind::kString, "dump file"}}},
      {"",
       "doctor",
       "",
       "",
       "check etcd, TLS, clocks, records, mounts, RDMA",
       {{"mount-root", Kind::kString, "client mount root"},
        {"mount-status", Kind::kString, "rangefs-mountd status file"},
        {"mounts", Kind::kString, "yes|no: check mounts"},
        {"mountinfo", Kind::kString, "mountinfo file"},
        {"sysfs-root", Kind::kString, "sysfs root"}}},
  };
  return *kCommands;
}

const CLI::Validator& IntValidator() {
  static const auto* kInt = new CLI::Validator(
      [](std::string& s) -> std::string {
        int64_t v;
        return absl::SimpleAtoi(s, &v) ? "" : s + " is not an integer";
      },
      "");
  return *kInt;
}

// Values of the options of one CLI::App, by name.
struct Values {
  std::map<std::string, std::vector<std::string>> repeated;
  std::map<std::string, std::string> single;
  std::map<std::string, bool> flags;
  std::vector<std::string> positionals;
};

void AddOptions(CLI::App& app, const std::vector<OptionSpec>& specs,
                Values& v) {
  for (const OptionSpec& o : specs) {
    const std::string flag = absl::StrCat("--", o.name);
    switch (o.kind) {
      case Kind::kFlag:
        app.add_flag(o.short_name == nullptr
                         ? flag
                         : absl::StrCat("-", o.short_name, ",", flag),
                     v.flags[o.name], o.help);
        break;
      case Kind::kRepeated:
        app.add_option(flag, v.repeated[o.name], o.help);
        break;
      case Kind::kInt:
        app.add_option(flag, v.single[o.name], o.help)
            ->check(IntValidator())
            ->type_name("INT")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        break;
      case Kind::kString:
        app.add_option(flag, v.single[o.name], o.help)
            ->type_name("TEXT")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        break;
    }
  }
}

// The given options of `app` as --name=value words.
void AppendGiven(const CLI::App& app, const Values& v,
                 std::vector<std::string>& out) {
  for (const auto& [name, value] : v.single) {
    if (app.get_option("--" + name)->count() > 0) {
      out.push_back(absl::StrCat("--", name, "=", value));
    }
  }
  for (const auto& [name, values] : v.repeated) {
    for (const std::string& value : values) {
      out.push_back(absl::StrCat("--", name, "=", value));
    }
  }
  for (const auto& [name, set] : v.flags) {
    if (set) out.push_back(absl::StrCat("--", name));
  }
}

// The parser: the CLI::App tree and the values it fills. Not copyable (the
// apps hold pointers into the values).
class Parser {
 public:
  Parser() : app_("rangefs-admin: nodes, files and layouts of a cluster") {
    app_.fallthrough();
    AddOptions(app_, GlobalOptions(), global_);
    help_ = app_.add_subcommand("help", "help for all or one command group");
    help_->add_option("group", help_group_, "node|file");
    for (const CommandSpec& c : Commands()) AddCommand(c);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  absl::StatusOr<CommandLine> Parse(const std::vector<std::string>& argv);

 private:
  void AddCommand(const CommandSpec& c) {
    CLI::App* parent = &app_;
    if (*c.group != '\0') {
      CLI::App*& g = groups_[c.group];
      if (g == nullptr) {
        g = app_.add_subcommand(c.group, absl::StrCat(c.group, " commands"));
        g->fallthrough();
      }
      parent = g;
    }
    CLI::App* leaf = parent->add_subcommand(c.name, c.help);
    leaf->fallthrough();
    if (*c.alias != '\0') leaf->alias(c.alias);
    Values& v = values_[leaf];
    if (*c.positionals != '\0') {
      leaf->add_option("args", v.positionals, c.positionals);
    }
    AddOptions(*leaf, c.options, v);
    leaves_.push_back({leaf, &c});
  }

  CLI::App app_;
  Values global_;
  CLI::App* help_ = nullptr;
  std::string help_group_;
  std::map<std::string, CLI::App*> groups_;
  std::map<const CLI::App*, Values> values_;
  std::vector<std::pair<CLI::App*, const CommandSpec*>> leaves_;
};

absl::StatusOr<CommandLine> Parser::Parse(
    const std::vector<std::string>& argv) {
  CommandLine out;
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());
  try {
    app_.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out.help = true;
    out.help_text = app_.get_subcommands().empty() ? Usage() : app_.help();
    return out;
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(e.what(), " (see rangefs-admin --help)"));
  }
  std::vector<std::string> global_words;
  AppendGiven(app_, global_, global_words);
  absl::StatusOr<Args> global = Args::Parse(global_words);
  if (!global.ok()) return global.status();
  out.global = *std::move(global);
  if (help_->parsed()) {
    out.help = true;
    std::string group = help_group_;
    for (const auto& [name, g] : groups_) {
      if (g->parsed()) group = name;  // `help node`: node parses as a group
    }
    out.help_text = Usage(group);
    return out;
  }
  for (const auto& [leaf, spec] : leaves_) {
    if (!leaf->parsed()) continue;
    const Values& v = values_.at(leaf);
    std::vector<std::string> words;  // --name=value..., "--", words
    AppendGiven(*leaf, v, words);
    out.doctor = std::string(spec->name) == "doctor";
    if (out.doctor) {
      // doctor checks the connection itself: it gets the global options.
      AppendGiven(app_, global_, words);
    } else {
      words.push_back("--");
      if (*spec->group != '\0') words.push_back(spec->group);
      words.push_back(spec->name);
      words.insert(words.end(), v.positionals.begin(), v.positionals.end());
    }
    absl::StatusOr<Args> command = Args::Parse(words);
    if (!command.ok()) return command.status();
    out.command = *std::move(command);
    return out;
  }
  // A group without a command, or nothing at all.
  out.help = true;
  out.no_command = true;
  for (const auto& [name, g] : groups_) {
    if (g->parsed()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown ", name, " command \"\"\n", Usage(name)));
    }
  }
  out.help_text = Usage();
  return out;
}

}  // namespace

absl::StatusOr<CommandLine> ParseCommandLine(
    const std::vector<std::string>& argv) {
  Parser parser;
  return parser.Parse(argv);
}

}  // namespace admin
}  // namespace rangefs
