// The clients of one OpenVPN server process, as its management interface reports them
// (`management-client-auth`): every >CLIENT:CONNECT and >CLIENT:REAUTH is decided here, by the
// certificate's OU (it must name the process's own profile) and then by the portal's /connect;
// a connection's end (>CLIENT:DISCONNECT, or the process going away) is reported to the
// portal's /disconnect. Only cid and kid numbers and fixed text are ever written back to
// OpenVPN: nothing a client sent ends up in a management command. A disconnect (the portal's
// disconnect_client) answers once the connections of its common name are ended: one being
// admitted is refused, or ended right after its admission; one the management connection could
// not reach fails the disconnect, and is ended as soon as that connection is back.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { allocateAddresses, canonicalIp, poolLayoutFromEnv, pushDirectives } from './address-pool.js';
import {
  ManagementCommandError,
  ManagementUnavailableError,
  quoteArgument,
  type ClientNotification,
} from './management.js';
import { parseStatusClients, type OpenVpnStatusClient } from './status.js';
import type { ConnectVerdict, PortalClient } from '../portal-client.js';
import { messageOf } from '../../shared/error-message.js';

/** The commands of a management connection this needs. */
export interface ManagementCommands {
  command(line: string): Promise<string>;
  commandWithBlock(line: string, block: readonly string[]): Promise<string>;
  query(line: string): Promise<string[]>;
}

export type OpenVpnPortal = Pick<PortalClient, 'authorizeConnect' | 'reportDisconnect'>;

export interface OpenVpnClientsOptions {
  /** From the portal's server_config entry: the only profile whose certificates this process accepts. */
  readonly profileId: string;
  /** The server file's name, for log lines. */
  readonly server: string;
  readonly management: ManagementCommands;
  readonly portal: OpenVpnPortal;
  readonly logger: Logger;
  /** Pause before the one retry of a failed /disconnect report. */
  readonly reportRetryDelayMs?: number;
  /** A monotonic clock in milliseconds (`performance.now`): how long ago the portal admitted a connection. */
  readonly now?: () => number;
}

/**
 * `listed`: found by `status` without a virtual address, so not connected yet: still being
 * decided (its CONNECT came while nobody listened, or client-auth was lost with the management
 * connection) or refused and not yet gone. Not counted as connected, but ended by a disconnect.
 */
type ClientState = 'authorizing' | 'authorized' | 'listed' | 'established';

interface ClientRecord {
  readonly cid: number;
  readonly commonName: string;
  state: ClientState;
  ipFour: string | null;
  ipSix: string | null;
  /** The portal allowed it: the end of this connection must be reported. */
  reportable: boolean;
  /** >CLIENT:DISCONNECT arrived while the portal was being asked. */
  gone: boolean;
  /** disconnect_client named it while the portal was being asked. */
  revoked: boolean;
  /** Order of the ESTABLISHED notification, to tell a stale `status` answer from a gone client. */
  establishedSeq: number;
  /**
   * When (the monotonic clock) the portal's yes was heard, or the connection was first seen
   * admitted: after the portal recorded its session's start. Its end report says how long ago.
   */
  admittedAt: number | null;
}

/** Shown in OpenVPN's log (never to the client); fixed texts only. */
const DENY_REASON = {
  profile: 'certificate issued for another profile',
  portal: 'refused by the portal',
  unreachable: 'portal not reachable',
  pool: 'no free address',
  revoked: 'disconnected by the portal',
} as const;

const DEFAULT_REPORT_RETRY_DELAY_MS = 1_000;

