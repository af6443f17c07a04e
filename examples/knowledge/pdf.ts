// Writes a PDF of pages, each with its heading set at 18 pt and its paragraphs at 11 pt (as a help
// centre's export would be), with pdf-lib: the example help centre (make-help-centre.ts) and the
// tests' documents are made with it.
import { PDFDocument, StandardFonts } from 'pdf-lib';

export interface PdfPage {
  heading?: string;
  paragraphs: string[];
}

/** Lines of at most `width` characters, cut at spaces. */
function wrap(text: string, width = 88): string[] {
  const out: string[] = [];
  let line = '';
  for (const w of text.split(' ')) {
    if (line && line.length + 1 + w.length > width) {
      out.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) out.push(line);
  return out;
}

/** The PDF's bytes; `fixed`: its dates set to one instant, so that the same pages make the same file. */
export async function writePdf(pages: PdfPage[], title?: string, fixed?: Date): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  for (const p of pages) {
    const page = doc.addPage([595, 842]);
    let y = 780;
    if (p.heading) {
      page.drawText(p.heading, { x: 50, y, size: 18, font: bold });
      y -= 34;
    }
    for (const para of p.paragraphs) {
      for (const line of wrap(para)) {
        page.drawText(line, { x: 50, y, size: 11, font });
        y -= 15;
      }
      y -= 10;
    }
  }
  if (title) doc.setTitle(title);
  if (fixed) {
    doc.setCreationDate(fixed);
    doc.setModificationDate(fixed);
  }
  return doc.save({ useObjectStreams: false });
}
