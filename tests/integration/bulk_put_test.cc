// rangefs-admin's bulk ingest and copy-out (file put of a directory, from
// stdin, to DIR/; file get; file cat) against a real etcd and three real
// rangefs-node processes, through the commands and through the binary.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "admin/commands.h"
#include "admin/file_get.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/agent_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace {

using testing::AgentCluster;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

constexpr absl::Duration kWait = absl::Seconds(60);

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Bytes that differ at every position of a file (a swapped or shifted
// block shows).
std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  uint32_t x = 2166136261u ^ static_cast<uint32_t>(seed);
  for (size_t i = 0; i < n; ++i) {
    x = x * 16777619u + static_cast<uint32_t>(i);
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

class BulkPutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = AgentCluster::Start("bulk_put_test");
    ASSERT_THAT(c, IsOk());
    cluster_ = *std::move(c);
    ctx_.store = cluster_->store();
    ctx_.cluster = "it";
    ASSERT_THAT(cluster_->AddLiveAgents(3, kWait), IsOk());
    src_ = absl::StrCat(cluster_->dir(), "/src");
    // Nested directories, UTF-8 names, an empty file, a file striped over
    // the nodes (3 MiB > the 1 MiB stripe unit) and small ones.
    files_ = {
        {"top.txt", "hello\n"},
        {"empty", ""},
        {"a/b/c/deep.bin", Pattern(70000, 1)},
        {"a/striped.bin", Pattern(3 * (1 << 20) + 12345, 2)},
        {"données/naïve résumé.csv", "x,y\n1,2\n"},
        {"日本語/ファイル", Pattern(4096, 3)},
    };
    for (const auto& [rel, bytes] : files_) {
      const std::string p = absl::StrCat(src_, "/", rel);
      ASSERT_EQ(
          system(absl::StrCat("mkdir -p '", p.substr(0, p.rfind('/')), "'")
                     .c_str()),
          0);
      WriteFile(p, bytes);
    }
  }

  absl::StatusOr<admin::Table> Run(std::vector<std::string> argv) {
    auto args = admin::Args::Parse(argv);
    if (!args.ok()) return args.status();
    return admin::RunCommand(ctx_, *args);
  }

  // Every file below local `dir`, relative path -> bytes.
  std::map<std::string, std::string> Tree(const std::string& dir) {
    std::map<std::string, std::string> out;
    const std::string list = absl::StrCat(cluster_->dir(), "/tree.txt");
    EXPECT_EQ(
        system(absl::StrCat("cd '", dir, "' && find . -type f > '", list, "'")
                   .c_str()),
        0);
    std::ifstream in(list);
    std::string line;
    while (std::getline(in, line)) {
      const std::string rel = line.substr(2);
      out[rel] = ReadFile(absl::StrCat(dir, "/", rel));
    }
    return out;
  }

  std::vector<std::string> NamespaceFiles(const std::string& dir) {
    std::vector<std::string> out;
    auto r = cluster_->store()->ListFiles({.dir = dir});
    EXPECT_THAT(r, IsOk());
    if (r.ok()) {
      for (const ns::FileEntry& f : r->files) out.push_back(f.path);
    }
    return out;
  }

  // Runs the rangefs-admin binary with `args` under bash; returns its exit
  // code, stdout in *out, stderr in *err.
  int Admin(const std::string& args, std::string* out, std::string* err,
            const std::string& stdin_file = "/dev/null") {
    const std::string o = absl::StrCat(cluster_->dir(), "/admin.out");
    const std::string e = absl::StrCat(cluster_->dir(), "/admin.err");
    const std::string cmd = absl::StrCat(
        testing::RunfilePath("admin/rangefs-admin"),
        " --etcd=", cluster_->etcd()->endpoints(), " --cluster=it ", args,
        " <'", stdin_file, "' >'", o, "' 2>'", e, "'");
    const int rc = system(cmd.c_str());
    *out = ReadFile(o);
    *err = ReadFile(e);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }

  std::unique_ptr<AgentCluster> cluster_;
  admin::Context ctx_;
  std::string src_;
  std::map<std::string, std::string> files_;
};

TEST_F(BulkPutTest, RecursivePutAndGetRoundTripByteExact) {
  auto put = Run({"file", "put", src_, "/ds", "--jobs=4"});
  ASSERT_THAT(put, IsOk());
  EXPECT_THAT(put->message, HasSubstr("6 file(s)"));
  std::vector<std::string> want;
  for (const auto& [rel, bytes] : files_) want.push_back("/ds/" + rel);
  EXPECT_THAT(NamespaceFiles("/ds"), UnorderedElementsAreArray(want));

  const std::string out = absl::StrCat(cluster_->dir(), "/out");
  auto got = Run({"file", "get", "/ds", out});
  ASSERT_THAT(got, IsOk());
  EXPECT_THAT(got->message, HasSubstr("6 file(s)"));
  EXPECT_EQ(Tree(out), files_);
  // No temp file left beside the copies.
  EXPECT_EQ(Tree(out).size(), files_.size());

  // A second get refuses to replace the files, naming one; --overwrite
  // replaces them.
  EXPECT_THAT(
      Run({"file", "get", "/ds", out}),
      StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("use --overwrite")));
  EXPECT_THAT(Run({"file", "get", "/ds", out, "--overwrite"}), IsOk());
  EXPECT_EQ(Tree(out), files_);

  // One file, into an existing directory: its base name.
  const std::string one = absl::StrCat(cluster_->dir(), "/one");
  ASSERT_EQ(mkdir(one.c_str(), 0755), 0);
  ASSERT_THAT(Run({"file", "get", "/ds/日本語/ファイル", one}), IsOk());
  EXPECT_EQ(ReadFile(one + "/ファイル"), files_["日本語/ファイル"]);
}

