// The key files an eduVPN 3.x server keeps, read for the move: the portal's Admin API and node
// secrets and its OpenVPN CA (configuration folder), the tls-crypt key of each profile and the
// nodes' WireGuard public keys (data folder), and each node's own WireGuard private key (from
// the node). Each is checked as eduVPN writes it, so that a file the old clients depend on is
// known good before anything is imported. A missing file is simply absent; a file that is
// there and cannot be read is an error naming it. No secret ever goes into a message.
import { open, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { keyMatchesCertificate } from '../openvpn/certificate-authority.js';
import { isTlsCryptKey } from '../openvpn/tls-crypt.js';
import {
  asNodeNumber,
  asProfileId,
  asWireGuardKey,
  type NodeNumber,
  type ProfileId,
  type WireGuardKey,
} from '../shared/ids.js';
import { isWireGuardKey, wireGuardPublicKey } from '../wireguard/keys.js';
import type { EduVpnKeys, EduVpnLocation } from './deployment.js';
import { EDUVPN_PROFILE_ID_PATTERN } from './eduvpn-rows.js';
import { EduVpnReadError } from './read-error.js';

const NODE_KEY_FILE = /^node\.(0|[1-9]\d{0,8})\.key$/;
const TLS_CRYPT_FILE = /^tls-crypt-(.+)\.key$/;
const WIREGUARD_PUBLIC_KEY_FILE = /^wireguard\.(0|[1-9]\d{0,8})\.public\.key$/;
/** generate-secrets writes 32 random bytes as lowercase hex; the node API refuses anything else. */
const NODE_SECRET = /^[a-f0-9]{64}$/;
/** One line of visible characters: what a Bearer token can be. */
const ADMIN_API_SECRET = /^[\x21-\x7e]+$/;
const PERMISSION_HINT =
  "run the import as root, or as a member of the web server's group (www-data on Debian, apache on Fedora and EL)";

/** Reads every key file of the deployment at `location`; throws EduVpnReadError on the first that is wrong. */
export async function readEduVpnKeys(location: EduVpnLocation): Promise<EduVpnKeys> {
  const configKeys = path.join(location.configDir, 'keys');
  const dataKeys = path.join(location.dataDir, 'keys');
  await requireFolder(location.configDir, 'configuration folder');
  await requireFolder(location.dataDir, 'data folder');
  const configNames = await listFolder(configKeys);
  const dataNames = await listFolder(dataKeys);

  const adminApiKey = await readAdminApiKey(path.join(configKeys, 'admin-api.key'));
  const nodeKeys = new Map<NodeNumber, string>();
  for (const [node, name] of numberedFiles(configNames, NODE_KEY_FILE)) {
    const file = path.join(configKeys, name);
    const text = await readKeyFile(file);
    if (text === null) continue;
    if (!NODE_SECRET.test(text.trim()))
      throw new EduVpnReadError(`${file} is not a node secret (64 hexadecimal digits)`);
    nodeKeys.set(node, text.trim());
  }
  const openVpnCa = await readCertificateAuthority(path.join(configKeys, 'ca'));
  const tlsCryptKeys = await readTlsCryptKeys(dataKeys, dataNames);
  const wireGuardPublicKeys = new Map<NodeNumber, WireGuardKey>();
  for (const [node, name] of numberedFiles(dataNames, WIREGUARD_PUBLIC_KEY_FILE)) {
    const file = path.join(dataKeys, name);
    const text = await readKeyFile(file);
    if (text === null) continue;
    if (!isWireGuardKey(text.trim()))
      throw new EduVpnReadError(`${file} is not a WireGuard public key (Base64 of 32 bytes)`);
    wireGuardPublicKeys.set(node, asWireGuardKey(text.trim()));
  }
  const wireGuardPrivateKeys = await readNodeWireGuardKeys(location, dataKeys, wireGuardPublicKeys);
  return { adminApiKey, nodeKeys, openVpnCa, tlsCryptKeys, wireGuardPrivateKeys, wireGuardPublicKeys };
}

async function readAdminApiKey(file: string): Promise<string | null> {
  const text = await readKeyFile(file);
  if (text === null) return null;
  if (!ADMIN_API_SECRET.test(text.trim()))
    throw new EduVpnReadError(`${file} does not hold an Admin API key (one line of visible characters)`);
  return text.trim();
}

/** keys/ca/ca.crt and ca.key: both or neither, and the key must be the certificate's. */
async function readCertificateAuthority(folder: string): Promise<EduVpnKeys['openVpnCa']> {
  const certificateFile = path.join(folder, 'ca.crt');
  const keyFile = path.join(folder, 'ca.key');
  const certificatePem = await readKeyFile(certificateFile);
  const privateKeyPem = await readKeyFile(keyFile);
  if (certificatePem === null && privateKeyPem === null) return null;
  if (certificatePem === null || privateKeyPem === null) {
    const [present, missing] = certificatePem === null ? [keyFile, certificateFile] : [certificateFile, keyFile];
    throw new EduVpnReadError(
      `${present} is there but ${missing} is not: the OpenVPN CA needs both (old OpenVPN files would not connect without them)`,
    );
  }
  if (!keyMatchesCertificate(certificatePem, privateKeyPem))
    throw new EduVpnReadError(
      `${keyFile} is not the key of ${certificateFile} (or one of them is not a PEM Ed25519 key or certificate): servers signed with it would not be accepted by old OpenVPN files`,
    );
  return { certificatePem: certificatePem.trim(), privateKeyPem: privateKeyPem.trim() };
}

async function readTlsCryptKeys(folder: string, names: readonly string[]): Promise<Map<ProfileId, string>> {
  const keys = new Map<ProfileId, string>();
  for (const name of [...names].sort()) {
    const profile = TLS_CRYPT_FILE.exec(name)?.[1];
    if (profile === undefined || !EDUVPN_PROFILE_ID_PATTERN.test(profile)) continue;
    const file = path.join(folder, name);
    const text = await readKeyFile(file);
    if (text === null) continue;
    if (!isTlsCryptKey(text))
      throw new EduVpnReadError(
        `${file} is not an OpenVPN tls-crypt key (a 2048-bit static key, as openvpn --genkey writes it)`,
      );
    keys.set(asProfileId(profile), text);
  }
  return keys;
}

/**
 * Each node's wireguard.key the caller named: it must be there (it was asked for) and be a
 * WireGuard private key whose public key is the one the issued files name
 * (wireguard.N.public.key), or those files would not connect to the node any more.
 */
async function readNodeWireGuardKeys(
  location: EduVpnLocation,
  dataKeys: string,
  publicKeys: ReadonlyMap<NodeNumber, WireGuardKey>,
): Promise<Map<NodeNumber, WireGuardKey>> {
  const keys = new Map<NodeNumber, WireGuardKey>();
  for (const [node, file] of [...location.nodeWireGuardKeyFiles].sort(([a], [b]) => a - b)) {
    const text = await readKeyFile(file);
    if (text === null) throw new EduVpnReadError(`${file} (the WireGuard key of node ${node}) does not exist`);
    const privateKey = text.trim();
    if (!isWireGuardKey(privateKey))
      throw new EduVpnReadError(
        `${file} (node ${node}) is not a WireGuard private key (Base64 of 32 bytes, as wg genkey writes it)`,
      );
    const expected = publicKeys.get(node);
    if (expected !== undefined && wireGuardPublicKey(privateKey) !== expected)
      throw new EduVpnReadError(
        `${file} is not the private key of ${path.join(dataKeys, `wireguard.${node}.public.key`)}: the WireGuard files issued for node ${node} name that public key and would not connect`,
      );
    keys.set(node, asWireGuardKey(privateKey));
  }
  return keys;
}

/** The files of `names` matching `pattern` (whose group is a node number), by node number. */
function numberedFiles(names: readonly string[], pattern: RegExp): [NodeNumber, string][] {
  const found: [NodeNumber, string][] = [];
  for (const name of names) {
    const number = pattern.exec(name)?.[1];
    if (number !== undefined) found.push([asNodeNumber(Number(number)), name]);
  }
  return found.sort(([a], [b]) => a - b);
}

/** The text of a key file, or null when there is none. */
async function readKeyFile(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT') return null;
    throw unreadable(file, code);
  }
}

