#include "client_lib/mountd/mounter.h"

#include <errno.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/errno_status.h"

extern char** environ;

namespace rangefs {
namespace mountd {

absl::Status Mounter::Unmount(const std::string& target) {
  if (umount2(target.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0) {
    if (errno == EINVAL || errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("umount2 MNT_DETACH ", target));
  }
  return absl::OkStatus();
}

std::string Mounter::UnmountCommand(const std::string& target) const {
  return absl::StrCat("umount -l ", target);
}

std::string HostOfAddress(const std::string& address) {
  if (absl::StartsWith(address, "[")) {
    size_t end = address.find(']');
    return end == std::string::npos ? address : address.substr(0, end + 1);
  }
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || address.find(':') != colon) {
    return address;  // no port, or a bare IPv6 address
  }
  return address.substr(0, colon);
}

namespace {

class BindMounter : public Mounter {
 public:
  std::string name() const override { return "bind"; }

  absl::StatusOr<std::string> SourceFor(
      const v1::NodeRecord& node) const override {
    if (node.export_path().empty() || node.export_path()[0] != '/') {
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", node.id(), " has no absolute export path for a bind mount"));
    }
    return node.export_path();
  }

  std::string MountCommand(const std::string& source,
                           const std::string& target) const override {
    return absl::StrCat("mount --bind -o ro ", source, " ", target);
  }

  absl::Status Mount(const std::string& source,
                     const std::string& target) override {
    if (mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return ErrnoStatus(errno,
                         absl::StrCat("mount --bind ", source, " ", target));
    }
    // A bind mount takes MS_RDONLY only on a remount.
    if (mount(nullptr, target.c_str(), nullptr,
              MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
      absl::Status s = ErrnoStatus(errno, absl::StrCat("remount ro ", target));
      umount2(target.c_str(), MNT_DETACH);
      return s;
    }
    return absl::OkStatus();
  }
};

class NfsMounter : public Mounter {
 public:
  NfsMounter(std::string options, std::string mount_binary)
      : mount_binary_(std::move(mount_binary)) {
    std::vector<std::string> opts =
        absl::StrSplit(options, ',', absl::SkipEmpty());
    bool ro = false;
    for (const std::string& o : opts) ro = ro || o == "ro";
    if (!ro) opts.insert(opts.begin(), "ro");
    options_ = absl::StrJoin(opts, ",");
  }

  std::string name() const override { return "nfs"; }

  absl::StatusOr<std::string> SourceFor(
      const v1::NodeRecord& node) const override {
    if (node.addresses().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", node.id(), " has no address"));
    }
    if (node.export_path().empty() || node.export_path()[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", node.id(), " has no absolute export path"));
    }
    return absl::StrCat(HostOfAddress(node.addresses(0)), ":",
                        node.export_path());
  }

  std::string MountCommand(const std::string& source,
                           const std::string& target) const override {
    return absl::StrCat(mount_binary_, " -t nfs -o ", options_, " ", source,
                        " ", target);
  }

  absl::Status Mount(const std::string& source,
                     const std::string& target) override {
    std::vector<std::string> argv = {mount_binary_, "-t",   "nfs", "-o",
                                     options_,      source, target};
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_t pid;
    int rc = posix_spawn(&pid, mount_binary_.c_str(), nullptr, nullptr,
                         cargv.data(), environ);
    if (rc != 0) return ErrnoStatus(rc, absl::StrCat("spawn ", mount_binary_));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return ErrnoStatus(errno, "waitpid mount");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return absl::UnavailableError(
          absl::StrCat(MountCommand(source, target), " failed (status ",
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1, ")"));
    }
    return absl::OkStatus();
  }

 private:
  std::string options_;
  std::string mount_binary_;
};

}  // namespace

std::unique_ptr<Mounter> NewBindMounter() {
  return std::make_unique<BindMounter>();
}

std::unique_ptr<Mounter> NewNfsMounter(std::string options,
                                       std::string mount_binary) {
  return std::make_unique<NfsMounter>(std::move(options),
                                      std::move(mount_binary));
}

}  // namespace mountd
}  // namespace rangefs
