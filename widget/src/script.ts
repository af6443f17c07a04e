// The script tag's entry (/widget/v1.js): reads the tag's data- attributes and mounts the widget.
//   <script src="https://switchboard.example.com/widget/v1.js" data-agent="acme-support" data-key="pk_…" async></script>
// Optional: data-user-id and data-user-hash (identity verification), data-language, data-nonce, data-open.
import { mount } from './index.js';

const tag = document.currentScript as HTMLScriptElement | null;
if (tag) {
  const d = tag.dataset;
  const start = () => {
    if (!d.agent || !d.key) {
      console.error('Switchboard widget: the script tag needs data-agent and data-key');
      return;
    }
    mount({
      server: new URL(tag.src).origin,
      agent: d.agent,
      key: d.key,
      userId: d.userId,
      userHash: d.userHash,
      language: d.language,
      nonce: d.nonce ?? tag.nonce,
      open: d.open === 'true',
    });
  };
  if (document.body) start();
  else document.addEventListener('DOMContentLoaded', start, { once: true });
}