async function listFolder(folder: string): Promise<string[]> {
  try {
    return await readdir(folder);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT') return [];
    throw unreadable(folder, code);
  }
}

async function requireFolder(folder: string, what: string): Promise<void> {
  try {
    if ((await stat(folder)).isDirectory()) return;
  } catch (error) {
    const code = errorCode(error);
    if (code !== 'ENOENT') throw unreadable(folder, code);
    throw new EduVpnReadError(`the eduVPN ${what} ${folder} does not exist`);
  }
  throw new EduVpnReadError(`the eduVPN ${what} ${folder} is not a folder`);
}

/** Throws the error readKeyFile would give when `file` cannot be opened for reading (the SQLite database). */
export async function requireReadableFile(file: string, what: string): Promise<void> {
  try {
    await (await open(file, 'r')).close();
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT') throw new EduVpnReadError(`the eduVPN ${what} ${file} does not exist`);
    throw unreadable(file, code);
  }
}

function unreadable(file: string, code: string): EduVpnReadError {
  if (code === 'EACCES' || code === 'EPERM')
    return new EduVpnReadError(`cannot read ${file}: permission denied; ${PERMISSION_HINT}`);
  if (code === 'EISDIR') return new EduVpnReadError(`cannot read ${file}: it is a folder, not a key file`);
  if (code === 'ENOTDIR') return new EduVpnReadError(`cannot read ${file}: a part of its path is not a folder`);
  return new EduVpnReadError(`cannot read ${file}: ${code}`);
}

function errorCode(error: unknown): string {
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  return typeof code === 'string' ? code : 'unknown error';
}
