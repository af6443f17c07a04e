// `npm run conformance -- --url URL (--tenant T | --key K)`: the contract's checks against a live
// Switchboard: health and readiness, a scratch agent created, a conversation through two turns,
// its history and audit log (and the log's verification), the usual errors, then the scratch
// agent and its conversation erased. Every response is checked against the deployment's own
// /openapi.json and against the document this release generates (lib/openapi-check.ts); a
// validating proxy's `sl-violations` header (Stoplight Prism) counts as a violation too. Prints
// each check with its time and a summary; exits 1 on any failure.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { getOpenApi } from '../http/openapi.js';
import { OpenApiChecker } from '../lib/openapi-check.js';
import { Option, type Command } from 'commander';

export interface ConformanceOptions {
  url: string;
  tenant?: string;
  key?: string;
  /** Where the lines go (console.log by default). */
  print?: (line: string) => void;
}

export interface ConformanceReport {
  passed: number;
  failed: number;
  skipped: number;
  /** Responses checked against both documents. */
  responses: number;
}

interface Reply {
  status: number;
  type: string;
  body: unknown;
}

/** An agent small enough to route without surprises: one capability that asks once, one that hands over. */
const SCRATCH_AGENT = {
  name: 'Conformance check',
  description: 'Created and deleted by `conformance`; safe to delete',
  capabilities: [
    {
      name: 'order_status',
      examples: ['where is my order', 'track my package', 'has my order shipped', 'my delivery is late'],
      phases: [
        { id: 'ask', say: 'What is your order number?', collect: { slot: 'order_id', type: 'text' }, next: 'done' },
        { id: 'done', say: 'Order {{ slots.order_id }} is on its way.', end: 'completed' },
      ],
    },
    { name: 'human', examples: ['talk to a human', 'real person please'], phases: [{ id: 'handoff', say: 'Handing over.', end: 'escalated' }] },
  ],
};

class Failure extends Error {}

function expect(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Failure(message);
}

const field = (v: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), v);

