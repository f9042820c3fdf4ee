#include "namespace/etcd/etcd_settings.h"

#include <fstream>

#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace etcd {
namespace {

using ::testing::HasSubstr;

TEST(MakeEtcdClientOptionsTest, CopiesTheSettings) {
  EtcdSettings s;
  s.endpoints = "a:1,b:2";
  s.ca_file = "ca.pem";
  s.cert_file = "c.pem";
  s.key_file = "k.pem";
  s.username = "u";
  s.password = "p";
  s.call_timeout = absl::Seconds(7);
  absl::StatusOr<EtcdClientOptions> o = MakeEtcdClientOptions(s);
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->endpoints, "a:1,b:2");
  EXPECT_EQ(o->ca_file, "ca.pem");
  EXPECT_EQ(o->cert_file, "c.pem");
  EXPECT_EQ(o->key_file, "k.pem");
  EXPECT_EQ(o->username, "u");
  EXPECT_EQ(o->password, "p");
  EXPECT_EQ(o->call_timeout, absl::Seconds(7));
}

TEST(MakeEtcdClientOptionsTest, UnsetTimeoutKeepsTheClientDefault) {
  absl::StatusOr<EtcdClientOptions> o = MakeEtcdClientOptions({});
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->call_timeout, EtcdClientOptions().call_timeout);
  EXPECT_EQ(o->password, "");
}

TEST(MakeEtcdClientOptionsTest, PasswordFileGivesItsFirstLine) {
  auto dir = testing::ScopedTempDir::Make("etcd_settings");
  ASSERT_THAT(dir, IsOk());
  const std::string file = dir->path() + "/pw";
  std::ofstream(file) << "secret\nsecond line\n";
  EtcdSettings s;
  s.password_file = file;
  absl::StatusOr<EtcdClientOptions> o = MakeEtcdClientOptions(s);
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->password, "secret");
  s.password = "given";  // wins over the file
  o = MakeEtcdClientOptions(s);
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->password, "given");
}

TEST(MakeEtcdClientOptionsTest, UnreadablePasswordFileIsNotFound) {
  EtcdSettings s;
  s.password_file = "/nonexistent/rangefs-pw";
  absl::StatusOr<EtcdClientOptions> o = MakeEtcdClientOptions(s);
  EXPECT_THAT(o, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(std::string(o.status().message()),
              HasSubstr("cannot read /nonexistent/rangefs-pw"));
}

TEST(EtcdSettingsFromConfigTest, DefaultsAndValues) {
  absl::StatusOr<EtcdSettings> d = EtcdSettingsFromConfig(Config());
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ(d->endpoints, "127.0.0.1:2379");
  EXPECT_EQ(d->call_timeout, absl::Seconds(5));
  EXPECT_EQ(d->ca_file, "");
  auto c = Config::Parse(
      "etcd_endpoints = a:1, b:2\n"
      "etcd_ca = ca.pem\n"
      "etcd_cert = c.pem\n"
      "etcd_key = k.pem\n"
      "etcd_user = u\n"
      "etcd_password_file = /pw\n"
      "etcd_timeout = 1500ms\n");
  ASSERT_THAT(c, IsOk());
  absl::StatusOr<EtcdSettings> s = EtcdSettingsFromConfig(*c);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->endpoints, "a:1,b:2");
  EXPECT_EQ(s->ca_file, "ca.pem");
  EXPECT_EQ(s->cert_file, "c.pem");
  EXPECT_EQ(s->key_file, "k.pem");
  EXPECT_EQ(s->username, "u");
  EXPECT_EQ(s->password_file, "/pw");
  EXPECT_EQ(s->call_timeout, absl::Milliseconds(1500));
}

TEST(EtcdSettingsFromConfigTest, BadTimeoutIsInvalid) {
  auto c = Config::Parse("etcd_timeout = soon\n");
  ASSERT_THAT(c, IsOk());
  EXPECT_THAT(EtcdSettingsFromConfig(*c),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace etcd
}  // namespace rangefs
