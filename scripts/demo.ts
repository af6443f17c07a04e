// `npm start`: the service on the embedded SQLite default, with the example agents loaded into
// tenant "demo" and the example orders backend running beside it (allow-listed for actions).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { dirname } from 'node:path';
import { ConverseRequest, EXAMPLES, PARAMETER_EXAMPLES, WIDGET_KEY, WIDGET_KEY_ID } from '@switchboard/contract';
import { startOrdersBackend } from '../examples/orders-backend.js';
import { HELP_CENTRE_PATH, SITEMAP_PATH, startShopPage, type ShopPage } from '../examples/shop-page.js';
import { ConfigError, loadConfig, type Config } from '../server/src/config.js';
import { start, stopOnSignals, type Running } from '../server/src/main.js';
import { describeStartupError } from '../server/src/startup-errors.js';

const backendPort = Number(process.env.EXAMPLE_BACKEND_PORT ?? 3001);
const shopPort = Number(process.env.EXAMPLE_SHOP_PORT ?? 3002);
/**
 * The README's conversation ("where is my order?", then "100001"), held under the id the OpenAPI
 * document's examples name, so that every example at /docs and in the REST collections answers
 * as it is. It runs through the engine and the example backend like any other; once made, it
 * stays.
 */
async function holdReadmeConversation(r: Running, tenant: string): Promise<void> {
  const id = String(PARAMETER_EXAMPLES['path:id']);
  const slug = String(PARAMETER_EXAMPLES['path:slug']);
  const conversations = r.app.conversations;
  if (
    await r.app.conversationReads.owned(tenant, slug, id).then(
      () => true,
      () => false,
    )
  )
    return;
  // The two requests the document's examples show.
  await conversations.converse({
    tenantId: tenant,
    slug,
    body: ConverseRequest.parse(EXAMPLES.ConverseStart.value),
    requestId: 'readme-1',
    newConversationId: id,
  });
  await conversations.converse({ tenantId: tenant, slug, body: ConverseRequest.parse(EXAMPLES.ConverseContinue.value), requestId: 'readme-2' });
  console.log(`The README's conversation is ${id} (the id the examples at /docs use)`);
}

/**
 * SECRETS_KEY for the demo when none is set: made once and kept in data/dev-secrets.key (beside
 * the default database), so that tenant secrets, signed widget users and channels work under
 * `npm start`, and survive a restart. Said loudly: a development key, never one for production.
 */
