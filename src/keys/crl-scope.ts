// Whether a revocation list is its CA's whole list, the only kind a source's list in force may
// be replaced with. A delta list names only what was revoked since a base list; a list scoped to
// CA certificates, attribute certificates or some reasons leaves device certificates out; an
// indirect list speaks for other CAs; and a critical extension the portal does not understand
// must not be ignored (RFC 5280 section 5.2). Any of these served in place of the complete list
// (a plain-http distribution point answers whatever its path serves) would let every
// certificate the complete list revokes enroll again.
import { AsnParser } from '@peculiar/asn1-schema';
import { IssuingDistributionPoint } from '@peculiar/asn1-x509';
import type { RevocationList } from './client-certificate.js';

const DELTA_CRL_INDICATOR = '2.5.29.27';
const ISSUING_DISTRIBUTION_POINT = '2.5.29.28';

/** Why `crl` is not a whole list of its CA's revoked certificates; null when it is. */
export function whyNotWholeList(crl: RevocationList): string | null {
  for (const extension of crl.extensions) {
    if (extension.type === DELTA_CRL_INDICATOR)
      return 'it is a delta list (deltaCRLIndicator): it names only what was revoked since a base list';
    if (extension.type === ISSUING_DISTRIBUTION_POINT) {
      const scope = scopeOf(extension.value);
      if (scope !== null) return `its issuingDistributionPoint limits it to ${scope}`;
    } else if (extension.critical)
      // The non-critical ones (its number, the signing key's id, where its deltas are) need no reading.
      return `it has a critical extension the portal does not process (${extension.type})`;
  }
  for (const entry of crl.entries) {
    const critical = entry.extensions.find((extension) => extension.critical);
    // certificateIssuer, the one critical entry extension RFC 5280 defines, is an indirect list's.
    if (critical !== undefined)
      return `its entry for serial ${entry.serialNumber} has a critical extension (${critical.type}): an indirect list speaks for other CAs`;
  }
  return null;
}

/**
 * What an issuingDistributionPoint leaves the list to, when that is less than every certificate
 * of the CA the portal may meet; null for one that only names its distribution point, or its
 * end-entity certificates (as many CAs, Active Directory Certificate Services among them, write).
 */
function scopeOf(der: ArrayBuffer): string | null {
  let point: IssuingDistributionPoint;
  try {
    point = AsnParser.parse(der, IssuingDistributionPoint);
  } catch {
    return 'what its unreadable issuingDistributionPoint says';
  }
  if (point.onlyContainsCACerts) return 'CA certificates (onlyContainsCACerts)';
  if (point.onlyContainsAttributeCerts) return 'attribute certificates (onlyContainsAttributeCerts)';
  if (point.onlySomeReasons !== undefined) return 'some reasons of revocation (onlySomeReasons)';
  if (point.indirectCRL) return 'certificates of other CAs too (indirectCRL), which the portal does not follow';
  return null;
}
