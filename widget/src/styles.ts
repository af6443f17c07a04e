// The widget's styles, inside its shadow root: the page's styles do not reach in (`all: initial`
// on the host) and these do not leak out. Logical properties throughout, so right-to-left
// languages mirror the layout; the colour scheme follows the visitor's system.
export const CSS = `
:host { all: initial; }
* { box-sizing: border-box; }
.root {
  --accent: #1f6feb; --on-accent: #fff; --bg: #fff; --fg: #1b1f24; --muted: #57606a; --bubble: #eef1f4; --line: #d0d7de; --error: #a40e26;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  position: fixed; inset-block-end: 20px; inset-inline-end: 20px; z-index: 2147483000;
}
@media (prefers-color-scheme: dark) {
  .root { --bg: #16191d; --fg: #e6edf3; --muted: #9ea7b0; --bubble: #262c33; --line: #3a424b; --error: #ff8a9a; }
}
button { font: inherit; cursor: pointer; }
button:focus-visible, textarea:focus-visible, a:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.launcher {
  inline-size: 56px; block-size: 56px; border-radius: 50%; border: 0; background: var(--accent); color: var(--on-accent);
  box-shadow: 0 4px 14px rgba(0,0,0,.25); display: grid; place-items: center;
}
.launcher svg { inline-size: 26px; block-size: 26px; fill: currentColor; }
.panel {
  position: absolute; inset-block-end: 70px; inset-inline-end: 0; inline-size: min(380px, calc(100vw - 40px));
  block-size: min(560px, calc(100vh - 110px)); background: var(--bg); color: var(--fg); border: 1px solid var(--line);
  border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25); display: flex; flex-direction: column; overflow: hidden;
}
.panel[hidden] { display: none; }
@media (max-width: 480px) {
  .root { inset-block-end: 12px; inset-inline-end: 12px; }
  .panel { position: fixed; inset: 0; inline-size: 100vw; block-size: 100%; border-radius: 0; border: 0; }
}
header { display: flex; align-items: center; gap: 8px; padding: 12px 14px; background: var(--accent); color: var(--on-accent); }
header h2 { flex: 1; margin: 0; font-size: 16px; font-weight: 600; overflow-wrap: anywhere; }
header button { background: transparent; border: 0; color: inherit; font-size: 22px; line-height: 1; padding: 4px 8px; border-radius: 6px; }
.log { flex: 1; overflow-y: auto; padding: 12px; display: flex; flex-direction: column; gap: 8px; }
.msg { max-inline-size: 85%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.msg.agent { align-self: flex-start; background: var(--bubble); }
.msg.user { align-self: flex-end; background: var(--accent); color: var(--on-accent); }
.msg.user a { color: inherit; }
.msg a { color: inherit; text-decoration: underline; }
.sources { margin: 6px 0 0; padding: 0 0 0 16px; font-size: 12px; white-space: normal; }
.author { display: block; font-size: 12px; color: var(--muted); margin-block-end: 2px; }
.options { display: flex; flex-wrap: wrap; gap: 6px; }
.options button { border: 1px solid var(--accent); background: var(--bg); color: var(--fg); border-radius: 16px; padding: 4px 12px; }
.typing { align-self: flex-start; color: var(--muted); font-size: 13px; }
.notice { font-size: 13px; color: var(--muted); text-align: center; padding: 4px 8px; }
.notice button { margin-inline-start: 6px; border: 1px solid var(--line); background: var(--bg); color: var(--fg); border-radius: 6px; padding: 2px 8px; }
.error { color: var(--error); font-size: 13px; padding: 6px 12px; border-block-start: 1px solid var(--line); }
.error:empty { display: none; }
form { display: flex; gap: 8px; padding: 10px; border-block-start: 1px solid var(--line); }
textarea {
  flex: 1; resize: none; font: inherit; color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: 8px;
  padding: 8px; block-size: 42px; max-block-size: 120px;
}
form button { border: 0; border-radius: 8px; background: var(--accent); color: var(--on-accent); padding: 0 14px; }
form button:disabled { opacity: .6; cursor: default; }
.sr-only { position: absolute; inline-size: 1px; block-size: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;
