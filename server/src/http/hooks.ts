// The public webhook URLs of messaging channels (/hooks/v1/:channel_id): what Slack, Telegram,
// WhatsApp and Twilio call. No tenant header or API key (providers send none): the unguessable
// channel id selects tenant, agent and channel, and the provider's signature over the raw body is
// checked before anything else (ChannelService.hook). The body is read raw, whatever its type,
// since signatures cover its exact bytes; the answer is whatever the provider expects
// (a challenge, TwiML, an empty 200). Not in the contract: their shapes are the providers'.
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { MethodNotAllowedError } from '../errors.js';
import type { ChannelService } from '../service/channels/service.js';
import { refuseContentEncoding } from './input-guards.js';
import { clientAddress } from './origin.js';

/** Provider webhooks are small (Slack's and WhatsApp's batch a few events at most). */
const HOOK_BODY_LIMIT = 256 * 1024;

export function hooksRouter(channels: ChannelService, publicUrl: string | undefined): Router {
  const router = express.Router();
  // No provider compresses its webhooks: a compressed body is refused (415) before it is read.
  router.use(refuseContentEncoding, express.raw({ type: () => true, limit: HOOK_BODY_LIMIT, inflate: false }));
  router.all('/:id', async (req: Request, res: Response, next: NextFunction) => {
    res.locals.route = '/hooks/v1/:channel_id';
    if (req.method !== 'GET' && req.method !== 'POST' && req.method !== 'HEAD') {
      next(new MethodNotAllowedError(req.method, req.path, ['GET', 'POST']));
      return;
    }
    try {
      // The URL the provider called, as it signed it (Twilio signs the URL): behind a proxy,
      // PUBLIC_URL with its path, as the channel's webhook_url names it.
      const origin = publicUrl ? publicUrl.replace(/\/+$/, '') : `${req.protocol}://${req.get('host') ?? 'localhost'}`;
      const query = Object.fromEntries(Object.entries(req.query).filter((e): e is [string, string] => typeof e[1] === 'string'));
      const answer = await channels.hook(
        String(req.params.id),
        {
          method: req.method === 'HEAD' ? 'GET' : req.method,
          url: `${origin}${req.originalUrl}`,
          headers: req.headers,
          query,
          body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
        },
        clientAddress(req),
      );
      res.status(answer.status);
      if (answer.contentType) res.type(answer.contentType);
      res.send(answer.body ?? '');
    } catch (err) {
      next(err);
    }
  });
  return router;
}
