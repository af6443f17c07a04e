// An agent's webhook deliveries and their attempts, for its owner.
import type { Database } from '../../store/db.js';
import { listDeliveries } from '../../store/webhook-store.js';
import type { AgentService } from '../agents/agent-service.js';

export class WebhookLog {
  constructor(
    private readonly db: Database,
    private readonly agents: AgentService,
  ) {}

  async list(tenantId: string, slug: string, q: Parameters<typeof listDeliveries>[3]) {
    const agent = await this.agents.any(tenantId, slug);
    return listDeliveries(this.db.knex, tenantId, agent.id, q);
  }
}
