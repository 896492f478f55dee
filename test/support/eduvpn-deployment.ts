// The one way tests get an eduVPN 3.x deployment: `writeEduVpnDeployment(dir, spec)` lays it out
// as eduVPN's packages do — dir/etc/vpn-user-portal/keys/…, dir/var/lib/vpn-user-portal/{db.sqlite,
// keys/…} and per node dir/node-N/etc/vpn-server-node/keys/{node.key,wireguard.key} — or puts
// the database into a PostgreSQL or MariaDB database it is given. Keys come from openssl,
// openvpn and wg (test/support/eduvpn-keys.ts), client files as eduVPN 3.4.1 writes them
// (test/support/eduvpn-client-files.ts): nothing of this portal's code makes any of it. A spec
// reads as the deployment it describes; `generated` adds many users and configurations fast, for
// benchmarks and paging.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { EduVpnLocation } from '../../src/eduvpn/deployment.js';
import { asNodeNumber, type NodeNumber } from '../../src/shared/ids.js';
import {
  eduVpnClientAddresses,
  eduVpnOpenVpnFile,
  eduVpnWireGuardFile,
  type EduVpnFileProfile,
} from './eduvpn-client-files.js';
import {
  type EduVpnDatabaseTarget,
  type EduVpnRow,
  type EduVpnTestSchemaVersion,
  writeEduVpnDatabase,
} from './eduvpn-database.js';
import { createTestDatabase, dropTestDatabase } from './postgres.js';
import { EduVpnTestCa, hexSecret, tlsCryptKey, type WireGuardKeys, wireGuardKeys } from './eduvpn-keys.js';

export interface EduVpnProfileNodeSpec {
  readonly nodeNumber: number;
  readonly hostName: string;
  /** WireGuard on this node when both are given (eduVPN's wRangeFour/wRangeSix). */
  readonly wRangeFour?: string;
  readonly wRangeSix?: string;
  /** OpenVPN on this node when both are given (oRangeFour/oRangeSix). */
  readonly oRangeFour?: string;
  readonly oRangeSix?: string;
}

export interface EduVpnProfileSpec {
  readonly profileId: string;
  /** Default: the profile id. */
  readonly displayName?: string;
  /** The nodes of `onNode`, each with its host name and ranges. */
  readonly nodes: readonly EduVpnProfileNodeSpec[];
  /** Default true: the files route everything through the VPN. */
  readonly defaultGateway?: boolean;
  readonly routeList?: readonly string[];
  /** OpenVPN ports (oUdpPortList / oTcpPortList); default [1194] each. */
  readonly udpPorts?: readonly number[];
  readonly tcpPorts?: readonly number[];
}

export interface EduVpnConfigurationSpec {
  readonly protocol: 'wireguard' | 'openvpn';
  readonly profileId: string;
  /** Default: the profile's first node. */
  readonly nodeNumber?: number;
  /** Default: `Admin API` (auth_key null) or the authorization's client id. */
  readonly displayName?: string;
  /** An authorization of the same user: the configuration was issued to an app through it. */
  readonly authKey?: string;
  readonly expiresAt?: Date;
}

export interface EduVpnUserSpec {
  readonly userId: string;
  readonly disabled?: boolean;
  readonly permissions?: readonly string[];
  /** A local_users row (a password for the user portal's own login). */
  readonly localPassword?: boolean;
  readonly authorizations?: readonly { readonly authKey: string; readonly clientId?: string }[];
  readonly configurations?: readonly EduVpnConfigurationSpec[];
}

/** Many users alike, for benchmarks: `users` × `configurationsPerUser`, no client files, no openssl per certificate. */
export interface GeneratedEduVpnUsers {
  readonly users: number;
  readonly configurationsPerUser: number;
  readonly profileId: string;
  /** Default wireguard; `both` alternates. */
  readonly protocol?: 'wireguard' | 'openvpn' | 'both';
  /** Every n-th user is disabled (0: none; default 0). */
  readonly disabledEvery?: number;
}

