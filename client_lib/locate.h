// File: locate.h
//
// Where the bytes of a file live (Client::Locate): for schedulers that run
// work beside its data (Dask, Ray, Spark block locations). Plain values.
//
//   RANGEFS_ASSIGN_OR_RETURN(std::vector<RangeLocation> where,
//                            client->Locate("/crawl/seg-0001", 0, 64 << 20));
//   // where[0].replicas[0].hosts[0]: the host a read of where[0] goes to
//   // first.
#ifndef RANGEFS_CLIENT_LIB_LOCATE_H_
#define RANGEFS_CLIENT_LIB_LOCATE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rangefs {

// One replica of a located range.
struct ReplicaLocation {
  std::string node;                    // node id
  std::vector<std::string> addresses;  // the node's agent "host:port"s
  std::vector<std::string> hosts;      // their hosts, unique, in order
  // The client would read this replica now (live, active, not judged dead);
  // false: only as a last resort, after every healthy replica failed.
  bool healthy = false;
};

// A byte range of the file whose bytes all have the same replicas.
struct RangeLocation {
  uint64_t offset = 0;
  uint64_t length = 0;
  // In the order the library reads them: this host's node
  // (ClientOptions::local_node) if healthy; the other healthy replicas (the
  // load-balancing policy picks among these by load), in layout order; then
  // the others.
  std::vector<ReplicaLocation> replicas;
};

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_LOCATE_H_