function developmentSecretsKey(): void {
  if (process.env.SECRETS_KEY) return;
  const file = 'data/dev-secrets.key';
  let key = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
  if (!/^[A-Za-z0-9+/]{43}=$/.test(key)) {
    key = randomBytes(32).toString('base64');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${key}\n`, { mode: 0o600 });
  }
  process.env.SECRETS_KEY = key;
  console.log(
    `SECRETS_KEY: a development key kept in ${file} (npm start only: set your own SECRETS_KEY in production; deleting the file makes secrets and channels stored under it unreadable)`,
  );
}

/**
 * The publishable key of the shop page: the one the OpenAPI document's widget examples use
 * (WIDGET_KEY, made under its fixed id on a new database), or, where that one cannot serve this
 * page (revoked, or made for the shop page at another port), another for this page's origin.
 */
async function shopPageKey(r: Running, tenant: string, origin: string): Promise<string> {
  const keys = r.app.keys;
  const listed = await keys.list(tenant);
  const fits = (k: (typeof listed)[number]) => !k.revoked_at && k.widget?.origins.includes(origin) && k.widget.agents.includes('acme-support');
  const examples = listed.find((k) => k.id === WIDGET_KEY_ID);
  if (examples && fits(examples)) return WIDGET_KEY;
  if (!examples) {
    // Taken only when the id is already another tenant's key on this database.
    const made = await keys.createPublishable(tenant, { agents: ['acme-support'], origins: [origin] }, 'demo shop page', WIDGET_KEY_ID).catch(() => null);
    if (made) return made.key;
  }
  console.log(`The widget examples' key ${WIDGET_KEY} does not serve ${origin} on this database: the shop page uses another`);
  const found = listed.find(fits);
  return found?.widget?.key ?? (await keys.createPublishable(tenant, { agents: ['acme-support'], origins: [origin] }, 'demo shop page')).key;
}

/**
 * The shop's help centre PDF as the tenant's knowledge source "help-centre" (the acme-support
 * agent answers from it, citing the page): uploaded when the tenant does not hold this file yet,
 * and read before the demo says it is ready.
 */
async function holdHelpCentre(r: Running, tenant: string, url: string): Promise<void> {
  const bytes = readFileSync('examples/knowledge/acme-help-centre.pdf');
  const fields = { title: 'Acme help centre', url, language: 'en', tags: 'help' };
  const put = await r.app.knowledge.upload(tenant, 'help-centre', fields, { bytes, filename: 'acme-help-centre.pdf', mediaType: 'application/pdf' });
  await r.app.knowledge.idle();
  const source = await r.app.knowledge.get(tenant, 'help-centre');
  if (source.state !== 'indexed') console.error(`The example help centre could not be read: ${source.error}`);
  else if (put.state === 'parsing') console.log(`Knowledge source help-centre: ${source.pages} pages, ${source.passages} passages (docs/knowledge.md)`);
}

/**
 * The shop's help site as the tenant's web knowledge source "shop-help", synced daily from its
 * sitemap: set when the tenant does not hold it at this address (the shop page's port may change
 * between runs), and synced in the background.
 */
async function holdHelpSite(r: Running, tenant: string, sitemap: string): Promise<void> {
  const had = await r.app.knowledge.get(tenant, 'shop-help').catch(() => null);
  if (had?.site?.url === sitemap) return;
  await r.app.sites.put(tenant, 'shop-help', {
    url: sitemap,
    crawl: 'sitemap',
    depth: 2,
    schedule: 'daily',
    title: 'Acme help',
    language: 'en',
    tags: ['help'],
  });
  console.log(`Knowledge source shop-help: the shop's help site, synced daily from ${sitemap} (docs/knowledge.md)`);
}

let backend: Server | null = null;
/** A signal came while the examples were being set up. */
let stopping = false;
let shop: ShopPage | null = null;
let config: Config | null = null;
let running: Running;
try {
  developmentSecretsKey();
  backend = await startOrdersBackend(backendPort).catch((err) => {
    throw Object.assign(err, { what: 'The example orders backend', portSetting: 'EXAMPLE_BACKEND_PORT' });
  });
  shop = await startShopPage(shopPort).catch((err) => {
    throw Object.assign(err, { what: 'The example shop page', portSetting: 'EXAMPLE_SHOP_PORT' });
  });
  // The example backend and the shop's help site are granted to the demo tenant only, like any private host.
  const tenant = process.env.AGENTS_TENANT ?? 'demo';
  const allowed = [process.env.ACTION_ALLOWED_HOSTS, `${tenant}=127.0.0.1:${backendPort}`, `${tenant}=${new URL(shop.origin).host}`].filter(Boolean).join(',');
  // The example agent's action URL follows the backend's port (ORDERS_URL in agents/acme-support.yaml).
  process.env.SWITCHBOARD_VAR_ORDERS_URL ??= `http://127.0.0.1:${backendPort}`;
  // So the example agent follows the backend to another port on a database an earlier run left: the
  // changed address is a new host to the release policy's new_hosts gate, and the demo releases
  // it past the gate, recorded as forced with this reason (and said in a log line).
  process.env.AGENTS_FORCE_REASON ??= `npm start: the example agents follow the example backend, now at 127.0.0.1:${backendPort} (EXAMPLE_BACKEND_PORT)`;
  // Readable log lines for a person at a terminal; JSON when the output goes elsewhere.
  const logFormat = process.stdout.isTTY ? 'pretty' : 'json';
  config = loadConfig({ AGENTS_DIR: 'agents', LOG_FORMAT: logFormat, ...process.env, ACTION_ALLOWED_HOSTS: allowed });
  running = await start(config);
  // From here a signal drains and stops the server, also while the examples below are set up.
  const closeExamples = () => {
    backend?.close();
    shop?.server.close();
  };
  stopOnSignals(running, config.shutdown, closeExamples);
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => (stopping = true));
  // The pretend shop's page, with the widget on the example agent under a publishable key that
  // allows that page's origin (made once, found again on the next start).
  const key = await shopPageKey(running, tenant, shop.origin);
  shop.show({ service: running.url, agent: 'acme-support', key });
  await holdHelpCentre(running, tenant, `${shop.origin}${HELP_CENTRE_PATH}`);
  await holdHelpSite(running, tenant, `${shop.origin}${SITEMAP_PATH}`);
  await holdReadmeConversation(running, tenant);
} catch (err) {
  // Stopped while the examples were set up: the drain under way ends the process.
  if (stopping) await new Promise(() => undefined);
  const e = err as { what?: string; portSetting?: string };
  const line =
    err instanceof ConfigError
      ? err.message
      : describeStartupError(err, { databaseUrl: config?.databaseUrl ?? process.env.DATABASE_URL ?? 'sqlite://', what: e.what, portSetting: e.portSetting });
  console.error(line ?? err);
  backend?.close();
  shop?.server.close();
  process.exit(1);
}
console.log(`\nSwitchboard is running at ${running.url} (example orders backend on 127.0.0.1:${backendPort})`);
console.log(`Console: ${running.url}/console (sign in as the tenant "demo")`);
console.log(`Web chat widget on a pretend shop's page: ${shop!.origin}/ (docs/widget.md)`);
console.log(
  `Try:\n  curl -s ${running.url}/api/v1/agents/acme-support/converse -H 'tenant-id: demo' -H 'content-type: application/json' -d '{"message":"where is my order?"}'\n`,
);
