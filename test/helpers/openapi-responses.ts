// The committed openapi.json as the test suite checks responses against it
// (server/src/lib/openapi-check.ts; test/setup/openapi-check.ts hooks it into supertest and fetch).
import { readFileSync } from 'node:fs';
import { OpenApiChecker, type Operation, type Received } from '../../server/src/lib/openapi-check.js';

const checker = new OpenApiChecker(JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as Record<string, unknown>);

export const OPERATIONS = checker.operations;
export const operationOf = (method: string, url: string): Operation | undefined => checker.operationOf(method, url);
export const checkResponse = (r: Received): string | null => checker.checkResponse(r);
export const checkRequestBody = (op: Operation, media: string, body: unknown): string[] => checker.checkRequestBody(op, media, body);
