// The OpenVPN CA, its certificates and the key files, checked with @peculiar/x509 and with the
// real `openssl` and `openvpn` tools.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, webcrypto } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import * as x509 from '@peculiar/x509';

import { CertificateAuthority } from '../../src/openvpn/certificate-authority.js';
import { OpenVpnKeys } from '../../src/openvpn/openvpn-keys.js';
import { isTlsCryptKey } from '../../src/openvpn/tls-crypt.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const FIVE_MINUTES_MS = 5 * 60 * 1000;
const NOW = new Date();
const CA_NOT_AFTER = new Date(NOW.getTime() + 10 * 365 * DAY_MS);

const scratch = mkdtempSync(join(tmpdir(), 'openvpn-certificates-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

let fileCounter = 0;
/** Writes text to a fresh file in the scratch directory (removed after the tests). */
function scratchFile(content: string): string {
  const file = join(scratch, `file-${fileCounter++}.pem`);
  writeFileSync(file, `${content}\n`);
  return file;
}

function run(command: string, args: readonly string[]): { status: number | null; output: string } {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

function openssl(...args: string[]): string {
  const { status, output } = run('openssl', args);
  assert.equal(status, 0, `openssl ${args.join(' ')} failed: ${output}`);
  return output;
}

function wholeSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000) * 1000;
}

/** The subject as `openssl x509 -nameopt multiline` prints it, attribute by attribute. */
function opensslSubject(certificateFile: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of openssl('x509', '-in', certificateFile, '-noout', '-subject', '-nameopt', 'multiline')
    .split('\n')
    .slice(1)) {
    const match = /^\s+(\w+)\s+= (.*)$/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) fields[match[1]] = match[2];
  }
  return fields;
}

async function newCa(notAfter = CA_NOT_AFTER): Promise<{ ca: CertificateAuthority; privateKeyPem: string }> {
  const made = await CertificateAuthority.create({ now: NOW, notAfter });
  return {
    ca: await CertificateAuthority.load(made.certificatePem, made.privateKeyPem),
    privateKeyPem: made.privateKeyPem,
  };
}

