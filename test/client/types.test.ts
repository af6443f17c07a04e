import { describe, expectTypeOf, it } from 'vitest';
import { createSwitchboardClient, type ConverseResponse, type ConversationRecord } from '../../client/src/index.js';

describe('typed client', () => {
  it('types requests and responses from the contract', () => {
    const sb = createSwitchboardClient({ baseUrl: 'http://127.0.0.1:1', tenantId: 'demo' });
    type Converse = Awaited<ReturnType<typeof sb.api.converse>>;
    expectTypeOf<Extract<Converse, { status: 200 }>['body']>().toEqualTypeOf<ConverseResponse>();
    expectTypeOf<Extract<Awaited<ReturnType<typeof sb.api.getHistory>>, { status: 200 }>['body']>().toEqualTypeOf<ConversationRecord>();
    expectTypeOf(sb.api.converse).parameter(0).toHaveProperty('body');
    // @ts-expect-error a message is required
    void (() => sb.api.converse({ params: { slug: 'x' }, body: {} }));
  });
});
