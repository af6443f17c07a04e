// The deployment files an operator applies as they are: deploy/kubernetes against Kubernetes'
// own schemas (kubernetes-models) and against each other, compose.yaml and its HAProxy
// configuration, the Dockerfile. Every setting they name must be one the server reads, with a
// value it accepts. `npm run test:image` runs the image and plays the manifests with podman.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, loadConfig } from '../server/src/config.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const kubeDir = join(root, 'deploy/kubernetes');
const read = (p: string) => readFileSync(join(root, p), 'utf8');

type Doc = Record<string, any>;
/** The resources of one folder's files (its kustomization aside), each with its file's name. */
const resourcesIn = (dir: string): Doc[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => ({ ...(d.toJS() as Doc), __file: f })));
const OVERLAYS = ['example-secret', 'ingress'];
// The base's resources and the overlays', as one set (each kind once).
const base = resourcesIn(kubeDir);
const docs: Doc[] = [...base, ...OVERLAYS.flatMap((o) => resourcesIn(join(kubeDir, o)).map((d) => ({ ...d, __file: `${o}/${d.__file}` })))];
const one = (kind: string): Doc => {
  const found = docs.filter((d) => d.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0];
};
const models: Record<string, new (data: any) => { validate(): void }> = { Deployment, ConfigMap, Secret, Service, PodDisruptionBudget, NetworkPolicy, Ingress };

/** Real values of the right shape for what the Secret leaves to the operator. */
const filledSecret = {
  DATABASE_URL: 'postgres://switchboard:pw@db:5432/switchboard',
  SECRETS_KEY: 'a'.repeat(64),
  AUDIT_CHAIN_KEY: 'b'.repeat(64),
  METRICS_TOKEN: 'c'.repeat(32),
};

const known = (name: string) =>
  CONFIG_VARIABLES.includes(name) || name.startsWith('SWITCHBOARD_VAR_') || name === 'NODE_ENV' || name === 'MALLOC_MMAP_THRESHOLD_';

