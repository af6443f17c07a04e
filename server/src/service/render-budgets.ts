// What template rendering each turn may spend, live or offline (test conversations, replays):
// one turn's budget (RENDER_BUDGET_MS and the rest), and each tenant's share of rendering time
// per second in this process (RENDER_TENANT_MS_PER_SECOND), so one tenant's heavy templates,
// through whichever surface, cannot fill the event loop.
import { RenderBudget, type RenderBudgetOptions } from '../engine/templates.js';
import { TimeBuckets } from '../lib/time-bucket.js';
import type { TurnBudgets } from './evaluations/offline-conversation.js';

export class RenderBudgets {
  private readonly shares: TimeBuckets;

  constructor(
    private readonly perTurn: RenderBudgetOptions,
    tenantMsPerSecond: number,
  ) {
    // Bursts up to four turns' budget.
    this.shares = new TimeBuckets(tenantMsPerSecond, Math.max(perTurn.timeMs * 4, tenantMsPerSecond));
  }

  /** A turn's budget: the per-turn allowance, or what is left of the tenant's share if less. */
  forTurn(tenantId: string): RenderBudget {
    return new RenderBudget({ ...this.perTurn, timeMs: Math.min(this.perTurn.timeMs, this.shares.available(tenantId)) });
  }

  /** Charges the tenant's share with what a turn spent. */
  charge(tenantId: string, budget: RenderBudget): void {
    this.shares.charge(tenantId, budget.spentMs);
  }

  /** The tenant's budgets for offline turns (test conversations, replays). */
  of(tenantId: string): TurnBudgets {
    return { forTurn: () => this.forTurn(tenantId), charge: (b) => this.charge(tenantId, b) };
  }
}
