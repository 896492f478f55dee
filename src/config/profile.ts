// One entry of `ProfileList`: which nodes it runs on, which VPN protocols it offers and each
// node's client ranges, checked so that a profile that could never hand out a configuration
// refuses the start naming the option. Checks across profiles are in profile-list.ts.
import { isIP } from 'node:net';
import { asNodeNumber, asProfileId } from '../shared/ids.js';
import { poolCapacity } from '../wireguard/address-pool.js';
import { checkPrefix, listOf, tryParsePrefix, type Report } from './option-checks.js';
import { checkDnsServers, checkHostName, checkSearchDomains } from './client-file-values.js';
import type { Profile, ProfileNode } from './portal-config.js';
import type { ParsedProfile } from './schema.js';

/** The protocols a profile offers, and how many OpenVPN processes share its ranges on a node. */
interface ProfileProtocols {
  readonly wireGuardEnabled: boolean;
  readonly openVpnEnabled: boolean;
  readonly preferredProto: Profile['preferredProto'];
  readonly processCount: number;
}

export function resolveProfile(raw: ParsedProfile, option: string, report: Report): Profile {
  const onNode = resolveOnNode(raw, option, report);
  const protocols = resolveProtocols(raw, option, report);
  checkPerNodeListLengths(raw, onNode, option, report);
  for (const [index, route] of raw.routeList.entries()) checkPrefix(route, `${option}.routeList[${index}]`, report);
  for (const [index, route] of raw.excludeRouteList.entries())
    checkPrefix(route, `${option}.excludeRouteList[${index}]`, report);
  checkDnsServers(raw.dnsServerList, `${option}.dnsServerList`, report);
  checkSearchDomains(raw.dnsSearchDomainList, `${option}.dnsSearchDomainList`, report);
  const nodes = onNode.map((nodeNumber, position) =>
    resolveProfileNode(raw, nodeNumber, position, protocols, option, report),
  );
  return {
    profileId: asProfileId(raw.profileId),
    displayName: raw.displayName,
    defaultGateway: raw.defaultGateway,
    dnsServerList: raw.dnsServerList,
    dnsSearchDomainList: raw.dnsSearchDomainList,
    routeList: raw.routeList,
    excludeRouteList: raw.excludeRouteList,
    aclPermissionList: raw.aclPermissionList,
    preferredProto: protocols.preferredProto,
    wireGuard: protocols.wireGuardEnabled ? { keepAlive: raw.wKeepAlive } : null,
    openVpn: protocols.openVpnEnabled
      ? {
          udpPortList: raw.oUdpPortList,
          tcpPortList: raw.oTcpPortList,
          exposedUdpPortList: raw.oExposedUdpPortList,
          exposedTcpPortList: raw.oExposedTcpPortList,
          blockLan: raw.oBlockLan,
          enableLog: raw.oEnableLog,
        }
      : null,
    appleOnDemand:
      raw.appleOnDemand === undefined
        ? null
        : { trustedSsids: raw.appleOnDemand.trustedSsids, probeUrl: raw.appleOnDemand.probeUrl ?? null },
    nodes,
  };
}

/** The node numbers the profile runs on: `onNode`, or one per `nodeUrl` entry. */
function resolveOnNode(raw: ParsedProfile, option: string, report: Report): number[] {
  const nodeUrls = listOf(raw.nodeUrl);
  const onNode = raw.onNode === undefined ? nodeUrls.map((_, index) => index) : listOf(raw.onNode);
  if (new Set(onNode).size !== onNode.length) report(`${option}.onNode`, 'lists a node number twice');
  return onNode;
}

function resolveProtocols(raw: ParsedProfile, option: string, report: Report): ProfileProtocols {
  const wireGuardEnabled = bothOrNeither(
    raw.wRangeFour,
    raw.wRangeSix,
    'WireGuard needs both wRangeFour and wRangeSix',
    option,
    report,
  );
  const openVpnEnabled = bothOrNeither(
    raw.oRangeFour,
    raw.oRangeSix,
    'OpenVPN needs both oRangeFour and oRangeSix',
    option,
    report,
  );
  if (!wireGuardEnabled && !openVpnEnabled)
    report(option, 'the profile offers no VPN protocol: set wRangeFour and wRangeSix, or oRangeFour and oRangeSix');
  // As the reference: OpenVPN when the profile has both, else the only one it has.
  const preferredProto = raw.preferredProto ?? (openVpnEnabled ? 'openvpn' : 'wireguard');
  if (preferredProto === 'wireguard' && !wireGuardEnabled && openVpnEnabled)
    report(`${option}.preferredProto`, 'the profile has no WireGuard ranges');
  if (preferredProto === 'openvpn' && !openVpnEnabled && wireGuardEnabled)
    report(`${option}.preferredProto`, 'the profile has no OpenVPN ranges');
  const processCount = openVpnEnabled ? checkOpenVpnPorts(raw, option, report) : 1;
  return { wireGuardEnabled, openVpnEnabled, preferredProto, processCount };
}

/** A per-node list with more entries than the profile has nodes means a node was forgotten in onNode (or nodeUrl). */
function checkPerNodeListLengths(raw: ParsedProfile, onNode: readonly number[], option: string, report: Report): void {
  const perNodeLists = {
    hostName: raw.hostName,
    nodeUrl: raw.nodeUrl,
    wRangeFour: raw.wRangeFour,
    wRangeSix: raw.wRangeSix,
    oRangeFour: raw.oRangeFour,
    oRangeSix: raw.oRangeSix,
    oListenOn: raw.oListenOn,
  };
  for (const [name, value] of Object.entries(perNodeLists)) {
    if (Array.isArray(value) && value.length > onNode.length) {
      report(
        `${option}.${name}`,
        `has ${value.length} entries but the profile runs on ${onNode.length} node(s) (onNode: [${onNode.join(', ')}])`,
      );
    }
  }
}

