// Checking a device's MDM certificate, for enrollment over mutual TLS: the chain
// the device presented must lead to one of the configured trust anchors with every signature
// valid, keep RFC 5280's rules for a path (certificate-path.ts), every certificate valid at the
// time, none on a revocation list of its own issuer (a revoked intermediate CA vouches for
// nothing), and the leaf must carry the configured device id. The portal checks this itself, whether the
// TLS handshake was its own or a reverse proxy's, so a proxy's lax setting cannot let a device in.
import { webcrypto } from 'node:crypto';
import { AsnParser } from '@peculiar/asn1-schema';
import { CertificateList } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import { sha256Hex } from '../shared/sha256.js';
import { keyUsageAllows, maySignRevocationLists, whyCaPathInvalid, whyPathInvalid } from './certificate-path.js';

// Passed explicitly to every @peculiar/x509 call instead of setting its global provider.
const crypto = webcrypto;

/** Where the device id is read from a certificate. */
export interface DeviceIdRule {
  readonly from: 'san-uri' | 'subject-serial' | 'subject-cn';
  /** With `san-uri`: the URI that starts with it, without it; with a subject field: it must start with it and is dropped. */
  readonly prefix?: string;
}

/** The certificate a device proved itself with, as the device record keeps it. */
export interface VerifiedClientCertificate {
  readonly deviceId: string;
  readonly subject: string;
  readonly issuer: string;
  /** Hex, as the certificate has it. */
  readonly serialNumber: string;
  readonly notAfter: Date;
  /** SHA-256 (hex, of the DER) of the CA certificate that issued it, as the chain showed. */
  readonly issuerFingerprint: string;
  /** The subjectAltName e-mail addresses (rfc822Name), for self-registration (`registerAs`). */
  readonly emails: readonly string[];
}

export type ClientCertificateVerdict =
  | {
      readonly ok: true;
      readonly certificate: VerifiedClientCertificate;
      /** The CAs between the leaf and its trust anchor, leaf's issuer first: known CAs whose revocation lists can be verified. */
      readonly intermediates: readonly x509.X509Certificate[];
      /** Every CA of the chain, the leaf's issuer first and the trust anchor last: the CAs whose lists check it. */
      readonly authorities: readonly x509.X509Certificate[];
    }
  | { readonly ok: false; readonly reason: string };

/** Certificates longer than this chain are refused (a device's chain is leaf, issuing CA, root). */
const MAX_CHAIN = 8;

/** The certificates one revocation list revokes: its issuer's name and their serial numbers (normalised by `normalSerial`). */
export interface RevokedSerials {
  readonly issuer: string;
  readonly serialNumbers: ReadonlySet<string>;
}

/** A serial number in hex as compared: lower case, no leading zeros (a DER INTEGER may carry one). */
export function normalSerial(hex: string): string {
  return hex.toLowerCase().replace(/^0+(?=.)/, '');
}

/**
 * What the portal makes of a CA certificate as the signer of certificates and revocation lists:
 * it vouches (it leads to a trust anchor, each link signed by the next, and that path keeps the
 * rules a device certificate's chain through it must keep), it leads to no trust anchor, or its
 * path breaks one of those rules (the reason names the certificate and the rule).
 */
export type CaStanding =
  | { readonly standing: 'vouches' }
  | { readonly standing: 'no-anchor' }
  | { readonly standing: 'breaks-path-rule'; readonly rule: string };

/** A configured trust anchor, and whether the path rules let it vouch for anything at all. */
export interface TrustAnchorStanding {
  /** Which entry of the configured trust anchors (a PEM file, perhaps a bundle) holds it. */
  readonly entry: number;
  readonly subject: string;
  /** SHA-256 of its DER, hex. */
  readonly sha256: string;
  /**
   * The rule it breaks whatever is below it (CA:FALSE, nameConstraints, a critical extension the
   * portal does not process, a keyUsage without keyCertSign), naming it: it vouches for no
   * certificate and no revocation list. Null when it keeps them.
   */
  readonly refusedBy: string | null;
}

