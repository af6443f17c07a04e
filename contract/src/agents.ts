// Agent resources (beyond the seed): definitions, versions and capability ids.
import { z } from 'zod';
import { Timestamp } from './common.js';
import { AgentDefinition } from './definition.js';

export const Agent = z
  .object({
    id: z.string().uuid(),
    slug: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    version: z.number().int().describe('Current version; every changed definition makes a new one'),
    capabilities: z.array(z.object({ id: z.string().uuid(), name: z.string(), description: z.string().nullable() })),
    definition: AgentDefinition,
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .describe('An agent and its current definition');
export type Agent = z.infer<typeof Agent>;
