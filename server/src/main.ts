// Entry point: configuration → database (migrated) → agent files → app → listen; drains on SIGTERM.
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { HostChecker } from './actions/ssrf.js';
import { canCollect } from './lib/collect.js';
import { createLogger } from './lib/logger.js';
import { agentFiles, applyAgentFile, describeDefinitionError, testsBeside } from './agents-loader.js';
import { createApp, type App } from './app.js';
import { createHttpServer } from './http/server.js';
import { ConfigError, isLoopbackHost, loadConfig, type Config } from './config.js';
import { ensureDatabase, migrate, openDatabase } from './store/db.js';
import { GatesFailedError } from './errors.js';
import { describeStartupError } from './startup-errors.js';

export interface Running {
  server: Server;
  url: string;
  logger: Logger;
  stop(): Promise<void>;
  /** The services it serves (the demo makes its shop page's widget key with them). */
  app: App;
}

/** `hostChecker`: the checks of hosts that definitions name (its own name servers, bounds); one of the defaults otherwise. */
export async function start(config: Config, opts: { logger?: Logger; hostChecker?: HostChecker } = {}): Promise<Running> {
  const logger = opts.logger ?? createLogger({ level: config.logLevel, format: config.logFormat });
  if (config.authMode === 'header' && !isLoopbackHost(config.host) && !config.trustTenantHeader) {
    throw new ConfigError(
      `refusing to listen on ${config.host} with AUTH_MODE=header: anyone who can reach it could name any tenant. ` +
        'Use AUTH_MODE=api_key, listen on a loopback address, or set TRUST_TENANT_HEADER=true if a gateway in front authenticates callers.',
    );
  }
  if (!canCollect()) {
    logger.warn(
      'started without --expose-gc: memory of evicted agent versions is freed only when V8 collects by itself (npm start, npm run serve and the image pass the flag)',
    );
  }
  if (!config.publicUrl && !isLoopbackHost(config.host)) {
    logger.warn(
      { host: config.host },
      'PUBLIC_URL is not set: /openapi.json and /docs name whatever host a request gives (uncached, Vary: Host); set PUBLIC_URL to the address clients use',
    );
  }
  if (config.publicUrl && config.trustProxy === false) {
    logger.warn(
      { public_url: config.publicUrl },
      'PUBLIC_URL is set, so a proxy is likely in front, but TRUST_PROXY is not: every client behind that proxy shares the per-address limits of the widget and the webhooks; set TRUST_PROXY (docs/deployment.md)',
    );
  }
  if (await ensureDatabase(config.databaseUrl)) logger.info({ database: new URL(config.databaseUrl).pathname.slice(1) }, 'created the PostgreSQL database');
  const db = openDatabase(config.databaseUrl, {
    poolMax: config.dbPoolMax,
    acquireTimeoutMs: config.dbAcquireTimeoutMs,
    queryTimeoutMs: config.dbQueryTimeoutMs,
    log: logger,
    ...(config.databaseListenUrl ? { listenUrl: config.databaseListenUrl } : {}),
    preparedStatements: config.dbPreparedStatements,
    keptRowsMb: config.conversationCacheMb,
  });
  const applied = await migrate(db).catch(async (err: unknown) => {
    await db.close();
    throw err;
  });
  logger.info({ dialect: db.dialect, migrations: applied }, applied.length ? 'database migrated' : 'database up to date');
  const built = createApp(config, { db, logger, ...(opts.hostChecker ? { hostChecker: opts.hostChecker } : {}) });
  // A promise that fails with nobody to handle it is a bug, but one request's bug: it is logged
  // and counted, and the process goes on serving every other tenant (Node's default ends it).
  const onRejection = (reason: unknown) => {
    built.metrics.internalError('unhandled_rejection');
    logger.error({ err: reason }, 'a promise failed with nobody to handle it: the process stays up');
  };
  process.on('unhandledRejection', onRejection);
  const ungranted = built.secrets.ungranted();
  if (ungranted.length) {
    logger.warn({ secrets: ungranted }, 'operator secrets granted to no tenant: list the tenants in SWITCHBOARD_SECRET_<NAME>_TENANTS (or * for all)');
  }

  if (config.agentsDir) {
    let files: string[] = [];
    try {
      files = await agentFiles(config.agentsDir);
    } catch (err) {
      logger.error(`AGENTS_DIR ${config.agentsDir}: ${(err as Error).message}`);
    }
    for (const file of files) {
      try {
        const r = await applyAgentFile(built, config.agentsTenant, file, {
          note: `AGENTS_DIR ${file} at start-up`,
          ...(config.agentsForceReason ? { forceReason: config.agentsForceReason } : {}),
        });
        if (r.replaced !== null) {
          logger.warn(
            { tenant: config.agentsTenant, slug: r.slug, version: r.version, replaced: r.replaced, file },
            `agent ${r.slug}: ${file} differs from the current version ${r.replaced} and replaces it as version ${r.version} (a version applied by hand is no longer current)`,
          );
        } else logger.info({ tenant: config.agentsTenant, slug: r.slug, version: r.version, changed: r.changed }, 'agent loaded');
        if (r.release?.forced) {
          const failed = r.release.gates.filter((g) => !g.passed).map((g) => `${g.gate}: ${g.detail}`);
          logger.warn(
            { slug: r.slug, version: r.version, gates: failed, reason: r.release.reason },
            `agent ${r.slug}: version ${r.version} released past its failing release gates (${failed.join('; ')}), as AGENTS_FORCE_REASON allows; recorded as forced: ${r.release.reason ?? ''}`,
          );
        }
        for (const w of r.warnings.filter((x) => x.code === 'unreachable_host' || x.code === 'host_not_checked'))
          logger.warn({ slug: r.slug, path: w.path, file }, `agent ${r.slug}: ${w.message}`);
        // Its test conversations, which evaluations of its drafts run (docs/improving.md).
        const suite = await testsBeside(file);
        if (suite) {
          await built.review.putTestSuite(config.agentsTenant, r.slug, suite.tests);
          logger.info({ slug: r.slug, tests: suite.tests.length, file: suite.file }, 'agent test conversations stored');
        }
      } catch (err) {
        if (err instanceof GatesFailedError) {
          const failed = err.gates.filter((g) => !g.passed).map((g) => `${g.gate}: ${g.detail}`);
          logger.error(
            { file, gates: failed, evaluation: err.evaluationId },
            `${file} was not released: ${err.message}${failed.length ? ` (${failed.join('; ')})` : ''}. The current version stays; release the draft with \`npm run agents -- activate <slug> <version> --force --reason …\`, or change the file`,
          );
        } else logger.error(describeDefinitionError(file, err));
      }
    }
  }

  await built.startBackground();
  const server = createHttpServer(built.app, config, logger).listen(config.port, config.host);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
  } catch (err) {
    process.off('unhandledRejection', onRejection);
    await built.close(0);
    await db.close();
    throw err;
  }
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info({ url, auth: config.authMode }, 'switchboard listening');

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      built.drain.draining = true;
      if (config.shutdown.delayMs > 0) {
        // Still accepting: the load balancer sees /readyz answer 503 and stops sending here first.
        logger.info({ delay_ms: config.shutdown.delayMs }, 'draining: not ready, still answering while the load balancer notices');
        await new Promise((r) => setTimeout(r, config.shutdown.delayMs));
      }
      logger.info('draining in-flight requests');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Event streams never end by themselves: they end now (their clients resume on another
      // replica with Last-Event-ID), and each connection is closed as soon as it falls idle.
      built.streams.closeAll();
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      server.closeIdleConnections();
      await closed;
      clearInterval(idle);
      await built.close();
      await db.close();
      process.off('unhandledRejection', onRejection);
      logger.info('stopped');
    })());
  return { server, url, logger, stop, app: built };
}