/** Each certificate of these trust anchor entries (PEM or DER), and whether it vouches; throws as the verifier does on one that cannot be read. */
export function trustAnchorStandings(anchors: readonly (string | Buffer)[]): TrustAnchorStanding[] {
  return anchors.flatMap((entry, index) =>
    readCertificates(entry).map((anchor) => ({
      entry: index,
      subject: anchor.subject,
      sha256: fingerprintOf(anchor),
      refusedBy: whyCaPathInvalid([anchor]),
    })),
  );
}

export class ClientCertificateVerifier {
  readonly #anchors: readonly x509.X509Certificate[];
  /** One slot per configured list; null until it was read once. */
  #crls: (x509.X509Crl | null)[] = [];
  /** Per slot, a list lent to enrollment besides the one in the slot (see lendCrl); null when none. */
  #lent: (x509.X509Crl | null)[] = [];

  /** Throws when a trust anchor or revocation list is not a PEM (or DER) certificate or CRL. */
  constructor(
    anchors: readonly (string | Buffer)[],
    crls: readonly (string | Buffer | null)[],
    readonly rule: DeviceIdRule,
    /** When set, the leaf must carry Intune's tenant extension with this tenant (a GUID). */
    readonly intuneTenantId: string | null = null,
  ) {
    this.#anchors = anchors.flatMap(readCertificates);
    this.replaceCrls(crls);
  }

  /** The revocation lists now in use, one per slot (null: not read yet); parsed only, as at start. */
  replaceCrls(crls: readonly (string | Buffer | null)[]): void {
    this.#crls = crls.map((crl) => (crl === null ? null : readCrl(crl)));
  }