export interface EduVpnDeploymentSpec {
  /** Default 2023011801. */
  readonly schemaVersion?: EduVpnTestSchemaVersion;
  /** The rows of table `version` (default: the schema version once); a test of odd versions sets it. */
  readonly versionRows?: readonly string[];
  /** A PostgreSQL database (empty) to write eduVPN's tables into; default: SQLite in the data folder. */
  readonly postgresUrl?: string;
  /** A MariaDB database (empty, mysql://…) to write eduVPN's tables into instead. */
  readonly mysqlUrl?: string;
  readonly portalUrl?: string;
  readonly wireGuardListenPort?: number;
  readonly profiles: readonly EduVpnProfileSpec[];
  readonly users: readonly EduVpnUserSpec[];
  readonly generated?: GeneratedEduVpnUsers;
  /** Daily statistics per profile (default 2 days, the first with guest users). */
  readonly statisticsDays?: number;
  /** live_stats rows (default 3). */
  readonly liveStatistics?: number;
  /** A connection log entry per configuration (default true). */
  readonly connectionLog?: boolean;
  /** Default: now. Configurations are made a day before it and expire 90 days after. */
  readonly now?: Date;
}

/** One configuration as eduVPN stored it, with the file it handed out (none for generated ones). */
export interface EduVpnIssuedConfiguration {
  readonly userId: string;
  readonly protocol: 'wireguard' | 'openvpn';
  readonly profileId: string;
  readonly nodeNumber: number;
  /** The WireGuard public key or the OpenVPN common name. */
  readonly connectionId: string;
  readonly displayName: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly authKey: string | null;
  /** WireGuard only. */
  readonly ipFour: string | null;
  readonly ipSix: string | null;
  /** The .conf or .ovpn text, and where it was written (dir/issued/). */
  readonly file: string | null;
  readonly filePath: string | null;
}

export interface WrittenEduVpnDeployment {
  /** What `readEduVpnDeployment` and `vpn-portal import eduvpn` are given. */
  readonly location: EduVpnLocation;
  readonly schemaVersion: EduVpnTestSchemaVersion;
  readonly adminApiKey: string;
  readonly nodeKeys: ReadonlyMap<number, string>;
  readonly nodeWireGuardKeys: ReadonlyMap<number, WireGuardKeys>;
  readonly caCertificatePem: string;
  readonly caPrivateKeyPem: string;
  readonly tlsCryptKeys: ReadonlyMap<string, string>;
  readonly users: readonly { readonly userId: string; readonly disabled: boolean }[];
  readonly configurations: readonly EduVpnIssuedConfiguration[];
  /** Rows written per table. */
  readonly rowCounts: ReadonlyMap<string, number>;
  /** Where each node's files are: dir/node-N/etc/vpn-server-node. */
  readonly nodeConfigDirs: ReadonlyMap<number, string>;
}

const DAY_MS = 86_400_000;
const DEFAULT_PORTAL_URL = 'https://vpn.example.org/vpn-user-portal/';
const CA_LIFETIME_MS = 10 * 365 * DAY_MS;

/**
 * Where a test's eduVPN database goes on this pass: a fresh PostgreSQL database of its own on
 * the PostgreSQL pass (TEST_DATABASE_URL; dropped after the test), else SQLite (`{}`, the
 * default of the spec). Spread it into the spec.
 */
export async function eduVpnDatabaseOfPass(t: {
  after: (fn: () => Promise<void> | void) => void;
}): Promise<{ readonly postgresUrl?: string }> {
  const server = process.env['TEST_DATABASE_URL'];
  if (server === undefined || server === '') return {};
  const { name, url } = await createTestDatabase(server);
  t.after(() => dropTestDatabase(server, name));
  return { postgresUrl: url };
}

