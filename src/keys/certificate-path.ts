// The rules of RFC 5280's path validation, beyond signatures, validity times and revocation, that
// a device certificate's chain must keep, as OpenSSL holds a chain to them: every certificate
// above the leaf is a CA's (the trust anchor too) and may sign certificates (its keyUsage, when it
// has one, names keyCertSign), has no more
// intermediate CAs below it than its pathLenConstraint allows, and carries no nameConstraints
// (which the portal does not enforce), and no certificate carries a critical extension the
// portal does not process. The same rules say which CAs may sign the revocation lists the portal
// believes, and which trust anchors vouch for anything at all. Also whether a CA may sign
// revocation lists (cRLSign).
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
  const [leaf, ...cas] = chain;
  if (leaf === undefined) return null;
  const critical = unprocessedCriticalExtension(leaf);
  if (critical !== null)
    return `the client certificate has a critical extension the portal does not process (${nameOf(critical)})`;
  return whyCasBreakRules(cas, " of the client certificate's chain");
}

/**
 * Why these CAs (the one that signs the certificates or revocation lists in question first, the
 * trust anchor last, each signed by the next) may not vouch for what the first one signs; null
 * when they may. The same rules as a device certificate's chain through them (whyPathInvalid), so
 * a CA whose lists the portal believes is one whose device certificates it would believe; the
 * first one must say CA:TRUE unless it is the trust anchor itself (a chain's intermediates do).
 * A trust anchor alone: whether it vouches for anything at all.
 */
export function whyCaPathInvalid(cas: readonly x509.X509Certificate[]): string | null {
  return whyCasBreakRules(cas, '');
}

/** The rules of whyCaPathInvalid; `of` follows an intermediate's name in the reason. */
function whyCasBreakRules(cas: readonly x509.X509Certificate[], of: string): string | null {
  for (const [index, ca] of cas.entries()) {
    const anchor = index === cas.length - 1;
    const which = anchor ? `trust anchor "${ca.subject}"` : `CA certificate "${ca.subject}"${of}`;
    // A CA's name constraints bind every name below it, critical or not (OpenSSL enforces both).
    if (ca.extensions.some((extension) => extension.type === NAME_CONSTRAINTS))
      return `${which} has nameConstraints (${NAME_CONSTRAINTS}), which the portal does not enforce`;
    const critical = unprocessedCriticalExtension(ca);
    if (critical !== null) return `${which} has a critical extension the portal does not process (${nameOf(critical)})`;
    const constraints = ca.getExtension(x509.BasicConstraintsExtension);
    // A trust anchor that says it is no CA (a device's own certificate configured by mistake)
    // vouches for nothing, as OpenSSL holds it; one without basicConstraints (a version 1 root)
    // does. An intermediate must say CA:TRUE (a device chain takes no other).
    if (anchor ? constraints?.ca === false : constraints?.ca !== true)
      return `${which} is not a CA certificate (its basicConstraints ${constraints === null ? 'are missing' : 'say CA:FALSE'})`;
    if (!maySignCertificates(ca)) return `${which} may not sign certificates (its keyUsage lacks keyCertSign)`;
    const limit = constraints?.pathLength;
    const below = cas.slice(0, index).filter((lower) => !isSelfIssued(lower)).length;
    if (limit !== undefined && below > limit)
      return `${which} allows ${limit} intermediate CA certificate${limit === 1 ? '' : 's'} below it (pathLenConstraint), but the chain has ${below}`;
  }
  return null;
}

/** The type of a critical extension the portal does not process; null when there is none. */
function unprocessedCriticalExtension(certificate: x509.X509Certificate): string | null {
  return (
    certificate.extensions.find((extension) => extension.critical && !PROCESSED_EXTENSIONS.has(extension.type))?.type ??
    null
  );
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
 * A CA's own name over a new key: not counted against a pathLenConstraint (RFC 5280 6.1.4), as
 * a key rollover makes one.
 */
function isSelfIssued(ca: x509.X509Certificate): boolean {
  return ca.subject === ca.issuer;
}

function nameOf(oid: string): string {
  const name = EXTENSION_NAMES.get(oid);
  return name === undefined ? oid : `${name}, ${oid}`;
}
