// The keys of an eduVPN 3.x deployment made as eduVPN makes them, with the tools, not with this
// portal's code: an Ed25519 CA (`CN=VPN CA`) and client certificates `OU=<profile>, CN=<Base64
// of 32 random bytes>` valid until the configuration's expiry, from `openssl` (eduVPN's vpn-ca
// writes the same fields); tls-crypt keys from `openvpn --genkey secret`; WireGuard keys from
// `wg genkey` and `wg pubkey`.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { hostExec } from './netns.js';

/** The OpenSSL configuration of the CA in `folder`: its own certificate, and `openssl ca` for the clients. */
const caConfiguration = (folder: string): string =>
  [
    '[req]',
    'prompt = no',
    'distinguished_name = ca_name',
    'x509_extensions = ca_extensions',
    '[ca_name]',
    'CN = VPN CA',
    '[ca_extensions]',
    'basicConstraints = critical,CA:TRUE,pathlen:0',
    'keyUsage = critical,digitalSignature,keyCertSign',
    'extendedKeyUsage = serverAuth,clientAuth',
    'subjectKeyIdentifier = hash',
    '[ca]',
    'default_ca = eduvpn_ca',
    '[eduvpn_ca]',
    `database = ${folder}/index.txt`,
    `serial = ${folder}/serial.txt`,
    `new_certs_dir = ${folder}/issued`,
    `certificate = ${folder}/ca.crt`,
    `private_key = ${folder}/ca.key`,
    'default_md = default',
    'policy = any_name',
    'unique_subject = no',
    'email_in_dn = no',
    '[any_name]',
    'organizationalUnitName = supplied',
    'commonName = supplied',
    '[client_extensions]',
    'basicConstraints = critical,CA:FALSE',
    'keyUsage = critical,digitalSignature',
    'extendedKeyUsage = clientAuth',
    'authorityKeyIdentifier = keyid',
    'subjectKeyIdentifier = none',
    '',
  ].join('\n');

/** Certificates start this long before they are made, as vpn-ca's do. */
const BACKDATE_MS = 5 * 60 * 1000;

export interface ClientCredentials {
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

/** An eduVPN OpenVPN CA in a work folder of its own; `issueClient` is not reentrant (openssl ca's index). */
export class EduVpnTestCa {
  #issued = 0;

  private constructor(
    private readonly folder: string,
    readonly certificatePem: string,
    readonly privateKeyPem: string,
  ) {}

  static async create(folder: string, notAfter: Date): Promise<EduVpnTestCa> {
    await mkdir(path.join(folder, 'issued'), { recursive: true, mode: 0o700 });
    await writeFile(path.join(folder, 'ca.cnf'), caConfiguration(folder));
    await writeFile(path.join(folder, 'index.txt'), '');
    const days = Math.max(1, Math.ceil((notAfter.getTime() - Date.now()) / 86_400_000));
    await hostExec('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', path.join(folder, 'ca.key')]);
    await hostExec('openssl', [
      'req',
      '-x509',
      '-new',
      '-key',
      path.join(folder, 'ca.key'),
      '-config',
      path.join(folder, 'ca.cnf'),
      '-days',
      String(days),
      '-set_serial',
      `0x${randomSerial()}`,
      '-out',
      path.join(folder, 'ca.crt'),
    ]);
    return new EduVpnTestCa(
      folder,
      await readFile(path.join(folder, 'ca.crt'), 'utf8'),
      await readFile(path.join(folder, 'ca.key'), 'utf8'),
    );
  }

  /** A client certificate `OU=<profileId>, CN=<commonName>` valid until `notAfter`, and its key. */
  async issueClient(commonName: string, profileId: string, notAfter: Date): Promise<ClientCredentials> {
    this.#issued += 1;
    const base = path.join(this.folder, `client-${this.#issued}`);
    // The subject from a file: Base64 names hold "/" and "+", which -subj would split.
    await writeFile(
      `${base}.cnf`,
      [
        '[req]',
        'prompt = no',
        'distinguished_name = client_name',
        '[client_name]',
        `OU = ${profileId}`,
        `CN = ${commonName}`,
        '',
      ].join('\n'),
    );
    await writeFile(path.join(this.folder, 'serial.txt'), `${randomSerial()}\n`);
    await hostExec('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', `${base}.key`]);
    await hostExec('openssl', ['req', '-new', '-key', `${base}.key`, '-config', `${base}.cnf`, '-out', `${base}.csr`]);
    await hostExec('openssl', [
      'ca',
      '-batch',
      '-config',
      path.join(this.folder, 'ca.cnf'),
      '-extensions',
      'client_extensions',
      '-in',
      `${base}.csr`,
      '-out',
      `${base}.crt`,
      '-notext',
      '-preserveDN',
      '-startdate',
      opensslTime(new Date(Date.now() - BACKDATE_MS)),
      '-enddate',
      opensslTime(notAfter),
    ]);
    return {
      certificatePem: await readFile(`${base}.crt`, 'utf8'),
      privateKeyPem: await readFile(`${base}.key`, 'utf8'),
    };
  }
}

/** A tls-crypt key as `openvpn --genkey secret` writes it, without the final newline (as eduVPN stores it). */
export async function tlsCryptKey(folder: string, name: string): Promise<string> {
  const file = path.join(folder, name);
  await hostExec('openvpn', ['--genkey', 'secret', file]);
  return (await readFile(file, 'utf8')).replace(/\n$/, '');
}

export interface WireGuardKeys {
  readonly privateKey: string;
  readonly publicKey: string;
}

/** A key pair from `wg genkey` and `wg pubkey`. */
export async function wireGuardKeys(): Promise<WireGuardKeys> {
  const privateKey = (await hostExec('wg', ['genkey'])).stdout.trim();
  const publicKey = (await hostExec('wg', ['pubkey'], { stdin: `${privateKey}\n` })).stdout.trim();
  return { privateKey, publicKey };
}

/** 32 random bytes as 64 lowercase hex digits: the node and Admin API secrets of generate-secrets. */
export function hexSecret(): string {
  return randomBytes(32).toString('hex');
}

/** A serial below 2^128, as vpn-ca takes them. */
function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}

/** YYYYMMDDHHMMSSZ, as `openssl ca -startdate/-enddate` take a time. */
function opensslTime(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace(/[-T:]/g, '')}Z`;
}
