// File: etcd_namespace.h
//
// A real etcd (EtcdCluster) with what tests read and write it through: an
// etcd client, the KvBackend over it and a NamespaceStore. One place for the
// set-up the client tests share.
//
//   absl::StatusOr<EtcdNamespace> ns = StartEtcdNamespace({.cluster = "c"});
//   ASSERT_THAT(ns, IsOk());
//   ns->store->AddNode(...);
#ifndef RANGEFS_TESTS_TESTING_ETCD_NAMESPACE_H_
#define RANGEFS_TESTS_TESTING_ETCD_NAMESPACE_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/store.h"
#include "tests/testing/etcd_cluster.h"

namespace rangefs {
namespace testing {

// Members in construction order; a holder destroys them in reverse (store
// first, etcd last), as the fields of this struct are.
struct EtcdNamespace {
  std::unique_ptr<EtcdCluster> etcd;
  std::unique_ptr<etcd::EtcdClient> client;
  std::unique_ptr<ns::KvBackend> kv;
  std::unique_ptr<ns::NamespaceStore> store;
};

// Starts a one-member etcd and opens a client, KvBackend and store on it.
inline absl::StatusOr<EtcdNamespace> StartEtcdNamespace(
    const ns::StoreOptions& options = {}) {
  EtcdNamespace n;
  RANGEFS_ASSIGN_OR_RETURN(n.etcd, EtcdCluster::Start({}));
  RANGEFS_ASSIGN_OR_RETURN(
      n.client, etcd::EtcdClient::Open({.endpoints = n.etcd->endpoints()}));
  n.kv = ns::NewEtcdKv(n.client.get());
  n.store = ns::NewKvStore(n.kv.get(), options);
  return n;
}

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_TESTS_TESTING_ETCD_NAMESPACE_H_