export async function runConformance(o: ConformanceOptions): Promise<ConformanceReport> {
  const print = o.print ?? ((line: string) => console.log(line));
  const base = o.url.replace(/\/+$/, '');
  const auth: Record<string, string> = { ...(o.tenant ? { 'tenant-id': o.tenant } : {}), ...(o.key ? { authorization: `Bearer ${o.key}` } : {}) };
  const release = new OpenApiChecker(getOpenApi(), 'this release’s openapi.json');
  let deployed: OpenApiChecker | null = null;
  const report: ConformanceReport = { passed: 0, failed: 0, skipped: 0, responses: 0 };

  /** One HTTP call; its response checked against both documents. */
  async function call(method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; invalidRequest?: boolean } = {}): Promise<Reply> {
    const url = `${base}${path}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { ...(init.headers ?? auth), ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      const c = (err as { cause?: { code?: string; message?: string; errors?: { code?: string }[] } }).cause;
      throw new Failure(`cannot reach ${url} (${c?.code ?? c?.errors?.[0]?.code ?? c?.message ?? (err as Error).message}): is it running there? (--url)`);
    }
    const text = await res.text();
    const type = (res.headers.get('content-type') ?? '').split(';')[0].trim();
    let body: unknown = text;
    if (type === 'application/json' || type.endsWith('+json')) {
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        throw new Failure(`${method} ${path} answered ${type} that is not JSON: ${text.slice(0, 120)}`);
      }
    }
    // A validating proxy judges the document's operations (/openapi.json itself is not one of
    // them); a request sent wrong on purpose has violations of its own, its response must have none.
    const header = release.operationOf(method, url) ? res.headers.get('sl-violations') : null;
    if (header) {
      let violations: { location?: string[] }[];
      try {
        violations = JSON.parse(header) as { location?: string[] }[];
      } catch {
        throw new Failure(`the validating proxy's sl-violations header is not JSON: ${header.slice(0, 200)}`);
      }
      const counted = violations.filter((v) => !init.invalidRequest || v.location?.[0] !== 'request');
      if (counted.length) throw new Failure(`the validating proxy reports violations on ${method} ${path}: ${JSON.stringify(counted).slice(0, 600)}`);
    }
    const headers: Record<string, string> = {};
    res.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const received = { method, url, status: res.status, headers, body, hasBody: text.length > 0 };
    for (const checker of [deployed, release]) {
      if (!checker) continue;
      try {
        checker.checkResponse(received);
      } catch (err) {
        throw new Failure((err as Error).message);
      }
    }
    if (deployed) report.responses++;
    return { status: res.status, type, body };
  }

  const problem = (r: Reply, status: number, code: string | string[]) => {
    const codes = Array.isArray(code) ? code : [code];
    expect(r.status === status && r.type === 'application/problem+json', `expected a ${status} problem document, got ${r.status} ${r.type}`);
    expect(codes.includes(String(field(r.body, 'code'))), `expected code ${codes.join(' or ')}, got ${String(field(r.body, 'code'))}`);
  };

  let stop = false;
  async function check(name: string, fn: () => Promise<unknown>, opts: { skip?: string; essential?: boolean } = {}): Promise<void> {
    if (stop) return;
    if (opts.skip) {
      report.skipped++;
      print(`  skip          ${name} (${opts.skip})`);
      return;
    }
    const t = performance.now();
    try {
      const note = await fn();
      report.passed++;
      print(`  ok   ${`${Math.round(performance.now() - t)} ms`.padStart(8)}  ${name}${typeof note === 'string' ? ` (${note})` : ''}`);
    } catch (err) {
      report.failed++;
      const message = err instanceof Failure ? err.message : `${(err as Error).name}: ${(err as Error).message}`;
      print(`  FAIL ${`${Math.round(performance.now() - t)} ms`.padStart(8)}  ${name}: ${message}`);
      if (opts.essential) {
        stop = true;
        print('  (stopping: the checks after this one need it)');
      }
    }
  }

  print(`conformance of ${base} (${o.key ? 'API key' : `tenant ${o.tenant ?? '?'}`})`);
  await check(
    'GET /openapi.json is a Switchboard OpenAPI 3.1 document',
    async () => {
      const r = await call('GET', '/openapi.json', { headers: {} });
      const doc = r.body as Record<string, unknown>;
      expect(r.status === 200 && r.type === 'application/json', `answered ${r.status} ${r.type || 'without a content type'}: this is not a Switchboard server`);
      expect(
        field(doc, 'info', 'title') === 'Switchboard' && String(field(doc, 'openapi')).startsWith('3.1'),
        'the document there is not Switchboard’s: this is not a Switchboard server',
      );
      deployed = new OpenApiChecker(doc, 'the deployment’s /openapi.json');
      return `version ${String(field(doc, 'info', 'version'))}, ${deployed.operations.length} operations`;
    },
    { essential: true },
  );
  await check('GET /healthz answers ok', async () => {
    const r = await call('GET', '/healthz', { headers: {} });
    expect(r.status === 200 && field(r.body, 'status') === 'ok', `answered ${r.status} ${JSON.stringify(r.body)}`);
  });
  await check('GET /readyz answers ok (the database is reachable)', async () => {
    const r = await call('GET', '/readyz', { headers: {} });
    expect(r.status === 200 && field(r.body, 'status') === 'ok', `answered ${r.status} ${JSON.stringify(r.body)}`);
  });

  const slug = `conformance-${randomBytes(4).toString('hex')}`;
  const agents = `/api/v1/agents/${slug}`;
  let conversation = '';
  // Set by the check that creates it (a closure, hence an object).
  const scratch = { created: false };
  await check(
    `PUT ${agents} creates a scratch agent`,
    async () => {
      const r = await call('PUT', agents, { body: SCRATCH_AGENT });
      expect(r.status === 200, `answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}${r.status === 403 ? ' (the key needs the admin scope)' : ''}`);
      expect(field(r.body, 'slug') === slug, 'the answer names another agent');
      scratch.created = true;
    },
    { essential: true },
  );
  if (scratch.created) {
    try {
      await check('converse starts a conversation and asks for what it needs', async () => {
        const r = await call('POST', `${agents}/converse`, {
          body: { message: 'where is my order', context: { version: 'v1', context: { identity: { user_id: 'conformance' } } } },
        });
        expect(r.status === 200, `answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
        expect(field(r.body, 'state', 'capability') === 'order_status', `routed to ${String(field(r.body, 'state', 'capability'))}`);
        expect(field(r.body, 'response', 'awaiting_input') === true, 'it does not wait for an answer');
        conversation = String(field(r.body, 'conversation_id'));
      });
      await check('converse continues it to the end', async () => {
        expect(conversation !== '', 'no conversation was started');
        const r = await call('POST', `${agents}/converse`, { body: { message: '100001', conversation_id: conversation } });
        expect(r.status === 200, `answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
        expect(field(r.body, 'state', 'status') === 'completed', `its status is ${String(field(r.body, 'state', 'status'))}`);
        expect(String(field(r.body, 'response', 'message')).includes('100001'), 'the reply does not use the collected slot');
      });
      await check('the history holds its four turns', async () => {
        const r = await call('GET', `${agents}/conversations/${conversation}/history`);
        expect(r.status === 200, `answered ${r.status}`);
        const turns = field(r.body, 'turns');
        expect(Array.isArray(turns) && turns.length === 4, `it holds ${Array.isArray(turns) ? turns.length : 'no'} turns`);
      });
      await check('the audit log has the routing decision and the status changes', async () => {
        const r = await call('GET', `${agents}/conversations/${conversation}/audit-logs`);
        expect(r.status === 200, `answered ${r.status}`);
        const types = ((field(r.body, 'data') as { type: string }[] | undefined) ?? []).map((e) => e.type);
        expect(types.includes('routing_decision') && types.filter((t) => t === 'status_change').length >= 2, `its entries are ${types.join(', ')}`);
        return `${types.length} entries`;
      });
      await check('the audit log verifies', async () => {
        const r = await call('GET', `${agents}/conversations/${conversation}/audit-logs/verify`);
        expect(r.status === 200 && field(r.body, 'valid') === true, `answered ${r.status} ${JSON.stringify(r.body)}`);
      });
      await check('an unknown agent answers 404 agent_not_found', async () => {
        problem(await call('POST', `/api/v1/agents/${slug}-missing/converse`, { body: { message: 'hi' } }), 404, 'agent_not_found');
      });
      await check('a bad body answers 400 validation_error', async () => {
        problem(await call('POST', `${agents}/converse`, { body: { mesage: 'hi' }, invalidRequest: true }), 400, 'validation_error');
      });
      await check('a call naming no tenant is refused', async () => {
        const r = await call('POST', `${agents}/converse`, { body: { message: 'hi' }, headers: {}, invalidRequest: true });
        // Header auth asks for the tenant; API-key auth for a key.
        problem(r, r.status === 401 ? 401 : 400, ['tenant_required', 'unauthorized']);
      });
      await check(
        'a wrong API key answers 401 unauthorized',
        async () => {
          problem(
            await call('POST', `${agents}/converse`, {
              body: { message: 'hi' },
              headers: { authorization: `Bearer sbk_${randomBytes(16).toString('hex')}_wrong` },
              invalidRequest: true,
            }),
            401,
            'unauthorized',
          );
        },
        { skip: o.key ? undefined : 'header auth: no --key to get wrong' },
      );
    } finally {
      stop = false;
      if (conversation) {
        await check('the scratch conversation is erased (its turns and user are gone)', async () => {
          const r = await call('DELETE', `${agents}/conversations/${conversation}`);
          expect(r.status === 204, `answered ${r.status}`);
          // What stays is the audit skeleton: no turns, no user.
          const after = await call('GET', `${agents}/conversations/${conversation}/history`);
          const turns = field(after.body, 'turns');
          expect(
            after.status === 200 && Array.isArray(turns) && turns.length === 0 && field(after.body, 'user_id') === null,
            `its history still holds ${JSON.stringify(after.body).slice(0, 200)}`,
          );
        });
      }
      await check('the scratch agent is deleted', async () => {
        const r = await call('DELETE', agents);
        expect(r.status === 204, `answered ${r.status}`);
        const after = await call('GET', agents);
        expect(after.status === 404, `it still answers ${after.status}`);
      });
    }
  }
  print(
    `${report.failed ? 'FAILED' : 'passed'}: ${report.passed} checks passed, ${report.failed} failed, ${report.skipped} skipped; ` +
      `${report.responses} responses valid against the deployment's document and this release's`,
  );
  return report;
}

/** conformance. */
export function register(cli: Command): void {
  cli
    .command('conformance')
    .description(
      "run the contract's checks against a live Switchboard (a scratch agent, a conversation, history, audit, the usual errors), every response checked against the deployment's /openapi.json and this release's; leaves nothing behind",
    )
    .addOption(new Option('--url <url>', "the deployment's base URL").env('SWITCHBOARD_URL').makeOptionMandatory())
    .addOption(new Option('--tenant <tenant>', 'tenant id (header auth mode)').env('SWITCHBOARD_TENANT'))
    .addOption(new Option('--api-key <key>', 'an API key with the admin scope (api_key auth mode)').env('SWITCHBOARD_KEY'))
    .action(async (opts: { url: string; tenant?: string; apiKey?: string }) => {
      if (!opts.tenant && !opts.apiKey) throw new Error('say whose agents: --tenant T (header auth) or --api-key K (api_key auth)');
      const report = await runConformance({ url: opts.url, tenant: opts.tenant, key: opts.apiKey });
      if (report.failed) process.exitCode = 1;
    });
}