/** What the writing steps share. */
interface Writing {
  readonly spec: EduVpnDeploymentSpec;
  readonly dir: string;
  readonly now: Date;
  readonly rows: Map<string, EduVpnRow[]>;
  readonly ca: EduVpnTestCa;
  readonly tlsCryptKeys: Map<string, string>;
  readonly nodeWireGuardKeys: Map<number, WireGuardKeys>;
  /** The next address index per `profile/node`. */
  readonly nextAddress: Map<string, number>;
  readonly configurations: EduVpnIssuedConfiguration[];
}

/** Writes the deployment `spec` describes under `dir` (and into `spec.postgresUrl` or `spec.mysqlUrl` when given). */
export async function writeEduVpnDeployment(dir: string, spec: EduVpnDeploymentSpec): Promise<WrittenEduVpnDeployment> {
  const configDir = path.join(dir, 'etc/vpn-user-portal');
  const dataDir = path.join(dir, 'var/lib/vpn-user-portal');
  for (const folder of [path.join(configDir, 'keys/ca'), path.join(dataDir, 'keys'), path.join(dir, 'issued')])
    await mkdir(folder, { recursive: true, mode: 0o700 });
  const now = spec.now ?? new Date();
  const ca = await EduVpnTestCa.create(path.join(dir, 'ca-work'), new Date(now.getTime() + CA_LIFETIME_MS));
  await writeFile(path.join(configDir, 'keys/ca/ca.crt'), ca.certificatePem, { mode: 0o600 });
  await writeFile(path.join(configDir, 'keys/ca/ca.key'), ca.privateKeyPem, { mode: 0o600 });
  const adminApiKey = hexSecret();
  await writeFile(path.join(configDir, 'keys/admin-api.key'), adminApiKey, { mode: 0o600 });

  const writing: Writing = {
    spec,
    dir,
    now,
    rows: new Map(),
    ca,
    tlsCryptKeys: new Map(),
    nodeWireGuardKeys: new Map(),
    nextAddress: new Map(),
    configurations: [],
  };
  const { nodeKeys, nodeConfigDirs, nodeWireGuardKeyFiles } = await writeNodeKeys(writing, configDir, dataDir);
  await writeTlsCryptKeys(writing, dataDir);
  const users = await addUsers(writing);
  await addGeneratedUsers(writing, users);
  addStatistics(writing);

  const schemaVersion = spec.schemaVersion ?? '2023011801';
  const database: EduVpnDatabaseTarget =
    spec.mysqlUrl !== undefined
      ? { dialect: 'mysql', url: spec.mysqlUrl }
      : spec.postgresUrl !== undefined
        ? { dialect: 'postgres', url: spec.postgresUrl }
        : { dialect: 'sqlite', path: path.join(dataDir, 'db.sqlite') };
  await writeEduVpnDatabase(database, schemaVersion, writing.rows, spec.versionRows);
  return {
    location: {
      configDir,
      dataDir,
      database: database.dialect === 'sqlite' ? `sqlite:${database.path}` : database.url,
      nodeWireGuardKeyFiles,
    },
    schemaVersion,
    adminApiKey,
    nodeKeys,
    nodeWireGuardKeys: writing.nodeWireGuardKeys,
    caCertificatePem: ca.certificatePem,
    caPrivateKeyPem: ca.privateKeyPem,
    tlsCryptKeys: writing.tlsCryptKeys,
    users,
    configurations: writing.configurations,
    rowCounts: new Map([...writing.rows].map(([table, rows]) => [table, rows.length])),
    nodeConfigDirs,
  };
}

