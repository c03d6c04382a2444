#!/usr/bin/env bash
# Writes a test CA and one certificate signed by it, for trying TLS on a
# cluster (docs/cli.md, "TLS"): DIR/ca.pem, DIR/node.pem, DIR/node.key.
# The certificate names localhost, 127.0.0.1 and every HOST given (names or
# IPv4 addresses), and serves every process (JobManager, TaskManagers) as
# server and client. For production, issue each host its own certificate
# from your own CA.
#   scripts/tls-test-certs.sh DIR [HOST...]
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 DIR [HOST...]" >&2
  exit 2
fi
dir=$1
shift
mkdir -p "$dir"
san="DNS:localhost,IP:127.0.0.1"
for h in "$@"; do
  if [[ $h =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]]; then san="$san,IP:$h"; else san="$san,DNS:$h"; fi
done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
  -subj "/CN=weir test CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=weir node" \
  -keyout "$dir/node.key" -out "$dir/node.csr" 2>/dev/null
openssl x509 -req -in "$dir/node.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 365 \
  -extfile <(printf "subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n" "$san") \
  -out "$dir/node.pem" 2>/dev/null
rm -f "$dir/node.csr" "$dir/ca.srl"
chmod 600 "$dir/ca.key" "$dir/node.key"
echo "$dir/ca.pem $dir/node.pem $dir/node.key"
