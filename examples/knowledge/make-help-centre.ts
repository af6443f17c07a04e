// Writes acme-help-centre.pdf, the example help page `npm start` loads as the knowledge source
// "help-centre" of tenant "demo": three pages, a heading each, set larger than the text (as a
// help centre's export would be). Run `npx tsx examples/knowledge/make-help-centre.ts` after
// changing the text; the PDF is committed.
import { writeFileSync } from 'node:fs';
import { writePdf } from './pdf.js';

const HELP_CENTRE = [
  {
    heading: 'Returns and refunds',
    paragraphs: [
      'Items can be returned within 30 days of delivery, unused and in their original packaging. Start a return from your order page; we email a prepaid label within one working day.',
      'Refunds go back to the card you paid with, within 5 working days of the return reaching our warehouse. Shipping costs are refunded only when the item arrived faulty.',
    ],
  },
  {
    heading: 'Shipping',
    paragraphs: [
      'Standard shipping takes 3 to 5 working days and is free on orders over 50 euros. Express shipping costs 9 euros and arrives the next working day when ordered before 2 pm.',
      'We ship to every country of the European Union, Switzerland and the United Kingdom.',
    ],
  },
  {
    heading: 'Warranty',
    paragraphs: [
      'Every product has a two-year warranty from the day of delivery. For a fault, write to support with your order number and a photo; we repair or replace the item, or refund it when neither is possible.',
    ],
  },
];

// Fixed dates: the same text makes the same file.
const bytes = await writePdf(HELP_CENTRE, 'Acme help centre', new Date('2026-11-01T00:00:00Z'));
writeFileSync(new URL('./acme-help-centre.pdf', import.meta.url), bytes);
console.log(`wrote examples/knowledge/acme-help-centre.pdf (${bytes.length} bytes, ${HELP_CENTRE.length} pages)`);
