// The loop of a worker that empties a durable queue (the webhook outbox, the RADIUS accounting
// outbox): one round at a time; the next at once when a round did something or someone woke the
// loop meanwhile (a record was queued, a transmission ended), else after the poll interval, so
// that another instance's records and retries that fell due are seen too. stop() ends the loop
// after the round in progress and waits for what the rounds left in flight.
export interface WakeableLoopOptions {
  /** One round; true when it did something, and the next should start at once. */
  readonly round: (signal: AbortSignal) => Promise<boolean>;
  /** A round that threw (the database away): reported by the owner; the loop goes on after the poll interval. */
  readonly failed: (error: unknown) => void;
  /** What the rounds started and left running, awaited when the loop ends. */
  readonly inFlight: () => Iterable<Promise<unknown>>;
  readonly pollMs: number;
}

export class WakeableLoop {
  readonly #options: WakeableLoopOptions;
  readonly #stopping = new AbortController();
  #wakeUp: (() => void) | null = null;
  #woken = false;
  #running: Promise<void> | null = null;

  constructor(options: WakeableLoopOptions) {
    this.#options = options;
  }

  start(): void {
    this.#running ??= this.#loop();
  }

  /** Look now rather than at the next poll. */
  wake(): void {
    this.#woken = true;
    this.#wakeUp?.();
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#wakeUp?.();
    await this.#running;
  }

  async #loop(): Promise<void> {
    const { signal } = this.#stopping;
    while (!signal.aborted) {
      // A wake from here on is news to this round's reads or comes after them: either way it is not lost.
      this.#woken = false;
      let busy = false;
      try {
        busy = await this.#options.round(signal);
      } catch (error) {
        this.#options.failed(error);
      }
      if (!busy && !signal.aborted) await this.#sleep();
    }
    await Promise.allSettled(this.#options.inFlight());
  }

  #sleep(): Promise<void> {
    if (this.#woken) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.#options.pollMs);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wakeUp = () => {
        this.#wakeUp = null;
        done();
      };
    });
  }
}
