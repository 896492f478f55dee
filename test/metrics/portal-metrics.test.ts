// The operator's side door of the portal: Prometheus metrics, /healthz and /readyz on a listen
// address of their own (no token, no allow-list), and request log lines at debug, not info.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber, asProfileId, asUserId } from '../../src/shared/ids.js';
import { capturedLog } from '../support/captured-log.js';
import { startPortalWithNode } from '../support/portal-with-node.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

async function scrape(portal: TestPortal): Promise<string> {
  const url = portal.portal.metricsUrl;
  assert.ok(url !== null, 'metrics are served');
  const response = await fetch(url);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** The value of one sample, e.g. `vpn_portal_node_up{node="0"}`; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('metrics count Admin API calls by call and status, configurations and address pool use by profile and node, and nodes that do not answer', async (t) => {
  const log = capturedLog('info');
  const portal = await startTestPortal({ logger: log.logger });
  t.after(portal.close);
  assert.ok(
    log.lines().some((line) => line.msg === `metrics at ${portal.portal.metricsUrl ?? ''}`),
    'the metrics address is logged at start',
  );
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  await assert.rejects(portal.admin.disableUser('nobody'));
  await portal.reconcile();

  const text = await scrape(portal);
  assert.equal(sample(text, 'vpn_portal_api_requests_total{api="admin",call="create",status="200"}'), 2);
  assert.equal(sample(text, 'vpn_portal_api_requests_total{api="admin",call="disable_user",status="400"}'), 1);
  assert.equal(
    sample(text, 'vpn_portal_api_request_duration_seconds_count{api="admin",call="create",status="200"}'),
    2,
  );
  assert.equal(sample(text, 'vpn_portal_configurations{profile="employees",node="0",vpn_proto="wireguard"}'), 2);
  // 10.44.0.0/24: network+2 to broadcast-1.
  assert.equal(sample(text, 'vpn_portal_address_pool_size{profile="employees",node="0"}'), 253);
  assert.equal(sample(text, 'vpn_portal_address_pool_used{profile="employees",node="0"}'), 2);
  assert.equal(sample(text, 'vpn_portal_node_up{node="0"}'), 0, 'the test portal has no node listening');
  assert.ok((sample(text, 'vpn_portal_reconcile_duration_seconds_count{node="0"}') ?? 0) >= 1);
  assert.equal(
    sample(text, 'vpn_portal_node_seconds_since_last_reconcile{node="0"}'),
    undefined,
    'no pass has reached the node',
  );
  assert.ok(text.includes('process_resident_memory_bytes'), 'process metrics too');
  // Configurations made and deleted move the gauges.
  await portal.admin.destroy('bob');
  assert.equal(sample(await scrape(portal), 'vpn_portal_address_pool_used{profile="employees",node="0"}'), 1);
});

test('the sessions gauge follows session.started and session.ended events and never goes below zero', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { events, clock } = portal.portal.ctx;
  const configuration = {
    userId: asUserId('alice'),
    profileId: asProfileId('employees'),
    connectionId: 'cn-1',
    vpnProto: 'openvpn' as const,
    nodeNumber: asNodeNumber(0),
  };
  const started = {
    type: 'session.started' as const,
    at: clock.now(),
    configuration,
    ipFour: '10.44.0.2',
    ipSix: 'fd44::2',
    originatingIp: null,
  };
  const ended = {
    type: 'session.ended' as const,
    at: clock.now(),
    connectionId: 'cn-1',
    vpnProto: 'openvpn' as const,
    nodeNumber: asNodeNumber(0),
    bytesIn: 1,
    bytesOut: 2,
    cause: 'disconnected' as const,
    session: null,
  };
  events.publish(started, started);
  await new Promise((resolve) => setImmediate(resolve));
  const series = 'vpn_portal_sessions_online{node="0",vpn_proto="openvpn"}';
  assert.equal(sample(await scrape(portal), series), 2);
  events.publish(ended, ended, ended);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(sample(await scrape(portal), series), 0);
});

test('a reconcile pass that reaches the node sets its age, duration and corrections', async (t) => {
  const lab = await startPortalWithNode({
    config: (nodeUrl) => ({
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'E',
          hostName: 'vpn.example.org',
          wRangeFour: '10.44.0.0/24',
          wRangeSix: 'fd44::/64',
          nodeUrl,
        },
      ],
    }),
  });
  t.after(lab.close);
  await lab.portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  await lab.portal.reconcile();
  const text = await scrape(lab.portal);
  assert.equal(sample(text, 'vpn_portal_node_up{node="0"}'), 1);
  const age = sample(text, 'vpn_portal_node_seconds_since_last_reconcile{node="0"}');
  assert.ok(age !== undefined && age >= 0 && age < 30, `seconds since the last reconcile: ${String(age)}`);
  assert.ok(
    (sample(text, 'vpn_portal_node_last_reconcile_success_timestamp_seconds{node="0"}') ?? 0) > Date.now() / 1000 - 60,
  );
  assert.ok(sample(text, 'vpn_portal_reconcile_corrections_total{node="0",kind="added"}') !== undefined);
});

test('/healthz answers while the process runs, /readyz only while the database answers, without any token', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const base = (portal.portal.metricsUrl ?? '').replace(/\/metrics$/, '');
  assert.deepEqual(await (await fetch(`${base}/healthz`)).json(), { status: 'ok' });
  const ready = await fetch(`${base}/readyz`);
  assert.equal(ready.status, 200);
  assert.deepEqual(await ready.json(), { status: 'ready' });
  const unknown = await fetch(`${base}/admin`);
  assert.equal(unknown.status, 404);
  // The Admin API is not served here, and the metrics are not served on the Admin API's address.
  assert.equal((await fetch(`${portal.portal.url}/metrics`)).status, 404);

  await portal.portal.ctx.db.destroy();
  const down = await fetch(`${base}/readyz`);
  assert.equal(down.status, 503);
  assert.match(((await down.json()) as { reason: string }).reason, /^database unavailable/);
  assert.equal((await fetch(`${base}/healthz`)).status, 200);
});

test('requests are logged at debug, one line each, and not at info', async (t) => {
  const info = capturedLog('info');
  const atInfo = await startTestPortal({ logger: info.logger });
  t.after(atInfo.close);
  await atInfo.admin.users();
  assert.deepEqual(
    info.lines().filter((line) => /request/.test(line.msg ?? '')),
    [],
  );
  const debug = capturedLog('debug');
  const atDebug = await startTestPortal({ logger: debug.logger });
  t.after(atDebug.close);
  await atDebug.admin.users();
  const lines = debug.lines().filter((line) => line.msg === 'request answered');
  assert.equal(lines.length, 1);
  assert.equal(lines[0]?.['statusCode'], 200);
  assert.equal(lines[0]?.level, 20);
  assert.doesNotMatch(debug.text(), new RegExp(atDebug.secret), 'the token is not logged');
});
