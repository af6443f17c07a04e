// What a tenant uses of its quotas (docs/knowledge.md, "Budgets and quotas").
import { z } from 'zod';

export const Quota = z.object({
  used: z.number().int().nonnegative(),
  limit: z.number().int().min(1).describe("The operator's setting"),
});

export const Usage = z
  .object({
    knowledge: z.object({
      sources: Quota.describe('Knowledge sources (KNOWLEDGE_MAX_SOURCES)'),
      bytes: Quota.describe("Bytes of the sources' files (KNOWLEDGE_MAX_BYTES_MB)"),
      passages: Quota.describe('Passages the sources hold (KNOWLEDGE_MAX_PASSAGES)'),
      syncs_today: Quota.describe('Syncs of web sources started today, UTC (KNOWLEDGE_MAX_SYNCS_PER_DAY)'),
    }),
  })
  .describe("The tenant's use of each quota, beside the operator's limit");
export type Usage = z.infer<typeof Usage>;
