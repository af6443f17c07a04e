// People: who signs in with the tenant's OpenID provider, their roles and sessions, and who the caller is
import { z } from 'zod';
import { TenantHeaders, Uuid } from '../common.js';
import { CallerIdentity, PersonList, PersonRoles, Person, PersonSessionList } from '../people.js';
import { initContract } from '@ts-rest/core';
import { apiOptions, apiResource } from '../resource.js';
import { KEY, T0, T1 } from '../examples/fixtures.js';

const c = initContract();

const PERSON = '6b0f3c1e-2d4a-4f5b-8c7d-9e0a1b2c3d4e';
const dana = {
  id: PERSON,
  issuer: 'https://login.example.com/realms/acme',
  subject: 'f3a9c2d1-7b4e-4e0a-9d2c-5a6b7c8d9e0f',
  email: 'dana@acme.example',
  name: 'Dana Ruiz',
  roles: [{ role: 'operator', agents: ['acme-support'] }],
  created_at: T0,
  last_sign_in_at: T1,
  disabled_at: null,
};
const PersonParams = z.object({ id: Uuid.describe('Person id') });

export const people = apiResource({
  tag: 'People',
  description: "People who sign in with the tenant's OpenID provider, their roles and sessions, and who the caller is (docs/people.md)",
  routes: c.router(
    {
      getIdentity: {
        method: 'GET',
        path: '/me',
        headers: TenantHeaders,
        responses: { 200: CallerIdentity },
        summary: 'Who the caller is, their roles and permissions, and (a person) the CSRF token of their session',
      },
      listPeople: {
        method: 'GET',
        path: '/people',
        headers: TenantHeaders,
        responses: { 200: PersonList.describe("The tenant's people, first signed in first") },
        summary: "List the tenant's people with their roles",
      },
      putPersonRoles: {
        method: 'PUT',
        path: '/people/:id/roles',
        pathParams: PersonParams,
        headers: TenantHeaders,
        body: PersonRoles,
        responses: { 200: Person },
        summary: "Set a person's roles",
        description:
          "Takes effect on the person's next request on every replica. Without any role (here or from the provider's groups) the person's sessions end.",
      },
      listPersonSessions: {
        method: 'GET',
        path: '/people/:id/sessions',
        pathParams: PersonParams,
        headers: TenantHeaders,
        responses: { 200: PersonSessionList.describe("The person's live sessions, newest first") },
        summary: "List a person's live sessions",
      },
      endPersonSessions: {
        method: 'DELETE',
        path: '/people/:id/sessions',
        pathParams: PersonParams,
        headers: TenantHeaders,
        body: c.noBody(),
        responses: { 204: c.noBody() },
        summary: 'End every session of a person at once, on every replica',
      },
    },
    apiOptions,
  ),
  permissions: {
    getIdentity: 'self',
    listPeople: 'people.manage',
    putPersonRoles: 'people.manage',
    listPersonSessions: 'people.manage',
    endPersonSessions: 'people.manage',
  },
  agentGrantsReach: ['getIdentity'],
  examples: {
    PersonIdentity: {
      summary: 'A signed-in operator of one agent',
      value: {
        tenant_id: 'acme',
        actor: { kind: 'person', issuer: dana.issuer, subject: dana.subject, email: dana.email },
        roles: dana.roles,
        permissions: ['read', 'conversations.reply', 'self'],
        csrf_token: 'pJx3yq0h5mQeV9rT2wZb8nK4cLfA7sD1uGiO6vYe3Hw',
        session_expires_at: '2026-11-25T10:05:42.033Z',
      },
    },
    KeyIdentity: {
      summary: 'A key that reads',
      value: {
        tenant_id: 'acme',
        actor: { kind: 'key', id: KEY },
        roles: [{ role: 'viewer' }],
        permissions: ['read', 'self'],
        csrf_token: null,
        session_expires_at: null,
      },
    },
    PersonList: { summary: 'One person', value: { data: [dana] } },
    PersonRolesRequest: {
      summary: 'Operator of the support agent, viewer of the rest',
      value: { roles: [{ role: 'operator', agents: ['acme-support'] }, { role: 'viewer' }] },
    },
    PersonWithRoles: {
      summary: 'The person with the roles set',
      value: { ...dana, roles: [{ role: 'operator', agents: ['acme-support'] }, { role: 'viewer' }] },
    },
    PersonSessions: {
      summary: 'One session',
      value: { data: [{ id: '0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a', created_at: T1, seen_at: T1, expires_at: '2026-11-25T10:05:42.033Z' }] },
    },
  },
  operations: {
    getIdentity: { response: ['PersonIdentity', 'KeyIdentity'] },
    listPeople: { response: ['PersonList'] },
    putPersonRoles: { request: ['PersonRolesRequest'], response: ['PersonWithRoles'] },
    listPersonSessions: { response: ['PersonSessions'] },
    endPersonSessions: { response: [] },
  },
});
