#include "admin/cli.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
      {"version", Kind::kFlag, "print the version and git commit"},
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
        {"replicas", Kind::kInt,
         "replicas (default: the storage policy of the destination, else "
         "2)"},
        {"ec", Kind::kString,
         "K+M: erasure-code with K data + M parity columns on K+M distinct "
         "nodes, e.g. 6+3 (1.5x raw, any 3 nodes lost); with --replicas, "
         "overrides a storage policy"},
        {"ec-min-rows", Kind::kInt,
         "with --ec: files under this many full rows (K x stripe unit "
         "each) get --replicas instead (default 2)"},
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
      {"policy",
       "set",
       "",
       "DIR",
       "give files below DIR a storage policy: N replicas or an erasure "
       "code (new puts follow it; rangefs-keeper converts existing files); "
       "refused when the cluster cannot place it",
       {{"replicas", Kind::kInt, "N full replicas of every file"},
        {"ec", Kind::kString,
         "K+M: Reed-Solomon, K data + M parity columns on K+M distinct "
         "nodes (and racks, where node records carry racks)"},
        {"min-size", Kind::kString,
         "files smaller than this keep their ingest layout (e.g. 16M)"},
        {"min-age", Kind::kString,
         "files younger than this keep their ingest layout (e.g. 36h, 7d)"}}},
      {"policy",
       "ls",
       "list",
       "",
       "list storage policies and whether the cluster can place each",
       {}},
      {"policy", "rm", "remove", "DIR", "remove DIR's storage policy", {}},
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
       "check every replica object and erasure-coded row (exit 4; 1 on data "
       "loss)",
       {{"checksums", Kind::kFlag,
         "recompute block checksums on the agents; erasure-coded files: every "
         "row's cells and parity"},
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
       "whole namespace as JSON: nodes, files, storage policies",
       {{"out", Kind::kString, "output file (default stdout)"}}},
      {"",
       "restore",
       "",
       "",
       "re-create nodes, files and storage policies from a dump",
       {{"in", Kind::kString, "dump file"}}},
      {"",
       "doctor",
       "",
       "",
       "check etcd, TLS, clocks, records, storage policies, mounts, RDMA "
       "(exit 0: all OK, "
       "1: a failure, 6: warnings only)",
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

// Levenshtein distance between two words.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                         prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// "unknown <what> "word"; did you mean "a" or "b"?": the valid words within
// two edits of `word` (one for short words), or that it begins; else the
// list of valid words.
std::string UnknownWordMessage(const std::string& what, const std::string& word,
                               const std::vector<std::string>& valid,
                               const std::string& help) {
  size_t best = std::max<size_t>(1, std::min<size_t>(2, word.size() / 3));
  std::vector<std::string> closest;
  for (const std::string& v : valid) {
    size_t d =
        absl::StartsWith(v, word) && !word.empty() ? 1 : EditDistance(word, v);
    if (d < best) closest.clear();
    if (d <= best) {
      best = d;
      if (std::find(closest.begin(), closest.end(), v) == closest.end()) {
        closest.push_back(v);
      }
    }
  }
  std::string out = absl::StrCat("unknown ", what, " \"", word, "\"");
  if (closest.empty()) {
    absl::StrAppend(&out, " (one of: ", absl::StrJoin(valid, ", "), ")");
  } else {
    absl::StrAppend(&out, "; did you mean \"",
                    absl::StrJoin(closest, "\" or \""), "\"?");
  }
  return absl::StrCat(out, " (see rangefs-admin ", help, ")");
}

// The options that take a value (--name VALUE), global or of any command.
bool TakesValue(absl::string_view name) {
  auto in = [&](const std::vector<OptionSpec>& specs) {
    for (const OptionSpec& o : specs) {
      if (o.name == name) return o.kind != Kind::kFlag;
    }
    return false;
  };
  if (in(GlobalOptions())) return true;
  for (const CommandSpec& c : Commands()) {
    if (in(c.options)) return true;
  }
  return false;
}

// argv without options and their values: the command words, then
// positionals.
std::vector<std::string> Words(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      words.insert(words.end(), argv.begin() + i + 1, argv.end());
      break;
    }
    if (absl::StartsWith(a, "--")) {
      if (a.find('=') == std::string::npos && TakesValue(a.substr(2))) ++i;
    } else if (!absl::StartsWith(a, "-") || a.size() == 1) {
      words.push_back(a);
    }
  }
  return words;
}

// For a command line CLI11 refused: the message for its first word that
// is not a command (or the command word after a group), if there is one.
std::optional<std::string> UnknownCommand(
    const std::vector<std::string>& argv) {
  const std::vector<std::string> words = Words(argv);
  if (words.empty()) return std::nullopt;
  std::vector<std::string> top = {"help"};
  std::map<std::string, std::vector<std::string>> groups;
  for (const CommandSpec& c : Commands()) {
    if (*c.group == '\0') {
      top.push_back(c.name);
      continue;
    }
    std::vector<std::string>& g = groups[c.group];
    if (g.empty()) top.push_back(c.group);
    g.push_back(c.name);
    if (*c.alias != '\0') g.push_back(c.alias);
  }
  if (std::find(top.begin(), top.end(), words[0]) == top.end()) {
    return UnknownWordMessage("command", words[0], top, "--help");
  }
  auto g = groups.find(words[0]);
  if (g == groups.end() || words.size() < 2) return std::nullopt;
  const std::vector<std::string>& valid = g->second;
  if (std::find(valid.begin(), valid.end(), words[1]) != valid.end()) {
    return std::nullopt;
  }
  return UnknownWordMessage(absl::StrCat(g->first, " command"), words[1], valid,
                            absl::StrCat("help ", g->first));
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
    help_->add_option("group", help_group_, "node|file|policy");
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
    if (std::optional<std::string> unknown = UnknownCommand(argv)) {
      return absl::InvalidArgumentError(*unknown);
    }
    return absl::InvalidArgumentError(
        absl::StrCat(e.what(), " (see rangefs-admin --help)"));
  }
  if (global_.flags["version"]) {
    out.version = true;
    return out;
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
