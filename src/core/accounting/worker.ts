// Works off the RADIUS accounting outbox: every portal instance runs one worker. It queues the
// Interim-Updates that fell due (a conditional update of the session's row: one instance queues
// each), claims due records under a lease (a conditional update: one instance sends each
// transmission), sends each to its server and deletes it once an Accounting-Response passed its
// check. Without an answer the record is sent again after 2 s, 4 s, 8 s, … (at most a minute
// apart), each time with the same Acct-Session-Id, a new Identifier and the Acct-Delay-Time since
// its event, until `accounting.radius.maxAge` after the event: then it is dropped, with an audit
// row (never before its first transmission). An instance killed mid-transmission leaves its lease to run out; then any instance sends
// the record again: at least once, as RADIUS accounting expects (servers de-duplicate by
// Acct-Session-Id, Acct-Status-Type and Event-Timestamp). An Interim-Update whose session's Stop
// is queued is deleted unsent: the Stop has the final counters, and it could otherwise follow it.
import { randomBytes } from 'node:crypto';
import type { RadiusServer } from '../../config/portal-config.js';
import { addDuration } from '../../shared/iso-duration.js';
import { asUserId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import {
  claimOutboxRecord,
  dueOutboxRecords,
  postponeOutboxRecord,
  removeOutboxRecord,
  heldBackUntil,
  type OutboxRecord,
} from '../../storage/radius-outbox.js';
import { claimInterim, dueInterims, radiusSessionOpen } from '../../storage/radius-sessions.js';
import { portalCall } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { queueRecord } from './outbox.js';
import { transmitAccountingRequest } from './radius-client.js';
import { interimRecord, parseRecord } from './records.js';
import { WakeableLoop } from '../../shared/wakeable-loop.js';

/** The first retransmission waits this long; each next one twice as long as the one before … */
const FIRST_RETRY_MS = 2_000;
/** … but never longer than this: a server back from an outage gets the backlog within a minute. */
const LONGEST_RETRY_MS = 60_000;
/** An Accounting-Response not here within this time: the attempt missed. */
export const ANSWER_TIMEOUT_MS = 5_000;
/** A lease outlasts the attempt by this much: time to record its outcome. */
const LEASE_MARGIN_MS = 15_000;
/** With nothing to do, the outbox is looked at this often (a session change on this instance wakes the worker at once). */
const POLL_MS = 1_000;
/** Transmissions in flight at once, per instance. */
const PARALLEL = 16;
/** Due records (and due interims) read per look. */
const BATCH = 200;
/** The audit row of a dropped record: its call name and status (the server never answered). */
export const DROPPED_CALL = 'radius_accounting_dropped';
const DROPPED_STATUS = 504;

/** What the worker counts since it started, per server: read by the metrics at scrape time. */
export interface AccountingCounts {
  readonly sent: Map<string, number>;
  readonly retried: Map<string, number>;
  readonly dropped: Map<string, number>;
  /** Interim-Updates not sent because their session's Stop was queued: it has the final counters. */
  readonly superseded: Map<string, number>;
}

/** When transmission `attempts + 1` is due after transmission `attempts` went unanswered at `now`. */
export function nextTransmissionAt(now: Date, attempts: number): Date {
  return new Date(now.getTime() + Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1), LONGEST_RETRY_MS));
}

export class RadiusAccountingWorker {
  readonly #ctx: PortalContext;
  readonly #inFlight = new Set<Promise<void>>();
  readonly counts: AccountingCounts = {
    sent: new Map(),
    retried: new Map(),
    dropped: new Map(),
    superseded: new Map(),
  };
  readonly #loop: WakeableLoop;

