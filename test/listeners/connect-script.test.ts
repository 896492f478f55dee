// The reference's connection hook (`connectScriptPath`): a real shell script, run with the
// VPN_* variables at an OpenVPN client's connect (which it may refuse by exiting non-zero) and
// at its disconnect (with the byte counts); one that hangs is killed after
// `connectScriptTimeout`, with what it started, and the client refused, and meanwhile Admin API
// calls are not held up. The answer comes when the script exits, whatever it left running or wrote.
// Many sessions ending at once run at most CONNECT_SCRIPT_CONCURRENCY copies at once, each once;
// a connect waiting for a place is refused at its timeout, and a stop does not wait for the queue.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { CONNECT_SCRIPT_CONCURRENCY } from '../../src/listeners/connect-script.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../support/test-portal.js';

const OPENVPN = 'application/x-openvpn-profile';

/** A portal with one OpenVPN profile and this connect script; its log lines are kept. */
async function portalWithScript(t: import('node:test').TestContext, script: string, timeout = 'PT10S') {
  const directory = mkdtempSync(path.join(tmpdir(), 'connect-script-'));
  const scriptFile = path.join(directory, 'hook.sh');
  writeFileSync(scriptFile, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  const logged: Record<string, unknown>[] = [];
  const portal = await startTestPortal({
    logger: pino(
      { level: 'info' },
      { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) },
    ),
    config: {
      connectScriptPath: scriptFile,
      connectScriptTimeout: timeout,
      ProfileList: [
        {
          profileId: 'staff',
          displayName: 'Staff',
          hostName: 'vpn.example.org',
          oRangeFour: '10.60.0.0/24',
          oRangeSix: 'fd60::/64',
          nodeUrl: UNREACHABLE_NODE,
        },
      ],
    },
  });
  t.after(async () => {
    await portal.close();
    rmSync(directory, { recursive: true, force: true });
  });
  return { portal, directory, logged };
}

async function openVpnConfiguration(portal: TestPortal, userId: string): Promise<string> {
  await portal.admin.create({ user_id: userId, profile_id: 'staff' }, OPENVPN);
  const [entry] = await portal.admin.userConfigurationList(userId);
  assert.ok(entry !== undefined);
  return entry.connection_id;
}

function nodeApi(portal: TestPortal, call: 'connect' | 'disconnect', form: Record<string, string>) {
  return portal.request(`${portal.nodeApiUrl}/${call}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`,
      'x-node-number': '0',
    },
    body: new URLSearchParams(form),
  });
}

test("the script runs at connect and disconnect with the reference's variables, and its non-zero exit refuses a client", async (t) => {
  const events = 'events.log';
  const { portal, directory } = await portalWithScript(
    t,
    `echo "$VPN_EVENT $VPN_USER_ID $VPN_PROFILE_ID $VPN_PROTO $VPN_CONNECTION_ID $VPN_IP_FOUR $VPN_IP_SIX $VPN_ORIGINATING_IP $VPN_BYTES_IN $VPN_BYTES_OUT" >> "$(dirname "$0")/${events}"\n[ "$VPN_USER_ID" != mallory ]`,
  );
  const alice = await openVpnConfiguration(portal, 'alice');
  const mallory = await openVpnConfiguration(portal, 'mallory');

  const allowed = await nodeApi(portal, 'connect', {
    profile_id: 'staff',
    common_name: alice,
    originating_ip: '198.51.100.7',
    ip_four: '10.60.0.2',
    ip_six: 'fd60::2',
  });
  assert.equal(allowed.text, 'OK');
  const refused = await nodeApi(portal, 'connect', {
    profile_id: 'staff',
    common_name: mallory,
    originating_ip: '198.51.100.8',
    ip_four: '10.60.0.3',
    ip_six: 'fd60::3',
  });
  assert.equal(refused.text, 'ERR', 'the script said no');
  assert.equal(
    (await nodeApi(portal, 'disconnect', { common_name: alice, bytes_in: '1200', bytes_out: '3400' })).text,
    'OK',
  );
  await waitUntil(() => readLines(path.join(directory, events)).length === 3);

  assert.deepEqual(
    readLines(path.join(directory, events)),
    [
      `C alice staff openvpn ${alice} 10.60.0.2 fd60::2 198.51.100.7`,
      `C mallory staff openvpn ${mallory} 10.60.0.3 fd60::3 198.51.100.8`,
      `D alice staff openvpn ${alice} 10.60.0.2 fd60::2  1200 3400`,
    ].map((line) => `${line}${line.startsWith('C') ? '  ' : ''}`),
  );
  const history = (await portal.admin.connectionLog()).connection_log;
  assert.deepEqual(
    history.map((entry) => [entry.user_id, entry.bytes_in]),
    [['alice', 1200]],
    'the refused client left no trace in the history',
  );
});

