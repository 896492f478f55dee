// Composition root of the portal: opens the database, builds the node clients and the HTTP
// server, and runs the reconcile loop. Everything is created here and passed down.
import { pino, type DestinationStream, type Logger } from 'pino';
import type { PortalConfig } from './config/portal-config.js';
import type { PortalContext } from './core/context.js';
import type { NodeNumber } from './shared/ids.js';
import { PortalEvents, type PortalEvent } from './core/events.js';
import { DATABASE_CLOCK_SAMPLE_MS, DatabaseClock } from './core/database-clock.js';
import { NodeFleet } from './node-client/fleet.js';
import { runConnectScript } from './listeners/connect-script.js';
import { writeConnectionLog } from './listeners/connection-log.js';
import { writeConnectionLogLines } from './listeners/connection-log-lines.js';
import { recordMetrics } from './listeners/event-metrics.js';
import { writeAuditLog } from './listeners/audit-log.js';
import { stampDeviceLastSeen } from './listeners/device-last-seen.js';
import { writeWebhookOutbox } from './listeners/webhook-outbox.js';
import { sendSessionsToSyslog } from './listeners/syslog-sessions.js';
import { SyslogCollector } from './core/syslog/index.js';
import { checkWebhookKeyAtStart, WebhookDeliveryWorker } from './core/webhooks/index.js';
import { writeRadiusAccounting } from './listeners/radius-accounting.js';
import { RadiusAccountingWorker } from './core/accounting/index.js';
import { moveListingGeneration } from './listeners/listing-generation.js';
import { writeRevocationReceipts } from './listeners/revocation-receipts.js';
import { dropRevokedKeptAnswers } from './listeners/kept-answers.js';
import { RevocationDeadlines } from './core/revocations/index.js';
import { ListingCache } from './core/listings/index.js';
import { RecentUsers } from './core/issuing/index.js';
import { GroupedConfirmations } from './core/revocations/index.js';
import { UnlistedSessions } from './core/sessions/index.js';
import { databaseNotReady, PortalMetrics } from './metrics/portal-metrics.js';
import { startMetricsServer } from './shared/metrics-server.js';
import { Teardown } from './shared/teardown.js';
import { ReconcileScheduler } from './core/reconcile/index.js';
import { applyEditedGroupProfiles, mappingAtStart, type MappingAtStart } from './core/directory/index.js';
import { storageOutage } from './storage/errors.js';
import { JamfPushCounts, MdmInventorySchedule } from './core/devices/index.js';
import { recordNodeNat } from './core/nodes/index.js';
import { systemClock, type Clock } from './shared/time.js';
import { buildServer } from './http/server.js';
import { startEnrollTls } from './http/enrollment/enroll-tls.js';
import { CertificateCheck, reportRefusedTrustAnchors } from './http/enrollment/certificate-check.js';
import { KeyStore } from './keys/key-store.js';
import { OpenVpnKeys } from './openvpn/openvpn-keys.js';
import { HttpNodeDaemon, type NodeDaemon } from './node-client/daemon-client.js';
import { droppedDnsServerWarnings } from './config/dns-servers.js';
import { forwardedCertificateWarning } from './config/forwarded-certificate.js';
import { plainHttpSourceWarnings } from './config/plain-http-sources.js';
import { describeDatabase } from './config/database-location.js';
import { isPostgres, openDatabase, type Db } from './storage/database.js';
import { ensurePrivateDirectory } from './storage/private-files.js';
import { LISTEN_BACKLOG } from './shared/listen-backlog.js';

/** vpn-daemon calls: the reference's client uses 2 s to connect and 4 s in total. */
const NODE_TIMEOUT_MS = 3_000;

export interface PortalOptions {
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly random?: () => number;
}

