#!/usr/bin/env bash
# Makes the TLS material of a rangefs cluster (etcd and the storage-node
# agents) with openssl:
#
#   deploy/etcd/make-certs.sh OUTDIR [--members=m0,m1,m2] [--hosts=h1,10.0.0.5]
#                                    [--days=825] [--clients=rangefs-admin,...]
#                                    [--agents=sn-017@10.1.3.17,sn-018@...]
#
# OUTDIR gets:
#   ca.crt ca.key               the cluster CA (keep ca.key offline)
#   <member>.crt <member>.key   one cert per etcd member, used both as its
#                               server cert (clients) and its peer cert (it has
#                               serverAuth and clientAuth), SANs: DNS <member>,
#                               DNS localhost, IP 127.0.0.1 and every --hosts
#                               entry (IPs as IP SANs, names as DNS SANs)
#   <agent>.crt <agent>.key     server cert of a storage-node agent
#                               (rangefs-node --tls_cert/--tls_key; serverAuth
#                               only), SANs: DNS <agent>, DNS localhost, IP
#                               127.0.0.1 and each @HOST of its --agents entry
#                               (NAME@HOST[@HOST...]: the addresses clients
#                               dial). --hosts does not apply to agents.
#   <client>.crt <client>.key   client certs (CN = the client name, which is
#                               also the etcd user name when etcd auth is on,
#                               and the identity agents check): rangefs-admin,
#                               rangefs-node, rangefs-client. An agent lets a
#                               client write only if its CN is on the agent's
#                               --writers list: by convention rangefs-admin is
#                               the writer (ingest: file put) and
#                               rangefs-client the reader (jobs). Agents take
#                               ca.crt as --tls_client_ca (mTLS).
#
# Idempotent: existing keys and certificates are kept (a CA is never
# regenerated), so re-running after adding a member only makes the new
# member's cert. Delete a file to re-issue it (see deploy/README.md,
# "Rotate certificates"). Prints one line per file it creates.
set -euo pipefail

usage() {
  echo "usage: $0 OUTDIR [--members=m0,m1,m2] [--hosts=H,...] [--days=N] [--clients=C,...] [--agents=NAME[@HOST...],...]" >&2
  exit 2
}

[ $# -ge 1 ] || usage
out=$1
shift
members="m0,m1,m2"
hosts=""
days=825
clients="rangefs-admin,rangefs-node,rangefs-client"
agents=""
for arg in "$@"; do
  case "$arg" in
    --members=*) members=${arg#--members=} ;;
    --agents=*) agents=${arg#--agents=} ;;
    --hosts=*) hosts=${arg#--hosts=} ;;
    --days=*) days=${arg#--days=} ;;
    --clients=*) clients=${arg#--clients=} ;;
    *) usage ;;
  esac
done
command -v openssl >/dev/null || { echo "make-certs: openssl not found (apt-get install openssl)" >&2; exit 1; }

IFS=, read -r -a member_list <<<"$members"
IFS=, read -r -a host_list <<<"$hosts"
IFS=, read -r -a client_list <<<"$clients"
IFS=, read -r -a agent_list <<<"$agents"

# san_of HOST: "IP:HOST" for an IPv4/IPv6 address, else "DNS:HOST".
san_of() {
  if [[ "$1" =~ ^[0-9.]+$ || "$1" == *:* ]]; then echo "IP:$1"; else echo "DNS:$1"; fi
}
# A certificate name becomes a file name and a CN: keep it plain.
check_name() {
  [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || { echo "make-certs: bad name '$1'" >&2; exit 2; }
}

for n in "${member_list[@]}" "${client_list[@]}"; do
  [ -z "$n" ] || check_name "$n"
done
for entry in "${agent_list[@]}"; do
  [ -z "$entry" ] || check_name "${entry%%@*}"
done

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

for m in "${member_list[@]}"; do
  [ -n "$m" ] || continue
  san="DNS:$m,DNS:localhost,IP:127.0.0.1"
  for h in "${host_list[@]}"; do
    [ -n "$h" ] || continue
    san="$san,$(san_of "$h")"
  done
  ext=$(mktemp "./.ext.XXXXXX")
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=$san" >"$ext"
  sign "$m" "$m" "$ext"
  rm -f "$ext"
done

for entry in "${agent_list[@]}"; do
  [ -n "$entry" ] || continue
  IFS=@ read -r -a parts <<<"$entry"
  a=${parts[0]}
  check_name "$a"
  san="DNS:$a,DNS:localhost,IP:127.0.0.1"
  for h in "${parts[@]:1}"; do
    [ -n "$h" ] || continue
    san="$san,$(san_of "$h")"
  done
  ext=$(mktemp "./.ext.XXXXXX")
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" "subjectAltName=$san" >"$ext"
  sign "$a" "$a" "$ext"
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
