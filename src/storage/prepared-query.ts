// Queries built with Kysely once and then run again and again with new values. Building and
// compiling a query costs several times what SQLite takes to run it (≈ 15–25 µs against 3 µs),
// and a create runs a dozen: the statements of that hot path are built once per dialect, with
// a placeholder where each value goes, and every run only puts the values in their places.
import { CompiledQuery, type Compilable, type QueryResult } from 'kysely';
import { isPostgres, type Db } from './database.js';

/** Stands for the value `name` while the query is built (typed as that value, so the builder checks it). */
export type Slot<V> = <K extends keyof V & string>(name: K) => V[K];

type Parameter = { readonly value: string } | { readonly constant: unknown };

interface Prepared {
  readonly sql: string;
  readonly parameters: readonly Parameter[];
}

const PLACEHOLDER = '\u0000prepared-value:';

/** A query that `build` makes with slots for the values `V`; run it with `run(db, values)`. */
export function preparedQuery<V extends object, R>(
  build: (db: Db, slot: Slot<V>) => Compilable<R>,
): (db: Db, values: V) => Promise<QueryResult<R>> {
  const byDialect = new Map<boolean, Prepared>();
  return async (db, values) => {
    const postgres = isPostgres(db);
    let prepared = byDialect.get(postgres);
    if (prepared === undefined) {
      prepared = prepare(db, build);
      byDialect.set(postgres, prepared);
    }
    const named = values as Record<string, unknown>;
    const parameters = prepared.parameters.map((parameter) =>
      'value' in parameter ? named[parameter.value] : parameter.constant,
    );
    return db.executeQuery(CompiledQuery.raw(prepared.sql, parameters));
  };
}

function prepare<V extends object, R>(db: Db, build: (db: Db, slot: Slot<V>) => Compilable<R>): Prepared {
  const slotted = new Set<string>();
  const slot = ((name: string) => {
    slotted.add(name);
    return `${PLACEHOLDER}${name}`;
  }) as Slot<V>;
  const compiled = build(db, slot).compile();
  const parameters = compiled.parameters.map((parameter): Parameter => {
    if (typeof parameter === 'string' && parameter.startsWith(PLACEHOLDER))
      return { value: parameter.slice(PLACEHOLDER.length) };
    return { constant: parameter };
  });
  // A value the builder wrote into the SQL text instead of passing it would be fixed forever.
  for (const name of slotted) {
    if (!parameters.some((parameter) => 'value' in parameter && parameter.value === name))
      throw new Error(`prepared query: "${name}" is not a parameter of ${compiled.sql}`);
  }
  return { sql: compiled.sql, parameters };
}
