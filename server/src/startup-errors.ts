// Start-up failures in one line each, saying what to do: a port in use, a database that does not
// exist or cannot be reached. Anything else is left as it is (null).
import { errorFields } from './lib/error-fields.js';
import { sqliteFileFromUrl } from './store/db.js';

/** The database URL with its password hidden, for messages. */
function safeUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

export function describeStartupError(err: unknown, ctx: { databaseUrl: string; what?: string; portSetting?: string }): string | null {
  const e = errorFields(err);
  if (e.code === 'EADDRINUSE') {
    return `${ctx.what ?? 'Switchboard'} cannot listen on ${e.address ?? ''}:${e.port ?? ''}: the port is in use. Stop what listens there, or set ${ctx.portSetting ?? 'PORT'} to another port.`;
  }
  if (e.code === 'EACCES' && e.syscall === 'listen') {
    return `${ctx.what ?? 'Switchboard'} may not listen on port ${e.port ?? ''}: use a port above 1023, or set ${ctx.portSetting ?? 'PORT'}.`;
  }
  const db = safeUrl(ctx.databaseUrl);
  if (sqliteFileFromUrl(ctx.databaseUrl) !== null) {
    if (/SQLITE_CANTOPEN|unable to open database|EACCES|EROFS/.test(`${e.code ?? ''} ${e.message ?? ''}`)) {
      return `cannot open the SQLite database ${db}: check that its folder exists or can be created, and is writable.`;
    }
    return null;
  }
  if (e.code === '3D000') {
    const name = new URL(ctx.databaseUrl).pathname.slice(1);
    return `the PostgreSQL database "${name}" does not exist and could not be created with this role: create it (createdb ${name}, or CREATE DATABASE ${name}) and start again.`;
  }
  if (e.code === '28P01' || e.code === '28000') return `PostgreSQL refused the login for ${db}: check the user and password in DATABASE_URL.`;
  if (
    ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH'].includes(e.code ?? '') ||
    /timeout|Connection terminated/i.test(e.message ?? '')
  ) {
    return `cannot reach PostgreSQL at ${db} (${e.code ?? e.message}): is it running, and is DATABASE_URL right?`;
  }
  return null;
}
