// Network namespaces for tests that need real interfaces: a NetnsLab hands out namespaces,
// veth pairs, test subnets of 198.18.0.0/16 (reserved across processes), unique interface
// names and processes inside the namespaces, and removes all of it again — in `cleanup()`, and
// as a last resort when the test process exits or is told to stop. Names carry a random run id
// so parallel runs never meet; interface names stay within 15 characters and are unique across
// namespaces, because wireguard-go's control sockets (/var/run/wireguard/NAME.sock) are shared
// by all of them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createCommandRunner, type CommandResult, type CommandRunner } from '../../src/agent/process/command-runner.js';

export interface ExecOptions {
  readonly stdin?: string;
  readonly env?: NodeJS.ProcessEnv;
}

const hostRunner = createCommandRunner();
const WIREGUARD_SOCKET_DIR = '/var/run/wireguard';
const TERMINATE_GRACE_MS = 3_000;

/** Runs a command on the host and fails with its stderr unless it exits with 0. */
export async function hostExec(
  command: string,
  args: readonly string[],
  options: ExecOptions = {},
): Promise<CommandResult> {
  return checked(
    command,
    args,
    await hostRunner.run(command, args, options.stdin === undefined ? {} : { stdin: options.stdin }),
  );
}

/**
 * Fails (never skips) unless the tests run as root: network namespaces, veth pairs and
 * wireguard-go need it. Every lab namespace checks this first.
 */
export function requireRoot(): void {
  if (process.getuid?.() !== 0) throw new Error('needs root: run as root (.ci/run does)');
}

/**
 * Two addresses of a fresh /30 inside 198.18.0.0/16, half of the range reserved for network
 * tests; tests keep 198.19.0.0/16 for addresses inside tunnels, so the two never overlap.
 */
export interface TestSubnet {
  readonly first: string;
  readonly second: string;
  readonly prefixLength: 30;
}

export interface VethEnd {
  /** Null: the end stays in the host's namespace. */
  readonly namespace: Namespace | null;
  /** Address with prefix length, e.g. 198.18.4.1/30. */
  readonly address: string;
}

export class Namespace {
  readonly name: string;
  readonly #lab: NetnsLab;

  constructor(name: string, lab: NetnsLab) {
    this.name = name;
    this.#lab = lab;
  }

  /** A command runner whose commands run inside this namespace. */
  runner(): CommandRunner {
    return createCommandRunner({ prefix: ['ip', 'netns', 'exec', this.name] });
  }

  /** Runs a command inside the namespace and returns whatever happened. */
  async run(command: string, args: readonly string[], options: ExecOptions = {}): Promise<CommandResult> {
    const prefix = ['netns', 'exec', this.name, ...envArguments(options.env), command, ...args];
    return hostRunner.run('ip', prefix, options.stdin === undefined ? {} : { stdin: options.stdin });
  }

  /** Runs a command inside the namespace and fails with its stderr unless it exits with 0. */
  async exec(command: string, args: readonly string[], options: ExecOptions = {}): Promise<CommandResult> {
    return checked(command, args, await this.run(command, args, options));
  }

