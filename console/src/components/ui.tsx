// Small pieces every page uses: problems with what to do, empty states, status badges, times,
// JSON, and a confirmation dialog (the platform's <dialog>: focus kept inside, Escape cancels).
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';
import type { ChannelKind } from '@switchboard/client';
import type { ApiError } from '../api';

/** What to do about a refused or failed call, by its status. */
function advice(e: ApiError): string {
  if (e.status === 0) return 'The server did not answer: check that it is running, then try again.';
  if (e.status === 401) return 'The server did not accept these credentials: sign out and sign in with a valid API key.';
  if (e.status === 403) return 'These credentials may not do this: sign in with a key whose roles hold the permission named above.';
  if (e.status === 404) return 'It may have been archived or erased, or belong to another tenant.';
  if (e.status === 429) return 'Too many requests for this tenant right now: wait a moment and try again.';
  if (e.status >= 500) return 'The server failed: try again; its log has the details under the request id.';
  return 'Correct the input and try again.';
}

export function ErrorBox({ error, retry }: { error: ApiError; retry?: () => void }) {
  const fields = error.problem.errors ?? [];
  return (
    <div class="error" role="alert">
      <strong>{error.problem.title ?? 'Something went wrong'}</strong>
      {error.problem.detail && <p>{error.problem.detail}</p>}
      {fields.length > 0 && (
        <ul>
          {fields.map((f) => (
            <li key={f.path}>
              <code>{f.path}</code>: {f.message}
            </li>
          ))}
        </ul>
      )}
      <p class="muted">{advice(error)}</p>
      {retry && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <strong>{title}</strong>
      {children && <div>{children}</div>}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status}`}>{status}</span>;
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  const d = new Date(iso);
  return (
    <time dateTime={iso} title={iso}>
      {d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })}
    </time>
  );
}

export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <details class="json">
      <summary>{label}</summary>
      <pre tabIndex={0}>{JSON.stringify(value, null, 2)}</pre>
    </details>
  );
}

/** A scrollable table region that keyboard users can reach and scroll. */
export function TableWrap({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={label}>
      {children}
    </div>
  );
}

export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirm: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={props.onCancel} onClose={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      <div>{props.children}</div>
      <div class="row end">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class={props.danger ? 'danger' : 'primary'} onClick={props.onConfirm}>
          {props.confirm}
        </button>
      </div>
    </dialog>
  );
}

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
}

export function percent(rate: number | null | undefined): string {
  return rate === null || rate === undefined ? '—' : `${(rate * 100).toFixed(rate < 0.1 ? 1 : 0)}%`;
}

/** A labelled form control: the label names the control alone (not its value), by id. */
export function Field({ label, children }: { label: string; children: (id: string) => ComponentChildren }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children(id)}
    </div>
  );
}

/** A table's header row: one column header per name (an empty name is read out as "Actions"). */
export function Head({ cols }: { cols: string[] }) {
  return (
    <thead>
      <tr>
        {cols.map((c) => (
          <th key={c} scope="col">
            {c || <span class="sr-only">Actions</span>}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** A filter's select: "any" (the empty value) or one of the options. */
export function AnySelect({ id, value, options, onChange }: { id: string; value: string; options: readonly string[]; onChange: (v: string) => void }) {
  return (
    <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
      <option value="">any</option>
      {options.map((o) => (
        <option key={o} value={o}>
          {o}
        </option>
      ))}
    </select>
  );
}

/** Where conversations come from, as the console names them. */
export const CHANNEL_NAMES: Record<'api' | 'web' | ChannelKind, string> = {
  api: 'API',
  web: 'web chat widget',
  slack: 'Slack',
  telegram: 'Telegram',
  whatsapp: 'WhatsApp',
  sms: 'SMS (Twilio)',
};