export interface RunningPortal {
  readonly ctx: PortalContext;
  readonly url: string;
  /** `http://HOST:PORT/metrics`; null when `metrics.listen` is null. */
  readonly metricsUrl: string | null;
  /** `https://HOST:PORT` of certificate enrollment; null when `enrollment.tls` is null. */
  readonly enrollTlsUrl: string | null;
  reconcileNow(): Promise<void>;
  /** The RADIUS accounting worker; null without `accounting.radius.servers`. */
  readonly radiusAccounting: RadiusAccountingWorker | null;
  /** The MDM inventory sync; null without `mdmInventory`. */
  readonly mdmInventory: MdmInventorySchedule | null;
  close(): Promise<void>;
}

/** The portal's logger (stdout unless a destination is given, as tests do to read what was logged). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  // Authorization headers carry secrets; they must never reach the log.
  const options = { level, redact: ['req.headers.authorization', 'headers.authorization'] };
  return destination === undefined ? pino(options) : pino(options, destination);
}

export async function startPortal(config: PortalConfig, options: PortalOptions = {}): Promise<RunningPortal> {
  const logger = options.logger ?? createLogger(config.logLevel);
  // Every part registers its stop as it starts: a start that fails half-way stops what it started.
  const teardown = new Teardown(logger);
  return teardown.starting(async () => {
    const ctx = await buildContext(config, options, logger, teardown);
    await checkWebhookKeyAtStart(ctx);
    const mappingNotApplied = await applyGroupProfilesAtStart(ctx);
    const metrics = new PortalMetrics(ctx);
    const webhooks = new WebhookDeliveryWorker({ ...ctx, logger: logger.child({ component: 'webhooks' }) });
    const syslog = startSyslogCollectors(ctx, metrics, teardown);
    const syslogMessagesMade = wireListeners(ctx, metrics, () => webhooks.wake(), syslog, teardown);
    // Stopped before the collectors close (stops run in reverse): the last sessions' messages go
    // too. Within the flush time: a database that does not answer does not hold the stop.
    teardown.defer('syslog messages being made', () =>
      Promise.race([
        syslogMessagesMade(),
        new Promise<void>((resolve) => setTimeout(resolve, SYSLOG_FLUSH_MS).unref()),
      ]),
    );
    const accounting = startRadiusAccounting(ctx, metrics, teardown);
    // What the nodes report about their NAT goes into the mapping history, which attribution reads.
    ctx.nodes.onNatReport(async (nodeNumber, nat, firstContact) => {
      await recordNodeNat(ctx, nodeNumber, nat, firstContact);
    });
    const certificateCheck = CertificateCheck.fromConfig(ctx);
    if (certificateCheck !== null) reportRefusedTrustAnchors(certificateCheck, logger);
    // Before the enrollment listener answers anyone.
    await certificateCheck?.revocationLists.restore();
    const servers = await startServers(ctx, metrics, certificateCheck, teardown);
    for (const warning of config.startWarnings) logger.warn(warning);
    if (!ctx.keys.adminApiEnabled())
      logger.warn(
        `admin API disabled until ${ctx.keys.adminApiKeyPath} exists: run "vpn-portal generate-secrets --admin-api"`,
      );
    const background = startBackgroundWork(ctx, metrics, certificateCheck, webhooks, teardown);
    if (mappingNotApplied !== null) background.reconciler.applyEditedMappingLater(mappingNotApplied.atStart);
    return {
      ctx,
      ...servers,
      radiusAccounting: accounting,
      reconcileNow: () => background.reconciler.runAll(),
      mdmInventory: background.mdmInventory,
      close: () => teardown.runAll(),
    };
  });
}

/**
 * Before any request: an edited `scim.groupProfiles` notes the users it may take from
 * (src/core/directory/mapping-change.ts). A database that refuses the writes (full, read-only)
 * does not stop the start: answers what the start read (`atStart`, undefined if even that
 * failed), and the reconcile passes' profile checks try again, writing only over that mapping;
 * null when applied.
 */
