// Values of a ProfileList entry that eduVPN takes and this portal's loader refuses, or reads
// otherwise: the converter writes each as this portal spells what eduVPN did with it (a bare
// address as a host prefix, an empty range list as the protocol off, eduVPN's own nodeUrl
// default), with a note, so that a valid eduVPN configuration converts without hand edits.
import { isIP } from 'node:net';

type JsonObject = { [key: string]: unknown };

/** eduVPN's default `nodeUrl` (ProfileConfig::nodeUrl); this portal's own is http://127.0.0.1:41194. */
export const EDUVPN_DEFAULT_NODE_URL = 'http://localhost:41194';

/**
 * The profile as this portal takes it, or null when it offers no VPN protocol: eduVPN lists such
 * a profile but cannot issue a configuration for it, and this portal refuses one.
 */
export function portalProfileValues(profile: JsonObject, option: string, notes: string[]): JsonObject | null {
  withHostPrefixes(profile, 'routeList', option, notes);
  withHostPrefixes(profile, 'excludeRouteList', option, notes);
  withDisplayName(profile, option, notes);
  const wireGuard = protocolOrOff(profile, 'WireGuard', ['wRangeFour', 'wRangeSix'], option, notes);
  const openVpn = protocolOrOff(profile, 'OpenVPN', ['oRangeFour', 'oRangeSix'], option, notes);
  if (wireGuard || openVpn) return profile;
  notes.push(
    `${option} (${String(profile.profileId)}): left out: it offers no VPN protocol (neither both WireGuard ranges nor both OpenVPN ranges are set and non-empty), so eduVPN could issue no configuration for it, and this portal refuses such a profile; vpn-portal import eduvpn names what eduVPN's database still holds of it as conflicts`,
  );
  return null;
}

/**
 * eduVPN's `Ip::fromIpPrefix` takes an address without a prefix length as one host (/32, /128);
 * this portal's routes always carry the length.
 */
function withHostPrefixes(profile: JsonObject, name: string, option: string, notes: string[]): void {
  const routes = profile[name];
  if (!Array.isArray(routes)) return;
  const changed: string[] = [];
  profile[name] = routes.map((route: unknown) => {
    if (typeof route !== 'string') return route;
    const family = isIP(route);
    if (family === 0) return route;
    const prefix = `${route}/${family === 4 ? 32 : 128}`;
    changed.push(`${route} as ${prefix}`);
    return prefix;
  });
  if (changed.length > 0)
    notes.push(
      `${option}.${name}: written ${changed.join(', ')}: eduVPN takes an address without a prefix length as one host; this portal wants the length`,
    );
}

/** An empty `displayName` (which eduVPN shows as it is) becomes the profile's id, which people can tell apart. */
function withDisplayName(profile: JsonObject, option: string, notes: string[]): void {
  if (profile.displayName !== '' || typeof profile.profileId !== 'string') return;
  profile.displayName = profile.profileId;
  notes.push(
    `${option}.displayName: empty in eduVPN, written as the profile's id ("${profile.profileId}"): this portal shows a name, and wants one`,
  );
}

/**
 * Whether the profile offers the protocol. eduVPN offers it only when both ranges are set and
 * not empty lists (ProfileConfig::wSupport/oSupport: newer eduVPN turns a protocol off with
 * `[]`); this portal refuses an empty list and a range without its pair, so a protocol eduVPN has
 * off loses both options, with a note.
 */
function protocolOrOff(
  profile: JsonObject,
  protocol: 'WireGuard' | 'OpenVPN',
  names: readonly [string, string],
  option: string,
  notes: string[],
): boolean {
  const given = names.filter((name) => profile[name] !== undefined);
  if (given.length === 0) return false;
  const set = given.filter((name) => !(Array.isArray(profile[name]) && profile[name].length === 0));
  if (set.length === 2) return true;
  const shown = given.map((name) => `${option}.${name} (${JSON.stringify(profile[name])})`);
  for (const name of given) delete profile[name];
  notes.push(
    `${shown.join(', ')}: left out: eduVPN offers ${protocol} only when both ${names.join(' and ')} are set and not empty lists, so it had ${protocol} off for this profile; so has this portal`,
  );
  return false;
}

/**
 * Every profile that leaves `nodeUrl` out gets eduVPN's default written in: this portal's own
 * default differs (127.0.0.1), and a node has one URL in every profile, so a profile that spells
 * out eduVPN's default would otherwise disagree with one that left it out.
 */
export function withEduVpnNodeUrlDefault(profiles: readonly JsonObject[], notes: string[]): void {
  const defaulted = profiles.filter((profile) => profile.nodeUrl === undefined);
  for (const profile of defaulted) profile.nodeUrl = EDUVPN_DEFAULT_NODE_URL;
  if (defaulted.length > 0)
    notes.push(
      `nodeUrl: written as ${EDUVPN_DEFAULT_NODE_URL}, eduVPN's default, in the profiles that left it out (${defaulted.map((profile) => String(profile.profileId)).join(', ')}): this portal's own default is http://127.0.0.1:41194, and a node has one URL in every profile`,
    );
}
