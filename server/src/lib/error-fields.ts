// The fields code reads from a thrown value (Node system errors, driver errors, anything thrown):
// read safely, whatever was thrown.

export interface ErrorFields {
  code?: string;
  name?: string;
  message?: string;
  syscall?: string;
  address?: string;
  port?: number;
}

export function errorFields(err: unknown): ErrorFields {
  if (typeof err !== 'object' || err === null) return {};
  const e = err as Record<string, unknown>;
  const text = (k: string) => (typeof e[k] === 'string' ? e[k] : undefined);
  return {
    code: text('code'),
    name: text('name'),
    message: text('message'),
    syscall: text('syscall'),
    address: text('address'),
    port: typeof e.port === 'number' ? e.port : undefined,
  };
}