describe('deploy/kubernetes', () => {
  it('every resource is valid against the Kubernetes schemas, and kustomization.yaml lists every file', () => {
    for (const d of docs) {
      const { __file, ...resource } = d;
      const Model = models[resource.kind];
      expect(Model, `${__file}: ${resource.kind} has no schema here`).toBeDefined();
      expect(() => new Model(resource).validate(), __file).not.toThrow();
    }
    const kustomization = parse(readFileSync(join(kubeDir, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    expect([...kustomization.resources].sort()).toEqual([...new Set(base.map((d) => d.__file))].sort());
    // Each overlay is the base and its own files.
    for (const o of OVERLAYS) {
      const overlay = parse(readFileSync(join(kubeDir, o, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
      expect(overlay.resources, o).toEqual(['..', ...resourcesIn(join(kubeDir, o)).map((d) => d.__file)]);
    }
  });

  it('applying the base leaves a Secret made from a secret store alone: the example Secret is an overlay', () => {
    expect(base.map((d) => d.kind)).not.toContain('Secret');
    expect(one('Secret').__file).toBe('example-secret/secret.yaml');
    expect(read('docs/deployment.md')).toContain('kubectl apply -k deploy/kubernetes/example-secret');
  });

  it('the Ingress serves PUBLIC_URL over TLS to the Service, unbuffered, with room for the largest agent definition', () => {
    const ingress = one('Ingress');
    const host = new URL(one('ConfigMap').data.PUBLIC_URL).host;
    expect(new URL(one('ConfigMap').data.PUBLIC_URL).protocol).toBe('https:');
    expect(ingress.spec.tls).toEqual([{ hosts: [host], secretName: 'switchboard-tls' }]);
    const rule = ingress.spec.rules[0];
    expect(rule.host).toBe(host);
    const service = one('Service');
    expect(rule.http.paths[0].backend.service).toEqual({ name: service.metadata.name, port: { name: service.spec.ports[0].name } });
    expect(ingress.metadata.annotations['nginx.ingress.kubernetes.io/proxy-buffering']).toBe('off');
    const mib = Number(String(ingress.metadata.annotations['nginx.ingress.kubernetes.io/proxy-body-size']).replace(/m$/, ''));
    expect(mib * 1024 * 1024).toBeGreaterThan(loadConfig({}).agentBodyLimitBytes);
  });

  it("the README builds the image under the tag the Deployment runs, the package's version", () => {
    const image = one('Deployment').spec.template.spec.containers[0].image;
    expect(image).toBe(`switchboard:${JSON.parse(read('package.json')).version}`);
    expect(read('README.md')).toContain(`podman build -t ${image} .`);
    expect(read('docs/deployment.md')).toContain('kubectl exec deploy/switchboard -- node dist/server/src/cli/keys.js create');
  });

  it('a schema error is caught (the check can fail)', () => {
    const broken = structuredClone(one('Deployment'));
    delete broken.__file;
    broken.spec.replicas = 'three';
    expect(() => new Deployment(broken).validate()).toThrow();
  });

  it('the Deployment: three replicas, probes on /readyz and /healthz, a grace period longer than preStop and the drain', () => {
    const deployment = one('Deployment');
    const config = one('ConfigMap').data as Record<string, string>;
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.ports.map((p: Doc) => p.containerPort)).toContain(Number(config.PORT));
    const preStop = container.lifecycle.preStop.exec.command as string[];
    expect(preStop[0]).toBe('sleep');
    const drainSeconds = (Number(config.SHUTDOWN_DELAY_MS ?? 0) + Number(config.SHUTDOWN_TIMEOUT_MS)) / 1000;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(Number(preStop[1]) + drainSeconds);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    // The image's user (Dockerfile USER node) is uid 1000 in the official Node.js image.
    expect(pod.securityContext.runAsUser).toBe(1000);
    expect(container.envFrom.map((e: Doc) => e.configMapRef?.name ?? e.secretRef?.name).sort()).toEqual(
      [one('ConfigMap').metadata.name, one('Secret').metadata.name].sort(),
    );
  });

  it('the memory limit holds what the configuration lets the process keep, and the pod has no API token', () => {
    const pod = one('Deployment').spec.template.spec;
    const limit = String(pod.containers[0].resources.limits.memory);
    const limitMiB = limit.endsWith('Gi') ? Number(limit.slice(0, -2)) * 1024 : Number(limit.replace(/Mi$/, ''));
    const config = loadConfig({ ...(one('ConfigMap').data as Record<string, string>), ...filledSecret });
    // At rest with word vectors (docs/deployment.md, "Memory"), the cache and its collections' slack, each training worker's heap.
    const atRest = 160 + 60;
    const needed = atRest + config.routerCacheMb + 32 + config.training.workers * config.training.memoryMb;
    expect(needed, `${needed} MiB against a limit of ${limit}`).toBeLessThanOrEqual(limitMiB * 0.9);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(config.publicUrl).toMatch(/^https:\/\//);
  });

  it('the network policy selects the pods, lets in the API port, and lets out DNS, PostgreSQL and the model server only', () => {
    const policy = one('NetworkPolicy');
    const labels = one('Deployment').spec.template.metadata.labels as Record<string, string>;
    expect(Object.entries(policy.spec.podSelector.matchLabels).every(([k, v]) => labels[k] === v)).toBe(true);
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.ingress).toEqual([{ ports: [{ port: 'http', protocol: 'TCP' }] }]);
    const ports = (policy.spec.egress as Doc[]).map((r) => (r.ports ?? []).map((p: Doc) => p.port));
    expect(ports).toEqual([[53, 53], [5432], []]);
    // Actions' egress is the operator's to add: nothing here reaches an arbitrary address.
    expect(JSON.stringify(policy.spec.egress)).not.toContain('ipBlock');
  });

  it('the Service and the disruption budget select the Deployment’s pods, on the named port', () => {
    const labels = one('Deployment').spec.template.metadata.labels as Record<string, string>;
    const matches = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
    const service = one('Service');
    expect(matches(service.spec.selector)).toBe(true);
    expect(matches(one('PodDisruptionBudget').spec.selector.matchLabels)).toBe(true);
    expect(one('Deployment').spec.template.spec.containers[0].ports.map((p: Doc) => p.name)).toContain(service.spec.ports[0].targetPort);
  });

  it('configuration: every name is a setting the server reads; secrets live in the Secret; the placeholders are refused', () => {
    const config = one('ConfigMap').data as Record<string, string>;
    const secret = one('Secret').stringData as Record<string, string>;
    for (const name of [...Object.keys(config), ...Object.keys(secret)]) expect(known(name), name).toBe(true);
    for (const name of ['DATABASE_URL', 'SECRETS_KEY', 'AUDIT_CHAIN_KEY', 'METRICS_TOKEN']) {
      expect(Object.keys(secret), name).toContain(name);
      expect(Object.keys(config), name).not.toContain(name);
    }
    // What the pod's environment becomes, filled in: a configuration the server starts with.
    const loaded = loadConfig({ ...config, ...filledSecret });
    expect(loaded.authMode).toBe('api_key');
    expect(loaded.host).toBe('0.0.0.0');
    // As shipped, the placeholders stop the server instead of running it half-configured.
    expect(() => loadConfig({ ...config, ...secret })).toThrow(/invalid configuration/);
  });
});

describe('compose.yaml', () => {
  const compose = parse(read('compose.yaml'), { merge: true }) as Doc;
  const replicas = Object.keys(compose.services).filter((s) => s.startsWith('switchboard-'));

  it('two replicas of the built image on PostgreSQL, started once it is healthy, with a configuration the server accepts', () => {
    expect(replicas).toEqual(['switchboard-1', 'switchboard-2']);
    for (const name of replicas) {
      const service = compose.services[name];
      expect(service.build).toBe('.');
      expect(service.depends_on.postgres.condition).toBe('service_healthy');
      expect(compose.services.postgres.healthcheck.test).toContain('pg_isready');
      for (const key of Object.keys(service.environment)) expect(known(key), key).toBe(true);
      const config = loadConfig({ ...service.environment, HOST: '0.0.0.0' });
      expect(config.databaseUrl).toMatch(/@postgres:5432\//);
      const grace = Number(String(service.stop_grace_period).replace(/s$/, ''));
      expect(grace).toBeGreaterThan((config.shutdown.delayMs + config.shutdown.timeoutMs) / 1000);
    }
    // Published on loopback only: /metrics is open in this file.
    expect(compose.services.proxy.ports).toEqual(['127.0.0.1:3000:3000']);
  });

  it("runs the example orders API the example agent calls, granted to the agents' tenant, so the README conversation holds", () => {
    const orders = compose.services.orders;
    expect(orders.entrypoint).toEqual(['node', 'dist/examples/orders-backend.js']);
    expect(orders.image).toBe(compose.services['switchboard-1'].image);
    for (const name of replicas) {
      const env = compose.services[name].environment;
      const url = new URL(env.SWITCHBOARD_VAR_ORDERS_URL);
      expect(url.host).toBe(`orders:${orders.environment.PORT}`);
      expect(loadConfig({ ...env, HOST: '0.0.0.0' }).actionAllowedHosts[env.AGENTS_TENANT]).toContain(url.host);
    }
    expect(read('agents/acme-support.yaml')).toContain('url: "${ORDERS_URL:-');
  });

  it('the proxy balances over exactly those replicas, checking /readyz', () => {
    const cfg = read('deploy/compose/haproxy.cfg');
    expect([...cfg.matchAll(/^\s*server (\S+) (\S+):(\d+)/gm)].map((m) => [m[1], m[2]])).toEqual(replicas.map((r) => [r, r]));
    expect(cfg).toMatch(/option httpchk GET \/readyz/);
    // A client that never finishes its headers, and a flood of connections, are bounded.
    expect(cfg).toMatch(/^\s*timeout http-request \d+s$/m);
    expect(cfg).toMatch(/^\s*maxconn \d+$/m);
    const haproxy = spawnSync('haproxy', ['-c', '-q', '-f', join(root, 'deploy/compose/haproxy.cfg')], { encoding: 'utf8' });
    if (haproxy.error) console.warn('haproxy is not installed: its own configuration check was SKIPPED');
    else expect(haproxy.status, haproxy.stderr).toBe(0);
  });
});

/** The shell command of the first RUN after `after` in the Dockerfile, its continuation lines joined, its --mount flags left out. */
function runCommand(dockerfile: string, after: string): string {
  const from = dockerfile.indexOf(after);
  const at = dockerfile.indexOf('\nRUN ', from) + 1;
  const lines: string[] = [];
  for (const line of dockerfile.slice(at).split('\n')) {
    lines.push(line.replace(/\\$/, ''));
    if (!line.endsWith('\\')) break;
  }
  // As the builder joins them: the backslash and the line break go.
  return lines
    .join('')
    .replace(/^RUN /, '')
    .replace(/--mount=\S+\s+/g, '');
}

describe('Dockerfile', () => {
  it('checks each install for what it must have produced, in the same step, and names what is missing', () => {
    const dockerfile = read('Dockerfile');
    for (const stage of ['FROM manifests AS deps', 'FROM manifests AS build']) {
      const run = runCommand(dockerfile, stage);
      expect(run, stage).toMatch(/npm ci /);
      expect(run, stage).toMatch(/exit 1/);
      expect(run, stage).toContain('A failed install');
    }
    expect(read('docs/deployment.md')).toContain('**A failed install.**');
    // The build install's check, run where npm "succeeded" without some tools: it stops and names them.
    const check = runCommand(dockerfile, 'FROM manifests AS build').replace(/^.*?npm ci --ignore-scripts && npm rebuild esbuild/s, 'true');
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-install-'));
    try {
      mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
      const tool = (name: string) => writeFileSync(join(dir, 'node_modules/.bin', name), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      tool('tsc');
      tool('tsx');
      const broken = spawnSync('sh', ['-c', check], { cwd: dir, encoding: 'utf8' });
      expect(broken.status).toBe(1);
      expect(broken.stderr).toContain('npm ci exited 0 without: vite esbuild');
      tool('vite');
      tool('esbuild');
      const whole = spawnSync('sh', ['-c', check], { cwd: dir, encoding: 'utf8' });
      expect(whole.status, whole.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const dockerfile = read('Dockerfile');
  it('based on the official Node.js image of the major version the project runs on, as a non-root user, with a health check', () => {
    const base = dockerfile.match(/^ARG NODE_IMAGE=(\S+)$/m)?.[1];
    expect(base).toMatch(/^node:\d+-bookworm-slim$/);
    const major = Number(base!.split(':')[1].split('-')[0]);
    const engines = JSON.parse(read('package.json')).engines.node as string;
    expect(engines).toMatch(new RegExp(`^>=${major}\\.`));
    expect(read('deploy/image/base.sh')).toMatch(new RegExp(`NODE_VERSION:-${major}\\.`));
    const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(finalStage).toMatch(/^USER node$/m);
    expect(finalStage).toMatch(/^HEALTHCHECK [^]*?\/healthz/m);
    // Exec form: node is PID 1 and receives SIGTERM itself.
    // Started with --expose-gc, as npm start and serve are: the cache of compiled versions asks V8 for collections (lib/collect.ts).
    expect(finalStage).toMatch(/^ENTRYPOINT \["node", "--expose-gc", /m);
    for (const line of finalStage.match(/^ENV .*$/gm) ?? []) for (const [, name] of line.matchAll(/(\w+)=/g)) expect(known(name), name).toBe(true);
    const ignored = read('.dockerignore').split('\n');
    for (const p of ['**/node_modules', '.env', 'data', '.git']) expect(ignored).toContain(p);
  });
});
