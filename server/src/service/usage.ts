// A tenant's use of its quotas beside the operator's limits (GET /api/v1/usage): what each
// feature with a per-tenant quota reports of itself.
import type { Usage } from '@switchboard/contract';
import type { KnowledgeService } from './knowledge/knowledge-service.js';
import type { KnowledgeSites } from './knowledge/sites.js';

export class UsageService {
  constructor(
    private readonly knowledge: KnowledgeService,
    private readonly sites: KnowledgeSites,
  ) {}

  async of(tenantId: string): Promise<Usage> {
    const [knowledge, syncs] = await Promise.all([this.knowledge.usage(tenantId), this.sites.syncsToday(tenantId)]);
    return { knowledge: { ...knowledge, syncs_today: syncs } };
  }
}
