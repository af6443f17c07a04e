// The problems callers meet most, shared by several resources' operations.
import { problem } from './fixtures.js';
import type { OpenApiExample } from '../resource.js';

export const problemExamples = {
  ValidationError: {
    summary: 'A body the contract refuses',
    value: problem(400, 'Bad Request', 'validation_error', 'The request is not valid', [{ path: 'message', message: 'Required' }]),
  },
  TenantRequired: {
    summary: 'No tenant-id header',
    value: problem(400, 'Bad Request', 'tenant_required', 'The tenant-id header is required', [{ path: 'header.tenant-id', message: 'required' }]),
  },
  Unauthorized: { summary: 'No key, or a wrong one (AUTH_MODE=api_key)', value: problem(401, 'Unauthorized', 'unauthorized', 'A valid API key is required') },
  AgentNotFound: { summary: 'No such agent for this tenant', value: problem(404, 'Not Found', 'agent_not_found', 'No agent "acme-suport"') },
  LimitExceeded: {
    summary: 'The conversation reached its turn limit',
    value: problem(422, 'Unprocessable Content', 'limit_exceeded', 'The conversation has reached its limit of 200 turns', [
      { path: 'conversation_id', message: 'The conversation has reached its limit of 200 turns' },
    ]),
  },
  ConversationClosed: { summary: 'The conversation has ended', value: problem(409, 'Conflict', 'conversation_closed', 'The conversation is completed') },
} satisfies Record<string, OpenApiExample>;