/**
 * Drains and exits on SIGTERM or SIGINT. A process manager (systemd, a terminal's Ctrl-C, npm
 * forwarding) may deliver the same signal twice: the second is logged and ignored, the third, or
 * SHUTDOWN_TIMEOUT_MS, ends the process at once. `after` runs once the drain is done.
 */
export function stopOnSignals(running: Running, shutdown: Config['shutdown'], after?: () => void): void {
  const log = running.logger;
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals++;
    if (signals === 1) {
      const force = setTimeout(() => {
        log.error({ timeout_ms: shutdown.timeoutMs }, 'drain took longer than SHUTDOWN_TIMEOUT_MS: exiting now');
        process.exit(1);
      }, shutdown.timeoutMs);
      force.unref();
      running.stop().then(
        () => {
          after?.();
          process.exit(0);
        },
        () => process.exit(1),
      );
    } else if (signals === 2) {
      log.warn({ signal: sig }, 'already draining: requests in flight are being answered (signal once more to exit at once)');
    } else {
      log.error({ signal: sig }, 'third signal: exiting without finishing the drain');
      process.exit(1);
    }
  };
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, onSignal);
}

async function main() {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(2);
  }
  try {
    const running = await start(config);
    stopOnSignals(running, config.shutdown);
  } catch (err) {
    const line = err instanceof ConfigError ? err.message : describeStartupError(err, { databaseUrl: config.databaseUrl });
    console.error(line ?? err);
    process.exit(1);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) void main();
