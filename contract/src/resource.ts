// What a resource of the contract is: its routes, the tag and description the OpenAPI document
// files them under, the permission each needs (access.ts), and the examples of each operation.
// One file per resource in resources/; index.ts composes them. Every mapped type below is keyed
// by the resource's own routes, so a route without a permission or examples does not compile.
import type { AppRouter } from '@ts-rest/core';
import { z } from 'zod';
import { commonErrors, Problem, Slug, Uuid } from './common.js';
import { ChannelKind } from './channels.js';
import type { Permission } from './access.js';

export interface OpenApiExample {
  summary: string;
  value: unknown;
}

/** An operation's examples by name: its request body's, its success response's, its usual problems' by status. */
export interface OperationExamples<Name extends string = string> {
  readonly request?: readonly Name[];
  readonly response: readonly Name[];
  readonly problems?: { readonly [status: number]: readonly Name[] };
}

export interface ResourceParts<R extends AppRouter, E extends Record<string, OpenApiExample>, O extends { [K in keyof R]: OperationExamples }> {
  /** The OpenAPI tag of every route here. */
  tag: string;
  description: string;
  routes: R;
  /** Examples by their name in components/examples; names are unique across resources. */
  examples: E;
  operations: O;
}

/**
 * A resource under /api/v1: every route names the permission it needs (access.ts). A grant for
 * named agents reaches the routes under /agents/{slug}, and those in `agentGrantsReach`: the
 * caller's own identity, and lists the handler filters to the agents the caller may read.
 */
export const apiResource = <R extends AppRouter, E extends Record<string, OpenApiExample>, const O extends { [K in keyof R]: OperationExamples }>(
  parts: ResourceParts<R, E, O> & { permissions: { [K in keyof R]: Permission }; agentGrantsReach?: readonly (keyof R)[] },
) => parts;

/** A resource outside the API's keys: operations (probes, metrics) and the widget's routes. */
export const publicResource = <R extends AppRouter, E extends Record<string, OpenApiExample>, const O extends { [K in keyof R]: OperationExamples }>(
  parts: ResourceParts<R, E, O>,
) => parts;

export const apiOptions = { pathPrefix: '/api/v1', commonResponses: commonErrors, strictStatusCodes: true } as const;
export const opsOptions = { strictStatusCodes: true } as const;

const widgetProblem = (description: string) => Problem.describe(description);
export const widgetOptions = {
  pathPrefix: '/widget/v1',
  commonResponses: {
    400: widgetProblem('Invalid input (`validation_error`)'),
    401: widgetProblem('A visitor token this service did not sign for the key, or one that has expired (`unauthorized`): ask POST …/visitor for another'),
    403: widgetProblem('The page is not on an origin the key allows, or the key does not name this agent (`forbidden`)'),
    404: widgetProblem('Unknown or revoked key, unknown agent, or a conversation this visitor did not start'),
    413: widgetProblem('Body over the size limit (`payload_too_large`)'),
    415: widgetProblem('A body that is not application/json (`unsupported_media_type`)'),
    429: widgetProblem('A limit of the key, the visitor or the address (`rate_limited`); see retry-after'),
    500: widgetProblem('Unexpected failure (`internal_error`)'),
    503: widgetProblem('The service is unavailable for a moment (`unavailable`); see retry-after'),
  },
  strictStatusCodes: true,
} as const;

export const SlugParams = z.object({ slug: Slug });
export const ConversationParams = z.object({ slug: Slug, id: Uuid.describe('Conversation id') });
export const ChannelParams = z.object({ slug: Slug, channel: ChannelKind });
/** The event id an event stream resumes after (the `last-event-id` header). */
export const LastEventId = z
  .string()
  .regex(/^\d{1,18}-\d{1,6}$/, 'must be an event id such as 42-3')
  .optional()
  .describe('Resume after this event');