async function applyGroupProfilesAtStart(
  ctx: PortalContext,
): Promise<{ readonly atStart: MappingAtStart | undefined } | null> {
  let atStart: MappingAtStart | undefined;
  try {
    atStart = await mappingAtStart(ctx);
    await applyEditedGroupProfiles(ctx);
    return null;
  } catch (error) {
    if (storageOutage(error) === null) throw error;
    ctx.logger.error(
      { err: error },
      'could not compare scim.groupProfiles with the mapping last applied; the reconcile pass tries again',
    );
    return { atStart };
  }
}

/** The database, the keys, the node clients and the events seam with its listeners of the database. */
async function buildContext(
  config: PortalConfig,
  options: PortalOptions,
  logger: Logger,
  teardown: Teardown,
): Promise<PortalContext> {
  // Keys and the SQLite database live here: the portal's user alone may look inside.
  ensurePrivateDirectory(config.dataDir);
  const keys = new KeyStore(config.keyDir);
  const db = await openDatabase(config.database, {
    onConnectionError: (error) =>
      logger.warn({ err: error }, 'a database connection failed; the next query opens a new one'),
    timeoutMs: config.databaseTimeoutMs,
    retryForMs: config.databaseRetryForMs,
    poolSize: config.databasePoolSize,
    preparedStatements: config.databasePreparedStatements,
    limitStatements: true,
  });
  teardown.defer('database', () => db.destroy());
  logger.info(`database ${describeDatabase(config.database)}`);
  const clock = options.clock ?? (await clockOf(db, logger, teardown));
  const daemons = [...config.nodes.values()].map(
    (node) =>
      [
        node.nodeNumber,
        new HttpNodeDaemon({
          nodeNumber: node.nodeNumber,
          url: node.nodeUrl,
          secret: () => keys.nodeSecret(node.nodeNumber),
          timeoutMs: NODE_TIMEOUT_MS,
        }),
      ] as const,
  );
  teardown.defer('node clients', async () => {
    await Promise.all(daemons.map(([, daemon]) => daemon.close()));
  });
  const nodes = new NodeFleet(new Map<NodeNumber, NodeDaemon>(daemons), clock, logger.child({ component: 'nodes' }));
  const events = new PortalEvents(logger);
  teardown.defer('changes read back behind their calls', () => events.settled());
  announceNodeStates(nodes, events, db, clock, logger);
  return {
    config,
    db,
    keys,
    openVpnKeys: new OpenVpnKeys(config.keyDir),
    nodes,
    events,
    listings: new ListingCache(),
    recentUsers: new RecentUsers(),
    receiptConfirmations: new GroupedConfirmations(),
    unlistedSessions: new UnlistedSessions(),
    clock,
    logger,
    random: options.random ?? Math.random,
  };
}

/**
 * The system clock; on PostgreSQL held to the server's time (src/core/database-clock.ts), so no
 * instance whose clock is behind the others' counts an expired configuration as valid.
 */
async function clockOf(db: Db, logger: Logger, teardown: Teardown): Promise<Clock> {
  if (!isPostgres(db)) return systemClock;
  const clock = new DatabaseClock(systemClock, db, logger.child({ component: 'clock' }));
  await clock.sample();
  const timer = setInterval(() => void clock.sample(), DATABASE_CLOCK_SAMPLE_MS);
  timer.unref();
  teardown.defer('clock sampling', () => clearInterval(timer));
  return clock;
}

/**
 * The listeners of the events seam (src/listeners/), one file each. Their order here does not
 * matter: the closing writes run in storage's own order (src/storage/closing-writes.ts).
 * Returns what a stop awaits before the syslog collectors close: the messages being made; the
 * connect scripts register their own stop.
 */
