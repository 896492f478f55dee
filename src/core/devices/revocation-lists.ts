// The revocation lists of certificate enrollment kept fresh, so that a revoked MDM
// certificate neither enrolls nor keeps its device: files, or
// http(s) URLs such as a CA's distribution point, read every crlRefresh. Retiring is final, and
// anyone on the path to an http distribution point can answer in its place, so a list is believed
// only when the CA it names signed it, its certificate allowing it (cRLSign) — a trust anchor, or
// an intermediate CA under one, seen in an enrolled chain or configured (an unknown CA's list is
// refused), and the CA of the list in
// force from the same place (another CA's genuine list would unrevoke this one's) — and it is current (thisUpdate not
// ahead of the clock by more than a little skew, nextUpdate not past, not older than the list in
// force). A list that cannot be read or is refused keeps the last good one, is logged, counted in
// the metrics and (refused) in the audit log. Like the MDM inventory sync's fail-safe, a list that
// would retire more than crlMaxRetire of the live devices at once retires none until an
// administrator confirms it (`vpn-portal mdm confirm-crl`). Until a URL source gives a list that
// checks certificates (believed, or lent to enrollment), certificate enrollment waits (503) and
// the source is read every few seconds; a list past its nextUpdate, believed or lent, keeps its
// CA's certificates waiting (503) until a current one checks them. A device concern, not an HTTP
// one: the enrollment listeners only read the lists this puts in the verifier they share.
import { readFile } from 'node:fs/promises';
import type { ClientCertificateConfig, CrlSource } from '../../config/portal-config.js';
import {
  caCertificateFromDer,
  casRevokedBy,
  crlSignedBy,
  crlSignedByKeyOf,
  crlSigners,
  fingerprintOf,
  readCrl,
  revokedSerialsOf,
  type CaCertificate,
  type ClientCertificateVerifier,
  type RevocationList,
  type RevokedSerials,
} from '../../keys/client-certificate.js';
import { whyNotWholeList } from '../../keys/crl-scope.js';
import { messageOf } from '../../shared/error-message.js';
import { readResponseWithin } from '../../shared/limited-body.js';
import { formatAtom } from '../../shared/time.js';
import { liveDeviceIdentifiers, liveDevicesIssuedBy, type StoredDevice } from '../../storage/devices.js';
import {
  allCertificateAuthorities,
  holdRevocationList,
  isRevocationListConfirmed,
  rememberCertificateAuthorities,
} from '../../storage/revocation-list-trust.js';
import {
  pinRevocationListSource,
  revocationListSourcePins,
  type RevocationListSourcePin,
} from '../../storage/revocation-list-sources.js';
import { recordAdminCall } from '../access/index.js';
import { portalCall } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { retireLimit } from './mdm-inventory.js';
import { devicesOfRevokedCertificates, retireDevicesOfRevokedCertificates } from './revoked-certificates.js';
import { sha256Hex } from '../../shared/sha256.js';

export interface RevocationListState {
  /** The file or URL, as configured (resolved). */
  readonly file: string;
  /** When the list in use was made (its thisUpdate); null until one was read. */
  readonly thisUpdate: Date | null;
  readonly entries: number;
  /** The last attempt to read this list failed or was refused (the one in use is kept). */
  readonly failing: boolean;
  /** Why it failed, while it does. */
  readonly lastError: string | null;
  /** The list in force would retire more than crlMaxRetire and waits for an administrator. */
  readonly held: boolean;
}

/** Why a revocation list was not believed. */
export const CRL_REFUSAL_REASONS = [
  'unreadable',
  'unknown-issuer',
  'issuer-path-invalid',
  'other-issuer',
  'bad-signature',
  'no-crl-sign',
  'not-yet-valid',
  'expired',
  'older',
  'not-whole',
] as const;
export type CrlRefusalReason = (typeof CRL_REFUSAL_REASONS)[number];

/** A revocation list fetched over http(s) larger than this is refused. */
const MAX_CRL_BYTES = 20 * 1024 * 1024;
/** How soon a source that enrollment waits for is read again after a reading that gave nothing. */
const AWAITED_READ_MS = 5_000;
/**
 * How soon a source whose reading failed or was refused is read again: then twice as long after
 * each further one, up to crlRefresh. A distribution point down for a moment must not keep a
 * new revocation out for a whole crlRefresh more.
 */
const FAILED_READ_RETRY_MS = 10_000;
/** Refusals whose list is still lent to enrollment (#lendToEnrollment). */
const LENDABLE: ReadonlySet<CrlRefusalReason> = new Set(['unknown-issuer', 'issuer-path-invalid', 'bad-signature']);
/** A list may say it was made this much ahead of the portal's clock (a CA's clock differs a little). */
const CLOCK_SKEW_MS = 5 * 60_000;

