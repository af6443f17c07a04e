// What a database error means to the service: a unique key taken, or the database out of reach.
import { UnavailableError } from '../errors.js';
import { errorFields } from '../lib/error-fields.js';

export function isUniqueViolation(err: unknown): boolean {
  const e = errorFields(err);
  return e.code === '23505' || e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || e.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** Connection failures become 503 `unavailable`; everything else passes through. */
export function mapDbError(err: unknown): unknown {
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