  /** Starts a long-running process inside the namespace; the lab ends it at cleanup. */
  spawn(command: string, args: readonly string[], options: ExecOptions = {}): ChildProcess {
    const child = spawn('ip', ['netns', 'exec', this.name, command, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
    this.#lab.track(child);
    return child;
  }

  /** Pids of every process living in the namespace. */
  pids(): number[] {
    const result = spawnSync('ip', ['netns', 'pids', this.name], { encoding: 'utf8' });
    return (result.stdout ?? '')
      .split('\n')
      .filter((line) => /^[0-9]+$/.test(line))
      .map(Number);
  }
}

export class NetnsLab {
  /** Random id shared by every name of this lab. */
  readonly runId = randomBytes(4).readUInt32BE(0).toString(36).slice(0, 6).padStart(6, '0');
  readonly #namespaces: Namespace[] = [];
  readonly #hostInterfaces: string[] = [];
  readonly #interfaceNames: string[] = [];
  readonly #children = new Set<ChildProcess>();
  readonly #subnets = new Set<number>();
  #counter = 0;
  #cleanedUp = false;
  readonly #onExit = (): void => this.#cleanupSync();
  readonly #onSignal = (signal: NodeJS.Signals): void => {
    this.#cleanupSync();
    process.kill(process.pid, signal);
  };

  constructor() {
    process.once('exit', this.#onExit);
    process.once('SIGINT', this.#onSignal);
    process.once('SIGTERM', this.#onSignal);
  }

  /** A unique interface name (≤ 15 characters), e.g. `wg` + run id + counter. */
  interfaceName(prefix: string): string {
    const name = `${prefix}${this.runId}${(this.#counter++).toString(36)}`;
    if (name.length > 15) throw new Error(`interface name ${name} is longer than 15 characters`);
    this.#interfaceNames.push(name);
    return name;
  }

  async namespace(role: string): Promise<Namespace> {
    requireRoot();
    const namespace = new Namespace(`vpt-${role}-${this.runId}`, this);
    this.#namespaces.push(namespace);
    await hostExec('ip', ['netns', 'add', namespace.name]);
    await namespace.exec('ip', ['link', 'set', 'dev', 'lo', 'up']);
    return namespace;
  }

  /**
   * A /30 of 198.18.0.0/16 that no other lab on this machine holds. Random, and reserved
   * across processes with a file (SUBNET_RESERVATIONS): two test files that routed the same
   * /30 on the host sent one lab's packets into the other's namespace, and its calls timed out.
   */
  subnet(): TestSubnet {
    for (;;) {
      const index = randomInt(0, 2 ** 14);
      if (this.#subnets.has(index) || !reserveSubnet(index)) continue;
      if (hostHoldsSubnet(index)) {
        rmSync(path.join(SUBNET_RESERVATIONS, String(index)), { force: true });
        continue;
      }
      this.#subnets.add(index);
      const base = subnetBase(index);
      return { first: ipv4(base + 1), second: ipv4(base + 2), prefixLength: 30 };
    }
  }

  /** Creates a veth pair joining two namespaces (or a namespace and the host) and brings it up. */
  async vethPair(a: VethEnd, b: VethEnd): Promise<{ readonly aName: string; readonly bName: string }> {
    const aName = this.interfaceName('va');
    const bName = this.interfaceName('vb');
    await hostExec('ip', ['link', 'add', 'dev', aName, 'type', 'veth', 'peer', 'name', bName]);
    for (const [name, end] of [
      [aName, a],
      [bName, b],
    ] as const) {
      if (end.namespace === null) this.#hostInterfaces.push(name);
      else await hostExec('ip', ['link', 'set', 'dev', name, 'netns', end.namespace.name]);
      const inside = end.namespace === null ? hostExec : end.namespace.exec.bind(end.namespace);
      await inside('ip', ['address', 'add', end.address, 'dev', name]);
      await inside('ip', ['link', 'set', 'dev', name, 'up']);
    }
    return { aName, bName };
  }

  track(child: ChildProcess): void {
    this.#children.add(child);
    child.once('exit', () => this.#children.delete(child));
  }

  /** Ends every process of the lab's namespaces, then removes namespaces, veths and stale sockets. */
  async cleanup(): Promise<void> {
    if (this.#cleanedUp) return;
    this.#cleanedUp = true;
    process.off('exit', this.#onExit);
    process.off('SIGINT', this.#onSignal);
    process.off('SIGTERM', this.#onSignal);

    const exits = [...this.#children].map((child) => once(child, 'exit'));
    this.#signalAll('SIGTERM');
    await Promise.race([Promise.all(exits), sleep(TERMINATE_GRACE_MS, undefined, { ref: false })]);
    for (let attempt = 0; attempt < 20 && this.#remainingPids().length > 0; attempt += 1) await sleep(100);
    this.#signalAll('SIGKILL');
    this.#removeEverything();
  }

  #remainingPids(): number[] {
    return this.#namespaces.flatMap((namespace) => namespace.pids());
  }

  #signalAll(signal: NodeJS.Signals): void {
    const pids = new Set([...this.#children].map((child) => child.pid).filter((pid) => pid !== undefined));
    for (const pid of this.#remainingPids()) pids.add(pid);
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // Already gone.
      }
    }
  }

  #cleanupSync(): void {
    if (this.#cleanedUp) return;
    this.#cleanedUp = true;
    this.#signalAll('SIGKILL');
    this.#removeEverything();
  }

  #removeEverything(): void {
    for (const namespace of this.#namespaces) spawnSync('ip', ['netns', 'del', namespace.name]);
    for (const name of this.#hostInterfaces) spawnSync('ip', ['link', 'del', 'dev', name], { stdio: 'ignore' });
    // A killed wireguard-go leaves its socket behind; only names of this lab are touched.
    for (const name of this.#interfaceNames) rmSync(`${WIREGUARD_SOCKET_DIR}/${name}.sock`, { force: true });
    for (const index of this.#subnets) rmSync(path.join(SUBNET_RESERVATIONS, String(index)), { force: true });
  }
}

/** The first address of /30 number `index` of 198.18.0.0/16, as a number. */
function subnetBase(index: number): number {
  return 198 * 2 ** 24 + 18 * 2 ** 16 + index * 4;
}

/**
 * Whether an interface of the host holds an address of /30 number `index`: a lab whose process
 * was killed (SIGKILL, no cleanup) leaves its namespaces and veths behind, and its reservation
 * reads as free. A second route to the same /30 on the host sent the next lab's answers into the
 * dead lab's namespace: its agent never reached the portal.
 */
export function hostHoldsSubnet(index: number): boolean {
  const prefix = `${ipv4(subnetBase(index))}/30`;
  const shown = spawnSync('ip', ['-o', '-4', 'address', 'show', 'to', prefix], { encoding: 'utf8' });
  if (shown.status !== 0) throw new Error(`ip address show to ${prefix} failed: ${shown.stderr}`);
  return shown.stdout.trim() !== '';
}

/** One file per /30 a lab holds, named by its index, holding the process id of its holder. */
const SUBNET_RESERVATIONS = path.join(tmpdir(), 'vpn-portal-test-subnets');

/** Reserves /30 number `index` for this process; false when a living process holds it. */
function reserveSubnet(index: number): boolean {
  mkdirSync(SUBNET_RESERVATIONS, { recursive: true, mode: 0o700 });
  const file = path.join(SUBNET_RESERVATIONS, String(index));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    // A holder killed before its cleanup left its files behind: its subnets are free again.
    const holder = Number(readFileSync(file, 'utf8'));
    if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) return false;
    rmSync(file, { force: true });
  }
  return false;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function checked(command: string, args: readonly string[], result: CommandResult): CommandResult {
  if (result.exitCode !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited with ${result.exitCode}: ${result.stderr.trim()}`);
  }
  return result;
}

/** `env NAME=value …` in front of a command, since `ip netns exec` passes its own environment. */
function envArguments(env: NodeJS.ProcessEnv | undefined): string[] {
  const pairs = Object.entries(env ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined);
  return pairs.length === 0 ? [] : ['env', ...pairs.map(([name, value]) => `${name}=${value}`)];
}

function ipv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
}

/** Peers of a WireGuard interface in the namespace and their allowed IPs, as `wg show` reports them. */
export async function wireGuardPeers(namespace: Namespace, interfaceName: string): Promise<Map<string, string[]>> {
  const { stdout } = await namespace.exec('wg', ['show', interfaceName, 'allowed-ips']);
  const peers = new Map<string, string[]>();
  for (const line of stdout.split('\n').filter(Boolean)) {
    const [key = '', ips = ''] = line.split('\t');
    peers.set(key, ips === '(none)' ? [] : ips.split(' '));
  }
  return peers;
}