test('a script that hangs is killed after connectScriptTimeout, the client refused and the kill logged; Admin API calls go on meanwhile', async (t) => {
  const { portal, logged } = await portalWithScript(t, 'sleep 30', 'PT3S');
  const alice = await openVpnConfiguration(portal, 'alice');
  const started = Date.now();
  const connecting = nodeApi(portal, 'connect', { profile_id: 'staff', common_name: alice, ip_four: '10.60.0.2' });
  // While the connect waits for the script, the Admin API answers.
  const first = await Promise.race([
    portal.admin.users().then((users) => ({ answered: 'users', users })),
    connecting.then(() => ({ answered: 'connect', users: [] })),
  ]);
  assert.deepEqual(first, { answered: 'users', users: ['alice'] }, 'users answered while the script hangs');
  assert.equal((await connecting).text, 'ERR');
  const waited = Date.now() - started;
  assert.ok(
    waited >= 3_000 && waited < 10_000,
    `refused after the timeout, not after the script's 30 s (${waited} ms)`,
  );
  const line = logged.find((entry) => entry['msg'] === 'connect script refused the OpenVPN client');
  assert.match(String(line?.['reason']), /still running after 3000 ms; killed/);
});

test('a script that exits at once is answered at once, though it leaves a process in the background or writes megabytes', async (t) => {
  const { portal, directory } = await portalWithScript(
    t,
    'sleep 30 &\necho $! > "$(dirname "$0")/background.pid"\nhead -c 2000000 /dev/zero\nexit 0',
    'PT5S',
  );
  const alice = await openVpnConfiguration(portal, 'alice');
  const started = Date.now();
  const answer = await nodeApi(portal, 'connect', { profile_id: 'staff', common_name: alice, ip_four: '10.60.0.2' });
  const waited = Date.now() - started;
  const background = readPid(path.join(directory, 'background.pid'));
  t.after(() => killIfRunning(background));
  assert.equal(answer.text, 'OK', 'the script exited 0');
  assert.ok(waited < 2_000, `answered when the script exited, not after connectScriptTimeout (${waited} ms)`);
  assert.ok(isRunning(background), 'what a script that exited started is its own');
});

test('a script killed after connectScriptTimeout is killed with the processes it started', async (t) => {
  const { portal, directory } = await portalWithScript(
    t,
    'sleep 300 &\necho $! > "$(dirname "$0")/child.pid"\nwait',
    'PT1S',
  );
  const alice = await openVpnConfiguration(portal, 'alice');
  assert.equal(
    (await nodeApi(portal, 'connect', { profile_id: 'staff', common_name: alice, ip_four: '10.60.0.2' })).text,
    'ERR',
  );
  const child = readPid(path.join(directory, 'child.pid'));
  t.after(() => killIfRunning(child));
  await waitUntil(() => !isRunning(child));
  assert.equal(isRunning(child), false, 'the sleep the hung script started is gone too');
});

/**
 * A script that, at a disconnect, counts the copies of itself running (under flock, so the count
 * is exact), keeps the highest count, and stays a moment; at a connect it exits at once.
 */
const COUNTING_SCRIPT = `dir="$(dirname "$0")"
[ "$VPN_EVENT" = D ] || exit 0
echo "$VPN_CONNECTION_ID" >> "$dir/ended.log"
flock "$dir/lock" sh -c 'n=$(($(cat "$1/running" 2>/dev/null || echo 0) + 1)); echo $n > "$1/running"; [ $n -gt $(cat "$1/most" 2>/dev/null || echo 0) ] && echo $n > "$1/most"; true' _ "$dir"
sleep 2
flock "$dir/lock" sh -c 'echo $(($(cat "$1/running") - 1)) > "$1/running"' _ "$dir"`;

