// Agents: Agent definitions and their versions
import { Agent, AgentList, PutAgentQuery, PutAgentResult } from '../agents.js';
import { Problem, TenantHeaders } from '../common.js';
import { AgentDefinition } from '../definition.js';
import { initContract } from '@ts-rest/core';
import { SlugParams, apiOptions, apiResource } from '../resource.js';
import { definition, agent, release, problem } from '../examples/fixtures.js';

const c = initContract();

export const agents = apiResource({
  tag: 'Agents',
  description: 'Agent definitions and their versions',
  routes: c.router(
    {
      putAgent: {
        method: 'PUT',
        path: '/agents/:slug',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: PutAgentQuery,
        body: AgentDefinition,
        responses: {
          200: PutAgentResult,
          409: Problem.describe(
            'The current version has a release policy and the new version fails a gate (`release_gates_failed`, with `gates`): it is stored as a draft, not made current',
          ),
          422: Problem.describe('Training its router would exceed the memory or time budget (`training_budget_exceeded`)'),
        },
        summary: 'Create or update an agent; a changed definition makes a new version (current unless activate=false)',
      },
      listAgents: {
        method: 'GET',
        path: '/agents',
        headers: TenantHeaders,
        responses: { 200: AgentList.describe("The tenant's agents") },
        summary: "List the tenant's agents",
      },
      getAgent: {
        method: 'GET',
        path: '/agents/:slug',
        pathParams: SlugParams,
        headers: TenantHeaders,
        responses: { 200: Agent },
        summary: 'Get an agent and its current definition',
      },
      deleteAgent: {
        method: 'DELETE',
        path: '/agents/:slug',
        pathParams: SlugParams,
        headers: TenantHeaders,
        body: c.noBody(),
        responses: { 204: c.noBody() },
        summary: 'Archive an agent; its conversations stay readable',
      },
    },
    apiOptions,
  ),
  permissions: {
    putAgent: 'agents.write',
    listAgents: 'read',
    getAgent: 'read',
    deleteAgent: 'agents.write',
  },
  agentGrantsReach: ['listAgents'],
  examples: {
    Definition: { summary: 'An agent that tracks orders and hands over to a person', value: definition },
    Agent: { summary: 'An agent and its current version', value: agent },
    AgentStored: {
      summary: 'Stored as version 2, now current, with nothing to warn about',
      value: { ...agent, stored_version: 2, release: release(2, 'activate', 2, { gates: [], evaluation_id: null }), warnings: [] },
    },
    AgentList: { summary: "The tenant's agents", value: { data: [agent] } },
    TrainingBudgetExceeded: {
      summary: 'The router would need more than the training budget',
      value: problem(
        422,
        'Unprocessable Content',
        'training_budget_exceeded',
        'training this router took longer than 30000 ms; use fewer examples or capabilities',
        [{ path: 'capabilities', message: 'training this router took longer than 30000 ms; use fewer examples or capabilities' }],
      ),
    },
  },
  operations: {
    putAgent: { request: ['Definition'], response: ['AgentStored'], problems: { 400: ['ValidationError'], 422: ['TrainingBudgetExceeded'] } },
    listAgents: { response: ['AgentList'] },
    getAgent: { response: ['Agent'], problems: { 404: ['AgentNotFound'] } },
    deleteAgent: { response: [] },
  },
});