/** node.N.key on the portal and the node, and each WireGuard node's key pair (the public half on the portal). */
async function writeNodeKeys(writing: Writing, configDir: string, dataDir: string) {
  const nodeKeys = new Map<number, string>();
  const nodeConfigDirs = new Map<number, string>();
  const nodeWireGuardKeyFiles = new Map<NodeNumber, string>();
  const nodes = new Set(writing.spec.profiles.flatMap((profile) => profile.nodes.map((node) => node.nodeNumber)));
  const wireGuardNodes = new Set(
    writing.spec.profiles.flatMap((profile) => profile.nodes.filter(hasWireGuard).map((node) => node.nodeNumber)),
  );
  for (const node of [...nodes].sort((a, b) => a - b)) {
    const nodeDir = path.join(writing.dir, `node-${node}/etc/vpn-server-node`);
    await mkdir(path.join(nodeDir, 'keys'), { recursive: true, mode: 0o700 });
    nodeConfigDirs.set(node, nodeDir);
    const secret = hexSecret();
    nodeKeys.set(node, secret);
    await writeFile(path.join(configDir, `keys/node.${node}.key`), secret, { mode: 0o600 });
    await writeFile(path.join(nodeDir, 'keys/node.key'), secret, { mode: 0o600 });
    if (!wireGuardNodes.has(node)) continue;
    const keys = await wireGuardKeys();
    writing.nodeWireGuardKeys.set(node, keys);
    const keyFile = path.join(nodeDir, 'keys/wireguard.key');
    await writeFile(keyFile, keys.privateKey, { mode: 0o600 });
    await writeFile(path.join(dataDir, `keys/wireguard.${node}.public.key`), keys.publicKey, { mode: 0o600 });
    nodeWireGuardKeyFiles.set(asNodeNumber(node), keyFile);
  }
  return { nodeKeys, nodeConfigDirs, nodeWireGuardKeyFiles };
}

/** tls-crypt-<profile>.key for each profile with OpenVPN on a node. */
async function writeTlsCryptKeys(writing: Writing, dataDir: string): Promise<void> {
  for (const profile of writing.spec.profiles) {
    if (!profile.nodes.some(hasOpenVpn)) continue;
    const key = await tlsCryptKey(path.join(writing.dir, 'ca-work'), `tls-crypt-${profile.profileId}.key`);
    writing.tlsCryptKeys.set(profile.profileId, key);
    await writeFile(path.join(dataDir, `keys/tls-crypt-${profile.profileId}.key`), key, { mode: 0o600 });
  }
}

function hasWireGuard(node: EduVpnProfileNodeSpec): boolean {
  return node.wRangeFour !== undefined && node.wRangeSix !== undefined;
}

function hasOpenVpn(node: EduVpnProfileNodeSpec): boolean {
  return node.oRangeFour !== undefined && node.oRangeSix !== undefined;
}

function rowsOf(writing: Writing, table: string): EduVpnRow[] {
  let rows = writing.rows.get(table);
  if (rows === undefined) {
    rows = [];
    writing.rows.set(table, rows);
  }
  return rows;
}

function atom(date: Date): string {
  return `${date.toISOString().slice(0, 19)}+00:00`;
}

async function addUsers(writing: Writing): Promise<{ userId: string; disabled: boolean }[]> {
  const users: { userId: string; disabled: boolean }[] = [];
  for (const user of writing.spec.users) {
    const disabled = user.disabled ?? false;
    users.push({ userId: user.userId, disabled });
    rowsOf(writing, 'users').push({
      user_id: user.userId,
      last_seen: atom(new Date(writing.now.getTime() - DAY_MS)),
      permission_list: JSON.stringify(user.permissions ?? []),
      auth_data: null,
      is_disabled: disabled,
    });
    if (user.localPassword === true)
      rowsOf(writing, 'local_users').push({
        user_id: user.userId,
        password_hash: `$argon2id$v=19$m=65536,t=2,p=1$${randomBytes(16).toString('base64')}$${randomBytes(32).toString('base64')}`,
        created_at: atom(writing.now),
      });
    const clients = new Map<string, string>();
    for (const authorization of user.authorizations ?? []) {
      const clientId = authorization.clientId ?? 'org.eduvpn.app.linux';
      clients.set(authorization.authKey, clientId);
      addAuthorization(writing, user.userId, authorization.authKey, clientId);
    }
    for (const configuration of user.configurations ?? []) {
      if (configuration.authKey !== undefined && !clients.has(configuration.authKey))
        throw new Error(
          `configuration of ${user.userId} names authorization ${configuration.authKey}, which the user does not have`,
        );
      const clientId = configuration.authKey === undefined ? undefined : clients.get(configuration.authKey);
      await addConfiguration(writing, user.userId, configuration, clientId);
    }
  }
  return users;
}

