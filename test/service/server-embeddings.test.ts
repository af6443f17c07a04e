// The training texts' embeddings in batches the model gate accepts.
import { describe, expect, it } from 'vitest';
import { estimateTextTokens } from '../../server/src/engine/tokens.js';
import type { ModelGate } from '../../server/src/service/model-gate.js';
import { ServerEmbeddings } from '../../server/src/service/agents/server-embeddings.js';

describe('ServerEmbeddings.embedTexts', () => {
  it('keeps every batch under the input cap as the gate counts it, short texts included', async () => {
    const cap = 10;
    const batches: string[][] = [];
    const gate = {
      // The gate's own rule: each text's estimate, summed, within the cap.
      embed: (_tenant: string, req: { texts: string[] }) => {
        const input = req.texts.reduce((n, t) => n + estimateTextTokens(t), 0);
        if (input > cap) return Promise.reject(new Error(`over the cap: ${input}`));
        batches.push(req.texts);
        return Promise.resolve({ dims: 2, vectors: req.texts.map(() => new Float32Array([1, 1])), inputTokens: input, estimated: true, model: 'e' });
      },
    } as unknown as ModelGate;
    const embeddings = new ServerEmbeddings(() => gate, { model: 'e', timeoutMs: 1000, maxInputTokens: cap });
    // Five characters each: two tokens apiece, though forty of them are only 200 characters.
    const texts = Array.from({ length: 40 }, (_, i) => `t${String(i).padStart(4, '0')}`);
    const table = await embeddings.embedTexts('t', texts);
    expect(table.texts).toEqual(texts);
    expect(table.data).toHaveLength(80);
    expect(batches.every((b) => b.length === 5)).toBe(true);
    expect(batches.flat()).toEqual(texts);
  });
});
