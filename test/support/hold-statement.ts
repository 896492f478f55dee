// Holds one statement of a database handle where a test wants the work that runs it to stand
// still (a full pass, the housekeeping): a Kysely plugin on that handle alone
// (`ctx.db.withPlugin(hold)`), so everything else on the database goes on. PostgreSQL tests only:
// the held statement keeps its connection, and SQLite has one.
import type {
  KyselyPlugin,
  OperationNode,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  UnknownRow,
} from 'kysely';

/** Holds the first statement `matches` picks once armed, after it has run, until `release()`. */
export class HoldStatement implements KyselyPlugin {
  readonly #picked = new Set<unknown>();
  #armed: boolean;
  #held = false;
  #reached: () => void = () => {};
  readonly reached = new Promise<void>((resolve) => {
    this.#reached = resolve;
  });
  #release: () => void = () => {};
  readonly #released = new Promise<void>((resolve) => {
    this.#release = resolve;
  });

  /** `armed: false`: statements pass until `arm()`. */
  constructor(
    private readonly matches: (node: OperationNode, text: string) => boolean,
    options: { readonly armed?: boolean } = {},
  ) {
    this.#armed = options.armed ?? true;
  }

  arm(): void {
    this.#armed = true;
  }

  transformQuery(args: PluginTransformQueryArgs) {
    if (this.#armed && this.matches(args.node, JSON.stringify(args.node))) this.#picked.add(args.queryId);
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.#picked.has(args.queryId) && !this.#held) {
      this.#held = true;
      this.#reached();
      await this.#released;
    }
    return args.result;
  }

  release(): void {
    this.#release();
  }
}
