// The OpenVPN CA (reference §8.1): an Ed25519 CA issuing the client certificates handed out
// with every OpenVPN configuration and the server certificates of the nodes. The fields mirror
// what the reference's `vpn-ca` tool writes, so existing OpenVPN clients see nothing new.
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  webcrypto,
} from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { messageOf } from '../shared/error-message.js';

/** A certificate for a key the holder keeps (a device's own key). */
export interface IssuedCertificate {
  readonly certificatePem: string;
  readonly notAfter: Date;
}

/** A certificate and the fresh key it certifies. */
export interface IssuedCredentials extends IssuedCertificate {
  readonly privateKeyPem: string;
}

// Passed explicitly to every @peculiar/x509 call instead of setting its global provider,
// so importing this module changes nothing for other users of the library.
const crypto = webcrypto;
type CryptoKey = webcrypto.CryptoKey;
const ED25519 = { name: 'Ed25519' } as const;
const CA_COMMON_NAME = 'VPN CA';
/** Certificates start this long before they are made, so a client whose clock is a little behind accepts them. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;
const SERIAL_BYTES = 16;

export class CertificateAuthority {
  readonly certificatePem: string;
  readonly notAfter: Date;
  readonly #certificate: x509.X509Certificate;
  readonly #privateKey: CryptoKey;
  /**
   * The extensions of client and server certificates are the same for every certificate of
   * this CA; building them once saves a good part of the time an issue takes (ASN.1 in JS).
   */
  readonly #clientExtensions: x509.Extension[];
  readonly #serverExtensions: x509.Extension[];

  private constructor(certificate: x509.X509Certificate, privateKey: CryptoKey, keyId: string) {
    this.#certificate = certificate;
    this.#privateKey = privateKey;
    this.#clientExtensions = leafExtensions(x509.ExtendedKeyUsage.clientAuth, keyId);
    this.#serverExtensions = leafExtensions(x509.ExtendedKeyUsage.serverAuth, keyId);
    this.certificatePem = certificate.toString('pem').trim();
    this.notAfter = certificate.notAfter;
  }

  /** A new self-signed CA named `CN=VPN CA`, valid from 5 minutes ago until `notAfter`. */
  static async create(options: {
    now: Date;
    notAfter: Date;
  }): Promise<{ certificatePem: string; privateKeyPem: string }> {
    if (options.notAfter.getTime() <= options.now.getTime()) {
      throw new Error(
        `the CA would expire (${options.notAfter.toISOString()}) before it is made (${options.now.toISOString()})`,
      );
    }
    const keys = generateKeyPairSync('ed25519');
    const publicKey = keys.publicKey.export({ type: 'spki', format: 'der' });
    const name = new x509.Name([{ CN: [{ utf8String: CA_COMMON_NAME }] }]);
    const certificate = await x509.X509CertificateGenerator.create(
      {
        serialNumber: randomSerial(),
        subject: name,
        issuer: name,
        notBefore: wholeSeconds(options.now.getTime() - CLOCK_SKEW_MS),
        notAfter: wholeSeconds(options.notAfter.getTime()),
        publicKey,
        signingKey: await signingKey(keys.privateKey),
        signingAlgorithm: ED25519,
        extensions: [
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
          new x509.BasicConstraintsExtension(true, 0, true),
          await x509.SubjectKeyIdentifierExtension.create(publicKey, false, crypto),
        ],
      },
      crypto,
    );
    return { certificatePem: certificate.toString('pem').trim(), privateKeyPem: privateKeyPem(keys.privateKey) };
  }

  /** The CA from its files' contents. Throws an Error saying what is wrong when they do not form an Ed25519 CA. */
  static async load(certificatePem: string, privateKeyPem: string): Promise<CertificateAuthority> {
    let certificate: x509.X509Certificate;
    try {
      certificate = new x509.X509Certificate(certificatePem);
    } catch (error) {
      throw new Error(`the CA certificate is not a PEM X.509 certificate: ${messageOf(error)}`);
    }
    if (certificate.publicKey.algorithm.name !== ED25519.name) {
      throw new Error(
        `the CA certificate has a ${certificate.publicKey.algorithm.name} key; only Ed25519 is supported`,
      );
    }
    if (certificate.getExtension(x509.BasicConstraintsExtension)?.ca !== true) {
      throw new Error('the CA certificate is not a CA certificate (BasicConstraints CA:TRUE is missing)');
    }

    let keyObject: KeyObject;
    try {
      keyObject = createPrivateKey(privateKeyPem);
    } catch (error) {
      throw new Error(`the CA private key is not a PEM private key: ${messageOf(error)}`);
    }
    const publicFromKey = createPublicKey(keyObject).export({ type: 'spki', format: 'der' });
    if (!publicFromKey.equals(Buffer.from(certificate.publicKey.rawData))) {
      throw new Error('the CA private key does not belong to the CA certificate');
    }
    const privateKey = await signingKey(keyObject);
    // A CA made elsewhere may lack a SubjectKeyIdentifier; derive one the usual way (SHA-1 of the key).
    const keyId =
      certificate.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId ??
      (await x509.SubjectKeyIdentifierExtension.create(certificate.publicKey, false, crypto)).keyId;
    return new CertificateAuthority(certificate, privateKey, keyId);
  }

  /** A client certificate `OU=<profileId>, CN=<commonName>` valid until `notAfter`, with a fresh key. */
  async issueClient(options: {
    commonName: string;
    profileId: string;
    now: Date;
    notAfter: Date;
  }): Promise<IssuedCredentials> {
    // A synchronous Node key pair: WebCrypto's generateKey and exportKey each take a round
    // trip through the thread pool, which costs more than making the key itself.
    const leafKey = generateKeyPairSync('ed25519');
    const certificate = await this.certifyClientKey({
      ...options,
      subjectPublicKeyInfo: leafKey.publicKey.export({ type: 'spki', format: 'der' }),
    });
    return { ...certificate, privateKeyPem: privateKeyPem(leafKey.privateKey) };
  }

  /**
   * A client certificate as issueClient's, for a key the device made and keeps (DER
   * SubjectPublicKeyInfo, from its certificate request): the portal never sees its private half.
   */
  async certifyClientKey(options: {
    commonName: string;
    profileId: string;
    now: Date;
    notAfter: Date;
    subjectPublicKeyInfo: Buffer;
  }): Promise<IssuedCertificate> {
    if (options.notAfter.getTime() <= options.now.getTime()) {
      throw new Error(
        `cannot issue a certificate that expires (${options.notAfter.toISOString()}) before it is issued (${options.now.toISOString()})`,
      );
    }
    if (options.notAfter.getTime() > this.notAfter.getTime()) {
      throw new Error(
        `cannot issue a certificate valid until ${options.notAfter.toISOString()}: the CA expires at ${this.notAfter.toISOString()}`,
      );
    }
    return this.#issue({ ...options, extensions: this.#clientExtensions });
  }

  /** A server certificate `OU=<profileId>, CN=<hostName>` valid as long as the CA. */
  async issueServer(options: { hostName: string; profileId: string; now: Date }): Promise<IssuedCredentials> {
    if (this.notAfter.getTime() <= options.now.getTime()) {
      throw new Error(`cannot issue a server certificate: the CA expired at ${this.notAfter.toISOString()}`);
    }
    const leafKey = generateKeyPairSync('ed25519');
    const certificate = await this.#issue({
      commonName: options.hostName,
      profileId: options.profileId,
      now: options.now,
      notAfter: this.notAfter,
      subjectPublicKeyInfo: leafKey.publicKey.export({ type: 'spki', format: 'der' }),
      extensions: this.#serverExtensions,
    });
    return { ...certificate, privateKeyPem: privateKeyPem(leafKey.privateKey) };
  }

  /** True when `certificatePem` is a certificate this CA signed (signature and issuer name; validity not checked). */
  async hasIssued(certificatePem: string): Promise<boolean> {
    let certificate: x509.X509Certificate;
    try {
      certificate = new x509.X509Certificate(certificatePem);
    } catch {
      return false;
    }
    if (!sameBytes(certificate.issuerName.toArrayBuffer(), this.#certificate.subjectName.toArrayBuffer())) return false;
    return certificate.verify({ publicKey: this.#certificate.publicKey, signatureOnly: true }, crypto);
  }

  async #issue(options: {
    commonName: string;
    profileId: string;
    now: Date;
    notAfter: Date;
    subjectPublicKeyInfo: Buffer;
    extensions: x509.Extension[];
  }): Promise<IssuedCertificate> {
    if (options.commonName === '' || options.profileId === '') {
      throw new Error('a certificate needs a non-empty common name and profile id');
    }
    const notAfter = wholeSeconds(options.notAfter.getTime());
    const certificate = await x509.X509CertificateGenerator.create(
      {
        serialNumber: randomSerial(),
        // utf8String objects, not strings: the library would read "+" or "\" in a string as DN syntax.
        subject: new x509.Name([
          { OU: [{ utf8String: options.profileId }] },
          { CN: [{ utf8String: options.commonName }] },
        ]),
        // The CA's subject as encoded in its certificate, so issuer and subject match byte for byte.
        issuer: this.#certificate.subjectName,
        notBefore: wholeSeconds(options.now.getTime() - CLOCK_SKEW_MS),
        notAfter,
        publicKey: options.subjectPublicKeyInfo,
        signingKey: this.#privateKey,
        signingAlgorithm: ED25519,
        extensions: options.extensions,
      },
      crypto,
    );
    return { certificatePem: certificate.toString('pem').trim(), notAfter };
  }
}

/** The fields of a stored certificate that decide whether it can still be used. */
export interface CertificateSummary {
  readonly commonName: string;
  /** The profile id, for certificates of this CA. */
  readonly organizationalUnit: string;
  readonly notAfter: Date;
}

/** Subject fields and expiry of a PEM certificate; throws when the text is not one. */
export function summarizeCertificate(certificatePem: string): CertificateSummary {
  const certificate = new x509.X509Certificate(certificatePem);
  return {
    commonName: certificate.subjectName.getField('CN').join('+'),
    organizationalUnit: certificate.subjectName.getField('OU').join('+'),
    notAfter: certificate.notAfter,
  };
}

/** True when the PEM private key is the one whose public half the certificate holds. */
export function keyMatchesCertificate(certificatePem: string, privateKeyPem: string): boolean {
  try {
    const certificateKey = Buffer.from(new x509.X509Certificate(certificatePem).publicKey.rawData);
    return createPublicKey(createPrivateKey(privateKeyPem))
      .export({ type: 'spki', format: 'der' })
      .equals(certificateKey);
  } catch {
    return false;
  }
}

/** KeyUsage digitalSignature, the one EKU, CA:FALSE and the CA's key id, as on the reference's leaf certificates. */
function leafExtensions(usage: x509.ExtendedKeyUsage, caKeyId: string): x509.Extension[] {
  return [
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([usage]),
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.AuthorityKeyIdentifierExtension(caKeyId),
  ];
}

/** The WebCrypto form of a Node private key, which is what @peculiar/x509 signs with. */
async function signingKey(key: KeyObject): Promise<CryptoKey> {
  return crypto.subtle.importKey('pkcs8', key.export({ type: 'pkcs8', format: 'der' }), ED25519, false, ['sign']);
}

/** PKCS#8 PEM (`BEGIN PRIVATE KEY`), as the reference's CA writes its keys. */
function privateKeyPem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString().trim();
}

/** 128 random bits as hex; the library keeps the number positive (it prepends a zero byte when needed). */
function randomSerial(): string {
  return randomBytes(SERIAL_BYTES).toString('hex');
}

/** X.509 times have whole seconds; rounding down here keeps the returned notAfter equal to the certificate's. */
function wholeSeconds(milliseconds: number): Date {
  return new Date(Math.floor(milliseconds / 1000) * 1000);
}

function sameBytes(a: ArrayBuffer, b: ArrayBuffer): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}
