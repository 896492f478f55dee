// Deterministic NAT for a /16 of clients loaded into nftables, as a figure next to its target
// (≤ 5 s) rather than a timed test: the agent's own NodeNat computes the 65,533 clients' blocks
// and programs them in one `nft -f` in a network namespace of its own, then replaces them with the
// mapping of another /16 (a change of ranges) and removes the table. Needs root.
// Run by bench/run.sh (BENCH_ONLY=nat runs it alone), or `node --import tsx bench/deterministic-nat.ts`.
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { NAT_TABLE, natRuleset, NodeNat } from '../src/agent/nat.js';
import { DeterministicNat } from '../src/net/deterministic-nat.js';
import { parseIpPrefix } from '../src/net/ip-prefix.js';
import { systemClock } from '../src/shared/time.js';
import { NetnsLab } from '../test/support/netns.js';

const TARGET_SECONDS = 5;
/** 2,048 public addresses of 32 blocks of 2,000 ports: room for 65,536 clients. */
const PUBLIC_ADDRESSES = Array.from({ length: 2048 }, (_, index) => `198.18.${index >> 8}.${index & 0xff}`);

async function main(): Promise<void> {
  const lab = new NetnsLab();
  try {
    const namespace = await lab.namespace('nat');
    const nat = new NodeNat(
      { mode: 'deterministic', publicAddresses: PUBLIC_ADDRESSES, portsPerClient: 2000 },
      namespace.runner(),
      systemClock,
      pino({ level: 'silent' }),
    );
    const loadBefore = loadavg();
    const timed = async (ranges: string): Promise<number> => {
      const started = performance.now();
      await nat.apply([parseIpPrefix(ranges), parseIpPrefix('fd00:80::/64')]);
      return (performance.now() - started) / 1000;
    };
    const first = await timed('10.128.0.0/16');
    const listed = await namespace.exec('nft', ['list', 'map', 'inet', NAT_TABLE, 'client_block']);
    const elements = listed.stdout.match(/\b\d+\.\d+\.\d+\.\d+ : /g)?.length ?? 0;
    const replaced = await timed('10.129.0.0/16');
    // The share of the load that is ours (mapping and script), not nftables'.
    let started = performance.now();
    const ranges = [parseIpPrefix('10.128.0.0/16')];
    const ruleset = natRuleset(
      ranges,
      new DeterministicNat({ ranges: ['10.128.0.0/16'], publicAddresses: PUBLIC_ADDRESSES, portsPerClient: 2000 }),
    );
    const computed = (performance.now() - started) / 1000;
    started = performance.now();
    await nat.remove();
    const removed = (performance.now() - started) / 1000;
    console.log(
      `deterministic NAT: 65,533 clients (a /16), ${PUBLIC_ADDRESSES.length} public addresses, 2,000 ports each`,
    );
    console.log(`  elements in the map          ${elements} (65,533 expected)`);
    console.log(`  loaded (compute + nft -f)    ${first.toFixed(2)} s (target ≤ ${TARGET_SECONDS} s)`);
    console.log(
      `  … of which mapping and script ${computed.toFixed(2)} s (${(ruleset.length / 1e6).toFixed(1)} MB for nft)`,
    );
    console.log(`  replaced by another /16      ${replaced.toFixed(2)} s`);
    console.log(`  table removed                ${removed.toFixed(2)} s`);
    console.log(
      `  ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load average before: ${loadBefore
        .map((value) => value.toFixed(2))
        .join(' ')}, after: ${loadavg()
        .map((value) => value.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await lab.cleanup();
  }
}

await main();
