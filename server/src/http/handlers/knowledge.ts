// The knowledge resource's handlers (contract/src/resources/knowledge.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import { KnowledgeService } from '../../service/knowledge/knowledge-service.js';
import type { Services } from '../../services.js';
import { multipartFile } from '../upload.js';

const s = initServer();

export const knowledgeHandlers = ({ knowledge, sites }: Services) =>
  s.router(RESOURCES.knowledge.routes, {
    putSource: {
      middleware: [multipartFile('file', knowledge.maxFileBytes)],
      handler: async ({ headers, params, body, file }) => {
        const f = file as Express.Multer.File;
        const { title, url, language, tags } = body;
        const source = await knowledge.upload(
          headers['tenant-id'],
          params.source,
          { title, url, language, tags },
          { bytes: f.buffer, filename: f.originalname || null, mediaType: f.mimetype || null },
        );
        return { status: 202, body: source };
      },
    },
    putSite: async ({ headers, params, body }) => ({ status: 202, body: await sites.put(headers['tenant-id'], params.source, body) }),
    syncSource: async ({ headers, params }) => ({ status: 202, body: await sites.syncNow(headers['tenant-id'], params.source) }),
    listPages: async ({ headers, params, query }) => ({ status: 200, body: await sites.pages(headers['tenant-id'], params.source, query) }),
    listSources: async ({ headers, query }) => ({ status: 200, body: await knowledge.list(headers['tenant-id'], query) }),
    getSource: async ({ headers, params }) => ({ status: 200, body: await knowledge.get(headers['tenant-id'], params.source) }),
    deleteSource: async ({ headers, params }) => {
      await knowledge.delete(headers['tenant-id'], params.source);
      return { status: 204, body: undefined };
    },
    listPassages: async ({ headers, params, query }) => ({ status: 200, body: await knowledge.passages(headers['tenant-id'], params.source, query) }),
    searchKnowledge: async ({ headers, query }) => {
      const { found } = await knowledge.search(headers['tenant-id'], KnowledgeService.selector(query.sources), query.q, query.limit);
      return {
        status: 200,
        body: {
          data: found.map((f) => ({
            id: f.passage.id,
            source: f.passage.source!.name,
            page: f.passage.source!.page,
            heading: f.passage.title,
            text: f.passage.text,
            title: f.passage.source!.title,
            url: f.passage.source!.url,
            score: f.score,
            confidence: f.confidence,
          })),
        },
      };
    },
  });
