import * as assert from 'assert/strict';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { test } from 'node:test';
import { expandServerPath, missingServerMessage, resolveServerCommand } from '../serverPath';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'jaxpr-vscode-'));
}

function makeExecutable(dir: string, name: string, mode = 0o755): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, '#!/bin/sh\nexit 0\n');
  fs.chmodSync(p, mode);
  return p;
}

test('expands ~, ${userHome}, ${env:X} and ${workspaceFolder}', () => {
  const opts = { homeDir: '/home/u', workspaceFolder: '/ws', env: { BIN: '/opt/bin' } };
  assert.equal(expandServerPath('~/bin/jaxpr-lsp', opts), path.join('/home/u', 'bin/jaxpr-lsp'));
  assert.equal(expandServerPath('${userHome}/x', opts), '/home/u/x');
  assert.equal(expandServerPath('${env:BIN}/jaxpr-lsp', opts), '/opt/bin/jaxpr-lsp');
  assert.equal(expandServerPath(' ${workspaceFolder}/target/release/jaxpr-lsp ', opts), '/ws/target/release/jaxpr-lsp');
});

test('a bare name is looked up on PATH', { skip: process.platform === 'win32' }, () => {
  const a = tempDir();
  const b = tempDir();
  const exe = makeExecutable(b, 'jaxpr-lsp');
  makeExecutable(a, 'jaxpr-lsp', 0o644); // not executable: skipped
  const r = resolveServerCommand('jaxpr-lsp', { env: { PATH: [a, b].join(path.delimiter) } });
  assert.deepEqual(r, { ok: true, command: exe });
});

test('an empty setting falls back to jaxpr-lsp on PATH', { skip: process.platform === 'win32' }, () => {
  const d = tempDir();
  const exe = makeExecutable(d, 'jaxpr-lsp');
  assert.deepEqual(resolveServerCommand('', { env: { PATH: d } }), { ok: true, command: exe });
  assert.deepEqual(resolveServerCommand(undefined, { env: { PATH: d } }), { ok: true, command: exe });
});

test('a missing binary on PATH is reported', () => {
  const r = resolveServerCommand('jaxpr-lsp', { env: { PATH: tempDir() } });
  assert.equal(r.ok, false);
  assert.match(!r.ok ? r.reason : '', /"jaxpr-lsp" was not found on PATH/);
});

test('paths are checked for existence and relative ones resolve against the workspace', { skip: process.platform === 'win32' }, () => {
  const ws = tempDir();
  fs.mkdirSync(path.join(ws, 'bin'));
  const exe = makeExecutable(path.join(ws, 'bin'), 'jaxpr-lsp');
  assert.deepEqual(resolveServerCommand('bin/jaxpr-lsp', { workspaceFolder: ws }), { ok: true, command: exe });
  assert.deepEqual(resolveServerCommand(exe, {}), { ok: true, command: exe });
  assert.deepEqual(resolveServerCommand('${workspaceFolder}/bin/jaxpr-lsp', { workspaceFolder: ws }), { ok: true, command: exe });

  const missing = resolveServerCommand('/nonexistent/dir/jaxpr-lsp', {});
  assert.deepEqual(missing, { ok: false, reason: '"/nonexistent/dir/jaxpr-lsp" does not exist' });

  const notExe = makeExecutable(ws, 'plain', 0o644);
  assert.deepEqual(resolveServerCommand(notExe, {}), { ok: false, reason: `"${notExe}" is not an executable file` });
  assert.deepEqual(resolveServerCommand(ws, {}), { ok: false, reason: `"${ws}" is not an executable file` });
});

test('${workspaceFolder} without an open folder is reported', () => {
  const r = resolveServerCommand('${workspaceFolder}/jaxpr-lsp', {});
  assert.equal(r.ok, false);
  assert.match(!r.ok ? r.reason : '', /no folder is open/);
});

test('Windows lookup tries PATHEXT', () => {
  const d = tempDir();
  const exe = makeExecutable(d, 'jaxpr-lsp.EXE');
  const r = resolveServerCommand('jaxpr-lsp', { platform: 'win32', env: { PATH: d, PATHEXT: '.COM;.EXE' } });
  assert.deepEqual(r, { ok: true, command: exe });
});

test('the error message names the setting', () => {
  const m = missingServerMessage('"jaxpr-lsp" was not found on PATH');
  assert.match(m, /"jaxpr-lsp" was not found on PATH/);
  assert.match(m, /"jaxpr\.server\.path"/);
});

test('an empty setting looks in the selected Python environment before PATH', { skip: process.platform === 'win32' }, () => {
  const venvBin = tempDir();
  const onPath = tempDir();
  const inVenv = makeExecutable(venvBin, 'jaxpr-lsp');
  makeExecutable(onPath, 'jaxpr-lsp');
  const python = path.join(venvBin, 'python');
  assert.deepEqual(resolveServerCommand('', { env: { PATH: onPath }, pythonInterpreter: python }), { ok: true, command: inVenv });
  // Not in the environment: PATH.
  const emptyVenv = tempDir();
  const r = resolveServerCommand('', { env: { PATH: onPath }, pythonInterpreter: path.join(emptyVenv, 'python') });
  assert.deepEqual(r, { ok: true, command: path.join(onPath, 'jaxpr-lsp') });
});

test('when the server is nowhere, the reason names every place looked at', { skip: process.platform === 'win32' }, () => {
  const venvBin = tempDir();
  const a = tempDir();
  const b = tempDir();
  const r = resolveServerCommand('', { env: { PATH: [a, b].join(path.delimiter) }, pythonInterpreter: path.join(venvBin, 'python') });
  assert.equal(r.ok, false);
  const reason = !r.ok ? r.reason : '';
  assert.ok(reason.includes(`the selected Python environment (${venvBin})`), reason);
  assert.ok(reason.includes(`on PATH (${a}${path.delimiter}${b})`), reason);
  assert.match(missingServerMessage(reason), /pip install jaxpr/);
});
