// `agents privacy`: the tenant's privacy policy on a running server (show, set from a YAML or JSON
// file, clear), and `privacy try`, which masks a message by a policy file here, with no server.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { PrivacyDef } from '@switchboard/contract';
import { parseYamlSource } from '../lib/yaml-source.js';
import { privacyProblems } from '../service/privacy/policy.js';
import { Masker, regionsFor } from '../service/privacy/mask.js';
import { compileBounded } from '../engine/patterns.js';
import { describeFailure, reach, remoteClient, remoteOptions, type RemoteOptions } from './remote.js';

/** A policy file, checked as the server checks it (`hash` allowed: the server says whether it has a key). */
async function policyFile(file: string): Promise<PrivacyDef> {
  const parsed = PrivacyDef.safeParse(parseYamlSource(await readFile(file, 'utf8')).value);
  if (!parsed.success) throw new Error(`${file}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  const problems = privacyProblems(parsed.data, '', true);
  if (problems.length) throw new Error(`${file}: ${problems.map((p) => `${p.path.replace(/^\./, '')}: ${p.message}`).join('; ')}`);
  return parsed.data;
}

/** What a policy does, in one line: "email hash, phone keep_last 4, member_id (pattern) redact". */
function summary(p: PrivacyDef): string {
  const mode = (m: unknown) => (typeof m === 'string' ? m : `keep_last ${(m as { keep_last: number }).keep_last}`);
  return [...Object.entries(p.mask).map(([t, m]) => `${t} ${mode(m)}`), ...(p.custom ?? []).map((c) => `${c.name} (pattern) ${mode(c.mode ?? 'redact')}`)].join(
    ', ',
  );
}

async function show(o: RemoteOptions) {
  const r = await reach(o, () => remoteClient(o).api.getPrivacyPolicy());
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  if (!r.body.policy) console.log('no privacy policy is set for the tenant: each agent masks what its own `privacy` says');
  else process.stdout.write(`# set ${r.body.updated_at}\n${stringify(r.body.policy)}`);
}

async function set(file: string, o: RemoteOptions) {
  const policy = await policyFile(file);
  const r = await reach(o, () => remoteClient(o).api.putPrivacyPolicy({ body: policy }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`set the tenant's privacy policy from ${file}: ${summary(policy) || 'nothing masked'}; every replica masks by it within a second`);
}

async function clear(o: RemoteOptions) {
  const r = await reach(o, () => remoteClient(o).api.deletePrivacyPolicy());
  if (r.status !== 204) throw new Error(describeFailure(o, r.status, r.body));
  console.log("removed the tenant's privacy policy: each agent masks only what its own `privacy` says");
}

async function tryIt(message: string, opts: { file: string; language: string }) {
  const policy = await policyFile(opts.file);
  // A key of this run's own: hashes show which values mask alike, not the server's hashes.
  const masker = new Masker({
    modes: policy.mask,
    regions: regionsFor(policy.phone_regions, [opts.language]),
    custom: (policy.custom ?? []).filter((c) => c.mode !== 'keep').map((c) => ({ name: c.name, re: compileBounded(c.pattern), mode: c.mode ?? 'redact' })),
    hashKey: randomBytes(32),
  });
  console.log(masker.text(message));
  const counts = Object.entries(masker.counts).map(([t, n]) => `${t} ${n}`);
  console.log(counts.length ? `masked: ${counts.join(', ')}` : 'masked: nothing');
}

export function register(cli: Command): void {
  const privacy = cli.command('privacy').description("the tenant's privacy policy (docs/privacy.md): show, set, clear on a running server; try one here");
  remoteOptions(privacy.command('show').description("print the tenant's privacy policy as YAML")).action((o: RemoteOptions) => show(o));
  remoteOptions(privacy.command('set <file>').description("set the tenant's privacy policy from a YAML or JSON file (checked here first)")).action(
    (file: string, o: RemoteOptions) => set(file, o),
  );
  remoteOptions(privacy.command('clear').description("remove the tenant's privacy policy")).action((o: RemoteOptions) => clear(o));
  privacy
    .command('try <message>')
    .description('mask a message by a policy file, here, with no server: what would be kept')
    .requiredOption('--file <file>', 'the policy (YAML or JSON, as `set` takes it)')
    .option('--language <tag>', "the agent's language, whose regions national phone numbers are read for when the policy names none", 'en')
    .action((message: string, opts: { file: string; language: string }) => tryIt(message, opts));
}
