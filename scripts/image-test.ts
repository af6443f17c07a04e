// `npm run test:image`: builds the container image from the Dockerfile with podman and runs it as
// an operator would, against the PostgreSQL server named by TEST_DATABASE_URL:
//   1. a Node.js base image: NODE_IMAGE if set, otherwise deploy/image/base.sh makes one
//      (debootstrap + the npm registry's node package) because no image registry is reachable;
//   2. podman build; the image must run as a non-root user, carry a HEALTHCHECK and no
//      development dependencies or TypeScript sources;
//   3. the image on its embedded default (SQLite in /app/data);
//      an API key made with the image's own CLI, then the container on a fresh database with the
//      example agents, an orders backend on loopback that answers in 1.5 s, and api_key auth;
//   4. a conversation through the typed client (an action call out of the container), its audit
//      chain verified, the console page, /metrics behind its token, the health check;
//   5. SIGTERM while a conversation is in flight: /readyz turns 503, the reply still arrives,
//      the container exits 0;
//   6. compose.yaml's switchboard and orders services with the file's environment: the README
//      conversation, its action answered by the orders container;
//   7. deploy/kubernetes played with `podman kube play`: three replicas started together, each ready.
// Prints each step; exits 1 on the first failure. Needs podman (and debootstrap without NODE_IMAGE).
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { createSwitchboardClient } from '../client/src/index.js';
import { startOrdersBackend } from '../examples/orders-backend.js';
import { freshPostgres } from '../bench/server.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const PG = process.env.TEST_DATABASE_URL;
const TAG = process.env.IMAGE_TAG ?? 'localhost/switchboard:test';
const BASE = process.env.NODE_IMAGE ?? 'localhost/switchboard-node-base:20';
const RUNTIME = process.env.PODMAN_RUNTIME ?? (existsSync('/usr/sbin/runc') ? '/usr/sbin/runc' : '');
const PORT = Number(process.env.IMAGE_TEST_PORT ?? 3390);
const BACKEND_PORT = PORT + 1;
const DELAYED_PORT = PORT + 2;
const COMPOSE_PORT = PORT + 3;
const COMPOSE_ORDERS_PORT = PORT + 4;
const KUBE_PORT = 3000; // the container port the manifests name

// This machine's kernel refuses containers whose limits it cannot set, so they are given
// explicitly, within the caller's own.
const nofile = Number(execFileSync('sh', ['-c', 'ulimit -Hn']).toString().trim()) || 4096;
const limits = ['--ulimit', `nofile=${Math.min(nofile, 65536)}:${Math.min(nofile, 65536)}`, '--ulimit', 'nproc=4096:4096'];
const global = RUNTIME ? ['--runtime', RUNTIME] : [];

/** Runs podman; `out` is what it printed on stdout, `all` with stderr too (for failures and logs). */
function podman(args: string[], opts: { check?: boolean; env?: NodeJS.ProcessEnv } = {}): { code: number; out: string; all: string } {
  const r = spawnSync('podman', [...global, ...args], { encoding: 'utf8', maxBuffer: 64 << 20, env: opts.env ?? process.env });
  const all = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  if ((opts.check ?? true) && r.status !== 0) throw new Error(`podman ${args.slice(0, 3).join(' ')} … failed (${r.status}):\n${all.slice(-4000)}`);
  return { code: r.status ?? -1, out: r.stdout ?? '', all };
}

const step = (what: string) => console.log(`image: ${what}`);
const seconds = (t0: number) => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
}

const readyz = (port: number) => fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status);

/** An orders API that answers after `delayMs`, like a real backend under load. */
function delayedBackend(target: number, delayMs: number): Promise<Server> {
  const server = createServer((req, res) => {
    setTimeout(() => {
      fetch(`http://127.0.0.1:${target}${req.url}`).then(
        async (r) => {
          res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
          res.end(Buffer.from(await r.arrayBuffer()));
        },
        () => res.writeHead(502).end(),
      );
    }, delayMs);
  });
  return new Promise((resolve) => server.listen(DELAYED_PORT, '127.0.0.1', () => resolve(server)));
}