  /**
   * Puts one list into its slot, for the enrollment check (which verifies a list against the
   * chain's own issuer again at use). The refresher decides what may go in: a list signed by the
   * CA it names, and current (src/core/devices/revocation-lists.ts).
   */
  replaceCrl(slot: number, crl: x509.X509Crl): void {
    while (this.#crls.length <= slot) this.#crls.push(null);
    this.#crls[slot] = crl;
  }

  /**
   * Lends one list to enrollment besides the one in its slot, or takes the loan back (null): a
   * list the refresher cannot believe yet still checks a presented chain whose own issuer signed
   * it, and holding it beside the slot's list (rather than in its place) leaves every revocation
   * of that one in force.
   */
  lendCrl(slot: number, crl: x509.X509Crl | null): void {
    while (this.#lent.length <= slot) this.#lent.push(null);
    this.#lent[slot] = crl;
  }

  /**
   * Whether this CA certificate vouches for the certificates and lists it signs, by the very
   * question a device certificate's chain through it answers: a path to a trust anchor through
   * `intermediates`, each link signed by the next, that keeps RFC 5280's rules (certificate-path.ts).
   */
  async standingOf(ca: x509.X509Certificate, intermediates: readonly x509.X509Certificate[]): Promise<CaStanding> {
    // A trust anchor is a path by itself, as a device's chain ends at the first anchor it reaches.
    const path = this.#anchors.some((anchor) => anchor.equal(ca)) ? [ca] : await this.#chainOf(ca, intermediates);
    if (path === null) return { standing: 'no-anchor' };
    const rule = whyCaPathInvalid(path);
    return rule === null ? { standing: 'vouches' } : { standing: 'breaks-path-rule', rule };
  }

  /** The trust anchors of this subject. */
  anchorsNamed(subject: string): x509.X509Certificate[] {
    return this.#anchors.filter((anchor) => anchor.subject === subject);
  }

  /** `presented`: the leaf first, then the intermediates the device sent (DER or PEM). */
  async verify(presented: readonly (string | Buffer)[], now: Date): Promise<ClientCertificateVerdict> {
    let certificates: x509.X509Certificate[];
    try {
      certificates = presented.flatMap(readCertificates);
    } catch {
      return refuse('the client certificate cannot be read');
    }
    const leaf = certificates[0];
    if (leaf === undefined) return refuse('no client certificate was presented');
    const chain = await this.#chainOf(leaf, certificates.slice(1));
    if (chain === null)
      return refuse(`the client certificate (issuer "${leaf.issuer}") does not chain to a trust anchor`);
    const invalid = whyPathInvalid(chain);
    if (invalid !== null) return refuse(invalid);
    for (const certificate of chain) {
      if (certificate.notBefore.getTime() > now.getTime())
        return refuse(
          `certificate "${certificate.subject}" is not valid before ${certificate.notBefore.toISOString()}`,
        );
      if (certificate.notAfter.getTime() < now.getTime())
        return refuse(`certificate "${certificate.subject}" expired at ${certificate.notAfter.toISOString()}`);
    }
    const revoked = await this.#whyRevoked(chain);
    if (revoked !== null) return refuse(revoked);
    const notForClients = whyNotForClientAuthentication(leaf);
    if (notForClients !== null) return refuse(notForClients);
    if (this.intuneTenantId !== null) {
      const tenant = intuneTenantOf(leaf);
      if (tenant === null)
        return refuse(`the client certificate has no Intune tenant extension (${INTUNE_TENANT_OID})`);
      if (tenant !== this.intuneTenantId.toLowerCase())
        return refuse(`the client certificate is of Intune tenant ${tenant}, not ${this.intuneTenantId.toLowerCase()}`);
    }
    const deviceId = readDeviceId(leaf, this.rule);
    if (deviceId === null) return refuse(`the client certificate has no device id (${describeRule(this.rule)})`);
    return {
      ok: true,
      certificate: {
        deviceId,
        subject: leaf.subject,
        issuer: leaf.issuer,
        serialNumber: leaf.serialNumber,
        notAfter: leaf.notAfter,
        // The chain has the leaf's issuer next: an intermediate, or the trust anchor itself.
        issuerFingerprint: fingerprintOf(chain[1] ?? leaf),
        emails: (leaf.getExtension(x509.SubjectAlternativeNameExtension)?.names.items ?? [])
          .filter((name) => name.type === 'email')
          .map((name) => name.value),
      },
      intermediates: chain.slice(1, -1),
      authorities: chain.slice(1),
    };
  }

  /** Leaf to anchor, each signed by the next (an anchor may be the leaf's own issuer); null when there is no such chain. */
  async #chainOf(
    leaf: x509.X509Certificate,
    intermediates: readonly x509.X509Certificate[],
  ): Promise<x509.X509Certificate[] | null> {
    const chain = [leaf];
    for (let current = leaf; chain.length <= MAX_CHAIN; ) {
      const anchor = await this.#signer(current, this.#anchors);
      if (anchor !== undefined) return [...chain, anchor];
      const next = await this.#signer(current, intermediates);
      if (next === undefined || chain.includes(next) || !isCa(next)) return null;
      chain.push(next);
      current = next;
    }
    return null;
  }

  async #signer(
    certificate: x509.X509Certificate,
    candidates: readonly x509.X509Certificate[],
  ): Promise<x509.X509Certificate | undefined> {
    for (const candidate of candidates) {
      if (candidate.subject !== certificate.issuer) continue;
      if (await certificate.verify({ publicKey: candidate.publicKey, signatureOnly: true }, crypto)) return candidate;
    }
    return undefined;
  }

