// Composition root of the portal: opens the database, builds the node clients and the HTTP
// server, and runs the reconcile loop. Everything is created here and passed down.
import { pino, type DestinationStream, type Logger } from 'pino';
import type { PortalConfig } from './config/portal-config.js';
import type { PortalContext } from './core/context.js';
import type { NodeNumber } from './shared/ids.js';
import { PortalEvents, type PortalEvent } from './core/events.js';
import { NodeFleet } from './node-client/fleet.js';
import { runConnectScript } from './listeners/connect-script.js';
import { writeConnectionLog } from './listeners/connection-log.js';
import { writeConnectionLogLines } from './listeners/connection-log-lines.js';
import { recordMetrics } from './listeners/event-metrics.js';
import { writeAuditLog } from './listeners/audit-log.js';
import { stampDeviceLastSeen } from './listeners/device-last-seen.js';
import { writeWebhookOutbox } from './listeners/webhook-outbox.js';
import { WebhookDeliveryWorker } from './core/webhooks/index.js';
import { moveListingGeneration } from './listeners/listing-generation.js';
import { writeRevocationReceipts } from './listeners/revocation-receipts.js';
import { RevocationDeadlines } from './core/revocations/index.js';
import { ListingCache } from './core/listings/index.js';
import { databaseNotReady, PortalMetrics } from './metrics/portal-metrics.js';
import { startMetricsServer, type RunningMetricsServer } from './shared/metrics-server.js';
import { ReconcileScheduler } from './core/reconcile/index.js';
import { MdmInventorySchedule } from './core/devices/index.js';
import { systemClock, type Clock } from './shared/time.js';
import { buildServer } from './http/server.js';
import { startEnrollTls, type RunningEnrollTls } from './http/enrollment/enroll-tls.js';
import { CertificateCheck } from './http/enrollment/certificate-check.js';
import { KeyStore } from './keys/key-store.js';
import { OpenVpnKeys } from './openvpn/openvpn-keys.js';
import { HttpNodeDaemon, type NodeDaemon } from './node-client/daemon-client.js';
import { droppedDnsServerWarnings } from './config/dns-servers.js';
import { forwardedCertificateWarning } from './config/forwarded-certificate.js';
import { describeDatabase } from './config/database-location.js';
import { openDatabase } from './storage/database.js';
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
  const clock = options.clock ?? systemClock;
  // Keys and the SQLite database live here: the portal's user alone may look inside.
  ensurePrivateDirectory(config.dataDir);
  const keys = new KeyStore(config.keyDir);
  const db = await openDatabase(config.database, {
    onConnectionError: (error) =>
      logger.warn({ err: error }, 'a database connection failed; the next query opens a new one'),
    timeoutMs: config.databaseTimeoutMs,
    retryForMs: config.databaseRetryForMs,
    poolSize: config.databasePoolSize,
    limitStatements: true,
  });
  logger.info(`database ${describeDatabase(config.database)}`);
  const daemons = new Map<NodeNumber, NodeDaemon>();
  for (const node of config.nodes.values()) {
    daemons.set(
      node.nodeNumber,
      new HttpNodeDaemon({
        nodeNumber: node.nodeNumber,
        url: node.nodeUrl,
        secret: () => keys.nodeSecret(node.nodeNumber),
        timeoutMs: NODE_TIMEOUT_MS,
      }),
    );
  }
  const nodes = new NodeFleet(daemons, clock, logger.child({ component: 'nodes' }));
  const openVpnKeys = new OpenVpnKeys(config.keyDir);
  const events = new PortalEvents(logger);
  writeConnectionLog(events);
  writeAuditLog(events);
  writeRevocationReceipts(events);
  stampDeviceLastSeen(events);
  moveListingGeneration(events);
  if (config.connectScript !== null)
    runConnectScript(events, config.connectScript, logger.child({ component: 'connect-script' }));
  if (config.connectionLogLines.enabled)
    writeConnectionLogLines(events, config.connectionLogLines, logger.child({ component: 'connections' }));
  nodes.onStateChange((change) => {
    const event: PortalEvent = change.up
      ? { type: 'node.up', at: clock.now(), nodeNumber: change.nodeNumber }
      : { type: 'node.down', at: clock.now(), nodeNumber: change.nodeNumber, reason: change.reason };
    // Recorded (the webhook outbox writes it) before it is published; a database away loses only the webhook.
    void events
      .record(db, event)
      .catch((error: unknown) =>
        logger.warn({ err: error, event: event.type }, 'a node state change could not be recorded'),
      )
      .finally(() => events.publish(event));
  });
  const ctx: PortalContext = {
    config,
    db,
    keys,
    openVpnKeys,
    nodes,
    events,
    listings: new ListingCache(),
    clock,
    logger,
    random: options.random ?? Math.random,
  };
  const webhooks = new WebhookDeliveryWorker({ ...ctx, logger: logger.child({ component: 'webhooks' }) });
  writeWebhookOutbox(events, () => webhooks.wake());

  const reconciler = new ReconcileScheduler(ctx);
  const revocationDeadlines = new RevocationDeadlines(ctx);
  const metrics = new PortalMetrics(ctx);
  recordMetrics(events, metrics);

  let certificateCheck: CertificateCheck | null;
  try {
    certificateCheck = CertificateCheck.fromConfig(ctx);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  const app = buildServer(ctx, certificateCheck);
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
  let metricsServer: RunningMetricsServer | null = null;
  if (config.metrics !== null) {
    try {
      metricsServer = await startMetricsServer({
        ...config.metrics,
        registry: metrics.registry,
        notReady: () => databaseNotReady(db),
      });
    } catch (error) {
      await app.close();
      await db.destroy();
      throw error;
    }
    logger.info(`metrics at ${metricsServer.url}`);
  }
  for (const warning of droppedDnsServerWarnings(config.profiles)) logger.warn(warning);
  const forwardingWarning = forwardedCertificateWarning(config);
  if (forwardingWarning !== null) logger.warn(forwardingWarning);
  let enrollTls: RunningEnrollTls | null = null;
  try {
    enrollTls = await startEnrollTls(ctx, certificateCheck);
  } catch (error) {
    await metricsServer?.close();
    await app.close();
    await db.destroy();
    throw error;
  }
  if (certificateCheck !== null) {
    const check = certificateCheck;
    check.revocationLists.start();
    metrics.observeRevocationLists(check.revocationLists, () => clock.now().getTime());
  }
  for (const warning of config.secretFileWarnings) logger.warn(warning);
  if (!keys.adminApiEnabled())
    logger.warn(
      `admin API disabled until ${keys.adminApiKeyPath} exists: run "vpn-portal generate-secrets --admin-api"`,
    );
  let mdmInventory: MdmInventorySchedule | null = null;
  if (config.mdmInventory !== null) {
    const schedule = new MdmInventorySchedule(ctx, config.mdmInventory);
    metrics.observeMdmInventory(() => schedule.state);
    schedule.start();
    mdmInventory = schedule;
  }
  reconciler.start(config.reconcileIntervalMs);
  nodes.startWatching();
  webhooks.start();
  revocationDeadlines.start();

  return {
    ctx,
    url,
    metricsUrl: metricsServer?.url ?? null,
    enrollTlsUrl: enrollTls?.url ?? null,
    reconcileNow: () => reconciler.runAll(),
    mdmInventory,
    async close() {
      reconciler.stop();
      await revocationDeadlines.stop();
      nodes.stop();
      await app.close();
      await enrollTls?.close();
      await certificateCheck?.revocationLists.stop();
      await mdmInventory?.stop();
      await webhooks.stop();
      await metricsServer?.close();
      await reconciler.idle();
      await Promise.all([...daemons.values()].map((daemon) => daemon.close()));
      await db.destroy();
    },
  };
}
