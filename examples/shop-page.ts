// A pretend shop's page with the web chat widget on it, which `npm start` serves on a second local
// origin (127.0.0.1:3002, EXAMPLE_SHOP_PORT) so that the widget meets real CORS, as on a customer's
// site. The page has a strict content security policy: only the service's script and calls. It
// also serves the shop's help centre PDF (examples/knowledge/), which the agent's answers link to.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';

/** Where the shop page serves its help centre PDF. */
export const HELP_CENTRE_PATH = '/acme-help-centre.pdf';
const helpCentre = readFileSync(new URL('./knowledge/acme-help-centre.pdf', import.meta.url));

export interface ShopPage {
  server: Server;
  /** The page's origin, for the key to allow (the port it got when asked for 0). */
  origin: string;
  /** Puts the widget on the page: the service's URL, the agent and the publishable key. */
  show(widget: { service: string; agent: string; key: string }): void;
}

export function startShopPage(port: number, host = '127.0.0.1'): Promise<ShopPage> {
  let page: { html: string; csp: string } | null = null;
  const show = (widget: { service: string; agent: string; key: string }) => {
    const csp = `default-src 'none'; script-src ${widget.service}; connect-src ${widget.service}; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'`;
    page = { html: render(widget), csp };
  };
  const server = createServer((req, res) => {
    if ((req.url ?? '/').split('?')[0] === HELP_CENTRE_PATH) {
      res.writeHead(200, { 'content-type': 'application/pdf', 'cache-control': 'no-cache' }).end(helpCentre);
      return;
    }
    if ((req.url ?? '/').split('?')[0] !== '/' || !page) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': page.csp, 'cache-control': 'no-cache' });
    res.end(page.html);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address();
      resolve({ server, origin: `http://${host}:${typeof addr === 'object' && addr ? addr.port : port}`, show });
    });
  });
}

function render(widget: { service: string; agent: string; key: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Acme shop (Switchboard demo)</title>
<style>
  body { font: 16px/1.5 Georgia, serif; margin: 0; color: #222; background: #faf7f2; }
  header { background: #2d2a26; color: #faf7f2; padding: 16px 24px; }
  main { max-width: 760px; margin: 24px auto; padding: 0 16px; }
  .products { display: grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr)); gap: 16px; }
  .product { background: #fff; border: 1px solid #e4ddd2; border-radius: 8px; padding: 16px; }
</style>
</head>
<body>
<header><strong>Acme shop</strong> · a pretend page of a customer's site</header>
<main>
  <h1>Kettles, desks and running shoes</h1>
  <p>This page is served from another origin than Switchboard, as a customer's site would be. The
  chat in the corner is the web chat widget, pasted in with one script tag. Ask it
  "where is my order?" (try 100001), or to talk to a person.</p>
  <div class="products">
    <div class="product"><h2>Blue kettle</h2><p>1.7 litres, €39</p></div>
    <div class="product"><h2>Oak desk</h2><p>140 × 70 cm, €420</p></div>
    <div class="product"><h2>Running shoes</h2><p>Sizes 36–47, €89</p></div>
  </div>
</main>
<script src="${widget.service}/widget/v1.js" data-agent="${widget.agent}" data-key="${widget.key}" async></script>
</body>
</html>
`;
}