function wireListeners(
  ctx: PortalContext,
  metrics: PortalMetrics,
  wakeWebhooks: () => void,
  syslog: readonly SyslogCollector[],
  teardown: Teardown,
): () => Promise<void> {
  const { config, events, logger } = ctx;
  writeConnectionLog(events, { keepOriginatingIp: config.connectionLogLines.originatingIp });
  writeAuditLog(events);
  writeRevocationReceipts(events);
  dropRevokedKeptAnswers(events);
  stampDeviceLastSeen(events);
  moveListingGeneration(events);
  if (config.connectScript !== null) {
    const scripts = runConnectScript(events, config.connectScript, logger.child({ component: 'connect-script' }));
    // Stopped after the HTTP server (stops run in reverse): no connect waits for a script by then.
    teardown.defer('connect scripts', () => scripts.stop());
  }
  if (config.connectionLogLines.enabled)
    writeConnectionLogLines(events, config.connectionLogLines, logger.child({ component: 'connections' }));
  writeWebhookOutbox(events, wakeWebhooks);
  const syslogMessagesMade = sendSessionsToSyslog(events, ctx.db, syslog, logger.child({ component: 'syslog' }));
  recordMetrics(events, metrics);
  return syslogMessagesMade;
}

/**
 * RADIUS accounting, when a server is configured: the outbox listener and the worker that sends
 * (started at once: records a killed instance left are sent before anything else happens).
 */
function startRadiusAccounting(
  ctx: PortalContext,
  metrics: PortalMetrics,
  teardown: Teardown,
): RadiusAccountingWorker | null {
  if (ctx.config.accounting.radius.servers.length === 0) return null;
  const worker = new RadiusAccountingWorker({ ...ctx, logger: ctx.logger.child({ component: 'radius-accounting' }) });
  writeRadiusAccounting(ctx.events, ctx.config, () => worker.wake());
  metrics.observeRadiusAccounting(worker.counts, ctx.db);
  worker.start();
  teardown.defer('RADIUS accounting', () => worker.stop());
  return worker;
}

/** How long a stopping portal waits for its syslog queues to be sent. */
const SYSLOG_FLUSH_MS = 2_000;

/** The collectors of `accounting.syslog`, watched by the metrics; at stop, what they hold is sent for a moment. */
function startSyslogCollectors(ctx: PortalContext, metrics: PortalMetrics, teardown: Teardown): SyslogCollector[] {
  const { enterpriseNumber, collectors } = ctx.config.accounting.syslog;
  const logger = ctx.logger.child({ component: 'syslog' });
  const started = collectors.map((config) => new SyslogCollector(config, enterpriseNumber, logger));
  if (started.length === 0) return started;
  metrics.observeSyslog(started);
  teardown.defer('syslog collectors', async () => {
    await Promise.all(started.map((collector) => collector.close(SYSLOG_FLUSH_MS)));
  });
  return started;
}

/** A node going down or coming back is recorded (the webhook outbox writes it), then published. */
function announceNodeStates(nodes: NodeFleet, events: PortalEvents, db: Db, clock: Clock, logger: Logger): void {
  nodes.onStateChange((change) => {
    const event: PortalEvent = change.up
      ? { type: 'node.up', at: clock.now(), nodeNumber: change.nodeNumber }
      : { type: 'node.down', at: clock.now(), nodeNumber: change.nodeNumber, reason: change.reason };
    // A database away loses only the webhook.
    void events
      .record(db, event)
      .catch((error: unknown) =>
        logger.warn({ err: error, event: event.type }, 'a node state change could not be recorded'),
      )
      .finally(() => events.publish(event));
  });
}

type RunningServers = Pick<RunningPortal, 'url' | 'metricsUrl' | 'enrollTlsUrl'>;

