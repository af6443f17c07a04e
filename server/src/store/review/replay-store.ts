// Replays: one row each (a job of store/job-table.ts), its results as JSON, updated as it runs.
import type { Database } from '../db.js';
import { JobTable, type JobRow } from '../job-table.js';

export interface ReplayRow extends JobRow {
  results: unknown[];
}

export class ReplayStore extends JobTable<ReplayRow> {
  constructor(db: Database) {
    super(db, {
      table: 'replays',
      read: (r) => ({ results: JSON.parse(r.results as string) as unknown[] }),
      write: (r) => ({ results: JSON.stringify(r.results) }),
    });
  }
}