  constructor(ctx: PortalContext) {
    this.#ctx = ctx;
    this.#loop = new WakeableLoop({
      round: async (signal) => {
        const queued = await this.#queueInterims();
        const started = await this.#startDue(signal);
        return queued > 0 || started > 0;
      },
      failed: (error) =>
        ctx.logger.warn({ err: error }, 'the RADIUS accounting outbox could not be read; trying again shortly'),
      inFlight: () => this.#inFlight,
      pollMs: POLL_MS,
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** Something was queued, or a transmission ended: look now rather than at the next poll. */
  wake(): void {
    this.#loop.wake();
  }

  /** Ends the loop; transmissions in flight are cut off and due again at once (for this instance restarted or another). */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Queues the Interim-Update of each session whose interval passed; how many. */
  async #queueInterims(): Promise<number> {
    const { config, db, clock } = this.#ctx;
    const now = clock.now();
    let queued = 0;
    for (const session of await dueInterims(db, formatAtom(now), BATCH)) {
      const next = formatAtom(new Date(now.getTime() + config.accounting.radius.interimIntervalMs));
      await db.transaction().execute(async (trx) => {
        // Another instance, or the session's Stop, was first: nothing to queue.
        if (!(await claimInterim(trx, session.acctSessionId, session.nextInterimAt, next))) return;
        const record = interimRecord(parseRecord(session.startRecord), new Date(session.startedAt), now);
        await queueRecord(trx, config, record, session.connectionId, now);
        queued++;
      });
    }
    return queued;
  }

