// End-to-end test of the packaged extension inside a real VS Code:
// code-server (VS Code 1.100 served over HTTP on loopback) with the .vsix
// installed, driven in Debian's headless Chromium through playwright-core.
//
//   node e2e/run.js
//
// Inputs come from the environment (server/tests/vscode.rs sets them):
//   JAXPR_LSP          the jaxpr-lsp binary (jaxpr-build beside it)
//   JAXPR_CORPUS       the shared corpus
//   JAXPR_CLI          the `jaxpr` command-line tool (`jaxpr trace` records
//                      the workspace's tracing session, `jaxpr stats` the
//                      costs the code lenses must show)
//   JAXPR_TRACE_PYTHON a Python with JAX (tests/trace/venv.sh jax)
//   JAXPR_VSIX         the packaged extension
//   JAXPR_CODE_SERVER  a folder holding code-server (e2e/install-code-server.sh)
//   JAXPR_E2E_OUT      a scratch folder for this run: profiles, workspace,
//                      logs, and the screenshots of every step when a check
//                      fails
//   JAXPR_CHROMIUM     optional: the Chromium binary (default Debian's)
//
// Exits 0 and prints "all VS Code end-to-end checks passed" when every check
// passes; otherwise prints what failed and exits 1.
'use strict';

const childProcess = require('child_process');
const fs = require('fs');
const net = require('net');
const path = require('path');
const { chromium } = require('playwright-core');

const TOTAL_TIMEOUT_MS = Number(process.env.JAXPR_E2E_TIMEOUT_MS || 420000);
const STEP_TIMEOUT_MS = 30000;
const T0 = Date.now();

function say(msg) {
  process.stdout.write(`[${((Date.now() - T0) / 1000).toFixed(2).padStart(7)}s] ${msg}\n`);
}

function need(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`$${name} must be set (see the header of e2e/run.js)`);
  }
  return v;
}

class CheckFailed extends Error {}

function check(cond, msg) {
  if (!cond) {
    throw new CheckFailed(msg);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a truthy value; fails naming `what` after `ms`. */
async function waitFor(what, probe, ms = STEP_TIMEOUT_MS) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) {
        return last;
      }
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) {
      throw new CheckFailed(`timed out after ${ms} ms waiting for ${what}${last instanceof Error ? ` (${last.message})` : ''}`);
    }
    await sleep(250);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Every file under `dir` (recursively). */
function walk(dir) {
  if (!fs.existsSync(dir)) {
    return [];
  }
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? walk(p) : [p];
  });
}

/** Pids of running processes whose executable is `exe`. */
function pidsOf(exe) {
  const real = fs.realpathSync(exe);
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return fs.readlinkSync(`/proc/${d}/exe`) === real;
      } catch {
        return false;
      }
    })
    .map(Number);
}

// ---------------------------------------------------------------------------
// Set-up: workspace, profiles, code-server
// ---------------------------------------------------------------------------

const server = path.resolve(need('JAXPR_LSP'));
const cli = path.resolve(need('JAXPR_CLI'));
const tracePython = need('JAXPR_TRACE_PYTHON');
const repo = path.join(__dirname, '..', '..', '..');
const corpus = path.resolve(need('JAXPR_CORPUS'));
const vsix = path.resolve(need('JAXPR_VSIX'));
const codeServerDir = path.resolve(need('JAXPR_CODE_SERVER'));
const out = path.resolve(need('JAXPR_E2E_OUT'));
const chromiumBin = process.env.JAXPR_CHROMIUM || '/usr/lib/chromium/chromium';
const codeServerBin = path.join(codeServerDir, 'node_modules', '.bin', 'code-server');

// The valid file has nested jaxprs with dimension variables (hover, F12,
// hints); the invalid one has one expected error (line and kind from its
// expected.json).
const VALID_SOURCE = 'catalyst/dyn_cond.jaxpr';
const INVALID_SOURCE = 'invalid/dtype_mix.jaxpr';

fs.rmSync(out, { recursive: true, force: true });
const dirs = {
  ws: path.join(out, 'workspace'),
  userData: path.join(out, 'user-data'),
  extensions: path.join(out, 'extensions'),
  browser: path.join(out, 'chromium-profile'),
  home: path.join(out, 'home'),
  shots: path.join(out, 'screenshots'),
};
for (const d of Object.values(dirs)) {
  fs.mkdirSync(d, { recursive: true });
}
const validText = fs.readFileSync(path.join(corpus, VALID_SOURCE), 'utf8');
const invalidText = fs.readFileSync(path.join(corpus, INVALID_SOURCE), 'utf8');
const invalidExpected = JSON.parse(
  fs.readFileSync(path.join(corpus, INVALID_SOURCE.replace(/\.jaxpr$/, '.expected.json')), 'utf8'),
).errors;
// The diagnostic code of each kind, from the README's table ("| J0005 | `dtype-mismatch` |").
const CODE_OF_KIND = Object.fromEntries(
  [...fs.readFileSync(path.join(repo, 'README.md'), 'utf8').matchAll(/^\| \[?(J\d{4})\]?(?:\([^)]*\))? \| `([a-z-]+)` \|/gm)].map(
    (m) => [m[2], m[1]],
  ),
);
for (const e of invalidExpected) {
  for (const k of e.kinds) {
    check(CODE_OF_KIND[k], `the README's diagnostics table has no code for the kind ${k}`);
  }
}
fs.writeFileSync(path.join(dirs.ws, 'valid.jaxpr'), validText);
fs.writeFileSync(path.join(dirs.ws, 'invalid.jaxpr'), invalidText);
// A key drawn from twice: a J0013 warning whose related location is the
// first draw (the shared corpus's random model).
const KEY_REUSE_SOURCE = 'jax/random.jaxpr';
fs.writeFileSync(path.join(dirs.ws, 'key_reuse.jaxpr'), fs.readFileSync(path.join(corpus, KEY_REUSE_SOURCE), 'utf8'));
// Navigating large programs: an ecosystem program that starts with shared
// `let` jaxprs (optax's losses: `log_sigmoid` calls `softplus` and main
// calls it twice), another one in a subfolder that is never opened (its
// `let _where` is found by workspace symbols), and a tracing session that
// the real `jaxpr trace` records below (its function `power`).
const NAV_SOURCE = 'tests/data/ecosystem/optax/losses.jaxpr';
const OTHER_SOURCE = 'tests/data/ecosystem/distrax/categorical_entropy_kl.jaxpr';
const navText = fs.readFileSync(path.join(repo, NAV_SOURCE), 'utf8');
const otherText = fs.readFileSync(path.join(repo, OTHER_SOURCE), 'utf8');
fs.writeFileSync(path.join(dirs.ws, 'losses.jaxpr'), navText);
fs.mkdirSync(path.join(dirs.ws, 'distrax'));
fs.writeFileSync(path.join(dirs.ws, 'distrax', 'categorical_entropy_kl.jaxpr'), otherText);
// A Pallas kernel printed by jax 0.10.2 (no index maps) with the blocks
// recorded beside it: the graph page's tiling panel draws them.
const KERNEL_SOURCE = 'tests/data/pallas/jax-0.10.2/matmul_blocked';
for (const ext of ['.jaxpr', '.recorded.json']) {
  fs.copyFileSync(path.join(repo, KERNEL_SOURCE + ext), path.join(dirs.ws, 'matmul_blocked' + ext));
}
fs.mkdirSync(path.join(dirs.ws, 'model'));
fs.copyFileSync(path.join(repo, 'tests/trace/train.py'), path.join(dirs.ws, 'model', 'train.py'));
// The folder names the server; PATH does not have it (below). In Restricted
// Mode VS Code ignores this value until the folder is trusted.
fs.mkdirSync(path.join(dirs.ws, '.vscode'));
fs.writeFileSync(path.join(dirs.ws, '.vscode', 'settings.json'), JSON.stringify(folderSettings('lens'), null, 2));

