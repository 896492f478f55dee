// Turns an eduVPN 3.x config.php (already read into JSON, config-php.ts) into this portal's
// portal.json, and a vpn-server-node config.php into the node agent's node.json: options with
// the same name and meaning are kept, the moved ones renamed, and every other one becomes a
// note saying where it went or why it has no counterpart; nothing is dropped silently.
import { WIREGUARD_MTU } from '../config/wireguard-mtu.js';
import { describeEduVpnOption, type EduVpnSection, eduVpnOptionFate } from '../config/eduvpn-options.js';
import type { PhpValue } from './config-php.js';
import { ConversionError } from './conversion-error.js';
import { databaseFromPdo } from './pdo-dsn.js';
import { portalProfileValues, withEduVpnNodeUrlDefault } from './profile-values.js';

type JsonObject = { [key: string]: unknown };

/** A converted file: its document and what the administrator must know about it. */
export interface ConvertedFile {
  readonly document: JsonObject;
  readonly notes: readonly string[];
}

export interface ConvertedPortal extends ConvertedFile {
  /** The node numbers the profiles run on, ascending. */
  readonly nodeNumbers: readonly number[];
}

/** Top-level and WireGuard/Log options that mean the same here (ProfileList entries are handled apart). */
const KEPT: Readonly<Record<'top' | 'WireGuard' | 'Log', readonly string[]>> = {
  top: ['sessionExpiry', 'supportedSessionExpiry', 'caExpiry', 'connectScriptPath'],
  WireGuard: ['listenPort', 'setMtu', 'enableProxy', 'onlyProxy', 'proxyUrl'],
  Log: ['syslogConnectionEvents', 'originatingIp'],
};

/** Every eduVPN 3.x ProfileList option, all of which this portal takes under the same name. */
const PROFILE_OPTIONS = new Set([
  'profileId',
  'displayName',
  'hostName',
  'defaultGateway',
  'dnsServerList',
  'dnsSearchDomainList',
  'routeList',
  'excludeRouteList',
  'aclPermissionList',
  'nodeUrl',
  'onNode',
  'preferredProto',
  'wRangeFour',
  'wRangeSix',
  'wKeepAlive',
  'oRangeFour',
  'oRangeSix',
  'oUdpPortList',
  'oTcpPortList',
  'oExposedUdpPortList',
  'oExposedTcpPortList',
  'oBlockLan',
  'oEnableLog',
  'oListenOn',
  'hideProfile',
  'profilePriority',
]);

/** What an eduVPN portal's config.php becomes here. */
export function convertPortalConfig(config: PhpValue): ConvertedPortal {
  const top = objectAt(config, '(top level)');
  const document: JsonObject = {};
  const notes: string[] = [];
  const kept: string[] = [];
  for (const [name, value] of Object.entries(top)) {
    if (KEPT.top.includes(name)) {
      document[name] = value;
      kept.push(name);
    } else if (name === 'WireGuard' || name === 'Log') {
      const section = convertSection(name, objectAt(value, name), notes);
      if (Object.keys(section.document).length > 0) document[name] = section.document;
      kept.push(...section.kept);
    } else if (name === 'ProfileList') {
      document.ProfileList = convertProfileList(value, notes);
      kept.push(`ProfileList (${(document.ProfileList as unknown[]).length} profiles)`);
    } else if (name === 'Db') {
      convertDatabase(objectAt(value, 'Db'), document, notes);
    } else {
      notes.push(noteForOther('top', name));
    }
  }
  if (document.ProfileList === undefined)
    throw new ConversionError(
      'ProfileList: missing; eduVPN 3.9.7 and later may keep profiles as profiles/*.json next to config.php: add them as a ProfileList array',
    );
  notes.unshift(`kept as they are: ${kept.join(', ')}`);
  notes.push(...TO_SET_IN_PORTAL);
  return { document, notes, nodeNumbers: nodeNumbersOf(document.ProfileList as JsonObject[]) };
}

/** Options config.php has no word on, which an administrator sets for the move. */
const TO_SET_IN_PORTAL = [
  'baseUrl: to set: the public address with the path eduVPN had (https://vpn.example.org/vpn-user-portal/), so Admin API scripts and nodes keep their URLs',
  "adminApi.allowList: to set: the addresses Apache's Require let reach admin-api.php (default: loopback only)",
  'dataDir: the default (./data beside portal.json); copy keys/admin-api.key and keys/node.N.key into DATA/keys, or let vpn-portal import eduvpn bring them',
];

function convertSection(
  section: 'WireGuard' | 'Log',
  options: JsonObject,
  notes: string[],
): { document: JsonObject; kept: string[] } {
  const document: JsonObject = {};
  const kept: string[] = [];
  for (const [name, value] of Object.entries(options)) {
    if (KEPT[section].includes(name)) {
      document[name] = section === 'WireGuard' && name === 'setMtu' ? mtuWithinLimits(value, notes) : value;
      if (document[name] === value) kept.push(`${section}.${name}`);
    } else notes.push(noteForOther(section, name, `${section}.${name}`));
  }
  return { document, kept };
}

/**
 * eduVPN writes any integer as the MTU; this portal takes 1280 to 9000. Below 1280 Linux takes
 * the IPv6 addresses off the interface, so eduVPN's tunnels carried no IPv6 there: the nearest
 * MTU that works is what the administrator meant.
 */
