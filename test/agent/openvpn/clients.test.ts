// The agent's decisions about the clients of one OpenVPN server, against a scripted management
// connection and portal: admitted, refused, revoked while being asked, reported when gone.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { OpenVpnClients, type ManagementCommands, type OpenVpnPortal } from '../../../src/agent/openvpn/clients.js';
import {
  ManagementCommandError,
  ManagementUnavailableError,
  type ClientNotification,
} from '../../../src/agent/openvpn/management.js';
import type { ConnectRequest, ConnectVerdict, DisconnectReport } from '../../../src/agent/portal-client.js';

const CN_ALICE = 'Im7TCdhaKqLm/Cc9UTxGhVcZ4VDXAhPbt3praxEbbsg=';
const CN_BOB = 'lOo4ma+ta8c1AJv4q83VA1P84GjmW2Wq89cJMu4dm4A=';

/** The variables OpenVPN 2.6 sends with >CLIENT:CONNECT (the parts that matter here). */
function connectEnv(commonName: string, organizationalUnit = 'employees'): Map<string, string> {
  return new Map([
    ['untrusted_ip', '198.18.250.2'],
    ['untrusted_port', '52080'],
    ['common_name', commonName],
    ['X509_0_CN', commonName],
    ['X509_0_OU', organizationalUnit],
    ['password', 'whatever-the-client-sent'],
    ['ifconfig_local', '10.77.0.1'],
    ['ifconfig_netmask', '255.255.255.0'],
    ['ifconfig_ipv6_local', 'fd77::1'],
    ['ifconfig_ipv6_netbits', '112'],
    ['ifconfig_ipv6_remote', 'fd77::2'],
  ]);
}

/** A management connection that records commands; `failing` makes a command answer ERROR. */
class ScriptedManagement implements ManagementCommands {
  readonly sent: string[] = [];
  status: string[] = [
    'HEADER\tCLIENT_LIST\tCommon Name\tReal Address\tVirtual Address\tVirtual IPv6 Address\tBytes Received\tBytes Sent\tConnected Since\tConnected Since (time_t)\tUsername\tClient ID\tPeer ID\tData Channel Cipher',
  ];
  failing: RegExp | null = null;
  /** No management connection: every command fails as ManagementConnection's do then. */
  away = false;
  /** Commands whose answer waits until `release()`. */
  holding: RegExp | null = null;
  readonly #held: { resolve(): void; reject(error: Error): void }[] = [];