/** The folder's settings, with `jaxpr.costHints` set to `costHints`. */
function folderSettings(costHints) {
  return { 'jaxpr.server.path': server, 'jaxpr.costHints': costHints };
}

fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
fs.writeFileSync(
  path.join(dirs.userData, 'User', 'settings.json'),
  JSON.stringify(
    {
      // The client's trace writes to the output channel while it shuts down.
      'jaxpr.trace.server': 'messages',
      // Open the folder untrusted, without the modal question: Restricted Mode.
      'security.workspace.trust.enabled': true,
      'security.workspace.trust.startupPrompt': 'never',
      'security.workspace.trust.untrustedFiles': 'open',
      'security.workspace.trust.banner': 'always',
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'workbench.enableExperiments': false,
      'workbench.editor.enablePreview': false,
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'extensions.ignoreRecommendations': true,
      'telemetry.telemetryLevel': 'off',
      'update.mode': 'none',
      'chat.commandCenter.enabled': false,
      'editor.fontSize': 14,
      'editor.minimap.enabled': false,
      'editor.inlayHints.enabled': 'on',
      'files.autoSave': 'off',
      'git.enabled': false,
    },
    null,
    2,
  ),
);

// Stays inside the machine: no gallery, no proxy.
const serverEnv = {
  ...process.env,
  HOME: dirs.home,
  XDG_CONFIG_HOME: path.join(dirs.home, '.config'),
  XDG_DATA_HOME: path.join(dirs.home, '.local', 'share'),
  XDG_CACHE_HOME: path.join(dirs.home, '.cache'),
  EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: 'http://127.0.0.1:9/gallery', itemUrl: 'http://127.0.0.1:9/item' }),
  // Without jaxpr-lsp on PATH, only the folder's setting can name it.
  PATH: (process.env.PATH || '')
    .split(path.delimiter)
    .filter((d) => d !== '' && !fs.existsSync(path.join(d, 'jaxpr-lsp')))
    .join(path.delimiter),
};
delete serverEnv.VSCODE_IPC_HOOK_CLI;
const codeServerArgs = [
  '--config',
  path.join(out, 'code-server.yaml'),
  '--user-data-dir',
  dirs.userData,
  '--extensions-dir',
  dirs.extensions,
];
fs.writeFileSync(path.join(out, 'code-server.yaml'), 'auth: none\ncert: false\n');

let codeServer;
let browser;
let page;
const shots = []; // { name, png } of every step, written out only on failure
let stepNo = 0;

async function screenshot(name) {
  if (!page) {
    return;
  }
  try {
    shots.push({ name: `${String(++stepNo).padStart(2, '0')}-${name}`, png: await page.screenshot() });
  } catch (e) {
    say(`(no screenshot for ${name}: ${e.message})`);
  }
}

async function step(name, body) {
  say(`-- ${name}`);
  try {
    await body();
  } finally {
    await screenshot(name.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '').toLowerCase());
  }
}

// ---------------------------------------------------------------------------
// Driving the workbench
// ---------------------------------------------------------------------------

async function runCommand(title) {
  // A view that takes the focus as its contents arrive (the References
  // view does) closes the palette: then it opens again.
  await waitFor(`"${title}" in the command palette`, async () => {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input.input');
    await input.waitFor({ state: 'visible', timeout: 5000 });
    await input.fill(`>${title}`, { timeout: 5000 });
    // The first row is the command itself, once the list has caught up.
    const row = page.locator('.quick-input-widget .monaco-list-row').first();
    return waitFor(`"${title}" first in the command palette`, async () => (await row.getAttribute('aria-label'))?.startsWith(title), 10000);
  });
  await page.keyboard.press('Enter');
}

