// Another portal instance's slow reading of the MDM inventory, for stories of two instances on one
// database: a server in front of the stand-in's JSON list that fetches the list as it is when the
// reading begins, and answers it only once the test releases it. The pass it feeds is one whose
// reading began then and ended later.
import { createServer, type Server } from 'node:http';
import type { MdmInventoryConfig } from '../../src/config/portal-config.js';
import { type InventoryPass, syncWithMdmInventory } from '../../src/core/devices/index.js';
import type { PortalContext } from '../../src/core/context.js';
import type { MdmStandIn } from './mdm-stand-in.js';

export class SlowInventoryReading {
  #release: () => void = () => {};
  #requested: () => void = () => {};

  private constructor(
    private readonly server: Server,
    /** The inventory URL the slow pass is to read. */
    readonly url: string,
  ) {}

  static async start(mdm: MdmStandIn): Promise<SlowInventoryReading> {
    let reading: SlowInventoryReading | undefined;
    const server = createServer((request, response) => {
      void (async () => {
        const snapshot = await (
          await fetch(`${mdm.url}/inventory.json`, { headers: { authorization: request.headers.authorization ?? '' } })
        ).text();
        const held = new Promise<void>((resolve) => {
          if (reading !== undefined) reading.#release = resolve;
        });
        if (reading !== undefined) reading.#requested();
        await held;
        response.writeHead(200, { 'content-type': 'application/json' }).end(snapshot);
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    reading = new SlowInventoryReading(server, `http://127.0.0.1:${address.port}/inventory.json`);
    return reading;
  }

  /** Resolves once the next reading has fetched its snapshot (call before starting the pass). */
  nextReading(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#requested = resolve;
    });
  }

  /**
   * Another instance's pass over this slow reading, on the portal's database (its JSON source
   * read here): resolves once the reading has taken its snapshot, with the pass, which ends
   * after `release`.
   */
  async otherInstancePass(ctx: PortalContext): Promise<{ readonly done: Promise<InventoryPass> }> {
    const config = ctx.config.mdmInventory as MdmInventoryConfig;
    if (config.source.provider !== 'json') throw new Error('a slow reading stands in for a JSON inventory only');
    const reachedGate = this.nextReading();
    const done = syncWithMdmInventory(ctx, { ...config, source: { ...config.source, url: this.url } });
    await reachedGate;
    return { done };
  }

  /** The held reading is answered. */
  release(): void {
    this.#release();
  }

  async close(): Promise<void> {
    this.#release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
