// The material that signs Apple profiles (`apple.signingCertificate`, `apple.signingKey`,
// `apple.signingChain`), read and checked when the configuration is loaded: a key that does
// not match its certificate, or a certificate out of its validity, would make every Apple
// profile unusable, so the portal refuses to start and names the option instead.
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { signingAlgorithm, type ProfileSigningMaterial } from '../apple/profile-signing.js';
import { Secret } from '../shared/secret.js';

export interface AppleSigningOptions {
  readonly signingCertificate?: string | undefined;
  readonly signingKey?: string | undefined;
  readonly signingChain?: string | undefined;
}

type Report = (option: string, message: string) => void;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** null when no option is set; problems go to `report` (then the value returned does not matter). */
export function loadAppleSigning(
  options: AppleSigningOptions,
  baseDir: string,
  now: Date,
  report: Report,
  /** Told of the key file, to warn when others may read it (secret-files.ts). */
  warnOfSecretFile: (option: string, file: string) => void = () => {},
): ProfileSigningMaterial | null {
  const { signingCertificate, signingKey, signingChain } = options;
  if (signingCertificate === undefined && signingKey === undefined && signingChain === undefined) return null;
  if (signingCertificate === undefined || signingKey === undefined) {
    report(
      signingCertificate === undefined ? 'apple.signingCertificate' : 'apple.signingKey',
      'signing needs both apple.signingCertificate and apple.signingKey',
    );
    return null;
  }
  const certificatePem = readPem(baseDir, signingCertificate, 'apple.signingCertificate', report);
  const keyPem = readPem(baseDir, signingKey, 'apple.signingKey', report);
  const chainPem = signingChain === undefined ? '' : readPem(baseDir, signingChain, 'apple.signingChain', report);
  if (keyPem !== null) warnOfSecretFile('apple.signingKey', path.resolve(baseDir, signingKey));
  if (certificatePem === null || keyPem === null || chainPem === null) return null;

  const certificate = parseCertificate(certificatePem, 'apple.signingCertificate', now, report);
  const key = parseKey(keyPem, report);
  const chain = signingChain === undefined ? [] : (chainPem.match(PEM_CERTIFICATE) ?? []);
  if (signingChain !== undefined && chain.length === 0)
    report('apple.signingChain', `${signingChain} holds no PEM certificate`);
  const chainCertificates = chain.map((pem, index) =>
    parseCertificate(pem, `apple.signingChain (certificate ${index + 1})`, now, report),
  );
  if (certificate === null || key === null) return null;

  if (!certificate.checkPrivateKey(key))
    report('apple.signingKey', `${signingKey} is not the key of the certificate in apple.signingCertificate`);
  const issuer = chainCertificates[0];
  if (issuer !== undefined && issuer !== null && !certificate.checkIssued(issuer)) {
    report(
      'apple.signingChain',
      `its first certificate (${issuer.subject.replaceAll('\n', ', ')}) did not issue the signing certificate`,
    );
  }
  return { certificate: certificate.toString(), key: new Secret(keyPem), chain: chain.map((pem) => `${pem}\n`) };
}

function readPem(baseDir: string, file: string, option: string, report: Report): string | null {
  try {
    return readFileSync(path.resolve(baseDir, file), 'utf8');
  } catch (error) {
    report(option, `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return null;
  }
}

function parseCertificate(pem: string, option: string, now: Date, report: Report): X509Certificate | null {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch {
    report(option, 'is not a PEM certificate');
    return null;
  }
  const notBefore = new Date(certificate.validFrom);
  const notAfter = new Date(certificate.validTo);
  if (notAfter.getTime() <= now.getTime()) report(option, `the certificate expired on ${notAfter.toISOString()}`);
  else if (notBefore.getTime() > now.getTime())
    report(option, `the certificate is not valid before ${notBefore.toISOString()}`);
  return certificate;
}

/** Never quotes the file: it holds a private key. */
function parseKey(pem: string, report: Report): KeyObject | null {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    report('apple.signingKey', 'is not an unencrypted PEM private key');
    return null;
  }
  if (signingAlgorithm(key) === null)
    report('apple.signingKey', 'profiles are signed with an RSA or EC (P-256, P-384, P-521) key');
  return key;
}