describe('a new OpenVPN CA', () => {
  let made: { certificatePem: string; privateKeyPem: string };
  let certificate: x509.X509Certificate;
  before(async () => {
    made = await CertificateAuthority.create({ now: NOW, notAfter: CA_NOT_AFTER });
    certificate = new x509.X509Certificate(made.certificatePem);
  });

  test('is a self-signed Ed25519 "CN=VPN CA", valid from five minutes ago until the given end', async () => {
    assert.equal(certificate.subject, 'CN=VPN CA');
    assert.equal(certificate.issuer, 'CN=VPN CA');
    assert.equal(certificate.publicKey.algorithm.name, 'Ed25519');
    // The library's type for it comes from the DOM lib, which this project does not load.
    assert.equal((certificate.signatureAlgorithm as { name?: string }).name, 'Ed25519');
    assert.equal(certificate.notBefore.getTime(), wholeSeconds(NOW) - FIVE_MINUTES_MS);
    assert.equal(certificate.notAfter.getTime(), wholeSeconds(CA_NOT_AFTER));
    assert.ok(await certificate.isSelfSigned(webcrypto), 'the CA certificate verifies with its own key');
  });

  test('carries the reference extensions: KeyUsage, EKU, BasicConstraints CA pathlen 0, SKI', () => {
    const keyUsage = certificate.getExtension(x509.KeyUsagesExtension);
    assert.ok(keyUsage?.critical, 'KeyUsage is present and critical');
    assert.equal(keyUsage.usages, x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign);
    assert.deepEqual(
      [...(certificate.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? [])],
      [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
    );
    const constraints = certificate.getExtension(x509.BasicConstraintsExtension);
    assert.ok(constraints?.critical, 'BasicConstraints is present and critical');
    assert.equal(constraints.ca, true);
    assert.equal(constraints.pathLength, 0);
    assert.match(certificate.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId ?? '', /^[0-9a-f]{40}$/);
  });

  test('has a positive random serial of at most 128 bits', () => {
    const serial = BigInt(`0x${certificate.serialNumber}`);
    assert.ok(serial > 0n, `serial ${certificate.serialNumber} is positive`);
    assert.ok(serial < 1n << 128n, `serial ${certificate.serialNumber} fits 128 bits`);
    // 64 or fewer bits would mean the random part was cut short (chance 2^-64 otherwise).
    assert.ok(serial >= 1n << 64n, `serial ${certificate.serialNumber} uses the full width`);
  });

  test('reads the same with openssl', () => {
    const text = openssl('x509', '-in', scratchFile(made.certificatePem), '-noout', '-text');
    assert.match(text, /Signature Algorithm: ED25519/);
    assert.match(text, /Public Key Algorithm: ED25519/);
    assert.match(text, /Issuer: CN = VPN CA\n/);
    assert.match(text, /Subject: CN = VPN CA\n/);
    assert.match(text, /X509v3 Key Usage: critical\n\s+Digital Signature, Certificate Sign\n/);
    assert.match(
      text,
      /X509v3 Extended Key Usage: \n\s+TLS Web Server Authentication, TLS Web Client Authentication\n/,
    );
    assert.match(text, /X509v3 Basic Constraints: critical\n\s+CA:TRUE, pathlen:0\n/);
    assert.match(text, /X509v3 Subject Key Identifier: \n\s+([0-9A-F]{2}:){19}[0-9A-F]{2}\n/);
  });

  test('comes with a PKCS#8 private key and trimmed PEM texts', () => {
    assert.match(made.privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+\n-----END PRIVATE KEY-----$/);
    assert.match(made.certificatePem, /^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+\n-----END CERTIFICATE-----$/);
    const keyText = openssl('pkey', '-in', scratchFile(made.privateKeyPem), '-noout', '-text');
    assert.match(keyText, /ED25519 Private-Key/);
  });

  test('loads, and refuses a key that belongs to another CA or text that is no certificate', async () => {
    const ca = await CertificateAuthority.load(made.certificatePem, made.privateKeyPem);
    assert.equal(ca.certificatePem, made.certificatePem);
    assert.equal(ca.notAfter.getTime(), wholeSeconds(CA_NOT_AFTER));
    const other = await CertificateAuthority.create({ now: NOW, notAfter: CA_NOT_AFTER });
    await assert.rejects(
      CertificateAuthority.load(made.certificatePem, other.privateKeyPem),
      /does not belong to the CA certificate/,
    );
    await assert.rejects(CertificateAuthority.load('garbage', made.privateKeyPem), /not a PEM X\.509 certificate/);
    await assert.rejects(CertificateAuthority.load(made.certificatePem, 'garbage'), /not a PEM private key/);
  });
});

describe('a client certificate', () => {
  let ca: CertificateAuthority;
  let caFile: string;
  const commonName = randomBytes(32).toString('base64');
  // Milliseconds on purpose: certificates hold whole seconds.
  const expiresAt = new Date(NOW.getTime() + 90 * DAY_MS + 123);
  let issued: Awaited<ReturnType<CertificateAuthority['issueClient']>>;

  before(async () => {
    ({ ca } = await newCa());
    caFile = scratchFile(ca.certificatePem);
    issued = await ca.issueClient({ commonName, profileId: 'employees', now: NOW, notAfter: expiresAt });
  });

  test('names the profile and the 44-character connection id, and ends at the configuration expiry', () => {
    assert.equal(commonName.length, 44);
    const certificate = new x509.X509Certificate(issued.certificatePem);
    assert.deepEqual(certificate.subjectName.getField('OU'), ['employees']);
    assert.deepEqual(certificate.subjectName.getField('CN'), [commonName]);
    assert.equal(certificate.notAfter.getTime(), wholeSeconds(expiresAt));
    assert.equal(issued.notAfter.getTime(), wholeSeconds(expiresAt));
    assert.equal(certificate.notBefore.getTime(), wholeSeconds(NOW) - FIVE_MINUTES_MS);
    // openssl reads the same subject, "+", "/" and "=" of the Base64 included.
    assert.deepEqual(opensslSubject(scratchFile(issued.certificatePem)), {
      organizationalUnitName: 'employees',
      commonName,
    });
  });

  test('is a TLS client certificate as the reference issues them', () => {
    const text = openssl('x509', '-in', scratchFile(issued.certificatePem), '-noout', '-text');
    assert.match(text, /X509v3 Key Usage: critical\n\s+Digital Signature\n/);
    assert.match(text, /X509v3 Extended Key Usage: \n\s+TLS Web Client Authentication\n/);
    assert.match(text, /X509v3 Basic Constraints: critical\n\s+CA:FALSE\n/);
    const caKeyId =
      new x509.X509Certificate(ca.certificatePem).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId ?? '';
    const keyId = caKeyId.toUpperCase().replace(/(..)(?!$)/g, '$1:');
    assert.match(text, new RegExp(`X509v3 Authority Key Identifier: \\n\\s+${keyId}\\n`));
  });

  test('verifies against the CA, with openssl and with @peculiar/x509', async () => {
    const clientFile = scratchFile(issued.certificatePem);
    assert.match(openssl('verify', '-CAfile', caFile, clientFile), /: OK\n$/);
    assert.match(openssl('verify', '-purpose', 'sslclient', '-CAfile', caFile, clientFile), /: OK\n$/);
    const caCertificate = new x509.X509Certificate(ca.certificatePem);
    const certificate = new x509.X509Certificate(issued.certificatePem);
    assert.ok(
      await certificate.verify({ publicKey: caCertificate.publicKey, date: NOW }, webcrypto),
      'x509 verifies the signature and validity',
    );
    assert.ok(await ca.hasIssued(issued.certificatePem), 'the CA recognises its own certificate');
  });

  test('cannot act as a server', () => {
    const result = run('openssl', [
      'verify',
      '-purpose',
      'sslserver',
      '-CAfile',
      caFile,
      scratchFile(issued.certificatePem),
    ]);
    assert.notEqual(result.status, 0, `a client certificate passed as a server: ${result.output}`);
  });

  test('comes with its own PKCS#8 private key', () => {
    assert.match(issued.privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+\n-----END PRIVATE KEY-----$/);
    const fromKey = openssl('pkey', '-in', scratchFile(issued.privateKeyPem), '-pubout');
    const fromCertificate = openssl('x509', '-in', scratchFile(issued.certificatePem), '-noout', '-pubkey');
    assert.equal(fromKey, fromCertificate);
  });

  test('is refused when it would outlive the CA or has already ended', async () => {
    await assert.rejects(
      ca.issueClient({
        commonName,
        profileId: 'employees',
        now: NOW,
        notAfter: new Date(ca.notAfter.getTime() + 1000),
      }),
      /the CA expires at/,
    );
    await assert.rejects(
      ca.issueClient({ commonName, profileId: 'employees', now: NOW, notAfter: NOW }),
      /before it is issued/,
    );
    const lastSecond = await ca.issueClient({ commonName, profileId: 'employees', now: NOW, notAfter: ca.notAfter });
    assert.equal(lastSecond.notAfter.getTime(), ca.notAfter.getTime());
  });

  test('signs with the CA key imported once, not once per certificate', async (t) => {
    const importKey = t.mock.method(webcrypto.subtle, 'importKey');
    for (let index = 0; index < 20; index += 1) {
      await ca.issueClient({
        commonName: randomBytes(32).toString('base64'),
        profileId: 'employees',
        now: NOW,
        notAfter: expiresAt,
      });
    }
    const privateKeyImports = () => importKey.mock.calls.filter((call) => call.arguments[0] === 'pkcs8').length;
    assert.equal(privateKeyImports(), 0, 'issuing imported a private key again');
    await newCa();
    assert.ok(privateKeyImports() > 0, 'making a CA imports its key (so this count sees imports)');
  });
});

describe('a server certificate', () => {
  test('names the node host and the profile, lasts as long as the CA, and passes as a TLS server', async () => {
    const { ca } = await newCa();
    const issued = await ca.issueServer({ hostName: 'vpn1.example.org', profileId: 'employees', now: NOW });
    const file = scratchFile(issued.certificatePem);
    assert.deepEqual(opensslSubject(file), { organizationalUnitName: 'employees', commonName: 'vpn1.example.org' });
    assert.equal(issued.notAfter.getTime(), ca.notAfter.getTime());
    const text = openssl('x509', '-in', file, '-noout', '-text');
    assert.match(text, /X509v3 Extended Key Usage: \n\s+TLS Web Server Authentication\n/);
    assert.match(text, /X509v3 Basic Constraints: critical\n\s+CA:FALSE\n/);
    assert.match(
      openssl('verify', '-purpose', 'sslserver', '-CAfile', scratchFile(ca.certificatePem), file),
      /: OK\n$/,
    );
  });
});

describe('the OpenVPN key files', () => {
  /** A fresh, empty key directory. */
  function keyDir(): string {
    return join(mkdtempSync(join(scratch, 'keys-')), 'keys');
  }

  function mode(path: string): number {
    return statSync(path).mode & 0o777;
  }

  test('make the CA once, as private files, and never replace it', async () => {
    const keys = new OpenVpnKeys(keyDir());
    assert.equal(await keys.ca(), null);

    assert.deepEqual(await keys.createCa(NOW, CA_NOT_AFTER), { path: keys.caCertificatePath, created: true });
    assert.equal(mode(keys.caCertificatePath), 0o600);
    assert.equal(mode(keys.caKeyPath), 0o600);
    assert.equal(mode(join(keys.keyDir, 'ca')), 0o700);
    assert.equal(mode(keys.keyDir), 0o700);
    const certificate = readFileSync(keys.caCertificatePath, 'utf8');
    const key = readFileSync(keys.caKeyPath, 'utf8');

    assert.deepEqual(await keys.createCa(NOW, CA_NOT_AFTER), { path: keys.caCertificatePath, created: false });
    assert.equal(readFileSync(keys.caCertificatePath, 'utf8'), certificate);
    assert.equal(readFileSync(keys.caKeyPath, 'utf8'), key);
    assert.equal((await keys.ca())?.certificatePem, certificate);
  });

  test('end with exactly one CA when two portal processes make it at the same moment', async () => {
    const dir = keyDir();
    const [one, two] = await Promise.all([
      new OpenVpnKeys(dir).createCa(NOW, CA_NOT_AFTER),
      new OpenVpnKeys(dir).createCa(NOW, CA_NOT_AFTER),
    ]);
    assert.deepEqual([one.created, two.created].sort(), [false, true]);
    const ca = await new OpenVpnKeys(dir).ca();
    assert.ok(ca !== null, 'the CA that won loads: its key matches its certificate');
    assert.deepEqual(readdirSync(dir).sort(), ['ca'], 'no staging directory is left behind');
  });

  test('refuse to go on with half a CA', async () => {
    const keys = new OpenVpnKeys(keyDir());
    await keys.createCa(NOW, CA_NOT_AFTER);
    rmSync(keys.caKeyPath);
    const fresh = new OpenVpnKeys(keys.keyDir);
    await assert.rejects(
      fresh.createCa(NOW, CA_NOT_AFTER),
      /the OpenVPN CA is incomplete: .*ca\.crt exists but .*ca\.key does not/,
    );
    await assert.rejects(fresh.ca(), /incomplete/);
    assert.ok(!existsSync(fresh.caKeyPath), 'no key was made to go with a certificate it does not match');
  });

  test('notice a replaced CA within a second', async () => {
    const keys = new OpenVpnKeys(keyDir());
    await keys.createCa(NOW, CA_NOT_AFTER);
    const before = await keys.ca();
    const other = new OpenVpnKeys(keyDir());
    await other.createCa(NOW, CA_NOT_AFTER);
    cpSync(other.caCertificatePath, keys.caCertificatePath);
    cpSync(other.caKeyPath, keys.caKeyPath);
    await sleep(1_100);
    const after = await keys.ca();
    assert.notEqual(after?.certificatePem, before?.certificatePem);
    assert.equal(after?.certificatePem, readFileSync(other.caCertificatePath, 'utf8'));
  });

  test('make one tls-crypt key per profile, in the format of "openvpn --genkey", and keep it', () => {
    const keys = new OpenVpnKeys(keyDir());
    const key = keys.tlsCryptKey('employees');
    assert.ok(isTlsCryptKey(key), `a static key: ${key}`);
    const lines = key.split('\n');
    assert.deepEqual(lines.slice(0, 4), [
      '#',
      '# 2048 bit OpenVPN static key',
      '#',
      '-----BEGIN OpenVPN Static key V1-----',
    ]);
    assert.equal(lines.length, 21);
    for (const line of lines.slice(4, 20)) assert.match(line, /^[0-9a-f]{32}$/);
    assert.equal(lines[20], '-----END OpenVPN Static key V1-----');

    const file = keys.tlsCryptKeyPath('employees');
    assert.equal(file, join(keys.keyDir, 'tls-crypt-employees.key'));
    assert.equal(readFileSync(file, 'utf8'), key, 'the file holds the key without a trailing newline');
    assert.equal(mode(file), 0o600);
    assert.equal(
      new OpenVpnKeys(keys.keyDir).tlsCryptKey('employees'),
      key,
      'another portal process reads the same key',
    );
    assert.notEqual(keys.tlsCryptKey('guests'), key);
  });

  test('write tls-crypt keys that openvpn itself reads, framed like its own', () => {
    const keys = new OpenVpnKeys(keyDir());
    keys.tlsCryptKey('employees');
    const ours = keys.tlsCryptKeyPath('employees');
    const result = run('openvpn', ['--test-crypto', '--secret', ours, '--cipher', 'AES-256-CBC', '--verb', '0']);
    assert.equal(result.status, 0, `openvpn rejected the key: ${result.output}`);

    const theirs = join(keys.keyDir, 'genkey.key');
    const generated = run('openvpn', ['--genkey', 'secret', theirs]);
    assert.equal(generated.status, 0, generated.output);
    const frame = (text: string): string => text.replace(/^[0-9a-f]{32}$/gm, 'HEX');
    assert.equal(frame(readFileSync(ours, 'utf8')), frame(readFileSync(theirs, 'utf8')).trimEnd());
  });

  test('take a tls-crypt key from "openvpn --genkey" as it is, trailing newline dropped', () => {
    const keys = new OpenVpnKeys(keyDir());
    keys.tlsCryptKey('seed');
    const file = keys.tlsCryptKeyPath('employees');
    const generated = run('openvpn', ['--genkey', 'secret', file]);
    assert.equal(generated.status, 0, generated.output);
    assert.equal(keys.tlsCryptKey('employees'), readFileSync(file, 'utf8').trimEnd());
  });

  test('refuse profile ids that could lead out of the key directory', () => {
    const keys = new OpenVpnKeys(keyDir());
    assert.throws(() => keys.tlsCryptKey('../evil'), /invalid profile id/);
    assert.throws(() => keys.tlsCryptKey(''), /invalid profile id/);
    assert.throws(() => keys.serverCredentialPaths(0, 'a/b'), /invalid profile id/);
    assert.throws(() => keys.serverCredentialPaths(-1, 'employees'), /invalid node number/);
  });

  test('hand a node the same server certificate every time, and a new one when its host name changes', async () => {
    const keys = new OpenVpnKeys(keyDir());
    await assert.rejects(keys.serverCredentials(0, 'employees', 'vpn1.example.org', NOW), /no OpenVPN CA/);
    await keys.createCa(NOW, CA_NOT_AFTER);

    const first = await keys.serverCredentials(0, 'employees', 'vpn1.example.org', NOW);
    const again = await keys.serverCredentials(0, 'employees', 'vpn1.example.org', NOW);
    assert.deepEqual(again, first);
    const files = keys.serverCredentialPaths(0, 'employees');
    assert.equal(files.certificate, join(keys.keyDir, 'openvpn-server', 'employees.0.crt'));
    assert.equal(readFileSync(files.certificate, 'utf8'), first.certificatePem);
    assert.equal(readFileSync(files.key, 'utf8'), first.privateKeyPem);
    assert.equal(mode(files.certificate), 0o600);
    assert.equal(mode(files.key), 0o600);
    assert.equal(mode(join(keys.keyDir, 'openvpn-server')), 0o700);

    const otherNode = await keys.serverCredentials(1, 'employees', 'vpn2.example.org', NOW);
    assert.notEqual(otherNode.certificatePem, first.certificatePem);

    const renamed = await keys.serverCredentials(0, 'employees', 'vpn9.example.org', NOW);
    assert.notEqual(renamed.certificatePem, first.certificatePem);
    assert.deepEqual(opensslSubject(scratchFile(renamed.certificatePem)), {
      organizationalUnitName: 'employees',
      commonName: 'vpn9.example.org',
    });
    assert.equal(readFileSync(files.certificate, 'utf8'), renamed.certificatePem);
  });

  test('replace a server certificate that a different CA issued', async () => {
    const keys = new OpenVpnKeys(keyDir());
    await keys.createCa(NOW, CA_NOT_AFTER);
    const first = await keys.serverCredentials(0, 'employees', 'vpn1.example.org', NOW);

    const other = new OpenVpnKeys(keyDir());
    await other.createCa(NOW, CA_NOT_AFTER);
    const files = keys.serverCredentialPaths(0, 'employees');
    const otherFiles = other.serverCredentialPaths(0, 'employees');
    await other.serverCredentials(0, 'employees', 'vpn1.example.org', NOW);
    cpSync(otherFiles.certificate, files.certificate);
    cpSync(otherFiles.key, files.key);

    const replaced = await keys.serverCredentials(0, 'employees', 'vpn1.example.org', NOW);
    assert.notEqual(replaced.certificatePem, first.certificatePem);
    assert.ok(await (await keys.ca())?.hasIssued(replaced.certificatePem), 'the new certificate comes from our CA');
  });

  test('replace a server certificate that ends within 30 days, unless the CA ends as soon', async () => {
    const keys = new OpenVpnKeys(keyDir());
    await keys.createCa(NOW, CA_NOT_AFTER);
    const ca = await keys.ca();
    assert.ok(ca !== null, 'the CA exists');
    // A certificate for the right host from the right CA, but ending in 20 days.
    const ending = await ca.issueClient({
      commonName: 'vpn1.example.org',
      profileId: 'employees',
      now: NOW,
      notAfter: new Date(NOW.getTime() + 20 * DAY_MS),
    });
    const files = keys.serverCredentialPaths(0, 'employees');
    await keys.serverCredentials(0, 'employees', 'vpn1.example.org', NOW);
    writeFileSync(files.certificate, ending.certificatePem);
    writeFileSync(files.key, ending.privateKeyPem);
    const renewed = await keys.serverCredentials(0, 'employees', 'vpn1.example.org', NOW);
    assert.equal(renewed.notAfter.getTime(), ca.notAfter.getTime());

    const late = new Date(ca.notAfter.getTime() - 10 * DAY_MS);
    const kept = await keys.serverCredentials(0, 'employees', 'vpn1.example.org', late);
    assert.deepEqual(kept, renewed, 'a new certificate could not last longer than the CA');
  });
});
