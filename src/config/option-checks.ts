// The checks every section of the configuration shares (prefixes, durations within bounds,
// listen addresses, retire limits), so each section's module reports a bad value the same way.
import { parseIsoDuration, durationMilliseconds, type IsoDuration } from '../shared/iso-duration.js';
import { parsePrefix, type IpPrefix } from '../net/ip-prefix.js';
import { ConfigError } from './config-error.js';
import type { RetireLimit } from './portal-config.js';

/** Records a problem with `option`; loading goes on so that every problem is reported at once. */
export type Report = (option: string, message: string) => void;
/** Collects the start warnings of secret files others may read (secret-files.ts). */
export type WarnOfSecretFile = (option: string, file: string) => void;

/** A duration's lowest and highest value in milliseconds, and how an error message says them. */
export interface DurationBounds {
  readonly minMs: number;
  readonly maxMs: number;
  readonly text: string;
}

export function checkPrefix(text: string, option: string, report: Report, family?: 4 | 6): void {
  const prefix = tryParsePrefix(text);
  if (prefix === null) report(option, `"${text}" is not an IP prefix such as 10.0.0.0/24`);
  else if (family !== undefined && prefix.family !== family) report(option, `"${text}" is not an IPv${family} prefix`);
}

export function tryParsePrefix(text: string): IpPrefix | null {
  try {
    return parsePrefix(text);
  } catch {
    return null;
  }
}

export function mustParseDuration(text: string): IsoDuration {
  const duration = parseIsoDuration(text);
  if (duration === null) throw new ConfigError(`invalid duration ${text}`); // unreachable: the schema checked it
  return duration;
}

export function boundedMilliseconds(text: string, option: string, bounds: DurationBounds, report: Report): number {
  const milliseconds = durationMilliseconds(mustParseDuration(text));
  if (milliseconds < bounds.minMs || milliseconds > bounds.maxMs) report(option, `"${text}" must be ${bounds.text}`);
  return milliseconds;
}

/** `HOST:PORT` (IPv6 in brackets), as the schema checked it. */
export function parseListenAddress(text: string, option: string, report: Report): { host: string; port: number } {
  const split = text.lastIndexOf(':');
  const host = text.slice(0, split).replace(/^\[(.*)\]$/, '$1');
  const port = Number(text.slice(split + 1));
  if (port > 65535) report(option, `"${text}": port ${port} is above 65535`);
  return { host, port };
}

/** A retire limit (`maxRetirePerPass`, `crlMaxRetire`): a count, or a percentage above 0 and at most 100. */
export function parseRetireLimit(limit: number | string, option: string, report: Report): RetireLimit {
  if (typeof limit === 'number') return { kind: 'count', count: limit };
  const percent = Number(limit.slice(0, -1));
  if (percent <= 0 || percent > 100) report(option, `"${limit}" must be more than 0% and at most 100%`);
  return { kind: 'percent', percent };
}

export function listOf<T>(value: T | T[]): T[] {
  return Array.isArray(value) ? value : [value];
}
