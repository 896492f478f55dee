// A device's own OpenVPN key, brought as a PKCS#10 certificate request (POST /create's `csr`,
// enrollment): the portal checks the request's signature (the device holds the private key)
// and its key type, and keeps only the public key, which its CA certifies under the usual
// `OU=<profile>, CN=<connection id>`. The request's subject and extensions are ignored.
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

/** The key types a device may bring: what the reference's clients and OpenVPN 2.5+ handle. */
export type DeviceKeyAlgorithm = 'Ed25519' | 'P-256';

export interface DeviceCertificateKey {
  /** DER SubjectPublicKeyInfo of the device's key. */
  readonly subjectPublicKeyInfo: Buffer;
  readonly algorithm: DeviceKeyAlgorithm;
}

/** Why a certificate request was refused, written for the administrator or device that sent it. */
export class CertificateRequestError extends Error {
  override readonly name = 'CertificateRequestError';
}

/** A PEM certificate request is far below this; anything longer is not one. */
const MAX_PEM_LENGTH = 16 * 1024;
const PEM =
  /^\s*-----BEGIN (NEW )?CERTIFICATE REQUEST-----\r?\n[A-Za-z0-9+/=\r\n]+-----END (NEW )?CERTIFICATE REQUEST-----\s*$/;

/** The device's public key from a PEM PKCS#10 request whose signature is valid; throws CertificateRequestError. */
export async function readCertificateRequest(pem: string): Promise<DeviceCertificateKey> {
  if (pem.length > MAX_PEM_LENGTH || !PEM.test(pem))
    throw new CertificateRequestError('not a PEM certificate request (-----BEGIN CERTIFICATE REQUEST-----)');
  let request: x509.Pkcs10CertificateRequest;
  try {
    request = new x509.Pkcs10CertificateRequest(pem);
  } catch {
    throw new CertificateRequestError('not a PKCS#10 certificate request');
  }
  const algorithm = deviceKeyAlgorithm(request.publicKey.algorithm);
  if (algorithm === null)
    throw new CertificateRequestError(
      `its key is ${describeAlgorithm(request.publicKey.algorithm)}; only Ed25519 and P-256 keys are accepted`,
    );
  let valid: boolean;
  try {
    valid = await request.verify(webcrypto);
  } catch {
    valid = false;
  }
  if (!valid) throw new CertificateRequestError('its signature does not match its key');
  return { subjectPublicKeyInfo: Buffer.from(request.publicKey.rawData), algorithm };
}

/** What the library says about a key: its name, and the curve or modulus length where there is one. */
interface KeyAlgorithmFields {
  readonly name: string;
  readonly namedCurve?: string;
  readonly modulusLength?: number;
}

function deviceKeyAlgorithm(algorithm: KeyAlgorithmFields): DeviceKeyAlgorithm | null {
  if (algorithm.name === 'Ed25519') return 'Ed25519';
  if (algorithm.name === 'ECDSA' && algorithm.namedCurve === 'P-256') return 'P-256';
  return null;
}

function describeAlgorithm(algorithm: KeyAlgorithmFields): string {
  const curve = algorithm.namedCurve;
  const bits = algorithm.modulusLength;
  if (curve !== undefined) return `${algorithm.name} ${curve}`;
  if (bits !== undefined) return `RSA ${bits}`;
  return algorithm.name;
}