function addAuthorization(writing: Writing, userId: string, authKey: string, clientId: string): void {
  rowsOf(writing, 'oauth_authorizations').push({
    auth_key: authKey,
    client_id: clientId,
    scope: 'config',
    authorized_at: atom(new Date(writing.now.getTime() - 2 * DAY_MS)),
    expires_at: atom(new Date(writing.now.getTime() + 90 * DAY_MS)),
    user_id: userId,
  });
  rowsOf(writing, 'oauth_refresh_token_log').push({
    auth_key: authKey,
    refresh_token_id: randomBytes(12).toString('hex'),
  });
}

function profileOf(writing: Writing, profileId: string): EduVpnProfileSpec {
  const profile = writing.spec.profiles.find((each) => each.profileId === profileId);
  if (profile === undefined) throw new Error(`no profile ${profileId} in the spec`);
  return profile;
}

function nodeOf(profile: EduVpnProfileSpec, nodeNumber: number | undefined): EduVpnProfileNodeSpec {
  const node =
    nodeNumber === undefined ? profile.nodes[0] : profile.nodes.find((each) => each.nodeNumber === nodeNumber);
  if (node === undefined) throw new Error(`profile ${profile.profileId} is not on node ${nodeNumber}`);
  return node;
}

/** One configuration with its row, its connection log entry and (unless generated) its file. */
async function addConfiguration(
  writing: Writing,
  userId: string,
  configuration: EduVpnConfigurationSpec,
  clientId: string | undefined,
  withFile = true,
): Promise<void> {
  const profile = profileOf(writing, configuration.profileId);
  const node = nodeOf(profile, configuration.nodeNumber);
  const createdAt = atom(new Date(writing.now.getTime() - DAY_MS));
  const expires = configuration.expiresAt ?? new Date(writing.now.getTime() + 90 * DAY_MS);
  const common = {
    userId,
    profileId: profile.profileId,
    nodeNumber: node.nodeNumber,
    displayName: configuration.displayName ?? clientId ?? 'Admin API',
    createdAt,
    expiresAt: atom(expires),
    authKey: configuration.authKey ?? null,
  };
  const fileProfile: EduVpnFileProfile = {
    profileId: profile.profileId,
    displayName: profile.displayName ?? profile.profileId,
    hostName: node.hostName,
    portalUrl: writing.spec.portalUrl ?? DEFAULT_PORTAL_URL,
  };
  const issued =
    configuration.protocol === 'wireguard'
      ? await addWireGuardPeer(writing, profile, node, common, fileProfile, withFile)
      : await addCertificate(writing, profile, node, common, fileProfile, expires, withFile);
  writing.configurations.push(issued);
  if (writing.spec.connectionLog !== false) addConnectionLogEntry(writing, issued);
}

type CommonFields = Omit<
  EduVpnIssuedConfiguration,
  'protocol' | 'connectionId' | 'ipFour' | 'ipSix' | 'file' | 'filePath'
>;

