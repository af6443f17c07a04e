// A streamed converse call's reply, as the turn writes it.
import { cutUtf8 } from '../../lib/utf8.js';

/**
 * A turn's reply sent as it is written: what scripted phases say goes out as it is known (before
 * a model call, and at the end), a model's words as they arrive. When the turn takes back what a
 * failed phase wrote, the stream cannot: the final `done` event carries the reply as stored.
 */
export class ReplyStream {
  private sent = '';
  private fresh = true;
  private bytes = 0;
  /** `maxBytes`: what a turn may say (MAX_REPLY_BYTES); nothing past it is sent, as nothing past it is stored. */
  constructor(
    private readonly out: (text: string) => void,
    private readonly maxBytes: number,
  ) {}

  private emit(text: string): void {
    const room = this.maxBytes - this.bytes;
    if (room <= 0) return;
    const bytes = Buffer.byteLength(text);
    const piece = bytes <= room ? text : cutUtf8(text, room);
    this.bytes += Math.min(bytes, room);
    if (piece) this.out(piece);
  }

  /** Sends what the turn has said beyond what was sent, when it continues it. */
  sync(said: string): void {
    if (said.length > this.sent.length && said.startsWith(this.sent)) {
      this.emit(said.slice(this.sent.length));
      this.sent = said;
    }
  }

  /** A model's reply begins: separated from what was said before, as the stored reply joins them. */
  begin(): void {
    this.fresh = true;
  }

  delta(text: string): void {
    const piece = this.fresh && this.sent ? `\n${text}` : text;
    this.fresh = false;
    this.emit(piece);
    this.sent += piece;
  }
}
