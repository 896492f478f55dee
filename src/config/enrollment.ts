// `enrollment`: the enrollment listener's allow list and rate, its own TLS listener, and how a
// device's client certificate is checked. Every file it names is read while the configuration
// loads, so a start with one missing or unreadable is refused naming the option.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { asProfileId } from '../shared/ids.js';
import {
  boundedMilliseconds,
  parseListenAddress,
  parseRetireLimit,
  type Report,
  type WarnOfSecretFile,
} from './option-checks.js';
import type { CrlSource, PortalConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';

/** Revocation lists are read again at least daily, and not more than once a second. */
const CRL_REFRESH_BOUNDS = { minMs: 1_000, maxMs: 86_400_000, text: 'between PT1S and P1D' } as const;

/** Reads a file the enrollment options name; a missing one is reported and read as empty. */
type ReadFile = (file: string, option: string, secret?: boolean) => Buffer;

type ParsedEnrollment = ParsedPortalConfig['enrollment'];
type ParsedClientCertificate = NonNullable<ParsedEnrollment['clientCertificate']>;

export function resolveEnrollment(
  raw: ParsedEnrollment,
  baseDir: string,
  profileIds: readonly string[],
  report: Report,
  warnOfSecretFile: WarnOfSecretFile,
): PortalConfig['enrollment'] {
  const read: ReadFile = (file, option, secret = false) => {
    try {
      const content = readFileSync(path.resolve(baseDir, file));
      if (secret) warnOfSecretFile(option, path.resolve(baseDir, file));
      return content;
    } catch (error) {
      report(option, `cannot read ${path.resolve(baseDir, file)} (${(error as Error).message})`);
      return Buffer.alloc(0);
    }
  };
  const { tls, clientCertificate } = raw;
  if (tls !== null && clientCertificate === null)
    report('enrollment.tls', 'needs enrollment.clientCertificate: how a device certificate is checked');
  return {
    allowList: raw.allowList,
    requestsPerMinute: raw.requestsPerMinute,
    tls:
      tls === null
        ? null
        : {
            ...parseListenAddress(tls.listen, 'enrollment.tls.listen', report),
            certificatePem: read(tls.certificate, 'enrollment.tls.certificate').toString('utf8'),
            keyPem: read(tls.key, 'enrollment.tls.key', true).toString('utf8'),
          },
    clientCertificate:
      clientCertificate === null
        ? null
        : resolveClientCertificate(clientCertificate, baseDir, profileIds, read, report),
  };
}

/** `enrollment.clientCertificate`: the trust anchors and revocation lists a device certificate is checked against. */
function resolveClientCertificate(
  clientCertificate: ParsedClientCertificate,
  baseDir: string,
  profileIds: readonly string[],
  read: ReadFile,
  report: Report,
): NonNullable<PortalConfig['enrollment']['clientCertificate']> {
  // Found out at start, not by every device that registers itself (a 404 blaming its request).
  const registerAs = clientCertificate.registerAs;
  if (registerAs !== undefined && !profileIds.includes(registerAs.profileId))
    report(
      'enrollment.clientCertificate.registerAs.profileId',
      `there is no profile "${registerAs.profileId}" (profiles: ${profileIds.join(', ')})`,
    );
  return {
    trustAnchors: clientCertificate.trustAnchors.map((file, index) =>
      read(file, `enrollment.clientCertificate.trustAnchors[${index}]`).toString('utf8'),
    ),
    intermediates: clientCertificate.intermediates.map((file, index) =>
      read(file, `enrollment.clientCertificate.intermediates[${index}]`).toString('utf8'),
    ),
    deviceId: clientCertificate.deviceId,
    crlSources: clientCertificate.crl.map((entry, index): CrlSource => {
      const list = typeof entry === 'string' ? entry : entry.list;
      const option = `enrollment.clientCertificate.crl[${index}]`;
      const issuer = typeof entry === 'string' ? null : read(entry.issuer, `${option}.issuer`).toString('utf8');
      return /^https?:\/\//i.test(list)
        ? { kind: 'url', location: list, issuer }
        : {
            kind: 'file',
            location: path.resolve(baseDir, list),
            initial: read(list, typeof entry === 'string' ? option : `${option}.list`),
            issuer,
          };
    }),
    crlRefreshMs: boundedMilliseconds(
      clientCertificate.crlRefresh,
      'enrollment.clientCertificate.crlRefresh',
      CRL_REFRESH_BOUNDS,
      report,
    ),
    crlMaxRetire: parseRetireLimit(clientCertificate.crlMaxRetire, 'enrollment.clientCertificate.crlMaxRetire', report),
    header: clientCertificate.header,
    trustedProxyList: clientCertificate.trustedProxyList,
    verifiedHeader: clientCertificate.verifiedHeader,
    intuneTenantId: clientCertificate.intuneTenantId ?? null,
    registerAs:
      clientCertificate.registerAs === undefined
        ? null
        : {
            from: clientCertificate.registerAs.from,
            profileId: asProfileId(clientCertificate.registerAs.profileId),
            platform: clientCertificate.registerAs.platform ?? null,
          },
  };
}
