// Multipart uploads (the knowledge resource's files), read with multer after the key has been
// checked: at most one file of `maxFileBytes`, a few short fields, into memory; a file over the
// cap is refused with 413 as soon as its bytes pass it. The file is handed to the contract's
// validation as the body's `file`, and to the handler as `file`.
import type { NextFunction, Request, Response } from 'express';
import multer from 'multer';
import { InputError, PayloadTooLargeError } from '../errors.js';

const FIELD_BYTES = 4096;

function unquoted(v: string): string {
  if (v.length < 2 || !v.startsWith('"') || !v.endsWith('"')) return v;
  try {
    const parsed: unknown = JSON.parse(v);
    return typeof parsed === 'string' ? parsed : v;
  } catch {
    return v;
  }
}

/** The multipart middleware of an upload route whose file field is `field`. */
export function multipartFile(field: string, maxFileBytes: number) {
  const read = multer({
    storage: multer.memoryStorage(),
    limits: { fileSize: maxFileBytes, files: 1, fields: 10, fieldSize: FIELD_BYTES, parts: 12, headerPairs: 100 },
  }).single(field);
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!req.is('multipart/form-data')) {
      next(new InputError('The body must be multipart/form-data', [{ path: 'header.content-type', message: 'multipart/form-data with a `file` part' }]));
      return;
    }
    read(req, res, (err: unknown) => {
      if (err instanceof multer.MulterError) {
        if (err.code === 'LIMIT_FILE_SIZE') {
          next(new PayloadTooLargeError(`The file is larger than ${maxFileBytes} bytes`, `body.${field}`, `at most ${maxFileBytes} bytes`));
        } else {
          const which = err.field ? `body.${err.field}` : 'body';
          next(new InputError(`The multipart body is refused: ${err.message.toLowerCase()}`, [{ path: which, message: err.message }]));
        }
        return;
      }
      if (err) {
        next(new InputError('The multipart body could not be read', [{ path: 'body', message: (err as Error).message.slice(0, 200) }]));
        return;
      }
      if (!req.file) {
        next(new InputError(`The body has no file part named "${field}"`, [{ path: `body.${field}`, message: 'required: the document, as a file part' }]));
        return;
      }
      // The typed client (ts-rest) sends every field but files JSON-encoded; curl and forms send
      // them as they are. A field that is a JSON string is read as that string.
      const fields: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(req.body as Record<string, unknown>)) fields[k] = typeof v === 'string' ? unquoted(v) : v;
      // Validation sees the file where the contract puts it.
      req.body = { ...fields, [field]: req.file };
      next();
    });
  };
}