TEST_F(BulkPutTest, DestinationEndingInSlashTakesTheBaseName) {
  ASSERT_THAT(Run({"file", "put", src_ + "/top.txt", "/in/"}), IsOk());
  ASSERT_THAT(Run({"file", "put", src_ + "/a", "/in/"}), IsOk());
  EXPECT_THAT(NamespaceFiles("/in"),
              UnorderedElementsAreArray(
                  {"/in/top.txt", "/in/a/b/c/deep.bin", "/in/a/striped.bin"}));
  // get DIR LOCAL/ mirrors it.
  const std::string out = absl::StrCat(cluster_->dir(), "/got/");
  ASSERT_THAT(Run({"file", "get", "/in/a", out}), IsOk());
  EXPECT_EQ(ReadFile(out + "a/striped.bin"), files_["a/striped.bin"]);
}

TEST_F(BulkPutTest, ClearErrorsForMissingLocalPathAndExistingDestination) {
  EXPECT_THAT(Run({"file", "put", src_ + "/nope", "/x"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nope")));
  ASSERT_THAT(Run({"file", "put", src_ + "/top.txt", "/ds/top.txt"}), IsOk());
  EXPECT_THAT(
      Run({"file", "put", src_ + "/top.txt", "/ds/top.txt"}),
      StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("--overwrite")));
  // A directory put with one file already there: that file is named with
  // why, the others are put, and the code is the failure's.
  auto r = Run({"file", "put", src_, "/ds"});
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kAlreadyExists,
                          HasSubstr("1 of 6 file(s) failed")));
  EXPECT_THAT(r.status().message(),
              HasSubstr(absl::StrCat(src_, "/top.txt -> /ds/top.txt")));
  EXPECT_EQ(NamespaceFiles("/ds").size(), 6u);
  EXPECT_THAT(Run({"file", "put", src_, "/ds", "--overwrite"}), IsOk());
  EXPECT_THAT(Run({"file", "get", "/nothing/here", cluster_->dir() + "/o"}),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no file or directory /nothing/here")));
}

TEST_F(BulkPutTest, CatWritesVerifiedBytesInOrder) {
  ASSERT_THAT(Run({"file", "put", src_, "/c"}), IsOk());
  const std::string out = absl::StrCat(cluster_->dir(), "/cat.out");
  const int fd = open(out.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  auto args = admin::Args::Parse(
      {"/c/a/striped.bin", "/c/empty", "/c/données/naïve résumé.csv"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(admin::CatFiles(ctx_, *args, fd), IsOk());
  close(fd);
  EXPECT_EQ(ReadFile(out),
            files_["a/striped.bin"] + files_["données/naïve résumé.csv"]);
  auto missing = admin::Args::Parse({"/c/missing"});
  EXPECT_THAT(admin::CatFiles(ctx_, *missing, STDOUT_FILENO),
              StatusIs(absl::StatusCode::kNotFound));
}

// The binary: -r, stdin ("-"), file cat to stdout, exit codes.
TEST_F(BulkPutTest, BinaryPutsStdinAndDirectoriesAndCats) {
  std::string out, err;
  const std::string in = src_ + "/a/striped.bin";
  ASSERT_EQ(Admin("file put - /s/from-stdin", &out, &err, in), 0) << err;
  EXPECT_THAT(out, HasSubstr("put stdin as /s/from-stdin"));
  ASSERT_EQ(Admin("file cat /s/from-stdin", &out, &err), 0) << err;
  EXPECT_EQ(out, files_["a/striped.bin"]);
  // --json too: the bytes and nothing after them.
  ASSERT_EQ(Admin("--json file cat /s/from-stdin", &out, &err), 0) << err;
  EXPECT_EQ(out, files_["a/striped.bin"]);
  EXPECT_EQ(Admin("file put - /s/", &out, &err, in), 2);
  EXPECT_THAT(err, HasSubstr("stdin has no name"));

  ASSERT_EQ(
      Admin(absl::StrCat("file put -r --jobs=3 '", src_, "' /s/"), &out, &err),
      0)
      << err;
  ASSERT_EQ(Admin("file cat '/s/src/données/naïve résumé.csv'", &out, &err), 0)
      << err;
  EXPECT_EQ(out, files_["données/naïve résumé.csv"]);
  EXPECT_EQ(Admin(absl::StrCat("file put -r '", src_, "' /s/"), &out, &err), 4);
  EXPECT_THAT(err, HasSubstr("6 of 6 file(s) failed"));
  EXPECT_EQ(
      Admin(absl::StrCat("file put '", src_, "/missing' /s/m"), &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("missing"));
  EXPECT_EQ(Admin("file cat /s/none", &out, &err), 3);
}

}  // namespace
}  // namespace rangefs
