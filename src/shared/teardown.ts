// One clean-up stack for a program made of parts (the portal: database, servers, schedulers):
// each part, once started, registers its own stop, and the stops run in reverse order, each once,
// whether the program closes or a later part failed to start. A stop that fails is logged and
// the others still run, so one broken part never leaves the rest running.
/** Where a failing stop is told (the portal's logger). */
export interface StopFailureLog {
  error(fields: { readonly err: unknown; readonly part: string }, message: string): void;
}

type Stop = () => void | Promise<void>;

export class Teardown {
  readonly #logger: StopFailureLog;
  readonly #stops: { readonly name: string; readonly stop: Stop }[] = [];

  constructor(logger: StopFailureLog) {
    this.#logger = logger;
  }

  /** Registers the stop of a part that just started: it runs before the stops registered earlier. */
  defer(name: string, stop: Stop): void {
    this.#stops.push({ name, stop });
  }

  /** Runs every stop registered so far, the last first, and forgets them; a failing stop is logged. */
  async runAll(): Promise<void> {
    for (let part = this.#stops.pop(); part !== undefined; part = this.#stops.pop()) {
      try {
        await part.stop();
      } catch (error) {
        this.#logger.error({ err: error, part: part.name }, `${part.name} failed to stop`);
      }
    }
  }

  /** Runs `start`; should it fail, stops what it (and the steps before it) started, then throws its error. */
  async starting<T>(start: () => T | Promise<T>): Promise<T> {
    try {
      return await start();
    } catch (error) {
      await this.runAll();
      throw error;
    }
  }
}