async function addWireGuardPeer(
  writing: Writing,
  profile: EduVpnProfileSpec,
  node: EduVpnProfileNodeSpec,
  common: CommonFields,
  fileProfile: EduVpnFileProfile,
  withFile: boolean,
): Promise<EduVpnIssuedConfiguration> {
  const { wRangeFour, wRangeSix } = node;
  const nodeKeys = writing.nodeWireGuardKeys.get(node.nodeNumber);
  if (wRangeFour === undefined || wRangeSix === undefined || nodeKeys === undefined)
    throw new Error(`profile ${profile.profileId} has no WireGuard on node ${node.nodeNumber}`);
  const slot = `${profile.profileId}/${node.nodeNumber}`;
  const index = writing.nextAddress.get(slot) ?? 0;
  writing.nextAddress.set(slot, index + 1);
  const { ipFour, ipSix } = eduVpnClientAddresses(wRangeFour, wRangeSix, index);
  const keys = withFile ? await wireGuardKeys() : null;
  const publicKey = keys?.publicKey ?? randomPublicKey();
  rowsOf(writing, 'wg_peers').push({
    node_number: node.nodeNumber,
    profile_id: profile.profileId,
    display_name: common.displayName,
    public_key: publicKey,
    ip_four: ipFour,
    ip_six: ipSix,
    created_at: common.createdAt,
    expires_at: common.expiresAt,
    auth_key: common.authKey,
    user_id: common.userId,
  });
  // A configuration issued to an app holds the app's own key: eduVPN made no file of it.
  const file =
    keys === null || common.authKey !== null
      ? null
      : eduVpnWireGuardFile({
          ...fileProfile,
          expiresAt: common.expiresAt,
          privateKey: keys.privateKey,
          ipFour,
          ipSix,
          rangeFour: wRangeFour,
          rangeSix: wRangeSix,
          nodePublicKey: nodeKeys.publicKey,
          listenPort: writing.spec.wireGuardListenPort ?? 51820,
          defaultGateway: profile.defaultGateway ?? true,
          routeList: profile.routeList ?? [],
        });
  const filePath =
    file === null
      ? null
      : await writeIssuedFile(writing, `${common.userId}-${writing.configurations.length}.conf`, file);
  return { ...common, protocol: 'wireguard', connectionId: publicKey, ipFour, ipSix, file, filePath };
}

async function addCertificate(
  writing: Writing,
  profile: EduVpnProfileSpec,
  node: EduVpnProfileNodeSpec,
  common: CommonFields,
  fileProfile: EduVpnFileProfile,
  expires: Date,
  withFile: boolean,
): Promise<EduVpnIssuedConfiguration> {
  const tlsCrypt = writing.tlsCryptKeys.get(profile.profileId);
  if (!hasOpenVpn(node) || tlsCrypt === undefined)
    throw new Error(`profile ${profile.profileId} has no OpenVPN on node ${node.nodeNumber}`);
  const commonName = randomBytes(32).toString('base64');
  rowsOf(writing, 'certificates').push({
    node_number: node.nodeNumber,
    profile_id: profile.profileId,
    display_name: common.displayName,
    common_name: commonName,
    created_at: common.createdAt,
    expires_at: common.expiresAt,
    auth_key: common.authKey,
    user_id: common.userId,
  });
  let file: string | null = null;
  if (withFile) {
    const credentials = await writing.ca.issueClient(commonName, profile.profileId, expires);
    file = eduVpnOpenVpnFile({
      ...fileProfile,
      expiresAt: common.expiresAt,
      caCertificatePem: writing.ca.certificatePem,
      certificatePem: credentials.certificatePem,
      privateKeyPem: credentials.privateKeyPem,
      tlsCryptKey: tlsCrypt,
      udpPorts: profile.udpPorts ?? [1194],
      tcpPorts: profile.tcpPorts ?? [1194],
    });
  }
  const filePath =
    file === null
      ? null
      : await writeIssuedFile(writing, `${common.userId}-${writing.configurations.length}.ovpn`, file);
  return { ...common, protocol: 'openvpn', connectionId: commonName, ipFour: null, ipSix: null, file, filePath };
}

