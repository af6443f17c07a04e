// A name server on loopback (UDP), from RFC 1035's message format: it answers A queries for the
// names it is given, says NXDOMAIN for others (and for AAAA, no data), or, as a black hole, reads
// every query and never answers, as a name server that is down or filtered does. It counts queries.
import { createSocket, type Socket } from 'node:dgram';

export interface NameServer {
  /** host:port, for dns.Resolver#setServers. */
  address: string;
  /** Queries received, by name. */
  queries: string[];
  close(): Promise<void>;
}

function questionName(msg: Buffer): { name: string; end: number } {
  const labels: string[] = [];
  let at = 12;
  while (at < msg.length && msg[at] !== 0) {
    const len = msg[at];
    labels.push(msg.toString('latin1', at + 1, at + 1 + len));
    at += 1 + len;
  }
  return { name: labels.join('.').toLowerCase(), end: at + 1 };
}

/** `names`: name → IPv4 address. `blackHole`: never answer anything. */
export async function startNameServer(opts: { names?: Record<string, string>; blackHole?: boolean } = {}): Promise<NameServer> {
  const socket: Socket = createSocket('udp4');
  const queries: string[] = [];
  socket.on('message', (msg, from) => {
    if (msg.length < 17) return;
    const { name, end } = questionName(msg);
    queries.push(name);
    if (opts.blackHole) return;
    const type = msg.readUInt16BE(end);
    const question = msg.subarray(12, end + 4);
    const ip = opts.names?.[name];
    const known = ip !== undefined;
    const answer = known && type === 1;
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    // QR, opcode 0, AA, RD copied; RA; rcode 3 (NXDOMAIN) for an unknown name.
    header.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100) | 0x0080 | (known ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answer ? 1 : 0, 6);
    const parts = [header, question];
    if (answer) {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // the name, as in the question
      rr.writeUInt16BE(1, 2); // A
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6); // TTL
      rr.writeUInt16BE(4, 10);
      ip.split('.').forEach((o, i) => rr.writeUInt8(Number(o), 12 + i));
      parts.push(rr);
    }
    socket.send(Buffer.concat(parts), from.port, from.address);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries,
    close: () => new Promise((r) => socket.close(() => r())),
  };
}
