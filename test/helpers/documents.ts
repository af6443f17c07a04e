// Real documents for the knowledge tests, made here: PDFs (pdf-lib) with headings set larger than
// their text, Word documents (docx) with heading styles, and hostile ones (a zip that inflates far
// past its size, a PDF of many pages).
import { Document, HeadingLevel, Packer, Paragraph } from 'docx';
import JSZip from 'jszip';
import { PDFDocument } from 'pdf-lib';
import { writePdf, type PdfPage } from '../../examples/knowledge/pdf.js';

export type Page = PdfPage;

/** A PDF with one page per entry: its heading at 18 pt, its paragraphs at 11 pt with a blank line between. */
export const pdf = (pages: Page[], title?: string): Promise<Uint8Array> => writePdf(pages, title);

/** A PDF of `n` empty pages. */
export async function manyPages(n: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < n; i++) doc.addPage([200, 200]);
  return doc.save();
}

/** A Word document: each section's heading as Heading 1, then its paragraphs. */
export async function docx(sections: Page[]): Promise<Uint8Array> {
  const doc = new Document({
    sections: [
      {
        children: sections.flatMap((s) => [
          ...(s.heading ? [new Paragraph({ text: s.heading, heading: HeadingLevel.HEADING_1 })] : []),
          ...s.paragraphs.map((t) => new Paragraph({ text: t })),
        ]),
      },
    ],
  });
  return new Uint8Array(await Packer.toBuffer(doc));
}

/** A zip of the given parts. */
export function zipOf(parts: Record<string, string>): Promise<Uint8Array> {
  const zip = new JSZip();
  for (const [name, body] of Object.entries(parts)) zip.file(name, body);
  return zip.generateAsync({ type: 'uint8array', compression: 'DEFLATE' });
}

/** A zip named like a Word document whose document part inflates to `bytes` of spaces. */
export async function zipBomb(bytes: number): Promise<Uint8Array> {
  const zip = new JSZip();
  zip.file('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>');
  zip.file('word/document.xml', Buffer.alloc(bytes, 0x20));
  return zip.generateAsync({ type: 'uint8array', compression: 'DEFLATE', compressionOptions: { level: 9 } });
}
