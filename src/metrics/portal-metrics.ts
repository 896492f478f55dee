// The portal's Prometheus metrics (prom-client): what an operator alerts on. Admin and Node
// API requests by call and status, configurations and WireGuard address pool use per profile
// and node (the pool is the first thing that runs out), devices by platform, state and identity
// (suspended ones also by reason, and suspensions counted by reason), whether each node answers and how long
// since its last successful reconcile, reconcile durations and corrections, sessions online.
// Counts that live in the database are read when Prometheus scrapes, so every portal instance
// reports the same; what only events tell (sessions, reconcile passes) is fed by
// src/listeners/event-metrics.ts.
import { sql } from 'kysely';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PortalContext } from '../core/context.js';
import { countCertificatesByProfileAndNode } from '../storage/certificates.js';
import { migrationStatus, type Db } from '../storage/database.js';
import { messageOf } from '../shared/error-message.js';
import { countPeersByProfileAndNode } from '../storage/wg-peers.js';
import { openRevocationCount } from '../storage/revocations.js';
import { countDevices, countSuspendedDevices } from '../storage/devices.js';
import { countOutboxRecords } from '../storage/radius-outbox.js';
import type { AccountingCounts } from '../core/accounting/index.js';
import { type PoolUse, poolUseOf } from '../core/nodes/index.js';
import { sharedWhileRunning } from '../shared/shared-while-running.js';
import type { buildServer } from '../http/server.js';
import type { SyslogCollector } from '../core/syslog/index.js';
import type { TrustAnchorStanding } from '../keys/client-certificate.js';
import {
  CRL_REFUSAL_REASONS,
  type JamfPushCounts,
  suspensionReasonLabel,
  INVENTORY_REFUSALS,
  type MdmInventorySchedule,
  type RevocationListRefresher,
} from '../core/devices/index.js';