export class OpenVpnClients {
  readonly #options: OpenVpnClientsOptions;
  readonly #records = new Map<number, ClientRecord>();
  /** Goes up when the process ends: its client ids mean nothing to the next one. */
  #generation = 0;
  #establishedSeq = 0;
  readonly #tasks = new Set<Promise<void>>();
  /**
   * The admissions under way, by cid: each ends when its client is refused, admitted or gone,
   * with the management connection's failure when client-auth may or may not have reached OpenVPN.
   */
  readonly #admissions = new Map<number, Promise<ManagementUnavailableError | null>>();
  /** Common names a disconnect could not end (no management connection): ended when it is back. */
  readonly #endWhenReachable = new Set<string>();
  /**
   * Clients (cid → common name) whose client-auth was lost with the management connection: perhaps
   * admitted, so still to be ended by a disconnect and counted as connected, until `status` says.
   */
  readonly #unsure = new Map<number, string>();

  constructor(options: OpenVpnClientsOptions) {
    this.#options = options;
  }

  /** Clients that completed the connection. */
  get establishedCount(): number {
    let count = 0;
    for (const record of this.#records.values()) if (record.state === 'established') count += 1;
    return count;
  }

  handle(notification: ClientNotification): void {
    switch (notification.kind) {
      case 'CONNECT':
        this.#track(this.#connect(notification));
        return;
      case 'REAUTH':
        this.#track(this.#reauthenticate(notification));
        return;
      case 'ESTABLISHED':
        this.#established(notification);
        return;
      case 'DISCONNECT':
        this.#disconnected(notification);
        return;
      case 'CR_RESPONSE':
        // No challenge/response is ever started; nothing to answer.
        return;
      default:
        notification.kind satisfies never;
    }
  }

  /**
   * Whenever the management connection (re)opens: learns the connected clients from
   * `status 3`. After a reconnect to a process that kept running, that finds clients admitted
   * while nobody listened, and reports those that left meanwhile.
   */
  async resync(): Promise<void> {
    const seqAtQuery = this.#establishedSeq;
    const generation = this.#generation;
    const unsureAtQuery = [...this.#unsure.keys()];
    const listed = parseStatusClients(await this.#options.management.query('status 3'));
    if (generation !== this.#generation) return;
    // Listed, they become records below; unlisted, they were not admitted or are gone.
    for (const cid of unsureAtQuery) this.#unsure.delete(cid);
    const listedCids = new Set(listed.map((client) => client.cid));
    await this.#endDisconnected(listed);
    for (const client of listed) {
      if (this.#records.has(client.cid)) continue;
      // With an address it passed an authorisation nobody heard the end of: the portal's
      // connection. Without one it is not connected (yet): the portal's only if the portal allowed
      // it here before the management connection broke, or once its ESTABLISHED comes.
      const connected = client.ipFour !== null || client.ipSix !== null;
      this.#records.set(client.cid, {
        cid: client.cid,
        commonName: client.commonName,
        state: connected ? 'established' : 'listed',
        ipFour: client.ipFour === null ? null : canonicalIp(client.ipFour),
        ipSix: client.ipSix === null ? null : canonicalIp(client.ipSix),
        reportable: connected || unsureAtQuery.includes(client.cid),
        gone: false,
        revoked: false,
        establishedSeq: ++this.#establishedSeq,
        admittedAt: this.#now(),
      });
    }
    for (const record of [...this.#records.values()]) {
      const afterStatus = record.state === 'established' || record.state === 'listed';
      if (!afterStatus || listedCids.has(record.cid) || record.establishedSeq > seqAtQuery) continue;
      this.#records.delete(record.cid);
      if (record.reportable) this.#reportEnd(record, 0, 0);
    }
  }

  /** The process is gone: every connection it had has ended (byte counts unknown: 0). */
  processEnded(): void {
    this.#generation += 1;
    // Its connections are over; whoever comes back asks the portal again.
    this.#endWhenReachable.clear();
    this.#unsure.clear();
    const records = [...this.#records.values()];
    this.#records.clear();
    for (const record of records) if (record.reportable) this.#reportEnd(record, 0, 0);
  }

  /**
   * Ends every connection with this common name (`client-kill`); returns how many were ended.
   * One being admitted is refused, or ended once admitted: the answer waits for that. Throws
   * ManagementUnavailableError when a connection could not be ended for want of a management
   * connection (it is ended as soon as there is one again).
   */
  async disconnect(commonName: string): Promise<number> {
    const named = [...this.#records.values()].filter((record) => record.commonName === commonName);
    // Every admission of this name under way is refused (or ended once admitted) before anything
    // below may throw: a connection the management connection could not reach ends the loop, and
    // the list taken when it is back cannot show an admission that ends after it.
    for (const record of named) if (record.state === 'authorizing') record.revoked = true;
    let killed = 0;
    for (const record of named) {
      if (record.state === 'authorizing') {
        // Refused if the portal's answer is still awaited; else admitted, and ended below.
        const unsure = (await this.#admissions.get(record.cid)) ?? null;
        if (unsure !== null) {
          // Perhaps admitted, out of reach: ended once the management connection is back.
          this.#endWhenReachable.add(commonName);
          throw unsure;
        }
        if (this.#records.get(record.cid) !== record) continue;
      }
      if (await this.#kill(record.cid, commonName)) killed += 1;
    }
    // Perhaps admitted while the management connection broke: ended by its cid.
    for (const [cid, name] of [...this.#unsure]) {
      if (name !== commonName) continue;
      if (await this.#kill(cid, commonName)) killed += 1;
      this.#unsure.delete(cid);
    }
    return killed;
  }

  /** `client-kill`: false when the client was gone already; a missing management connection is remembered, then thrown. */
  async #kill(cid: number, commonName: string): Promise<boolean> {
    try {
      await this.#options.management.command(`client-kill ${cid}`);
      return true;
    } catch (error) {
      // Already gone: its DISCONNECT is on the way.
      if (error instanceof ManagementCommandError) return false;
      if (error instanceof ManagementUnavailableError) this.#endWhenReachable.add(commonName);
      throw error;
    }
  }

  /** After the management connection came back: ends the listed connections of the common names a disconnect missed. */
  async #endDisconnected(listed: readonly { readonly cid: number; readonly commonName: string }[]): Promise<void> {
    if (this.#endWhenReachable.size === 0) return;
    const missed = new Set(this.#endWhenReachable);
    for (const client of listed) if (missed.has(client.commonName)) await this.#kill(client.cid, client.commonName);
    for (const commonName of missed) this.#endWhenReachable.delete(commonName);
    this.#options.logger.info(
      { server: this.#options.server, commonNames: missed.size },
      'ended the OpenVPN clients a disconnect could not reach while the management connection was away',
    );
  }

  /**
   * The connected clients by OpenVPN's own `status`. With no management connection: nobody when
   * nobody was admitted either (a process starting), else the failure: "nobody" would let the
   * portal take a revoked connection for ended while it runs.
   */
  async connections(): Promise<OpenVpnStatusClient[]> {
    try {
      return parseStatusClients(await this.#options.management.query('status 3'));
    } catch (error) {
      if (error instanceof ManagementUnavailableError && this.#records.size === 0 && this.#unsure.size === 0) return [];
      throw error;
    }
  }

  /** Waits for authorisations and reports under way (stop() calls this last). */
  async settle(): Promise<void> {
    while (this.#tasks.size > 0) await Promise.allSettled([...this.#tasks]);
  }

  async #connect(notification: ClientNotification): Promise<void> {
    const { env, cid } = notification;
    const kid = notification.kid ?? 0;
    const { profileId, logger, server } = this.#options;
    const commonName = env.get('common_name') ?? '';
    const certificateProfile = env.get('X509_0_OU');
    if (certificateProfile !== profileId || commonName === '') {
      logger.warn(
        { server, profileId, certificateProfile, commonName, cid },
        'OpenVPN client refused: its certificate is for another profile',
      );
      await this.#deny(cid, kid, DENY_REASON.profile);
      return;
    }
    const layout = poolLayoutFromEnv(env);
    const addresses = layout === null ? null : allocateAddresses(layout, (address) => this.#isTaken(address));
    if (layout === null || addresses === null) {
      logger.error(
        { server, commonName, cid },
        layout === null
          ? 'OpenVPN client refused: the server has no IPv4 address pool'
          : 'OpenVPN client refused: no free address in the pool',
      );
      await this.#deny(cid, kid, DENY_REASON.pool);
      return;
    }
    const record: ClientRecord = {
      cid,
      commonName,
      state: 'authorizing',
      ipFour: addresses.ipFour,
      ipSix: addresses.ipSix,
      reportable: false,
      gone: false,
      revoked: false,
      establishedSeq: 0,
      admittedAt: null,
    };
    this.#records.set(cid, record);
    const admission = this.#admit(record, env, kid, layout, addresses);
    this.#admissions.set(cid, admission);
    try {
      await admission;
    } finally {
      if (this.#admissions.get(cid) === admission) this.#admissions.delete(cid);
    }
  }

  /**
   * Asks the portal about a client being admitted, then refuses or admits it; answers the
   * management connection's failure when client-auth was sent but may not have arrived.
   */
  async #admit(
    record: ClientRecord,
    env: ReadonlyMap<string, string>,
    kid: number,
    layout: NonNullable<ReturnType<typeof poolLayoutFromEnv>>,
    addresses: NonNullable<ReturnType<typeof allocateAddresses>>,
  ): Promise<ManagementUnavailableError | null> {
    const { cid, commonName } = record;
    const { logger, server } = this.#options;
    const generation = this.#generation;
    const verdict = await this.#ask(commonName, originatingIp(env), addresses.ipFour, addresses.ipSix);
    if (verdict.allowed) record.admittedAt = this.#now();
    if (generation !== this.#generation) {
      // The process ended meanwhile: this cid is void, but an allowed connection was opened at the portal.
      if (verdict.allowed) this.#reportEnd(record, 0, 0);
      return null;
    }
    if (verdict.allowed) record.reportable = true;
    if (!verdict.allowed || record.gone || record.revoked) {
      this.#forget(record);
      if (!record.gone)
        await this.#deny(
          cid,
          kid,
          verdict.allowed ? DENY_REASON.revoked : verdict.portalAnswered ? DENY_REASON.portal : DENY_REASON.unreachable,
        );
      this.#logRefusal(verdict, record);
      return null;
    }
    try {
      await this.#options.management.commandWithBlock(`client-auth ${cid} ${kid}`, pushDirectives(layout, addresses));
    } catch (error) {
      // The client left meanwhile, or the management connection broke: the portal hears the end.
      if (this.#records.get(cid) === record && record.state === 'authorizing') this.#forget(record);
      // Broken: OpenVPN may have admitted it all the same (the next `status` tells).
      if (error instanceof ManagementUnavailableError && !record.gone) this.#unsure.set(cid, commonName);
      logger.warn(
        { server, commonName, cid, reason: messageOf(error) },
        'could not admit the OpenVPN client the portal allowed',
      );
      return error instanceof ManagementUnavailableError ? error : null;
    }
    if (record.gone) {
      // Its DISCONNECT overtook the answer to client-auth.
      this.#forget(record);
      return null;
    }
    if (record.state === 'authorizing') record.state = 'authorized';
    logger.info(
      { server, commonName, cid, ipFour: addresses.ipFour, ipSix: addresses.ipSix },
      'OpenVPN client allowed',
    );
    return null;
  }

  async #reauthenticate(notification: ClientNotification): Promise<void> {
    const { env, cid } = notification;
    const kid = notification.kid ?? 0;
    const { profileId, logger, server } = this.#options;
    const commonName = env.get('common_name') ?? '';
    let record = this.#records.get(cid);
    if (record === undefined) {
      // Authorised before anybody here listened: it is connected, so it is tracked.
      record = {
        cid,
        commonName,
        state: 'established',
        ipFour: canonicalIpOrNull(env.get('ifconfig_pool_remote_ip')),
        ipSix: canonicalIpOrNull(env.get('ifconfig_pool_remote_ip6')),
        reportable: true,
        gone: false,
        revoked: false,
        establishedSeq: ++this.#establishedSeq,
        admittedAt: this.#now(),
      };
      this.#records.set(cid, record);
    }
    if (env.get('X509_0_OU') !== profileId || commonName !== record.commonName) {
      logger.warn(
        { server, profileId, certificateProfile: env.get('X509_0_OU'), commonName, cid },
        'OpenVPN client refused at renegotiation: its certificate is for another profile',
      );
      await this.#denyAndKill(cid, kid, DENY_REASON.profile);
      return;
    }
    const generation = this.#generation;
    const verdict = await this.#ask(commonName, originatingIp(env), record.ipFour ?? '', record.ipSix, true);
    if (generation !== this.#generation || this.#records.get(cid) !== record) return;
    if (verdict.allowed && !record.revoked) {
      await this.#answer(`client-auth-nt ${cid} ${kid}`);
      logger.debug({ server, commonName, cid }, 'OpenVPN client allowed again at renegotiation');
      return;
    }
    this.#logRefusal(verdict, record);
    // client-deny alone only refuses the new key; the session would live on for a while.
    await this.#denyAndKill(
      cid,
      kid,
      verdict.allowed ? DENY_REASON.revoked : verdict.portalAnswered ? DENY_REASON.portal : DENY_REASON.unreachable,
    );
  }

  #established(notification: ClientNotification): void {
    const { env, cid } = notification;
    let record = this.#records.get(cid);
    if (record === undefined) {
      record = {
        cid,
        commonName: env.get('common_name') ?? '',
        state: 'established',
        ipFour: null,
        ipSix: null,
        reportable: true,
        gone: false,
        revoked: false,
        establishedSeq: 0,
        admittedAt: null,
      };
      this.#records.set(cid, record);
    }
    record.state = 'established';
    // Seen admitted now, if its admission was not heard here.
    record.admittedAt ??= this.#now();
    // Connected, so admitted by the portal (a record `status` listed before it had an address included).
    record.reportable = true;
    record.establishedSeq = ++this.#establishedSeq;
    // What OpenVPN really assigned (the addresses pushed in client-auth).
    record.ipFour = canonicalIpOrNull(env.get('ifconfig_pool_remote_ip')) ?? record.ipFour;
    record.ipSix = canonicalIpOrNull(env.get('ifconfig_pool_remote_ip6')) ?? record.ipSix;
  }

  #disconnected(notification: ClientNotification): void {
    const record = this.#records.get(notification.cid);
    // A client refused at CONNECT also gets a DISCONNECT (with an empty environment): not the portal's.
    if (record === undefined) return;
    if (record.state === 'authorizing') {
      record.gone = true;
      return;
    }
    this.#records.delete(record.cid);
    if (record.reportable)
      this.#reportEnd(
        record,
        counter(notification.env.get('bytes_received')),
        counter(notification.env.get('bytes_sent')),
      );
  }

  async #ask(
    commonName: string,
    originating: string,
    ipFour: string,
    ipSix: string | null,
    reauth = false,
  ): Promise<ConnectVerdict> {
    return this.#options.portal.authorizeConnect({
      profileId: this.#options.profileId,
      commonName,
      originatingIp: originating,
      ipFour,
      ipSix: ipSix ?? '',
      reauth,
    });
  }

  #logRefusal(verdict: ConnectVerdict, record: ClientRecord): void {
    const { logger, server } = this.#options;
    const fields = { server, commonName: record.commonName, cid: record.cid };
    if (verdict.allowed) logger.info(fields, 'OpenVPN client refused: the portal disconnected it meanwhile');
    else if (verdict.portalAnswered) logger.info(fields, 'OpenVPN client refused by the portal');
    else logger.warn({ ...fields, reason: verdict.reason }, 'OpenVPN client refused: cannot ask the portal');
  }

  /** Drops an authorising record; an allowed one has an open connection at the portal to close. */
  #forget(record: ClientRecord): void {
    if (this.#records.get(record.cid) === record) this.#records.delete(record.cid);
    if (record.reportable) this.#reportEnd(record, 0, 0);
  }

  #isTaken(address: string): boolean {
    for (const record of this.#records.values()) if (record.ipFour === address || record.ipSix === address) return true;
    return false;
  }

  async #deny(cid: number, kid: number, reason: string): Promise<void> {
    await this.#answer(`client-deny ${cid} ${kid} ${quoteArgument(reason)}`);
  }

  async #denyAndKill(cid: number, kid: number, reason: string): Promise<void> {
    await this.#deny(cid, kid, reason);
    await this.#answer(`client-kill ${cid}`);
  }

  /** A command whose failure changes nothing: the client is gone, or so is the process. */
  async #answer(line: string): Promise<void> {
    try {
      await this.#options.management.command(line);
    } catch (error) {
      if (!(error instanceof ManagementCommandError || error instanceof ManagementUnavailableError)) throw error;
      this.#options.logger.debug(
        { server: this.#options.server, reason: error.message },
        'OpenVPN did not take an answer',
      );
    }
  }

  #reportEnd(record: ClientRecord, bytesIn: number, bytesOut: number): void {
    const { portal, logger, server, profileId } = this.#options;
    const report = {
      profileId,
      commonName: record.commonName,
      ipFour: record.ipFour ?? '',
      ipSix: record.ipSix ?? '',
      bytesIn,
      bytesOut,
    };
    logger.info(
      { server, commonName: record.commonName, cid: record.cid, bytesIn, bytesOut },
      'OpenVPN client disconnected',
    );
    this.#track(
      (async () => {
        for (let attempt = 1; ; attempt += 1) {
          try {
            // Measured anew for each attempt: the portal counts back from when it hears it.
            const ageMs =
              record.admittedAt === null ? undefined : Math.max(0, Math.round(this.#now() - record.admittedAt));
            await portal.reportDisconnect(ageMs === undefined ? report : { ...report, ageMs });
            return;
          } catch (error) {
            if (attempt >= 2) {
              logger.warn(
                { server, commonName: record.commonName, reason: messageOf(error) },
                'could not report an OpenVPN disconnect to the portal',
              );
              return;
            }
            await sleep(this.#options.reportRetryDelayMs ?? DEFAULT_REPORT_RETRY_DELAY_MS);
          }
        }
      })(),
    );
  }

  #now(): number {
    return (this.#options.now ?? performance.now.bind(performance))();
  }

  #track(task: Promise<void>): void {
    const tracked = task.catch((error: unknown) => {
      this.#options.logger.error(
        { server: this.#options.server, err: error },
        'handling an OpenVPN client event failed',
      );
    });
    this.#tasks.add(tracked);
    void tracked.finally(() => this.#tasks.delete(tracked));
  }
}

/** The client's public address: at CONNECT OpenVPN only has the untrusted_* variables. */
function originatingIp(env: ReadonlyMap<string, string>): string {
  for (const name of ['trusted_ip', 'trusted_ip6', 'untrusted_ip', 'untrusted_ip6']) {
    const address = canonicalIpOrNull(env.get(name));
    if (address !== null) return address;
  }
  return '';
}

function canonicalIpOrNull(text: string | undefined): string | null {
  return text === undefined || text === '' ? null : canonicalIp(text);
}

function counter(text: string | undefined): number {
  const value = Number(text);
  return text !== undefined && /^[0-9]+$/.test(text) && Number.isSafeInteger(value) ? value : 0;
}