class CrlRefused extends Error {
  constructor(
    readonly reason: CrlRefusalReason,
    message: string,
  ) {
    super(message);
  }
}

/** A list believed, and what it revokes. */
interface ListInForce {
  readonly crl: RevocationList;
  /** SHA-256 of its DER, hex: how an administrator names it. */
  readonly sha256: string;
  readonly revoked: RevokedSerials;
}

export class RevocationListRefresher {
  readonly #ctx: PortalContext;
  readonly #config: ClientCertificateConfig;
  readonly #verifier: ClientCertificateVerifier;
  readonly #intermediates: readonly CaCertificate[];
  /** Per list: the CA its configuration entry names (`{list, issuer}`), or null. */
  readonly #namedIssuers: readonly (CaCertificate | null)[];
  #timer: NodeJS.Timeout | undefined;
  /** Per list: the one believed; null until one was. */
  readonly #inForce: (ListInForce | null)[];
  /** Per list: why its last reading failed or was refused; null while it reads. */
  readonly #errors: (string | null)[];
  /** Per list: the refusal last logged (reason and list), so a list refused again is not logged again. */
  readonly #reported: (string | null)[];
  /** Per list: the SHA-256 of the list in force while it is held. */
  readonly #held: (string | null)[];
  /** Per list: the list lent to enrollment (see #lendToEnrollment); null when none. */
  readonly #lent: (RevocationList | null)[];
  /** While a source waits for its first list or fails: the reading sooner than crlRefresh, scheduled once. */
  #soonAgain: NodeJS.Timeout | undefined;
  /** Per list: readings in a row that failed or were refused, how far its next reading backs off. */
  readonly #failedReadings: number[];
  readonly #refused = new Map<CrlRefusalReason, number>();
  #refreshing: Promise<void> | null = null;
  #stopped = false;

  constructor(
    ctx: PortalContext,
    config: ClientCertificateConfig,
    verifier: ClientCertificateVerifier,
    /** `enrollment.clientCertificate.intermediates`: CAs known before any device enrolled with their chain. */
    intermediates: readonly CaCertificate[] = [],
    /** Per source, the CA its entry names (among `intermediates` too), or null. */
    namedIssuers: readonly (CaCertificate | null)[] = [],
  ) {
    this.#ctx = ctx;
    this.#intermediates = intermediates;
    this.#namedIssuers = config.crlSources.map((_source, index) => namedIssuers[index] ?? null);
    this.#config = config;
    this.#verifier = verifier;
    this.#inForce = config.crlSources.map(() => null);
    this.#errors = config.crlSources.map(() => null);
    this.#reported = config.crlSources.map(() => null);
    this.#held = config.crlSources.map(() => null);
    this.#lent = config.crlSources.map(() => null);
    this.#failedReadings = config.crlSources.map(() => 0);
  }

  /**
   * Puts in force again, for each source, the newest list believed from it before (by this portal
   * before a restart, or by another instance): a revoked certificate stays refused from the first
   * request on, whatever the distribution point answers, or a file holds now (an older list of
   * its CA put back, another CA's). A file's list as read at start is lent to enrollment beside
   * it, until the refresh believes a list of its CA at least as new (#lendToEnrollment).
   */
  async restore(): Promise<void> {
    let pins: Map<string, RevocationListSourcePin>;
    try {
      pins = await revocationListSourcePins(this.#ctx.db);
    } catch (error) {
      this.#ctx.logger.error({ err: error }, 'the revocation lists believed before cannot be read');
      return;
    }
    for (const [index, source] of this.#config.crlSources.entries()) {
      const pin = pins.get(source.location);
      if (pin === undefined || this.#inForce[index] !== null) continue;
      const crl = await this.#pinnedList(index, pin);
      if (crl === null) continue;
      this.#putInForce(index, crl, sha256Hex(pin.list));
      if (source.kind === 'file') this.#lendAsRead(index, source.initial);
    }
  }

  /**
   * The list `pin` notes for source `index`, if it may be put in force there: readable, and of the
   * CA the source's entry names (believed before the entry named it, it may be another CA's list).
   */
  async #pinnedList(index: number, pin: RevocationListSourcePin): Promise<RevocationList | null> {
    let crl: RevocationList;
    try {
      crl = readCrl(pin.list);
    } catch (error) {
      this.#ctx.logger.error(
        { err: error, crl: this.#config.crlSources[index]?.location },
        'a revocation list believed before cannot be read',
      );
      return null;
    }
    const named = this.#namedIssuers[index] ?? null;
    if (named !== null && !(pin.issuer === named.subject && (await crlSignedBy(crl, [named])))) return null;
    return crl;
  }

  /**
   * Another portal instance on this database believed a newer list of the CA from this source
   * than the one in force here: it is put in force here too, so a certificate only it revokes is
   * refused by every instance, whatever this instance's reading of the source answers (a mirror
   * that has not caught up, a reading that fails) until then.
   */
  async #followNewerPin(index: number, pin: RevocationListSourcePin | undefined): Promise<void> {
    const inForce = this.#inForce[index]?.crl ?? null;
    // A pin of another CA than the list in force: the source's own reading decides (forget-crl).
    if (pin === undefined || (inForce !== null && pin.issuer !== inForce.issuer)) return;
    const crl = await this.#pinnedList(index, pin);
    if (crl === null || (inForce !== null && !isOlderList(inForce, crl))) return;
    this.#putInForce(index, crl, sha256Hex(pin.list));
  }

