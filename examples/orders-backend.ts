// A small example orders API that the demo agent's HTTP action calls (npm start runs it beside
// the service on 127.0.0.1 and allow-lists it). Orders 100001-100003 exist; 999999 answers 503.
import { createServer, type Server } from 'node:http';

const orders: Record<string, { status: string; shipped_at?: string; eta?: string; items: string[] }> = {
  '100001': { status: 'shipped', shipped_at: '2026-11-18', eta: '2026-11-24', items: ['Blue kettle'] },
  '100002': { status: 'preparing', eta: '2026-11-27', items: ['Oak desk', 'Desk lamp'] },
  '100003': { status: 'delivered', shipped_at: '2026-11-02', eta: '2026-11-05', items: ['Running shoes'] },
};

export function startOrdersBackend(port: number, host = '127.0.0.1'): Promise<Server> {
  const server = createServer((req, res) => {
    const m = /^\/orders\/([^/?]+)/.exec(req.url ?? '');
    res.setHeader('content-type', 'application/json');
    if (!m) {
      res.statusCode = 404;
      return res.end(JSON.stringify({ error: 'not found' }));
    }
    if (m[1] === '999999') {
      res.statusCode = 503;
      return res.end(JSON.stringify({ error: 'order system down' }));
    }
    const order = orders[m[1]];
    if (!order) {
      res.statusCode = 404;
      return res.end(JSON.stringify({ error: 'no such order' }));
    }
    res.end(JSON.stringify({ id: m[1], ...order }));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

// `node dist/examples/orders-backend.js` (the image carries it): the backend on its own, as
// compose.yaml runs it beside the service; HOST and PORT say where (127.0.0.1:3001 by default).
if (import.meta.url === `file://${process.argv[1]}`) {
  const host = process.env.HOST ?? '127.0.0.1';
  const port = Number(process.env.PORT ?? 3001);
  const server = await startOrdersBackend(port, host);
  console.log(`example orders backend listening on ${host}:${port} (orders 100001-100003; 999999 answers 503)`);
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}
