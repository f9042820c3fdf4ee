#include "mount/init_flags.h"

#include <linux/fuse.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace rangefs {
namespace mount {
namespace {

// An INIT request as the kernel writes it to /dev/fuse.
std::vector<char> InitRequest(uint64_t unique, uint32_t flags,
                              uint32_t flags2) {
  fuse_in_header h{};
  h.opcode = FUSE_INIT;
  h.unique = unique;
  fuse_init_in in{};
  in.major = 7;
  in.minor = 38;
  in.flags = flags;
  in.flags2 = flags2;
  h.len = sizeof(h) + sizeof(in);
  std::vector<char> b(h.len);
  memcpy(b.data(), &h, sizeof(h));
  memcpy(b.data() + sizeof(h), &in, sizeof(in));
  return b;
}

struct Reply {
  fuse_out_header out{};
  fuse_init_out init{};
  iovec iov[2];
  Reply(uint64_t unique, int error, uint32_t flags) {
    out.unique = unique;
    out.error = error;
    init.flags = flags;
    iov[0] = {&out, sizeof(out)};
    iov[1] = {&init, sizeof(init)};
  }
};

constexpr uint32_t kExt = FUSE_INIT_EXT;

TEST(InitFlagHookTest, AsksForMmapWhenTheKernelOffersIt) {
  InitFlagHook hook;
  std::vector<char> req = InitRequest(2, kExt, kDirectIoAllowMmapFlags2);
  hook.OnRequest(req.data(), static_cast<ssize_t>(req.size()));
  Reply r(2, 0, kExt);
  hook.OnReply(r.iov, 2);
  EXPECT_EQ(r.init.flags2 & kDirectIoAllowMmapFlags2, kDirectIoAllowMmapFlags2);
  EXPECT_TRUE(hook.allow_mmap_granted());
}

TEST(InitFlagHookTest, LeavesTheReplyAloneWhenNotOffered) {
  InitFlagHook hook;
  std::vector<char> req = InitRequest(2, kExt, 0);
  hook.OnRequest(req.data(), static_cast<ssize_t>(req.size()));
  Reply r(2, 0, kExt);
  hook.OnReply(r.iov, 2);
  EXPECT_EQ(r.init.flags2, 0u);
  EXPECT_FALSE(hook.allow_mmap_granted());
}

TEST(InitFlagHookTest, NoExtendedInitNoFlags2) {
  InitFlagHook hook;
  // An older kernel: no FUSE_INIT_EXT, so flags2 means nothing.
  std::vector<char> req = InitRequest(2, 0, kDirectIoAllowMmapFlags2);
  hook.OnRequest(req.data(), static_cast<ssize_t>(req.size()));
  Reply r(2, 0, 0);
  hook.OnReply(r.iov, 2);
  EXPECT_EQ(r.init.flags2, 0u);
  EXPECT_FALSE(hook.allow_mmap_granted());
}

TEST(InitFlagHookTest, OnlyTheReplyToInitIsTouched) {
  InitFlagHook hook;
  std::vector<char> req = InitRequest(2, kExt, kDirectIoAllowMmapFlags2);
  hook.OnRequest(req.data(), static_cast<ssize_t>(req.size()));
  Reply other(4, 0, kExt);  // another request's reply, same size
  hook.OnReply(other.iov, 2);
  EXPECT_EQ(other.init.flags2, 0u);
  Reply failed(2, -EPROTO, kExt);  // INIT refused: nothing to patch
  hook.OnReply(failed.iov, 2);
  EXPECT_EQ(failed.init.flags2, 0u);
  EXPECT_FALSE(hook.allow_mmap_granted());
}

TEST(InitFlagHookTest, ShortOrForeignMessagesAreIgnored) {
  InitFlagHook hook;
  hook.OnRequest(nullptr, -1);  // a failed read
  char tiny[4] = {};
  hook.OnRequest(tiny, sizeof(tiny));
  std::vector<char> req = InitRequest(2, kExt, kDirectIoAllowMmapFlags2);
  fuse_in_header h;
  memcpy(&h, req.data(), sizeof(h));
  h.opcode = FUSE_LOOKUP;
  memcpy(req.data(), &h, sizeof(h));
  hook.OnRequest(req.data(), static_cast<ssize_t>(req.size()));
  Reply r(2, 0, kExt);
  hook.OnReply(r.iov, 2);
  hook.OnReply(r.iov, 1);  // a reply with no body
  EXPECT_EQ(r.init.flags2, 0u);
  EXPECT_FALSE(hook.allow_mmap_granted());
}

}  // namespace
}  // namespace mount
}  // namespace rangefs
