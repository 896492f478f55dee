// Signed Apple configuration profiles: a CMS SignedData (RFC 5652, DER) holding the property
// list, so a device shows the signer instead of "Not signed" when a profile is installed by
// hand or from a web page (an MDM re-signs what it pushes anyway). Made with PKI.js, of the
// same family (PeculiarVentures) as @peculiar/x509 and maintained with it; Node's own crypto
// has no CMS. The material is loaded and checked at start (src/config/apple-signing.ts).
import { createPrivateKey, type KeyObject, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import type { Secret } from '../shared/secret.js';

/** The signing certificate, its key and the certificates between it and a root devices trust. */
export interface ProfileSigningMaterial {
  /** PEM. */
  readonly certificate: string;
  /** PEM (PKCS#8, PKCS#1 or SEC 1): RSA or EC P-256/P-384/P-521. */
  readonly key: Secret;
  /** PEM certificates, the signing certificate's issuer first; may be empty. */
  readonly chain: readonly string[];
}

const ID_DATA = '1.2.840.113549.1.7.1';
const ID_SIGNED_DATA = '1.2.840.113549.1.7.2';
const ID_CONTENT_TYPE = '1.2.840.113549.1.9.3';
const ID_MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const ID_SIGNING_TIME = '1.2.840.113549.1.9.5';

/** Node's WebCrypto, for PKI.js: no global engine is set, so nothing else in the process changes. */
const engine = new pkijs.CryptoEngine({
  name: 'node',
  crypto: webcrypto as unknown as ConstructorParameters<typeof pkijs.CryptoEngine>[0]['crypto'],
});

/**
 * The DER bytes of a SignedData with the profile as its content, signed with SHA-256 and the
 * attributes `openssl smime -sign` adds (content type, signing time, message digest); the
 * signing certificate and the chain are included so a device can build the path to its root.
 */
export async function signProfile(
  profile: string,
  material: ProfileSigningMaterial,
  signedAt: Date,
): Promise<Uint8Array> {
  const content = new TextEncoder().encode(profile);
  const certificate = pkijs.Certificate.fromBER(pemBody(material.certificate));
  const chain = material.chain.map((pem) => pkijs.Certificate.fromBER(pemBody(pem)));
  const digest = await webcrypto.subtle.digest('SHA-256', content);

  const signerInfo = new pkijs.SignerInfo({
    version: 1,
    sid: new pkijs.IssuerAndSerialNumber({ issuer: certificate.issuer, serialNumber: certificate.serialNumber }),
    signedAttrs: new pkijs.SignedAndUnsignedAttributes({
      type: 0,
      attributes: [
        new pkijs.Attribute({ type: ID_CONTENT_TYPE, values: [new asn1js.ObjectIdentifier({ value: ID_DATA })] }),
        new pkijs.Attribute({ type: ID_SIGNING_TIME, values: [new asn1js.UTCTime({ valueDate: signedAt })] }),
        new pkijs.Attribute({ type: ID_MESSAGE_DIGEST, values: [new asn1js.OctetString({ valueHex: digest })] }),
      ],
    }),
  });
  const signedData = new pkijs.SignedData({
    version: 1,
    encapContentInfo: new pkijs.EncapsulatedContentInfo({
      eContentType: ID_DATA,
      eContent: new asn1js.OctetString({ valueHex: content }),
    }),
    signerInfos: [signerInfo],
    certificates: [certificate, ...chain],
  });
  await signedData.sign(await importSigningKey(material.key), 0, 'SHA-256', undefined, engine);
  const contentInfo = new pkijs.ContentInfo({ contentType: ID_SIGNED_DATA, content: signedData.toSchema(true) });
  return new Uint8Array(contentInfo.toSchema().toBER(false));
}

/** WebCrypto's names of the EC curves a profile may be signed with. */
const WEBCRYPTO_CURVES: Readonly<Record<string, string>> = {
  prime256v1: 'P-256',
  secp384r1: 'P-384',
  secp521r1: 'P-521',
};

/** The signature algorithm for a key, or null when profiles cannot be signed with it (Ed25519, DSA, …). */
export function signingAlgorithm(key: KeyObject): webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams | null {
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  const curve = WEBCRYPTO_CURVES[key.asymmetricKeyDetails?.namedCurve ?? ''];
  return key.asymmetricKeyType === 'ec' && curve !== undefined ? { name: 'ECDSA', namedCurve: curve } : null;
}

/** The key as WebCrypto wants it: its algorithm named, which the PEM does not say. */
async function importSigningKey(key: Secret): Promise<webcrypto.CryptoKey> {
  const keyObject = createPrivateKey(key.reveal());
  const algorithm = signingAlgorithm(keyObject);
  if (algorithm === null) throw new Error('profiles are signed with an RSA or EC (P-256, P-384, P-521) key');
  const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'der' });
  return await webcrypto.subtle.importKey('pkcs8', pkcs8, algorithm, false, ['sign']);
}

/** The DER inside the first PEM block. */
function pemBody(pem: string): Uint8Array {
  const match = /-----BEGIN [^-]+-----([\s\S]*?)-----END [^-]+-----/.exec(pem);
  if (match === null) throw new Error('not a PEM block');
  return new Uint8Array(Buffer.from((match[1] ?? '').replace(/\s+/g, ''), 'base64'));
}
