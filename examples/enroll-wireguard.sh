#!/bin/sh
# Enrolls this device for WireGuard with an enrollment token, keeping its private key to
# itself: an MDM pushes this script and a token (vpn-portal admin enrollment-token, or POST
# /enrollment_token), the device makes its key with `wg genkey`, sends only the public half
# to the portal's public enroll endpoint, puts its key into the file it gets back, writes it
# 0600 and brings it up with wg-quick. The key never leaves the device, and it never
# appears on a command line (other users of the device could read it there).
#
# usage: enroll-wireguard.sh ENROLL_URL [CONFIG_FILE]
#   ENROLL_URL   the portal's baseUrl followed by "enroll", e.g.
#                https://vpn.example.org/vpn-user-portal/enroll
#   CONFIG_FILE  where the configuration goes; default /etc/wireguard/wg0.conf. wg-quick names
#                the interface after the file (wg0).
# The token comes from the file VPN_ENROLLMENT_TOKEN_FILE (its first line) or, failing that,
# from VPN_ENROLLMENT_TOKEN. Or, with no token at all, the device proves itself with its MDM
# certificate (docs/devices.md): VPN_ENROLL_CERT (PEM, with its issuing CA) and VPN_ENROLL_KEY
# are given to curl (--cert/--key), and ENROLL_URL is the portal's mutual-TLS listener (or nginx
# in front of it); VPN_ENROLL_CA names the CA that signed the portal's server certificate when
# the system's do not. VPN_ENROLL_NO_UP=1 writes the file without bringing it up.
# Exit status: 0 enrolled (or enrolled before: the file exists and is left alone), 1 refused
# or failed (the portal's reason is printed), 2 wrong usage.
set -eu

PLACEHOLDER='@DEVICE_PRIVATE_KEY@'
ATTEMPTS=5

fail() {
  echo "enroll-wireguard: $*" >&2
  exit 1
}

[ "$#" -ge 1 ] && [ "$#" -le 2 ] || {
  echo "usage: enroll-wireguard.sh ENROLL_URL [CONFIG_FILE]" >&2
  exit 2
}
url=$1
config=${2:-/etc/wireguard/wg0.conf}
if [ -e "$config" ]; then
  echo "enroll-wireguard: $config exists: this device is enrolled already; nothing done"
  exit 0
fi
command -v wg >/dev/null || fail "wg is not installed (wireguard-tools)"
command -v curl >/dev/null || fail "curl is not installed"

# Everything made from here on is readable by its owner only.
umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 1' HUP INT TERM

# The credential: the MDM certificate (curl's own options), or the token as a form field.
if [ -n "${VPN_ENROLL_CERT:-}" ]; then
  [ -n "${VPN_ENROLL_KEY:-}" ] || fail "VPN_ENROLL_CERT needs VPN_ENROLL_KEY: the certificate's private key"
  set -- --cert "$VPN_ENROLL_CERT" --key "$VPN_ENROLL_KEY"
  [ -z "${VPN_ENROLL_CA:-}" ] || set -- "$@" --cacert "$VPN_ENROLL_CA"
else
  if [ -n "${VPN_ENROLLMENT_TOKEN_FILE:-}" ]; then
    head -n 1 "$VPN_ENROLLMENT_TOKEN_FILE" | tr -d '\r\n' >"$work/token"
  else
    [ -n "${VPN_ENROLLMENT_TOKEN:-}" ] || fail "no token: set VPN_ENROLLMENT_TOKEN_FILE or VPN_ENROLLMENT_TOKEN (or VPN_ENROLL_CERT)"
    printf '%s' "$VPN_ENROLLMENT_TOKEN" >"$work/token"
  fi
  [ -s "$work/token" ] || fail "the enrollment token is empty"
  set -- --data-urlencode "enrollment_token@$work/token"
fi

wg genkey >"$work/private.key"
wg pubkey <"$work/private.key" | tr -d '\n' >"$work/public.key"

# 429 (too many requests from this address), 503 (the portal cannot answer for a moment: its
# database, or a revocation list not read yet) and network failures are tried again after the
# wait the portal names; every other answer is final (410: the token is expired, used up or
# revoked; ask for a new one; 403: the certificate was refused, for the reason printed).
attempt=1
while :; do
  status=$(curl --silent --show-error --max-time 30 \
    --dump-header "$work/headers" --output "$work/answer" --write-out '%{http_code}' \
    --header 'Accept: application/x-wireguard-profile' \
    --data-urlencode "public_key@$work/public.key" \
    "$@" "$url") || status=000
  [ "$status" = 200 ] && break
  if [ "$status" != 429 ] && [ "$status" != 503 ] && [ "$status" != 000 ]; then
    fail "the portal refused the enrollment ($status): $(cat "$work/answer")"
  fi
  [ "$attempt" -lt "$ATTEMPTS" ] || fail "gave up after $ATTEMPTS attempts (last: ${status#000})"
  retry_after=$(tr -d '\r' <"$work/headers" 2>/dev/null | awk -F': *' 'tolower($1) == "retry-after" { print $2 }')
  sleep "${retry_after:-$((attempt * 5))}"
  attempt=$((attempt + 1))
done

# The key goes where the placeholder is, read from its file (not from a command line).
awk -v placeholder="PrivateKey = $PLACEHOLDER" '
  NR == FNR { key = $0; next }
  $0 == placeholder { print "PrivateKey = " key; filled++; next }
  { print }
  END { if (filled != 1) exit 3 }
' "$work/private.key" "$work/answer" >"$work/config" || fail "the answer is not a WireGuard file with a $PLACEHOLDER line"

mkdir -p "$(dirname "$config")"
# Written next to its place and renamed: the file appears whole, with mode 0600, or not at all.
cp "$work/config" "$config.enrolling"
chmod 600 "$config.enrolling"
mv "$config.enrolling" "$config"
echo "enroll-wireguard: enrolled; configuration written to $config"

if [ "${VPN_ENROLL_NO_UP:-}" != 1 ]; then
  wg-quick up "$config"
fi
