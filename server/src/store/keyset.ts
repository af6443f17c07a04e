// Lists newest first by (a time column, id), each page continuing after the last row of the one
// before: the keyset the stores' lists share, so that a deep page costs what the first one does.
import type { Knex } from 'knex';

/** Orders `q` newest first by `column` then id, after the position `after`, `limit` rows. */
export function newestFirst<Q extends Knex.QueryBuilder>(q: Q, column: string, after: [string, string] | null, limit: number): Q {
  void q
    .orderBy([
      { column, order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit);
  if (after) {
    const [at, id] = after;
    void q.where((w) => w.where(column, '<', at).orWhere((x) => x.where(column, at).where('id', '<', id)));
  }
  return q;
}
