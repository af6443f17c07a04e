// People, their sessions and the sign-ins under way (store/migrations/035). Every query of people
// and sessions filters by tenant, except finding a session by its cookie's hash, which is how the
// tenant is learned; a sign-in under way is found by its state, which is single use.
import type { Knex } from 'knex';
import type { Database } from './db.js';

export interface PersonRow {
  id: string;
  tenant_id: string;
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
  /** Grants given here (JSON; contract/src/access.ts). */
  roles: string;
  created_at: string;
  last_sign_in_at: string | null;
  disabled_at: string | null;
}

export interface SessionRow {
  id_hash: string;
  id: string;
  tenant_id: string;
  person_id: string;
  /** Grants the provider's groups gave at sign-in (JSON). */
  group_roles: string;
  csrf: string;
  id_token: string | null;
  created_at: string;
  seen_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export interface LoginAttemptRow {
  state: string;
  verifier: string;
  nonce: string;
  return_to: string;
  created_at: string;
}

/** A live session with its person, as authentication reads them in one query. */
export type SessionWithPerson = SessionRow & { person: PersonRow };

const PERSON_COLUMNS = ['id', 'tenant_id', 'issuer', 'subject', 'email', 'name', 'roles', 'created_at', 'last_sign_in_at', 'disabled_at'] as const;

export class PeopleStore {
  private readonly knex: Knex;
  constructor(db: Database) {
    this.knex = db.knex;
  }

  /** The person, created when new; their email and name are the provider's latest. */
  async signedIn(p: Omit<PersonRow, 'roles' | 'created_at' | 'last_sign_in_at' | 'disabled_at'>, now: string): Promise<PersonRow> {
    await this.knex('people')
      .insert({ ...p, roles: '[]', created_at: now, last_sign_in_at: now, disabled_at: null })
      .onConflict(['tenant_id', 'issuer', 'subject'])
      .merge({ email: p.email, name: p.name, last_sign_in_at: now });
    return (await this.person(p.tenant_id, { issuer: p.issuer, subject: p.subject }))!;
  }

  async person(tenantId: string, by: { id: string } | { issuer: string; subject: string }): Promise<PersonRow | undefined> {
    return this.knex<PersonRow>('people')
      .where({ tenant_id: tenantId, ...by })
      .first(...PERSON_COLUMNS);
  }

  list(tenantId: string): Promise<PersonRow[]> {
    return this.knex<PersonRow>('people')
      .where({ tenant_id: tenantId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .select(...PERSON_COLUMNS);
  }

  /** A person made known before their first sign-in (the first owner), or their row as it is. */
  async ensure(row: PersonRow): Promise<PersonRow> {
    await this.knex('people').insert(row).onConflict(['tenant_id', 'issuer', 'subject']).ignore();
    return (await this.person(row.tenant_id, { issuer: row.issuer, subject: row.subject }))!;
  }

  async setRoles(tenantId: string, id: string, roles: string): Promise<boolean> {
    return (await this.knex('people').where({ tenant_id: tenantId, id }).update({ roles })) > 0;
  }

  async setDisabled(tenantId: string, id: string, at: string | null): Promise<boolean> {
    return (await this.knex('people').where({ tenant_id: tenantId, id }).update({ disabled_at: at })) > 0;
  }

  async insertSession(row: SessionRow): Promise<void> {
    await this.knex('person_sessions').insert(row);
  }

  /** The session of this cookie hash with its person, unless revoked. */
  async session(idHash: string): Promise<SessionWithPerson | undefined> {
    const s = await this.knex<SessionRow>('person_sessions').where({ id_hash: idHash }).whereNull('revoked_at').first();
    if (!s) return undefined;
    const person = await this.person(s.tenant_id, { id: s.person_id });
    return person ? { ...s, person } : undefined;
  }

  /** The ID token a session began with, for the provider's sign-out (its hint). */
  async idToken(tenantId: string, id: string): Promise<string | null> {
    const row = await this.knex<SessionRow>('person_sessions').where({ tenant_id: tenantId, id }).first('id_token');
    return row?.id_token ?? null;
  }

  /** Marks the session seen now, unless it was seen after `since` (bounded writes). */
  async touch(idHash: string, now: string, since: string): Promise<void> {
    await this.knex('person_sessions').where({ id_hash: idHash }).where('seen_at', '<', since).update({ seen_at: now });
  }

  async revokeSession(tenantId: string, where: { id?: string; id_hash?: string; person_id?: string }, now: string): Promise<number> {
    return this.knex('person_sessions')
      .where({ tenant_id: tenantId, ...where })
      .whereNull('revoked_at')
      .update({ revoked_at: now });
  }

  sessions(tenantId: string, personId: string, now: string): Promise<SessionRow[]> {
    return this.knex<SessionRow>('person_sessions')
      .where({ tenant_id: tenantId, person_id: personId })
      .whereNull('revoked_at')
      .where('expires_at', '>', now)
      .orderBy('created_at', 'desc');
  }

  /** Sessions past their absolute expiry, and sign-ins abandoned before `before`, are deleted. */
  async sweep(now: string, before: string): Promise<void> {
    await this.knex('person_sessions').where('expires_at', '<', now).delete();
    await this.knex('login_attempts').where('created_at', '<', before).delete();
  }

  async insertAttempt(row: LoginAttemptRow): Promise<void> {
    await this.knex('login_attempts').insert(row);
  }

  /** The sign-in of this state, deleted as it is read: a second callback with it finds nothing. */
  async takeAttempt(state: string): Promise<LoginAttemptRow | undefined> {
    return this.knex.transaction(async (trx) => {
      const row = await trx<LoginAttemptRow>('login_attempts').where({ state }).first();
      if (!row) return undefined;
      const deleted = await trx('login_attempts').where({ state }).delete();
      return deleted ? row : undefined;
    });
  }
}