/** The HTTP server (Admin API, Node API, enroll), the metrics side door and certificate enrollment. */
async function startServers(
  ctx: PortalContext,
  metrics: PortalMetrics,
  certificateCheck: CertificateCheck | null,
  teardown: Teardown,
): Promise<RunningServers> {
  const { config, db, logger } = ctx;
  const jamfPushCounts = new JamfPushCounts();
  if (config.mdmPush.jamf !== null) metrics.observeJamfPush(jamfPushCounts);
  const app = buildServer(ctx, certificateCheck, jamfPushCounts);
  // Closed also when listening fails: Fastify may hold a socket by then.
  teardown.defer('HTTP server', () => app.close());
  metrics.instrument(app, {
    adminPrefix: `${config.basePath}/admin/api/`,
    nodeApi: `${config.basePath}/node-api.php/`,
  });
  // A deep accept queue: a burst of connections (slow clients, a reconnecting fleet) must not make
  // the kernel drop a legitimate client's SYN, which it would retry only after a second.
  const url = await app.listen({ host: config.listen.host, port: config.listen.port, backlog: LISTEN_BACKLOG });
  logger.info(
    `admin API at ${new URL('admin/api/v1/', config.baseUrl.href.endsWith('/') ? config.baseUrl : `${config.baseUrl.href}/`).href} (listening on ${url})`,
  );
  let metricsUrl: string | null = null;
  if (config.metrics !== null) {
    const metricsServer = await startMetricsServer({
      ...config.metrics,
      registry: metrics.registry,
      notReady: () => databaseNotReady(db),
    });
    teardown.defer('metrics server', () => metricsServer.close());
    metricsUrl = metricsServer.url;
    logger.info(`metrics at ${metricsServer.url}`);
  }
  for (const warning of droppedDnsServerWarnings(config.profiles)) logger.warn(warning);
  const forwardingWarning = forwardedCertificateWarning(config);
  if (forwardingWarning !== null) logger.warn(forwardingWarning);
  for (const warning of plainHttpSourceWarnings(config)) logger.warn(warning);
  const enrollTls = await startEnrollTls(ctx, certificateCheck);
  if (enrollTls !== null) teardown.defer('certificate enrollment', () => enrollTls.close());
  return { url, metricsUrl, enrollTlsUrl: enrollTls?.url ?? null };
}

/** The work that runs by itself: revocation lists, the MDM inventory, reconcile, node watching, webhooks, receipts' deadlines. */
function startBackgroundWork(
  ctx: PortalContext,
  metrics: PortalMetrics,
  certificateCheck: CertificateCheck | null,
  webhooks: WebhookDeliveryWorker,
  teardown: Teardown,
): { readonly reconciler: ReconcileScheduler; readonly mdmInventory: MdmInventorySchedule | null } {
  const { config, clock, nodes } = ctx;
  if (certificateCheck !== null) {
    const lists = certificateCheck.revocationLists;
    lists.start();
    teardown.defer('certificate revocation lists', () => lists.stop());
    metrics.observeRevocationLists(lists, () => clock.now().getTime());
    metrics.observeTrustAnchors(certificateCheck.trustAnchors);
  }
  let mdmInventory: MdmInventorySchedule | null = null;
  if (config.mdmInventory !== null) {
    const schedule = new MdmInventorySchedule(ctx, config.mdmInventory);
    metrics.observeMdmInventory(() => schedule.state);
    schedule.start();
    teardown.defer('MDM inventory sync', () => schedule.stop());
    mdmInventory = schedule;
  }
  const reconciler = new ReconcileScheduler(ctx);
  reconciler.start(config.reconcileIntervalMs);
  // A change answered as failed that committed after all: the nodes follow it now, not at the next pass.
  ctx.events.lateCommit(() => void reconciler.runAll());
  // A configuration that expires before every other one known moves the expiry sweep forward.
  ctx.events.afterCommit((event) => {
    if (event.type === 'configuration.created') reconciler.noticeExpiry(event.expiresAt);
  });
  teardown.defer('reconcile', () => {
    reconciler.stop();
    return reconciler.idle();
  });
  nodes.startWatching();
  teardown.defer('node watching', () => nodes.stop());
  webhooks.start();
  teardown.defer('webhook deliveries', () => webhooks.stop());
  const revocationDeadlines = new RevocationDeadlines(ctx);
  revocationDeadlines.start();
  teardown.defer('revocation deadlines', () => revocationDeadlines.stop());
  return { reconciler, mdmInventory };
}
