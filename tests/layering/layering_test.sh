#!/usr/bin/env bash
# The layering of the tree (README "Layering"):
#   1. includes: layering_check.sh over every source file of base/, ec/,
#      namespace/, loadbalancer/, storage_node/, client_lib/, ingest/,
#      repair/, mount/, python/, admin/, keeper/ (their :layering_sources
#      filegroups), with known_violations.txt;
#   2. the checker itself fails on a fixture tree with one violation of each
#      rule (so a broken checker cannot pass);
#   3. links: deps(//client_lib:client_lib) (genquery :client_lib_deps)
#      holds no server-side target of storage_node/ and nothing of ingest/,
#      repair/, mount/, python/, admin/, keeper/ or tests/.
set -uo pipefail
RF="$TEST_SRCDIR/$TEST_WORKSPACE"
HERE="$RF/tests/layering"
fail=0
err() { echo "FAIL: $*"; fail=1; }

echo "== includes"
bash "$HERE/layering_check.sh" "$RF" "$HERE/known_violations.txt" ||
  err "include layering (see LAYERING/STALE lines above)"

echo "== checker self-test on testdata/bad_tree"
out=$(bash "$HERE/layering_check.sh" "$HERE/testdata/bad_tree")
rc=$?
echo "$out"
[ "$rc" -eq 1 ] || err "checker exited $rc on the bad tree, want 1"
for want in \
  "LAYERING: storage_node/bad.cc: client_lib/client.h (client_lib/ is above storage_node/)" \
  "LAYERING: namespace/store.cc: base/testing/fake_clock.h (testing header in non-test code)" \
  "LAYERING: client_lib/options.h: storage_node/node_client.h (public client header)" \
  "LAYERING: client_lib/options.h: <grpcpp/grpcpp.h> (public client header)" \
  "LAYERING: repair/bad.cc: admin/commands.h (admin/ is above repair/)" \
  "LAYERING: ec/bad.cc: proto/layout.pb.h (proto/ is above ec/)"; do
  grep -qxF "$want" <<<"$out" || err "checker missed: $want"
done
if grep -q "storage_node/sidecar.h\|namespace/layout.h\|absl/time\|ingest/agents.h" <<<"$out"; then
  err "checker flagged an allowed include"
fi

echo "== deps(//client_lib:client_lib)"
deps="$HERE/client_lib_deps"
# Server side of storage_node/ (see storage_node/BUILD), the folders above
# client_lib/ (ingest/, repair/, mount/, python/, admin/, keeper/), tests/.
forbidden='^//storage_node:(export_root|agent_service|agent|data_port|registrar|scrubber|stats|write_access|transport_security|periodic_task|grpc_status|tls|object_copier|object_writer|rate_limiter|object_reader|rangefs-node)$|^//(ingest|repair|mount|python|admin|keeper|tests)[:/]'
grep -qx "//client_lib:client_lib" "$deps" || err "$deps does not list //client_lib:client_lib"
grep -qx "//storage_node:node_client" "$deps" || err "$deps does not list //storage_node:node_client"
if grep -E "$forbidden" "$deps"; then
  err "//client_lib:client_lib depends on the server-side targets above"
fi
for t in //storage_node:export_root //storage_node:agent_service //storage_node:data_port \
  //storage_node:object_reader //admin:commands //ingest:ingest_writer //repair:planner \
  //mount:mount_fs //python:rangefs/_rangefs.so //keeper:keeper; do
  grep -qE "$forbidden" <<<"$t" || err "the forbidden pattern misses $t"
done
for t in //storage_node:node_client //storage_node:data_port_client //storage_node:tls_client //storage_node:data_port_wire; do
  grep -qE "$forbidden" <<<"$t" && err "the forbidden pattern matches client-half $t"
done
echo "$(wc -l <"$deps") targets in deps(//client_lib:client_lib)"

[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
