// File: commands.h
//
// rangefs-admin commands, each `StatusOr<Table> Run...(Context&, Args&)`,
// independent of how the table is printed (table.h) and of main.cc, so
// they are unit-tested over a MemoryKv store and integration-tested over a
// real etcd.
#ifndef RANGEFS_ADMIN_COMMANDS_H_
#define RANGEFS_ADMIN_COMMANDS_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "admin/args.h"
#include "admin/table.h"
#include "namespace/etcd/etcd_settings.h"
#include "namespace/store.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace admin {

struct Context {
  ns::NamespaceStore* store = nullptr;  // not owned, never null
  std::string cluster;
  // TLS towards the storage-node agents (file put/register, fsck);
  // empty ca_file = plaintext.
  node::NodeClientTlsOptions agent_tls;
  // Reports progress of long operations (done, total); may be empty.
  std::function<void(size_t, size_t)> progress;
  // The etcd connection rangefs-admin resolved (flags > environment >
  // config file > defaults) and the config's mount_root ("": not set):
  // what `doctor` checks.
  etcd::EtcdSettings etcd;
  std::string mount_root;
};

// Runs `args` (command words first: "node", "add", "n1", ...).
absl::StatusOr<Table> RunCommand(Context& ctx, Args& args);

// Usage text: everything, or one command group ("node", "file").
std::string Usage(const std::string& group = "");

// Process exit code for a status: 0 OK, 2 usage/invalid argument,
// 3 not found, 4 conflict (already exists / aborted / precondition),
// 5 unavailable or timeout, 1 anything else.
int ExitCode(const absl::Status& status);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_COMMANDS_H_
