#!/usr/bin/env bash
# Makes the TLS material for a rangefs etcd cluster with openssl:
#
#   deploy/etcd/make-certs.sh OUTDIR [--members=m0,m1,m2] [--hosts=h1,10.0.0.5]
#                                    [--days=825] [--clients=rangefs-admin,...]
#
# OUTDIR gets:
#   ca.crt ca.key               the cluster CA (keep ca.key offline)
#   <member>.crt <member>.key   one cert per etcd member, used both as its
#                               server cert (clients) and its peer cert (it has
#                               serverAuth and clientAuth), SANs: DNS <member>,
#                               DNS localhost, IP 127.0.0.1 and every --hosts
#                               entry (IPs as IP SANs, names as DNS SANs)
#   <client>.crt <client>.key   client certs (CN = the client name, which is
#                               also the etcd user name when etcd auth is on):
#                               rangefs-admin, rangefs-node, rangefs-client
#
# Idempotent: existing keys and certificates are kept (a CA is never
# regenerated), so re-running after adding a member only makes the new
# member's cert. Delete a file to re-issue it (see deploy/README.md,
# "Rotate certificates"). Prints one line per file it creates.
set -euo pipefail

usage() {
  echo "usage: $0 OUTDIR [--members=m0,m1,m2] [--hosts=H,...] [--days=N] [--clients=C,...]" >&2
  exit 2
}

[ $# -ge 1 ] || usage
out=$1
shift
members="m0,m1,m2"
hosts=""
days=825
clients="rangefs-admin,rangefs-node,rangefs-client"
for arg in "$@"; do
  case "$arg" in
    --members=*) members=${arg#--members=} ;;
    --hosts=*) hosts=${arg#--hosts=} ;;
    --days=*) days=${arg#--days=} ;;
    --clients=*) clients=${arg#--clients=} ;;
    *) usage ;;
  esac
done
command -v openssl >/dev/null || { echo "make-certs: openssl not found (apt-get install openssl)" >&2; exit 1; }

mkdir -p "$out"
chmod 700 "$out"
cd "$out"

newkey() {  # newkey NAME: EC P-256 key, mode 600
  if [ ! -s "$1.key" ]; then
    (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null)
    echo "make-certs: created $out/$1.key"
  fi
}

if [ ! -s ca.crt ]; then
  newkey ca
  openssl req -x509 -new -key ca.key -sha256 -days "$days" -subj "/O=rangefs/CN=rangefs-etcd-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out ca.crt 2>/dev/null
  echo "make-certs: created $out/ca.crt"
fi

sign() {  # sign NAME CN EXTFILE
  local name=$1 cn=$2 ext=$3
  [ -s "$name.crt" ] && return 0
  newkey "$name"
  openssl req -new -key "$name.key" -subj "/O=rangefs/CN=$cn" -out "$name.csr" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 \
    -days "$days" -extfile "$ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$ext"
  echo "make-certs: created $out/$name.crt"
}

IFS=, read -r -a member_list <<<"$members"
IFS=, read -r -a host_list <<<"$hosts"
IFS=, read -r -a client_list <<<"$clients"

for m in "${member_list[@]}"; do
  [ -n "$m" ] || continue
  san="DNS:$m,DNS:localhost,IP:127.0.0.1"
  for h in "${host_list[@]}"; do
    [ -n "$h" ] || continue
    if [[ "$h" =~ ^[0-9.]+$ || "$h" == *:* ]]; then san="$san,IP:$h"; else san="$san,DNS:$h"; fi
  done
  ext=$(mktemp "./.ext.XXXXXX")
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=$san" >"$ext"
  sign "$m" "$m" "$ext"
  rm -f "$ext"
done

for c in "${client_list[@]}"; do
  [ -n "$c" ] || continue
  ext=$(mktemp "./.ext.XXXXXX")
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=clientAuth" >"$ext"
  sign "$c" "$c" "$ext"
  rm -f "$ext"
done
chmod 600 ./*.key
chmod 644 ./*.crt
