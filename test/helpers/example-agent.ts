// The example agent (agents/acme-support.yaml) in tenant `demo`, as `npm start` serves it: on a
// fresh SQLite database, calling the example orders API on loopback.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import type { AgentDefinition } from '@switchboard/contract';
import { startOrdersBackend } from '../../examples/orders-backend.js';
import { readAgentFile } from '../../server/src/agents-loader.js';
import type { App } from '../../server/src/app.js';
import { databases } from './databases.js';
import { testApp } from './servers.js';

export const EXAMPLE_AGENT = 'agents/acme-support.yaml';

export async function exampleAgentApp(): Promise<{ app: App; close(): Promise<void> }> {
  const backend = await startOrdersBackend(0);
  const port = (backend.address() as AddressInfo).port;
  const created = await databases[0].create();
  const app = testApp(created.db, { actionAllowedHosts: { demo: [`127.0.0.1:${port}`] } });
  // The file reads the backend's address from SWITCHBOARD_VAR_ORDERS_URL, as npm start sets it.
  const { definition } = await readAgentFile(EXAMPLE_AGENT, { SWITCHBOARD_VAR_ORDERS_URL: `http://127.0.0.1:${port}` });
  await app.agents.put('demo', 'acme-support', definition);
  return {
    app,
    close: async () => {
      await app.close();
      backend.close();
      await created.drop();
    },
  };
}

/**
 * The example orders API on loopback for a suite (started before its tests, closed after), with
 * the config that lets tenant `acme` reach it and the example agent's definition calling it.
 */
export function ordersBackendFixture(): {
  readonly port: number;
  config: () => { actionAllowedHosts: Record<string, string[]> };
  definition: () => Promise<AgentDefinition>;
} {
  let backend: Awaited<ReturnType<typeof startOrdersBackend>> | undefined;
  const state = {
    port: 0,
    config: () => ({ actionAllowedHosts: { acme: [`127.0.0.1:${state.port}`] } }),
    definition: async () => (await readAgentFile(EXAMPLE_AGENT, { SWITCHBOARD_VAR_ORDERS_URL: `http://127.0.0.1:${state.port}` })).definition,
  };
  beforeAll(async () => {
    backend = await startOrdersBackend(0);
    state.port = (backend.address() as AddressInfo).port;
  });
  afterAll(() => backend?.close());
  return state;
}
