// What a database error means to the service: a unique key taken, or the database out of reach.
// Translated in the store (every Knex query through the clients of knex-adapter.ts, and the
// writers' own connections in withPooledConnection), so nothing above the store reads a driver's
// codes: a database out of reach reaches the HTTP layer as an UnavailableError (503).
import { UnavailableError } from '../errors.js';
import { errorFields } from '../lib/error-fields.js';

export function isUniqueViolation(err: unknown): boolean {
  const e = errorFields(err);
  return e.code === '23505' || e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || e.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** A driver's error code, also of an error translated already (its cause). */
export function driverCode(err: unknown): string | undefined {
  return errorFields(err).code ?? (err instanceof UnavailableError ? errorFields(err.cause).code : undefined);
}

/** Connection failures become 503 `unavailable` (the driver's error its cause); everything else passes through. */
export function translateDbError(err: unknown): unknown {
  if (err instanceof UnavailableError) return err;
  const e = errorFields(err);
  const code = e.code ?? '';
  if (
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'ENOTFOUND',
      'EPIPE',
      '57P01',
      '57P03',
      '57014',
      '08006',
      '08001',
      '08003',
      'SQLITE_BUSY',
      'SQLITE_CANTOPEN',
      'SQLITE_IOERR',
    ].includes(code) ||
    e.name === 'KnexTimeoutError' ||
    /Connection terminated|connect ECONNREFUSED|Client was closed|pool is probably full|Unable to acquire a connection|database is locked|Query read timeout|timeout expired|Connection is closed|not queryable/i.test(
      e.message ?? '',
    )
  ) {
    return new UnavailableError(undefined, { cause: err });
  }
  return err;
}