  /** Why a link of the chain is refused by its issuer's lists; null when none revokes it. */
  async #whyRevoked(chain: readonly x509.X509Certificate[]): Promise<string | null> {
    // Each link on its issuer's lists: a CA whose own issuer revoked it vouches for nothing.
    for (let index = 0; index + 1 < chain.length; index++) {
      const [certificate, issuer] = [chain[index], chain[index + 1]];
      if (certificate === undefined || issuer === undefined) continue;
      const verdict = await this.#listsSay(certificate, issuer);
      if (verdict === 'not-revoked') continue;
      if (verdict === 'issuer-may-not-sign-lists')
        return `the revocation list of "${issuer.subject}" cannot be believed: that CA certificate's keyUsage lacks cRLSign`;
      return index === 0
        ? `the client certificate (serial ${certificate.serialNumber}) is revoked`
        : `CA certificate "${certificate.subject}" (serial ${certificate.serialNumber}) of the client certificate's chain is revoked`;
    }
    return null;
  }

  /**
   * Whether a revocation list of its issuer that the issuer signed revokes it. Serials are
   * compared normalised, as the refresher compares them (not by the library's findRevoked, which
   * misses a serial of zero or a negative one, both of which some CAs issue). A list signed by an
   * issuer whose keyUsage does not allow cRLSign cannot be believed, and cannot be ignored either
   * (the certificate would go unchecked): the chain is refused, as OpenSSL refuses it.
   */
  async #listsSay(
    certificate: x509.X509Certificate,
    issuer: x509.X509Certificate,
  ): Promise<'revoked' | 'not-revoked' | 'issuer-may-not-sign-lists'> {
    const serial = normalSerial(certificate.serialNumber);
    for (const crl of [...this.#crls, ...this.#lent]) {
      if (crl === null || crl.issuer !== issuer.subject) continue;
      if (!(await crl.verify({ publicKey: issuer.publicKey }, crypto))) continue;
      if (!maySignRevocationLists(issuer)) return 'issuer-may-not-sign-lists';
      if (serialsOf(crl).has(serial)) return 'revoked';
    }
    return 'not-revoked';
  }
}

/** Anything but clientAuth in the extended key usage: a certificate for another purpose (a TLS server, code signing). */
const ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0';

/**
 * Why the certificate may not prove a TLS client, as TLS libraries read it (OpenSSL's `sslclient`
 * purpose); null when it may. Its extendedKeyUsage, when it has one, names clientAuth (or any
 * usage); its keyUsage, when it has one, lets its key sign (digitalSignature) or agree on keys
 * (keyAgreement). A server certificate of the MDM's CA that carries a device id is not a device's.
 */
function whyNotForClientAuthentication(certificate: x509.X509Certificate): string | null {
  const usage = certificate.getExtension(x509.ExtendedKeyUsageExtension);
  if (
    usage !== null &&
    !usage.usages.some((purpose) => purpose === x509.ExtendedKeyUsage.clientAuth || purpose === ANY_EXTENDED_KEY_USAGE)
  )
    return 'the client certificate is not for client authentication (its extendedKeyUsage names neither clientAuth nor anyExtendedKeyUsage)';
  if (!keyUsageAllows(certificate, x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement))
    return 'the client certificate is not for client authentication (its keyUsage names neither digitalSignature nor keyAgreement)';
  return null;
}

/**
 * The device id a certificate carries by the rule; null when it has none. A CN of the form
 * `prefix-<guid>` (five dashes) is read as the GUID, as Intune's device certificates are
 * (eduVPN's Intune provisioning research does the same).
 */
export function readDeviceId(certificate: x509.X509Certificate, rule: DeviceIdRule): string | null {
  const prefix = rule.prefix ?? '';
  let value: string | undefined;
  switch (rule.from) {
    case 'san-uri': {
      const names = certificate.getExtension(x509.SubjectAlternativeNameExtension)?.names.items ?? [];
      value = names.find((name) => name.type === 'url' && name.value.startsWith(prefix))?.value;
      break;
    }
    case 'subject-serial':
      value = certificate.subjectName.getField('2.5.4.5')[0];
      break;
    case 'subject-cn': {
      const cn = certificate.subjectName.getField('CN')[0];
      value = cn !== undefined && cn.split('-').length === 6 ? cn.slice(cn.indexOf('-') + 1) : cn;
      break;
    }
  }
  if (value === undefined || !value.startsWith(prefix)) return null;
  const id = value.slice(prefix.length);
  return id === '' ? null : id;
}