  /** Claims due records up to the parallel limit and starts sending them; how many were started. */
  async #startDue(signal: AbortSignal): Promise<number> {
    const room = PARALLEL - this.#inFlight.size;
    if (room <= 0) return 0;
    const { db, clock } = this.#ctx;
    let started = 0;
    for (const due of await dueOutboxRecords(db, formatAtom(clock.now()), room)) {
      if (signal.aborted) break;
      const claimedAt = clock.now();
      const token = randomBytes(12).toString('hex');
      const until = formatAtom(new Date(claimedAt.getTime() + ANSWER_TIMEOUT_MS + LEASE_MARGIN_MS));
      const claimed = await claimOutboxRecord(db, due.recordId, formatAtom(claimedAt), { until, token });
      // Another instance was quicker: it sends this transmission.
      if (claimed === undefined) continue;
      started++;
      const sending: Promise<void> = this.#send(claimed, token, signal).finally(() => {
        this.#inFlight.delete(sending);
        this.wake();
      });
      this.#inFlight.add(sending);
    }
    return started;
  }

  async #send(claimed: OutboxRecord, token: string, signal: AbortSignal): Promise<void> {
    const { config, db, clock, logger } = this.#ctx;
    const settings = config.accounting.radius;
    try {
      const server = settings.servers.find((candidate) => candidate.address === claimed.server);
      const eventAt = new Date(claimed.eventAt);
      const giveUpAt = addDuration(eventAt, settings.maxAge);
      if (server === undefined)
        return await this.#drop(claimed, token, 'the server is no longer in accounting.radius.servers');
      const record = parseRecord(claimed.record);
      // An Interim-Update of a session whose Stop is queued (the Stop took the session's row in
      // its transaction) is not sent: the Stop has the final counters. A record's id follows
      // those queued before it (queueRecord), but the ids come from the clock of the instance
      // that queued each, and an interim queued by an instance whose clock runs ahead while
      // another queued the Stop (neither transaction seeing the other's row) may sort after the
      // Stop: sent, it would reach the server after the session's end. An open session keeps
      // its row, and its interims.
      if (record.statusType === 'Interim-Update' && !(await radiusSessionOpen(db, claimed.acctSessionId)))
        return await this.#supersede(claimed, token);
      // Records of a session, and of an address, go in the order they were made: a Start or
      // Interim-Update sent after its session's Stop (one whose retransmission is due later), or
      // the next session's Start on an address sent before the Stop of the one that had it, would
      // tell a firewall the wrong user is behind the address. The wait is no attempt; the record
      // is looked at again once they may have gone (not before their next transmission is due:
      // a backlog behind a server that is away is not read over and over meanwhile).
      const heldBack = await heldBackUntil(db, claimed);
      if (heldBack !== null) {
        const again = new Date(Math.max(Date.parse(heldBack), clock.now().getTime() + FIRST_RETRY_MS));
        await postponeOutboxRecord(db, claimed.recordId, token, formatAtom(again), { cutOff: true });
        return;
      }
      // Sent at least once: a record queued after maxAge (a session the portal saw only after an
      // outage longer than that) is dropped only when its one transmission goes unanswered.
      if (clock.now() > giveUpAt && claimed.attempts > 1)
        return await this.#drop(claimed, token, this.#tooOld(claimed));
      const delaySeconds = (clock.now().getTime() - eventAt.getTime()) / 1000;
      const outcome = await transmitAccountingRequest(server, record, delaySeconds, ANSWER_TIMEOUT_MS, signal);
      if (outcome.kind === 'answered') {
        await removeOutboxRecord(db, claimed.recordId, token);
        count(this.counts.sent, server.address);
        logger.debug(
          { server: server.address, record: claimed.recordId, status: record.statusType },
          'accounting record sent',
        );
        return;
      }
      await this.#missed(claimed, token, server, outcome.reason, giveUpAt, signal.aborted);
    } catch (error) {
      // The lease runs out and the record is sent again.
      logger.warn({ err: error, record: claimed.recordId }, 'an accounting transmission could not be recorded');
    }
  }

  async #missed(
    claimed: OutboxRecord,
    token: string,
    server: RadiusServer,
    reason: string,
    giveUpAt: Date,
    stopping: boolean,
  ): Promise<void> {
    const now = this.#ctx.clock.now();
    // Stopping is not the server's fault: the transmission cut off does not count, and the next
    // instance (or this one, restarted) sends at once. A record past maxAge is not dropped for
    // it: its transmission still owed is made first.
    if (stopping) {
      await postponeOutboxRecord(this.#ctx.db, claimed.recordId, token, formatAtom(now), { cutOff: true });
      return;
    }
    const next = nextTransmissionAt(now, claimed.attempts);
    if (next > giveUpAt) return this.#drop(claimed, token, `${this.#tooOld(claimed)}; last: ${reason}`);
    await postponeOutboxRecord(this.#ctx.db, claimed.recordId, token, formatAtom(next));
    count(this.counts.retried, server.address);
    this.#ctx.logger.warn(
      { server: server.address, record: claimed.recordId, attempt: claimed.attempts, reason },
      'no Accounting-Response; the record is sent again later',
    );
  }

  #tooOld(claimed: OutboxRecord): string {
    return `no Accounting-Response within accounting.radius.maxAge (${this.#ctx.config.accounting.radius.maxAgeText}) after ${claimed.attempts} transmissions`;
  }

  /** Deletes an Interim-Update whose session's Stop is queued: nothing is lost, so no audit row. */
  async #supersede(claimed: OutboxRecord, token: string): Promise<void> {
    if (!(await removeOutboxRecord(this.#ctx.db, claimed.recordId, token))) return;
    count(this.counts.superseded, claimed.server);
    this.#ctx.logger.info(
      { server: claimed.server, record: claimed.recordId, acctSessionId: claimed.acctSessionId },
      'Interim-Update of a stopped session dropped',
    );
  }

  /** Deletes the record and writes its audit row, in one transaction. */
  async #drop(claimed: OutboxRecord, token: string, detail: string): Promise<void> {
    const ctx = this.#ctx;
    const record = parseRecord(claimed.record);
    const call = portalCall(DROPPED_CALL, {
      server: claimed.server,
      acct_session_id: claimed.acctSessionId,
      acct_status_type: record.statusType,
      event_at: claimed.eventAt,
    });
    const dropped = await ctx.events.forCall(call).change(ctx.db, async (trx, announce) => {
      if (!(await removeOutboxRecord(trx, claimed.recordId, token))) return false;
      await announce({
        type: 'admin.call',
        at: ctx.clock.now(),
        call,
        status: DROPPED_STATUS,
        detail,
        connectionIds: [claimed.connectionId],
        userId: asUserId(record.userName),
      });
      return true;
    });
    if (!dropped) return;
    count(this.counts.dropped, claimed.server);
    ctx.logger.error(
      { server: claimed.server, record: claimed.recordId, acctSessionId: claimed.acctSessionId, detail },
      'accounting record dropped',
    );
  }
}

function count(counts: Map<string, number>, server: string): void {
  counts.set(server, (counts.get(server) ?? 0) + 1);
}
