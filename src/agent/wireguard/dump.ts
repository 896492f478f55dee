// Reads `wg show IF dump`: the interface and every peer with its endpoint, handshake and counters.
import type { WireGuardKey } from '../../shared/ids.js';
import { Secret } from '../../shared/secret.js';
import { isWireGuardKey } from '../../wireguard/keys.js';

export interface WgInterfaceState {
  readonly privateKey: Secret | null;
  readonly publicKey: WireGuardKey | null;
  readonly listenPort: number;
}

/** One peer as the WireGuard interface reports it. */
export interface WgPeer {
  readonly publicKey: WireGuardKey;
  readonly allowedIps: readonly string[];
  /** Where the peer's last authenticated packet came from (`IP:port`, IPv6 in brackets); null before any. */
  readonly endpoint: string | null;
  /** Null when no handshake happened since the interface was configured. */
  readonly latestHandshake: Date | null;
  /** Received from the peer: the client's upload, the daemon protocol's `bytes_in`. */
  readonly bytesReceived: number;
  /** Sent to the peer: the daemon protocol's `bytes_out`. */
  readonly bytesSent: number;
}

/** A peer as the agent lists it: with the first handshake of its current run (src/agent/wireguard/online-runs.ts). */
export interface ListedPeer extends WgPeer {
  /** Null without a handshake. */
  readonly onlineSince: Date | null;
}

export interface WgDump {
  readonly interface: WgInterfaceState;
  readonly peers: readonly WgPeer[];
}

export class WgDumpFormatError extends Error {
  constructor(lineNumber: number, reason: string) {
    super(`unexpected "wg show dump" output on line ${lineNumber}: ${reason}`);
    this.name = 'WgDumpFormatError';
  }
}

const NONE = '(none)';

/**
 * Parses `wg show IFNAME dump`: a tab-separated interface line (private key, public key, listen
 * port, fwmark), then one line per peer (public key, preshared key, endpoint, allowed IPs,
 * latest handshake in Unix seconds or 0, bytes received, bytes sent, keepalive).
 */
export function parseWgDump(output: string): WgDump {
  const lines = output.split('\n').filter((line) => line !== '');
  const [interfaceLine, ...peerLines] = lines;
  if (interfaceLine === undefined) throw new WgDumpFormatError(1, 'no interface line');

  const interfaceFields = interfaceLine.split('\t');
  if (interfaceFields.length !== 4) throw new WgDumpFormatError(1, `expected 4 fields, got ${interfaceFields.length}`);
  const [privateKeyText = NONE, publicKeyText = NONE, listenPortText = '0'] = interfaceFields;

  return {
    interface: {
      privateKey: privateKeyText === NONE ? null : new Secret(privateKeyText),
      publicKey: isWireGuardKey(publicKeyText) ? publicKeyText : null,
      listenPort: parseCounter(listenPortText, 1, 'listen port'),
    },
    peers: peerLines.map((line, index) => parsePeerLine(line, index + 2)),
  };
}

function parsePeerLine(line: string, lineNumber: number): WgPeer {
  const fields = line.split('\t');
  if (fields.length !== 8) throw new WgDumpFormatError(lineNumber, `expected 8 fields, got ${fields.length}`);
  const [
    publicKeyText = '',
    ,
    endpointText = NONE,
    allowedIpsText = NONE,
    handshakeText = '0',
    receivedText = '0',
    sentText = '0',
  ] = fields;

  const publicKey = publicKeyText;
  if (!isWireGuardKey(publicKey)) throw new WgDumpFormatError(lineNumber, 'invalid peer public key');
  const handshakeSeconds = parseCounter(handshakeText, lineNumber, 'latest handshake');

  return {
    publicKey,
    allowedIps: allowedIpsText === NONE ? [] : allowedIpsText.split(','),
    endpoint: endpointText === NONE ? null : endpointText,
    latestHandshake: handshakeSeconds === 0 ? null : new Date(handshakeSeconds * 1000),
    bytesReceived: parseCounter(receivedText, lineNumber, 'bytes received'),
    bytesSent: parseCounter(sentText, lineNumber, 'bytes sent'),
  };
}

function parseCounter(text: string, lineNumber: number, what: string): number {
  if (!/^[0-9]+$/.test(text)) throw new WgDumpFormatError(lineNumber, `invalid ${what}`);
  return Number(text);
}
