// What `ip` says about an interface (addresses, MTU, up), so the agent changes only what differs.
import { z } from 'zod';
import { canonicalAddress } from '../../net/cidr.js';
import { runChecked, type CommandRunner } from '../process/command-runner.js';

/** What `ip` knows about an interface: the parts the agent manages. */
export interface LinkState {
  readonly mtu: number;
  readonly up: boolean;
  /** Global-scope addresses as `address/prefix` in canonical form; link-local ones are left alone. */
  readonly globalAddresses: readonly string[];
}

const ipAddressShowSchema = z.array(
  z.object({
    mtu: z.number(),
    flags: z.array(z.string()),
    addr_info: z.array(
      z.object({ family: z.string(), local: z.string(), prefixlen: z.number(), scope: z.string().optional() }),
    ),
  }),
);

export async function linkExists(runner: CommandRunner, interfaceName: string): Promise<boolean> {
  return (await runner.run('ip', ['link', 'show', 'dev', interfaceName])).exitCode === 0;
}

export async function readLinkState(runner: CommandRunner, interfaceName: string): Promise<LinkState> {
  const result = await runChecked(runner, 'ip', ['-j', 'address', 'show', 'dev', interfaceName]);
  const [link] = ipAddressShowSchema.parse(JSON.parse(result.stdout));
  if (link === undefined) throw new Error(`ip reported nothing for ${interfaceName}`);
  return {
    mtu: link.mtu,
    up: link.flags.includes('UP'),
    globalAddresses: link.addr_info
      .filter((address) => address.scope === 'global' && (address.family === 'inet' || address.family === 'inet6'))
      .map((address) => `${canonicalAddress(address.local)}/${address.prefixlen}`),
  };
}