export class PortalMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'vpn_portal_api_requests_total',
    help: 'Admin API and Node API requests answered, by API, call and HTTP status',
    labelNames: ['api', 'call', 'status'] as const,
    registers: [this.registry],
  });
  readonly requestDuration = new Histogram({
    name: 'vpn_portal_api_request_duration_seconds',
    help: 'Time from request to answer, by API, call and HTTP status',
    labelNames: ['api', 'call', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly sessionsOnline = new Gauge({
    name: 'vpn_portal_sessions_online',
    help: 'Client sessions this portal instance saw start and not yet end, by node and protocol',
    labelNames: ['node', 'vpn_proto'] as const,
    registers: [this.registry],
  });
  readonly reconcileDuration = new Histogram({
    name: 'vpn_portal_reconcile_duration_seconds',
    help: 'Duration of reconcile passes, by node',
    labelNames: ['node'] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly reconcileCorrections = new Counter({
    name: 'vpn_portal_reconcile_corrections_total',
    help: 'Changes reconcile passes had to make on a node: peers added, peers removed, OpenVPN clients disconnected',
    labelNames: ['node', 'kind'] as const,
    registers: [this.registry],
  });
  readonly lastReconcileSuccess = new Gauge({
    name: 'vpn_portal_node_last_reconcile_success_timestamp_seconds',
    help: 'Unix time of the last reconcile pass that reached the node',
    labelNames: ['node'] as const,
    registers: [this.registry],
  });
  /** Fed by src/listeners/event-metrics.ts; the reason label is bounded (suspensionReasonLabel). */
  readonly deviceSuspensions = new Counter({
    name: 'vpn_portal_device_suspensions_total',
    help: 'Devices suspended, by reason (administrator, noncompliant, stale, jamf-group; any other text: other)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly #sessions = new Map<string, number>();
  /** Unix times in milliseconds of each node's last successful pass, for the age gauge. */
  readonly lastSuccessMs = new Map<number, number>();

  constructor(ctx: PortalContext) {
    const { config } = ctx;
    const registers = [this.registry];
    const now = (): number => ctx.clock.now().getTime();
    // The configurations gauge and both pool gauges show one count per scrape (they are
    // collected at once): at a million configurations it is the scrape's largest read.
    const peersInPools = sharedWhileRunning(() => countPeersByProfileAndNode(ctx.db));
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'vpn_portal_node_up',
      help: '1 while the node answers the portal, 0 while it does not',
      labelNames: ['node'] as const,
      registers,
      collect() {
        for (const nodeNumber of config.nodes.keys())
          this.set({ node: String(nodeNumber) }, ctx.nodes.isDown(nodeNumber) ? 0 : 1);
      },
    });
    new Counter({
      name: 'vpn_portal_node_requests_total',
      help: 'Requests the portal sent to the node, by what they asked (probe: a node held for down asked whether it is back)',
      labelNames: ['node', 'request'] as const,
      registers,
      collect() {
        this.reset();
        for (const [nodeNumber, sent] of ctx.nodes.requestsSent())
          for (const [request, count] of sent) this.inc({ node: String(nodeNumber), request }, count);
      },
    });
    new Gauge({
      name: 'vpn_portal_node_listing_over_limit',
      help: '1 while the node answers a listing (peer_list, connection_list) with more than the portal reads: such a node is not reconciled',
      labelNames: ['node', 'listing'] as const,
      registers,
      collect() {
        this.reset();
        for (const nodeNumber of config.nodes.keys()) {
          this.set({ node: String(nodeNumber), listing: 'peer_list' }, 0);
          for (const over of ctx.nodes.listingsOverLimit(nodeNumber))
            this.set({ node: String(nodeNumber), listing: over.what }, 1);
        }
      },
    });
    const lastSuccessMs = this.lastSuccessMs;
    new Gauge({
      name: 'vpn_portal_node_seconds_since_last_reconcile',
      help: 'Seconds since the last reconcile pass that reached the node (absent until one did)',
      labelNames: ['node'] as const,
      registers,
      collect() {
        for (const [nodeNumber, at] of lastSuccessMs) this.set({ node: String(nodeNumber) }, (now() - at) / 1000);
      },
    });
    new Gauge({
      name: 'vpn_portal_configurations',
      help: 'Configurations in the database (expired ones until they are swept), by profile, node and protocol',
      labelNames: ['profile', 'node', 'vpn_proto'] as const,
      registers,
      async collect() {
        this.reset();
        for (const profile of config.profiles) {
          for (const node of profile.nodes) {
            if (profile.wireGuard !== null)
              this.set({ profile: profile.profileId, node: String(node.nodeNumber), vpn_proto: 'wireguard' }, 0);
            if (profile.openVpn !== null)
              this.set({ profile: profile.profileId, node: String(node.nodeNumber), vpn_proto: 'openvpn' }, 0);
          }
        }
        const [peers, certificates] = await Promise.all([peersInPools(), countCertificatesByProfileAndNode(ctx.db)]);
        for (const row of peers)
          this.set({ profile: row.profileId, node: String(row.nodeNumber), vpn_proto: 'wireguard' }, row.count);
        for (const row of certificates)
          this.set({ profile: row.profileId, node: String(row.nodeNumber), vpn_proto: 'openvpn' }, row.count);
      },
    });
    new Gauge({
      name: 'vpn_portal_revocations_pending',
      help: 'Revocation receipts not yet applied on every node (pending or overdue)',
      registers,
      async collect() {
        this.set((await openRevocationCount(ctx.db)).count);
      },
    });
    new Gauge({
      name: 'vpn_portal_revocation_oldest_pending_seconds',
      help: 'Seconds since the oldest revocation receipt not yet applied on every node was asked for (0 when there is none)',
      registers,
      async collect() {
        const { oldestRequestedAt } = await openRevocationCount(ctx.db);
        this.set(oldestRequestedAt === null ? 0 : Math.max(0, (now() - Date.parse(oldestRequestedAt)) / 1000));
      },
    });
    // Both gauges read the pools the console's Nodes page reads (core/nodes poolUseOf):
    // one rule for which pools exist and how full they are. A pool that is no longer configured
    // has no size to compare with, so it has no row either.
    const pools: { readonly name: string; readonly help: string; readonly value: (pool: PoolUse) => number }[] = [
      {
        name: 'vpn_portal_address_pool_size',
        help: 'WireGuard client address pairs a profile can hand out on a node',
        value: (pool) => pool.size,
      },
      {
        name: 'vpn_portal_address_pool_used',
        help: 'WireGuard client address pairs in use, by profile and node (compare with vpn_portal_address_pool_size)',
        value: (pool) => pool.used,
      },
    ];
    for (const { name, help, value } of pools) {
      new Gauge({
        name,
        help,
        labelNames: ['profile', 'node'] as const,
        registers,
        async collect() {
          this.reset();
          for (const pool of poolUseOf(config, await peersInPools()))
            this.set({ profile: pool.profileId, node: String(pool.nodeNumber) }, value(pool));
        },
      });
    }
    new Gauge({
      name: 'vpn_portal_devices',
      help: 'Registered devices, by platform, state (registered, active, suspended, retired) and identity (token, certificate)',
      labelNames: ['platform', 'state', 'identity'] as const,
      registers,
      async collect() {
        this.reset();
        for (const row of await countDevices(ctx.db))
          this.set({ platform: row.platform, state: row.state, identity: row.identity }, row.count);
      },
    });
    suspendedDevicesGauge(ctx.db, registers);
  }

  sessionStarted(nodeNumber: number, vpnProto: string): void {
    this.#countSession(nodeNumber, vpnProto, +1);
  }

  /** A session that started before this instance did (or on another one) does not make the count negative. */
  sessionEnded(nodeNumber: number, vpnProto: string): void {
    this.#countSession(nodeNumber, vpnProto, -1);
  }

  #countSession(nodeNumber: number, vpnProto: string, change: number): void {
    const key = `${nodeNumber}/${vpnProto}`;
    const count = Math.max(0, (this.#sessions.get(key) ?? 0) + change);
    this.#sessions.set(key, count);
    this.sessionsOnline.set({ node: String(nodeNumber), vpn_proto: vpnProto }, count);
  }

  /**
   * Counts every Admin API and Node API request by call and status. The call is the route's
   * last path segment; paths that match no route count as "unknown", so junk cannot create
   * label values without end.
   */
  /** The revocation lists of certificate enrollment, read at scrape time from the listener that keeps them. */
  observeRevocationLists(refresher: RevocationListRefresher, now: () => number): void {
    const registers = [this.registry];
    const lists = () => refresher.states();
    new Gauge({
      name: 'vpn_portal_crl_age_seconds',
      help: 'Age of each certificate revocation list in use (since its thisUpdate), by file',
      labelNames: ['file'] as const,
      registers,
      collect() {
        this.reset();
        for (const list of lists())
          if (list.thisUpdate !== null)
            this.set({ file: list.file }, Math.max(0, (now() - list.thisUpdate.getTime()) / 1000));
      },
    });
    new Gauge({
      name: 'vpn_portal_crl_entries',
      help: 'Certificates revoked by each revocation list in use, by file',
      labelNames: ['file'] as const,
      registers,
      collect() {
        this.reset();
        for (const list of lists()) this.set({ file: list.file }, list.entries);
      },
    });
    new Gauge({
      name: 'vpn_portal_crl_read_failing',
      help: '1 while the last reading of the revocation list failed or was refused (the last good one stays in use), else 0; by file',
      labelNames: ['file'] as const,
      registers,
      collect() {
        this.reset();
        for (const list of lists()) this.set({ file: list.file }, list.failing ? 1 : 0);
      },
    });
    new Gauge({
      name: 'vpn_portal_crl_held',
      help: '1 while the revocation list in force would retire more devices than crlMaxRetire allows and waits for `vpn-portal mdm confirm-crl`, else 0; by file',
      labelNames: ['file'] as const,
      registers,
      collect() {
        this.reset();
        for (const list of lists()) this.set({ file: list.file }, list.held ? 1 : 0);
      },
    });
    new Counter({
      name: 'vpn_portal_crl_refused_total',
      help: 'Readings of a revocation list not believed since the portal started, by reason: unreadable, unknown-issuer (no known CA of its name), issuer-path-invalid (the path from its CA to a trust anchor breaks a rule a device certificate chain must keep), other-issuer (another CA than the list in force from that place), bad-signature, no-crl-sign (its CA certificate may not sign lists), not-yet-valid, expired, older (than the list in force), not-whole (a delta, partition or indirect list)',
      labelNames: ['reason'] as const,
      registers,
      collect() {
        this.reset();
        const refused = refresher.refusals();
        for (const reason of CRL_REFUSAL_REASONS) this.inc({ reason }, refused.get(reason) ?? 0);
      },
    });
  }

  /** Each configured trust anchor: 1 while the path rules refuse it (it vouches for nothing), else 0. */
  observeTrustAnchors(anchors: readonly TrustAnchorStanding[]): void {
    const refused = new Gauge({
      name: 'vpn_portal_trust_anchor_refused',
      help: '1 for a trust anchor of enrollment.clientCertificate that the path rules refuse whatever is below it (CA:FALSE, nameConstraints, a critical extension the portal does not process, a keyUsage without keyCertSign): it vouches for no device certificate and no revocation list; else 0. By subject and SHA-256',
      labelNames: ['subject', 'sha256'] as const,
      registers: [this.registry],
    });
    for (const anchor of anchors)
      refused.set({ subject: anchor.subject, sha256: anchor.sha256 }, anchor.refusedBy === null ? 0 : 1);
  }

  /** RADIUS accounting: what the worker counted, and the outbox's size read from the database at scrape time. */
  observeRadiusAccounting(counts: AccountingCounts, db: Db): void {
    const registers = [this.registry];
    const counter = (name: string, help: string, of: Map<string, number>): void => {
      new Counter({
        name,
        help,
        labelNames: ['server'] as const,
        registers,
        collect() {
          this.reset();
          for (const [server, value] of of) this.inc({ server }, value);
        },
      });
    };
    counter(
      'vpn_portal_radius_accounting_sent_total',
      'Accounting-Requests a server acknowledged, by server, since this instance started',
      counts.sent,
    );
    counter(
      'vpn_portal_radius_accounting_retried_total',
      'Accounting-Requests that went unanswered and are sent again later, by server, since this instance started',
      counts.retried,
    );
    counter(
      'vpn_portal_radius_accounting_dropped_total',
      'Accounting records dropped unacknowledged after accounting.radius.maxAge (each has an audit row), by server, since this instance started',
      counts.dropped,
    );
    counter(
      'vpn_portal_radius_accounting_superseded_total',
      "Interim-Updates not sent because their session's Stop was queued (it has the final counters), by server, since this instance started",
      counts.superseded,
    );
    new Gauge({
      name: 'vpn_portal_radius_accounting_outbox',
      help: 'Accounting records waiting for an Accounting-Response, by server (all instances)',
      labelNames: ['server'] as const,
      registers,
      async collect() {
        this.reset();
        for (const [server, value] of await countOutboxRecords(db)) this.set({ server }, value);
      },
    });
  }

  /** The Jamf Pro webhook receiver (mdmPush.jamf): events by type, and devices it could not match. */
  observeJamfPush(counts: JamfPushCounts): void {
    const registers = [this.registry];
    new Counter({
      name: 'vpn_portal_jamf_events_total',
      help: 'Jamf Pro webhook events received, by event (types the portal does not act on as other), since this instance started',
      labelNames: ['event'] as const,
      registers,
      collect() {
        this.reset();
        for (const [event, value] of counts.events) this.inc({ event }, value);
      },
    });
    new Counter({
      name: 'vpn_portal_jamf_unknown_devices_total',
      help: 'Devices named by a Jamf Pro event that the portal does not know (or could not match: named by Jamf id only), since this instance started',
      registers,
      collect() {
        this.reset();
        this.inc(counts.unknownDevices);
      },
    });
  }

  /** The syslog collectors (accounting.syslog), read at scrape time: whether each is up, its queue, what it sent and dropped. */
  observeSyslog(collectors: readonly SyslogCollector[]): void {
    const registers = [this.registry];
    new Gauge({
      name: 'vpn_portal_syslog_collector_up',
      help: '1 while the portal is connected to the syslog collector and it takes what it is sent (TCP, TLS: 0 from 30 s without taking any of it until it takes the queue again; UDP: its socket is open and no datagram was refused since), else 0; by collector',
      labelNames: ['collector'] as const,
      registers,
      collect() {
        for (const collector of collectors) this.set({ collector: collector.name }, collector.state.up ? 1 : 0);
      },
    });
    new Gauge({
      name: 'vpn_portal_syslog_queue_messages',
      help: 'Syslog messages waiting to be sent, by collector (at most its queueSize)',
      labelNames: ['collector'] as const,
      registers,
      collect() {
        for (const collector of collectors) this.set({ collector: collector.name }, collector.state.queued);
      },
    });
    new Counter({
      name: 'vpn_portal_syslog_messages_sent_total',
      help: 'Syslog messages handed to the socket since the portal started, by collector',
      labelNames: ['collector'] as const,
      registers,
      collect() {
        this.reset();
        for (const collector of collectors) this.inc({ collector: collector.name }, collector.state.sent);
      },
    });
    new Counter({
      name: 'vpn_portal_syslog_messages_dropped_total',
      help: 'Syslog messages dropped since the portal started, by collector and reason: queue-full (the collector was away or slow for longer than its queue holds), send-failed (a UDP datagram the system would not send, or one the collector host refused)',
      labelNames: ['collector', 'reason'] as const,
      registers,
      collect() {
        this.reset();
        for (const collector of collectors) {
          const { dropped } = collector.state;
          this.inc({ collector: collector.name, reason: 'queue-full' }, dropped.queueFull);
          this.inc({ collector: collector.name, reason: 'send-failed' }, dropped.sendFailed);
        }
      },
    });
  }

  /** The MDM inventory sync (mdmInventory), read at scrape time from its schedule. */
  observeMdmInventory(state: () => MdmInventorySchedule['state']): void {
    const registers = [this.registry];
    new Gauge({
      name: 'vpn_portal_mdm_inventory_devices',
      help: 'Devices in the MDM inventory at the last pass that read it (of the identifier compared)',
      registers,
      collect() {
        const pass = state().lastPass;
        if (pass !== null && pass.outcome !== 'unreadable') this.set(pass.inventorySize);
      },
    });
    new Gauge({
      name: 'vpn_portal_mdm_inventory_last_success_seconds',
      help: 'When a pass last compared the devices with the MDM inventory (Unix time); absent before the first',
      registers,
      collect() {
        this.reset();
        const success = state().lastSuccess;
        if (success !== null) this.set(success.getTime() / 1000);
      },
    });
    new Gauge({
      name: 'vpn_portal_mdm_inventory_refusing',
      help: '1 while the last pass retired nothing because the inventory could not be read (reason unreadable) or would retire more than maxRetirePerPass (reason too-many), or suspended nothing because it would suspend more than compliance.maxSuspendPerPass (reason too-many-suspensions)',
      labelNames: ['reason'] as const,
      registers,
      collect() {
        const refusing = state().refusing;
        for (const reason of INVENTORY_REFUSALS) this.set({ reason }, refusing === reason ? 1 : 0);
      },
    });
    new Gauge({
      name: 'vpn_portal_mdm_inventory_retired',
      help: 'Devices retired because they left the MDM inventory, since the portal started',
      registers,
      collect() {
        this.set(state().retiredTotal);
      },
    });
  }

  instrument(
    app: ReturnType<typeof buildServer>,
    paths: { readonly adminPrefix: string; readonly nodeApi: string },
  ): void {
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url;
      const api = route?.startsWith(paths.adminPrefix) ? 'admin' : route?.startsWith(paths.nodeApi) ? 'node' : null;
      const labels = {
        api: api ?? 'other',
        call: api === null || route === undefined ? 'unknown' : route.slice(route.lastIndexOf('/') + 1),
        status: String(reply.statusCode),
      };
      this.requests.inc(labels);
      this.requestDuration.observe(labels, reply.elapsedTime / 1000);
    });
  }
}

/** Ready when the database answers and no migration is pending. */
export async function databaseNotReady(db: Db): Promise<string | null> {
  try {
    await sql`select 1`.execute(db);
    const pending = (await migrationStatus(db)).filter((migration) => migration.appliedAt === null);
    return pending.length === 0 ? null : `migrations pending: ${pending.map((migration) => migration.name).join(', ')}`;
  } catch (error) {
    return `database unavailable: ${messageOf(error)}`;
  }
}

/** Suspended devices by reason, read from the database when Prometheus scrapes. */
function suspendedDevicesGauge(db: Db, registers: Registry[]): void {
  new Gauge({
    name: 'vpn_portal_suspended_devices',
    help: 'Devices suspended now, under each reason they stand suspended for (administrator, noncompliant, stale, jamf-group; any other text: other)',
    labelNames: ['reason'] as const,
    registers,
    async collect() {
      this.reset();
      const byLabel = new Map<string, number>();
      for (const row of await countSuspendedDevices(db)) {
        const label = suspensionReasonLabel(row.reason);
        byLabel.set(label, (byLabel.get(label) ?? 0) + row.count);
      }
      for (const [reason, count] of byLabel) this.set({ reason }, count);
    },
  });
}