/** `count` OpenVPN clients of alice, connected. */
async function connectedClients(portal: TestPortal, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    await portal.admin.create({ user_id: 'alice', profile_id: 'staff' }, OPENVPN);
  }
  for (const entry of await portal.admin.userConfigurationList('alice')) {
    const connected = await nodeApi(portal, 'connect', {
      profile_id: 'staff',
      common_name: entry.connection_id,
      ip_four: `10.60.0.${ids.length + 2}`,
    });
    assert.equal(connected.text, 'OK');
    ids.push(entry.connection_id);
  }
  return ids;
}

test('sessions ending all at once run at most CONNECT_SCRIPT_CONCURRENCY copies of the script at once, each session once', async (t) => {
  const { portal, directory } = await portalWithScript(t, COUNTING_SCRIPT);
  const sessions = await connectedClients(portal, 2 * CONNECT_SCRIPT_CONCURRENCY);
  const answers = await Promise.all(
    sessions.map((id) => nodeApi(portal, 'disconnect', { common_name: id, bytes_in: '1', bytes_out: '2' })),
  );
  assert.ok(answers.every((answer) => answer.text === 'OK'));
  const ended = path.join(directory, 'ended.log');
  await waitUntil(
    () => readLines(ended).length >= sessions.length && readLines(path.join(directory, 'running'))[0] === '0',
    200,
  );

  assert.deepEqual(readLines(ended).sort(), [...sessions].sort(), 'every session ended ran the script, once');
  const most = Number(readLines(path.join(directory, 'most'))[0]);
  assert.ok(most <= CONNECT_SCRIPT_CONCURRENCY, `${most} copies ran at once`);
  assert.ok(most > 1, 'the copies that may run together did');
});

test('a connect that waits for a place among busy scripts is refused at connectScriptTimeout without running it; the waiting disconnects all run', async (t) => {
  const { portal, directory, logged } = await portalWithScript(
    t,
    `echo "$VPN_EVENT $VPN_CONNECTION_ID" >> "$(dirname "$0")/events.log"
[ "$VPN_EVENT" = C ] || sleep 30`,
    'PT5S',
  );
  // Three times as many disconnects as places, all at once: each third hangs until it is killed
  // at 5 s, then the next. The connect waits behind the last third, so it could get a place only
  // 10 s after the first kill: even on a loaded machine, it is asked for well before that.
  const sessions = await connectedClients(portal, 3 * CONNECT_SCRIPT_CONCURRENCY);
  const late = await openVpnConfiguration(portal, 'bob');
  const disconnected = await Promise.all(
    sessions.map((id) => nodeApi(portal, 'disconnect', { common_name: id, bytes_in: '0', bytes_out: '0' })),
  );
  assert.ok(disconnected.every((answer) => answer.text === 'OK'));
  const events = path.join(directory, 'events.log');
  await waitUntil(() => readLines(events).filter((line) => line.startsWith('D')).length >= CONNECT_SCRIPT_CONCURRENCY);

  const started = Date.now();
  const connect = await nodeApi(portal, 'connect', { profile_id: 'staff', common_name: late, ip_four: '10.60.0.200' });
  const waited = Date.now() - started;
  assert.equal(connect.text, 'ERR', 'no place came free within the timeout');
  assert.ok(waited >= 5_000 && waited < 9_000, `refused at connectScriptTimeout (${waited} ms)`);
  const line = logged.find((entry) => entry['msg'] === 'connect script refused the OpenVPN client');
  assert.match(String(line?.['reason']), /not run: no place/);
  await waitUntil(() => readLines(events).filter((l) => l.startsWith('D')).length === sessions.length, 800);
  assert.deepEqual(
    readLines(events)
      .filter((l) => l.startsWith('D'))
      .map((l) => l.slice(2))
      .sort(),
    [...sessions].sort(),
    'every disconnect ran once, the ones that waited too',
  );
  assert.ok(!readLines(events).includes(`C ${late}`), 'the refused connect never ran the script');
});