async function openFile(name) {
  // The list re-renders while results come in (after a reload, for one):
  // a click can miss, so the whole pick is retried until the tab shows.
  await waitFor(`the editor of ${name}`, async () => {
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input.input');
    await input.waitFor({ state: 'visible', timeout: 5000 });
    await input.fill(name);
    // Recently opened files come first ("invalid.jaxpr" for "valid.jaxpr").
    const rows = page.locator('.quick-input-widget .monaco-list-row');
    const index = await waitFor(
      `${name} in Quick Open`,
      async () => {
        const labels = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') || ''));
        return labels.findIndex((l) => l.startsWith(name)) + 1;
      },
      5000,
    );
    await rows.nth(index - 1).click({ timeout: 2000 });
    return waitFor(
      `the tab of ${name}`,
      async () => {
        const tab = await page.locator('.tabs-container .tab.active').getAttribute('aria-label', { timeout: 1000 });
        return tab && tab.startsWith(name) && (await page.locator('.monaco-editor.focused').count()) > 0;
      },
      5000,
    );
  });
}

/** Moves the cursor to a 1-based line and column (Go to Line/Column). */
async function goTo(line, col) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS });
  // Go to Line is Quick Open with the ':' prefix.
  await input.fill(`:${line}:${col}`);
  await page.keyboard.press('Enter');
  await waitFor(`the cursor at ${line}:${col}`, async () => {
    const c = await cursor();
    return c && c.line === line && c.col === col;
  });
}

/** The cursor as the status bar shows it (1-based). */
async function cursor() {
  const text = await page.locator('[id="status.editor.selection"]').innerText({ timeout: 2000 });
  const m = /Ln (\d+), Col (\d+)/.exec(text);
  return m && { line: Number(m[1]), col: Number(m[2]) };
}

/** 1-based line and column of the `nth` (1-based) occurrence of `needle` in `text`, plus `delta` columns. */
function posOf(text, needle, nth = 1, delta = 0) {
  let at = -1;
  for (let i = 0; i < nth; i++) {
    at = text.indexOf(needle, at + 1);
    check(at >= 0, `"${needle}" occurs fewer than ${nth} times`);
  }
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  return { line, col: at - before.lastIndexOf('\n') + delta };
}

async function toasts() {
  return page.locator('.notifications-toasts .notification-list-item').allInnerTexts();
}

/** The Problems panel's rows: { file, text } for each marker. */
async function problems() {
  await runCommand('View: Focus Problems');
  const panel = page.locator('.markers-panel');
  await panel.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS });
  // The tree view: file rows, then their markers.
  const rows = await panel.locator('.monaco-list-row').evaluateAll((els) =>
    els.map((e) => ({ label: e.getAttribute('aria-label') || '', text: e.innerText })),
  );
  const result = [];
  let file = '';
  for (const r of rows) {
    if (r.label.includes('.jaxpr') && !/\[Ln \d+/.test(r.text)) {
      file = r.text.split('\n')[0];
    } else {
      result.push({ file, text: r.text.replace(/\s+/g, ' ') });
    }
  }
  return result;
}

async function hoverText() {
  await page.keyboard.press('Escape');
  await runCommand('Show or Focus Hover');
  const hover = page.locator('.monaco-hover:not(.hidden) .monaco-hover-content');
  return waitFor('a hover', async () => {
    const texts = await hover.allInnerTexts();
    return texts.find((t) => t.trim() !== '');
  });
}

/** The selection as the status bar shows it: its active end (1-based line and column) and its length in characters. */
async function selection() {
  const text = await page.locator('[id="status.editor.selection"]').innerText({ timeout: 2000 });
  const m = /Ln (\d+), Col (\d+)(?: \(([\d,]+) selected\))?/.exec(text);
  return m && { line: Number(m[1]), col: Number(m[2]), length: Number((m[3] || '0').replace(/,/g, '')) };
}

/** The text of `text` that `sel` selects, its active end being its end (as Expand Selection leaves it). */
function selectedText(text, sel) {
  if (!sel) {
    return undefined;
  }
  const end = text.split('\n').slice(0, sel.line - 1).reduce((n, l) => n + l.length + 1, 0) + sel.col - 1;
  return text.slice(end - sel.length, end);
}

/** The text of the focused editor's line that holds the cursor, inlay hints included. */
async function cursorLineText() {
  return page.evaluate(() => {
    const ed = document.querySelector('.monaco-editor.focused');
    const cur = ed.querySelector('.cursors-layer .cursor').getBoundingClientRect();
    const line = [...ed.querySelectorAll('.view-lines .view-line')].find((l) => Math.abs(l.getBoundingClientRect().top - cur.top) < 3);
    return line ? line.innerText.replace(/\u00a0/g, ' ') : '';
  });
}

/** The code lenses the focused editor draws: each one's text and the text of the line right under it. */
async function codeLenses() {
  return page.evaluate(() => {
    const ed = document.querySelector('.monaco-editor.focused');
    const lines = [...ed.querySelectorAll('.view-lines .view-line')].map((l) => ({
      top: l.getBoundingClientRect().top,
      text: l.innerText.replace(/\u00a0/g, ' '),
    }));
    return [...ed.querySelectorAll('.codelens-decoration')].map((lens) => {
      const bottom = lens.getBoundingClientRect().bottom;
      const below = lines.filter((l) => l.top >= bottom - 2).sort((a, b) => a.top - b.top)[0];
      return { text: lens.innerText.replace(/\u00a0/g, ' ').trim(), line: below ? below.text : '' };
    });
  });
}

/** The rows of the tree in the side bar: level, name and description. */
async function sideBarTree() {
  return page.locator('.part.sidebar .monaco-list-row').evaluateAll((els) =>
    els.map((e) => ({
      level: Number(e.getAttribute('aria-level')),
      name: e.querySelector('.label-name')?.innerText ?? '',
      detail: e.querySelector('.label-description')?.innerText ?? '',
    })),
  );
}

/**
 * The top-level jaxprs of a jaxpr file, named as the call hierarchy names
 * them (a `let`'s name, `main`), each with the `let`s its text calls by name
 * (`jaxpr=NAME`, `call_jaxpr=NAME`): what the call hierarchy must show,
 * read from the text alone.
 */