function buildImage(): void {
  if (!process.env.NODE_IMAGE) {
    step(`base image ${BASE} (deploy/image/base.sh)`);
    execFileSync('bash', [join(root, 'deploy/image/base.sh'), BASE], { stdio: 'inherit' });
  }
  const t0 = performance.now();
  step(`podman build -t ${TAG} (NODE_IMAGE=${BASE})`);
  // A TLS-inspecting proxy's CA reaches npm as a build secret, never as a layer.
  const ca = process.env.NODE_EXTRA_CA_CERTS ?? process.env.SSL_CERT_FILE;
  const secret = ca && existsSync(ca) ? ['--secret', `id=ca_certs,src=${ca}`] : [];
  const build = podman(['build', '--format', 'docker', '--network', 'host', ...limits, ...secret, '--build-arg', `NODE_IMAGE=${BASE}`, '-t', TAG, root]);
  const built = build.all.match(/^build: .*$/m)?.[0];
  const size = Number(podman(['image', 'inspect', '--format', '{{.Size}}', TAG]).out.trim());
  step(`built in ${seconds(t0)}, ${(size / 1e6).toFixed(0)} MB${built ? ` (${built})` : ''}`);

  // podman keeps the HEALTHCHECK (docker format) beside the OCI config, not inside it.
  const image = (JSON.parse(podman(['image', 'inspect', TAG]).out) as [unknown])[0] as {
    Config: { User?: string; Entrypoint?: string[] };
    Healthcheck?: { Test?: string[] };
  };
  const config = image.Config;
  if (!config.User || config.User === 'root' || config.User === '0') throw new Error(`the image runs as ${config.User || 'root'}`);
  if (!image.Healthcheck?.Test?.length) throw new Error('the image has no HEALTHCHECK');
  if (config.Entrypoint?.[0] !== 'node') throw new Error(`the entrypoint is not node itself (signals must reach it): ${config.Entrypoint}`);
  const inside = podman(
    [
      'run',
      '--rm',
      ...limits,
      '--entrypoint',
      'sh',
      TAG,
      '-c',
      'id -u; for p in typescript tsx vitest vite eslint prettier; do [ -e node_modules/$p ] && echo "dev dependency: $p"; done; ' +
        'find dist -name "*.ts" ! -name "*.d.ts" | head -3; [ -f dist/console/dist/index.html ] || echo "no console"; [ -f dist/widget/dist/v1.js ] || echo "no widget"; true',
    ],
    { check: true },
  ).out.trim();
  const [uid, ...problems] = inside.split('\n').filter(Boolean);
  if (uid === '0') throw new Error('the container runs as root');
  if (problems.length) throw new Error(`the image carries what production does not need:\n${problems.join('\n')}`);
  step(`runs as uid ${uid} with a HEALTHCHECK; no development dependencies, no TypeScript sources; the console and the widget are built in`);
}

/** The image's embedded default: SQLite in /app/data, written by the unprivileged user. */
async function runSqlite(): Promise<void> {
  const name = `switchboard-sqlite-${process.pid}`;
  podman(['run', '-d', '--name', name, '--network', 'host', ...limits, '-e', `PORT=${PORT}`, '-e', `METRICS_TOKEN=${randomUUID()}`, TAG]);
  try {
    await waitFor('the container on SQLite ready', async () => (await readyz(PORT)) === 200);
    const files = podman(['exec', name, 'ls', '/app/data']).out;
    if (!files.includes('switchboard.db')) throw new Error(`no database in /app/data: ${files}`);
    step('the embedded default: ready on SQLite in /app/data (a volume there keeps it)');
  } catch (err) {
    console.error(podman(['logs', name], { check: false }).all.slice(-3000));
    throw err;
  } finally {
    podman(['rm', '-f', name], { check: false });
  }
}

/** An admin key for tenant acme, made by the image's own CLI run as `podman <how> dist/server/src/cli/keys.js create …`. */
function keyFrom(how: string[]): string {
  const key = podman([...how, 'dist/server/src/cli/keys.js', 'create', '--tenant', 'acme', '--scopes', 'converse,read,admin']).out.match(/sbk_\S+/)?.[0];
  if (!key) throw new Error('the keys CLI printed no key');
  return key;
}

