// `npm run people -- grant --tenant acme --subject SUB --role owner [--issuer URL]` (the first
// owner, before or after their first sign-in), `revoke --tenant acme --subject SUB`, `disable` /
// `enable`, and `list --tenant acme`: people of the database named by DATABASE_URL
// (docs/people.md). The issuer defaults to OIDC_ISSUER.
import { grantText, type Grant, type Person } from '@switchboard/contract';
import { roleOf } from './args.js';
import { loadConfig, serviceUrl, shownDatabaseUrl } from '../config.js';
import { systemClock } from '../lib/clock.js';
import { PeopleService } from '../service/people/people-service.js';
import { migrate, openDatabase } from '../store/db.js';
import { program, run } from './program.js';

async function withPeople<T>(fn: (people: PeopleService) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env, {}, 'tool');
  const db = openDatabase(config.databaseUrl);
  try {
    await migrate(db);
    return await fn(new PeopleService(db, systemClock, { oidc: config.oidc, sessions: config.sessions, serviceUrl: serviceUrl(config) }));
  } finally {
    await db.close();
  }
}

const where = () => `in ${shownDatabaseUrl(loadConfig(process.env, {}, 'tool').databaseUrl)}`;

function issuerOf(given: string | undefined): string {
  const issuer = given ?? loadConfig(process.env, {}, 'tool').oidc?.issuer;
  if (!issuer) cli.error('error: give --issuer, or set OIDC_ISSUER', { exitCode: 2 });
  return issuer!;
}

async function find(people: PeopleService, tenant: string, issuer: string, subject: string): Promise<Person> {
  const p = (await people.list(tenant)).find((x) => x.issuer === issuer && x.subject === subject);
  if (!p) throw new Error(`no person ${subject} of ${issuer} in tenant ${tenant} ${where()}`);
  return p;
}

const cli = program('npm run people --', 'Manage the people of a tenant (docs/people.md) in the database named by DATABASE_URL');

cli
  .command('grant')
  .description("add roles to a person, known by their provider's subject (made known before their first sign-in if need be)")
  .requiredOption('--tenant <tenant>', 'the tenant')
  .requiredOption('--subject <subject>', "the person's subject at the provider (the sign-in page of a person without a role shows it)")
  .requiredOption('--role <role[:agents]>', 'a role for the whole tenant, or with :slug,slug for those agents (repeat for more)', roleOf)
  .option('--issuer <url>', 'the provider (default OIDC_ISSUER)')
  .action(async (o: { tenant: string; subject: string; role: Grant[]; issuer?: string }) => {
    const issuer = issuerOf(o.issuer);
    const p = await withPeople((people) => people.grant(o.tenant, { issuer, subject: o.subject }, o.role));
    console.log(
      `granted ${o.role.map(grantText).join(' ')} to ${o.subject} of ${issuer} in tenant ${o.tenant} ${where()}: roles now ${p.roles.map(grantText).join(' ')}`,
    );
  });

cli
  .command('revoke')
  .description("remove every role granted here to a person (roles their provider's groups give stay until removed there)")
  .requiredOption('--tenant <tenant>', 'the tenant')
  .requiredOption('--subject <subject>', "the person's subject at the provider")
  .option('--issuer <url>', 'the provider (default OIDC_ISSUER)')
  .action(async (o: { tenant: string; subject: string; issuer?: string }) => {
    const issuer = issuerOf(o.issuer);
    await withPeople(async (people) => people.setRoles(o.tenant, (await find(people, o.tenant, issuer, o.subject)).id, []));
    console.log(`removed the roles granted to ${o.subject} in tenant ${o.tenant} ${where()}`);
  });

for (const [name, disabled] of [
  ['disable', true],
  ['enable', false],
] as const)
  cli
    .command(name)
    .description(disabled ? 'disable a person: their sessions end, and they cannot sign in' : 'let a disabled person sign in again')
    .requiredOption('--tenant <tenant>', 'the tenant')
    .requiredOption('--subject <subject>', "the person's subject at the provider")
    .option('--issuer <url>', 'the provider (default OIDC_ISSUER)')
    .action(async (o: { tenant: string; subject: string; issuer?: string }) => {
      const issuer = issuerOf(o.issuer);
      await withPeople(async (people) => people.setDisabled(o.tenant, (await find(people, o.tenant, issuer, o.subject)).id, disabled));
      console.log(`${disabled ? 'disabled' : 'enabled'} ${o.subject} in tenant ${o.tenant} ${where()}`);
    });

cli
  .command('list')
  .description("list a tenant's people with their roles")
  .requiredOption('--tenant <tenant>', 'the tenant')
  .action(async (o: { tenant: string }) => {
    const list = await withPeople((people) => people.list(o.tenant));
    for (const p of list)
      console.log(
        `${p.subject}  ${(p.email ?? '-').padEnd(28)} ${(p.roles.map(grantText).join(' ') || '(no role granted here)').padEnd(30)} ${p.disabled_at ? `disabled ${p.disabled_at}` : `last sign-in ${p.last_sign_in_at ?? 'never'}`}  ${p.issuer}`,
      );
    console.log(`${list.length} person(s) in tenant ${o.tenant}`);
  });

await run(cli);
