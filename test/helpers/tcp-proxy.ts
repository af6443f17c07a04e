// A TCP proxy on loopback that a test can cut and restore, to take a database away and back.
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface Proxy {
  port: number;
  /** Refuses and resets: the database is gone, and says so. */
  cut(): void;
  /** Swallows: connections stay open and accept bytes, but nothing is forwarded either way (a network black hole). */
  blackhole(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startProxy(targetHost: string, targetPort: number): Promise<Proxy> {
  let up = true;
  let hole = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    if (hole) return void client.resume(); // accepted, read, never answered
    if (!up) return client.destroy();
    const upstream = connect(targetPort, targetHost);
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => upstream.destroy());
    // Forwarded by hand, so that a black hole can start swallowing mid-connection.
    client.on('data', (d) => void (hole || upstream.write(d)));
    upstream.on('data', (d) => void (hole || client.write(d)));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      up = false;
      for (const s of sockets) s.destroy();
    },
    blackhole() {
      hole = true;
    },
    restore() {
      up = true;
      hole = false;
      // Connections that lived through the black hole are out of step with the server: end them.
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
