// The rules of RFC 5280's path validation, beyond signatures, validity times and revocation, that
// a device certificate's chain must keep, as OpenSSL holds a chain to them: every certificate
// above the leaf is a CA's (the trust anchor too) and may sign certificates (its keyUsage, when it
// has one, names keyCertSign), has no more
// intermediate CAs below it than its pathLenConstraint allows, and carries no nameConstraints
// (which the portal does not enforce), and no certificate carries a critical extension the
// portal does not process. Also whether a CA may sign revocation lists (cRLSign).
import * as x509 from '@peculiar/x509';

/**
 * The extensions the portal processes; a critical one of any other kind refuses the chain
 * (RFC 5280 4.2). certificatePolicies is processed as OpenSSL does by default: any policy is
 * acceptable and none must be explicit, so policies alone never refuse a path (RFC 5280 6.1).
 * cRLDistributionPoints only says where the CA's lists are: the portal reads the configured ones.
 */
const PROCESSED_EXTENSIONS: ReadonlySet<string> = new Set([
  '2.5.29.19', // basicConstraints
  '2.5.29.15', // keyUsage
  '2.5.29.37', // extendedKeyUsage
  '2.5.29.17', // subjectAltName
  '2.5.29.32', // certificatePolicies
  '2.5.29.31', // cRLDistributionPoints
]);

const NAME_CONSTRAINTS = '2.5.29.30';

/** Names for the refusals of extensions a CA may carry that the portal does not process. */
const EXTENSION_NAMES: ReadonlyMap<string, string> = new Map([
  [NAME_CONSTRAINTS, 'nameConstraints'],
  ['2.5.29.33', 'policyMappings'],
  ['2.5.29.36', 'policyConstraints'],
  ['2.5.29.54', 'inhibitAnyPolicy'],
  ['2.5.29.14', 'subjectKeyIdentifier'],
  ['2.5.29.35', 'authorityKeyIdentifier'],
]);

/**
 * Why the chain (the leaf first, the trust anchor last, each signed by the next) breaks one of
 * these rules; null when it keeps them. The trust anchor is held to them too, as OpenSSL does.
 */
export function whyPathInvalid(chain: readonly x509.X509Certificate[]): string | null {
  for (const [index, certificate] of chain.entries()) {
    const which = describe(chain, index);
    // A CA's name constraints bind every name below it, critical or not (OpenSSL enforces both).
    if (index > 0 && certificate.extensions.some((extension) => extension.type === NAME_CONSTRAINTS))
      return `${which} has nameConstraints (${NAME_CONSTRAINTS}), which the portal does not enforce`;
    const critical = certificate.extensions.find(
      (extension) => extension.critical && !PROCESSED_EXTENSIONS.has(extension.type),
    );
    if (critical !== undefined)
      return `${which} has a critical extension the portal does not process (${nameOf(critical.type)})`;
    if (index === 0) continue;
    // An intermediate is a CA by the chain's construction; a trust anchor that says it is none (a
    // device's own certificate configured by mistake) vouches for nothing, as OpenSSL holds it.
    if (certificate.getExtension(x509.BasicConstraintsExtension)?.ca === false)
      return `${which} is not a CA certificate (its basicConstraints say CA:FALSE)`;
    if (!maySignCertificates(certificate)) return `${which} may not sign certificates (its keyUsage lacks keyCertSign)`;
    const limit = certificate.getExtension(x509.BasicConstraintsExtension)?.pathLength;
    const below = intermediatesBelow(chain, index);
    if (limit !== undefined && below > limit)
      return `${which} allows ${limit} intermediate CA certificate${limit === 1 ? '' : 's'} below it (pathLenConstraint), but the chain has ${below}`;
  }
  return null;
}

/**
 * Whether the certificate's key may be used for one of `usages` (KeyUsageFlags, or-ed): it has
 * no keyUsage, or one that names one of them (RFC 5280 4.2.1.3).
 */
export function keyUsageAllows(certificate: x509.X509Certificate, usages: number): boolean {
  const usage = certificate.getExtension(x509.KeyUsagesExtension);
  return usage === null || (usage.usages & usages) !== 0;
}

/** Whether a CA certificate's key may sign certificates (keyCertSign). */
function maySignCertificates(ca: x509.X509Certificate): boolean {
  return keyUsageAllows(ca, x509.KeyUsageFlags.keyCertSign);
}

/** Whether a CA certificate's key may sign revocation lists (cRLSign). */
export function maySignRevocationLists(ca: x509.X509Certificate): boolean {
  return keyUsageAllows(ca, x509.KeyUsageFlags.cRLSign);
}

/**
 * The intermediate CAs between the leaf and the CA at `index`, those that are self-issued (a CA's
 * own name over a new key) left out, as RFC 5280 6.1.4 counts them against a pathLenConstraint.
 */
function intermediatesBelow(chain: readonly x509.X509Certificate[], index: number): number {
  return chain.slice(1, index).filter((ca) => ca.subject !== ca.issuer).length;
}

function describe(chain: readonly x509.X509Certificate[], index: number): string {
  const certificate = chain[index];
  if (index === 0 || certificate === undefined) return 'the client certificate';
  if (index === chain.length - 1) return `trust anchor "${certificate.subject}"`;
  return `CA certificate "${certificate.subject}" of the client certificate's chain`;
}

function nameOf(oid: string): string {
  const name = EXTENSION_NAMES.get(oid);
  return name === undefined ? oid : `${name}, ${oid}`;
}