/** Intune's device certificates name their Azure AD tenant in this extension (eduVPN's Intune research checks it). */
export const INTUNE_TENANT_OID = '1.2.840.113556.5.14';

/**
 * The tenant GUID of Intune's extension, lower case; null when absent or malformed. Its value is
 * an OCTET STRING of 16 bytes in Microsoft's mixed-endian GUID order: the first three groups
 * (4, 2 and 2 bytes) byte-reversed, the last 8 bytes as written.
 */
export function intuneTenantOf(certificate: x509.X509Certificate): string | null {
  const extension = certificate.getExtension(INTUNE_TENANT_OID);
  if (extension === null) return null;
  const der = Buffer.from(extension.value);
  if (der.length !== 18 || der[0] !== 0x04 || der[1] !== 0x10) return null;
  const bytes = der.subarray(2);
  const hex = (part: Buffer) => part.toString('hex');
  const reversed = (start: number, end: number) => hex(Buffer.from(bytes.subarray(start, end)).reverse());
  return `${reversed(0, 4)}-${reversed(4, 6)}-${reversed(6, 8)}-${hex(bytes.subarray(8, 10))}-${hex(bytes.subarray(10, 16))}`;
}

function describeRule(rule: DeviceIdRule): string {
  const where = {
    'san-uri': 'a subjectAltName URI',
    'subject-serial': 'a subject serialNumber',
    'subject-cn': 'a subject CN',
  }[rule.from];
  return rule.prefix === undefined ? `${where} was expected` : `${where} starting with "${rule.prefix}" was expected`;
}

function isCa(certificate: x509.X509Certificate): boolean {
  return certificate.getExtension(x509.BasicConstraintsExtension)?.ca === true;
}

function refuse(reason: string): ClientCertificateVerdict {
  return { ok: false, reason };
}

/** Every certificate of a PEM text (a bundle), or the one of a DER buffer. */
function readCertificates(input: string | Buffer): x509.X509Certificate[] {
  const text =
    typeof input === 'string'
      ? input
      : input.subarray(0, 10).toString('latin1').startsWith('-----')
        ? input.toString('latin1')
        : null;
  if (text === null) return [new x509.X509Certificate(new Uint8Array(input as Buffer))];
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error('no PEM certificate in it');
  return blocks.map((block) => new x509.X509Certificate(block));
}

/** A parsed revocation list, and a parsed CA certificate, as the refresher handles them. */
export type RevocationList = x509.X509Crl;
export type CaCertificate = x509.X509Certificate;

/** The CA certificates of PEM texts (bundles); throws when one holds none. */
export function readCaCertificates(pems: readonly string[]): CaCertificate[] {
  return pems.flatMap(readCertificates);
}

/** A CA certificate from its DER (as stored); throws when it is not one. */
export function caCertificateFromDer(der: Buffer): CaCertificate {
  return new x509.X509Certificate(new Uint8Array(der));
}

/** What one revocation list revokes, its serial numbers normalised. */
export function revokedSerialsOf(crl: x509.X509Crl): RevokedSerials {
  return { issuer: crl.issuer, serialNumbers: serialsOf(crl) };
}

/** Each list's normalised serial numbers, made once per list: an enrollment looks one up, not through them all. */
const serialSets = new WeakMap<x509.X509Crl, ReadonlySet<string>>();

function serialsOf(crl: x509.X509Crl): ReadonlySet<string> {
  let serials = serialSets.get(crl);
  if (serials === undefined) {
    serials = new Set(crl.entries.map((entry) => normalSerial(entry.serialNumber)));
    serialSets.set(crl, serials);
  }
  return serials;
}

/**
 * Whether one of these certificates (the CA the list names) signed the list and may sign lists:
 * a CA certificate whose keyUsage lacks cRLSign signs none that the portal believes (RFC 5280 4.2.1.3).
 */
export async function crlSignedBy(crl: x509.X509Crl, candidates: readonly x509.X509Certificate[]): Promise<boolean> {
  return crlSignedByKeyOf(crl, candidates.filter(maySignRevocationLists));
}