  /** Keeps a file's list as read at start checking enrollment, beside the list put in force in its place. */
  #lendAsRead(index: number, initial: Buffer): void {
    try {
      const crl = readCrl(initial);
      this.#lent[index] = crl;
      this.#verifier.lendCrl(index, crl);
    } catch {
      // Read at start already (an unreadable one refuses the start).
    }
  }

  /** Makes `crl` the list in force of source `index`, for enrollment and for retirement. */
  #putInForce(index: number, crl: RevocationList, sha256: string): void {
    this.#verifier.replaceCrl(index, crl);
    this.#inForce[index] = { crl, sha256, revoked: revokedSerialsOf(crl) };
  }

  /** Reads the lists now (a URL's first fetch, and devices revoked while the portal was down), then every crlRefresh. */
  start(): void {
    if (this.#config.crlSources.length === 0) return;
    void this.#warnOfStrayIntermediates();
    void this.refresh();
    this.#timer = setInterval(() => void this.refresh(), this.#config.crlRefreshMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    clearTimeout(this.#soonAgain);
    this.#stopped = true;
    await this.#refreshing;
  }

  /**
   * A configured intermediate that leads to no trust anchor, or whose path to one breaks a rule a
   * device certificate's chain must keep, verifies no list: said once, at start.
   */
  async #warnOfStrayIntermediates(): Promise<void> {
    for (const intermediate of this.#intermediates) {
      const verdict = await this.#verifier.standingOf(intermediate, this.#intermediates);
      if (verdict.standing === 'no-anchor')
        this.#ctx.logger.error(
          { subject: intermediate.subject },
          'enrollment.clientCertificate.intermediates: this CA leads to no trust anchor; its revocation lists are refused',
        );
      if (verdict.standing === 'breaks-path-rule')
        this.#ctx.logger.error(
          { subject: intermediate.subject, sha256: fingerprintOf(intermediate), rule: verdict.rule },
          `enrollment.clientCertificate.intermediates: ${verdict.rule}; this CA vouches for no device certificate, and its revocation lists are refused`,
        );
    }
  }

  /** Each revocation list as last read, for the metrics. */
  states(): RevocationListState[] {
    return this.#config.crlSources.map((source, index) => {
      const list = this.#inForce[index] ?? null;
      return {
        file: source.location,
        thisUpdate: list?.crl.thisUpdate ?? null,
        entries: list?.crl.entries.length ?? 0,
        failing: this.#errors[index] !== null,
        lastError: this.#errors[index] ?? null,
        held: this.#held[index] !== null,
      };
    });
  }

  /**
   * The URL sources from which nothing checks a certificate yet: no list in force (none read
   * since the start, none believed before it) and none lent to enrollment. They are read again
   * every few seconds.
   */
  #awaitingFirstList(): string[] {
    return this.#withoutListInForce()
      .filter((source) => !source.lent)
      .map((source) => source.location);
  }

  /** The URL sources with no list in force (none read since the start, none believed before it), and whether one lent a list. */
  #withoutListInForce(): { readonly location: string; readonly lent: boolean }[] {
    return this.#config.crlSources.flatMap((source, index) =>
      source.kind === 'url' && this.#inForce[index] === null
        ? [{ location: source.location, lent: this.#lent[index] !== null }]
        : [],
    );
  }

  /**
   * The URL sources a certificate of the chain of `authorities` (its CAs, the leaf's issuer
   * first) waits for. One that gave nothing yet is waited for by every certificate, as it may
   * be any CA's list. One that gave only a list lent to enrollment (of a CA not known yet) is
   * not waited for by a certificate that a list of its own issuer, in force or lent, checks
   * already: such a source holds another CA's list, or one made up for the purpose by whoever
   * answers for its plain-http address, and neither may let a certificate pass unchecked.
   */
  async awaitedBy(authorities: readonly CaCertificate[]): Promise<string[]> {
    const unread = this.#awaitingFirstList();
    if (unread.length > 0) return unread;
    const pending = this.#withoutListInForce().map(({ location }) => location);
    const issuer = authorities[0];
    if (pending.length === 0 || issuer === undefined) return pending;
    for (const [index, list] of this.#inForce.entries()) {
      const crl = list?.crl ?? this.#lent[index] ?? null;
      if (crl !== null && crl.issuer === issuer.subject && (await crlSignedBy(crl, [issuer]))) return [];
    }
    return pending;
  }

  /**
   * The sources whose list in force, or list lent to enrollment, is of a CA of the chain of
   * `authorities` and past its nextUpdate, while no current list of that CA (in force or lent,
   * from any source) checks it: no newer list could be read (the distribution point down, or its
   * answers withheld on the way), so a revocation published since may be missing, and such a list
   * proves nothing about now. Their certificates wait, as for a first list, rather than enroll on
   * a list the CA replaced. A lent list counts as one in force: it was current when lent, and
   * ends only when a list of its CA is believed, which a withheld source never gives.
   */
  async expiredFor(
    authorities: readonly CaCertificate[],
    now: Date,
  ): Promise<{ readonly location: string; readonly nextUpdate: Date }[]> {
    const lists = this.#enrollmentLists();
    const expired: { location: string; nextUpdate: Date; authority: CaCertificate }[] = [];
    for (const { index, crl } of lists) {
      const nextUpdate = crl.nextUpdate;
      if (nextUpdate === undefined || nextUpdate.getTime() >= now.getTime()) continue;
      for (const authority of authorities)
        if (crl.issuer === authority.subject && (await crlSignedBy(crl, [authority])))
          expired.push({ location: this.#config.crlSources[index]?.location ?? '', nextUpdate, authority });
    }
    const current = async (authority: CaCertificate): Promise<boolean> => {
      for (const { crl } of lists)
        if (crl.issuer === authority.subject && notCurrent(crl, now) === null && (await crlSignedBy(crl, [authority])))
          return true;
      return false;
    };
    // A source whose list in force and lent list have both expired is named once, by the later nextUpdate.
    const waiting = new Map<string, Date>();
    for (const { location, nextUpdate, authority } of expired) {
      const named = waiting.get(location);
      if ((named === undefined || named < nextUpdate) && !(await current(authority))) waiting.set(location, nextUpdate);
    }
    return [...waiting].map(([location, nextUpdate]) => ({ location, nextUpdate }));
  }

  /** The lists that check the chains presented at enrollment, with their source: those in force and those lent. */
  #enrollmentLists(): { readonly index: number; readonly crl: RevocationList }[] {
    return this.#config.crlSources.flatMap((_source, index) =>
      [this.#inForce[index]?.crl ?? null, this.#lent[index] ?? null].flatMap((crl) =>
        crl === null ? [] : [{ index, crl }],
      ),
    );
  }

  /** Lists refused since the portal started, by reason. */
  refusals(): ReadonlyMap<CrlRefusalReason, number> {
    return this.#refused;
  }

  /**
   * Reads every list again (one that fails or is refused keeps its last good one), then retires
   * the live devices bound to a certificate the lists in force revoke. A list that is not
   * believed never retires anything: only what a good list names counts.
   */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = null;
      this.#readAgainSoon();
    });
    return this.#refreshing;
  }

  async #refresh(): Promise<void> {
    const now = this.#ctx.clock.now();
    const authorities: CaCertificate[] = [...this.#intermediates];
    try {
      for (const known of await allCertificateAuthorities(this.#ctx.db))
        authorities.push(caCertificateFromDer(known.der));
    } catch (error) {
      this.#ctx.logger.error(
        { err: error },
        'the intermediate CAs seen in enrolled chains cannot be read; only trust anchors and configured intermediates sign lists now',
      );
    }
    // What was believed from each source before (by this instance or another, before a restart):
    // unknown, no list can be held to it, so none is read now.
    let pins: Map<string, RevocationListSourcePin>;
    try {
      pins = await revocationListSourcePins(this.#ctx.db);
    } catch (error) {
      this.#ctx.logger.error(
        { err: error },
        'what the revocation list sources gave before cannot be read; the lists in force stay until the next refresh',
      );
      return;
    }
    await Promise.all(
      this.#config.crlSources.map(async (source, index) => {
        let crl: RevocationList | null = null;
        let sha256 = '';
        /** The CA certificates whose key signed the list believed. */
        let signers: readonly CaCertificate[] = [];
        await this.#followNewerPin(index, pins.get(source.location));
        try {
          const body = source.kind === 'file' ? await readFile(source.location) : await fetchCrl(source.location);
          try {
            crl = readCrl(body);
          } catch (error) {
            throw new CrlRefused('unreadable', `not a PEM or DER revocation list (${messageOf(error)})`);
          }
          sha256 = sha256Hex(Buffer.from(crl.rawData));
          const held = { inForce: this.#inForce[index] ?? null, pin: pins.get(source.location) ?? null };
          signers = await this.#check(crl, held, this.#namedIssuers[index] ?? null, authorities, now);
        } catch (error) {
          // A source that names its CA lends nothing: that CA is known, and no other's list is its.
          const lendable =
            error instanceof CrlRefused && LENDABLE.has(error.reason) && this.#namedIssuers[index] === null;
          if (crl !== null && lendable) this.#lendToEnrollment(index, crl, now);
          await this.#refuse(source, index, error, crl, sha256);
          return;
        }
        await this.#pin(source.location, this.#namedIssuers[index] !== null, pins.get(source.location) ?? null, crl);
        this.#putInForce(index, crl, sha256);
        // The loan ends only with a list of its CA at least as new: an older one (a mirror that
        // has not caught up, an old list served again) lacks revocations the loan has, and one of
        // a namesake under another key (a CA renewed under its name) checks none of its chains.
        const lent = this.#lent[index] ?? null;
        if (
          lent !== null &&
          lent.issuer === crl.issuer &&
          !isOlderList(crl, lent) &&
          (await crlSignedByKeyOf(lent, signers))
        ) {
          this.#lent[index] = null;
          this.#verifier.lendCrl(index, null);
        }
        if (this.#errors[index] !== null)
          this.#ctx.logger.info({ crl: source.location }, 'certificate revocation list read again');
        this.#errors[index] = null;
        this.#reported[index] = null;
      }),
    );
    try {
      await this.#retire(authorities);
    } catch (error) {
      this.#ctx.logger.error(
        { err: error },
        'devices with revoked certificates could not be looked up; tried again at the next refresh',
      );
    }
  }

  /**
   * A current list that cannot be believed yet still checks the chains presented at enrollment:
   * the verifier uses a list only when a chain's own issuer (whose path to a trust anchor keeps
   * the rules) signed it. Its CA not known yet (no chain of it enrolled), known under another key
   * (a CA renewed under its name), or known only by certificates whose path breaks a rule (a CA
   * certificate issued again with the rules kept, which its devices present): only a chain of
   * that CA makes it known as it is, so without the loan a source nothing is in force from would
   * keep enrollment waiting for ever, and one whose list in force is older would let a
   * certificate that only this list revokes through. It is held beside the list in force, never
   * in its place, retires nothing, keeps to the CA of the list lent first and is never older than
   * it or the list in force (either would undo a revocation at enrollment), and it ends only when
   * a list of its CA at least as new is believed. It is current when lent; once past its
   * nextUpdate it keeps its revocations, and certificates of its CA wait (expiredFor).
   */
  #lendToEnrollment(index: number, crl: RevocationList, now: Date): void {
    if (notCurrent(crl, now) !== null) return;
    const inForce = this.#inForce[index]?.crl ?? null;
    if (inForce !== null && (inForce.issuer !== crl.issuer || crl.thisUpdate < inForce.thisUpdate)) return;
    const lent = this.#lent[index] ?? null;
    if (lent !== null && (lent.issuer !== crl.issuer || isOlderList(crl, lent))) return;
    this.#lent[index] = crl;
    this.#verifier.lendCrl(index, crl);
  }

  /**
   * A source enrollment waits for is read again within seconds; while one fails or is refused,
   * the next reading backs off from FAILED_READ_RETRY_MS to crlRefresh. Either is sooner than
   * the crlRefresh interval alone would read it.
   */
  #readAgainSoon(): void {
    this.#errors.forEach((error, index) => {
      this.#failedReadings[index] = error === null ? 0 : (this.#failedReadings[index] ?? 0) + 1;
    });
    if (this.#stopped || this.#soonAgain !== undefined) return;
    // The source with the fewest failed readings in a row sets the pace: one refused every time
    // backs off alone, and another that just failed is still read again within seconds.
    const failing = this.#failedReadings.filter((count) => count > 0);
    const delayMs =
      this.#awaitingFirstList().length > 0
        ? AWAITED_READ_MS
        : failing.length > 0
          ? FAILED_READ_RETRY_MS * 2 ** Math.min(Math.min(...failing) - 1, 20)
          : null;
    if (delayMs === null || delayMs >= this.#config.crlRefreshMs) return;
    this.#soonAgain = setTimeout(() => {
      this.#soonAgain = undefined;
      void this.refresh();
    }, delayMs);
    this.#soonAgain.unref();
  }

  /** Notes a believed list's CA and thisUpdate for its source, unless that is noted already. */
  async #pin(
    location: string,
    /** The source's entry names its CA: a note of another CA's list is replaced whatever its date. */
    named: boolean,
    pin: RevocationListSourcePin | null,
    crl: RevocationList,
  ): Promise<void> {
    if (pin !== null && pin.issuer === crl.issuer && pin.thisUpdate.getTime() >= crl.thisUpdate.getTime()) return;
    try {
      await pinRevocationListSource(
        this.#ctx.db,
        location,
        { issuer: crl.issuer, thisUpdate: crl.thisUpdate, list: Buffer.from(crl.rawData) },
        named,
      );
    } catch (error) {
      // This instance holds the source to it still; the note is tried again at the next refresh.
      this.#ctx.logger.error({ err: error, crl: location }, 'a believed revocation list cannot be noted');
    }
  }

  /**
   * Throws CrlRefused unless the CA the list names signed it, it is current, and it keeps to the
   * CA its entry names (`named`), else to what was believed from its source before: the same CA,
   * and no older (the list in force, or what the pin says was believed before this instance started).
   * Answers the CA certificates whose key signed it.
   */
  async #check(
    crl: RevocationList,
    { inForce, pin }: { readonly inForce: ListInForce | null; readonly pin: RevocationListSourcePin | null },
    named: CaCertificate | null,
    authorities: readonly CaCertificate[],
    now: Date,
  ): Promise<CaCertificate[]> {
    // A list keeps to the CA of the list in force: another known CA's genuine list (all of whose
    // certificates it would leave unrevoked) must not take the place of this one's.
    // Its entry may name that CA; then what was believed from it before does not count.
    if (named !== null && named.subject !== crl.issuer)
      throw new CrlRefused(
        'other-issuer',
        `it names "${crl.issuer}", but the configuration says this source serves the lists of "${named.subject}"`,
      );
    const { candidates, refused } = await this.#signersOf(crl, named, authorities);
    const sourceIssuer = named === null ? (inForce?.crl.issuer ?? pin?.issuer ?? null) : null;
    if (sourceIssuer !== null && sourceIssuer !== crl.issuer)
      throw new CrlRefused(
        'other-issuer',
        `it names "${crl.issuer}", but the lists believed from here are of "${sourceIssuer}" (if this source really serves another CA now: vpn-portal mdm forget-crl LOCATION)`,
      );
    if (candidates.length === 0 && refused.length === 0)
      throw new CrlRefused(
        'unknown-issuer',
        named === null
          ? `"${crl.issuer}" is neither a trust anchor nor an intermediate CA seen in an enrolled chain`
          : `the CA the configuration names for this source ("${named.subject}") leads to no trust anchor`,
      );
    if (!(await crlSignedBy(crl, candidates))) throw await whyNotSignedByCandidates(crl, candidates, refused);
    const partial = whyNotWholeList(crl);
    if (partial !== null) throw new CrlRefused('not-whole', `${partial}; only a CA's whole list is believed`);
    const stale = notCurrent(crl, now);
    if (stale !== null) throw stale;
    if (inForce !== null && crl.thisUpdate < inForce.crl.thisUpdate)
      throw new CrlRefused(
        'older',
        `its thisUpdate ${crl.thisUpdate.toISOString()} is older than the list in force (${inForce.crl.thisUpdate.toISOString()})`,
      );
    if (inForce !== null && dropsRevocationOfSameSecond(crl, inForce.crl))
      throw new CrlRefused(
        'older',
        `its thisUpdate ${crl.thisUpdate.toISOString()} is the list in force's, but it lacks a certificate that one revokes: an earlier list of that second`,
      );
    // A pin of another CA is one the entry's named CA overrules: no measure of this CA's lists.
    if (pin !== null && pin.issuer === crl.issuer && crl.thisUpdate < pin.thisUpdate)
      throw new CrlRefused(
        'older',
        `its thisUpdate ${crl.thisUpdate.toISOString()} is older than a list believed from here before (${pin.thisUpdate.toISOString()})`,
      );
    return crlSigners(crl, candidates);
  }

  /**
   * The CAs whose key may have signed `crl`: the one its source's entry names, by its own key only
   * (another CA of that name, renewed under a new key or an anchor of the same name, is not it),
   * else every trust anchor and known CA of the name it gives. Those that vouch (a path to a trust
   * anchor that keeps the rules a device certificate's chain through them must keep) are
   * candidates; those whose path breaks a rule are refused, with the rule.
   */
  async #signersOf(
    crl: RevocationList,
    named: CaCertificate | null,
    authorities: readonly CaCertificate[],
  ): Promise<{ readonly candidates: CaCertificate[]; readonly refused: RefusedSigner[] }> {
    const candidates: CaCertificate[] = [];
    const refused: RefusedSigner[] = [];
    const known =
      named === null
        ? [...this.#verifier.anchorsNamed(crl.issuer), ...authorities.filter((ca) => ca.subject === crl.issuer)]
        : [named];
    for (const ca of known) {
      const verdict = await this.#verifier.standingOf(ca, authorities);
      if (verdict.standing === 'vouches') candidates.push(ca);
      if (verdict.standing === 'breaks-path-rule') refused.push({ ca, rule: verdict.rule });
    }
    return { candidates, refused };
  }

  /** Keeps the last good list; counts the refusal, and logs (and audits) it once per list and reason. */
  async #refuse(
    source: CrlSource,
    index: number,
    error: unknown,
    crl: RevocationList | null,
    sha256: string,
  ): Promise<void> {
    const reason: CrlRefusalReason = error instanceof CrlRefused ? error.reason : 'unreadable';
    const detail = messageOf(error);
    this.#refused.set(reason, (this.#refused.get(reason) ?? 0) + 1);
    this.#errors[index] = detail;
    const report = `${reason} ${sha256}`;
    if (this.#reported[index] === report) return;
    this.#reported[index] = report;
    if (reason === 'unreadable') {
      this.#ctx.logger.error(
        { err: error, crl: source.location },
        'a certificate revocation list cannot be read; the last good one stays in use',
      );
      return;
    }
    const issuer = crl?.issuer ?? '';
    this.#ctx.logger.warn(
      { crl: source.location, issuer, reason, detail, sha256 },
      'a certificate revocation list is refused; the last good one stays in use',
    );
    await this.#audit(
      portalCall('crl_refused', { crl: source.location, issuer, reason, sha256 }),
      422,
      `revocation list refused: ${detail}`,
    );
  }

  /** Retires the devices each list in force revokes; a list that would retire too many at once waits for confirmation. */
  async #retire(authorities: readonly CaCertificate[]): Promise<void> {
    const lists = this.#inForce.flatMap((list, index) => (list === null ? [] : [{ list, index }]));
    if (lists.length === 0) return;
    const limit = retireLimit(this.#config.crlMaxRetire, (await liveDeviceIdentifiers(this.#ctx.db)).length);
    for (const { list, index } of lists) {
      // The devices whose own certificate it revokes, and those whose certificate a CA it revokes issued.
      const signers = [...this.#verifier.anchorsNamed(list.crl.issuer), ...authorities];
      const revokedCas = new Set(await casRevokedBy(list.crl, authorities, signers));
      const issuingCas = authorities
        .map((ca) => ({ fingerprint: fingerprintOf(ca), subject: ca.subject }))
        .filter((ca) => revokedCas.has(ca.fingerprint));
      // A serial is the signing CA's own: the devices whose certificate a CA certificate of that key issued.
      const listSigners = (await crlSigners(list.crl, signers)).map(fingerprintOf);
      const byId = new Map<string, StoredDevice>();
      for (const device of await devicesOfRevokedCertificates(this.#ctx, list.revoked, listSigners))
        byId.set(device.deviceId, device);
      for (const device of await liveDevicesIssuedBy(this.#ctx.db, issuingCas)) byId.set(device.deviceId, device);
      const devices = [...byId.values()];
      if (devices.length > limit && !(await isRevocationListConfirmed(this.#ctx.db, list.sha256))) {
        await this.#hold(index, list, devices.length, limit);
        continue;
      }
      if (this.#held[index] !== null)
        this.#ctx.logger.info(
          { crl: this.#config.crlSources[index]?.location, sha256: list.sha256 },
          'a held certificate revocation list is confirmed',
        );
      this.#held[index] = null;
      await retireDevicesOfRevokedCertificates(this.#ctx, devices, issuingCas);
    }
  }

  async #hold(index: number, list: ListInForce, devices: number, limit: number): Promise<void> {
    if (this.#held[index] === list.sha256) return;
    const location = this.#config.crlSources[index]?.location ?? '';
    await holdRevocationList(this.#ctx.db, {
      sha256: list.sha256,
      issuer: list.crl.issuer,
      location,
      devices,
      heldAt: formatAtom(this.#ctx.clock.now()),
    });
    this.#held[index] = list.sha256;
    this.#ctx.logger.warn(
      { crl: location, issuer: list.crl.issuer, sha256: list.sha256, devices, limit },
      `a certificate revocation list would retire more devices than enrollment.clientCertificate.crlMaxRetire allows; none is retired until "vpn-portal mdm confirm-crl ${list.sha256}"`,
    );
    await this.#audit(
      portalCall('crl_held', {
        crl: location,
        issuer: list.crl.issuer,
        sha256: list.sha256,
        devices: String(devices),
      }),
      409,
      `would retire ${devices} devices at once, more than crlMaxRetire allows (${limit}); held until vpn-portal mdm confirm-crl`,
    );
  }

  async #audit(call: ReturnType<typeof portalCall>, status: number, detail: string): Promise<void> {
    try {
      await recordAdminCall(this.#ctx, call, status, detail);
    } catch (error) {
      this.#ctx.logger.error({ err: error, call: call.name }, 'an audit row could not be written');
    }
  }
}

/** A CA of a list's name whose path to a trust anchor breaks a rule, and the rule. */
interface RefusedSigner {
  readonly ca: CaCertificate;
  readonly rule: string;
}

/**
 * Why a list that no candidate signed as a CA that may sign lists is refused: a candidate's key
 * signed it without its certificate allowing cRLSign, a CA whose path breaks a rule signed it,
 * or no known key of that name did.
 */
async function whyNotSignedByCandidates(
  crl: RevocationList,
  candidates: readonly CaCertificate[],
  refused: readonly RefusedSigner[],
): Promise<CrlRefused> {
  if (await crlSignedByKeyOf(crl, candidates))
    return new CrlRefused(
      'no-crl-sign',
      `the CA it names ("${crl.issuer}") signed it, but that CA certificate's keyUsage lacks cRLSign: it may not sign revocation lists`,
    );
  for (const { ca, rule } of refused)
    if (await crlSignedByKeyOf(crl, [ca]))
      return new CrlRefused(
        'issuer-path-invalid',
        `the CA it names signed it, but ${rule}: that CA vouches for no device certificate, so its lists are not believed either`,
      );
  return new CrlRefused('bad-signature', `the list is not signed by the CA it names ("${crl.issuer}")`);
}

/** Whether `crl` is an older list of its CA than `other`: made earlier, or in the same second without one of its revocations. */
function isOlderList(crl: RevocationList, other: RevocationList): boolean {
  return crl.thisUpdate < other.thisUpdate || dropsRevocationOfSameSecond(crl, other);
}

/**
 * Whether `crl` says it was made in the same second as `other` (thisUpdate has no finer unit) but
 * lacks a certificate `other` revokes: a CA that revoked one between two lists of one second made
 * the one without it first. Of two lists of one second, the one that names every revocation stands.
 */
function dropsRevocationOfSameSecond(crl: RevocationList, other: RevocationList): boolean {
  if (crl.thisUpdate.getTime() !== other.thisUpdate.getTime()) return false;
  const serials = revokedSerialsOf(crl).serialNumbers;
  for (const serial of revokedSerialsOf(other).serialNumbers) if (!serials.has(serial)) return true;
  return false;
}

/** Why `crl` is not current at `now` (made in the future, or past its nextUpdate); null when it is. */
function notCurrent(crl: RevocationList, now: Date): CrlRefused | null {
  if (crl.thisUpdate.getTime() > now.getTime() + CLOCK_SKEW_MS)
    return new CrlRefused('not-yet-valid', `its thisUpdate ${crl.thisUpdate.toISOString()} is in the future`);
  if (crl.nextUpdate !== undefined && crl.nextUpdate.getTime() < now.getTime())
    return new CrlRefused('expired', `its nextUpdate ${crl.nextUpdate.toISOString()} has passed`);
  return null;
}

/**
 * Remembers the intermediate CAs of a chain that led to a trust anchor: the CAs whose revocation
 * lists the portal can verify (a device bound to a certificate was enrolled with its issuer's chain).
 */
export async function rememberIntermediateCas(ctx: PortalContext, cas: readonly CaCertificate[]): Promise<void> {
  await rememberCertificateAuthorities(
    ctx.db,
    cas.map((ca) => ({ fingerprint: fingerprintOf(ca), subject: ca.subject, der: Buffer.from(ca.rawData) })),
    formatAtom(ctx.clock.now()),
  );
}

/**
 * A revocation list from an http(s) URL: 200 within 30 s, at most MAX_CRL_BYTES (reading stops
 * there). A redirect is not followed: whoever answers for a plain-http distribution point could
 * otherwise send the portal's requests anywhere, inside the network too; the administrator
 * configures the URL it names.
 */
async function fetchCrl(url: string): Promise<Buffer> {
  const response = await fetch(url, { signal: AbortSignal.timeout(30_000), redirect: 'manual' });
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    const location = response.headers.get('location');
    throw new Error(
      `${url} answered ${response.status}, a redirect${location === null ? '' : ` to ${location}`}, which is not followed; configure the URL of the list itself in crl`,
    );
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`${url} answered ${response.status}`);
  }
  return readResponseWithin(response, MAX_CRL_BYTES, url);
}
