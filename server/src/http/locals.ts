// What the HTTP layer's middleware leaves for later ones on `res.locals`, declared once on
// Express's own `Locals` (as Hono declares its context variables), so every reader is typed and
// no reader casts.
import type { SourceDocument } from '../lib/yaml-source.js';
import type { Actor, Grant } from '@switchboard/contract';
import type { PersonPrincipal } from '../service/people/people-service.js';
import type { KeyPrincipal, PublishableKey } from '../service/keys.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** The API key the request authenticated with (tenant.ts), when it carried one. */
      principal?: KeyPrincipal;
      /** That key's id (auth.ts). */
      keyId?: string;
      /** The person a session cookie stands for (tenant.ts, auth.ts), when the request carried one. */
      person?: PersonPrincipal;
      /** What the caller was granted (auth.ts): the key's or the person's roles, or the owner's behind AUTH_MODE=header. */
      grants?: readonly Grant[];
      /** Who makes the request (auth.ts): a person, a key, or the gateway of AUTH_MODE=header. */
      actor?: Actor;
      /** The contract's path of the route that answered (request-log.ts), for metrics and logs. */
      route?: string;
      /** A YAML body as sent, for the positions of its problems (input-guards.ts). */
      source?: SourceDocument;
      /** The publishable key the widget's CORS looked up (widget.ts), so that the route does not read it again. */
      widgetKey?: { presented: string; key: PublishableKey | null };
    }
  }
}

export {};
