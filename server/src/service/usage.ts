// A tenant's use of its quotas beside the operator's limits (GET /api/v1/usage): what each
// feature with a per-tenant quota reports of itself.
import type { Usage } from '@switchboard/contract';
import type { KnowledgeService } from './knowledge/knowledge-service.js';

export class UsageService {
  constructor(private readonly knowledge: KnowledgeService) {}

  async of(tenantId: string): Promise<Usage> {
    return { knowledge: await this.knowledge.usage(tenantId) };
  }
}