  async command(line: string): Promise<string> {
    if (this.away) throw new ManagementUnavailableError('/run/openvpn/employees-0.sock');
    this.sent.push(line);
    if (this.holding?.test(line)) await new Promise<void>((resolve, reject) => this.#held.push({ resolve, reject }));
    if (this.failing?.test(line)) throw new ManagementCommandError(line.split(' ')[0] ?? '', 'client not found');
    return 'done';
  }

  release(): void {
    for (const held of this.#held.splice(0)) held.resolve();
  }

  /** The connection breaks under the held commands, and stays away. */
  breakUnderHeld(): void {
    this.away = true;
    for (const held of this.#held.splice(0))
      held.reject(new ManagementUnavailableError('/run/openvpn/employees-0.sock'));
  }

  async commandWithBlock(line: string, block: readonly string[]): Promise<string> {
    return this.command([line, ...block, 'END'].join('\n'));
  }

  async query(line: string): Promise<string[]> {
    if (this.away) throw new ManagementUnavailableError('/run/openvpn/employees-0.sock');
    this.sent.push(line);
    return this.status;
  }
}

/** A portal whose verdicts the test gives, one at a time, when it wants to. */
class ScriptedPortal implements OpenVpnPortal {
  readonly asked: ConnectRequest[] = [];
  readonly reports: DisconnectReport[] = [];
  readonly #waiting: ((verdict: ConnectVerdict) => void)[] = [];

  authorizeConnect(request: ConnectRequest): Promise<ConnectVerdict> {
    this.asked.push(request);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Reports to answer with a failure (their answer lost), before answering again. */
  failingReports = 0;
  /** Called with each report as it arrives. */
  onReport: () => void = () => {};

  async reportDisconnect(report: DisconnectReport): Promise<void> {
    this.reports.push(report);
    this.onReport();
    if (this.failingReports > 0) {
      this.failingReports -= 1;
      throw new Error('the answer was lost');
    }
  }

  answer(verdict: ConnectVerdict): void {
    const next = this.#waiting.shift();
    assert.ok(next !== undefined, 'the portal was asked');
    next(verdict);
  }
}

const ALLOW: ConnectVerdict = { allowed: true };

const DENY: ConnectVerdict = { allowed: false, portalAnswered: true, reason: 'the portal answered ERR' };

describe('deciding about the clients of one OpenVPN server', () => {
  const setUp = () => {
    const management = new ScriptedManagement();
    const portal = new ScriptedPortal();
    // The monotonic clock, in milliseconds; the test moves it.
    const clock = { now: 0 };
    const clients = new OpenVpnClients({
      profileId: 'employees',
      server: 'employees-0.conf',
      management,
      portal,
      logger: pino({ level: 'silent' }),
      reportRetryDelayMs: 1,
      now: () => clock.now,
    });
    const notify = (
      kind: ClientNotification['kind'],
      cid: number,
      env: Map<string, string>,
      kid: number | null = null,
    ): void => clients.handle({ kind, cid, kid, env });
    return { management, portal, clients, notify, clock };
  };
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  /** Alice's client (cid 0) is allowed by the portal and established at 10.77.0.2, fd77::2. */
  const aliceEstablished = async ({
    portal,
    clients,
    notify,
  }: Omit<ReturnType<typeof setUp>, 'management' | 'clock'>) => {
    notify('CONNECT', 0, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await clients.settle();
    notify(
      'ESTABLISHED',
      0,
      new Map([
        ['common_name', CN_ALICE],
        ['ifconfig_pool_remote_ip', '10.77.0.2'],
        ['ifconfig_pool_remote_ip6', 'fd77::2'],
      ]),
    );
  };

  test('an allowed client is admitted with the addresses the portal was told about', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 0, connectEnv(CN_ALICE), 1);
    await turn();
    assert.deepEqual(portal.asked, [
      {
        profileId: 'employees',
        commonName: CN_ALICE,
        originatingIp: '198.18.250.2',
        ipFour: '10.77.0.2',
        ipSix: 'fd77::2',
        reauth: false,
      },
    ]);
    portal.answer(ALLOW);
    await clients.settle();
    assert.deepEqual(management.sent, [
      'client-auth 0 1\nifconfig-push 10.77.0.2 255.255.255.0\nifconfig-ipv6-push fd77::2/112 fd77::1\nEND',
    ]);

    // A second client while the first holds .2 gets .3.
    notify('CONNECT', 1, connectEnv(CN_BOB), 1);
    await turn();
    assert.equal(portal.asked[1]?.ipFour, '10.77.0.3');
    portal.answer(ALLOW);
    await clients.settle();

    notify(
      'ESTABLISHED',
      0,
      new Map([
        ['common_name', CN_ALICE],
        ['ifconfig_pool_remote_ip', '10.77.0.2'],
        ['ifconfig_pool_remote_ip6', 'fd77::2'],
      ]),
    );
    assert.equal(clients.establishedCount, 1);
    notify(
      'DISCONNECT',
      0,
      new Map([
        ['bytes_received', '2187'],
        ['bytes_sent', '2230'],
      ]),
    );
    await clients.settle();
    assert.deepEqual(portal.reports, [
      {
        profileId: 'employees',
        commonName: CN_ALICE,
        ipFour: '10.77.0.2',
        ipSix: 'fd77::2',
        bytesIn: 2187,
        bytesOut: 2230,
        ageMs: 0,
      },
    ]);
    assert.equal(clients.establishedCount, 0);
  });

  test('a disconnect report says how long ago the portal admitted the connection, measured anew when it is sent again', async () => {
    const { portal, clients, notify, clock } = setUp();
    notify('CONNECT', 0, connectEnv(CN_ALICE), 1);
    await turn();
    clock.now = 1_000;
    portal.answer(ALLOW);
    await clients.settle();
    clock.now = 61_000;
    // The first answer is lost; the report goes again 1.2 s later.
    portal.failingReports = 1;
    portal.onReport = () => {
      clock.now += 1_200;
    };
    notify('DISCONNECT', 0, new Map([['bytes_received', '1']]));
    await clients.settle();
    assert.deepEqual(
      portal.reports.map((report) => report.ageMs),
      [60_000, 61_200],
      'counted from the portal’s yes, to each sending',
    );
  });

  test('a refused client is denied with fixed text, and its DISCONNECT is not reported', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 5, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(DENY);
    await clients.settle();
    assert.deepEqual(management.sent, ['client-deny 5 1 "refused by the portal"']);
    notify('DISCONNECT', 5, new Map());
    await clients.settle();
    assert.deepEqual(portal.reports, []);
  });

  test('a certificate of another profile is denied without asking the portal', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 2, connectEnv(CN_ALICE, 'guests'), 1);
    await clients.settle();
    assert.deepEqual(portal.asked, []);
    assert.deepEqual(management.sent, ['client-deny 2 1 "certificate issued for another profile"']);
  });

  test('a client that leaves while the portal decides is not admitted, and an allowed one is reported gone', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 3, connectEnv(CN_ALICE), 1);
    await turn();
    notify('DISCONNECT', 3, new Map());
    portal.answer(ALLOW);
    await clients.settle();
    assert.deepEqual(management.sent, [], 'nothing is answered for a client that is gone');
    assert.equal(portal.reports.length, 1, 'the portal opened a connection: it hears of its end');
  });

  test('a client that went away before client-auth arrived is reported gone', async () => {
    const { management, portal, clients, notify } = setUp();
    management.failing = /^client-auth/;
    notify('CONNECT', 3, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await clients.settle();
    assert.equal(portal.reports.length, 1);
    assert.equal(clients.establishedCount, 0);
  });

  test('when the process ends, its connected clients are reported gone and their addresses are free again', async () => {
    const { portal, clients, notify } = setUp();
    await aliceEstablished({ portal, clients, notify });

    // A CONNECT of the old process is still with the portal when it dies.
    notify('CONNECT', 1, connectEnv(CN_BOB), 1);
    await turn();
    clients.processEnded();
    portal.answer(ALLOW);
    await clients.settle();
    assert.deepEqual(
      portal.reports.map((report) => [report.commonName, report.bytesIn]),
      [
        [CN_ALICE, 0],
        [CN_BOB, 0],
      ],
    );

    notify('CONNECT', 0, connectEnv(CN_BOB), 1);
    await turn();
    assert.equal(portal.asked.at(-1)?.ipFour, '10.77.0.2', 'the new process starts with an empty pool');
    portal.answer(DENY);
    await clients.settle();
  });

  test('disconnect ends every connection of a common name with client-kill', async () => {
    const { management, portal, clients, notify } = setUp();
    for (const cid of [0, 1]) {
      notify('CONNECT', cid, connectEnv(CN_ALICE), 1);
      await turn();
      portal.answer(ALLOW);
      await clients.settle();
    }
    management.sent.length = 0;
    assert.equal(await clients.disconnect(CN_ALICE), 2);
    assert.deepEqual(management.sent, ['client-kill 0', 'client-kill 1']);
    assert.equal(await clients.disconnect(CN_BOB), 0);
  });

  test('a client named by disconnect while its admission is on its way to OpenVPN is ended right after it, and the disconnect answers only then', async () => {
    const { management, portal, clients, notify } = setUp();
    management.holding = /^client-auth/;
    notify('CONNECT', 0, connectEnv(CN_ALICE), 1);
    await turn();
    // The portal allowed it a moment before the revocation; client-auth is on its way.
    portal.answer(ALLOW);
    await turn();
    assert.match(management.sent.at(-1) ?? '', /^client-auth 0 1/);
    let answered = false;
    const disconnecting = clients.disconnect(CN_ALICE).then((ended) => {
      answered = true;
      return ended;
    });
    await turn();
    assert.equal(answered, false, 'no answer while the client may still be admitted');
    management.release();
    assert.equal(await disconnecting, 1);
    assert.equal(management.sent.at(-1), 'client-kill 0', 'admitted, then ended at once');
    await clients.settle();
  });

  test('a disconnect that finds no management connection fails, and the client is ended as soon as the connection is back', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 5, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await clients.settle();
    management.away = true;
    await assert.rejects(clients.disconnect(CN_ALICE), ManagementUnavailableError);

    // Back: OpenVPN still has Alice (cid 5) and Bob (cid 6); only Alice was disconnected.
    management.away = false;
    management.sent.length = 0;
    management.status = [
      ...management.status,
      `CLIENT_LIST\t${CN_ALICE}\t198.18.250.2:1\t10.77.0.2\tfd77::2\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t5\t1\tAES-256-GCM`,
      `CLIENT_LIST\t${CN_BOB}\t198.18.250.3:1\t10.77.0.3\tfd77::3\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t6\t1\tAES-256-GCM`,
    ];
    await clients.resync();
    assert.deepEqual(management.sent, ['status 3', 'client-kill 5']);
    // Done once: the next reconnect ends nobody.
    management.sent.length = 0;
    await clients.resync();
    assert.deepEqual(management.sent, ['status 3']);
    await clients.settle();
  });

  test('a disconnect while client-auth was lost with the management connection fails, and the client is ended once it is back', async () => {
    const { management, portal, clients, notify } = setUp();
    management.holding = /^client-auth/;
    notify('CONNECT', 8, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await turn();
    const disconnecting = clients.disconnect(CN_ALICE);
    // The connection breaks under client-auth: whether OpenVPN admitted Alice is unknown.
    management.holding = null;
    management.breakUnderHeld();
    await assert.rejects(disconnecting, ManagementUnavailableError);
    management.away = false;
    management.sent.length = 0;
    management.status = [
      ...management.status,
      `CLIENT_LIST\t${CN_ALICE}\t198.18.250.2:1\t10.77.0.2\tfd77::2\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t8\t1\tAES-256-GCM`,
    ];
    await clients.resync();
    assert.deepEqual(management.sent, ['status 3', 'client-kill 8']);
    await clients.settle();
  });

  test('a disconnect after client-auth was lost with the management connection fails, and the client is ended once it is back', async () => {
    const { management, portal, clients, notify } = setUp();
    management.holding = /^client-auth/;
    notify('CONNECT', 8, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await turn();
    // The connection breaks under client-auth, and the admission ends: whether OpenVPN admitted
    // Alice is unknown, so neither a disconnect nor the list may take her for gone.
    management.holding = null;
    management.breakUnderHeld();
    await turn();
    await assert.rejects(clients.disconnect(CN_ALICE), ManagementUnavailableError);
    await assert.rejects(clients.connections(), ManagementUnavailableError, 'not "nobody": Alice may be connected');
    management.away = false;
    management.sent.length = 0;
    management.status = [
      ...management.status,
      `CLIENT_LIST\t${CN_ALICE}\t198.18.250.2:1\t10.77.0.2\tfd77::2\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t8\t1\tAES-256-GCM`,
    ];
    await clients.resync();
    assert.deepEqual(management.sent, ['status 3', 'client-kill 8']);
    await clients.settle();
  });

  test('a disconnect that finds no management connection still refuses an admission of that name under way, which the list after the reconnect cannot show', async () => {
    const { management, portal, clients, notify } = setUp();
    await aliceEstablished({ portal, clients, notify });
    // Alice connects a second time; the portal allows it a moment before the revocation.
    notify('CONNECT', 1, connectEnv(CN_ALICE), 1);
    await turn();
    management.away = true;
    await assert.rejects(clients.disconnect(CN_ALICE), ManagementUnavailableError);

    // Back: the list is taken before the second admission ends, so it shows only the first.
    management.away = false;
    management.sent.length = 0;
    management.status = [
      ...management.status,
      `CLIENT_LIST\t${CN_ALICE}\t198.18.250.2:1\t10.77.0.2\tfd77::2\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t0\t1\tAES-256-GCM`,
    ];
    await clients.resync();
    portal.answer(ALLOW);
    await clients.settle();
    assert.deepEqual(management.sent, ['status 3', 'client-kill 0', 'client-deny 1 1 "disconnected by the portal"']);
  });

  test('with no management connection, a server that admitted clients cannot say who is connected; one that admitted nobody has nobody', async () => {
    const { management, portal, clients, notify } = setUp();
    management.away = true;
    assert.deepEqual(await clients.connections(), [], 'a process starting: nobody can be connected');
    management.away = false;
    notify('CONNECT', 2, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await clients.settle();
    management.away = true;
    await assert.rejects(clients.connections(), ManagementUnavailableError, 'not "nobody": Alice may be connected');
  });

  test('a renegotiation the portal refuses ends the session', async () => {
    const { management, portal, clients, notify } = setUp();
    await aliceEstablished({ portal, clients, notify });
    management.sent.length = 0;

    const reauth = new Map([
      ['common_name', CN_ALICE],
      ['X509_0_OU', 'employees'],
      ['trusted_ip', '198.18.250.2'],
      ['ifconfig_pool_remote_ip', '10.77.0.2'],
    ]);
    notify('REAUTH', 0, reauth, 3);
    await turn();
    assert.deepEqual(
      portal.asked.at(-1),
      {
        profileId: 'employees',
        commonName: CN_ALICE,
        originatingIp: '198.18.250.2',
        ipFour: '10.77.0.2',
        ipSix: 'fd77::2',
        reauth: true,
      },
      'a renegotiation is asked about as such',
    );
    portal.answer(ALLOW);
    await clients.settle();
    assert.deepEqual(management.sent, ['client-auth-nt 0 3']);

    notify('REAUTH', 0, reauth, 4);
    await turn();
    portal.answer(DENY);
    await clients.settle();
    assert.deepEqual(management.sent.slice(1), ['client-deny 0 4 "refused by the portal"', 'client-kill 0']);
  });

  test('after the management connection came back, status tells who is still there', async () => {
    const { management, portal, clients, notify } = setUp();
    await aliceEstablished({ portal, clients, notify });

    // Alice left while nobody listened; Bob (cid 7) came in.
    management.status = [
      ...management.status,
      `CLIENT_LIST\t${CN_BOB}\t198.18.250.3:1\t10.77.0.3\tfd77::3\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t7\t1\tAES-256-GCM`,
    ];
    await clients.resync();
    await clients.settle();
    assert.deepEqual(
      portal.reports.map((report) => report.commonName),
      [CN_ALICE],
    );
    assert.equal(clients.establishedCount, 1);
    notify(
      'DISCONNECT',
      7,
      new Map([
        ['bytes_received', '5'],
        ['bytes_sent', '6'],
      ]),
    );
    await clients.settle();
    assert.deepEqual(portal.reports.at(-1), {
      profileId: 'employees',
      commonName: CN_BOB,
      ipFour: '10.77.0.3',
      ipSix: 'fd77::3',
      bytesIn: 5,
      bytesOut: 6,
      ageMs: 0,
    });
  });
  test('a client status lists without an address is not counted as connected, is still ended by a disconnect, and is the portal’s only once established', async () => {
    const { management, portal, clients, notify } = setUp();
    // After a reconnect, OpenVPN lists Bob (cid 7) and Alice (cid 8) before either has an
    // address: their CONNECTs came while nobody listened, or they were refused and not gone yet.
    management.status = [
      ...management.status,
      `CLIENT_LIST\t${CN_BOB}\t198.18.250.3:1\t\t\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t7\t1\tAES-256-GCM`,
      `CLIENT_LIST\t${CN_ALICE}\t198.18.250.2:1\t\t\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t8\t1\tAES-256-GCM`,
    ];
    await clients.resync();
    assert.equal(clients.establishedCount, 0, 'nobody is connected yet');

    // Bob's user is disabled: whatever becomes of it, that connection is ended.
    assert.equal(await clients.disconnect(CN_BOB), 1);
    assert.deepEqual(management.sent, ['status 3', 'client-kill 7']);
    notify('DISCONNECT', 7, new Map([['bytes_received', '5']]));
    await clients.settle();
    assert.equal(portal.reports.length, 0, 'the portal opened no session for it');

    // Alice's connection completes after all (an admission nobody here heard the end of).
    notify(
      'ESTABLISHED',
      8,
      new Map([
        ['common_name', CN_ALICE],
        ['ifconfig_pool_remote_ip', '10.77.0.2'],
      ]),
    );
    assert.equal(clients.establishedCount, 1);
    notify('DISCONNECT', 8, new Map([['bytes_received', '5']]));
    await clients.settle();
    assert.deepEqual(
      portal.reports.map((report) => [report.commonName, report.ipFour]),
      [[CN_ALICE, '10.77.0.2']],
    );
  });
});
