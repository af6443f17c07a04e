// The system's Chromium (Debian's `chromium` package; CHROMIUM_PATH to use another) driven by
// playwright-core, and axe-core run inside its pages. REQUIRE_BROWSER=1 (as in CI) makes a missing
// browser a failure; elsewhere the browser suites say they were skipped.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REQUIRED = process.env.REQUIRE_BROWSER === '1' || process.env.REQUIRE_BROWSER === 'true';

export const hasBrowser = existsSync(CHROMIUM);
if (REQUIRED && !hasBrowser) throw new Error(`REQUIRE_BROWSER is set but there is no browser at ${CHROMIUM} (apt-get install chromium)`);

export function warnIfBrowserSkipped(): void {
  if (!hasBrowser) console.warn(`Browser suites SKIPPED: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH; CI always runs them).`);
}

/** A fresh browser profile; closing the context closes the browser and deletes the profile. */
export async function launch(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'switchboard-chromium-'));
  // Without the background-networking flags Chromium keeps calling Google's hosts, which a closed network refuses.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1280, height: 800 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core's serious and critical violations on the page as it stands (WCAG 2.1 A and AA rules and best practices). */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol, which the page's content security policy does not govern.
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(o: unknown): Promise<{ violations: AxeViolation[] }> } }).axe;
    const r = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
