// Cutting text to a number of UTF-8 bytes without splitting a character: what a reply, a
// streamed reply and a tool result are held to.

/** The longest start of `text` that fits in `maxBytes` UTF-8 bytes, never ending inside a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  return Buffer.from(text)
    .subarray(0, Math.max(0, maxBytes))
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}
