// The review inbox's hourly cap per agent (REVIEW_MAX_PER_AGENT_HOUR, docs/improving.md): a
// turn's findings past the agent's share of the hour are left out of its write and counted as
// `capped_hour` rows of agent_closes, which the inbox shows. Counted for all replicas through the
// shared limits (Redis when REDIS_URL is set); only turns with a finding spend from it. The cap
// per conversation needs no count of its own: the conversation keeps it (turn-write.ts).
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { TurnWrite } from '../../store/conversations/conversation-store.js';
import type { Limits } from '../limits.js';
import { cappedDelta } from '../agents/agent-stats.js';

export class ReviewHourlyCap {
  private readonly limiter: RateLimiterAbstract;

  constructor(
    limits: Limits,
    private readonly perAgentHour: number,
  ) {
    this.limiter = limits.limiter({ name: 'review-findings', points: Math.max(1, perAgentHour), seconds: 3600 });
  }

  /** Keeps `write`'s findings within the agent's share of the hour; the rest are counted, not kept. */
  async apply(tenantId: string, agentId: string, write: TurnWrite, now: string): Promise<void> {
    const findings = write.review ?? [];
    let room = findings.length;
    if (this.perAgentHour === 0) room = 0;
    else {
      try {
        await this.limiter.consume(`${tenantId}:${agentId}`, findings.length);
      } catch (e) {
        if (!(e instanceof RateLimiterRes)) throw e;
        room = Math.max(0, this.perAgentHour - (e.consumedPoints - findings.length));
      }
    }
    if (room >= findings.length) return;
    write.review = findings.slice(0, room);
    write.closes = [...(write.closes ?? []), cappedDelta('capped_hour', now, write.conversation.agentVersion, findings.length - room)];
  }
}