/** Whether the key of one of these certificates signed the list, whatever their keyUsage allows. */
export async function crlSignedByKeyOf(
  crl: x509.X509Crl,
  candidates: readonly x509.X509Certificate[],
): Promise<boolean> {
  for (const candidate of candidates) if (await crl.verify({ publicKey: candidate.publicKey }, crypto)) return true;
  return false;
}

/**
 * Those of `candidates` whose key signed the list and that may sign lists (cRLSign), among those
 * of the name it gives: the CA certificates whose certificates its serial numbers name (the
 * enrollment check holds a list to a chain's issuer the same way).
 */
export async function crlSigners(
  crl: x509.X509Crl,
  candidates: readonly x509.X509Certificate[],
): Promise<x509.X509Certificate[]> {
  const signers: x509.X509Certificate[] = [];
  for (const candidate of candidates)
    if (candidate.subject === crl.issuer && (await crlSignedBy(crl, [candidate]))) signers.push(candidate);
  return signers;
}

/**
 * The fingerprints of the CA certificates among `cas` that this list revokes: each named by the
 * list's issuer, with a serial the list holds, and signed by a key among `signers` that signed
 * the list too, as a CA that may sign lists (a CA of the same name under another key is not the
 * one revoked).
 */
export async function casRevokedBy(
  crl: x509.X509Crl,
  cas: readonly x509.X509Certificate[],
  signers: readonly x509.X509Certificate[],
): Promise<string[]> {
  const serials = serialsOf(crl);
  const revoked = new Set<string>();
  for (const ca of cas) {
    if (ca.issuer !== crl.issuer || !serials.has(normalSerial(ca.serialNumber))) continue;
    for (const signer of signers) {
      if (signer.subject !== crl.issuer || !(await crlSignedBy(crl, [signer]))) continue;
      if (await ca.verify({ publicKey: signer.publicKey, signatureOnly: true }, crypto)) revoked.add(fingerprintOf(ca));
    }
  }
  return [...revoked];
}

/**
 * The most ASN.1 elements a revocation list is read with: some 30,000 entries with a reason code
 * (eight elements each), 80,000 without (three). The library's own default (asn1js's fromBER:
 * 10,000) refuses a list of some 3,300 entries. The library takes about 1 KB of memory and 20 to
 * 30 µs per element, on the event loop, before any signature is checked, so a list's elements, not its octets,
 * are what it costs: a crafted one holds two for every three octets, and a genuine list of 20 MiB
 * (the most read from a URL) some three million, which would take gigabytes (docs/devices.md).
 */
export const MAX_CRL_ELEMENTS = 250_000;

/** A revocation list, PEM or DER; throws when it is neither, or holds more than MAX_CRL_ELEMENTS. */
export function readCrl(input: string | Buffer): x509.X509Crl {
  return new RevocationListRead(x509.PemData.toArrayBuffer(input));
}

/**
 * A revocation list parsed by the library within MAX_CRL_ELEMENTS. Its rawData is the DER it was
 * read from, not the library's encoding of what it parsed.
 */
class RevocationListRead extends x509.X509Crl {
  readonly #der: ArrayBuffer;

  constructor(der: ArrayBuffer) {
    super(parseWithin(der));
    this.#der = der;
  }

  override get rawData(): ArrayBuffer {
    return this.#der;
  }
}

function parseWithin(der: ArrayBuffer): CertificateList {
  try {
    return AsnParser.parse(der, CertificateList, { berOptions: { maxNodes: MAX_CRL_ELEMENTS } });
  } catch (error) {
    if (error instanceof Error && /node count/i.test(error.message))
      throw new Error(`it holds more than ${MAX_CRL_ELEMENTS} ASN.1 elements, the most read`);
    throw error;
  }
}

/** SHA-256 of a certificate's DER, hex: how the portal names one CA certificate among others of its name. */
export function fingerprintOf(certificate: x509.X509Certificate): string {
  return sha256Hex(Buffer.from(certificate.rawData));
}
