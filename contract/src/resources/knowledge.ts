// Knowledge: the tenant's documents, read into passages that agents answer from and cite
import { z } from 'zod';
import { Problem, TenantHeaders } from '../common.js';
import {
  KnowledgeSearchQuery,
  KnowledgeSource,
  PassagePage,
  PassagesQuery,
  SearchResult,
  SourceName,
  SourcePage,
  SourcesQuery,
  SourceUpload,
} from '../knowledge.js';
import { initContract } from '@ts-rest/core';
import { apiOptions, apiResource } from '../resource.js';
import { T0, T1 } from '../examples/fixtures.js';

const c = initContract();

const HELP = {
  name: 'help-centre',
  title: 'Acme help centre',
  url: 'https://help.example.com/acme-help-centre.pdf',
  language: 'en',
  tags: ['help'],
  filename: 'acme-help-centre.pdf',
  kind: 'pdf',
  state: 'indexed',
  error: null,
  bytes: 3265,
  pages: 3,
  passages: 6,
  sha256: '5b0d3c4e9d1f0b1b1c7f4f6d0f3e8e1c2a0d9b7e6c5a4f3e2d1c0b9a8f7e6d5c',
  revision: 1,
  created_at: T0,
  updated_at: T1,
  indexed_at: T1,
};
const REFUNDS = {
  id: 'help-centre#3',
  source: 'help-centre',
  page: 2,
  heading: 'Refunds',
  text: 'Refunds go back to the card you paid with within 5 business days of the return reaching our warehouse.',
};

export const knowledge = apiResource({
  tag: 'Knowledge',
  description: "The tenant's documents (PDF, DOCX, HTML, Markdown, text), read into passages that agents answer from and cite (docs/knowledge.md)",
  routes: c.router(
    {
      putSource: {
        method: 'PUT',
        path: '/knowledge/sources/:source',
        pathParams: z.object({ source: SourceName }),
        headers: TenantHeaders,
        contentType: 'multipart/form-data',
        body: SourceUpload,
        responses: {
          202: KnowledgeSource.describe('The source, `parsing`: read it again for `indexed` or `failed`'),
          422: Problem.describe('Over a quota of the tenant (`limit_exceeded`): sources, bytes or passages'),
        },
        summary: 'Upload a document as a knowledge source, or replace the file of one (multipart/form-data: `file` and the fields)',
      },
      listSources: {
        method: 'GET',
        path: '/knowledge/sources',
        headers: TenantHeaders,
        query: SourcesQuery,
        responses: { 200: SourcePage },
        summary: "List the tenant's knowledge sources",
      },
      getSource: {
        method: 'GET',
        path: '/knowledge/sources/:source',
        pathParams: z.object({ source: SourceName }),
        headers: TenantHeaders,
        responses: { 200: KnowledgeSource },
        summary: 'Read a knowledge source: its state, pages and passages',
      },
      deleteSource: {
        method: 'DELETE',
        path: '/knowledge/sources/:source',
        pathParams: z.object({ source: SourceName }),
        headers: TenantHeaders,
        body: c.noBody(),
        responses: { 204: c.noBody() },
        summary: 'Delete a knowledge source: its passages stop answering at once',
      },
      listPassages: {
        method: 'GET',
        path: '/knowledge/sources/:source/passages',
        pathParams: z.object({ source: SourceName }),
        headers: TenantHeaders,
        query: PassagesQuery,
        responses: { 200: PassagePage },
        summary: "Read a knowledge source's passages",
      },
      searchKnowledge: {
        method: 'GET',
        path: '/knowledge/search',
        headers: TenantHeaders,
        query: KnowledgeSearchQuery,
        responses: { 200: SearchResult },
        summary: "Search the tenant's knowledge as an agent's answer phase does",
      },
    },
    apiOptions,
  ),
  scopes: {
    putSource: 'admin',
    listSources: 'read',
    getSource: 'read',
    deleteSource: 'admin',
    listPassages: 'read',
    searchKnowledge: 'read',
  },
  examples: {
    SourceUpload: {
      summary: 'A PDF help page, cited with its public link',
      value: { file: '(the PDF)', title: 'Acme help centre', url: HELP.url, language: 'en', tags: 'help' },
    },
    SourceParsing: {
      summary: 'Accepted: being read',
      value: { ...HELP, state: 'parsing', kind: null, pages: null, passages: 0, indexed_at: null, updated_at: T0 },
    },
    Source: { summary: 'Read and answering', value: HELP },
    SourceList: { summary: "The tenant's sources", value: { data: [HELP], next_cursor: null } },
    PassageList: { summary: 'Passages in document order', value: { data: [REFUNDS], next_cursor: null } },
    SearchResult: {
      summary: 'The best passage for "how long does a refund take?"',
      value: { data: [{ ...REFUNDS, title: HELP.title, url: HELP.url, score: 6.12, confidence: 0.83 }] },
    },
  },
  operations: {
    putSource: { request: ['SourceUpload'], response: ['SourceParsing'] },
    listSources: { response: ['SourceList'] },
    getSource: { response: ['Source'] },
    deleteSource: { response: [] },
    listPassages: { response: ['PassageList'] },
    searchKnowledge: { response: ['SearchResult'] },
  },
});
