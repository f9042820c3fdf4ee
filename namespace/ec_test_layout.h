// File: namespace/ec_test_layout.h
//
// For tests: the layout of an erasure-coded file (READY_EC, RS over GF(2^8)
// with a Cauchy matrix), one replica a target: target t (data 0..k-1,
// parity k..k+m-1) on node "n<t>" holding object "<object_prefix><t>".
#ifndef RANGEFS_NAMESPACE_EC_TEST_LAYOUT_H_
#define RANGEFS_NAMESPACE_EC_TEST_LAYOUT_H_

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

inline v1::FileLayout EcTestLayout(int k, int m, uint64_t cell, uint64_t size,
                                   absl::string_view object_prefix) {
  v1::FileLayout l;
  l.set_size(size);
  l.set_state(v1::READY_EC);
  v1::StripedLayout* s = l.mutable_striped();
  s->set_stripe_unit(cell);
  s->mutable_erasure()->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
  s->mutable_erasure()->set_data_columns(k);
  s->mutable_erasure()->set_parity_columns(m);
  for (int t = 0; t < k + m; ++t) {
    v1::Replica* r = s->add_targets()->add_replicas();
    r->set_node_id(absl::StrCat("n", t));
    r->set_object(absl::StrCat(object_prefix, t));
  }
  return l;
}

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_EC_TEST_LAYOUT_H_
