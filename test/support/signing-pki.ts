// A profile-signing PKI made at run time with the real `openssl`: a root CA, an intermediate CA
// and a signing certificate (RSA or P-256), plus an expired certificate and a foreign key, for
// `apple.signing*` and for checking signed profiles with `openssl smime -verify`.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SigningPki {
  readonly dir: string;
  /** The root devices trust (PEM file). */
  readonly rootCertificate: string;
  /** The intermediate CA's certificate: `apple.signingChain`. */
  readonly chain: string;
  readonly signingCertificate: string;
  readonly signingKey: string;
  /** A certificate for `signingKey` that expired yesterday. */
  readonly expiredCertificate: string;
  /** A key of the same kind that belongs to no certificate here. */
  readonly otherKey: string;
  /** `openssl smime -verify` against the root: the signed content, or a rejection with openssl's message. */
  verify(der: Uint8Array): Promise<string>;
  remove(): Promise<void>;
}

export async function makeSigningPki(keyType: 'rsa' | 'ec' = 'ec'): Promise<SigningPki> {
  const dir = await mkdtemp(path.join(tmpdir(), 'signing-pki-'));
  const file = (name: string) => path.join(dir, name);
  const keyOptions =
    keyType === 'rsa' ? ['-newkey', 'rsa:2048'] : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
  await writeFile(file('ca.ext'), 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n');
  await writeFile(file('signer.ext'), 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n');
  await run('openssl', [
    'req',
    '-x509',
    ...keyOptions,
    '-nodes',
    '-keyout',
    file('root.key'),
    '-out',
    file('root.pem'),
    '-subj',
    '/CN=Test Root',
    '-days',
    '2',
  ]);
  const issue = async (
    name: string,
    subject: string,
    issuer: string,
    extensions: string,
    days: string,
    key = `${name}.key`,
  ) => {
    if (key === `${name}.key`)
      await run('openssl', [
        'req',
        ...keyOptions,
        '-nodes',
        '-keyout',
        file(key),
        '-out',
        file(`${name}.csr`),
        '-subj',
        subject,
      ]);
    else await run('openssl', ['req', '-new', '-key', file(key), '-out', file(`${name}.csr`), '-subj', subject]);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file(`${issuer}.pem`),
      '-CAkey',
      file(`${issuer}.key`),
      '-CAcreateserial',
      '-extfile',
      file(extensions),
      '-days',
      days,
      '-out',
      file(`${name}.pem`),
    ]);
  };
  await issue('intermediate', '/CN=Test Intermediate', 'root', 'ca.ext', '2');
  await issue('signer', '/CN=Profile Signer', 'intermediate', 'signer.ext', '1');
  // -days -1: valid from now until yesterday, i.e. expired.
  await issue('expired', '/CN=Expired Signer', 'intermediate', 'signer.ext', '-1', 'signer.key');
  await run('openssl', [
    'req',
    ...keyOptions,
    '-nodes',
    '-keyout',
    file('other.key'),
    '-out',
    file('other.csr'),
    '-subj',
    '/CN=Other',
  ]);

  return {
    dir,
    rootCertificate: file('root.pem'),
    chain: file('intermediate.pem'),
    signingCertificate: file('signer.pem'),
    signingKey: file('signer.key'),
    expiredCertificate: file('expired.pem'),
    otherKey: file('other.key'),
    async verify(der) {
      const input = file(`signed-${Math.random().toString(36).slice(2)}.der`);
      await writeFile(input, der);
      const { stdout } = await run(
        'openssl',
        ['smime', '-verify', '-inform', 'DER', '-in', input, '-CAfile', file('root.pem')],
        {
          encoding: 'buffer',
          maxBuffer: 16 * 1024 * 1024,
        },
      );
      return stdout.toString('utf8');
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