function mtuWithinLimits(value: unknown, notes: string[]): unknown {
  if (typeof value !== 'number' || !Number.isInteger(value)) return value;
  const mtu = Math.min(Math.max(value, WIREGUARD_MTU.min), WIREGUARD_MTU.max);
  if (mtu < value) notes.push(`WireGuard.setMtu: ${value} written as ${mtu}, the largest MTU this portal sets`);
  else if (mtu > value)
    notes.push(
      `WireGuard.setMtu: ${value} written as ${mtu}, the smallest MTU this portal sets: IPv6 needs at least ${WIREGUARD_MTU.min}, and below it Linux takes the IPv6 addresses off the WireGuard interface, so eduVPN's tunnels carried no IPv6 at ${value}`,
    );
  return mtu;
}

function convertProfileList(value: unknown, notes: string[]): JsonObject[] {
  if (!Array.isArray(value)) throw new ConversionError('ProfileList: must be a list of profiles');
  const profiles: JsonObject[] = [];
  for (const [index, entry] of value.entries()) {
    const profile = convertProfile(objectAt(entry as PhpValue, `ProfileList[${index}]`), index, notes);
    if (profile !== null) profiles.push(profile);
  }
  if (profiles.length === 0 && value.length > 0)
    throw new ConversionError(
      'ProfileList: no profile offers a VPN protocol (each needs both wRangeFour and wRangeSix, or both oRangeFour and oRangeSix, set and not empty)',
    );
  withEduVpnNodeUrlDefault(profiles, notes);
  return profiles;
}

/** One ProfileList entry, or null when it offers no protocol (profile-values.ts says why). */
function convertProfile(profile: JsonObject, index: number, notes: string[]): JsonObject | null {
  const kept: JsonObject = {};
  for (const [name, option] of Object.entries(profile)) {
    if (PROFILE_OPTIONS.has(name)) kept[name] = option;
    else notes.push(noteForOther('ProfileList', name, `ProfileList[${index}].${name}`));
  }
  if (JSON.stringify(kept.nodeUrl ?? '').includes('https://'))
    notes.push(
      `ProfileList[${index}].nodeUrl: kept, but the node agent serves the vpn-daemon protocol over plain HTTP (no mutual TLS): change it to http:// on a private network`,
    );
  return portalProfileValues(kept, `ProfileList[${index}]`, notes);
}

/** `Db` names eduVPN's own database, which the import reads; this portal gets a database of its own beside it. */
function convertDatabase(db: JsonObject, document: JsonObject, notes: string[]): void {
  const converted = databaseFromPdo(db);
  if (converted.kind === 'postgres') {
    document.database = converted.portalUrl;
    notes.push(
      `${describeEduVpnOption('Db', { kind: 'renamed', to: 'database', how: converted.portalDescription })}: the same server and account, a database of its own (${converted.portalDatabase}), since this portal's tables share names with eduVPN's; create it (createdb -O ${converted.user || 'USER'} ${converted.portalDatabase}). eduVPN's database (${converted.eduVpnDescription}) is what vpn-portal import eduvpn reads (--eduvpn-database)`,
    );
  } else if (converted.kind === 'sqlite') {
    notes.push(
      `${describeEduVpnOption('Db', { kind: 'renamed', to: 'database', how: 'left at its default, sqlite:DATA/db.sqlite' })}: eduVPN's SQLite file (${converted.eduVpnPath}) is what vpn-portal import eduvpn reads (--eduvpn-database); this portal keeps its own`,
    );
  } else {
    notes.push(
      `${describeEduVpnOption('Db', { kind: 'renamed', to: 'database', how: 'left at its default, sqlite:DATA/db.sqlite' })}: this portal keeps its own database in SQLite or PostgreSQL, not in MariaDB/MySQL (set database to a PostgreSQL URL for several portal instances); eduVPN's MariaDB/MySQL database (${converted.eduVpnDescription}) is what vpn-portal import eduvpn reads (--eduvpn-database, with the password of Db.dbPass)`,
    );
  }
}

/** The note for an option that is not kept: where the table says it went, or that it is unknown. */
function noteForOther(section: EduVpnSection, name: string, shown: string = name): string {
  const fate = eduVpnOptionFate(section, name);
  if (fate !== null) return describeEduVpnOption(shown, fate);
  return `"${shown}": not an eduVPN 3.x option this converter knows, nor one of this portal: left out`;
}

/** The nodes of every profile: `onNode`, or one per `nodeUrl` entry (as eduVPN and this portal default it). */
function nodeNumbersOf(profiles: readonly JsonObject[]): number[] {
  const numbers = new Set<number>();
  for (const profile of profiles) {
    const onNode = profile.onNode;
    if (typeof onNode === 'number') {
      numbers.add(onNode);
    } else if (Array.isArray(onNode)) {
      for (const node of onNode) if (typeof node === 'number') numbers.add(node);
    } else {
      const count = Array.isArray(profile.nodeUrl) ? profile.nodeUrl.length : 1;
      for (let node = 0; node < count; node++) numbers.add(node);
    }
  }
  return [...numbers].sort((a, b) => a - b);
}

function objectAt(value: PhpValue | unknown, option: string): JsonObject {
  if (Array.isArray(value) && value.length === 0) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConversionError(`${option}: must be an array of named options (${describeValue(value)} found)`);
  return value as JsonObject;
}

function describeValue(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return `a ${typeof value}`;
}