test('a portal stopped with script runs waiting stops within moments, runs none of them later, and says so', async (t) => {
  const { portal, directory, logged } = await portalWithScript(
    t,
    `echo $$ >> "$(dirname "$0")/pids"
[ "$VPN_EVENT" = C ] || exec sleep 30`,
    'PT1M',
  );
  const sessions = await connectedClients(portal, 2 * CONNECT_SCRIPT_CONCURRENCY);
  const scripts: number[] = [];
  // The hanging scripts outlive the portal (they lead process groups of their own): ended here.
  t.after(() => {
    for (const pid of scripts) killIfRunning(-pid);
  });
  for (const id of sessions)
    assert.equal((await nodeApi(portal, 'disconnect', { common_name: id, bytes_in: '0', bytes_out: '0' })).text, 'OK');
  const pids = path.join(directory, 'pids');
  await waitUntil(() => readLines(pids).length === sessions.length + CONNECT_SCRIPT_CONCURRENCY);
  scripts.push(...readLines(pids).map(Number));

  const started = Date.now();
  await portal.close();
  const stopping = Date.now() - started;
  assert.ok(stopping < 8_000, `the stop did not wait for the queue (${stopping} ms)`);
  const line = logged.find((entry) => String(entry['msg']).startsWith('the portal stopped with connect script runs'));
  assert.equal(line?.['notRun'], CONNECT_SCRIPT_CONCURRENCY);
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(readLines(pids).length, sessions.length + CONNECT_SCRIPT_CONCURRENCY, 'nothing ran after the stop');
});

test("a session's disconnect script ends before the next connect about its configuration or its address starts; an unrelated connect runs meanwhile", async (t) => {
  const { portal, directory } = await portalWithScript(
    t,
    `log="$(dirname "$0")/events.log"
echo "$VPN_EVENT $VPN_USER_ID $VPN_IP_FOUR start" >> "$log"
[ "$VPN_EVENT" = C ] || sleep 3
echo "$VPN_EVENT $VPN_USER_ID $VPN_IP_FOUR end" >> "$log"`,
  );
  const alice = await openVpnConfiguration(portal, 'alice');
  const bob = await openVpnConfiguration(portal, 'bob');
  const carol = await openVpnConfiguration(portal, 'carol');
  const connect = (id: string, ipFour: string) =>
    nodeApi(portal, 'connect', { profile_id: 'staff', common_name: id, ip_four: ipFour });
  assert.equal((await connect(alice, '10.60.0.2')).text, 'OK');
  // Alice's session ends: the firewall script unmaps 10.60.0.2 from her, slowly.
  assert.equal((await nodeApi(portal, 'disconnect', { common_name: alice, bytes_in: '0', bytes_out: '0' })).text, 'OK');
  const events = path.join(directory, 'events.log');
  await waitUntil(() => readLines(events).includes('D alice 10.60.0.2 start'));
  // Meanwhile Bob is given her address, she reconnects on another, and Carol connects elsewhere.
  const answers = await Promise.all([
    connect(bob, '10.60.0.2'),
    connect(alice, '10.60.0.9'),
    connect(carol, '10.60.0.5'),
  ]);
  assert.deepEqual(
    answers.map((answer) => answer.text),
    ['OK', 'OK', 'OK'],
  );

  const lines = readLines(events);
  const at = (line: string) => {
    const index = lines.indexOf(line);
    assert.ok(index !== -1, `the script logged "${line}": ${lines.join(' | ')}`);
    return index;
  };
  const unmapped = at('D alice 10.60.0.2 end');
  assert.ok(at('C bob 10.60.0.2 start') > unmapped, "Bob's address is mapped to him after it was unmapped from Alice");
  assert.ok(at('C alice 10.60.0.9 start') > unmapped, "Alice's reconnect starts after her disconnect ended");
  assert.ok(at('C carol 10.60.0.5 end') < unmapped, "Carol's connect, about nothing of Alice's, did not wait");
});

/** The process id a script wrote to `file`. */
function readPid(file: string): number {
  const pid = Number(readFileSync(file, 'utf8').trim());
  assert.ok(Number.isInteger(pid) && pid > 0, `a process id in ${file}`);
  return pid;
}

/** Alive, and not a zombie waiting for its parent to read its end. */
function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Ends a process a script left behind (on purpose, or because the portal failed to). */
function killIfRunning(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Gone.
  }
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

async function waitUntil(condition: () => boolean, tries = 100): Promise<void> {
  for (let tried = 0; tried < tries && !condition(); tried++) await new Promise((resolve) => setTimeout(resolve, 50));
}
