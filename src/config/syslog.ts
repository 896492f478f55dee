// `accounting.syslog`: the collectors that hear of every session start and stop. Checked at start
// so a typo never silently loses the messages: a TLS collector needs its CA file (read now, a PEM
// certificate), and the CA and server name mean something only for TLS.
import { readFileSync } from 'node:fs';
import { hostname as machineHostname } from 'node:os';
import path from 'node:path';
import { parseListenAddress, type Report } from './option-checks.js';
import type { PortalConfig, SyslogCollectorConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';

type RawCollector = ParsedPortalConfig['accounting']['syslog']['collectors'][number];

/** `keepsClientAddress`: `Log.originatingIp`, the default of each collector's `clientAddress`. */
export function resolveSyslog(
  raw: ParsedPortalConfig['accounting']['syslog'],
  keepsClientAddress: boolean,
  baseDir: string,
  report: Report,
): PortalConfig['accounting']['syslog'] {
  return {
    enterpriseNumber: raw.enterpriseNumber,
    collectors: raw.collectors.map((collector, index) =>
      resolveCollector(
        collector,
        collector.clientAddress ?? keepsClientAddress,
        `accounting.syslog.collectors[${index}]`,
        baseDir,
        report,
      ),
    ),
  };
}

function resolveCollector(
  raw: RawCollector,
  clientAddress: boolean,
  option: string,
  baseDir: string,
  report: Report,
): SyslogCollectorConfig {
  const { host, port } = parseListenAddress(raw.address, `${option}.address`, report);
  if (port === 0) report(`${option}.address`, `"${raw.address}": port 0 is no collector's port`);
  const common = {
    host,
    port,
    facility: raw.facility,
    appName: raw.appName,
    hostname: raw.hostname ?? defaultHostname(),
    structuredData: raw.structuredData,
    clientAddress,
    queueSize: raw.queueSize,
  };
  if (raw.transport !== 'tls') {
    if (raw.caFile !== undefined) report(`${option}.caFile`, `only for transport "tls", not "${raw.transport}"`);
    if (raw.serverName !== undefined)
      report(`${option}.serverName`, `only for transport "tls", not "${raw.transport}"`);
  }
  if (raw.transport === 'udp') {
    if (raw.framing !== undefined)
      report(`${option}.framing`, 'only for transports "tcp" and "tls": a datagram is one message');
    return { ...common, transport: 'udp' };
  }
  const framing = raw.framing ?? 'octet-counting';
  if (raw.transport === 'tcp') return { ...common, transport: 'tcp', framing };
  if (raw.caFile === undefined)
    report(`${option}.caFile`, 'required for transport "tls": the CA the collector\'s certificate chains to');
  return {
    ...common,
    transport: 'tls',
    framing,
    caPem: raw.caFile === undefined ? '' : readCa(raw.caFile, `${option}.caFile`, baseDir, report),
    serverName: raw.serverName ?? host,
  };
}

function readCa(file: string, option: string, baseDir: string, report: Report): string {
  const location = path.resolve(baseDir, file);
  try {
    const text = readFileSync(location, 'utf8');
    if (!text.includes('-----BEGIN CERTIFICATE-----')) report(option, `${location} holds no PEM certificate`);
    return text;
  } catch (error) {
    report(option, `cannot read ${location} (${(error as Error).message})`);
    return '';
  }
}

/** The machine's name as RFC 5424's HOSTNAME takes it (printable ASCII); `-`, the NILVALUE, if it is not. */
function defaultHostname(): string {
  const name = machineHostname();
  return /^[\x21-\x7e]{1,255}$/.test(name) ? name : '-';
}
