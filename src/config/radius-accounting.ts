// `accounting.radius`: the accounting servers with their shared secrets, read while the
// configuration loads (a missing, empty or loosely protected secret refuses the start naming the
// option), and the interim interval and the age at which an unacknowledged record is dropped.
import path from 'node:path';
import { durationMilliseconds } from '../shared/iso-duration.js';
import { boundedMilliseconds, mustParseDuration, parseListenAddress, type Report } from './option-checks.js';
import type { RadiusAccountingSettings, RadiusServer } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';
import { readSecretFile } from './secret-files.js';

const OPTION = 'accounting.radius';
/** RFC 2869 §5.16: an interim interval below 60 s floods the server; above a day says nothing. */
const INTERIM_BOUNDS = { minMs: 60_000, maxMs: 86_400_000, text: 'between PT1M and P1D' } as const;
const MAX_AGE_BOUNDS = { minMs: 3_600_000, maxMs: 90 * 86_400_000, text: 'between PT1H and P90D' } as const;

export function resolveRadiusAccounting(
  raw: ParsedPortalConfig['accounting']['radius'],
  baseDir: string,
  report: Report,
): RadiusAccountingSettings {
  const seen = new Set<string>();
  const servers = raw.servers.map((server, index): RadiusServer => {
    const option = `${OPTION}.servers[${index}]`;
    const { host, port } = parseListenAddress(server.address, `${option}.address`, report);
    if (port === 0) report(`${option}.address`, `"${server.address}": port 0`);
    if (seen.has(server.address)) report(`${option}.address`, `"${server.address}" is named twice`);
    seen.add(server.address);
    return {
      address: server.address,
      host,
      port,
      secret: readSecretFile(
        path.resolve(baseDir, server.secretFile),
        server.secretFile,
        `${option}.secretFile`,
        report,
      ),
      nasIdentifier: server.nasIdentifier ?? null,
    };
  });
  const maxAgeMs = boundedMilliseconds(raw.maxAge, `${OPTION}.maxAge`, MAX_AGE_BOUNDS, report);
  const interimIntervalMs = boundedMilliseconds(
    raw.interimInterval,
    `${OPTION}.interimInterval`,
    INTERIM_BOUNDS,
    report,
  );
  if (maxAgeMs > 0 && durationMilliseconds(mustParseDuration(raw.maxAge)) < interimIntervalMs)
    report(`${OPTION}.maxAge`, `"${raw.maxAge}" is shorter than interimInterval "${raw.interimInterval}"`);
  return { servers, interimIntervalMs, maxAge: mustParseDuration(raw.maxAge), maxAgeText: raw.maxAge };
}