async function writeIssuedFile(writing: Writing, name: string, text: string): Promise<string> {
  const file = path.join(writing.dir, 'issued', name.replace(/[^A-Za-z0-9.@_-]/g, '_'));
  await writeFile(file, text, { mode: 0o600 });
  return file;
}

/** A closed session of a configuration: an hour after it was made, for an hour. */
function addConnectionLogEntry(writing: Writing, issued: EduVpnIssuedConfiguration): void {
  const connected = new Date(writing.now.getTime() - DAY_MS + 3_600_000);
  rowsOf(writing, 'connection_log').push({
    user_id: issued.userId,
    profile_id: issued.profileId,
    vpn_proto: issued.protocol,
    connection_id: issued.connectionId,
    ip_four: issued.ipFour ?? '10.128.0.2',
    ip_six: issued.ipSix ?? 'fd00:4242:4242::1000',
    connected_at: atom(connected),
    bytes_in: 123_456,
    bytes_out: 654_321,
    disconnected_at: atom(new Date(connected.getTime() + 3_600_000)),
  });
}

/** Random bytes shaped as an X25519 public key (bit 255 clear): no `wg` per configuration. */
function randomPublicKey(): string {
  const raw = randomBytes(32);
  raw[31] = (raw[31] ?? 0) & 0x7f;
  return raw.toString('base64');
}

/** The generated users: rows only, all in memory, inserted in the one transaction with the rest. */
async function addGeneratedUsers(writing: Writing, users: { userId: string; disabled: boolean }[]): Promise<void> {
  const generated = writing.spec.generated;
  if (generated === undefined) return;
  const profile = profileOf(writing, generated.profileId);
  let made = 0;
  for (let index = 0; index < generated.users; index++) {
    const userId = `generated-${String(index).padStart(7, '0')}`;
    const disabled = (generated.disabledEvery ?? 0) > 0 && index % (generated.disabledEvery ?? 1) === 0;
    users.push({ userId, disabled });
    rowsOf(writing, 'users').push({
      user_id: userId,
      last_seen: atom(writing.now),
      permission_list: '[]',
      auth_data: null,
      is_disabled: disabled,
    });
    for (let count = 0; count < generated.configurationsPerUser; count++, made++) {
      const protocol =
        generated.protocol === 'both'
          ? made % 2 === 0
            ? 'wireguard'
            : 'openvpn'
          : (generated.protocol ?? 'wireguard');
      // Spread over the profile's nodes that offer the protocol.
      const nodes = profile.nodes.filter(protocol === 'wireguard' ? hasWireGuard : hasOpenVpn);
      const node = nodes[Math.floor(made / 2) % Math.max(1, nodes.length)];
      await addConfiguration(
        writing,
        userId,
        { protocol, profileId: profile.profileId, nodeNumber: node?.nodeNumber },
        undefined,
        false,
      );
    }
  }
}

/** aggregate_stats per profile and day (guest users on the first day), and live_stats rows. */
function addStatistics(writing: Writing): void {
  const days = writing.spec.statisticsDays ?? 2;
  for (const profile of writing.spec.profiles)
    for (let day = 0; day < days; day++)
      rowsOf(writing, 'aggregate_stats').push({
        date: new Date(writing.now.getTime() - (day + 1) * DAY_MS).toISOString().slice(0, 10),
        profile_id: profile.profileId,
        max_connection_count: 10 + day,
        unique_user_count: 5 + day,
        ...(writing.spec.schemaVersion === '2022022201' ? {} : { unique_guest_user_count: day === 0 ? 2 : 0 }),
      });
  const live = writing.spec.liveStatistics ?? 3;
  const [firstProfile] = writing.spec.profiles;
  for (let minute = 0; minute < live && firstProfile !== undefined; minute++)
    rowsOf(writing, 'live_stats').push({
      date_time: atom(new Date(writing.now.getTime() - minute * 300_000)),
      profile_id: firstProfile.profileId,
      connection_count: minute,
    });
}
