// A pretend shop's page with the web chat widget on it, which `npm start` serves on a second local
// origin (127.0.0.1:3002, EXAMPLE_SHOP_PORT) so that the widget meets real CORS, as on a customer's
// site. The page has a strict content security policy: only the service's script and calls. It
// also serves the shop's help centre PDF (examples/knowledge/), which the agent's answers link to,
// and a small help site (robots.txt, a sitemap and three pages with ETags) that `npm start` syncs
// as the web knowledge source "shop-help".
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';

/** Where the shop page serves its help centre PDF. */
export const HELP_CENTRE_PATH = '/acme-help-centre.pdf';
const helpCentre = readFileSync(new URL('./knowledge/acme-help-centre.pdf', import.meta.url));

/** Where the shop page serves its help site's sitemap. */
export const SITEMAP_PATH = '/sitemap.xml';

/** The help site's pages: path, title and paragraphs. */
const HELP_PAGES: [string, string, string[]][] = [
  [
    '/help/delivery',
    'Delivery abroad',
    [
      'We deliver to every country of the European Union, to Norway and to Switzerland.',
      'Delivery abroad takes five to eight business days and costs 9.90 euros, free for orders over 150 euros.',
    ],
  ],
  ['/help/shops', 'Our shops', ['Our shops open at 9 am and close at 7 pm, Monday to Saturday.', 'Every shop takes returns of orders made online.']],
  ['/help/contact', 'Contact us', ['Our support team answers by chat and by email from 8 am to 8 pm, Monday to Saturday.']],
];

function helpPage(title: string, paragraphs: string[]): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>
<body><nav><a href="/">Shop</a> · ${HELP_PAGES.map(([path, t]) => `<a href="${path}">${t}</a>`).join(' · ')}</nav>
<main><article><h1>${title}</h1>${paragraphs.map((p) => `<p>${p}</p>`).join('')}</article></main></body></html>
`;
}

/** The help site's files by path: robots.txt, the sitemap and the pages, each with its ETag. */
function helpSite(origin: string): Map<string, { type: string; body: string; etag: string }> {
  const files = new Map<string, { type: string; body: string }>([
    ['/robots.txt', { type: 'text/plain', body: `User-agent: *\nDisallow: /checkout\nSitemap: ${origin}${SITEMAP_PATH}\n` }],
    [
      SITEMAP_PATH,
      {
        type: 'application/xml',
        body: `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${HELP_PAGES.map(([path]) => `  <url><loc>${origin}${path}</loc></url>\n`).join('')}</urlset>\n`,
      },
    ],
    ...HELP_PAGES.map(([path, title, paragraphs]): [string, { type: string; body: string }] => [
      path,
      { type: 'text/html; charset=utf-8', body: helpPage(title, paragraphs) },
    ]),
  ]);
  return new Map([...files].map(([path, f]) => [path, { ...f, etag: `"${createHash('sha256').update(f.body).digest('hex').slice(0, 16)}"` }]));
}

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
  let help: ReturnType<typeof helpSite> = new Map();
  const server = createServer((req, res) => {
    const file = help.get((req.url ?? '/').split('?')[0]!);
    if (file) {
      if (req.headers['if-none-match'] === file.etag) res.writeHead(304, { etag: file.etag }).end();
      else res.writeHead(200, { 'content-type': file.type, etag: file.etag }).end(file.body);
      return;
    }
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
      const origin = `http://${host}:${typeof addr === 'object' && addr ? addr.port : port}`;
      help = helpSite(origin);
      resolve({ server, origin, show });
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
