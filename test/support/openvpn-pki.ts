// Certificates for OpenVPN tests, made with the `openssl` command the way the portal's CA
// shapes them (reference §8.1): an Ed25519 CA, a server certificate with EKU serverAuth, and
// client certificates with subject `OU=<profileId>, CN=<44-character Base64 name>`. Plus a
// tls-crypt key from `openvpn --genkey tls-crypt`.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hostExec } from './netns.js';

export interface CertificateAndKey {
  readonly certificate: string;
  readonly privateKey: string;
}

/** A common name like the portal's: Base64 of 32 random bytes (may contain + and /). */
export function randomCommonName(): string {
  return randomBytes(32).toString('base64');
}

export class TestPki {
  readonly #directory: string;
  readonly ca: string;
  readonly tlsCrypt: string;
  #serial = 0;

  private constructor(directory: string, ca: string, tlsCrypt: string) {
    this.#directory = directory;
    this.ca = ca;
    this.tlsCrypt = tlsCrypt;
  }

  /** A fresh CA (CN=VPN CA) and tls-crypt key in `directory`. */
  static async create(directory: string): Promise<TestPki> {
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const caKey = join(directory, 'ca.key');
    const caCertificate = join(directory, 'ca.crt');
    await hostExec('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', caKey]);
    await hostExec('openssl', [
      'req',
      '-x509',
      '-new',
      '-key',
      caKey,
      '-subj',
      '/CN=VPN CA',
      '-days',
      '2',
      '-out',
      caCertificate,
      '-addext',
      'basicConstraints=critical,CA:TRUE,pathlen:0',
      '-addext',
      'keyUsage=critical,digitalSignature,keyCertSign',
    ]);
    const tlsCryptFile = join(directory, 'tls-crypt.key');
    await hostExec('openvpn', ['--genkey', 'tls-crypt', tlsCryptFile]);
    return new TestPki(
      directory,
      (await readFile(caCertificate, 'utf8')).trim(),
      (await readFile(tlsCryptFile, 'utf8')).trim(),
    );
  }

  server(hostName: string, profileId: string): Promise<CertificateAndKey> {
    return this.#issue(profileId, hostName, 'serverAuth');
  }

  client(profileId: string, commonName: string): Promise<CertificateAndKey> {
    return this.#issue(profileId, commonName, 'clientAuth');
  }

  async #issue(
    organizationalUnit: string,
    commonName: string,
    usage: 'serverAuth' | 'clientAuth',
  ): Promise<CertificateAndKey> {
    this.#serial += 1;
    const base = join(this.#directory, `cert-${this.#serial}`);
    // The subject comes from a config file: Base64 names contain "/" and "+", which -subj would split.
    await writeFile(
      `${base}.cnf`,
      [
        '[req]',
        'prompt = no',
        'distinguished_name = dn',
        '[dn]',
        `OU = ${organizationalUnit}`,
        `CN = ${commonName}`,
        '',
      ].join('\n'),
    );
    await writeFile(
      `${base}.ext`,
      [
        'basicConstraints = critical,CA:FALSE',
        'keyUsage = critical,digitalSignature',
        `extendedKeyUsage = ${usage}`,
        '',
      ].join('\n'),
    );
    await hostExec('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', `${base}.key`]);
    await hostExec('openssl', ['req', '-new', '-key', `${base}.key`, '-config', `${base}.cnf`, '-out', `${base}.csr`]);
    await hostExec('openssl', [
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      join(this.#directory, 'ca.crt'),
      '-CAkey',
      join(this.#directory, 'ca.key'),
      '-set_serial',
      `0x${randomBytes(16).toString('hex')}`,
      '-days',
      '1',
      '-extfile',
      `${base}.ext`,
      '-out',
      `${base}.crt`,
    ]);
    return {
      certificate: (await readFile(`${base}.crt`, 'utf8')).trim(),
      privateKey: (await readFile(`${base}.key`, 'utf8')).trim(),
    };
  }
}
