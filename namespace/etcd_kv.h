// File: etcd_kv.h
//
// KvBackend over the real etcd v3 client (namespace/etcd/etcd_client.h).
#ifndef RANGEFS_NAMESPACE_ETCD_KV_H_
#define RANGEFS_NAMESPACE_ETCD_KV_H_

#include <memory>

#include "namespace/etcd/etcd_client.h"
#include "namespace/kv.h"

namespace rangefs {
namespace ns {

// `client` is not owned and must outlive the returned backend and every
// watch it starts. Thread-safe.
std::unique_ptr<KvBackend> NewEtcdKv(etcd::EtcdClient* client);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_ETCD_KV_H_