function topLevelJaxprs(text) {
  const starts = [...text.matchAll(/^(?:let ([A-Za-z_]\w*) = )?\{ lambda/gm)];
  return starts.map((m, i) => {
    const body = text.slice(m.index, i + 1 < starts.length ? starts[i + 1].index : text.length);
    const calls = [...body.matchAll(/[\s[][a-z_]*jaxpr=([A-Za-z_]\w*)/g)].map((c) => c[1]);
    return { name: m[1] ?? 'main', calls: [...new Set(calls)] };
  });
}

/** The frame of a graph webview in which `selector` matches (its page drawn). */
async function graphFrame(what, selector) {
  return waitFor(what, async () => {
    for (const f of page.frames()) {
      try {
        if ((await f.locator(selector).count()) > 0) {
          return f;
        }
      } catch {
        // a frame that went away
      }
    }
    return undefined;
  }, 60000);
}

/** Picks the workspace symbol `name` whose container is `container` in Quick Open (`#name`). */
async function openSymbol(name, container) {
  await waitFor(`the workspace symbol ${name} (${container})`, async () => {
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input.input');
    await input.waitFor({ state: 'visible', timeout: 5000 });
    await input.fill(`#${name}`);
    const rows = page.locator('.quick-input-widget .monaco-list-row');
    const index = await waitFor(
      `${name} among the workspace symbols`,
      async () => {
        const found = await rows.evaluateAll((els) =>
          els.map((e) => ({
            name: e.querySelector('.label-name')?.innerText ?? '',
            detail: e.querySelector('.label-description')?.innerText ?? '',
          })),
        );
        return found.findIndex((r) => r.name === name && r.detail.includes(container)) + 1;
      },
      10000,
    );
    await rows.nth(index - 1).click({ timeout: 2000 });
    return true;
  });
}

// ---------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------

async function main() {
  const guard = setTimeout(() => {
    fail(new CheckFailed(`global timeout: the test did not finish within ${TOTAL_TIMEOUT_MS} ms`));
  }, TOTAL_TIMEOUT_MS);

  say(`code-server ${codeServerBin}, server ${server}, corpus ${corpus}, output ${out}`);
  check(fs.existsSync(path.join(path.dirname(server), 'jaxpr-build')), `jaxpr-build is not beside ${server}`);

  // The tracing session that workspace symbols find, recorded by the real
  // `jaxpr trace` (JAX traces the program's three jitted functions).
  await step('record a tracing session', async () => {
    const r = childProcess.spawnSync(cli, ['trace', tracePython, 'train.py'], {
      cwd: path.join(dirs.ws, 'model'),
      env: serverEnv,
      encoding: 'utf8',
      timeout: 120000,
    });
    say((r.stdout + r.stderr).trim().split('\n').pop());
    check(r.status === 0, `jaxpr trace failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
    check(fs.existsSync(path.join(dirs.ws, 'model', '.jaxpr-session', 'power.jaxpr')), 'jaxpr trace recorded no power.jaxpr');
  });

  await step('install the vsix', async () => {
    const r = childProcess.spawnSync(codeServerBin, [...codeServerArgs, '--install-extension', vsix], {
      env: serverEnv,
      encoding: 'utf8',
      timeout: 120000,
    });
    say((r.stdout + r.stderr).trim());
    check(r.status === 0, `code-server --install-extension failed (${r.status ?? r.signal})`);
    const installed = fs.readdirSync(dirs.extensions).filter((d) => d.startsWith('jaxpr-tools.jaxpr-'));
    check(installed.length === 1, `expected the extension in ${dirs.extensions}, found ${fs.readdirSync(dirs.extensions)}`);
  });

  const port = await freePort();
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.ws)}`;
  await step('start code-server', async () => {
    codeServer = childProcess.spawn(
      codeServerBin,
      [...codeServerArgs, '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check', '--disable-getting-started-override'],
      { env: serverEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    const log = fs.createWriteStream(path.join(out, 'code-server.log'));
    codeServer.stdout.pipe(log);
    codeServer.stderr.pipe(log);
    let listening = false;
    codeServer.stdout.on('data', (d) => {
      listening ||= d.toString().includes('HTTP server listening');
    });
    codeServer.on('exit', (c, s) => say(`code-server exited (${c ?? s})`));
    await waitFor('code-server to listen', () => listening, 60000);
  });

  await step('open the folder in Chromium', async () => {
    browser = await chromium.launchPersistentContext(dirs.browser, {
      executablePath: chromiumBin,
      headless: true,
      chromiumSandbox: false,
      // A laptop's window: step 4's layout check is for this width.
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
    page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    await page.goto(url);
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60000 });
    await page.locator('[id="status.editor.selection"], .statusbar').first().waitFor({ state: 'visible' });
  });

  // (1) Restricted Mode: the folder's jaxpr.server.path is ignored, and the
  // notice says so (not "not found on PATH, set jaxpr.server.path").
  await step('restricted mode notice', async () => {
    await openFile('invalid.jaxpr');
    const notice = await waitFor('the Restricted Mode notice', async () =>
      (await toasts()).find((t) => t.includes('jaxpr.server.path')),
    );
    say(`notice: ${notice.replace(/\s+/g, ' ')}`);
    check(notice.includes("Restricted Mode: this folder's \"jaxpr.server.path\" is not used until you trust the folder"), `the notice does not say that Restricted Mode ignores the folder's setting: ${notice}`);
    check(pidsOf(server).length === 0, 'jaxpr-lsp runs although the folder is untrusted');
  });

  await step('trust the folder', async () => {
    await runCommand('Workspaces: Manage Workspace Trust');
    const trust = page.locator('.monaco-button').filter({ hasText: /^Trust$/ }).first();
    await trust.waitFor({ state: 'visible' });
    await trust.click();
    await waitFor('jaxpr-lsp to start once the folder is trusted', () => pidsOf(server).length === 1);
    // Neither a toast nor the status bar's progress entry may keep it.
    await waitFor('the Restricted Mode notice to close', async () => {
      const shown = [...(await toasts()), await page.locator('.statusbar').innerText()];
      return !shown.some((t) => t.includes('Restricted Mode: this folder') || t.includes('was not found on PATH'));
    });
    // Close the trust editor.
    await runCommand('View: Close All Editors');
  });

  // (2) Diagnostics in the Problems panel: line and code of the expected error.
  await step('problems of the invalid file', async () => {
    await openFile('invalid.jaxpr');
    const rows = await waitFor('the expected errors in the Problems panel', async () => {
      const all = (await problems()).filter((r) => r.file.includes('invalid.jaxpr'));
      return all.length >= invalidExpected.length && all;
    });
    say(`problems: ${JSON.stringify(rows)}`);
    for (const e of invalidExpected) {
      check(
        rows.some((r) => e.lines.some((l) => r.text.includes(`[Ln ${l},`)) && e.kinds.some((k) => r.text.includes(`jaxpr ${CODE_OF_KIND[k]} [Ln`))),
        `no Problems row on line ${e.lines} with code ${e.kinds}: ${JSON.stringify(rows)}`,
      );
    }
  });

  // (2b) A sharp bit: the Problems panel shows the key-reuse warning and,
  // under it, its related location (where the key was consumed first).
  await step('a reused key and its first use', async () => {
    await openFile('key_reuse.jaxpr');
    const rows = await waitFor('the key-reuse warning and its related location', async () => {
      const all = (await problems()).filter((r) => r.file.includes('key_reuse.jaxpr'));
      const warning = all.some((r) => r.text.includes(`jaxpr ${CODE_OF_KIND['key-reuse']} [Ln`));
      return warning && all.some((r) => r.text.includes('consumed here by')) && all;
    });
    say(`problems: ${JSON.stringify(rows)}`);
    check(
      rows.some((r) => r.text.includes('consumed here by') && r.text.includes('[Ln 65,')),
      `the related location should be the first use on line 65: ${JSON.stringify(rows)}`,
    );
    await runCommand('View: Close All Editors');
  });

  // (3) Hover on a nested jaxpr's `lambda`: its in_type with DBIdx.
  await step('hover shows DBIdx', async () => {
    await openFile('valid.jaxpr');
    const p = posOf(validText, 'branch_jaxprs=[{ lambda', 1, 'branch_jaxprs=[{ '.length);
    await goTo(p.line, p.col);
    const text = await hoverText();
    say(`hover: ${text.replace(/\s+/g, ' ')}`);
    check(text.includes('DBIdx'), `the hover on lambda at ${p.line}:${p.col} lacks DBIdx: ${text}`);
    await page.keyboard.press('Escape');
  });

  // (4) F12 on a dimension variable lands on its binder; the binder's line,
  // inlay hints included, fits the editor, so the binder is not pushed to its
  // right edge (nor the editor scrolled sideways to show it).
  await step('F12 on a dimension variable', async () => {
    const use = posOf(validText, 'e:f64[c]', 1, 'e:f64['.length);
    const binder = posOf(validText, ' c:i64[] d:f64[c]', 2, 1);
    await goTo(use.line, use.col);
    await page.keyboard.press('F12');
    await waitFor(`the cursor on the binder at ${binder.line}:${binder.col}`, async () => {
      const c = await cursor();
      return c && c.line === binder.line && c.col === binder.col;
    });
    const measure = () =>
      page.evaluate(() => {
        const ed = document.querySelector('.monaco-editor.focused');
        const view = ed.querySelector('.overflow-guard').getBoundingClientRect();
        const scrollbar = ed.querySelector('.scrollbar.vertical')?.getBoundingClientRect().width ?? 0;
        const cur = ed.querySelector('.cursors-layer .cursor').getBoundingClientRect();
        const line = [...ed.querySelectorAll('.view-lines .view-line')].find(
          (l) => Math.abs(l.getBoundingClientRect().top - cur.top) < 3,
        );
        return {
          viewLeft: view.left,
          viewRight: view.right - scrollbar,
          cursor: cur.left,
          lineRight: line.firstElementChild.getBoundingClientRect().right,
          hints: line.querySelectorAll('[class*="dyn-rule"]').length,
          text: line.innerText,
          scrollLeft: -parseFloat(ed.querySelector('.lines-content').style.left || '0'),
        };
      });
    // The hints are rendered once the server answered: wait until the binder
    // line has some and stays the same for a second.
    let previous = '';
    const layout = await waitFor('inlay hints on the binder line, settled', async () => {
      const l = await measure();
      const same = l.hints > 0 && JSON.stringify(l) === previous;
      previous = JSON.stringify(l);
      await sleep(750);
      return same && l;
    });
    say(`layout after F12: ${JSON.stringify(layout)}`);
    check(layout.cursor >= layout.viewLeft && layout.cursor < layout.viewRight, `the binder is out of view: ${JSON.stringify(layout)}`);
    check(layout.scrollLeft === 0, `the editor scrolled ${layout.scrollLeft}px sideways to show the binder`);
    check(
      layout.lineRight <= layout.viewRight,
      `the binder's line with its inlay hints ends at x=${layout.lineRight}, past the editor's right edge at ${layout.viewRight}: the hints push the binder F12 lands on to the edge`,
    );
  });

  // (5) An edit adds an error, undoing it removes it again.
  await step('an edit adds and removes an error', async () => {
    const p = posOf(validText, 'mul b e\n', 1, 'mul b e'.length);
    await goTo(p.line, p.col);
    await page.keyboard.type('zz');
    const added = await waitFor('an error in valid.jaxpr', async () =>
      (await problems()).find((r) => r.file.includes('valid.jaxpr') && !r.file.includes('invalid') && r.text.includes(`[Ln ${p.line},`)),
    );
    say(`added: ${added.text}`);
    check(added.text.includes(CODE_OF_KIND['undefined-variable']), `the edit's error is not undefined-variable: ${added.text}`);
    await page.locator('.monaco-editor').first().click({ position: { x: 5, y: 5 } }).catch(() => undefined);
    await openFile('valid.jaxpr');
    await page.keyboard.press('Control+Z');
    await waitFor('no error left in valid.jaxpr after undo', async () =>
      !(await problems()).some((r) => r.file.includes('valid.jaxpr') && !r.file.includes('invalid')),
    );
  });

  // (6) Restart: a new server process, and hovers work again.
  await step('restart the server', async () => {
    const before = pidsOf(server);
    check(before.length === 1, `expected one jaxpr-lsp, found ${before}`);
    await openFile('valid.jaxpr');
    await runCommand('Jaxpr: Restart language server');
    await waitFor('a new jaxpr-lsp process', () => {
      const now = pidsOf(server);
      return now.length === 1 && now[0] !== before[0];
    });
    const p = posOf(validText, 'branch_jaxprs=[{ lambda', 1, 'branch_jaxprs=[{ '.length);
    await goTo(p.line, p.col);
    const text = await hoverText();
    check(text.includes('DBIdx'), `hover after the restart lacks DBIdx: ${text}`);
    await page.keyboard.press('Escape');
  });

  // (7) Build StableHLO writes its output and says where.
  await step('build StableHLO', async () => {
    await openFile('valid.jaxpr');
    const started = Date.now();
    await runCommand('Jaxpr: Build StableHLO for this file');
    const toast = await waitFor('the build notification', async () => (await toasts()).find((t) => t.includes('Jaxpr: built StableHLO')), 60000);
    const m = /built StableHLO: (\S+)/.exec(toast);
    check(m, `no path in the build notification: ${toast}`);
    const built = path.isAbsolute(m[1]) ? m[1] : path.join(dirs.ws, m[1]);
    say(`built ${built}`);
    check(fs.existsSync(built), `the build says ${built}, which does not exist`);
    const st = fs.statSync(built);
    check(st.size > 0 && st.mtimeMs >= started - 2000, `${built} is empty or older than the build`);
  });

  // (7b) Show dataflow graph: the webview beside the text draws one node per
  // equation (all groups open for a small file); a click on a node selects
  // its equation in the editor, and moving the cursor selects the node. The
  // screenshot is kept as an artefact (graph-webview.png).
  await step('dataflow graph', async () => {
    await openFile('valid.jaxpr');
    await runCommand('Jaxpr: Show dataflow graph');
    const frame = await graphFrame('the graph webview', 'body[data-ready="1"]');
    await frame.evaluate(() => window.jaxprGraph.fit());
    const equations = validText.split('\n').filter((l) => / = [a-z_]/.test(l)).length;
    // Each node's id and first text line (its label; its <title> holds the
    // tooltip).
    const nodes = await waitFor('the equation nodes', async () => {
      const found = await frame
        .locator('#viewport .node.eqn')
        .evaluateAll((els) => els.map((e) => ({ id: e.id, label: e.querySelector('text').textContent })));
      return found.length === equations && found;
    });
    // A label is the primitive, then any literal operands folded into it
    // (`broadcast_in_dim 1.0 ·`).
    const primitiveOf = (n) => n.label.split(' ')[0];
    const ids = nodes.map((n) => n.id);
    check(ids.every((id) => /^n\d+$/.test(id)) && new Set(ids).size === ids.length, `node ids: ${ids}`);
    for (const prim of ['broadcast_in_dim', 'cond', 'mul', 'sub']) {
      check(nodes.some((n) => primitiveOf(n) === prim), `no ${prim} node among ${JSON.stringify(nodes)}`);
    }
    const shot = path.join(out, 'graph-webview.png');
    await page.screenshot({ path: shot });
    say(`graph webview: ${ids.length} equation nodes (${equations} equations in the file); screenshot ${shot}`);

    // A click on the `mul` node selects its equation in the editor (the
    // status bar shows the selection's end).
    const mulText = 'f:f64[a] = mul b e';
    const mul = posOf(validText, mulText);
    const mulNode = nodes.find((n) => primitiveOf(n) === 'mul').id;
    await frame.locator(`#${mulNode} > rect`).click();
    // The status bar shows the selection of the focused text editor only;
    // focusing the editor group moves no cursor.
    await runCommand('View: Focus First Editor Group');
    await waitFor(`the editor selecting ${mulText}`, async () => {
      const c = await cursor();
      return c && c.line === mul.line && c.col === mul.col + mulText.length;
    });

    // The cursor on the `sub` equation selects its node.
    const sub = posOf(validText, 'sub d e');
    await goTo(sub.line, sub.col);
    await waitFor('the sub node selected in the graph', async () => {
      const selected = await frame
        .locator('#viewport .node.selected')
        .evaluateAll((els) => els.map((e) => e.querySelector('text').textContent));
      return selected.length === 1 && selected[0] === 'sub';
    });
  });

  // (7b') Kernel tiling: the graph page of a Pallas kernel has a panel
  // drawing which block of each array every grid point takes (from the
  // blocks recorded beside the file); opened, it shows the 2x2 grid's four
  // points. The screenshot is kept (graph-tiling.png).
  await step('kernel tiling', async () => {
    await runCommand('View: Close All Editor Groups');
    await openFile('matmul_blocked.jaxpr');
    await runCommand('Jaxpr: Show dataflow graph');
    const frame = await graphFrame('the kernel graph webview with its tiling panel', 'body[data-ready="1"] #tiling');
    await frame.locator('#tiling summary').click();
    const drawn = await waitFor('the tiling panel open', async () => {
      const open = await frame.locator('#tiling[open] svg').count();
      return open === 1 && (await frame.locator('#tiling svg').textContent());
    });
    check(drawn.includes('grid (2,2) (4 points)'), `the tiling panel says: ${drawn.slice(0, 300)}`);
    const points = await frame
      .locator('#tiling svg text')
      .evaluateAll((els) => els.filter((e) => e.textContent.startsWith('point (')).length);
    check(points === 4, `the tiling panel has ${points} grid point panels, not 4`);
    const shot = path.join(out, 'graph-tiling.png');
    await page.screenshot({ path: shot });
    say(`tiling panel: ${points} grid points drawn; screenshot ${shot}`);
  });

  // (7c) Call hierarchy on a `let` of an ecosystem program: Calls: Show
  // Call Hierarchy lists its callers in the References view, and its
  // outgoing calls what it calls; both read from the text beforehand.
  await step('call hierarchy', async () => {
    const jaxprs = topLevelJaxprs(navText);
    const target = 'log_sigmoid';
    const callers = jaxprs.filter((j) => j.calls.includes(target)).map((j) => j.name);
    const callees = jaxprs.find((j) => j.name === target).calls;
    check(callers.length > 0 && callees.length > 0, `${NAV_SOURCE}: ${target} should have callers and callees: ${JSON.stringify(jaxprs)}`);
    // The graph's editor group goes: one tab is active again.
    await runCommand('View: Close All Editor Groups');
    await openFile('losses.jaxpr');
    const p = posOf(navText, `let ${target} =`, 1, 'let '.length + 1);
    await goTo(p.line, p.col);
    const shows = (title, names) => async () => {
      const rows = await sideBarTree();
      // The view's title ("REFERENCES: CALLERS OF", upper case by its style).
      const header = (await page.locator('.part.sidebar').innerText()).toLowerCase();
      const ok =
        header.includes(title.toLowerCase()) &&
        rows.length === names.length + 1 &&
        rows[0].level === 1 &&
        rows[0].name === target &&
        rows.slice(1).every((r) => r.level === 2) &&
        JSON.stringify(rows.slice(1).map((r) => r.name).sort()) === JSON.stringify([...names].sort());
      return ok && rows;
    };
    await runCommand('Calls: Show Call Hierarchy');
    const incoming = await waitFor(`the callers of ${target} (${callers}) in the References view`, shows('Callers Of', callers));
    say(`callers of ${target}: ${JSON.stringify(incoming)}`);
    check(/->/.test(incoming[0].detail), `no signature beside ${target}: ${JSON.stringify(incoming[0])}`);
    await page.screenshot({ path: path.join(out, 'call-hierarchy.png') });
    await runCommand('Calls: Show Outgoing Calls');
    const outgoing = await waitFor(`the calls of ${target} (${callees}) in the References view`, shows('Calls From', callees));
    say(`calls from ${target}: ${JSON.stringify(outgoing)}`);
    await runCommand('View: Close Primary Side Bar');
  });

  // (7d) Selection ranges: Expand Selection from inside an operand selects
  // the operand, the operands, the equation, the whole line (VS Code's own
  // step before a range over several lines) and the equations of the body.
  // Without the server's ranges VS Code goes from the operand to the line.
  await step('expand selection', async () => {
    await openFile('losses.jaxpr');
    const eqn = 'bt:f32[6,5] = mul bs bp';
    const line = navText.split('\n').find((l) => l.trim() === eqn);
    const body = navText.slice(navText.indexOf('ba:f32[6,5] = jit['), navText.indexOf('\n  in (bo, by,'));
    const p = posOf(navText, eqn, 1, 'bt:f32[6,5] = mul b'.length);
    await goTo(p.line, p.col);
    for (const want of ['bs', 'bs bp', eqn, line, body]) {
      await page.keyboard.press('Shift+Alt+ArrowRight');
      const shown = want.length > 40 ? `${want.slice(0, 40)}... (${want.length} characters)` : want;
      await waitFor(`the selection of ${JSON.stringify(shown)}`, async () => selectedText(navText, await selection()) === want);
      say(`expand selection: ${JSON.stringify(shown)}`);
    }
    await page.keyboard.press('Escape');
  });

  // (7e) Costs per jaxpr: with jaxpr.costHints "lens" a code lens above a
  // `let` and above a nested jaxpr shows the totals `jaxpr stats` computes;
  // with "inlay" an inlay hint at the end of the `lambda` line does, and
  // with "off" neither. The setting changes in the folder's settings.json.
  await step('cost lenses and inlay hints', async () => {
    const r = childProcess.spawnSync(cli, ['stats', '--format', 'json', path.join(dirs.ws, 'losses.jaxpr')], { encoding: 'utf8' });
    check(r.status === 0, `jaxpr stats failed (${r.status ?? r.signal}): ${r.stderr}`);
    const stats = JSON.parse(r.stdout).files[0].jaxprs;
    // The label as `cost: 300 FLOPs · 60 transcendentals · 3912 B accessed · peak 990 B`
    // (amounts below 10,000 are printed in full).
    const label = (j) => {
      const amounts = [j.cost.flops, j.cost.transcendentals, j.cost.bytes_accessed, Number(j.peak_bytes)];
      check(amounts.every((n) => Number.isInteger(n) && n < 10000), `pick jaxprs with small constant costs: ${JSON.stringify(j)}`);
      return `cost: ${amounts[0]} FLOPs · ${amounts[1]} transcendentals · ${amounts[2]} B accessed · peak ${amounts[3]} B`;
    };
    const lines = navText.split('\n');
    const shown = [
      stats.find((j) => j.name === 'let log_sigmoid'),
      stats.find((j) => j.line === posOf(navText, 'jaxpr={ lambda ; w:f32[6,5]').line),
    ];
    check(shown.every(Boolean), `jaxpr stats lacks the let log_sigmoid or the nested jaxpr of line 33: ${JSON.stringify(stats)}`);
    await openFile('losses.jaxpr');
    for (const j of shown) {
      const line = lines[j.line - 1].trim();
      await goTo(j.line, 1);
      const lens = await waitFor(`a code lens above line ${j.line} (${line})`, async () =>
        (await codeLenses()).find((l) => l.line.trim().startsWith(line)),
      );
      say(`code lens above line ${j.line}: ${lens.text}`);
      check(lens.text === label(j), `the code lens above line ${j.line} shows "${lens.text}", jaxpr stats computes "${label(j)}"`);
    }
    await page.screenshot({ path: path.join(out, 'cost-lens.png') });

    const settings = path.join(dirs.ws, '.vscode', 'settings.json');
    const first = shown[0];
    // The inlay hint keeps FLOPs and the peak, so that it fits VS Code's
    // default inlay limit of 43 characters (left as it is here).
    const inlayLabel = (j) => `cost: ${j.cost.flops} FLOPs · peak ${Number(j.peak_bytes)} B`;
    fs.writeFileSync(settings, JSON.stringify(folderSettings('inlay'), null, 2));
    await goTo(first.line, 1);
    const hinted = await waitFor(`the cost as an inlay hint on line ${first.line}, no code lens`, async () => {
      const text = await cursorLineText();
      return (await codeLenses()).length === 0 && text.includes(inlayLabel(first)) && text;
    });
    say(`inlay hint on line ${first.line}: ${hinted}`);
    check(
      hinted.startsWith(lines[first.line - 1]) && hinted.endsWith(inlayLabel(first)),
      `the cost hint is not at the end of line ${first.line}: ${hinted}`,
    );
    await page.screenshot({ path: path.join(out, 'cost-inlay.png') });

    fs.writeFileSync(settings, JSON.stringify(folderSettings('off'), null, 2));
    await waitFor(`no cost on line ${first.line} with costHints "off"`, async () =>
      (await codeLenses()).length === 0 && !(await cursorLineText()).includes('cost:'),
    );
  });

  // (7f) Workspace symbols: `#name` in Quick Open finds a `let` of a file
  // never opened and a function of the tracing session, and choosing one
  // opens its file at the definition.
  await step('workspace symbols', async () => {
    const where = posOf(otherText, 'let _where', 1, 'let '.length);
    await openSymbol('_where', 'categorical_entropy_kl.jaxpr');
    await waitFor(`categorical_entropy_kl.jaxpr open at line ${where.line}`, async () => {
      const tab = await page.locator('.tabs-container .tab.active').getAttribute('aria-label', { timeout: 1000 });
      const c = await cursor();
      return tab && tab.startsWith('categorical_entropy_kl.jaxpr') && c && c.line === where.line;
    });
    const sessionDir = path.join(dirs.ws, 'model', '.jaxpr-session');
    const powerText = fs.readFileSync(path.join(sessionDir, 'power.jaxpr'), 'utf8');
    const power = posOf(powerText, '{ lambda');
    await openSymbol('power', 'tracing session');
    await waitFor(`the session's power.jaxpr open at line ${power.line}`, async () => {
      const tab = await page.locator('.tabs-container .tab.active').getAttribute('aria-label', { timeout: 1000 });
      const crumbs = await page.locator('.breadcrumbs-control').first().innerText({ timeout: 1000 });
      const c = await cursor();
      return tab && tab.startsWith('power.jaxpr') && crumbs.includes('.jaxpr-session') && c && c.line === power.line;
    });
  });

  // (8) Reload the window: the extension deactivates and activates again.
  await step('reload the window', async () => {
    const before = pidsOf(server);
    await runCommand('Developer: Reload Window');
    await waitFor('a new jaxpr-lsp after the reload', () => {
      const now = pidsOf(server);
      return now.length === 1 && now[0] !== before[0];
    }, 60000);
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60000 });
    await openFile('invalid.jaxpr');
    await waitFor('the error again after the reload', async () =>
      (await problems()).some((r) => r.file.includes('invalid.jaxpr') && invalidExpected[0].kinds.some((k) => r.text.includes(CODE_OF_KIND[k]))),
    );
  });

  // (9) Close the window and stop code-server (which keeps a closed
  // window's extension host for a reconnection); then read the logs.
  await step('close', async () => {
    await browser.close();
    browser = undefined;
    page = undefined;
    await stopCodeServer();
    await waitFor('jaxpr-lsp to exit with code-server', () => pidsOf(server).length === 0, 30000);
  });

  const logs = walk(path.join(dirs.userData, 'logs')).filter((f) => f.endsWith('.log'));
  check(logs.some((f) => /exthost/.test(f)), `no extension host log under ${dirs.userData}/logs`);
  // An error entry ("[error]", with its stack on the lines after it) names
  // the extension when it mentions its id or its install folder; paths of
  // this checkout may contain "jaxpr" anywhere, so those alone do not count.
  const ours = /jaxpr-tools\.jaxpr|Jaxpr Language Server/;
  const bad = [];
  for (const f of logs) {
    const lines = fs.readFileSync(f, 'utf8').split('\n');
    lines.forEach((l, i) => {
      if (!/\[error\]/i.test(l)) {
        return;
      }
      const entry = [l];
      for (let k = i + 1; k < lines.length && !/^\d{4}-\d\d-\d\d /.test(lines[k]); k++) {
        entry.push(lines[k]);
      }
      if (ours.test(entry.join('\n'))) {
        bad.push(`${path.relative(out, f)}:${i + 1}: ${entry.join('\n')}`);
      }
    });
  }
  check(bad.length === 0, `the logs have errors that name the extension:\n${bad.join('\n')}`);
  say(`logs read: ${logs.map((f) => path.relative(out, f)).join(', ')}`);

  clearTimeout(guard);
  // The browser profile is only of use to look at a failure.
  fs.rmSync(dirs.browser, { recursive: true, force: true });
  say('all VS Code end-to-end checks passed');
}

async function stopCodeServer() {
  if (!codeServer || codeServer.exitCode !== null) {
    return;
  }
  const exited = new Promise((r) => codeServer.once('exit', r));
  try {
    process.kill(-codeServer.pid, 'SIGTERM');
  } catch {
    // already gone
  }
  await Promise.race([exited, sleep(10000)]);
  if (codeServer.exitCode === null) {
    try {
      process.kill(-codeServer.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

let failing = false;
async function fail(err) {
  if (failing) {
    return;
  }
  failing = true;
  process.stderr.write(`VS Code E2E FAILED: ${err instanceof CheckFailed ? err.message : err.stack || err}\n`);
  await screenshot('failure');
  for (const s of shots) {
    fs.writeFileSync(path.join(dirs.shots, `${s.name}.png`), s.png);
  }
  process.stderr.write(`screenshots of every step: ${dirs.shots}\nlogs: ${path.join(dirs.userData, 'logs')}, ${path.join(out, 'code-server.log')}\n`);
  try {
    await browser?.close();
  } catch {
    // the browser is gone
  }
  await stopCodeServer();
  process.exit(1);
}

main().then(
  () => process.exit(0),
  (err) => fail(err),
);