/** The profile on its `position`th node: that node's entry of each per-node list (or the one value for all). */
function resolveProfileNode(
  raw: ParsedProfile,
  nodeNumber: number,
  position: number,
  protocols: ProfileProtocols,
  option: string,
  report: Report,
): ProfileNode {
  const pick = (name: string, value: string | string[] | undefined): string => {
    const values = listOf(value ?? []);
    const picked = typeof value === 'string' ? value : values[position];
    if (picked === undefined)
      report(`${option}.${name}`, `has no value for node ${nodeNumber} (position ${position} of onNode)`);
    return picked ?? '';
  };
  const wireGuard = protocols.wireGuardEnabled
    ? { rangeFour: pick('wRangeFour', raw.wRangeFour), rangeSix: pick('wRangeSix', raw.wRangeSix) }
    : null;
  if (wireGuard !== null) {
    checkPrefix(wireGuard.rangeFour, `${option}.wRangeFour`, report, 4);
    checkPrefix(wireGuard.rangeSix, `${option}.wRangeSix`, report, 6);
    checkPoolFits(wireGuard.rangeFour, wireGuard.rangeSix, option, report);
  }
  const openVpn = protocols.openVpnEnabled
    ? {
        rangeFour: pick('oRangeFour', raw.oRangeFour),
        rangeSix: pick('oRangeSix', raw.oRangeSix),
        listenOn: pick('oListenOn', raw.oListenOn),
      }
    : null;
  if (openVpn !== null) checkOpenVpnRanges(openVpn, protocols.processCount, option, report);
  const hostName = pick('hostName', raw.hostName);
  if (hostName !== '') checkHostName(hostName, `${option}.hostName`, report);
  return {
    nodeNumber: asNodeNumber(nodeNumber),
    nodeUrl: pick('nodeUrl', raw.nodeUrl).replace(/\/+$/, ''),
    hostName,
    wireGuard,
    openVpn,
  };
}

/**
 * A pair of ranges must hold at least one client and an IPv6 partner for every IPv4 client
 * address (reference §6.2); otherwise every create on it would fail, so refuse it at start.
 */
function checkPoolFits(rangeFour: string, rangeSix: string, option: string, report: Report): void {
  const four = tryParsePrefix(rangeFour);
  const six = tryParsePrefix(rangeSix);
  if (four?.family !== 4 || six?.family !== 6) return; // already reported by checkPrefix
  try {
    poolCapacity(rangeFour, rangeSix);
  } catch (error) {
    // IPv4 /31 and /32 leave no client address; any other failure is an IPv6 range too small to pair.
    report(`${option}.${four.length > 30 ? 'wRangeFour' : 'wRangeSix'}`, (error as Error).message);
  }
}

function bothOrNeither(four: unknown, six: unknown, message: string, option: string, report: Report): boolean {
  if ((four === undefined) !== (six === undefined)) report(option, message);
  return four !== undefined && six !== undefined;
}

const PROCESS_COUNTS = [1, 2, 4, 8, 16, 32, 64];

/** One process per port (reference §8.4): their number must split the ranges evenly. Returns it. */
function checkOpenVpnPorts(raw: ParsedProfile, option: string, report: Report): number {
  for (const name of ['oUdpPortList', 'oTcpPortList', 'oExposedUdpPortList', 'oExposedTcpPortList'] as const) {
    if (new Set(raw[name]).size !== raw[name].length) report(`${option}.${name}`, 'lists a port twice');
  }
  const count = raw.oUdpPortList.length + raw.oTcpPortList.length;
  if (!PROCESS_COUNTS.includes(count)) {
    report(
      `${option}.oUdpPortList`,
      `oUdpPortList and oTcpPortList together have ${count} port(s); one OpenVPN process runs per port and their number must be 1, 2, 4, 8, 16, 32 or 64`,
    );
    return 1;
  }
  return count;
}

/** Each process gets an equal part of oRangeFour (at least one client) and a /112 of oRangeSix. */
function checkOpenVpnRanges(
  range: { rangeFour: string; rangeSix: string; listenOn: string },
  processCount: number,
  option: string,
  report: Report,
): void {
  checkPrefix(range.rangeFour, `${option}.oRangeFour`, report, 4);
  checkPrefix(range.rangeSix, `${option}.oRangeSix`, report, 6);
  const extraBits = Math.log2(processCount);
  const four = tryParsePrefix(range.rangeFour);
  if (four?.family === 4 && four.length + extraBits > 29) {
    report(
      `${option}.oRangeFour`,
      `"${range.rangeFour}" is too small for ${processCount} OpenVPN process(es): each needs at least a /29`,
    );
  }
  const six = tryParsePrefix(range.rangeSix);
  if (six?.family === 6 && six.length > 112 - extraBits) {
    report(
      `${option}.oRangeSix`,
      `"${range.rangeSix}" is too small for ${processCount} OpenVPN process(es): each needs a /112, so the prefix may be at most /${112 - extraBits}`,
    );
  }
  if (!isIP(range.listenOn)) report(`${option}.oListenOn`, `"${range.listenOn}" is not an IP address`);
}
