// The usage text of every command, in one place: the dispatcher prints it for --help and
// mistakes, the commands name it in their own errors; none of them has to load another's code.

export const SERVE_USAGE = `usage: vpn-portal serve [--config FILE]
  serves the portal (Admin API, Node API, metrics); without --config the embedded default configuration`;
export const SECRETS_USAGE = `usage: vpn-portal generate-secrets [--admin-api] [--node N] [--config FILE]
  creates missing keys in DATA/keys (never overwrites one); --node N: only the secret of node N`;
export const NODE_USAGE = `usage: vpn-portal node --config FILE
  runs a VPN node agent (WireGuard, OpenVPN, ProxyGuard) until SIGTERM or SIGINT`;
export const NODE_RESET_USAGE = `usage: vpn-portal node-reset N [--config FILE]
  lets the portal empty node N although this database never held a configuration for it`;
export const DB_USAGE = `usage: vpn-portal db migrate|status [--config FILE]
       vpn-portal db copy --from DATABASE --to DATABASE
  migrate: apply pending database migrations; status: list them, applied or pending;
  copy: copy every table into an empty database (DATABASE: sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/NAME)`;
export const MDM_USAGE = `usage: vpn-portal mdm sync --dry-run [--json] [--config FILE]
       vpn-portal mdm confirm-crl [SHA256] [--json] [--config FILE]
       vpn-portal mdm forget-crl LOCATION [--config FILE]
  sync: reads the MDM inventory (mdmInventory) and prints which devices a pass would retire (and with
  compliance, suspend and resume); changes nothing
  confirm-crl: the revocation lists held because they would retire more than crlMaxRetire at once;
  with SHA256: lets that list retire its devices (at the portal's next refresh)
  forget-crl: forgets which CA the lists of this source (a URL or file of crl) name and how new the
  last was, for a source that serves another CA's lists now (restart the portal after it)`;
export const IMPORT_USAGE = `usage: vpn-portal import eduvpn [--config FILE] [--eduvpn-config DIR] [--eduvpn-data DIR]
                                [--eduvpn-database DATABASE [--eduvpn-database-password-file FILE]]
                                [--node-wireguard-key N=FILE]... [--dry-run]
  eduvpn: bring an eduVPN 3.x server's users, configurations, history and keys into this portal,
  so that the files it issued keep working; --dry-run: print the plan only
  --eduvpn-config DIR: its configuration folder (default /etc/vpn-user-portal)
  --eduvpn-data DIR: its data folder (default /var/lib/vpn-user-portal)
  --eduvpn-database: sqlite:PATH, postgres://USER:PASSWORD@HOST:PORT/NAME or (MariaDB/MySQL)
    mysql://USER:PASSWORD@HOST:PORT/NAME[?socket=PATH] (default sqlite:DIR/db.sqlite of --eduvpn-data)
  --eduvpn-database-password-file FILE: the password of that URL, from a file only its owner may
    read, instead of in the URL (where any local user sees it with ps)
  --node-wireguard-key N=FILE: node N's /etc/vpn-server-node/keys/wireguard.key, copied from the node
  exit code 1: conflicts (listed; nothing written), 2: a usage error or an unreadable deployment
       vpn-portal import eduvpn-config FILE [--node-config FILE]... [--output-dir DIR] [--force]
  eduvpn-config: turns an eduVPN config.php (or the JSON php -r makes of it) into portal.json and
  one node.N.json per node in DIR (default: the current folder), each with the node's config.php
  when given; prints where every option went; replaces an existing file only with --force
  Exit codes: 0 written, 1 the input cannot be converted (nothing written), 2 usage mistake`;
export const ADMIN_KEY_USAGE = `usage: vpn-portal admin-key create --name NAME [--scope read|write|admin] [--profile ID]... [--expires-in DURATION]
                                [--allow CIDR]... [--config FILE]
       vpn-portal admin-key list [--json] [--config FILE]
       vpn-portal admin-key rotate NAME [--grace DURATION] [--expires-in DURATION|never] [--config FILE]
       vpn-portal admin-key revoke NAME [--config FILE]
  create: make an admin key; it is printed once, alone on the last line of output
  list: the keys (never the keys themselves)
  rotate: a new key with the same rights; the old one stays valid for --grace (default PT1H)
  revoke: end every key of that name, at once`;
