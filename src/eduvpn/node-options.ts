// Turns a vpn-server-node config.php into the node agent's node.json, or, without one, writes
// what the portal's config.php tells of a node and names the rest: the agent replaces
// vpn-server-node and vpn-daemon, and keeps the node's own keys where the node has them.
import { isIP } from 'node:net';
import type { PhpValue } from './config-php.js';
import { ConversionError } from './conversion-error.js';
import type { ConvertedFile } from './portal-options.js';

/** Where vpn-server-node keeps the node secret (a copy of the portal's node.N.key) on Debian and Fedora. */
export const EDUVPN_NODE_KEY_FILE = '/etc/vpn-server-node/keys/node.key';
const EDUVPN_WIREGUARD_KEY_FILE = '/etc/vpn-server-node/keys/wireguard.key';

type JsonObject = { [key: string]: unknown };

/** The node number a node config.php names (0 when it names none, as vpn-server-node). */
export function nodeNumberOf(config: PhpValue): number {
  const nodeNumber = objectOf(config).nodeNumber ?? 0;
  if (typeof nodeNumber !== 'number' || !Number.isInteger(nodeNumber) || nodeNumber < 0)
    throw new ConversionError('nodeNumber: must be a node number (0, 1, …)');
  return nodeNumber;
}

/** A node config.php (`apiUrl`, `nodeNumber`, `profileIdList`, `preferAes`, `vpnUser`, `vpnGroup`) as node.json. */
export function convertNodeConfig(config: PhpValue, portal: JsonObject): ConvertedFile {
  const options = objectOf(config);
  const nodeNumber = nodeNumberOf(config);
  const listen = listenOf(portal, nodeNumber);
  const document: JsonObject = { nodeNumber, nodeKeyFile: EDUVPN_NODE_KEY_FILE, ...listen.document };
  const openVpn: JsonObject = {};
  const notes: string[] = [];
  for (const [name, value] of Object.entries(options)) {
    switch (name) {
      case 'nodeNumber':
        break;
      case 'apiUrl':
      case 'profileIdList':
        document[name] = value;
        notes.push(`${name}: kept as it is`);
        break;
      case 'preferAes':
        if (typeof value !== 'boolean') throw new ConversionError('preferAes: must be true or false');
        openVpn.preferAes = value ? 'yes' : 'no';
        notes.push(
          `"preferAes": here it is "OpenVPN.preferAes" ("${openVpn.preferAes}"; absent: "auto", as vpn-server-node)`,
        );
        break;
      case 'vpnUser':
      case 'vpnGroup': {
        const renamed = name === 'vpnUser' ? 'user' : 'group';
        openVpn[renamed] = value;
        notes.push(`"${name}": here it is "OpenVPN.${renamed}"`);
        break;
      }
      default:
        notes.push(`"${name}": not a vpn-server-node option this converter knows, nor one of the node agent: left out`);
    }
  }
  if (Object.keys(openVpn).length > 0) document.OpenVPN = openVpn;
  return { document, notes: [...notes, listen.note, ...nodeNotes()] };
}

/** node.N.json for a node whose config.php was not given: what is known, and what to set. */
export function nodeConfigWithoutFile(nodeNumber: number, portal: JsonObject): ConvertedFile {
  const listen = listenOf(portal, nodeNumber);
  return {
    document: { nodeNumber, nodeKeyFile: EDUVPN_NODE_KEY_FILE, ...listen.document },
    notes: [
      `no node config.php given (--node-config): written from what the portal's config.php tells`,
      "apiUrl: to set: the portal's Node API, {baseUrl}node-api.php (vpn-server-node's apiUrl)",
      'profileIdList: absent, so every profile that names this node (as vpn-server-node with [])',
      'OpenVPN.preferAes, OpenVPN.user, OpenVPN.group: the defaults (auto, nobody, nogroup); vpn-server-node used openvpn/openvpn on Fedora',
      listen.note,
      ...nodeNotes(),
    ],
  };
}

/** What every node needs to know: its keys stay where vpn-server-node kept them. */
function nodeNotes(): string[] {
  return [
    `nodeKeyFile: the node's own ${EDUVPN_NODE_KEY_FILE} (a copy of the portal's node.N.key); the agent's user must read it`,
    `the node's WireGuard private key (${EDUVPN_WIREGUARD_KEY_FILE}) must come along, or files issued by eduVPN stop working: vpn-portal import eduvpn brings it (moving-from-eduvpn.md)`,
  ];
}

/**
 * Where the agent serves the vpn-daemon protocol: where the portal's nodeUrl for this node points
 * (the first profile on the node that names one), when that is an address the agent can bind.
 */
function listenOf(portal: JsonObject, nodeNumber: number): { document: JsonObject; note: string } {
  const nodeUrl = nodeUrlOf(portal, nodeNumber);
  const url = nodeUrl === null ? null : parseUrl(nodeUrl);
  if (url === null)
    return { document: {}, note: 'listen: the default (127.0.0.1:41194): no profile gives this node a nodeUrl' };
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (host === 'localhost' || isIP(host) !== 0) {
    const listen = { host: host === 'localhost' ? '127.0.0.1' : host, port };
    return { document: { listen }, note: `listen: ${nodeUrl}, this node's nodeUrl in portal.json` };
  }
  return {
    document: { listen: { port } },
    note: `listen.host: to set: the address ${host} (this node's nodeUrl, ${nodeUrl}) has on this node`,
  };
}

/** nodeUrl at the node's position in `onNode` of the first profile that runs on it. */
function nodeUrlOf(portal: JsonObject, nodeNumber: number): string | null {
  const profiles = Array.isArray(portal.ProfileList) ? (portal.ProfileList as JsonObject[]) : [];
  for (const profile of profiles) {
    const nodeUrls = listOf(profile.nodeUrl ?? 'http://127.0.0.1:41194');
    const onNode = profile.onNode === undefined ? nodeUrls.map((_, index) => index) : listOf(profile.onNode);
    const position = onNode.indexOf(nodeNumber);
    if (position < 0) continue;
    const nodeUrl = nodeUrls.length === 1 ? nodeUrls[0] : nodeUrls[position];
    if (typeof nodeUrl === 'string') return nodeUrl;
  }
  return null;
}

function parseUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

function objectOf(config: PhpValue): JsonObject {
  if (Array.isArray(config) && config.length === 0) return {};
  if (typeof config !== 'object' || config === null || Array.isArray(config))
    throw new ConversionError('(top level): must be an array of named options');
  return config as JsonObject;
}
