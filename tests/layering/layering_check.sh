#!/usr/bin/env bash
# Checks the include layering of a rangefs source tree (README "Layering").
#
#   layering_check.sh ROOT [KNOWN_VIOLATIONS]
#
# Folders, bottom to top:
#   base < ec < proto < namespace < loadbalancer < storage_node < client_lib
#        < ingest < repair < mount < python < admin < keeper < tests, deploy
# Rules, for every .h/.cc under base/ ec/ proto/ namespace/ loadbalancer/
# storage_node/ client_lib/ ingest/ repair/ mount/ python/ admin/ keeper/
# in ROOT:
#   1. A file includes (#include "x/...") only headers of its own folder or
#      of folders below it. Test code (*_test.cc, *_test_suite.h, *_bench.cc, */testing/*,
#      */bench/*) may also include tests/testing/ (the real-etcd and
#      process harnesses).
#   2. Code that is not test code includes no testing header (*/testing/*).
#   3. The public client headers (client_lib/{client,file,options,stats,fs}.h)
#      and every client_lib header they include include only the C++
#      standard library (<name>, no '/'), Abseil ("absl/...") and other
#      client_lib headers: no gRPC, proto, storage_node, loadbalancer or
#      namespace header.
# KNOWN_VIOLATIONS lists accepted findings, one "file: include" a line
# ('#' comments); a listed finding that no longer occurs is itself an error,
# so the list only shrinks. Prints every finding; exits 1 if any.
set -uo pipefail

root="$1"
known="${2:-}"

rank() {
  case "$1" in
    base) echo 0 ;;
    ec) echo 1 ;;
    proto) echo 2 ;;
    namespace) echo 3 ;;
    loadbalancer) echo 4 ;;
    storage_node) echo 5 ;;
    client_lib) echo 6 ;;
    ingest) echo 7 ;;
    repair) echo 8 ;;
    mount) echo 9 ;;
    python) echo 10 ;;
    admin) echo 11 ;;
    keeper) echo 12 ;;
    tests | deploy) echo 13 ;;
    *) echo -1 ;;  # not ours: absl/, grpcpp/, gtest/, google/, ...
  esac
}

is_test_code() {
  case "$1" in
    *_test.cc | *_test_suite.h | *_bench.cc | */testing/* | */bench/*) return 0 ;;
  esac
  return 1
}

findings=()

# quoted_includes FILE: the "..." includes of FILE, one a line.
quoted_includes() {
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
}

check_layers() {
  local f="$1" top r inc itop ir
  top="${f%%/*}"
  r=$(rank "$top")
  while IFS= read -r inc; do
    [ -n "$inc" ] || continue
    itop="${inc%%/*}"
    [ "$itop" = "$inc" ] && continue  # same-directory include
    ir=$(rank "$itop")
    [ "$ir" -lt 0 ] && continue
    if is_test_code "$f"; then
      case "$inc" in tests/testing/*) continue ;; esac
    elif [[ "$inc" == */testing/* ]]; then
      findings+=("$f: $inc (testing header in non-test code)")
      continue
    fi
    if [ "$ir" -gt "$r" ]; then
      findings+=("$f: $inc ($itop/ is above $top/)")
    fi
  done < <(quoted_includes "$f")
}

check_public_headers() {
  local queue=(client_lib/client.h client_lib/file.h client_lib/options.h
               client_lib/stats.h client_lib/fs.h)
  local -A seen=()
  local h inc
  while [ "${#queue[@]}" -gt 0 ]; do
    h="${queue[0]}"
    queue=("${queue[@]:1}")
    [ -n "${seen[$h]:-}" ] && continue
    seen[$h]=1
    [ -f "$root/$h" ] || continue
    while IFS= read -r inc; do
      case "$inc" in
        absl/*) ;;
        client_lib/*) queue+=("$inc") ;;
        *) findings+=("$h: $inc (public client header)") ;;
      esac
    done < <(quoted_includes "$root/$h")
    while IFS= read -r inc; do
      case "$inc" in
        */*) findings+=("$h: <$inc> (public client header)") ;;
      esac
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/\1/p' "$root/$h")
  done
}

cd "$root" || { echo "layering_check: no directory $root"; exit 2; }
nfiles=0
while IFS= read -r f; do
  f="${f#./}"
  nfiles=$((nfiles + 1))
  check_layers "$f"
done < <(find -L base ec proto namespace loadbalancer storage_node client_lib \
           ingest repair mount python admin keeper \
           \( -name '*.h' -o -name '*.cc' \) -type f 2>/dev/null | sort)
check_public_headers

if [ "$nfiles" -eq 0 ]; then
  echo "layering_check: no source files under $root"
  exit 2
fi

accepted=()
if [ -n "$known" ]; then
  while IFS= read -r line; do
    line="${line%%#*}"
    line="$(echo "$line" | sed 's/[[:space:]]*$//')"
    [ -n "$line" ] && accepted+=("$line")
  done <"$known"
fi

bad=0
for fnd in "${findings[@]+"${findings[@]}"}"; do
  key="${fnd% (*}"
  ok=0
  for a in "${accepted[@]+"${accepted[@]}"}"; do [ "$a" = "$key" ] && ok=1; done
  if [ "$ok" -eq 1 ]; then
    echo "known: $fnd"
  else
    echo "LAYERING: $fnd"
    bad=1
  fi
done
for a in "${accepted[@]+"${accepted[@]}"}"; do
  hit=0
  for fnd in "${findings[@]+"${findings[@]}"}"; do
    [ "${fnd% (*}" = "$a" ] && hit=1
  done
  if [ "$hit" -eq 0 ]; then
    echo "STALE: '$a' is listed in $(basename "$known") but no longer occurs: remove it"
    bad=1
  fi
done
echo "layering_check: $nfiles files, ${#findings[@]} finding(s)"
exit "$bad"
