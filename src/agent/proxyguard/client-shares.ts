// Which client holds how many of the relay's tunnels. When every tunnel of a full relay is one
// WireGuard answered, a new client takes the place of the oldest tunnel of the client holding
// the most: whoever holds one valid configuration can then no longer keep everyone else out by
// opening tunnels until the relay is full. Found in constant time, at any number of clients.

export class ClientShares<T> {
  /** Each client's tunnels, oldest first. */
  readonly #byClient = new Map<string, Set<T>>();
  /** The clients holding each number of tunnels. */
  readonly #clientsByCount = new Map<number, Set<string>>();
  #largest = 0;

  add(client: string, item: T): void {
    const items = this.#byClient.get(client) ?? new Set<T>();
    if (items.has(item)) return;
    this.#move(client, items.size, items.size + 1);
    items.add(item);
    this.#byClient.set(client, items);
  }

  delete(client: string, item: T): void {
    const items = this.#byClient.get(client);
    if (items === undefined || !items.has(item)) return;
    this.#move(client, items.size, items.size - 1);
    items.delete(item);
    if (items.size === 0) this.#byClient.delete(client);
  }

  countOf(client: string): number {
    return this.#byClient.get(client)?.size ?? 0;
  }

  /**
   * The oldest tunnel of a client holding the most, when that client holds at least two more
   * than `client`; else none (taking one would only make that client the one holding the most).
   */
  oldestOfLargestAbove(client: string): T | undefined {
    if (this.#largest < this.countOf(client) + 2) return undefined;
    const [largestClient] = this.#clientsByCount.get(this.#largest) ?? [];
    if (largestClient === undefined) return undefined;
    const [oldest] = this.#byClient.get(largestClient) ?? [];
    return oldest;
  }

  #move(client: string, from: number, to: number): void {
    if (from > 0) {
      const clients = this.#clientsByCount.get(from);
      clients?.delete(client);
      if (clients?.size === 0) this.#clientsByCount.delete(from);
    }
    if (to > 0) {
      const clients = this.#clientsByCount.get(to) ?? new Set<string>();
      clients.add(client);
      this.#clientsByCount.set(to, clients);
    }
    // Counts change by one, so the largest is at most one above or below the one before.
    if (to > this.#largest) this.#largest = to;
    else if (from === this.#largest && !this.#clientsByCount.has(from)) this.#largest = to;
  }
}