export const ADMIN_USAGE = `usage: vpn-portal admin COMMAND [ARGUMENTS] [--url URL] [--key-file FILE] [--config FILE] [--json]
  users                                   users with a configuration or an authorization
  disabled-users                          users that are disabled
  configurations USER                     a user's configurations
  connections [--all]                     connected devices (--all: every active configuration)
  connected-users [--all]                 users with a connected device, by profile
  profiles                                the profiles the key may use: protocols, ranges (an extension)
  create USER PROFILE [--format wireguard|wireguard-tcp|openvpn|apple] [--display-name NAME]
         [--expires-in DURATION] [--prefer-tcp] [-o FILE [--force]] [--qr]
         [--public-key KEY] [--csr FILE] [--platform PLATFORM] [--on-demand yes|no]
         [--device-id ID | --serial SERIAL | --mdm-id ID]
                                          a new configuration: to stdout, or to FILE (0600;
                                          an existing FILE only with --force);
                                          --qr prints a WireGuard file as a QR code for a phone;
                                          --public-key/--csr: the device keeps its own key;
                                          --platform ios|macos|windows|android|linux|other;
                                          --on-demand: the Apple profile is always on (or not);
                                          --device-id/--serial/--mdm-id: for that registered
                                          device (replaces its configuration in the profile)
  extend USER CONNECTION_ID [--expires-in DURATION] [-o FILE]
                                          a later expiry, same key (an extension); OpenVPN:
                                          the new certificate, to stdout or FILE
  enrollment-token USER PROFILE [--uses N] [--valid-for DURATION] [--expires-in DURATION]
         [--display-name NAME]
                                          a token a device redeems at {baseUrl}enroll with its
                                          own key (an extension); printed once, on the last line
  enrollment-tokens [--user USER]         the enrollment tokens and their state
  revoke-enrollment-token USER TOKEN_ID   redeeming the token answers 410 from now on
  disable USER [--wait] | enable USER | destroy USER [--wait]
  delete-connection USER CONNECTION_ID [--wait]
                                          a WireGuard public key or an OpenVPN common name;
                                          disable, destroy and delete-connection print what
                                          their revocation receipt says (--wait: once every
                                          node confirmed, exit 3 when it became overdue)
  revocation REVOCATION_ID [--wait]       a revocation receipt: each node's confirmation
  revocations [--state pending|overdue|applied|superseded] [--user USER] [--limit N]
                                          the receipts, newest first (pending: also overdue)
  delete-authorizations USER
  history [--user USER] [--profile ID] [--open|--closed] [--since TIME] [--until TIME]
          [--limit N] [--cursor CURSOR]
                                          the connection history, newest first (an extension)
  who-had IP [--at TIME] [--reason TEXT] [--limit N] [--cursor CURSOR]
                                          who had a tunnel or client address at that moment:
                                          user, profile, configuration, node, connected and
                                          disconnected (an extension)
  attribution IP --at TIME [--port PORT] [--reason TEXT]
                                          who held an address at a moment; with --port the
                                          public address and port of an abuse report, through
                                          the node's NAT then (the reason goes to the audit log)
  stats [--profile ID] [--since DAY] [--until DAY]
                                          daily usage per profile (an extension)
  audit [--user USER] [--key-name NAME] [--since TIME] [--until TIME] [--limit N] [--cursor CURSOR]
                                          the Admin API calls made, refused or failed, newest
                                          first (an extension; needs a key of scope admin)
  admin-key list | admin-key revoke NAME
  admin-key create NAME [--scope read|write|admin] [--profile ID,…] [--expires-in DURATION]
                   [--allow PREFIX,…]
                                          admin keys over the Admin API (scope admin): at most
                                          the calling key's rights; the key printed once, last
  webhook create URL TYPES [--description TEXT]
                                          subscribe URL to TYPES (comma-separated, or '*'); the
                                          signing secret is printed once, on the last line
  webhook list | webhook delete ID | webhook test ID
  webhook rotate ID [--overlap DURATION]  a new secret, printed once; the old one signs too for
                                          the overlap (default P1D)
  webhook deliveries [--webhook ID] [--event-type TYPE] [--state pending|delivered|failed|cancelled]
                     [--since TIME] [--until TIME] [--limit N] [--cursor CURSOR]
                                          the delivery log, newest first, with the last attempt
                                          (webhooks need a key of scope admin)
  device register USER PROFILE PLATFORM [--serial SERIAL] [--mdm-id ID]
                                          register a managed device (ios, macos, windows,
                                          android, linux or other) by serial and/or MDM id
  device list [--user USER] [--profile ID] [--platform P] [--state registered|active|retired]
              [--serial SERIAL] [--mdm-id ID] [--limit N] [--cursor CURSOR]
  device show DEVICE_ID | device retire DEVICE_ID
                                          a device with its configurations; retiring it ends
                                          every configuration of it, for good
  legal-hold create (--user USER | --device-id ID) --reason TEXT --until TIME
                                          keep the user's records past their retention
  legal-hold list | legal-hold release HOLD_ID
                                          (legal holds need a key of scope admin)
The portal: --url, else VPN_PORTAL_URL, else the listen address of the portal's configuration
(--config FILE, or the embedded default). The key: --key-file, else VPN_PORTAL_KEY_FILE, else
DATA/keys/admin-api.key of that configuration.
One command's usage: vpn-portal admin COMMAND --help.
Exit codes: 0 done, 1 the portal refused (its message on stderr), 2 usage or configuration
mistake, 3 the portal could not be reached (with --wait: or the receipt is overdue).`;

export const USAGE = `usage: vpn-portal COMMAND [OPTIONS]     (vpn-portal COMMAND --help for one command)
  serve [--config FILE]                              serve the portal
  generate-secrets [--admin-api] [--node N] [--config FILE]
                                                     create missing keys (never overwrites)
  node --config FILE                                 run a VPN node agent
  node-reset N [--config FILE]                       let the portal empty node N
  db migrate|status [--config FILE]                  database migrations
  db copy --from DATABASE --to DATABASE              copy every table into an empty database
  admin-key create|list|rotate|revoke …              admin keys with scopes (vpn-portal admin-key --help)
  mdm sync --dry-run [--config FILE]                 what the MDM inventory sync would retire now
  mdm confirm-crl [SHA256] [--config FILE]           held revocation lists; confirm one
  mdm forget-crl LOCATION [--config FILE]            a revocation list source that serves another CA now
  import eduvpn [--dry-run] …                        bring an eduVPN server into this portal (vpn-portal import --help)
  import eduvpn-config FILE [--node-config FILE]...  portal.json and node.N.json from eduVPN's config.php
  admin COMMAND …                                    call the Admin API (vpn-portal admin --help)
  --version                                          print the version`;
