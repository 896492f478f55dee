// Which configuration file `create` returns: content negotiation on the Accept header
// (RFC 9110: lists, q values, `type/*`, `*/*`) against the formats the profile offers, in the
// server's preference order (reference §5.3). The reference's exact-token matching is the
// special case of an Accept header without parameters.
import { CONFIGURATION_MEDIA_TYPES, type ConfigFormat } from '../../protocol/admin-api.js';

export type { ConfigFormat } from '../../protocol/admin-api.js';

export const MIME_TYPES: Readonly<Record<ConfigFormat, string>> = CONFIGURATION_MEDIA_TYPES;

/** Formats a client only gets when it names them: never chosen for an absent Accept or a wildcard. */
const EXPLICIT_ONLY: ReadonlySet<ConfigFormat> = new Set(['wireguard+tcp', 'apple']);

export interface OfferedFormat {
  readonly format: ConfigFormat;
  /** Whether the format can run over TCP, for `prefer_tcp=yes`. */
  readonly tcp: boolean;
}

interface MediaRange {
  readonly type: string;
  readonly subtype: string;
  readonly q: number;
}

/** Parses an Accept header; malformed entries are ignored, as HTTP servers commonly do. */
export function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const item of header.split(',')) {
    const [mediaType = '', ...parameters] = item.split(';').map((part) => part.trim());
    const match = /^([\w.+*-]+)\/([\w.+*-]+)$/.exec(mediaType.toLowerCase());
    if (match === null) continue;
    let q = 1;
    for (const parameter of parameters) {
      const qMatch = /^q\s*=\s*([01](?:\.\d{0,3})?)$/i.exec(parameter);
      if (qMatch !== null) q = Math.min(1, Number(qMatch[1]));
    }
    ranges.push({ type: match[1] ?? '', subtype: match[2] ?? '', q });
  }
  return ranges;
}

/**
 * The formats to try, best first. `offered` is in the server's preference order. An absent
 * or empty Accept header accepts every format that is not explicit-only.
 */
export function chooseFormats(
  accept: string | undefined,
  offered: readonly OfferedFormat[],
  preferTcp: boolean,
): ConfigFormat[] {
  const ranges =
    accept === undefined || accept.trim() === '' ? [{ type: '*', subtype: '*', q: 1 }] : parseAccept(accept);
  const candidates = offered
    .map((entry, serverRank) => ({ ...entry, serverRank, q: qualityOf(entry.format, ranges) }))
    .filter((entry) => entry.q > 0);
  candidates.sort(
    (a, b) => b.q - a.q || (preferTcp ? Number(b.tcp) - Number(a.tcp) : 0) || a.serverRank - b.serverRank,
  );
  return candidates.map((entry) => entry.format);
}

/** The q value of the most specific media range matching the format (0 when none does). */
function qualityOf(format: ConfigFormat, ranges: readonly MediaRange[]): number {
  const [type, subtype] = MIME_TYPES[format].split('/') as [string, string];
  let best: { specificity: number; q: number } | null = null;
  for (const range of ranges) {
    const specificity =
      range.type === type && range.subtype === subtype
        ? 2
        : range.type === type && range.subtype === '*'
          ? 1
          : range.type === '*' && range.subtype === '*'
            ? 0
            : -1;
    if (specificity < 0 || (specificity < 2 && EXPLICIT_ONLY.has(format))) continue;
    if (best === null || specificity > best.specificity) best = { specificity, q: range.q };
  }
  return best?.q ?? 0;
}

export function describeNoCommonFormat(accept: string | undefined, offered: readonly OfferedFormat[]): string {
  const server = offered.map((entry) => MIME_TYPES[entry.format]).join(',') || 'None';
  const client = accept === undefined || accept.trim() === '' ? 'None' : accept.trim();
  return `no common VPN protocol [CLIENT=${client} SERVER=${server}]`;
}
