// A transaction that runs no statement: for a change made in one statement (a create on
// PostgreSQL, src/storage/new-peer.ts), whose in-transaction listeners are still told of its
// events. None of today's writes anything for those events; should one ever try, its statement
// is refused with `StatementNeeded` and the change is made the usual way, in a transaction.
import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type Transaction,
} from 'kysely';
import type { Database } from './schema.js';

/** A listener asked a change made in one statement for a statement of its own. */
export class StatementNeeded extends Error {
  override readonly name = 'StatementNeeded';

  constructor() {
    super('a listener needs a statement in a change made in one statement');
  }
}

const refusingConnection: DatabaseConnection = {
  executeQuery<R>(): Promise<QueryResult<R>> {
    return Promise.reject(new StatementNeeded());
  },
  streamQuery(): AsyncIterableIterator<never> {
    throw new StatementNeeded();
  },
};

class RefusingDriver implements Driver {
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return refusingConnection;
  }
  async beginTransaction(): Promise<void> {}
  async commitTransaction(): Promise<void> {}
  async rollbackTransaction(): Promise<void> {}
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/** PostgreSQL's, as the one-statement change is PostgreSQL's alone: a listener asking `isPostgres` is told so. */
const noStatements = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new RefusingDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** Runs `work` with a transaction that refuses every statement (`StatementNeeded`). */
export function withoutStatements<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return noStatements.transaction().execute(work);
}