async function runContainer(pg: string): Promise<void> {
  const name = `switchboard-test-${process.pid}`;
  const metricsToken = randomUUID();
  const key = keyFrom(['run', '--rm', '--network', 'host', ...limits, '-e', `DATABASE_URL=${pg}`, '--entrypoint', 'node', TAG]);
  step('an API key made with the image’s CLI (node dist/server/src/cli/keys.js create)');

  const backend = await startOrdersBackend(BACKEND_PORT);
  const delayed = await delayedBackend(BACKEND_PORT, 1500);
  try {
    const t0 = performance.now();
    podman([
      'run',
      '-d',
      '--name',
      name,
      '--network',
      'host',
      ...limits,
      '-e',
      `PORT=${PORT}`,
      '-e',
      `DATABASE_URL=${pg}`,
      '-e',
      `METRICS_TOKEN=${metricsToken}`,
      '-e',
      'AGENTS_DIR=/app/agents',
      '-e',
      'AGENTS_TENANT=acme',
      '-e',
      `SWITCHBOARD_VAR_ORDERS_URL=http://127.0.0.1:${DELAYED_PORT}`,
      '-e',
      `ACTION_ALLOWED_HOSTS=acme=127.0.0.1:${DELAYED_PORT}`,
      '-e',
      'SHUTDOWN_DELAY_MS=1500',
      TAG,
    ]);
    try {
      await waitFor('the container ready', async () => (await readyz(PORT)) === 200);
      step(`container ready in ${seconds(t0)} on PostgreSQL (migrations run, example agents loaded)`);

      const sb = createSwitchboardClient({ baseUrl: `http://127.0.0.1:${PORT}`, apiKey: key });
      const first = await sb.api.converse({ params: { slug: 'acme-support' }, body: { message: 'where is my order?' } });
      if (first.status !== 200 || !/order number/i.test(first.body.response.message))
        throw new Error(`first turn: ${first.status} ${JSON.stringify(first.body)}`);
      const second = await sb.api.converse({
        params: { slug: 'acme-support' },
        body: { message: '100001', conversation_id: first.body.conversation_id },
      });
      if (second.status !== 200 || second.body.state.status !== 'completed' || !/shipped on/.test(second.body.response.message))
        throw new Error(`second turn: ${second.status} ${JSON.stringify(second.body)}`);
      const verify = await sb.api.verifyAuditLogs({ params: { slug: 'acme-support', id: first.body.conversation_id } });
      if (verify.status !== 200 || !verify.body.valid) throw new Error(`audit chain: ${JSON.stringify(verify.body)}`);
      step(`conversation through the typed client: "${second.body.response.message}" (action call out of the container, audit chain valid)`);

      const unauthorised = await fetch(`http://127.0.0.1:${PORT}/api/v1/agents/acme-support/conversations`).then((r) => r.status);
      const metrics = await fetch(`http://127.0.0.1:${PORT}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } }).then((r) => r.text());
      const page = await fetch(`http://127.0.0.1:${PORT}/console/`).then((r) => r.text());
      const widget = await fetch(`http://127.0.0.1:${PORT}/widget/v1.js`);
      if (widget.status !== 200 || !widget.headers.get('x-widget-integrity')?.startsWith('sha384-')) throw new Error(`/widget/v1.js answered ${widget.status}`);
      if (unauthorised !== 401) throw new Error(`a call without a key answered ${unauthorised}`);
      if (!/switchboard_turns_total|switchboard_/.test(metrics)) throw new Error('/metrics did not answer with its token');
      if (!/<div id="app"|<script/.test(page)) throw new Error('the console page is not served');
      const health = podman(['healthcheck', 'run', name], { check: false });
      if (health.code !== 0) throw new Error(`podman healthcheck run: ${health.all}`);
      step('401 without a key, /metrics with its token, the console page, the widget script, the HEALTHCHECK healthy');

      // SIGTERM during a turn whose action takes 1.5 s.
      const other = await sb.api.converse({ params: { slug: 'acme-support' }, body: { message: 'track my order' } });
      if (other.status !== 200) throw new Error(`a new conversation: ${other.status} ${JSON.stringify(other.body)}`);
      const inFlight = sb.api.converse({ params: { slug: 'acme-support' }, body: { message: '100002', conversation_id: other.body.conversation_id } });
      await new Promise((r) => setTimeout(r, 300));
      const t1 = performance.now();
      podman(['kill', '--signal', 'TERM', name]);
      await waitFor('/readyz 503 after SIGTERM', async () => (await readyz(PORT)) === 503, 5000);
      const answered = await inFlight;
      if (answered.status !== 200 || !/being prepared/.test(answered.body.response.message))
        throw new Error(`the turn in flight: ${answered.status} ${JSON.stringify(answered.body)}`);
      const exit = podman(['wait', name]).out.trim().split('\n').pop();
      if (exit !== '0') throw new Error(`the container exited with ${exit}:\n${podman(['logs', name]).all.slice(-2000)}`);
      step(`SIGTERM mid-turn: /readyz 503 at once, the turn in flight answered, exit 0 after ${seconds(t1)}`);
    } catch (err) {
      console.error(podman(['logs', name], { check: false }).all.slice(-3000));
      throw err;
    } finally {
      podman(['rm', '-f', name], { check: false });
    }
  } finally {
    backend.close();
    delayed.close();
  }
}

/**
 * compose.yaml's switchboard and orders services, run from the image with the file's own
 * environment: the database is a fresh one on the host's server, and host networking puts the
 * orders API on a free port, which the service's URL and grant follow (`orders` names loopback).
 * The README conversation must hold, its action answered by the orders container.
 */
async function runCompose(pg: string): Promise<void> {
  const compose = parseAllDocuments(readFileSync(join(root, 'compose.yaml'), 'utf8'))[0].toJS({ merge: true }) as {
    services: Record<string, { entrypoint?: string[]; environment: Record<string, string> }>;
  };
  const service = compose.services['switchboard-1'];
  const orders = compose.services.orders;
  const declared = `orders:${orders.environment.PORT}`;
  const moved = `orders:${COMPOSE_ORDERS_PORT}`;
  const env = Object.entries({ ...service.environment, DATABASE_URL: pg, PORT: String(COMPOSE_PORT) }).map(
    ([k, v]) => `${k}=${String(v).replace(declared, moved)}`,
  );
  if (!env.some((e) => e.startsWith('SWITCHBOARD_VAR_ORDERS_URL=') && e.includes(moved)))
    throw new Error(`compose.yaml: the service does not call ${declared}`);
  const names = { orders: `switchboard-orders-${process.pid}`, service: `switchboard-compose-${process.pid}` };
  const [entry, ...args] = orders.entrypoint ?? [];
  podman([
    'run',
    '-d',
    '--name',
    names.orders,
    '--network',
    'host',
    ...limits,
    '-e',
    'HOST=127.0.0.1',
    '-e',
    `PORT=${COMPOSE_ORDERS_PORT}`,
    '--entrypoint',
    entry,
    TAG,
    ...args,
  ]);
  try {
    const t0 = performance.now();
    podman(['run', '-d', '--name', names.service, '--network', 'host', '--add-host', 'orders:127.0.0.1', ...limits, ...env.flatMap((e) => ['-e', e]), TAG]);
    try {
      await waitFor('the compose service ready', async () => (await readyz(COMPOSE_PORT)) === 200);
      const key = keyFrom(['exec', names.service, 'node']);
      const sb = createSwitchboardClient({ baseUrl: `http://127.0.0.1:${COMPOSE_PORT}`, apiKey: key });
      const first = await sb.api.converse({ params: { slug: 'acme-support' }, body: { message: 'where is my order?' } });
      if (first.status !== 200) throw new Error(`first turn: ${first.status} ${JSON.stringify(first.body)}`);
      const second = await sb.api.converse({ params: { slug: 'acme-support' }, body: { message: '100001', conversation_id: first.body.conversation_id } });
      if (second.status !== 200 || !/^Order 100001 shipped on 2026-11-18/.test(second.body.response.message))
        throw new Error(`compose.yaml's README conversation: ${second.status} ${JSON.stringify(second.body)}`);
      step(
        `compose.yaml's switchboard and orders services (its environment) hold the README conversation in ${seconds(t0)}: "${second.body.response.message}"`,
      );
    } catch (err) {
      console.error(podman(['logs', names.service], { check: false }).all.slice(-3000));
      throw err;
    } finally {
      podman(['rm', '-f', names.service], { check: false });
    }
  } finally {
    podman(['rm', '-f', names.orders], { check: false });
  }
}

// Kubernetes resources as parsed YAML: free-form, read and rewritten field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Manifest = Record<string, any>;

/**
 * A way from podman's bridge network to the PostgreSQL server, which listens on loopback only:
 * accepts connections from the bridge's subnet alone and pipes them to `pg`.
 */
async function bridgeToPostgres(pg: string, subnet: string): Promise<{ url: (db: string) => string; close: () => void }> {
  const target = new URL(pg);
  const prefix = subnet.split('.').slice(0, 2).join('.') + '.'; // a /16, as podman's default network is
  const server = createNetServer((client) => {
    if (!client.remoteAddress?.replace(/^::ffff:/, '').startsWith(prefix)) return client.destroy();
    const upstream = connect(Number(target.port || 5432), target.hostname);
    client.pipe(upstream).pipe(client);
    const end = () => (client.destroy(), upstream.destroy());
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (gateway) => {
      const u = new URL(pg);
      u.hostname = gateway;
      u.port = String(port);
      return u.toString();
    },
    close: () => server.close(),
  };
}

/**
 * Plays deploy/kubernetes with `podman kube play` as written: the ConfigMap, the Secret (filled in
 * with this run's database and keys) and the Deployment, whose three replicas start together on
 * an empty database, each in its own pod on podman's bridge network. Each pod must become ready
 * and healthy and refuse a call without a key. The Service, the disruption budget and the probes'
 * timings are a cluster's to honour; test/manifests.test.ts checks them against Kubernetes' schemas.
 */
async function runKube(pg: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-kube-'));
  const network = (JSON.parse(podman(['network', 'inspect', 'podman']).out) as [{ subnets: { subnet: string; gateway: string }[] }])[0].subnets[0];
  const bridge = await bridgeToPostgres(pg, network.subnet);
  const docs = ['configmap.yaml', 'example-secret/secret.yaml', 'deployment.yaml'].flatMap((f) =>
    parseAllDocuments(readFileSync(join(root, 'deploy/kubernetes', f), 'utf8')).map((d) => d.toJS() as Manifest),
  );
  const secret = docs.find((d) => d.kind === 'Secret')!;
  const key = () => randomUUID().replace(/-/g, '').repeat(2);
  secret.stringData = {
    ...secret.stringData,
    DATABASE_URL: bridge.url(network.gateway),
    SECRETS_KEY: key(),
    AUDIT_CHAIN_KEY: key(),
    METRICS_TOKEN: randomUUID(),
  };
  const deployment = docs.find((d) => d.kind === 'Deployment')!;
  const replicas = deployment.spec.replicas as number;
  for (const c of deployment.spec.template.spec.containers) {
    c.image = TAG;
    c.imagePullPolicy = 'Never';
    // Podman 4.3 publishes a containerPort on the host's same port (three pods would collide);
    // in a cluster it only names the pod's port. Each pod is reached at its own address instead.
    delete c.ports;
    for (const probe of [c.startupProbe, c.readinessProbe, c.livenessProbe]) if (probe?.httpGet?.port === 'http') probe.httpGet.port = KUBE_PORT;
  }
  // Podman 4.3 stores a played Secret as YAML but reads a secretRef as a JSON object of base64
  // values; every podman version reads a secret created in that form.
  const data = Object.fromEntries(Object.entries(secret.stringData as Record<string, string>).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  const secretFile = join(dir, 'secret.json');
  writeFileSync(secretFile, JSON.stringify(data));
  podman(['secret', 'rm', secret.metadata.name], { check: false });
  podman(['secret', 'create', secret.metadata.name, secretFile]);
  const file = join(dir, 'switchboard.yaml');
  writeFileSync(
    file,
    docs
      .filter((d) => d !== secret)
      .map((d) => JSON.stringify(d))
      .join('\n---\n'),
  );
  // `kube play` takes no --ulimit: the same limits come from a containers.conf of this run's.
  const conf = join(dir, 'containers.conf');
  writeFileSync(
    conf,
    `[containers]\ndefault_ulimits = [${limits
      .filter((_, i) => i % 2)
      .map((l) => JSON.stringify(l))
      .join(', ')}]\n`,
  );
  try {
    const t0 = performance.now();
    podman(['kube', 'play', '--network', 'podman', file], { env: { ...process.env, CONTAINERS_CONF: conf } });
    const pods = podman(['pod', 'ps', '--filter', 'name=switchboard-pod', '--format', '{{.Name}} {{.InfraId}}']).out.trim().split('\n').filter(Boolean);
    if (pods.length !== replicas) throw new Error(`${pods.length} pods for ${replicas} replicas`);
    const addresses = pods.map((line) => {
      const [, infra] = line.split(' ');
      const settings = (JSON.parse(podman(['inspect', infra]).out) as [{ NetworkSettings: { Networks: Record<string, { IPAddress: string }> } }])[0]
        .NetworkSettings;
      const ip = Object.values(settings.Networks)[0]?.IPAddress;
      if (!ip) throw new Error(`no address for ${line}`);
      return ip;
    });
    step(`podman kube play deploy/kubernetes: ${replicas} replicas started together (${addresses.join(', ')})`);
    for (const ip of addresses) {
      const base = `http://${ip}:${KUBE_PORT}`;
      await waitFor(`the pod at ${ip} ready`, async () => (await fetch(`${base}/readyz`).then((r) => r.status)) === 200);
      const health = await fetch(`${base}/healthz`).then((r) => r.status);
      const anonymous = await fetch(`${base}/api/v1/agents/any/conversations`).then((r) => r.status);
      if (health !== 200 || anonymous !== 401) throw new Error(`the pod at ${ip}: /healthz ${health}, a call without a key ${anonymous}`);
    }
    const [firstPod] = pods[0].split(' ');
    const inside = podman([
      'exec',
      `${firstPod}-${deployment.spec.template.spec.containers[0].name}`,
      'sh',
      '-c',
      'id -u; touch /app/probe 2>/dev/null && echo writable; touch /tmp/probe && echo tmp',
    ]).out;
    if (!/^1000\ntmp$/.test(inside.trim())) throw new Error(`inside a pod (uid, writable root?, /tmp): ${JSON.stringify(inside)}`);
    step(`every replica ready in ${seconds(t0)} on one empty database with its ConfigMap and Secret: api_key auth, uid 1000, read-only root, /tmp writable`);
  } catch (err) {
    for (const line of podman(['ps', '-a', '--filter', 'pod=switchboard-pod', '--format', '{{.Names}}'], { check: false }).out.split('\n').filter(Boolean))
      if (!line.includes('infra')) console.error(`--- ${line}\n${podman(['logs', '--tail', '20', line], { check: false }).all}`);
    throw err;
  } finally {
    podman(['kube', 'down', file], { check: false, env: { ...process.env, CONTAINERS_CONF: conf } });
    podman(['secret', 'rm', secret.metadata.name], { check: false });
    bridge.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (!PG) throw new Error('set TEST_DATABASE_URL to a PostgreSQL server the container can reach (host networking)');
  const t0 = performance.now();
  buildImage();
  await runSqlite();
  const db = await freshPostgres(PG, 'image');
  try {
    await runContainer(db.url);
  } finally {
    await db.drop();
  }
  const composed = await freshPostgres(PG, 'compose');
  try {
    await runCompose(composed.url);
  } finally {
    await composed.drop();
  }
  const kube = await freshPostgres(PG, 'kube');
  try {
    await runKube(kube.url);
  } finally {
    await kube.drop();
  }
  step(`all checks passed in ${seconds(t0)}`);
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(`image: FAILED: ${err.message}`);
    process.exit(1);
  },
);
